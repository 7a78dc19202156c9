"""Shared fixtures: the ``drive`` fixture (one test body, both shells) and a served ``ScriptedAgent``.

``drive`` is parametrized ``["sync", "async"]``. A test body is written once, against the sync
shell's interface; under ``"async"`` the same calls reach ``AsyncAgentClient``/``AsyncThread``
through :class:`Blocking`, which runs every ``await`` on one event loop that lives for the test (an
anyio blocking portal, so the async client keeps one loop for its connection pool). Nothing here
wraps async code in ``asyncio.run()`` inside the library: the async shell is driven natively, from
its own loop, exactly as an application would drive it.

``served`` is session-scoped: one uvicorn server on 127.0.0.1 (``agui_client.testing.serve``)
runs a small path router, and ``served(agent)`` mounts an agent under a fresh path and returns an
:class:`Endpoint` (its URL, the agent, and every request as it arrived: headers and JSON body), so
every test gets its own agent without paying for a server start.

``redis_url`` and ``postgres_dsn`` are session-scoped too, and bound here, once, for every folder:
a real redis-server and a real PostgreSQL server (``serverkit``), each started the first time a test
asks for it and stopped at the session's end.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import inspect
import itertools
import json
import signal
import socket
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from typing import Any, Literal

import anyio.from_thread
import attrs
import httpx
import pytest
from serverkit import postgres_server, redis_server

from agui_client import AgentClient, AsyncAgentClient, AsyncRunStream, AsyncThread
from agui_client.core import standing as _standing
from agui_client.stores.base import apply_changes
from agui_client.testing import Gate, serve

# Every save that appends a run's changes is checked against the whole thread (``standing._VERIFY_CHANGES``):
# every test that runs a thread on a store checks that the incremental record rebuilds it exactly.
_standing._VERIFY_CHANGES = apply_changes

Kind = Literal["sync", "async"]


def pytest_configure(config: pytest.Config) -> None:
    """Hear Ctrl-C even in a session started where SIGINT is ignored.

    The suite presses Ctrl-C itself (``signal.raise_signal`` in this process, and through
    pseudo-terminals to the CLI). A shell without job control starts a background command with SIGINT
    ignored; Python then installs no handler of its own, and every child inherits the ignoring, so those
    tests would see no Ctrl-C at all. The session takes Python's own handler back; its children then
    start with the default, as they would from a terminal.
    """
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Leave what collection built out of the garbage collector's full passes (``gc.freeze``).

    A full session holds every test module, parameter and item alive until it ends, and the collector
    walked all of them again at each of its full passes: in a test that makes many containers (a traced
    run, a large parse, a fuzzer), a large part of the test's time. Frozen,
    they are left out of every pass; what the tests make afterwards is collected as before (and
    ``gc.get_objects()`` lists it as before). Tests that use memory the most ran in about half the time.

    What this hides from a test: ``gc.get_objects()`` and ``gc.get_referrers()`` do not list a frozen
    object (a module's list or instance made at import, the package's own among them), so a test asking
    who still holds an object would not see such a holder; and a cycle among frozen objects is never
    collected. No test asks either (leak tests here look for what the test itself made, by weak
    reference, by ``gc.get_objects()`` or by a ``ResourceWarning`` at ``gc.collect()``); one that does
    must ``gc.unfreeze()`` first.
    """
    gc.collect()
    gc.freeze()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Before each test, collect what the tests before it left, and freeze what is still alive.

    The collection finish's freeze (above) left out what collection built; what the tests made and kept
    after it (module fixtures, caches, Hypothesis's state, the modules a test imports) was walked again
    at every full pass, and every ``gc.collect()`` a test makes walks it whole. Late in a full run beside
    other work, a test that collects (the memory tests, the leak checks) took 8 to 16 s where it takes
    0.2 s alone. Frozen at each test's start, a test's ``gc.collect()`` walks only what this test made, and the
    collection before the freeze costs only what the test before it left (microseconds, most often).

    What this hides, besides what the docstring above says: an object alive when a test starts (a module
    or session fixture's) that later becomes part of an unreachable cycle is never collected (it is freed
    at once if no cycle holds it). What a test made and dropped is collected at the next test's start, at
    the latest, so its ``ResourceWarning`` is still raised.
    """
    gc.collect()
    gc.freeze()


# --------------------------------------------------------------------------------------------------
# drive: one behaviour, one test body, two shells
# --------------------------------------------------------------------------------------------------


class Blocking:
    """The async shell object ``target`` seen through the sync shell's interface.

    Coroutine methods are awaited on ``portal``'s loop; methods returning async context managers,
    async iterators or other async shell objects come back wrapped the same way, as does an async
    iterator a property holds; other attributes (``thread.id``, ``stream.result`` …) pass through untouched.
    """

    def __init__(self, target: Any, portal: anyio.from_thread.BlockingPortal) -> None:
        object.__setattr__(self, "_target", target)
        object.__setattr__(self, "_portal", portal)

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if inspect.iscoroutinefunction(value):
            @functools.wraps(value)
            def awaited(*args: Any, **kwargs: Any) -> Any:
                return _blocking(self._portal.call(functools.partial(value, *args, **kwargs)), self._portal)
            return awaited
        if inspect.ismethod(value):
            @functools.wraps(value)
            def called(*args: Any, **kwargs: Any) -> Any:
                return _blocking(value(*args, **kwargs), self._portal)
            return called
        if hasattr(value, "__aiter__") and not isinstance(value, type):
            return Blocking(value, self._portal)  # (an async iterator a property hands out: stream.text_stream)
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._target, name, value)

    def __enter__(self) -> Blocking:
        self._portal.call(self._target.__aenter__)
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self._portal.call(self._target.__aexit__, *exc_info)

    def __iter__(self) -> Iterator[Any]:
        iterator = self._target.__aiter__()
        while True:
            try:
                yield self._portal.call(iterator.__anext__)
            except StopAsyncIteration:
                return



def _blocking(value: Any, portal: anyio.from_thread.BlockingPortal) -> Any:
    """``value`` as the sync shell would have returned it."""
    if isinstance(value, contextlib.AbstractAsyncContextManager):
        return _BlockingContext(value, portal)
    if isinstance(value, (AsyncAgentClient, AsyncThread, AsyncRunStream)) or hasattr(value, "__aiter__"):
        return Blocking(value, portal)
    return value


class _BlockingContext:
    """An async context manager entered and exited on the portal's loop; what it yields is wrapped."""

    def __init__(self, manager: contextlib.AbstractAsyncContextManager[Any],
                 portal: anyio.from_thread.BlockingPortal) -> None:
        self._manager = manager
        self._portal = portal

    def __enter__(self) -> Any:
        return _blocking(self._portal.call(self._manager.__aenter__), self._portal)

    def __exit__(self, *exc_info: Any) -> bool | None:
        return self._portal.call(self._manager.__aexit__, *exc_info)


class Body(httpx.SyncByteStream, httpx.AsyncByteStream):
    """A response body produced lazily, chunk by chunk, for either shell; records what was pulled.

    ``httpx.Response(content=...)`` and ``httpx.ByteStream`` are read eagerly, so a test about
    streaming, limits or early close must use this (STYLE §3.5).
    """

    def __init__(self, chunks: Callable[[], Iterable[bytes]]) -> None:
        self._chunks = chunks
        self.pulled_chunks = 0
        self.pulled_bytes = 0
        self.closed = False

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._chunks():
            self.pulled_chunks += 1
            self.pulled_bytes += len(chunk)
            yield chunk

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self:
            yield chunk

    def close(self) -> None:
        self.closed = True

    async def aclose(self) -> None:
        self.closed = True


class Drive:
    """Builds clients for one shell; the test body then uses the sync interface for both."""

    def __init__(self, kind: Kind, portal: anyio.from_thread.BlockingPortal | None) -> None:
        self.kind = kind
        self._portal = portal
        self._closers: list[Callable[[], None]] = []

    def client(self, url: str, **kwargs: Any) -> Any:
        """An ``AgentClient`` (sync) or a :class:`Blocking` ``AsyncAgentClient`` (async); use it in ``with``."""
        if self._portal is None:
            client = AgentClient(url, **kwargs)
            self._closers.append(client.close)
            return client
        portal = self._portal
        async_client = portal.call(lambda: AsyncAgentClient(url, **kwargs))
        self._closers.append(lambda: portal.call(async_client.close))
        return Blocking(async_client, portal)

    def http_client(self, transport: httpx.BaseTransport | httpx.AsyncBaseTransport | None = None,
                    **kwargs: Any) -> httpx.Client | httpx.AsyncClient:
        """An ``httpx.Client`` or ``httpx.AsyncClient`` (for ``client(http_client=...)``), closed at teardown."""
        if self._portal is None:
            client = httpx.Client(transport=transport, **kwargs)  # type: ignore[arg-type]
            self._closers.append(client.close)
            return client
        portal = self._portal
        async_client = portal.call(lambda: httpx.AsyncClient(transport=transport, **kwargs))  # type: ignore[arg-type]
        self._closers.append(lambda: portal.call(async_client.aclose))
        return async_client

    def body(self, chunks: Callable[[], Iterable[bytes]]) -> Body:
        """A lazily produced response body (works for both shells); see :class:`Body`."""
        return Body(chunks)

    def mock(self, handler: Callable[[httpx.Request], httpx.Response],
             **kwargs: Any) -> httpx.Client | httpx.AsyncClient:
        """An HTTP client whose every request is answered by ``handler`` (``httpx.MockTransport``)."""
        return self.http_client(httpx.MockTransport(handler), **kwargs)

    def close(self) -> None:
        for close in reversed(self._closers):
            close()


@pytest.fixture(params=["sync", "async"])
def drive(request: pytest.FixtureRequest) -> Iterator[Drive]:
    """Run the test through ``AgentClient``/``Thread`` and through ``AsyncAgentClient``/``AsyncThread``."""
    if request.param == "sync":
        sync = Drive("sync", None)
        yield sync
        sync.close()
        return
    with anyio.from_thread.start_blocking_portal(backend="asyncio") as portal:
        driven = Drive("async", portal)
        yield driven
        driven.close()


@pytest.fixture
def fresh_shapes() -> Iterator[None]:
    """No compiled shape in the process's readers, before the test and after it: what earlier tests read
    (and the caches kept or sent to rest) changes nothing of what the test sees."""
    from agui_client.wire import codec

    codec._derived.clear_shapes()
    yield
    codec._derived.clear_shapes()


@pytest.fixture
def anyio_backend() -> str:
    """The async shells use asyncio (``asyncio.to_thread`` for the store)."""
    return "asyncio"


# --------------------------------------------------------------------------------------------------
# served: a real loopback server, one agent per test
# --------------------------------------------------------------------------------------------------


@attrs.frozen
class Received:
    """One request as it reached the server: its headers (lower-cased names) and its JSON body."""

    method: str
    headers: dict[str, str]
    body: Any


@attrs.frozen
class Endpoint:
    """An agent mounted on the session's server: its URL, the agent, and the raw requests it received."""

    url: str
    agent: Any
    received: list[Received]


class _Mounts:
    """An ASGI app routing ``/<key>/...`` to the agent mounted under ``key``, recording each request."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._keys = itertools.count(1)
        self._apps: dict[str, tuple[Any, list[Received]]] = {}

    def mount(self, app: Any) -> tuple[str, list[Received]]:
        received: list[Received] = []
        with self._lock:
            key = f"agent-{next(self._keys)}"
            self._apps[key] = (app, received)
        return key, received

    def unmount(self, key: str) -> None:
        with self._lock:
            self._apps.pop(key, None)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        with self._lock:
            found = self._apps.get(scope["path"].split("/")[1])
        if found is None:
            await send({"type": "http.response.start", "status": 404, "headers": []})
            await send({"type": "http.response.body", "body": b"no agent mounted here"})
            return
        app, received = found
        chunks: list[bytes] = []
        more = True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in scope["headers"]}
        try:
            parsed: Any = json.loads(body)
        except ValueError:
            parsed = body
        received.append(Received(method=scope["method"], headers=headers, body=parsed))
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await app(scope, replay, send)


@pytest.fixture(scope="session")
def _server() -> Iterator[tuple[_Mounts, str]]:
    mounts = _Mounts()
    with serve(mounts) as server:
        yield mounts, server.url


@pytest.fixture
def served(_server: tuple[_Mounts, str]) -> Iterator[Callable[[Any], Endpoint]]:
    """``served(agent)`` mounts an ASGI agent on the session's uvicorn server; returns its :class:`Endpoint`."""
    mounts, base = _server
    keys: list[str] = []

    def mount(agent: Any) -> Endpoint:
        key, received = mounts.mount(agent)
        keys.append(key)
        return Endpoint(url=f"{base}{key}/agent", agent=agent, received=received)

    yield mount
    for key in keys:
        mounts.unmount(key)


@pytest.fixture
def gate() -> Iterator[Gate]:
    """A gate for ``Wait(gate)`` in a script; opened at teardown so no response is left hanging."""
    opened = Gate()
    yield opened
    opened.open()


# --------------------------------------------------------------------------------------------------
# redis_url, postgres_dsn: one real server of each for the whole session
# --------------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``redis://127.0.0.1:<port>/0`` of the session's redis-server (started on first use, stopped at
    the end); a test names its keys with a prefix of its own."""
    with redis_server(tmp_path_factory.mktemp("redis")) as url:
        yield url


@pytest.fixture(scope="session")
def postgres_dsn() -> Iterator[str]:
    """A libpq DSN of the session's PostgreSQL server: ``AGUI_TEST_POSTGRES_DSN``, or one started on
    first use (``initdb`` into a temporary folder, stopped and removed at the end); a test makes
    tables of its own in it."""
    with postgres_server() as dsn:
        yield dsn


@pytest.fixture
def dropping() -> Iterator[tuple[str, int]]:
    """An address on this machine that never completes a connection: a socket listening with a backlog
    of one, which one connection fills (Linux then drops the SYNs that follow, as a dead route does)."""
    listener = socket.socket()
    listener.bind(("127.0.0.2", 0))
    listener.listen(0)
    address = listener.getsockname()
    filler = socket.create_connection(address)
    try:
        yield address
    finally:
        filler.close()
        listener.close()
