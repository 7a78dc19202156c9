"""Closing a client given its ``http_client`` wakes its own runs in flight, and no other request of that
httpx client (both shells).

The httpx client is the caller's and may carry other code's requests: the close shuts down only the
connections of its own runs (found by their ``SENDER`` mark), and a run that reaches the transport, or
opens a connection, after the close is refused. Each test waits on an event bounded by a few seconds,
never on time. The runs reading in a client's own pool, opening a connection there, and the helpers
both files use: ``test_close_wakes_runs.py``, ``closekit.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import types
from typing import Any

import httpx
import pytest
from closekit import (
    BOUND,
    CONNECT,
    IDLE,
    ReadWatch,
    SockConnectWatch,
    check_closed_before_the_answer,
    check_woken,
    closed_under_async_run,
    closed_under_run,
    closed_while_opening,
    halting,
)

import agui_client as ag
from agui_client import _wakes
from agui_client.stores import MemoryStore
from agui_client.testing import Gate


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
