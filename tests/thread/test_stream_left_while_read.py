"""A stream's block left while another reader (an OS thread, or a task) is inside one of its steps: the
leaving side is refused with ``STREAM-SHARED``, and the reader inside settles the run once its step
comes out, as leaving the block would have (the response closed, the claim given back, the result
recorded), then ends its iteration.

Before, the leaving side raised ``STREAM-SHARED`` and nobody settled the run: its flow was finalized
by the garbage collector (an ignored ``GeneratorExit``), its response stayed open and its claim held.
Through both shells (``drive``), on a ``MemoryStore`` and a ``SqliteStore`` (stores with a claim),
against a ScriptedAgent on 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import gc
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio.to_thread
import pytest
from serverkit import held_connections, httpcore_pools

import agui_client as ag
from agui_client.stores import MemoryStore, SqliteStore
from agui_client.testing import Finish, Gate, ScriptedAgent, Start, Wait, text_message, tool_call

#: The longest a wait of these tests may take before the test fails (a hang, not a slow machine).
BOUND = 10.0


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """A store with a claim: the client's, closed with it."""
    made = MemoryStore() if request.param == "memory" else SqliteStore(tmp_path / "threads.db")
    yield made
    made.close()


@pytest.fixture
def unraisable(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """What the interpreter could not raise anywhere (a generator finalized by the collector that ignored
    its ``GeneratorExit``), collected while the test runs."""
    seen: list[Any] = []
    monkeypatch.setattr(sys, "unraisablehook", seen.append)
    yield seen


def held_agent(gate: Gate, held: Gate) -> ScriptedAgent:
    """A thread's first run holds at ``gate`` after its first message, then again at ``held`` (open only at
    the test's end) after the start of its second: a read waits inside its step until ``gate`` opens, and
    the run never ends while the test looks. Its next run is an ordinary reply."""
    return ScriptedAgent([[Start(), *text_message("m-1", "before"), Wait(gate), *text_message("m-2", "after"),
                           Wait(held), Finish()],
                          [Start(), *text_message("m-3", "again"), Finish()]])


@contextlib.contextmanager
def held_thread(drive: Any, served: Any, store: Any, gate: Gate, thread_id: str) -> Iterator[tuple[Any, Any, Any]]:
    """The endpoint of a :func:`held_agent`, a client of it on ``store``, and its thread ``thread_id``. Its
    ``held`` gate opens as the block ends, whatever happened, after the client closed: else the agent's
    first run would hold its answer for ever."""
    held = Gate()
    endpoint = served(held_agent(gate, held))
    try:
        with drive.client(endpoint.url, timeout=BOUND, store=store) as client:
            yield endpoint, client, client.thread(thread_id)
    finally:
        held.open()


class Readers:
    """Two OS threads reading one stream at once (through the async shell, two tasks on its loop): one is
    refused, which proves the other is inside the step (the run is held at a gate there)."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.read: list[list[str]] = []
        self.failed: list[BaseException] = []
        self.refused = threading.Event()
        self._threads = [threading.Thread(target=self._read, daemon=True) for _ in range(2)]
        for reader in self._threads:
            reader.start()
        assert self.refused.wait(BOUND), "no reader was refused"

    def _read(self) -> None:
        try:
            self.read.append([type(event).__name__ for event in self.stream])
        except ag.StreamMisused as exc:
            self.failed.append(exc)
            self.refused.set()
        except BaseException as exc:  # (the test says what it was)
            self.failed.append(exc)

    def join(self) -> None:
        for reader in self._threads:
            reader.join(BOUND)
        assert not any(reader.is_alive() for reader in self._threads), "the reader inside never came out"


def read_first_message(stream: Any) -> None:
    events = iter(stream)
    while not isinstance(next(events), ag.TextMessageEndEvent):
        pass  # (up to the end of "before": the next read waits for the gate)


def check_settled(client: Any, thread: Any, unraisable: list[Any]) -> None:
    """The run was settled once, by the reader inside: nothing open, nothing claimed, nothing left to the
    collector, and the thread object free for its next run."""
    assert [c for pool in httpcore_pools(client.http) for c in held_connections(pool)] == []
    stored = client.store.load(thread.id)
    assert stored is not None and stored.claim is None
    gc.collect()
    assert unraisable == []
    assert thread.run("next").text == "again"


def check_refused(error: ag.StreamMisused, stream: Any) -> None:
    assert (error.code, error.run_id) == ("STREAM-SHARED", stream.run_input.run_id)


def check_left(error: ag.StreamMisused, thread: Any, run_id: str | None) -> None:
    """The block's side was told, and the thread object starts nothing while the reader holds the run."""
    assert (error.code, error.run_id) == ("STREAM-SHARED", run_id)
    assert str(error) == (f"run {run_id!r}: this stream's block was left while another task or thread was reading "
                          "its events; that reader settles the run as its read comes back (the response closed, "
                          "the claim given back) and reads no more, and this thread object runs nothing else "
                          "until then. Read a stream in its block, in one place, and hand the events on (a "
                          "queue) to whoever else needs them")
    with pytest.raises(ag.ThreadBusy) as busy:
        thread.run("too soon")
    assert busy.value.thread_id == thread.id


def test_a_stream_block_left_while_another_reader_is_inside_a_step_is_settled_by_that_reader(
        drive: Any, served: Any, store: Any, gate: Gate, unraisable: list[Any]) -> None:
    with held_thread(drive, served, store, gate, "left") as (_, client, thread):
        with pytest.raises(ag.StreamMisused) as left:
            with thread.stream("hi") as stream:
                read_first_message(stream)
                readers = Readers(stream)
        check_left(left.value, thread, stream.run_input.run_id)
        gate.open()
        readers.join()

        # (the reader inside ended its iteration quietly, the events of its last step folded, not handed)
        assert readers.read == [[]]
        (refused,) = readers.failed
        assert isinstance(refused, ag.StreamMisused)
        check_refused(refused, stream)
        assert stream.result.outcome is None and [w.code for w in stream.result.warnings] == ["TR-16"]
        assert stream.result.text.startswith("before")
        check_settled(client, thread, unraisable)


class Left(Exception):
    """What the caller's block raised."""


def test_a_stream_block_left_on_an_error_while_another_reader_is_inside_a_step_is_settled_by_that_reader(
        drive: Any, served: Any, store: Any, gate: Gate, unraisable: list[Any]) -> None:
    with held_thread(drive, served, store, gate, "failed") as (_, client, thread):
        cause = Left("the caller's block failed")
        with pytest.raises(ag.StreamMisused) as left:
            with thread.stream("hi") as stream:
                read_first_message(stream)
                readers = Readers(stream)
                raise cause
        check_left(left.value, thread, stream.run_input.run_id)
        assert left.value.__context__ is cause
        gate.open()
        readers.join()

        assert readers.read == [[]]
        with pytest.raises(ag.StreamNotFinished) as unfinished:
            stream.result  # noqa: B018 - the property raises
        assert unfinished.value.failed is cause  # (the block's own error, as its exit records it)
        check_settled(client, thread, unraisable)


def test_a_tool_loops_block_left_while_another_reader_is_inside_a_step_is_settled_by_that_reader(
        drive: Any, served: Any, store: Any, gate: Gate, unraisable: list[Any]) -> None:
    with held_thread(drive, served, store, gate, "loop") as (endpoint, client, thread):
        with pytest.raises(ag.StreamMisused) as left:
            with thread.stream_until_done("hi") as loop:
                read_first_message(loop)
                readers = Readers(loop)
        check_left(left.value, thread, endpoint.received[0].body["runId"])
        gate.open()
        readers.join()

        assert readers.read == [[]]
        assert loop.result.outcome is None and [w.code for w in loop.result.warnings] == ["TR-16"]
        assert [r.outcome for r in loop.results] == [None]
        check_settled(client, thread, unraisable)


def test_a_tool_loops_block_left_while_its_reader_runs_a_handler_takes_no_step_of_the_next_run(
        drive: Any, served: Any, store: Any, gate: Gate, unraisable: list[Any]) -> None:
    """Left while the reader inside is between two runs (a handler running): the handler's answer opens the
    next run, as it did, but no step of it is taken. Before, the reader took one, and waited in it for the
    agent's first events (held at ``gate`` here: for ever) before it settled the run it had handed."""
    entered, release = threading.Event(), threading.Event()

    def confirm_choice(question: str) -> Any:
        entered.set()
        if drive.kind == "sync":
            release.wait(BOUND)
            return "A"

        async def answered() -> str:  # (the loop serves the block's side meanwhile)
            await anyio.to_thread.run_sync(release.wait, BOUND)
            return "A"
        return answered()

    endpoint = served(ScriptedAgent([
        [Start(), *tool_call("c1", "confirm_choice", {"question": "Which?"}),
         Finish(outcome=ag.RunFinishedSuccessOutcome(pending_tool_call_ids=("c1",)))],
        [Wait(gate, timeout=30), Start(), *text_message("m-2", "never read"), Finish()],
        [Start(), *text_message("m-3", "again"), Finish()]]))
    try:
        with drive.client(endpoint.url, timeout=BOUND, store=store) as client:
            thread = client.thread("between", tool_handlers={"confirm_choice": confirm_choice})
            with pytest.raises(ag.StreamMisused) as left:
                with thread.stream_until_done("hi") as loop:
                    readers = Readers(loop)
                    assert entered.wait(BOUND), "the handler never ran"
            assert left.value.code == "STREAM-SHARED"
            release.set()
            readers.join()

            # (the run the handler's answer opened was left as a block leaves an open run: never read from)
            assert len(readers.read) == 1
            second_run_id = endpoint.received[1].body["runId"]
            assert [r.outcome for r in loop.results] == ["success", None]
            assert [(w.code, w.run_id) for w in loop.result.warnings] == [("TR-16", second_run_id)]
            check_settled(client, thread, unraisable)
    finally:
        release.set()
        gate.open()
