"""What the reader inside a step does with the run's settling it was handed (a stream's block left while
it read: ``STREAM-SHARED``) when its own step ends in a cancellation, and how the run's span ends.

The span ends once, when that reader has settled the run, with the run's outcome and the result it
recorded. Before, it ended as the block was left, ``failed`` with ``StreamMisused``, before the run was
settled, and never saw the result.

A cancelled task must end cancelled (a task group, a timeout look for its ``CancelledError``): a store
that fails to give the claim back while that reader settles the run is logged, as the block's own exit
logs a failed release while a run's error or interruption goes on. Before, the ``StoreError`` replaced
the ``CancelledError``. Against a ScriptedAgent on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from test_stream_left_while_read import Readers
from test_stream_left_while_read import held_agent as gated_agent
from test_stream_left_while_read import read_first_message as read_first_message_sync

import agui_client as ag
from agui_client.stores import MemoryStore
from agui_client.testing import Disconnect, Finish, Gate, ScriptedAgent, Start, Wait, text_message

#: The longest a wait of these tests may take before the test fails (a hang, not a slow machine).
BOUND = 10.0


class ReleaseFails(MemoryStore):
    """A store whose ``release`` fails while ``down``."""

    down = False

    def release(self, thread_id: str, *, claimed_version: int, owner: str) -> int:
        if self.down:
            raise ag.StoreError("the store is down", thread_id=thread_id)
        return super().release(thread_id, claimed_version=claimed_version, owner=owner)


def held_agent(held: Gate) -> ScriptedAgent:
    """A first run that holds after its first message (until the test's end); then an ordinary reply."""
    return ScriptedAgent([[Start(), *text_message("m-1", "before"), Wait(held), Finish()],
                          [Start(), *text_message("m-2", "again"), Finish()]])


async def read_first_message(stream: Any) -> None:
    async for event in stream:
        if isinstance(event, ag.TextMessageEndEvent):
            return


async def enter_a_step(stream: Any) -> asyncio.Task[None]:
    """A task reading ``stream``, inside its step (the run held there), which a second reader's refusal proves."""

    async def read() -> None:
        async for _ in stream:
            pass

    reader = asyncio.create_task(read())
    await asyncio.sleep(0)  # (the task's first turn: it runs into the step, where it waits for the agent)
    with pytest.raises(ag.StreamMisused) as refused:
        await read_first_message(stream)
    assert refused.value.code == "STREAM-SHARED"
    return reader


def test_a_cancelled_reader_whose_handed_settling_fails_ends_cancelled_and_the_failure_is_logged(
        served: Any, caplog: pytest.LogCaptureFixture) -> None:
    held = Gate()
    endpoint = served(held_agent(held))
    store = ReleaseFails()

    async def main() -> None:
        async with ag.AsyncAgentClient(endpoint.url, timeout=BOUND, store=store) as client:
            thread = client.thread("cancelled")
            with pytest.raises(ag.StreamMisused) as left:
                async with thread.stream("hi") as stream:
                    await read_first_message(stream)
                    reader = await enter_a_step(stream)
            assert left.value.code == "STREAM-SHARED"
            store.down = True
            reader.cancel()
            with caplog.at_level(logging.WARNING, logger="agui_client"):
                done, _ = await asyncio.wait([reader], timeout=BOUND)
            assert done == {reader}, "the reader never came out"
            assert reader.cancelled()  # (before: it ended with the store's StoreError)
            run_id = stream.run_input.run_id
            assert [r.getMessage() for r in caplog.records] == [
                f"run {run_id!r}: settling it after its stream's block was left failed while the reader inside a "
                "step ended with CancelledError: the store is down"]
            store.down = False
            # (not busy; the claim the failed release left is this object's, given back as after any such failure)
            await thread.release_claim()
            assert (await thread.run("next")).text == "again"

    try:
        asyncio.run(main())
    finally:
        held.open()


@pytest.mark.parametrize("streamed", ["stream", "stream_until_done"])
def test_the_span_of_a_run_left_while_another_reader_reads_ends_when_that_reader_settled_it(
        drive: Any, served: Any, gate: Gate, streamed: str) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry = ag.Telemetry(tracer_provider=provider)
    held = Gate()
    endpoint = served(gated_agent(gate, held))

    def ended(name: str) -> list[Any]:
        return [span for span in exporter.get_finished_spans() if span.name == name]

    try:
        with drive.client(endpoint.url, timeout=BOUND, store=MemoryStore(), telemetry=telemetry) as client:
            thread = client.thread("spanned")
            with pytest.raises(ag.StreamMisused) as left:
                with getattr(thread, streamed)("hi") as stream:
                    read_first_message_sync(stream)
                    readers = Readers(stream)
            assert left.value.code == "STREAM-SHARED"
            assert ended("agui.run") == [] and ended("agui.tool_loop") == []  # (not settled yet: not ended)
            gate.open()
            readers.join()

            [span] = ended("agui.run")
            attributes = dict(span.attributes or {})
            # (the result the reader recorded: left before the end, TR-16; no StreamMisused on it)
            assert (attributes["agui.run.outcome"], attributes["agui.run.warnings.TR-16"]) == ("abandoned", 1)
            assert "error.type" not in attributes and span.status.status_code is StatusCode.UNSET
            if streamed == "stream":
                assert [(e.name, dict(e.attributes or {})) for e in span.events] == [
                    ("agui.stream.left_while_read", {"agui.error.code": "STREAM-SHARED"})]
            else:
                [loop] = ended("agui.tool_loop")
                assert dict(loop.attributes or {})["agui.tool_loop.outcome"] == "abandoned"
                assert loop.status.status_code is StatusCode.UNSET
                assert [e.name for e in loop.events] == ["agui.stream.left_while_read"]
    finally:
        held.open()


def test_a_reader_whose_read_fails_and_whose_handed_settling_fails_sees_its_reads_error(
        drive: Any, served: Any, gate: Gate, caplog: pytest.LogCaptureFixture) -> None:
    """The same rule for a read's own failure (the agent cut the response), in both shells: the reader's
    error is the read's, the store's failure is logged. Before, the ``StoreError`` replaced it."""
    endpoint = served(ScriptedAgent([[Start(), *text_message("m-1", "before"), Wait(gate), Disconnect()],
                                     [Start(), *text_message("m-2", "again"), Finish()]]))
    store = ReleaseFails()
    with drive.client(endpoint.url, timeout=BOUND, store=store) as client:
        thread = client.thread("cut")
        with pytest.raises(ag.StreamMisused) as left:
            with thread.stream("hi") as stream:
                read_first_message_sync(stream)
                readers = Readers(stream)
        assert left.value.code == "STREAM-SHARED"
        store.down = True
        with caplog.at_level(logging.WARNING, logger="agui_client"):
            gate.open()
            readers.join()
        refused, cut = readers.failed
        assert isinstance(refused, ag.StreamMisused)
        assert isinstance(cut, ag.StreamEnded), cut  # (before: the store's StoreError)
        run_id = stream.run_input.run_id
        assert [r.getMessage() for r in caplog.records] == [
            f"run {run_id!r}: settling it after its stream's block was left failed while the reader inside a "
            f"step ended with {type(cut).__name__}: the store is down"]
        store.down = False
        thread.release_claim()
        assert thread.run("next").text == "again"


class ReleaseEchoes(MemoryStore):
    """A store whose ``release`` fails quoting a credential it shares with the agent's endpoint."""

    said = ""

    def release(self, thread_id: str, *, claimed_version: int, owner: str) -> int:
        if self.said:
            raise ag.StoreError(f"the store is down (connected with {self.said})", thread_id=thread_id)
        return super().release(thread_id, claimed_version=claimed_version, owner=owner)


@pytest.mark.parametrize("streamed", ["stream", "stream_until_done"])
def test_the_line_a_failed_handed_settling_logs_goes_through_the_runs_redactor(
        drive: Any, served: Any, gate: Gate, caplog: pytest.LogCaptureFixture, streamed: str) -> None:
    """The store's text in the line the reader logs is redacted as the thread's own store lines are: the
    token of the run's headers (given to this run only, so the client's own redactor does not know it).
    A streaming tool loop's line too (before, it went through the client's redactor alone)."""
    endpoint = served(ScriptedAgent([[Start(), *text_message("m-1", "before"), Wait(gate), Disconnect()],
                                     [Start(), *text_message("m-2", "again"), Finish()]]))
    store = ReleaseEchoes()
    with drive.client(endpoint.url, timeout=BOUND, store=store) as client:
        thread = client.thread("echoed")
        with pytest.raises(ag.StreamMisused) as left:
            with getattr(thread, streamed)("hi", headers={"Authorization": "Bearer sekrit-run-token"}) as stream:
                read_first_message_sync(stream)
                readers = Readers(stream)
        assert left.value.code == "STREAM-SHARED"
        store.said = "Bearer sekrit-run-token"
        with caplog.at_level(logging.WARNING, logger="agui_client"):
            gate.open()
            readers.join()
        _, cut = readers.failed
        assert endpoint.received[0].headers["authorization"] == "Bearer sekrit-run-token"  # (it was sent)
        assert [r.getMessage() for r in caplog.records] == [
            f"run {endpoint.received[0].body['runId']!r}: settling it after its stream's block was left failed "
            f"while the reader inside a step ended with {type(cut).__name__}: the store is down (connected with "
            "[redacted])"]  # (before: the token whole)


@pytest.mark.parametrize("streamed", ["stream", "stream_until_done"])
def test_a_handed_settling_that_fails_is_the_streams_recorded_outcome_and_its_readers_error(
        drive: Any, served: Any, gate: Gate, streamed: str) -> None:
    """The block was left normally while another reader read; that reader's settling failed to give the
    claim back. The reader sees the store's error (the sync reader too: before, its iteration just ended and
    the failure was logged as though it had ended on ``StopIteration``), and ``result`` names that failure.
    Before, ``result`` said the stream had not ended and told the caller to read it after the block."""
    held = Gate()
    endpoint = served(gated_agent(gate, held))
    store = ReleaseFails()
    try:
        with drive.client(endpoint.url, timeout=BOUND, store=store) as client:
            thread = client.thread("handed")
            with pytest.raises(ag.StreamMisused) as left:
                with getattr(thread, streamed)("hi") as stream:
                    read_first_message_sync(stream)
                    readers = Readers(stream)
            assert left.value.code == "STREAM-SHARED"
            store.down = True
            gate.open()
            readers.join()
            refused, failed = readers.failed
            assert isinstance(refused, ag.StreamMisused) and isinstance(failed, ag.StoreError), readers.failed
            with pytest.raises(ag.StreamNotFinished) as unfinished:
                _ = stream.result
            assert unfinished.value.failed is failed
            assert f"failed (StoreError: {failed})" in str(unfinished.value)
            # A store's error carries no fold: the message sends the caller to the thread, which kept it.
            assert "the thread holds what was folded" in str(unfinished.value)
    finally:
        held.open()


def test_a_blocks_own_exit_whose_settling_fails_records_that_failure(drive: Any, served: Any, gate: Gate) -> None:
    """The same record when the block's own exit settles the run: it raises the store's error, and ``result``
    names it afterwards (before: "has not ended; read .result after the with block", read after it)."""
    held = Gate()
    endpoint = served(gated_agent(gate, held))
    store = ReleaseFails()
    try:
        with drive.client(endpoint.url, timeout=BOUND, store=store) as client:
            with pytest.raises(ag.StoreError) as raised:
                with client.thread("own").stream("hi") as stream:
                    read_first_message_sync(stream)
                    store.down = True
            with pytest.raises(ag.StreamNotFinished) as unfinished:
                _ = stream.result
            assert unfinished.value.failed is raised.value
            assert "the thread holds what was folded" in str(unfinished.value)
    finally:
        held.open()
