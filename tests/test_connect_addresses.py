"""The async client's own connections try the addresses a name resolves to as RFC 8305 asks: the next
address is tried beside one that has not answered after 250 ms, so an address that drops what is sent
to it (a broken IPv6 route listed first) does not take the whole connect timeout while the next one
works (``agui_client._sockets``)."""

from __future__ import annotations

import asyncio
import os
import resource
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

import anyio
import pytest
import uvloop

import agui_client as ag
from agui_client.testing import Finish, ScriptedAgent, Start

#: The loops the async client's connections run on: asyncio's own, and uvloop (libuv underneath).
LOOPS: dict[str, type[asyncio.AbstractEventLoop]] = {"asyncio": asyncio.SelectorEventLoop, "uvloop": uvloop.Loop}


def _resolving(loop: str, name: str, addresses: list[tuple[str, int]]
               ) -> tuple[Callable[[], asyncio.AbstractEventLoop], list[str]]:
    """A factory of ``loop``'s event loops on which ``name`` resolves to ``addresses`` in that order, and
    the list of the names looked up on them.

    The loop's own ``getaddrinfo`` is overridden in a subclass, as the client asks the running loop:
    patching ``socket.getaddrinfo`` would miss uvloop, which resolves through libuv, and uvloop's
    compiled loop class cannot be patched, though it can be subclassed.
    """
    looked_up: list[str] = []
    base = LOOPS[loop]

    class Resolving(base):  # type: ignore[valid-type,misc]  # (a class chosen at run time)
        async def getaddrinfo(self, host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
            if host != name:
                return await super().getaddrinfo(host, port, *args, **kwargs)
            looked_up.append(host)
            return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", address) for address in addresses]

    return Resolving, looked_up


@pytest.mark.parametrize("loop", LOOPS)
def test_an_address_that_drops_connections_does_not_hold_the_next_one(
        served: Any, dropping: tuple[str, int], loop: str) -> None:
    endpoint = served(ScriptedAgent([[Start(), Finish()]]))
    working = urlsplit(endpoint.url)
    assert working.hostname is not None and working.port is not None
    factory, looked_up = _resolving(loop, "agent.test", [dropping, (working.hostname, working.port)])

    async def run() -> tuple[ag.RunResult, type]:
        # (a connect timeout the dropping address would take whole, were the addresses tried one by one)
        async with ag.AsyncAgentClient(f"http://agent.test:{working.port}{working.path}", timeout=5) as client:
            return await client.thread().run("hello"), type(asyncio.get_running_loop())

    result, ran_on = anyio.run(run, backend_options={"loop_factory": factory})

    assert issubclass(ran_on, LOOPS[loop])
    assert looked_up == ["agent.test"]
    assert result.outcome == "success"
    assert len(endpoint.received) == 1


@pytest.mark.parametrize("loop", LOOPS)
def test_every_address_failing_is_one_connect_error_naming_the_last_failure(loop: str) -> None:
    closed = []
    for _ in range(2):
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        closed.append(probe.getsockname())
        probe.close()  # (nothing listens there now: refused at once)
    factory, looked_up = _resolving(loop, "agent.test", closed)

    async def run() -> None:
        async with ag.AsyncAgentClient(f"http://agent.test:{closed[0][1]}/", timeout=5) as client:
            await client.thread().run("hello")

    with pytest.raises(ag.TransportError) as caught:
        anyio.run(run, backend_options={"loop_factory": factory})

    assert looked_up == ["agent.test"]
    assert caught.value.request_sent is False
    assert "could not reach" in str(caught.value)


def _closing(agent: Any) -> Any:
    """``agent`` answering with ``Connection: close``: no connection is kept for the next run."""
    async def app(scope: Any, receive: Any, send: Any) -> None:
        async def sending(message: Any) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), (b"connection", b"close")]}
            await send(message)
        await agent(scope, receive, sending)
    return app


@contextmanager
def _out_of_descriptors() -> Iterator[None]:
    """The process at its limit of open files: every descriptor up to it taken, the next one refused (EMFILE)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(int(fd) for fd in os.listdir("/proc/self/fd")) + 1, hard))
    held: list[socket.socket] = []
    try:
        try:
            while True:
                held.append(socket.socket())
        except OSError:
            pass
        yield
    finally:
        for sock in held:
            sock.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_a_process_out_of_descriptors_is_a_transport_error_and_the_client_goes_on(drive: Any, served: Any) -> None:
    # The async client's connection made its socket outside the attempt's ``try``: EMFILE left the
    # attempt's task group as an ExceptionGroup, which no caller of httpcore expects (not a ConnectError,
    # so not a TransportError either).
    endpoint = served(_closing(ScriptedAgent([[Start(), Finish()]], cycle=True)))
    with drive.client(endpoint.url) as client:
        thread = client.thread("t")
        assert thread.run("warm").outcome == "success"  # (what the client makes once is made)
        with _out_of_descriptors():
            with pytest.raises(ag.TransportError) as caught:
                thread.run("hello")
        after = thread.run("again")

    assert type(caught.value) is ag.TransportError and caught.value.request_sent is False
    assert "Too many open files" in str(caught.value)
    assert after.outcome == "success"
