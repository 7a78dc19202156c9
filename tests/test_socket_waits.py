"""The async client's own connections wait only when the socket would block, and each wait ends exactly.

A read or write of ``agui_client._sockets`` is tried at once and waits on the loop's reader or writer
only when the socket would block, with a timer on that wait when there is a timeout (no cancel scope:
BENCHMARKS.md, nineteenth round). What that must keep: a timeout ends the wait at its time and leaves
nothing on the loop; a cancellation from outside is the caller's, never a timeout, and a timeout from
outside is the caller's, never the connection's; an idle connection the agent closed is never given the
next run (httpcore asks the connection whether it is readable, a ``poll()``: the answer is not cached).

The agents are plain sockets on 127.0.0.1, each step the test's; nothing sleeps (a timeout under test
is the only wait on the clock).
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpcore
import pytest
from serverkit import read_request
from wirekit import sse

from agui_client import AsyncAgentClient
from agui_client._sockets import SocketStream, connect_tcp
from agui_client.testing import ScriptedAgent

#: The longest a step of these tests may wait for the other side (a bug, not a slow machine).
BOUND = 10.0
#: Linux's TCP state of a socket whose FIN the peer acknowledged (``TCP_INFO``'s first byte).
FIN_WAIT2 = 5


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    with socket.create_server(("127.0.0.1", 0)) as sock:
        yield sock


async def _pair(listener: socket.socket) -> tuple[SocketStream, socket.socket]:
    """The client's connection to ``listener`` (on the running loop) and the agent's end of it."""
    host, port = listener.getsockname()
    stream = await connect_tcp(host, port, timeout=BOUND)
    agent, _ = await asyncio.get_running_loop().run_in_executor(None, listener.accept)
    return stream, agent


def test_a_read_waits_no_longer_than_its_timeout_and_leaves_nothing_on_the_loop(listener: socket.socket) -> None:
    async def main() -> tuple[float, bool, bytes]:
        stream, agent = await _pair(listener)
        with agent:
            started = time.monotonic()
            with pytest.raises(httpcore.ReadTimeout):
                await stream.read(1024, timeout=0.05)
            waited = time.monotonic() - started
            # (a reader left behind would fire at every loop pass once bytes came, for nothing)
            left = asyncio.get_running_loop().remove_reader(stream.sock.fileno())
            agent.sendall(b"late")
            late = await stream.read(1024, timeout=BOUND)  # (the connection reads on after a timeout)
            await stream.aclose()
        return waited, left, late

    waited, left, late = asyncio.run(main())

    assert 0.049 <= waited < BOUND and not left and late == b"late"  # (the loop may fire a timer a hair early)


def test_a_cancellation_during_a_wait_is_the_callers_and_a_timeout_from_outside_too(
        listener: socket.socket) -> None:
    # The connection's timer resolves its own wait; it never cancels the task. A cancellation from
    # outside therefore stays a CancelledError, and an outer deadline shorter than the read's timeout is
    # the outer one's TimeoutError, never httpcore's ReadTimeout (which would tell the client the agent
    # went quiet, and fail the run as IdleTimeout).
    async def main() -> tuple[object, BaseException, bool]:
        stream, agent = await _pair(listener)
        with agent:
            reading = asyncio.create_task(stream.read(1024, timeout=BOUND))
            await asyncio.sleep(0)  # (one step: the read is now waiting on the loop's reader)
            reading.cancel()
            [cancelled] = await asyncio.gather(reading, return_exceptions=True)
            with pytest.raises(BaseException) as outer:  # (whatever it is: asserted below)
                with anyio.fail_after(0.05):
                    await stream.read(1024, timeout=BOUND)
            left = asyncio.get_running_loop().remove_reader(stream.sock.fileno())
            await stream.aclose()
        return cancelled, outer.value, left

    cancelled, outer, left = asyncio.run(main())

    assert type(cancelled) is asyncio.CancelledError and type(outer) is TimeoutError and not left


def _request(conn: socket.socket) -> str:
    """Read one request whole from ``conn``; its run id."""
    _, body = read_request(lambda: conn.recv(65536))
    run_id = json.loads(body)["runId"]
    assert isinstance(run_id, str)
    return run_id


def _answer(run_id: str) -> bytes:
    events = [{"type": "RUN_STARTED", "threadId": "t", "runId": run_id},
              {"type": "RUN_FINISHED", "threadId": "t", "runId": run_id}]
    body = sse(*events)
    # (no "Connection: close": to the client the connection stays open for the next run)
    return b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)


def _until_fin_acknowledged(conn: socket.socket) -> None:
    # (the client's kernel has the FIN once it acknowledged it: the idle connection is readable there)
    give_up = time.monotonic() + BOUND
    while struct.unpack("B", conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)[:1])[0] != FIN_WAIT2:
        if time.monotonic() > give_up:
            raise AssertionError("the client never acknowledged the agent's FIN")
        os.sched_yield()


def test_an_idle_connection_the_agent_closed_is_never_given_the_next_run(drive: Any,
                                                                         listener: socket.socket) -> None:
    # The agent answers each run whole on a kept-alive connection, then closes it while it is idle (as a
    # server's keep-alive timeout does). The pool asks the idle connection whether it is readable before
    # it sends the next run there; answered "no" without looking (a cached answer, a guess by the time
    # it has been idle), the next run went out on the dead connection and failed (the agent had hung up:
    # no answer), though a new connection would have served it.
    idle, closed = threading.Event(), threading.Event()
    connections: list[str] = []

    def agent() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                run_id = _request(conn)
                connections.append(run_id)
                conn.sendall(_answer(run_id))
                if len(connections) == 1:
                    assert idle.wait(BOUND)  # (the run is over: its connection is back in the pool)
                    conn.shutdown(socket.SHUT_WR)
                    _until_fin_acknowledged(conn)
                    closed.set()

    accepting = threading.Thread(target=agent, daemon=True)
    accepting.start()
    host, port = listener.getsockname()
    try:
        with drive.client(f"http://{host}:{port}/agent") as client:
            thread = client.thread("t")
            first = thread.run("hi", run_id="r1")
            idle.set()
            assert closed.wait(BOUND)
            second = thread.run("again", run_id="r2")
    finally:
        listener.shutdown(socket.SHUT_RDWR)  # (wakes the accept)
        accepting.join(BOUND)

    assert (first.run_id, second.run_id) == ("r1", "r2") and connections == ["r1", "r2"]


#: Run by :func:`test_closing_a_connection_ends_its_wait_and_frees_its_descriptor` in a process of its
#: own, on the loop named by its argument (uvloop aborted the whole process).
_CLOSED_WHILE_WAITING = """
import asyncio, socket, sys
import httpcore
from agui_client._sockets import SocketStream

async def main():
    mine, agent = socket.socketpair()
    mine.setblocking(False)
    stream, fd = SocketStream(mine), mine.fileno()
    reading = asyncio.create_task(stream.read(1024, timeout=None))
    await asyncio.sleep(0)  # (one step: the read is now waiting on the loop's reader)
    await stream.aclose()
    try:
        await asyncio.wait_for(reading, BOUND)
    except httpcore.ReadError:
        print("ended")
    # The next socket opened takes the freed descriptor; its read waits, then the bytes come.
    mine, agent2 = socket.socketpair()
    mine.setblocking(False)
    print("same descriptor" if mine.fileno() == fd else "another descriptor")
    next_reading = asyncio.create_task(SocketStream(mine).read(1024, timeout=None))
    await asyncio.sleep(0)
    agent2.sendall(b"next")
    print((await asyncio.wait_for(next_reading, BOUND)).decode())

if sys.argv[1] == "uvloop":
    import uvloop
    uvloop.run(main())
else:
    asyncio.run(main())
"""


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_closing_a_connection_ends_its_wait_and_frees_its_descriptor(loop: str) -> None:
    # httpcore may close a connection while a read waits on it (its pool closes every connection it
    # holds, in use or not). The wait was left on the loop: the read waited on for ever, as a closed
    # descriptor never becomes readable; the next socket, given the same descriptor number, waited for
    # ever too (asyncio's loop kept the old registration and never watched the new socket); under
    # uvloop, the process aborted at the next turn of the loop.
    source = f"BOUND = {BOUND}\n" + _CLOSED_WHILE_WAITING
    done = subprocess.run([sys.executable, "-c", source, loop], capture_output=True, text=True, timeout=4 * BOUND,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})

    # (nothing on stderr: no future of a closed wait was left with an exception nobody took)
    assert (done.returncode, done.stdout.split("\n"), done.stderr) == (0, ["ended", "same descriptor", "next", ""], "")


class _NoReaders(asyncio.SelectorEventLoop):
    """An asyncio loop that cannot wait on a socket, as Windows' proactor loop cannot (asyncio's answer)."""

    def add_reader(self, *args: Any) -> None:
        raise NotImplementedError

    def add_writer(self, *args: Any) -> None:
        raise NotImplementedError


def test_a_loop_that_cannot_wait_on_a_socket_gets_httpcores_connections(served: Any) -> None:
    # Only the proactor loop was known to lack add_reader: on any other such loop the run met a bare
    # NotImplementedError at its first wait, its request already sent.
    endpoint = served(ScriptedAgent.chat("on httpcore's connections"))

    async def main() -> str:
        async with AsyncAgentClient(endpoint.url) as client:
            return (await client.thread("t").run("hi")).text

    with asyncio.Runner(loop_factory=_NoReaders) as runner:
        assert runner.run(main()) == "on httpcore's connections"
