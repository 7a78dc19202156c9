"""What the tests of a client's close waking its runs share (``test_close_wakes_runs.py``,
``test_close_wakes_given_http.py``): the agents that stop mid-answer or never answer, the watches that
say when a run's thread is blocked in a read or a connect, the closes made under a run, and the checks
of how a woken run ended.
"""

from __future__ import annotations

import asyncio
import contextlib
import select
import socket
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import httpcore
import pytest
from serverkit import httpcore_pools

import agui_client as ag
from agui_client import _connections
from agui_client.stores import MemoryStore
from agui_client.testing import Finish, Gate, ScriptedAgent, Start, Wait, text_message

#: Every wait of a test, at most: far below the runs' idle timeout.
BOUND = 10.0
#: The runs' idle timeout: a run still blocked when the close is over would wait this long.
IDLE = 60.0
NOTE = "the client was closed while this run was in flight"


def halting(gate: Gate) -> ScriptedAgent:
    """An agent that sends half an answer, then nothing until ``gate`` opens."""
    return ScriptedAgent([lambda run_input: [Start(), *text_message("m-1", "half an answer"), Wait(gate), Finish()]],
                         cycle=True)


def run_socket(http: Any) -> socket.socket:
    """The socket of the one connection the client's own pool holds (httpcore's private attributes): a
    shard's, or that of httpx's pool through the environment's proxy."""
    connections = [c for pool in httpcore_pools(http) for c in pool._connections]
    assert len(connections) == 1
    connection = connections[0]._connection
    while not hasattr(connection, "_network_stream"):  # (through a proxy: the HTTP connection inside)
        connection = connection._connection
    sock = connection._network_stream.get_extra_info("socket")
    assert isinstance(sock, socket.socket)
    return sock


def check_woken(error: BaseException | None, thread: Any) -> None:
    """The run ended as a run whose client was closed under it does, what it folded kept."""
    assert isinstance(error, ag.StreamEnded), repr(error)
    assert error.__notes__ == [NOTE]
    assert thread.state.messages[-1].content == "half an answer"
    stored = thread.client.store.load(thread.id)
    assert stored is not None and stored.claim is None  # (the run gave the thread back)


class ReadWatch:
    """Says when a run's thread, once it has read what the test waits for, is about to block in a socket's
    read (httpcore's, under every connection), with nothing waiting on the socket: from there to the
    read's wait the thread makes no system call and, with a long switch interval, keeps the interpreter,
    so a close the test makes then comes while the run is blocked in the read, never before it (where the
    closed socket fails the read at once, fix or no fix). httpcore's read is done here as it does it."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.reading = threading.Event()
        self._armed: threading.Thread | None = None
        original = httpcore._backends.sync.SyncStream.read

        def read(stream: Any, max_bytes: int, timeout: float | None = None) -> bytes:
            if self._armed is not threading.current_thread():
                return original(stream, max_bytes, timeout)
            sock = stream._sock
            with httpcore._exceptions.map_exceptions({TimeoutError: httpcore.ReadTimeout,
                                                      OSError: httpcore.ReadError}):
                sock.settimeout(timeout)  # (a system call: made before the signal)
                if not select.select([sock], [], [], 0)[0]:  # (else this read returns at once: not the one)
                    self.reading.set()
                return bytes(sock.recv(max_bytes))

        monkeypatch.setattr(httpcore._backends.sync.SyncStream, "read", read)

    def arm(self) -> None:
        """Set :attr:`reading` at the calling thread's read that waits."""
        self._armed = threading.current_thread()


def woken_by_close(url: str, route: str, gate: Gate, watch: ReadWatch) -> None:
    """Run on ``url`` in a thread of its own, close the client from this one once the run waits in a read
    for what the agent holds back at ``gate``, and check the run ended as a closed client's run does, its
    connection closed."""
    client = ag.AgentClient(url, idle_timeout=IDLE, store=MemoryStore())
    assert type(client.http._transport).__name__ == {"direct": "ShardedSyncTransport",
                                                     "proxied": "ProxiedSyncTransport"}[route]
    thread = client.thread("woken")
    ended = threading.Event()
    failed: list[BaseException] = []

    def run() -> None:
        try:
            with thread.stream("go") as stream:
                for event in stream:
                    if isinstance(event, ag.TextMessageEndEvent):
                        watch.arm()  # (half the answer read: the next read waits for more)
        except BaseException as exc:  # noqa: BLE001 - handed to the test, which asserts on it
            failed.append(exc)
        finally:
            ended.set()

    worker = threading.Thread(target=run, daemon=True)
    # (the interpreter is taken from a thread holding it only after this long: far longer than the run's
    # thread takes from the call to its read to the read itself, where it lets go)
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1.0)
    worker.start()
    try:
        assert watch.reading.wait(BOUND)
        sock = run_socket(client.http)
        client.close()
        assert ended.wait(BOUND), "the run was not woken by the close"
    finally:
        sys.setswitchinterval(switch)
        gate.open()
        worker.join(BOUND)

    check_woken(failed[0] if failed else None, thread)
    assert sock.fileno() == -1  # (its connection closed, not left to the collector)


async def closed_under_async_run(client: ag.AsyncAgentClient,
                                 at_half: Callable[[], None] = lambda: None) -> tuple[BaseException | None, Any]:
    """Read ``client``'s thread "woken" in a task of its own until half the answer came (the run then waits
    in a read for more), call ``at_half``, close the client: the run's ``StreamEnded`` (``None``: it ended
    without one) and its thread."""
    thread = client.thread("woken")
    folded = asyncio.Event()

    async def run() -> None:
        async with thread.stream("go") as stream:
            async for event in stream:
                if isinstance(event, ag.TextMessageEndEvent):
                    folded.set()

    task = asyncio.create_task(run())
    await asyncio.wait_for(folded.wait(), BOUND)
    at_half()
    await client.close()
    try:
        await asyncio.wait_for(task, BOUND)
    except ag.StreamEnded as exc:
        return exc, thread
    return None, thread


#: The runs' connect and write timeout, here.
CONNECT = 30.0


CLOSED_FIRST = "failed: the client was closed before the agent's answer came ("


def run_go(thread: Any) -> object:
    """What a run of "go" on ``thread`` ends with."""
    return thread.run("go")


def closed_under_run(client: Any, reached: threading.Event,
                     read: Callable[[Any], object] = run_go) -> tuple[BaseException | None, Any]:
    """Run ``read`` (a run of "go" unless told) on a new thread of ``client`` in an OS thread of its own, close
    the client from this one once ``reached`` is set, and hand back what the run raised, with the thread. The
    interpreter is left to a thread holding it only after a second (as in :func:`woken_by_close`): from a
    watch's signal to the wait the run's thread is about to make, it makes no system call, so the close comes
    while it waits.

    The run's OS thread is joined (for at most :data:`BOUND`) before this returns or raises, whatever
    happened: left running, a run the close failed to wake went on into the tests after this one, and its
    end (a store write, a read of a socket closed under it) came there, blamed on a test that had nothing
    to do with it."""
    thread = client.thread("woken")
    failed: list[BaseException] = []

    def run() -> None:
        try:
            read(thread)
        except BaseException as exc:  # noqa: BLE001 - handed to the test, which asserts on it
            failed.append(exc)

    switch = sys.getswitchinterval()
    sys.setswitchinterval(1.0)
    runner = threading.Thread(target=run, daemon=True)
    runner.start()
    try:
        try:
            assert reached.wait(BOUND), "the run never reached the moment the close was to come at"
        except BaseException:
            client.close()  # (the run is woken even so: it must not block on past this test)
            raise
        client.close()
    finally:
        sys.setswitchinterval(switch)
        runner.join(BOUND)
    assert not runner.is_alive(), "the run was not woken by the close"
    return (failed[0] if failed else None), thread


def check_closed_before_the_answer(error: BaseException | None, thread: Any, url: str) -> None:
    """The run ended as one whose client was closed before the agent's answer came, nothing of it sent whole."""
    assert type(error) is ag.TransportError, repr(error)
    assert error.__notes__ == [NOTE]
    assert str(error).startswith(f"request to {url} {CLOSED_FIRST}"), str(error)
    assert error.request_sent is False
    assert error.result is None  # (nothing folded: no answer came, as for any run the agent never answered)
    stored = thread.client.store.load(thread.id)
    assert stored is not None and stored.claim is None  # (the run gave the thread back)


@contextlib.contextmanager
def listening(rcvbuf: int | None = None, taken: list[socket.socket] | None = None
              ) -> Iterator[tuple[socket.socket, threading.Event]]:
    """A listener on 127.0.0.1 that takes one connection and reads its first byte, then nothing more (a TLS
    hello never answered, a request never read): the event says that byte came. ``rcvbuf``: the connection's
    receive buffer, in bytes; ``taken``: where the connection taken is put (it is closed at the end)."""
    listener = socket.socket()
    if rcvbuf is not None:  # (set on the listener: the connection it takes keeps it)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    arrived = threading.Event()
    taken = [] if taken is None else taken

    def take() -> None:
        with contextlib.suppress(OSError):  # (the listener shut down at the end, nothing taken)
            connection, _ = listener.accept()
            taken.append(connection)
            if connection.recv(1):
                arrived.set()

    server = threading.Thread(target=take, daemon=True)
    server.start()
    try:
        yield listener, arrived
    finally:
        with contextlib.suppress(OSError):
            listener.shutdown(socket.SHUT_RDWR)  # (wakes the accept, when nothing came)
        listener.close()
        server.join(BOUND)
        for connection in taken:
            connection.close()


class ConnectWatch:
    """Says when a run's thread is about to wait in a connect (its socket held for the close to shut down)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.connecting = threading.Event()
        original = _connections._Opening.holding

        @contextlib.contextmanager
        def holding(opening: Any, sock: socket.socket, *, ours: bool) -> Iterator[None]:
            with original(opening, sock, ours=ours):
                if not ours:  # (the connect's own socket, not the handshake's second descriptor)
                    self.connecting.set()
                yield

        monkeypatch.setattr(_connections._Opening, "holding", holding)


class SockConnectWatch:
    """Says when runs' tasks are about to wait in a connect: the loop's ``sock_connect``, which the client's
    own connections call, and asyncio's ``create_connection`` (httpcore's connections through anyio) too."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._connects = 0
        self._more = asyncio.Condition()
        original = loop.sock_connect

        async def sock_connect(sock: socket.socket, address: Any) -> None:
            async with self._more:
                self._connects += 1
                self._more.notify_all()
            await original(sock, address)

        loop.sock_connect = sock_connect  # type: ignore[method-assign]

    async def wait(self, connects: int = 1) -> None:
        """Wait (at most ``BOUND``) until ``connects`` connects are under way."""
        async with self._more:
            await asyncio.wait_for(self._more.wait_for(lambda: self._connects >= connects), BOUND)


async def closed_while_opening(client: ag.AsyncAgentClient, reached: Callable[[], Awaitable[object]]
                               ) -> tuple[BaseException | None, Any]:
    """Run "go" on a new thread of ``client`` in a task of its own, close the client once ``reached()`` is
    over (the run then waits in its connect or handshake), and hand back what the run raised, with the
    thread. A run the close does not wake fails the test at ``BOUND``."""
    thread = client.thread("woken")
    task = asyncio.create_task(thread.run("go"))
    await reached()
    await client.close()
    done, _ = await asyncio.wait([task], timeout=BOUND)
    if not done:
        task.cancel()
    assert done, "the run was not woken by the close"
    return task.exception(), thread


def hello_came(hello: threading.Event) -> Callable[[], Awaitable[object]]:
    """Wait (at most ``BOUND``) for the agent's listener to have the client's TLS hello."""
    async def reached() -> None:
        assert await asyncio.to_thread(hello.wait, BOUND)
    return reached


def hung_up(connection: socket.socket) -> bool:
    """Whether the client closed ``connection`` (the agent's end of it) within ``BOUND``, all it sent read."""
    connection.settimeout(BOUND)
    try:
        while connection.recv(65536):
            pass
    except TimeoutError:
        return False
    return True
