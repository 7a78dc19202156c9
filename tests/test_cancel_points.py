"""A run's task cancelled at each await point it has: nothing is left behind.

A web framework cancels the handler of a client that went away; ``asyncio.timeout()`` and a
``TaskGroup`` whose other task failed cancel too. For each point a run awaits at (before the answer's
head, after it, mid-body, during the store's save, during an async tool handler), each way of
cancelling, and ``run()``/``stream()``/``run_until_done()``, once the cancellation went through:

* the thread is not claimed: the same object runs its next turn, and so does another client on
  another store object over the same SQLite file;
* no task of the loop is left pending (``asyncio.all_tasks()``; httpx's own generators are closed by
  short tasks the loop runs, which are waited for, boundedly);
* the pool, one connection, holds no request, and the next run goes out on it;
* the stored thread is a consistent one: the cancelled run is in it whole (cancelled during its
  save, which a cancellation cannot stop) or not at all.

Every wait is on an event, with a timeout, so a leak fails the test instead of hanging it; nothing
sleeps. The cancellation is made when the run is at the point (a server-side step, an httpx response
hook, the caller's own loop, the store's call, the handler): never after a delay.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

import agui_client as ag
from agui_client.stores import SqliteStore
from agui_client.testing import Finish, Gate, ScriptedAgent, Start, Wait, last_user_text, text_message, tool_call

#: The longest any wait of these tests may take before the test fails (a leak, not a slow machine).
BOUND = 10.0

POINTS = ["before-head", "after-head", "mid-body", "during-save", "during-tool-handler"]
HOWS = ["task-cancel", "asyncio-timeout", "taskgroup-sibling", "cancel-scope"]


class Blocking(SqliteStore):
    """A SQLite store whose saves and appends, once armed, wait for ``proceed`` (set after the cancel)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.armed = False
        self.saving = threading.Event()
        self.proceed = threading.Event()

    def _held(self) -> None:
        if self.armed:
            self.saving.set()
            assert self.proceed.wait(BOUND)

    def save(self, thread_id: str, data: Mapping[str, Any], **options: Any) -> int:
        self._held()
        return super().save(thread_id, data, **options)

    def append(self, thread_id: str, changes: Mapping[str, Any], **options: Any) -> int:
        self._held()
        return super().append(thread_id, changes, **options)


class Scene:
    """One test's agent, gates and signals: what the cancelled turn does at the point under test."""

    def __init__(self, point: str) -> None:
        self.point = point
        self.gate = Gate()
        self.before_head = threading.Event()
        self.release = threading.Event()  # (the server holds the head back until the test ends)
        self.head_seen = asyncio.Event()
        self.events_seen = asyncio.Event()
        self.handler_entered = asyncio.Event()

    def step(self, run_input: Any) -> Any:
        text = last_user_text(run_input) or ""
        if text.startswith("again") or text == "first":
            return [Start(), *text_message(f"m-{run_input.run_id}", "a reply"), Finish()]
        if any(isinstance(m, ag.ToolMessage) for m in run_input.messages):
            return [Start(), Finish()]
        if self.point == "before-head":
            return self._late_head(run_input)
        if self.point == "after-head":
            return [Wait(self.gate, timeout=BOUND), Start(), Finish()]
        if self.point == "mid-body":
            return [Start(), *text_message("m-cut", "one two three"), Wait(self.gate, timeout=BOUND), Finish()]
        if self.point == "during-tool-handler":
            return [Start(), *tool_call("call-1", "slow", {"q": "x"}), Finish()]
        return [Start(), *text_message("m-saved", "saved whole"), Finish()]  # (during-save)

    async def _late_head(self, run_input: Any) -> list[Any]:
        self.before_head.set()
        await asyncio.to_thread(self.release.wait, BOUND)
        return [Start(), Finish()]


def pending_besides(current: asyncio.Task[Any] | None) -> list[asyncio.Task[Any]]:
    return [t for t in asyncio.all_tasks() if t is not current and not t.done()]


async def settle() -> None:
    """Wait, boundedly, for every other task of the loop to end (httpx's generator finalizers are some)."""
    for _ in range(3):  # (a finalizer's task may leave another generator to finalize)
        await asyncio.sleep(0)
        others = pending_besides(asyncio.current_task())
        if others:
            done, still = await asyncio.wait(others, timeout=BOUND)
            assert not still, f"tasks left pending after the cancellation: {still}"


async def cancelled(work: Callable[[], Awaitable[Any]], reached: Callable[[], Awaitable[Any]], how: str,
                    after: Callable[[], None]) -> BaseException:
    """Run ``work``, cancel it the ``how`` way once ``reached()`` returns, call ``after`` right after the
    cancellation was made, and return what ``work`` ended with (it must not end otherwise)."""
    loop = asyncio.get_running_loop()
    if how == "task-cancel":
        task = asyncio.create_task(work())
        await asyncio.wait_for(reached(), BOUND)
        task.cancel()
        after()
        with pytest.raises(asyncio.CancelledError) as caught:
            await asyncio.wait_for(task, BOUND)
        return caught.value
    if how == "asyncio-timeout":
        scopes: list[asyncio.Timeout] = []

        async def limited() -> Any:
            async with asyncio.timeout(None) as scope:
                scopes.append(scope)
                return await work()

        task = asyncio.create_task(limited())
        await asyncio.wait_for(reached(), BOUND)
        scopes[0].reschedule(loop.time())  # (now: its cancellation is the next callback of the loop)
        loop.call_soon(after)
        with pytest.raises(TimeoutError) as timed_out:
            await asyncio.wait_for(task, BOUND)
        return timed_out.value

    if how == "cancel-scope":  # (anyio's, as Starlette's and FastAPI's: every later await is cancelled too)
        scopes_: list[anyio.CancelScope] = []

        async def scoped() -> Any:
            with anyio.CancelScope() as scope:
                scopes_.append(scope)
                await work()
            raise asyncio.CancelledError  # (the scope took its cancellation back; said for the check)

        task = asyncio.create_task(scoped())
        await asyncio.wait_for(reached(), BOUND)
        scopes_[0].cancel()
        # (a wait in the run now blocks the loop until the store call ends: ``after`` from another thread)
        threading.Thread(target=after).start()
        with pytest.raises(asyncio.CancelledError) as scoped_out:
            await asyncio.wait_for(task, BOUND)
        return scoped_out.value

    async def sibling() -> None:
        await asyncio.wait_for(reached(), BOUND)
        raise LookupError("the sibling failed")

    def sibling_done(task: asyncio.Task[None]) -> None:
        after()  # (run after the group's own callback, which cancels the run's task)

    with pytest.raises(ExceptionGroup) as group:  # noqa: F821 - Python 3.11's builtin
        async with asyncio.TaskGroup() as tasks:
            tasks.create_task(work())
            tasks.create_task(sibling()).add_done_callback(sibling_done)
    assert group.group_contains(LookupError)
    return group.value


def scenario(tmp_path: Path, url: str, scene: Scene, how: str, shape: str) -> None:
    store = Blocking(tmp_path / "threads.db")
    other_store = SqliteStore(tmp_path / "threads.db")

    async def main() -> None:
        async def hook(response: httpx.Response) -> None:
            scene.head_seen.set()

        async with httpx.AsyncClient(limits=httpx.Limits(max_connections=1),
                                     event_hooks={"response": [hook]}) as http, \
                ag.AsyncAgentClient(url, http_client=http, store=store, timeout=BOUND) as client:
            async def slow(q: str) -> str:
                scene.handler_entered.set()
                await asyncio.Event().wait()  # (until cancelled)
                return "never"

            thread = await client.load_thread(tool_handlers={"slow": slow})
            assert (await thread.run("first")).outcome == "success"
            before = store.load(thread.id)
            assert before is not None
            scene.head_seen.clear()
            store.armed = scene.point == "during-save"

            async def work() -> Any:
                if shape == "run_until_done":
                    return await thread.run_until_done("go")
                if shape == "run":
                    return await thread.run("go")
                async with thread.stream("go") as stream:
                    seen = 0
                    async for _ in stream:
                        seen += 1
                        if seen == 3:
                            scene.events_seen.set()
                return stream.result

            async def reached() -> None:
                point = scene.point
                if point == "before-head":
                    await asyncio.to_thread(scene.before_head.wait, BOUND)
                elif point == "after-head":
                    await scene.head_seen.wait()
                elif point == "mid-body" and shape == "stream":
                    await scene.events_seen.wait()
                elif point == "mid-body":
                    await asyncio.to_thread(scene.gate.wait_reached, BOUND)
                elif point == "during-save":
                    await asyncio.to_thread(store.saving.wait, BOUND)
                else:
                    await scene.handler_entered.wait()

            try:
                await cancelled(work, reached, how, store.proceed.set)
            finally:
                store.armed = False
                store.proceed.set()
                scene.gate.open()
                scene.release.set()
            await settle()

            # The pool gave its one connection back, and nothing of the run is pending.
            assert len(http._transport._pool._requests) == 0  # type: ignore[attr-defined]
            assert not pending_besides(asyncio.current_task())

            # The store holds the thread whole: the cancelled run saved whole, or not at all; unclaimed.
            stored = store.load(thread.id)
            assert stored is not None and stored.claim is None
            assert thread.version == stored.version
            texts = [m.content for m in ag.ThreadState.load(stored.data).messages]
            if scene.point == "during-save":
                assert texts[-2:] == ["go", "saved whole"]  # (the save cannot be called off: it landed)
            elif scene.point == "during-tool-handler":
                # The loop's first run was saved (its call pending); the handler's result never was.
                messages = ag.ThreadState.load(stored.data).messages
                assert texts[-2] == "go" and messages[-1].tool_calls
                assert not any(isinstance(m, ag.ToolMessage) for m in messages)
            else:
                assert stored.data["messages"] == before.data["messages"]  # (not saved at all)

            # A new turn goes out: from this object, then from another client on another store object.
            assert (await thread.run("again, here")).outcome == "success"
            async with ag.AsyncAgentClient(url, store=other_store, timeout=BOUND) as elsewhere:
                again = await elsewhere.load_thread(thread.id)
                assert (await again.run("again, elsewhere")).outcome == "success"
            assert len(http._transport._pool._requests) == 0  # type: ignore[attr-defined]
        await settle()

    try:
        asyncio.run(main())
    finally:
        scene.gate.open()
        scene.release.set()
        store.close()
        other_store.close()


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("point", [p for p in POINTS if p != "during-tool-handler"])
@pytest.mark.parametrize("shape", ["run", "stream"])
def test_a_run_cancelled_at_each_await_point_leaves_nothing_behind(tmp_path: Path, served: Any, point: str,
                                                                    how: str, shape: str) -> None:
    scene = Scene(point)
    endpoint = served(ScriptedAgent([scene.step], cycle=True))
    scenario(tmp_path, endpoint.url, scene, how, shape)


@pytest.mark.parametrize("how", HOWS)
def test_a_tool_loop_cancelled_in_its_async_handler_leaves_nothing_behind(tmp_path: Path, served: Any,
                                                                          how: str) -> None:
    scene = Scene("during-tool-handler")
    endpoint = served(ScriptedAgent([scene.step], cycle=True))
    scenario(tmp_path, endpoint.url, scene, how, "run_until_done")
