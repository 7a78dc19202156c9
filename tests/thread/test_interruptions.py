"""Runs interrupted from outside: Ctrl-C, a cancelled task (a web request whose client left), a store write
under cancellation.

Every test body runs through both shells (``drive``: sync and async) against a real ``ScriptedAgent``
served by uvicorn on 127.0.0.1; the agent records what it received, so "nothing was sent" is a count of
requests.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
from typing import Any

import anyio
import httpx
import pytest
from threadkit import finishing, interrupted

import agui_client as ag
from agui_client.stores import MemoryStore
from agui_client.testing import (
    Finish,
    Gate,
    Pause,
    ScriptedAgent,
    Start,
    Wait,
)


def _cancelled(coroutine: Any, after: float) -> None:
    asyncio.run(_cancel_after(coroutine, after, "wait_for"))


def _stored_after(url: str, store: MemoryStore, message: str) -> ag.AsyncThread:
    """A new thread of ``store`` after one run of ``message`` (through the async client, then closed)."""
    async def main() -> ag.AsyncThread:
        async with ag.AsyncAgentClient(url, store=store) as client:
            thread = client.thread()
            await thread.run(message)
            return thread
    return asyncio.run(main())


async def _cancel_after(coroutine: Any, seconds: float, how: str) -> None:
    """Cancel ``coroutine`` after ``seconds``: once (asyncio.wait_for), or as a cancel scope does
    (anyio, hence Starlette and FastAPI: every later await is cancelled too)."""
    if how == "wait_for":
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(coroutine, seconds)
        return
    with anyio.move_on_after(seconds) as scope:
        await coroutine
    assert scope.cancelled_caught


@pytest.mark.parametrize("how", ["run", "stream"])
def test_a_cancelled_run_lets_go_of_its_thread_so_the_next_one_goes_out(served: Any, how: str) -> None:
    # asyncio.wait_for() (or a web framework whose client left) cancels the task mid-stream. A run
    # that is not a resume lets go of the thread, as a failed one does: the next turn is not refused.
    endpoint = served(ScriptedAgent([finishing(None), [Start(), Pause(5)], finishing(None)]))
    store = MemoryStore()

    thread = _stored_after(endpoint.url, store, "hello")

    async def second() -> None:
        async with ag.AsyncAgentClient(endpoint.url, store=store) as client:
            stalled = client.thread(thread.id)
            if how == "run":
                await stalled.run("and then?")
            else:
                async with stalled.stream("and then?") as events:
                    async for _ in events:
                        pass

    _cancelled(second(), 0.5)
    claim = store.load(thread.id).claim  # type: ignore[union-attr]
    with ag.AgentClient(endpoint.url, store=store) as client:
        result = client.thread(thread.id).run("once more")

    assert claim is None
    assert result.outcome == "success" and endpoint.agent.request_count == 3


def test_a_resume_cancelled_after_its_request_went_out_keeps_the_thread_claimed(
    served: Any, caplog: pytest.LogCaptureFixture
) -> None:
    # Its request may have reached the agent, which may have acted: as after a failure, the claim
    # stays until someone decides (release_claim()), and the log says so.
    endpoint = served(ScriptedAgent([[Start(), interrupted("ask-1")], [Start(), Pause(5)], [Start(), Finish()]]))
    store = MemoryStore()

    thread = _stored_after(endpoint.url, store, "hi")

    async def resume() -> None:
        async with ag.AsyncAgentClient(endpoint.url, store=store) as client:
            again = client.thread(thread.id)
            await again.run(resume=again.resume_builder().answer("ask-1", "go"))

    with caplog.at_level(logging.WARNING, logger="agui_client"):
        _cancelled(resume(), 0.5)
    stored = store.load(thread.id)

    assert stored is not None and stored.claim is not None
    assert any("stays claimed" in r.getMessage() for r in caplog.records)
    assert endpoint.agent.request_count == 2


async def _cancel_once(coroutine: Any, reached: threading.Event, how: str, then: threading.Event) -> None:
    """Cancel ``coroutine`` as soon as ``reached`` is set (once, as ``asyncio.wait_for`` does, or as a cancel
    scope does: every later await is cancelled too), then set ``then``."""
    if how == "wait_for":
        task = asyncio.ensure_future(coroutine)
        await asyncio.to_thread(reached.wait, 10)
        task.cancel()
        then.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        return
    with anyio.CancelScope() as scope:
        async def cancel() -> None:
            await anyio.to_thread.run_sync(reached.wait, 10)
            scope.cancel()
            then.set()

        async with anyio.create_task_group() as group:
            group.start_soon(cancel)
            await coroutine
    assert scope.cancelled_caught


@pytest.mark.parametrize("how", ["wait_for", "cancel-scope"])
@pytest.mark.parametrize("resuming", [False, True])
def test_a_run_cancelled_while_its_claim_is_written_gives_it_back_and_sends_nothing(served: Any,
                                                                                    resuming: bool,
                                                                                    how: str) -> None:
    # The claim runs in a worker thread a cancellation cannot stop: the run waits for it to land,
    # gives it back (nothing was sent) and keeps its version the store's, so the thread still runs.
    # A cancel scope cancels the waits for the claim and for its release too: they are waited out.
    endpoint = served(ScriptedAgent([[Start(), interrupted("ask-1")] if resuming else finishing(None),
                                     finishing(None)]))
    writing = threading.Event()
    cancelled = threading.Event()

    class SlowClaims(MemoryStore):
        def claim(self, thread_id: str, *, expected_version: int | None, owner: str, data: Any = None) -> int:
            if expected_version is not None:  # (the attempt's claim, not the first run's creating one)
                writing.set()
                assert cancelled.wait(10)  # the claim lands only once the run was cancelled
            return super().claim(thread_id, expected_version=expected_version, owner=owner, data=data)

    store = SlowClaims()

    async def main() -> tuple[int | None, int | None, ag.RunResult]:
        async with ag.AsyncAgentClient(endpoint.url, store=store) as client:
            thread = client.thread()
            await thread.run("hello")
            attempt = (thread.run(resume=thread.resume_builder().answer("ask-1", "go")) if resuming
                       else thread.run("again"))
            await _cancel_once(attempt, writing, how, cancelled)
            stored = store.load(thread.id)
            assert stored is not None
            claim, version = stored.claim, stored.version
            mine = thread.version
            result = await (thread.run(resume=thread.resume_builder().answer("ask-1", "go")) if resuming
                            else thread.run("again"))
            return claim, version if mine == version else None, result

    claim, version, result = asyncio.run(main())

    assert writing.is_set()
    assert claim is None and version is not None
    assert result.outcome == "success" and endpoint.agent.request_count == 2


@pytest.mark.parametrize("resuming", [False, True])
def test_ctrl_c_during_a_run_lets_go_of_the_thread_unless_a_resume_went_out(resuming: bool) -> None:
    # A KeyboardInterrupt raised while the request is being sent (the sync shell's Ctrl-C): a turn
    # lets go of the thread; a resume whose request was handed over keeps it claimed.
    store = MemoryStore()
    thread_id = "t-ctrl-c"
    state = ag.ThreadState(messages=[ag.UserMessage(id="u1", content="hi")])
    if resuming:
        state.hold_interrupts([ag.Interrupt(id="ask-1", reason="approval")], "r0")
    store.save(thread_id, state.dump(), expected_version=None)

    def interrupt(request: httpx.Request) -> httpx.Response:
        raise KeyboardInterrupt

    with ag.AgentClient("http://127.0.0.1:9/agent", store=store,
                        http_client=httpx.Client(transport=httpx.MockTransport(interrupt))) as client:
        thread = client.thread(thread_id)
        assert len(thread.open_interrupts) == resuming
        with pytest.raises(KeyboardInterrupt):
            if resuming:
                thread.run(resume=thread.resume_builder().answer("ask-1", "go"))
            else:
                thread.run("again")
    stored = store.load(thread_id)

    assert stored is not None
    assert (stored.claim is not None) is resuming


def test_a_resume_cancelled_before_its_request_was_written_lets_go_of_the_thread(served: Any, gate: Gate) -> None:
    # httpx's own transport reports when the request is written whole: a resume cancelled before
    # (here, queued for the only connection) cannot have reached the agent, so its claim goes.
    endpoint = served(ScriptedAgent([[Start(), interrupted("ask-1")], [Start(), Wait(gate, timeout=20), Finish()],
                                     [Start(), Finish()]]))
    blocker = served(ScriptedAgent([[Start(), Wait(gate, timeout=20), Finish()]]))
    store = MemoryStore()

    async def main() -> tuple[str | None, int]:
        async with httpx.AsyncClient(limits=httpx.Limits(max_connections=1)) as http, \
                ag.AsyncAgentClient(endpoint.url, store=store, http_client=http) as client:
            thread = client.thread()
            await thread.run("hi")
            async with ag.AsyncAgentClient(blocker.url, http_client=http) as other:
                async with other.thread().stream("hold the connection"):
                    await _cancel_after(thread.run(resume=thread.resume_builder().answer("ask-1", "go")), 0.3,
                                        "wait_for")
                    stored = store.load(thread.id)
                    gate.open()
            assert stored is not None
            return stored.claim, endpoint.agent.request_count

    claim, sent = asyncio.run(main())

    assert claim is None and sent == 1


@pytest.mark.parametrize("during", ["claim", "save"])
def test_ctrl_c_during_a_store_write_waits_for_it_and_keeps_the_thread_consistent(served: Any, during: str) -> None:
    # The sync shell's Ctrl-C, landing inside the store call after its write: the claim is known (and,
    # nothing sent, given back); a save's version is recorded. The KeyboardInterrupt still reaches the
    # caller, once the write has returned.
    endpoint = served(ScriptedAgent([finishing(None), finishing(None), finishing(None)]))

    class Interrupted(MemoryStore):
        armed = False

        def claim(self, thread_id: str, *, expected_version: int | None, owner: str, data: Any = None) -> int:
            version = super().claim(thread_id, expected_version=expected_version, owner=owner, data=data)
            self._ctrl_c("claim")
            return version

        def save(self, thread_id: str, data: Any, *, expected_version: int | None) -> int:
            version = super().save(thread_id, data, expected_version=expected_version)
            self._ctrl_c("save")
            return version

        def append(self, thread_id: str, changes: Any, *, expected_version: int) -> int:
            version = super().append(thread_id, changes, expected_version=expected_version)
            self._ctrl_c("save")  # (a run's save, written as its changes)
            return version

        def _ctrl_c(self, where: str) -> None:
            if self.armed and where == during:
                self.armed = False
                signal.raise_signal(signal.SIGINT)  # (delivered before it returns: nothing to wait for)

    store = Interrupted()
    with ag.AgentClient(endpoint.url, store=store) as client:
        thread = client.thread()
        thread.run("hello")
        store.armed = True
        with pytest.raises(KeyboardInterrupt):
            thread.run("again")
        stored = store.load(thread.id)
        assert stored is not None
        claim, in_step = stored.claim, thread.version == stored.version
        thread.run("once more")

    assert claim is None and in_step
    assert endpoint.agent.request_count == (2 if during == "claim" else 3)  # (the interrupted claim sent nothing)


def test_a_run_still_going_when_asyncio_run_shuts_down_does_not_hang_it() -> None:
    # asyncio.run() cancels every task left at shutdown, the store write's own worker task included,
    # before it could start: that write is called off, not waited for forever (in a child process,
    # so a hang is a failed test and not a stuck suite).
    import subprocess
    import sys
    import textwrap

    child = textwrap.dedent("""
        import asyncio
        import agui_client as ag
        from agui_client.stores import MemoryStore
        from agui_client.testing import Finish, ScriptedAgent, Start, serve

        async def main(url):
            client = ag.AsyncAgentClient(url, store=MemoryStore())
            thread = client.thread()
            await thread.run("hello")
            asyncio.get_running_loop().create_task(thread.run("again"))  # still going when main returns

        with serve(ScriptedAgent([[Start(), Finish()], [Start(), Finish()]])) as server:
            asyncio.run(main(server.url))
        print("asyncio.run returned")
    """)
    done = subprocess.run([sys.executable, "-W", "ignore", "-c", child], capture_output=True, text=True, timeout=60,
                          check=False)

    assert done.returncode == 0, done.stderr[-2000:]
    assert "asyncio.run returned" in done.stdout


def test_a_second_ctrl_c_is_not_held_by_a_store_write_that_hangs(served: Any) -> None:
    endpoint = served(ScriptedAgent([finishing(None), finishing(None)]))
    returned: list[bool] = []

    class Hanging(MemoryStore):
        armed = False

        def save(self, thread_id: str, data: Any, *, expected_version: int | None) -> int:
            self._hang()
            return super().save(thread_id, data, expected_version=expected_version)

        def append(self, thread_id: str, changes: Any, *, expected_version: int) -> int:
            self._hang()  # (a run's save, written as its changes)
            return super().append(thread_id, changes, expected_version=expected_version)

        def _hang(self) -> None:
            if self.armed:
                self.armed = False
                signal.raise_signal(signal.SIGINT)  # held: the write goes on ...
                signal.raise_signal(signal.SIGINT)  # ... until the person presses again
                threading.Event().wait(5)  # (the hanging write: a gate nobody opens; never reached)
                returned.append(True)

    store = Hanging()
    with ag.AgentClient(endpoint.url, store=store) as client:
        thread = client.thread()
        thread.run("hello")
        store.armed = True
        with pytest.raises(KeyboardInterrupt):
            thread.run("again")

    assert returned == []
