"""Closing a client wakes the runs it has in flight, in another OS thread or another task (both shells).

A run blocked in a read of an agent that stopped sending mid-stream used to stay blocked, when its sync
client was closed from another thread, until its ``idle_timeout`` (closing a socket another thread reads
does not wake that read), and then said "no bytes for 60s". Here the agent stops after half an answer,
the run waits for more in a thread (or a task) of its own, and the client is closed from the test's:
the run must end with the closed client's ``StreamEnded`` and its note, the half answer kept, long before
an ``idle_timeout`` of a minute (the test waits on an event bounded by a few seconds, never on time).

Closing a client given its ``http_client`` is ``test_close_wakes_given_http.py``; the agents, watches and
checks both files use are ``closekit.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from closekit import (
    BOUND,
    CONNECT,
    IDLE,
    NOTE,
    ConnectWatch,
    ReadWatch,
    SockConnectWatch,
    check_closed_before_the_answer,
    check_woken,
    closed_under_async_run,
    closed_under_run,
    closed_while_opening,
    halting,
    hello_came,
    hung_up,
    listening,
    run_socket,
    woken_by_close,
)

import agui_client as ag
from agui_client import _connections, _wakes
from agui_client.stores import MemoryStore, SqliteStore
from agui_client.testing import Finish, Gate, ScriptedAgent, Start, serve, text_message


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


# The async client's close wakes its runs opening a connection too (the twenty-third round): each is an
# awaiting task, which the close cancels in its connect or handshake; the run ends with the same error as a
# sync one, never with a CancelledError its caller did not ask for.


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
