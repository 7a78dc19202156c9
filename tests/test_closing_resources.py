"""What the clients and stores open is closed, and no store call outlives the client (worker threads, files).

The async shell runs a store's blocking calls in worker threads. A cancellation cannot stop a call
running there: a cancelled write was already waited out (``AsyncThread._write``); a cancelled read (a
``reload()``, ``load_thread()``, the read of ``release_claim()``) is waited out too, so that once the
caller's ``async with`` has left, nothing of the client still runs against a store the application may
close next. ``with``/``async with`` close what the clients, stores and recording transports opened:
sockets, SQLite connections, Redis pools, recording files. The ``ResourceWarning`` tests turn that
warning into an error, and collect the garbage inside the test, so an unclosed socket or file fails it.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import sqlite3
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

import agui_client as ag
from agui_client.stores import SqliteStore, StoredThread
from agui_client.testing import AsyncRecordingTransport, Finish, RecordingTransport, ScriptedAgent, Start, text_message

BOUND = 5.0


class Counted(SqliteStore):
    """A SQLite store counting its calls in flight; once armed, a load waits for ``go`` (set after the cancel)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.in_flight = 0
        self.armed = False
        self.entered = threading.Event()
        self.go = threading.Event()
        self.fails = False
        self._count = threading.Lock()

    def load(self, thread_id: str) -> StoredThread | None:
        with self._count:
            self.in_flight += 1
        try:
            if self.armed:
                self.entered.set()
                assert self.go.wait(BOUND)
                if self.fails:
                    raise ag.StoreError("the store went away", thread_id=thread_id)
            return super().load(thread_id)
        finally:
            with self._count:
                self.in_flight -= 1


def open_connections(path: Path) -> int:
    """SQLite connections to ``path`` still open in this process (from the garbage collector's view)."""
    gc.collect()
    count = 0
    for thing in gc.get_objects():
        if isinstance(thing, sqlite3.Connection):
            try:
                names = [row[2] for row in thing.execute("PRAGMA database_list")]
            except sqlite3.ProgrammingError:
                continue  # (closed)
            count += any(Path(name) == path for name in names if name)
    return count


@pytest.mark.parametrize("how", ["task-cancel", "asyncio-timeout", "cancel-scope"])
@pytest.mark.parametrize("read", ["reload", "load_thread", "release_claim"])
def test_a_cancelled_store_read_does_not_outlive_the_client(served: Any, tmp_path: Path, read: str, how: str) -> None:
    endpoint = served(ScriptedAgent.chat())
    store = Counted(tmp_path / "threads.db")

    async def main() -> list[int]:
        async with ag.AsyncAgentClient(endpoint.url, store=store) as client:
            thread = await client.load_thread()
            await thread.run("hi")
            store.armed = True
            calls = {"reload": thread.reload, "release_claim": thread.release_claim,
                     "load_thread": lambda: client.load_thread(thread.id)}
            loop = asyncio.get_running_loop()
            scopes: list[Any] = []

            async def read_it() -> Any:
                if how == "cancel-scope":  # (anyio's, as Starlette's: every later await is cancelled too)
                    with anyio.CancelScope() as cancel_scope:
                        scopes.append(cancel_scope)
                        await calls[read]()
                    raise asyncio.CancelledError  # (the scope swallowed it; said here for the check below)
                async with asyncio.timeout(None) as scope:
                    scopes.append(scope)
                    return await calls[read]()

            task = asyncio.create_task(read_it())
            # The store calls still running when the cancelled call returned (the read waits for
            # ``go``, which is set once the cancelled call returned, or once it is seen waiting).
            running: list[int] = []
            task.add_done_callback(lambda _: (running.append(store.in_flight), store.go.set()))
            assert await asyncio.to_thread(store.entered.wait, BOUND)
            if how == "task-cancel":
                task.cancel()
            elif how == "asyncio-timeout":
                scopes[0].reschedule(loop.time())
            else:
                scopes[0].cancel()
                # (the wait for the read is cancelled too, and then blocks the loop: the read must end)
                loop.call_soon(store.go.set)
            for _ in range(3):  # (the loop's turns that deliver the cancellation: FIFO callbacks)
                await asyncio.sleep(0)
            if not task.done():
                store.go.set()  # (the cancelled call waits for the read: let the read end)
            with pytest.raises((asyncio.CancelledError, TimeoutError)):
                await asyncio.wait_for(task, BOUND)
            store.armed = False
        running.append(store.in_flight)  # (and once the client has closed)
        return running

    try:
        assert asyncio.run(main()) == [0, 0]
    finally:
        store.go.set()
        store.close()


def test_a_cancelled_read_that_then_fails_still_ends_in_the_cancellation(
    served: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # The read is waited out; its own failure is not what the caller sees (it asked to stop), and is
    # retrieved, so asyncio logs no "exception was never retrieved".
    endpoint = served(ScriptedAgent.chat())
    store = Counted(tmp_path / "threads.db")

    async def main() -> None:
        async with ag.AsyncAgentClient(endpoint.url, store=store) as client:
            thread = await client.load_thread()
            await thread.run("hi")
            store.armed = store.fails = True
            task = asyncio.create_task(thread.reload())
            assert await asyncio.to_thread(store.entered.wait, BOUND)
            task.cancel()
            asyncio.get_running_loop().call_soon(store.go.set)
            with pytest.raises(asyncio.CancelledError):
                await asyncio.wait_for(task, BOUND)
            assert store.in_flight == 0
            store.armed = False
            assert (await thread.run("again")).outcome == "success"

    try:
        asyncio.run(main())
        gc.collect()
    finally:
        store.go.set()
        store.close()
    assert not [r for r in caplog.records if "never retrieved" in r.getMessage()]


@pytest.mark.filterwarnings("error::ResourceWarning")
def test_the_clients_close_every_socket_they_opened(served: Any) -> None:
    endpoint = served(ScriptedAgent([[Start(), *text_message("m1", "one two three four"), Finish()]] * 4, cycle=True))

    with ag.AgentClient(endpoint.url) as client:
        thread = client.thread()
        thread.run("hi")
        with thread.stream("left early") as stream:
            next(iter(stream))
    assert client.http.is_closed

    async def main() -> ag.AsyncAgentClient:
        async with ag.AsyncAgentClient(endpoint.url) as client:
            thread = client.thread()
            await thread.run("hi")
            async with thread.stream("left early") as stream:
                await anext(aiter(stream))
        return client

    assert asyncio.run(main()).http.is_closed
    gc.collect()  # (an unclosed socket warns here, in the test, as an error)


def test_a_sqlite_store_closes_every_connection_its_worker_threads_opened(served: Any, tmp_path: Path) -> None:
    # Many runs at once: each call takes a pooled connection in its worker thread, so several are open
    # at once; with the store, every one of them is closed.
    endpoint = served(ScriptedAgent.chat())
    path = tmp_path / "threads.db"

    async def main() -> None:
        with SqliteStore(path) as store:
            async with ag.AsyncAgentClient(endpoint.url, store=store) as client:
                threads = [await client.load_thread() for _ in range(12)]
                results = await asyncio.gather(*(t.run("hi") for t in threads))
                assert all(r.outcome == "success" for r in results)
                assert open_connections(path) >= 1
        assert open_connections(path) == 0

    asyncio.run(main())


@pytest.mark.filterwarnings("error::ResourceWarning")
def test_a_recording_transport_closes_its_files_and_sockets_with_the_client(served: Any, tmp_path: Path) -> None:
    endpoint = served(ScriptedAgent([[Start(), *text_message("m1", "one two three four"), Finish()]], cycle=True))
    with httpx.Client(transport=RecordingTransport(tmp_path / "sync")) as http, \
            ag.AgentClient(endpoint.url, http_client=http) as client:
        thread = client.thread()
        thread.run("hi")
        with thread.stream("left early") as stream:
            next(iter(stream))

    async def main() -> None:
        async with httpx.AsyncClient(transport=AsyncRecordingTransport(tmp_path / "async")) as http, \
                ag.AsyncAgentClient(endpoint.url, http_client=http) as client:
            thread = client.thread()
            await thread.run("hi")
            async with thread.stream("left early") as stream:
                await anext(aiter(stream))

    asyncio.run(main())
    gc.collect()
    assert sorted(p.name for p in (tmp_path / "sync").iterdir())[:3] == [
        "01.request.json", "01.response.json", "01.sse"]


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_recording_that_cannot_be_written_still_gives_the_connection_back(served: Any, tmp_path: Path,
                                                                            kind: str) -> None:
    # The response's files are made once its head arrived: a folder where one cannot be made (here
    # ``01.response.json`` turns out to be a directory, made while the agent answers) once failed the
    # run with the response left open, its connection held for good. The run now goes on unrecorded and
    # gives its connection back: the next run on a one-connection pool goes out, and is recorded.
    folder = tmp_path / "recording"

    def turn(run_input: Any) -> list[Any]:
        if not (folder / "01.response.json").exists():
            (folder / "01.response.json").mkdir()
        return [Start(), *text_message("m1", "one two"), Finish()]

    endpoint = served(ScriptedAgent([turn], cycle=True))
    limits = httpx.Limits(max_connections=1)

    if kind == "sync":
        inner = httpx.HTTPTransport(limits=limits)
        recorder: Any = RecordingTransport(folder, inner=inner)
        with httpx.Client(transport=recorder) as http, \
                ag.AgentClient(endpoint.url, http_client=http, timeout=BOUND) as client:
            assert client.thread().run("hi").outcome == "success"
            assert len(inner._pool._requests) == 0
            assert client.thread().run("again").outcome == "success"
    else:
        async def main() -> Any:
            inner = httpx.AsyncHTTPTransport(limits=limits)
            recorder = AsyncRecordingTransport(folder, inner=inner)
            async with httpx.AsyncClient(transport=recorder) as http, \
                    ag.AsyncAgentClient(endpoint.url, http_client=http, timeout=BOUND) as client:
                assert (await client.thread().run("hi")).outcome == "success"
                assert len(inner._pool._requests) == 0
                assert (await client.thread().run("again")).outcome == "success"
            return recorder

        recorder = asyncio.run(main())
    assert not (folder / "01.request.json").exists()  # (the exchange that could not be kept left no request)
    assert (folder / "02.sse").exists() and b"again" in (folder / "02.request.json").read_bytes()
    assert len(recorder.problems) == 1 and "01.response.json" in recorder.problems[0]


# The async reader's generators (``_batches``, ``_flatten``, httpx's ``aiter_raw``) are closed by the client
# when a run ends early, not left at their ``yield`` for the loop's finalizer: that runs later, as a task
# (the pool counted the connection as held until then), and under trio only with a warning.
_READERS = {"_batches", "_flatten", "aiter_raw"}

_EARLY_ENDS: dict[str, tuple[Any, dict[str, Any], type[BaseException] | None]] = {
    # (the agent's turn, the client's options, the error the caller sees; None: the caller leaves early)
    "error in the reader (byte budget)": (
        lambda r: [Start(), *text_message("m1", "word " * 2000), Finish()], {"max_run_bytes": 3000},
        ag.LimitExceeded),
    "error in the fold, reader at its yield": (
        lambda r: [Start(), *text_message("m1", "a b"),
                   {"type": "TEXT_MESSAGE_CONTENT", "messageId": "nobody", "delta": "x"}, Finish()], {},
        ag.SequenceError),
    "the caller breaks out": (lambda r: [Start(), *text_message("m1", "word " * 2000), Finish()], {}, None),
}


@pytest.mark.parametrize(("case", "how"), [
    *((case, "thread.stream") for case in _EARLY_ENDS),
    # (``client.open`` hands out payloads unfolded: the fold's error has no place there)
    *((case, "client.open") for case in _EARLY_ENDS if case != "error in the fold, reader at its yield"),
])
def test_the_async_reader_is_closed_when_the_run_ends_early(served: Any, case: str, how: str) -> None:
    turn, options, error = _EARLY_ENDS[case]
    endpoint = served(ScriptedAgent([turn], cycle=True))
    started: list[Any] = []

    async def main() -> None:
        hooks = sys.get_asyncgen_hooks()

        def first_iteration(generator: Any) -> None:
            if generator.ag_code.co_name in _READERS:
                started.append(generator)
            if hooks.firstiter is not None:
                hooks.firstiter(generator)

        sys.set_asyncgen_hooks(first_iteration, hooks.finalizer)
        try:
            async with ag.AsyncAgentClient(endpoint.url, **options) as client:
                thread = await client.load_thread()
                with pytest.raises(error) if error is not None else contextlib.nullcontext():
                    if how == "thread.stream":
                        async with thread.stream("hi") as events:
                            async for event in events:
                                if error is None and isinstance(event, ag.TextMessageContentEvent):
                                    break
                    else:
                        run_input = ag.RunAgentInput(thread_id=thread.id, run_id="r1", state={}, messages=[],
                                                     tools=[], context=[], forwarded_props={})
                        async with client.open(run_input) as payloads:
                            async for _ in payloads:
                                if error is None:
                                    break
                # Every reader generator has ended by now: none waits at its ``yield`` for a finalizer.
                assert {generator.ag_code.co_name for generator in started} >= {"_batches", "aiter_raw"}
                assert [generator.ag_code.co_name for generator in started if generator.ag_frame is not None] == []
        finally:
            sys.set_asyncgen_hooks(*hooks)

    asyncio.run(main())
