"""Closing a client wakes the runs it has in flight, in another OS thread or another task (both shells).

A run blocked in a read of an agent that stopped sending mid-stream used to stay blocked, when its sync
client was closed from another thread, until its ``idle_timeout`` (closing a socket another thread reads
does not wake that read), and then said "no bytes for 60s". Here the agent stops after half an answer,
the run waits for more in a thread (or a task) of its own, and the client is closed from the test's:
the run must end with the closed client's ``StreamEnded`` and its note, the half answer kept, long before
an ``idle_timeout`` of a minute (the test waits on an event bounded by a few seconds, never on time).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import select
import socket
import sys
import threading
import types
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import httpcore
import httpx
import pytest
from serverkit import httpcore_pools

import agui_client as ag
from agui_client import _connections, _wakes
from agui_client.stores import MemoryStore, SqliteStore
from agui_client.testing import Finish, Gate, ScriptedAgent, Start, Wait, serve, text_message

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


@pytest.mark.parametrize("route", ["direct", "proxied"])
def test_a_sync_run_blocked_in_a_read_in_another_thread_is_woken_by_close(
    served: Any, monkeypatch: pytest.MonkeyPatch, route: str
) -> None:
    # Through a proxy the client's transport is httpx's own pool, whose connection holds the HTTP
    # connection, whose socket the close shuts down one level further in.
    gate = Gate()
    with contextlib.ExitStack() as stack:
        if route == "direct":
            url = served(halting(gate)).url
        else:  # (the proxy the environment names is a server of the agent's own: it answers any URL)
            for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "http_proxy"):
                monkeypatch.delenv(name, raising=False)
            proxy = stack.enter_context(serve(halting(gate)))
            monkeypatch.setenv("HTTP_PROXY", proxy.url.rstrip("/"))
            url = "http://agent.invalid/agent"
        stack.callback(gate.open)  # (the agent's response ends before its server stops)
        woken_by_close(url, route, gate, ReadWatch(monkeypatch))


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


def test_an_async_run_blocked_in_a_read_in_another_task_is_woken_by_close(served: Any) -> None:
    gate = Gate()
    endpoint = served(halting(gate))
    sockets: list[socket.socket] = []

    async def main() -> tuple[BaseException | None, Any]:
        client = ag.AsyncAgentClient(endpoint.url, idle_timeout=IDLE, store=MemoryStore())
        return await closed_under_async_run(client, lambda: sockets.append(run_socket(client.http)))

    try:
        error, thread = asyncio.run(main())
    finally:
        gate.open()

    check_woken(error, thread)
    assert sockets[0].fileno() == -1


def test_a_forked_child_closing_its_copy_of_the_client_leaves_the_parents_run_reading(served: Any) -> None:
    # Waking a run shuts its socket down, which a forked child must never do: the socket is the parent's
    # too, and a shut-down socket is shut for both. The child's copy of the client lets go of the
    # parent's connections when it forks; closing it then shuts nothing down.
    gate = Gate()
    endpoint = served(halting(gate))
    client = ag.AgentClient(endpoint.url, idle_timeout=IDLE)
    thread = client.thread("parent")
    ended = threading.Event()
    results: list[Any] = []

    def run() -> None:
        try:
            results.append(thread.run("go"))
        except BaseException as exc:  # noqa: BLE001 - handed to the test, which asserts on it
            results.append(exc)
        finally:
            ended.set()

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    try:
        assert gate.wait_reached(BOUND)
        pid = os.fork()
        if pid == 0:  # (the child closes its copy, and exits at once, whatever happens)
            try:
                client.close()
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        gate.open()  # (the rest of the answer: the parent's run reads it on the same connection)
        assert ended.wait(BOUND)
    finally:
        gate.open()
        worker.join(BOUND)
        client.close()

    assert [type(r).__name__ for r in results] == ["RunResult"]
    assert results[0].outcome == "success" and results[0].text == "half an answer"


def test_closing_the_store_twice_in_a_stream_loop_logs_the_claim_left_below_warning(
        drive: Any, served: Any, tmp_path: Any, caplog: pytest.LogCaptureFixture) -> None:
    # The run's save meets the closed store: its StoreError says the agent answered and the store is
    # closed. The claim the store could then not give back was also a WARNING, which Python prints on
    # stderr when the application set no logging up: a line about the caller's own act. It is an INFO
    # record now, saying the claim stays.
    endpoint = served(ScriptedAgent([[Start(), *text_message("m-1", "one two three"), Finish()]], cycle=True))
    store = SqliteStore(tmp_path / "threads.db")
    caplog.set_level(logging.INFO, logger="agui_client")

    with drive.client(endpoint.url, store=store) as client:
        thread = client.thread()
        with pytest.raises(ag.StoreError) as caught, thread.stream("hi") as stream:
            for _event in stream:
                store.close()
                store.close()

    assert (caught.value.closed, caught.value.agent_answered) == (True, True)
    assert str(caught.value).endswith("but saving the thread failed: the store is closed")
    mine = [r for r in caplog.records if r.name == "agui_client"]
    assert [r.getMessage() for r in mine if r.levelno >= logging.WARNING] == []
    assert [r.getMessage() for r in mine if "claim" in r.getMessage()] == [
        f"thread {thread.id}: its claim stays: the store was closed before the run gave it back"]

def test_a_store_closed_error_says_it_was_closed() -> None:
    store = MemoryStore()
    store.close()

    with pytest.raises(ag.StoreError) as caught:
        store.load("t1")

    assert (caught.value.closed, caught.value.thread_id, str(caught.value)) == (True, "t1", "the store is closed")
    assert ag.StoreError("the backend failed").closed is False


def test_a_run_waiting_for_the_answers_head_when_the_client_closes_says_the_client_was_closed(
        drive: Any, served: Any) -> None:
    # The agent holds its answer's head back; the client is closed from another thread meanwhile. The run
    # failed with httpx's words for the closed socket ("ReadError: [Errno 9] Bad file descriptor"), as
    # if the agent or the network had failed; the type and the note were right, the words now say so too.
    asked, release = threading.Event(), threading.Event()

    async def held_back(run_input: Any) -> list[Any]:
        asked.set()
        await asyncio.to_thread(release.wait, BOUND)
        return [Start(), Finish()]

    endpoint = served(ScriptedAgent([held_back], cycle=True))
    with drive.client(endpoint.url, idle_timeout=IDLE) as client:
        closer = threading.Thread(target=lambda: asked.wait(BOUND) and client.close(), daemon=True)
        closer.start()
        try:
            with pytest.raises(ag.TransportError) as caught:
                client.thread().run("hi")
        finally:
            release.set()
            closer.join(BOUND)

    error = caught.value
    assert type(error) is ag.TransportError and error.__notes__ == [NOTE]
    # (httpx's own words follow in brackets, and they depend on the race between the closing thread's
    # shutdown and the blocked read: ReadError for the closed descriptor, RemoteProtocolError when the
    # read saw the shut-down connection's end first)
    assert str(error).startswith(f"request to {endpoint.url} failed: the client was closed before the agent's "
                                 "answer came ("), str(error)


# Opening a connection, and writing a request: closing a client wakes a run there too (the twenty-second
# round). Each run below is given a connect (and write) timeout of CONNECT, far past BOUND: a run the close
# does not wake fails the test at BOUND (its wait), never passes after a timeout.

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
    while it waits."""
    thread = client.thread("woken")
    ended = threading.Event()
    failed: list[BaseException] = []

    def run() -> None:
        try:
            read(thread)
        except BaseException as exc:  # noqa: BLE001 - handed to the test, which asserts on it
            failed.append(exc)
        finally:
            ended.set()

    switch = sys.getswitchinterval()
    sys.setswitchinterval(1.0)
    threading.Thread(target=run, daemon=True).start()
    try:
        assert reached.wait(BOUND)
        client.close()
        assert ended.wait(BOUND), "the run was not woken by the close"
    finally:
        sys.setswitchinterval(switch)
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


@pytest.mark.timeout(60)
def test_a_sync_run_in_its_tls_handshake_is_woken_by_close() -> None:
    # The agent takes the connection and never answers the client's hello. ssl detaches the socket the
    # connect made, so no socket of the pool's was there to shut down: the run waited for its connect
    # timeout. The handshake now holds a descriptor of its own the close shuts down.
    with listening() as (listener, hello):
        url = f"https://127.0.0.1:{listener.getsockname()[1]}/agent"
        client = ag.AgentClient(url, timeout=CONNECT, idle_timeout=IDLE, store=MemoryStore())
        error, thread = closed_under_run(client, hello)

    check_closed_before_the_answer(error, thread, url)
    assert isinstance(error.__cause__, httpx.ConnectError)  # (the handshake's: it met the connection's end)


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


@pytest.mark.timeout(60)
def test_a_sync_run_connecting_is_woken_by_close(dropping: tuple[str, int], monkeypatch: pytest.MonkeyPatch) -> None:
    # The agent's listener has its backlog full: its kernel drops the client's SYN, and the connect waits.
    # httpcore's connect (socket.create_connection) makes its socket where nothing else reaches it; the
    # shards' own connect holds it, and the close shuts it down. Linux then ends the connect with the reset
    # of the connection, or as if it had succeeded, on a socket connected to nothing (as the SYN's state
    # was): there the connect sees the close, and refuses the connection.
    watch = ConnectWatch(monkeypatch)
    url = f"http://{dropping[0]}:{dropping[1]}/agent"
    client = ag.AgentClient(url, timeout=CONNECT, idle_timeout=IDLE, store=MemoryStore())

    error, thread = closed_under_run(client, watch.connecting)

    check_closed_before_the_answer(error, thread, url)
    assert isinstance(error.__cause__, httpx.ConnectError)
    assert str(error.__cause__) in ("[Errno 104] Connection reset by peer", "the client was closed")


@pytest.mark.timeout(60)
def test_a_shard_woken_by_a_close_opens_no_connection_more(dropping: tuple[str, int]) -> None:
    # A run whose connect starts after the close looked at the connections being opened is refused there,
    # not left to connect (and wait) unseen. Here the shard alone is woken (as the close wakes it), and a
    # request then sent on it: without the refusal it would wait its connect timeout for the dropped SYN.
    url = f"http://{dropping[0]}:{dropping[1]}/agent"
    with ag.AgentClient(url, timeout=CONNECT, idle_timeout=IDLE) as client:
        _wakes.wake(client.http._transport._take(httpx.Request("POST", url)).transport)
        with pytest.raises(httpx.ConnectError) as caught:
            client.http.post(url, content=b"{}")

    assert str(caught.value) == "the client was closed"


def test_a_shard_connection_the_close_did_not_shut_down_is_neither_written_nor_read(served: Any) -> None:
    # A connection that came to a shard's pool as the client closed, after the close looked there, was not
    # shut down. Here a run leaves its connection idle in the shard, and the shard is then marked closed
    # alone, as the close marks it, its connections left as they were: a request sent on that connection
    # is refused at its write, and at the read httpcore makes after a failed write (for an early answer).
    # Were the read let through, it would wait for an answer to a request the agent never got, here until
    # its read timeout.
    endpoint = served(ScriptedAgent.chat())
    with ag.AgentClient(endpoint.url, timeout=BOUND, store=MemoryStore()) as client:
        assert client.thread().run("hi").outcome == "success"
        (shard,) = client.http._transport._shards
        (kept,) = shard.transport._pool._connections
        assert kept.is_idle()
        shard.transport._pool._network_backend.opening.wake()
        with pytest.raises(httpx.ReadError) as caught:
            client.http.post(endpoint.url, content=b"{}", timeout=httpx.Timeout(BOUND, read=1.0))

    assert str(caught.value) == "the client was closed"
    assert len(endpoint.received) == 1  # (the run's: the refused request reached nobody)


@pytest.mark.timeout(60)
def test_a_sync_run_writing_a_body_the_agent_does_not_read_is_woken_by_close() -> None:
    # The agent reads the request's first byte and no more, its receive buffer small; the run's 16 MiB
    # message fills the buffers between them and the write waits. The pool holds the connection while the
    # request is written: its shutdown wakes the write (it did before this round too: checked, kept).
    with listening(rcvbuf=4096) as (listener, first_byte):
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/agent"
        client = ag.AgentClient(url, timeout=CONNECT, idle_timeout=IDLE, store=MemoryStore())
        error, thread = closed_under_run(client, first_byte, lambda thread: thread.run("x" * (16 << 20)))

    check_closed_before_the_answer(error, thread, url)
    # (httpcore reads for an early answer after a write fails: that read meets the closed socket, or the end
    # of the shut-down connection when it came before the close, as for the answer's head above)
    assert isinstance(error.__cause__, (httpx.ReadError, httpx.RemoteProtocolError)), repr(error.__cause__)


def test_closing_a_sync_client_given_its_http_client_wakes_its_runs_and_no_other(
        served: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # The httpx client is the caller's: the close leaves it open, and the run another AgentClient sends on
    # it reads on, but this client's run, blocked in a read in another thread, ends now, its connection shut
    # down, as the run of a client that owns its pool does.
    mine, theirs = Gate(), Gate()
    with httpx.Client() as http, contextlib.ExitStack() as stack:
        stack.callback(mine.open)
        stack.callback(theirs.open)
        other = ag.AgentClient(served(halting(theirs)).url, idle_timeout=IDLE, http_client=http)
        other_ended = threading.Event()
        results: list[Any] = []
        threading.Thread(target=lambda: (results.append(other.thread().run("go")), other_ended.set()),
                         daemon=True).start()
        assert theirs.wait_reached(BOUND)

        watch = ReadWatch(monkeypatch)
        client = ag.AgentClient(served(halting(mine)).url, idle_timeout=IDLE, store=MemoryStore(), http_client=http)

        def read_half(thread: Any) -> None:
            with thread.stream("go") as stream:
                for event in stream:
                    if isinstance(event, ag.TextMessageEndEvent):
                        watch.arm()  # (half the answer read: the next read waits for more)

        error, thread = closed_under_run(client, watch.reading, read_half)
        check_woken(error, thread)
        assert not http.is_closed and not other_ended.is_set()

        theirs.open()
        assert other_ended.wait(BOUND)
        assert results[0].outcome == "success" and results[0].text == "half an answer"


def test_closing_an_async_client_given_its_http_client_wakes_its_run(served: Any) -> None:
    gate = Gate()
    endpoint = served(halting(gate))

    async def main() -> tuple[BaseException | None, Any, bool]:
        async with httpx.AsyncClient() as http:
            client = ag.AsyncAgentClient(endpoint.url, idle_timeout=IDLE, store=MemoryStore(), http_client=http)
            error, thread = await closed_under_async_run(client)
            return error, thread, http.is_closed

    try:
        error, thread, http_closed = asyncio.run(main())
    finally:
        gate.open()

    check_woken(error, thread)
    assert http_closed is False


@pytest.mark.timeout(60)
def test_an_async_run_in_its_tls_handshake_ends_when_its_task_is_cancelled() -> None:
    # The async shell's run waits on the event loop: its task's cancellation ends it there, at once, the
    # thread given back, as a cancellation (the close after it finds no run opening a connection).
    with listening() as (listener, hello):
        url = f"https://127.0.0.1:{listener.getsockname()[1]}/agent"

        async def main() -> tuple[bool, Any]:
            client = ag.AsyncAgentClient(url, timeout=CONNECT, idle_timeout=IDLE, store=MemoryStore())
            thread = client.thread("cancelled")
            task = asyncio.create_task(thread.run("go"))
            assert await asyncio.to_thread(hello.wait, BOUND)
            task.cancel()
            done, _ = await asyncio.wait([task], timeout=BOUND)
            await client.close()
            return task in done and task.cancelled(), thread

        ended, thread = asyncio.run(main())

    assert ended, "the run did not end when its task was cancelled"
    stored = thread.client.store.load(thread.id)
    assert stored is not None and stored.claim is None


def test_closing_a_client_given_its_http_client_leaves_a_connection_another_request_shares() -> None:
    # An HTTP/2 connection carries several requests at once, another AgentClient's or the application's
    # beside this client's run: shutting it down ends them all. (h2, which httpx's HTTP/2 needs, is not
    # installed here, so the pool's requests on one connection are written as httpcore keeps them, around
    # a real socket.) This client's connection of its own is shut down; the shared one is left.
    mine, other = object(), object()

    def connection(sock: socket.socket) -> Any:
        stream = types.SimpleNamespace(get_extra_info=lambda info: sock if info == "socket" else None)
        return types.SimpleNamespace(_connection=types.SimpleNamespace(_network_stream=stream))

    def request(sender: object, on: Any) -> Any:
        return types.SimpleNamespace(request=types.SimpleNamespace(extensions={_wakes.SENDER: sender}), connection=on)

    own, own_peer = socket.socketpair()
    shared, shared_peer = socket.socketpair()
    with own, own_peer, shared, shared_peer:
        alone, both = connection(own), connection(shared)
        pool = types.SimpleNamespace(_requests=[request(mine, alone), request(mine, both), request(other, both)])
        _wakes.wake_requests(types.SimpleNamespace(_pool=pool), mine)
        own_peer.setblocking(False)
        shared_peer.setblocking(False)
        assert own_peer.recv(1) == b""  # (shut down: the peer reads the end)
        with pytest.raises(BlockingIOError):  # (open: nothing to read, no end)
            shared_peer.recv(1)


def test_a_sync_run_reaching_the_transport_after_its_client_closed_opens_no_shard(served: Any, gate: Gate) -> None:
    # httpx looks at its client's state when a request is sent, and the transport is asked for a shard a few
    # calls later (the request's hooks run between): a close landing there emptied the shards, and the run
    # made a new one, connected and read its answer from a closed client, the shard's pool never closed.
    endpoint = served(halting(gate))
    client = ag.AgentClient(endpoint.url, timeout=CONNECT, idle_timeout=IDLE, store=MemoryStore())
    client.http.event_hooks["request"].append(lambda request: client.close())  # (the close, at that point)
    thread = client.thread("woken")
    with pytest.raises(ag.TransportError) as raised:
        thread.run("go")
    check_closed_before_the_answer(raised.value, thread, endpoint.url)
    assert endpoint.agent.requests == [] and client.http._transport._shards == []


def test_an_async_run_reaching_the_transport_after_its_client_closed_opens_no_shard(served: Any, gate: Gate) -> None:
    endpoint = served(halting(gate))

    async def main() -> tuple[BaseException, Any, list[Any]]:
        client = ag.AsyncAgentClient(endpoint.url, timeout=CONNECT, idle_timeout=IDLE, store=MemoryStore())

        async def close(request: httpx.Request) -> None:
            await client.close()

        client.http.event_hooks["request"].append(close)
        thread = client.thread("woken")
        with pytest.raises(ag.TransportError) as raised:
            await thread.run("go")
        return raised.value, thread, client.http._transport._shards

    error, thread, shards = asyncio.run(main())
    check_closed_before_the_answer(error, thread, endpoint.url)
    assert endpoint.agent.requests == [] and shards == []


# The async client's close wakes its runs opening a connection too (the twenty-third round): each is an
# awaiting task, which the close cancels in its connect or handshake; the run ends with the same error as a
# sync one, never with a CancelledError its caller did not ask for.


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


@pytest.mark.timeout(60)
@pytest.mark.parametrize("http", ["own", "given"])
def test_an_async_run_connecting_is_woken_by_close(dropping: tuple[str, int], http: str) -> None:
    # The address drops the SYN: the connect waits, in the client's own connections (the loop's
    # sock_connect) or in httpcore's through anyio (an httpx.AsyncClient passed). The close cancels the
    # run's task there, and the run ends as a sync run does, with the connection's failure.
    url = f"http://{dropping[0]}:{dropping[1]}/agent"

    async def main() -> tuple[BaseException | None, Any, bool]:
        watch = SockConnectWatch(asyncio.get_running_loop())
        async with httpx.AsyncClient() as given:
            client = ag.AsyncAgentClient(url, timeout=CONNECT, idle_timeout=IDLE, store=MemoryStore(),
                                         http_client=given if http == "given" else None)
            error, thread = await closed_while_opening(client, watch.wait)
            return error, thread, given.is_closed

    error, thread, given_closed = asyncio.run(main())

    check_closed_before_the_answer(error, thread, url)
    assert isinstance(error.__cause__, httpx.ConnectError) and str(error.__cause__) == "the client was closed"
    assert given_closed is False


def hung_up(connection: socket.socket) -> bool:
    """Whether the client closed ``connection`` (the agent's end of it) within ``BOUND``, all it sent read."""
    connection.settimeout(BOUND)
    try:
        while connection.recv(65536):
            pass
    except TimeoutError:
        return False
    return True


@pytest.mark.timeout(60)
@pytest.mark.parametrize("http", ["own", "given"])
def test_an_async_run_in_its_tls_handshake_is_woken_by_close(http: str) -> None:
    # The agent takes the connection and never answers the client's hello. The connection is closed as the
    # run ends, not left to the collector (httpcore's connections through anyio close it when a handshake
    # fails, not when it is cancelled).
    accepted: list[socket.socket] = []
    with listening(taken=accepted) as (listener, hello):
        url = f"https://127.0.0.1:{listener.getsockname()[1]}/agent"

        async def main() -> tuple[BaseException | None, Any]:
            async with httpx.AsyncClient() as given:
                client = ag.AsyncAgentClient(url, timeout=CONNECT, idle_timeout=IDLE, store=MemoryStore(),
                                             http_client=given if http == "given" else None)
                return await closed_while_opening(client, hello_came(hello))

        error, thread = asyncio.run(main())
        closed = hung_up(accepted[0])

    check_closed_before_the_answer(error, thread, url)
    assert closed, "the handshake's connection was left open"
    assert isinstance(error.__cause__, httpx.ConnectError) and str(error.__cause__) == "the client was closed"


@pytest.mark.timeout(60)
def test_a_sync_close_landing_between_the_connects_check_and_its_connect_wakes_it(
        dropping: tuple[str, int], monkeypatch: pytest.MonkeyPatch) -> None:
    # The close comes just after the connect's socket was held and the close looked at, before the connect
    # began. A connect with a timeout returns at once on a socket shut down before it (Python waits for it
    # by poll, which such a socket answers at once), and the close refused it after; one without a timeout
    # (timeout=None) waits in the kernel, which that shutdown does not end: to an address that drops the SYN
    # the run waited until the kernel gave up. The connect is now under way before the close is looked at.
    original = _connections._Opening.holding
    url = f"http://{dropping[0]}:{dropping[1]}/agent"
    client = ag.AgentClient(url, timeout=None, idle_timeout=IDLE, store=MemoryStore())

    @contextlib.contextmanager
    def holding(opening: Any, sock: socket.socket, *, ours: bool) -> Iterator[None]:
        with original(opening, sock, ours=ours):
            if not ours:
                client.close()  # (in the run's own thread: the close lands there, whatever the threads do)
            yield

    monkeypatch.setattr(_connections._Opening, "holding", holding)
    thread = client.thread("woken")
    ended = threading.Event()
    failed: list[BaseException] = []

    def run() -> None:
        try:
            thread.run("go")
        except BaseException as exc:  # noqa: BLE001 - handed to the test, which asserts on it
            failed.append(exc)
        finally:
            ended.set()

    threading.Thread(target=run, daemon=True).start()
    assert ended.wait(BOUND), "the run connects after the close, and waits for the agent"

    check_closed_before_the_answer(failed[0] if failed else None, thread, url)
    assert str(failed[0].__cause__) == "the client was closed"


@pytest.mark.timeout(60)
def test_closing_an_async_client_given_its_http_client_wakes_its_connecting_run_and_no_other(
        dropping: tuple[str, int]) -> None:
    # Another AgentClient connects through the same httpx.AsyncClient: the close of this one ends its own
    # run only (each request carries its client's trace), and leaves the other's connecting.
    url = f"http://{dropping[0]}:{dropping[1]}/agent"

    async def main() -> tuple[BaseException | None, Any, bool]:
        watch = SockConnectWatch(asyncio.get_running_loop())
        async with httpx.AsyncClient() as given:
            other = ag.AsyncAgentClient(url, timeout=CONNECT, idle_timeout=IDLE, http_client=given)
            theirs = asyncio.create_task(other.thread().run("go"))
            await watch.wait()
            client = ag.AsyncAgentClient(url, timeout=CONNECT, idle_timeout=IDLE, store=MemoryStore(),
                                         http_client=given)
            error, thread = await closed_while_opening(client, lambda: watch.wait(2))
            left = not theirs.done()
            theirs.cancel()
            await asyncio.wait([theirs], timeout=BOUND)
            await other.close()
            return error, thread, left

    error, thread, other_left_connecting = asyncio.run(main())

    check_closed_before_the_answer(error, thread, url)
    assert other_left_connecting


@pytest.mark.timeout(60)
def test_an_async_run_cancelled_by_its_caller_as_its_client_closes_stays_cancelled(dropping: tuple[str, int]) -> None:
    # The run's task is cancelled (by its caller) in its connect, and the client closed before the task ran
    # again: the close's cancellation becomes the connection's failure, the caller's stays its own.
    url = f"http://{dropping[0]}:{dropping[1]}/agent"

    async def main() -> tuple[bool, Any]:
        watch = SockConnectWatch(asyncio.get_running_loop())
        client = ag.AsyncAgentClient(url, timeout=CONNECT, idle_timeout=IDLE, store=MemoryStore())
        thread = client.thread("cancelled")
        task = asyncio.create_task(thread.run("go"))
        await watch.wait()
        task.cancel()
        await client.close()
        done, _ = await asyncio.wait([task], timeout=BOUND)
        return task in done and task.cancelled(), thread

    cancelled, thread = asyncio.run(main())

    assert cancelled, "the run did not end as the cancellation its caller asked for"
    stored = thread.client.store.load(thread.id)
    assert stored is not None and stored.claim is None



def test_a_sync_run_connecting_after_its_client_given_its_http_client_closed_is_refused(
        served: Any, gate: Gate) -> None:
    # A run that passed the client's check just before it closed, on an httpx client it was given: that
    # client stays open, so httpx sends the request, and the run connected, sent its request and read the
    # answer for a closed client. A connect (or handshake) begun after the close is now refused. (The close
    # is made in the request's own hook, just before the connect.)
    endpoint = served(halting(gate))
    gate.open()
    with httpx.Client() as given:
        client = ag.AgentClient(endpoint.url, timeout=CONNECT, idle_timeout=IDLE, store=MemoryStore(),
                                http_client=given)
        given.event_hooks["request"].append(lambda request: client.close())
        thread = client.thread("woken")
        with pytest.raises(ag.TransportError) as raised:
            thread.run("go")
        given_closed = given.is_closed

    check_closed_before_the_answer(raised.value, thread, endpoint.url)
    assert endpoint.agent.requests == [] and given_closed is False


def test_an_async_run_connecting_after_its_client_given_its_http_client_closed_is_refused(
        served: Any, gate: Gate) -> None:
    endpoint = served(halting(gate))
    gate.open()

    async def main() -> tuple[BaseException, Any, bool]:
        async with httpx.AsyncClient() as given:
            client = ag.AsyncAgentClient(endpoint.url, timeout=CONNECT, idle_timeout=IDLE, store=MemoryStore(),
                                         http_client=given)

            async def close(request: httpx.Request) -> None:
                await client.close()

            given.event_hooks["request"].append(close)
            thread = client.thread("woken")
            with pytest.raises(ag.TransportError) as raised:
                await thread.run("go")
            return raised.value, thread, given.is_closed

    error, thread, given_closed = asyncio.run(main())
    check_closed_before_the_answer(error, thread, endpoint.url)
    assert endpoint.agent.requests == [] and given_closed is False
