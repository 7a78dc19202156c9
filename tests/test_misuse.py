"""A client or thread object misused: shared across OS threads, or kept after its client closed.

Each misuse either works or is refused with a clear error before anything is sent; never two runs of
one object at once, never a turn sent twice, never a claim left behind. Against the loopback
``ScriptedAgent``.
"""

from __future__ import annotations

import asyncio
import gc
import os
import select
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

import agui_client as ag
from agui_client.core import flow
from agui_client.stores import MemoryStore, SqliteStore
from agui_client.testing import Finish, Gate, ScriptedAgent, Start, Wait, last_user_text, serve, text_message

#: The longest a wait of these tests may take before the test fails (a hang, not a slow machine).
BOUND = 10.0


class Meeting:
    """Where two OS threads running one thread object are held until both got there, or one of them
    ended its call (it was refused, or it never comes): the widest overlap two such runs can have."""

    def __init__(self) -> None:
        self.changed = threading.Condition()
        self.ended = 0
        self.points: dict[str, int] = {}

    def meet(self, point: str) -> None:
        with self.changed:
            self.points[point] = self.points.get(point, 0) + 1
            self.changed.notify_all()
            assert self.changed.wait_for(lambda: self.points[point] == 2 or self.ended, BOUND)

    def end(self) -> None:
        with self.changed:
            self.ended += 1
            self.changed.notify_all()


class MeetingStore(MemoryStore):
    """A ``MemoryStore`` whose claims meet (see :class:`Meeting`) before they are written."""

    def __init__(self, meeting: Meeting) -> None:
        super().__init__()
        self.meeting = meeting

    def claim(self, thread_id: str, **arguments: Any) -> int:
        if threading.current_thread() is not threading.main_thread():
            self.meeting.meet("claim")
        return super().claim(thread_id, **arguments)


def held_after_the_busy_check(meeting: Meeting) -> Callable[..., Any]:
    """A trace function holding a thread that has just found the object idle (``_idle`` returning to
    ``_exclusive``) until the other got there too: the moment between looking and taking."""
    def local(frame: FrameType, event: str, arg: Any) -> Any:
        caller = frame.f_back
        if event == "return" and caller is not None and caller.f_code.co_name == "_exclusive":
            meeting.meet("idle")
        return local

    def trace(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "call" and frame.f_code.co_name == "_idle" and frame.f_code.co_filename == flow.__file__:
            return local
        return None
    return trace


def test_one_sync_thread_object_run_from_two_os_threads_at_once_sends_one_run() -> None:
    # Two OS threads start a run on one Thread object together: one runs, the other is refused with
    # ThreadBusy before anything is sent. The object's check-then-take was two steps: both threads could
    # find it idle, both claim (as the same owner, whose claim the store recognises as its own) and both
    # send, folding two responses into one state.
    meeting = Meeting()
    agent = ScriptedAgent([lambda run_input: [Start(), *text_message(f"m-{run_input.run_id}", "ok"), Finish()]],
                          cycle=True)
    with serve(agent) as server, ag.AgentClient(server.url, store=MeetingStore(meeting)) as client:
        thread = client.thread("shared")
        outcomes: dict[str, Any] = {}

        def run(text: str) -> None:
            try:
                outcomes[text] = thread.run(text).outcome
            except ag.AguiError as exc:
                outcomes[text] = exc
            finally:
                meeting.end()

        threading.settrace(held_after_the_busy_check(meeting))
        try:
            workers = [threading.Thread(target=run, args=(text,)) for text in ("one", "two")]
            for worker in workers:
                worker.start()
        finally:
            threading.settrace(None)  # type: ignore[arg-type]  # (typeshed wants a function)
        for worker in workers:
            worker.join(BOUND)

        assert sorted(map(str, (type(o).__name__ if isinstance(o, Exception) else o for o in outcomes.values()))) \
            == ["ThreadBusy", "success"]
        assert agent.request_count == 1
        assert thread.run("three").outcome == "success"  # (the object is free again: the refusal took nothing)
        assert [m.content for m in thread.state.messages if isinstance(m, ag.UserMessage)] == \
            [text for text, o in outcomes.items() if o == "success"] + ["three"]
        assert client.store.load("shared").claim is None


@pytest.mark.parametrize("store", ["the clients own", "the applications"])
def test_a_thread_whose_client_closed_refuses_every_call_before_claiming(drive: Any, served: Any, tmp_path: Path,
                                                                         store: str) -> None:
    # A thread kept past its client's close() went on: it claimed the thread and let it go again around
    # httpx's "Cannot send a request, as the client has been closed" (the application's store), or met
    # the store the client had closed and logged that its claim "may be held" (the client's own).
    endpoint = served(ScriptedAgent.chat())
    kept = SqliteStore(tmp_path / "threads.db") if store == "the applications" else None
    client = drive.client(endpoint.url, **({"store": kept} if kept is not None else {}))
    thread = client.thread("kept")
    assert thread.run("hi").outcome == "success"
    before = kept.load("kept") if kept is not None else None
    client.close()

    def streamed() -> None:
        with thread.stream("again"):
            raise AssertionError("the stream was opened")

    calls: dict[str, Callable[[], Any]] = {
        "run": lambda: thread.run("again"), "stream": streamed,
        "run_until_done": lambda: thread.run_until_done("again"), "reload": thread.reload,
        "release_claim": thread.release_claim}
    for name, call in calls.items():
        with pytest.raises(RuntimeError) as refused:
            call()
        assert str(refused.value) == (f"thread 'kept': its {'Async' if drive.kind == 'async' else ''}AgentClient "
                                      "is closed; nothing was sent: make a new client and load the thread from its "
                                      "store"), name
    assert len(endpoint.received) == 1
    if kept is not None:
        assert kept.load("kept") == before  # (not claimed and let go: untouched)
        kept.close()


def test_a_resume_run_again_on_the_claim_its_object_kept_says_to_release_it_not_to_reload(drive: Any,
                                                                                          served: Any) -> None:
    # A resume left before its end (or cut, or cancelled) after its request went out keeps the thread
    # claimed, by this object. Run again on the same object, the store's refusal named the object's own
    # owner as if another writer's and said reload() catches up: a reload() changes nothing, the claim
    # stays, and the same refusal came back. It says the claim is this object's, and how to let it go.
    def step(run_input: Any) -> Any:
        if run_input.resume:
            return [Start(), *text_message("m-r", "resumed"), Finish()]
        return [Start(), Finish(outcome=ag.RunFinishedInterruptOutcome(
            interrupts=(ag.Interrupt(id="ask-1", reason="approval"),)))]

    endpoint = served(ScriptedAgent([step], cycle=True))
    with drive.client(endpoint.url) as client:
        thread = client.thread("kept-claim")
        assert thread.run("plan").outcome == "interrupt"
        with thread.stream(resume=thread.resume_builder().abandon("ask-1")) as stream:
            pass  # (left before its events: the request went out, so the claim is kept)
        assert [w.code for w in stream.result.warnings] == ["TR-16"]

        for attempt in ("at once", "after a reload"):
            with pytest.raises(ag.ConcurrentResume) as refused:
                thread.run(resume=thread.resume_builder().abandon("ask-1"))
            said = str(refused.value)
            assert "Nothing was sent: this object holds that claim itself" in said, attempt
            assert "thread.release_claim()" in said and "reload()" not in said, attempt
            thread.reload()
        assert len(endpoint.received) == 2

        thread.release_claim()  # (what the words say: then the resume goes out again, deliberately)
        thread.run(resume=thread.resume_builder().abandon("ask-1"))
        assert endpoint.received[-1].body["resume"] == [{"interruptId": "ask-1", "status": "cancelled"}]
        assert len(endpoint.received) == 3 and client.store.load("kept-claim").claim is None


def _answering_both(gate: Gate) -> Any:
    """An agent's step holding the runs of "parent" and "child" until both have arrived (then ``gate`` opens)."""
    arrived: set[str] = set()

    def step(run_input: Any) -> Any:
        who = last_user_text(run_input) or ""
        if who in ("parent", "child"):
            arrived.add(who)
            if len(arrived) == 2:
                gate.open()
        held = [Wait(gate)] if who in ("parent", "child") else []
        return [Start(), *held, *text_message(f"m-{run_input.run_id}", f"the answer to {who}"), Finish()]
    return step


def _run_in_parent_and_forked_child(client: ag.AgentClient, gate: Gate) -> tuple[str | None, str]:
    """Fork, run "child" in the child and "parent" in the parent at once: what each run said (or its error)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # (the child: its run's text, or its error, goes to the parent through the pipe)
        try:
            os.close(read)
            try:
                said = client.thread("child-thread").run("child").text or ""
            except BaseException as exc:  # noqa: BLE001 - reported to the parent, which asserts
                said = f"{type(exc).__name__}: {exc}"
            os.write(write, said.encode())
        finally:
            os._exit(0)
    os.close(write)
    try:
        try:
            parent_said = client.thread("parent-thread").run("parent").text
        except ag.AguiError as exc:
            parent_said = f"{type(exc).__name__}: {exc}"
    finally:
        gate.open()  # (a child still waiting is answered, and exits)
        with os.fdopen(read, "rb") as pipe:
            child_said = pipe.read().decode()
        os.waitpid(pid, 0)
    return parent_said, child_said


def test_a_sync_client_used_in_a_forked_child_opens_its_own_connections(served: Any) -> None:
    # A process forked while its client held a kept-alive connection: the child's copy of the pool held
    # the parent's socket. Parent and child running at once then shared one connection: one read the
    # other's answer (a forged run), or the second request waited behind the first for ever. Here the
    # agent answers neither until both requests arrived, which they do only on two connections.
    gate = Gate()
    endpoint = served(ScriptedAgent([_answering_both(gate)], cycle=True))
    with ag.AgentClient(endpoint.url, idle_timeout=BOUND / 2) as client:
        assert client.thread("warm").run("warm").outcome == "success"  # (a connection kept in the pool)
        said = _run_in_parent_and_forked_child(client, gate)

    assert said == ("the answer to parent", "the answer to child")


def test_a_client_through_the_environments_proxy_used_in_a_forked_child_opens_its_own_connections(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    # As above, for a client that sends through the proxy the environment names: its transport is httpx's
    # own pool, not the shards the fork hook lets go of, so the child kept the parent's connection to the
    # proxy. The "proxy" here is the agent itself, on a server of its own (a forward proxy's request
    # names the whole URL, which this agent does not read).
    gate = Gate()
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    with serve(ScriptedAgent([_answering_both(gate)], cycle=True)) as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url.rstrip("/"))
        with ag.AgentClient("http://agent.invalid/agent", idle_timeout=BOUND / 2) as client:
            assert type(client.http._transport).__name__ == "ProxiedSyncTransport"  # type: ignore[attr-defined]
            assert client.thread("warm").run("warm").outcome == "success"  # (a connection kept in the pool)
            said = _run_in_parent_and_forked_child(client, gate)

    assert said == ("the answer to parent", "the answer to child")


def test_a_fork_while_another_thread_holds_a_pool_lock_does_not_hang_the_child(served: Any) -> None:
    # The fork hook ran in the child before fork() returned, and closed each kept pool through httpx's
    # close, which takes httpcore's pool lock. A lock another OS thread of the parent held at the fork (it
    # is taken around every request's hand-out) stays held in the child, by a thread that is not there:
    # the child hung in os.fork() for ever. Here a thread holds it across the fork.
    endpoint = served(ScriptedAgent([lambda run_input: [Start(), Finish()]], cycle=True))
    with ag.AgentClient(endpoint.url) as client:
        assert client.thread("warm").run().outcome == "success"  # (a shard, and a connection kept in it)
        pool = client.http._transport._shards[0].transport._pool  # type: ignore[attr-defined]
        held, done = threading.Event(), threading.Event()

        def hold() -> None:
            with pool._optional_thread_lock:
                held.set()
                done.wait(BOUND)

        holder = threading.Thread(target=hold)
        holder.start()
        assert held.wait(BOUND)
        read, write = os.pipe()
        try:
            pid = os.fork()
            if pid == 0:  # (the child, once the hook let it return from fork(): says so, and exits)
                os.write(write, b"forked")
                os._exit(0)
        finally:
            done.set()
            holder.join(BOUND)
        os.close(write)
        try:
            ready, _, _ = select.select([read], [], [], BOUND)
            said = os.read(read, 16) if ready else b""
        finally:
            os.close(read)
            if not said:
                os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        assert said == b"forked"
        assert client.thread("after").run().outcome == "success"  # (the parent's pool is as it was)


def test_a_run_whose_client_is_closed_under_it_says_so(tmp_path: Path, served: Any) -> None:
    # Closing a client closes the connections of its runs in flight: a run then failed as if the agent had
    # cut its stream (StreamEnded, "the stream ended without RUN_FINISHED"), and said nothing of the close
    # the application itself made. (The sync client's run, blocked in a read in another OS thread, is
    # woken by the close too: tests/test_close_wakes_runs.py.)
    gate = Gate()
    endpoint = served(ScriptedAgent([lambda run_input: [Start(), *text_message("m-1", "half an answer"), Wait(gate),
                                                         Finish()]], cycle=True))
    store = SqliteStore(tmp_path / "threads.db")

    async def main() -> None:
        client = ag.AsyncAgentClient(endpoint.url, store=store)
        task = asyncio.create_task((await client.load_thread("closed-under")).run("go"))
        await asyncio.wait_for(asyncio.to_thread(gate.wait_reached, BOUND), BOUND)
        await client.close()
        with pytest.raises(ag.StreamEnded) as failed:
            await asyncio.wait_for(task, BOUND)
        assert failed.value.__notes__ == ["the client was closed while this run was in flight"]

    try:
        asyncio.run(main())
    finally:
        gate.open()
    stored = store.load("closed-under")
    assert stored is not None and stored.claim is None  # (the turn gave the thread back)
    store.close()


class _CollectingOnRead:
    """``flow._RUNNING_HERE`` whose first read runs the cyclic garbage collector: as any allocation may,
    there, while the run's idle check holds the object's lock."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.collected = False

    def get(self) -> Any:
        if not self.collected:
            self.collected = True
            gc.collect()
        return self.real.get()

    def set(self, value: Any) -> Any:
        return self.real.set(value)

    def reset(self, token: Any) -> None:
        self.real.reset(token)


def test_a_stream_left_open_and_collected_during_the_next_runs_idle_check_does_not_hang_it(
    served: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A stream left without its block's end is closed when the garbage collector finds it (a cycle: the
    # stream holds its events, whose frame holds the stream), in whatever code of that OS thread was
    # allocating then. Its close gives the object back under the object's lock; were that code the next
    # run's idle check, which holds the lock, a lock that is not re-entrant waited on itself for ever.
    endpoint = served(ScriptedAgent([lambda run_input: [Start(), *text_message("m", "hello"), Finish()]],
                                    cycle=True))
    outcome: list[Any] = []
    ended = threading.Event()
    with ag.AgentClient(endpoint.url, store=MemoryStore()) as client:
        thread = client.thread("left-open")
        block = thread.stream("first")
        next(iter(block.__enter__()))  # (one event read, and the block never left)
        held: list[Any] = [block]
        held.append(held)  # (the cycle that leaves it to the collector)
        del block, held
        monkeypatch.setattr(flow, "_RUNNING_HERE", _CollectingOnRead(flow._RUNNING_HERE))

        def second() -> None:
            try:
                outcome.append(thread.run("second").outcome)
            except ag.AguiError as exc:
                outcome.append(type(exc).__name__)
            finally:
                ended.set()

        gc.disable()  # (the collection is the one the idle check makes)
        try:
            threading.Thread(target=second, daemon=True).start()
            assert ended.wait(BOUND), "the run hung in its idle check"
        finally:
            gc.enable()
        assert thread.run("third").outcome == "success"  # (the stream left open gave the object back)
    assert outcome in (["success"], ["ThreadBusy"]), outcome  # (it found the object taken, or given back)
