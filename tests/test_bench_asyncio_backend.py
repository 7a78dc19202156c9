"""The network backends the bench puts under the package's shards (``bench/asyncio_backend.py``, issue 21)
work: httpcore's anyio backend (the shards' until the eighteenth round) and the bench's two on plain asyncio.

They are measured beside the package's own connections by ``python -m bench.concurrency --agui-http
own,anyio,asyncio-protocol,asyncio-sock``; these tests check that each name reads through the connections it
names, and that ``AsyncAgentClient`` completes runs on them against real servers on 127.0.0.1 (the
bench's load server in another process, raw asyncio servers for the hostile cases), with the shards'
run deadline still kept, and that a hostile server gets httpcore's timeouts, not a hang or a growing
buffer. No timing is asserted.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

import agui_client as ag
from agui_client import AsyncAgentClient
from agui_client.stores import MemoryStore

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench import asyncio_backend  # noqa: E402
from bench.asyncio_backend import BACKENDS, ProtocolBackend, sharded_client, use_backend  # noqa: E402
from bench.concurrency import Server  # noqa: E402

pytestmark = pytest.mark.timeout(120)

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


def _counting(name: str) -> Any:
    """The backend ``name``, counting the connections it makes (so a test knows it was used)."""

    class Counting(BACKENDS[name]):  # type: ignore[misc, valid-type]
        connects = 0

        async def connect_tcp(self, *args: Any, **kwargs: Any) -> Any:
            Counting.connects += 1
            return await super().connect_tcp(*args, **kwargs)

    return Counting()


@pytest.fixture(scope="module")
def load_server() -> Any:
    server = Server(0.01, 12)
    yield server
    server.close()


@pytest.mark.parametrize("name", sorted(BACKENDS))
def test_agui_client_completes_runs_on_the_backend(load_server: Server, name: str) -> None:
    async def main() -> None:
        backend = _counting(name)
        client = AsyncAgentClient(load_server.url("full"), store=MemoryStore(), timeout=30.0, idle_timeout=30.0)
        use_backend(client.http._transport, backend)  # type: ignore[attr-defined]
        try:
            results = await asyncio.gather(*(client.thread(f"t{i}").run(run_id=f"r{i}") for i in range(3)))
            for result in results:
                assert result.outcome == "success" and not result.warnings, result
                assert result.events == load_server.full_events
            again = await client.thread("t0").run(run_id="r-again")  # (a kept-alive connection)
            assert again.outcome == "success" and again.events == load_server.full_events
            client.url = load_server.url("paced")
            seen = 0
            async with client.thread("p").stream(run_id="rp") as stream:
                async for _ in stream:
                    seen += 1
            assert seen == load_server.paced_events and stream.result is not None
            assert stream.result.outcome == "success"
        finally:
            await client.close()
            await client.http.aclose()
        assert 3 <= type(backend).connects <= 4  # every connection was the backend's, and one was reused

        raw = sharded_client(name)
        try:
            async with raw.stream("POST", load_server.url("full"), json={"threadId": "x", "runId": "y"}) as response:
                body = b"".join([chunk async for chunk in response.aiter_raw()])
        finally:
            await raw.aclose()
        assert body.count(b"data: ") == load_server.full_events

    asyncio.run(main())


#: The module of the connections each name of the bench reads through (``own``: the package's own).
_STREAM_MODULES = {"own": "agui_client._sockets", "anyio": "httpcore._backends.anyio",
                   "asyncio-protocol": "bench.asyncio_backend", "asyncio-sock": "bench.asyncio_backend"}


def test_each_name_reads_through_the_connections_it_names(load_server: Server) -> None:
    # What a row of the benchmark measures is named by these: "own" must be the package's connections of
    # this round and "anyio" httpcore's of the rounds before, or a before/after comparison compares nothing.
    assert set(_STREAM_MODULES) == {"own", *BACKENDS}

    async def module_of(name: str) -> str:
        raw = sharded_client(name)
        try:
            async with raw.stream("POST", load_server.url("full"), json={"threadId": "x", "runId": "y"}) as response:
                wrapped = response.extensions["network_stream"]  # (the shards' bounded wrapper around it)
                async for _ in response.aiter_raw():
                    pass
        finally:
            await raw.aclose()
        return type(wrapped._stream).__module__

    async def main() -> dict[str, str]:
        return {name: await module_of(name) for name in _STREAM_MODULES}

    assert asyncio.run(main()) == _STREAM_MODULES


def test_the_concurrency_benchmark_runs_agui_client_on_each_backend(tmp_path: Path) -> None:
    out = tmp_path / "concurrency.json"
    proc = subprocess.run(
        [sys.executable, "-m", "bench.concurrency", "--smoke", "--agui-http", "own," + ",".join(BACKENDS), "--raw",
         "--no-idle", "--sync-n", "", "--json", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    results = json.loads(out.read_text())
    rows = {(r["mode"], r["n"], r["stack"]): r for r in results["rows"]}
    assert all(r["error"] is None for r in rows.values()), [r for r in rows.values() if r["error"]]
    full, paced = results["config"]["full_events"], results["config"]["paced_events"]
    aguis = ["agui_client", *(f"agui_client [{name}]" for name in BACKENDS)]
    raws = [f"httpx raw [{name}]" for name in ("own", *BACKENDS)]
    for n in (1, 3):
        for stack in (*aguis, "hand-written", *raws):
            assert rows[("full", n, stack)]["events"] == [n * full], stack
        for stack in (*aguis, "hand-written"):
            assert rows[("paced", n, stack)]["events"] == [n * paced], stack
    assert "transports (--agui-http, --raw)" in proc.stdout and "x agui_client" in proc.stdout
    assert "--agui-http" in subprocess.run([sys.executable, "-m", "bench.concurrency", "--help"], cwd=ROOT,
                                           capture_output=True, text=True, check=True).stdout


# --------------------------------------------------------------------------------------------------
# hostile servers
# --------------------------------------------------------------------------------------------------

class _Serving:
    """A raw server on 127.0.0.1 for ``handler``; leaving it waits for every exchange to end, closed."""

    def __init__(self, handler: Handler) -> None:
        self._handler = handler
        self._exchanges: list[asyncio.Task[Any]] = []

    async def _exchange(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._exchanges.append(asyncio.current_task())  # type: ignore[arg-type]
        try:
            await self._handler(reader, writer)
        except ConnectionError:
            pass
        finally:
            writer.close()
            try:
                await writer.wait_closed()
            except ConnectionError:
                pass

    async def __aenter__(self) -> tuple[str, int]:
        self._server = await asyncio.start_server(self._exchange, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/", port

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.wait_for(asyncio.gather(*self._exchanges), 60)
        self._server.close()
        await self._server.wait_closed()


@pytest.mark.parametrize("name", sorted(BACKENDS))
def test_a_server_that_never_answers_is_a_read_timeout(name: str) -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # (until the client leaves)

    async def main() -> None:
        async with _Serving(silent) as (url, _):
            http = sharded_client(name, timeout=0.2)
            try:
                with pytest.raises(httpx.ReadTimeout):
                    await http.post(url, json={})
            finally:
                await http.aclose()

    asyncio.run(main())


@pytest.mark.parametrize("name", sorted(BACKENDS))
def test_a_server_that_never_reads_is_a_write_timeout(name: str) -> None:
    async def main() -> None:
        gone = asyncio.Event()

        async def deaf(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await gone.wait()

        async with _Serving(deaf) as (url, _):
            http = sharded_client(name, timeout=0.2)
            try:
                with pytest.raises(httpx.WriteTimeout):  # (32 MiB fill the kernel's buffers both ways)
                    await http.post(url, content=b"x" * (32 << 20))
            finally:
                await http.aclose()
                gone.set()

    asyncio.run(main())


def test_a_server_sending_faster_than_the_client_reads_is_held_in_the_kernel() -> None:
    # The protocol backend's loop reads whatever arrives; past HIGH_WATER buffered bytes it stops reading
    # until the client has taken them, so a huge answer read slowly costs a bounded buffer, and nothing is lost.
    size = 16 << 20
    head = b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % size

    async def flood(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(head)
        for _ in range(size >> 16):
            writer.write(b"y" * (1 << 16))
            await writer.drain()

    async def main() -> None:
        async with _Serving(flood) as (_, port):
            stream = await ProtocolBackend().connect_tcp("127.0.0.1", port, timeout=10)
            protocol = stream._protocol  # type: ignore[attr-defined]
            await stream.write(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n", timeout=10)
            turns = 0
            while not protocol.paused:  # (the loop fills the buffer while nobody reads)
                assert turns < 100_000, protocol.size
                await asyncio.sleep(0)
                turns += 1
            most = protocol.size
            got = 0
            while True:
                data = await stream.read(1 << 16, timeout=10)
                if not data:
                    break
                got += len(data)
                most = max(most, protocol.size)
                await asyncio.sleep(0)
            await stream.aclose()
        # (one data_received brings at most the loop's read size, 256 KiB, past the mark)
        assert most <= asyncio_backend.HIGH_WATER + 256 * 1024, most
        assert got == len(head) + size

    asyncio.run(main())


@pytest.mark.parametrize("name", sorted(BACKENDS))
def test_the_run_deadline_still_holds_against_a_head_sent_a_byte_at_a_time(name: str) -> None:
    # The backend sits inside the shards' bounded wrapper: run_timeout still bounds the wait for the head.
    async def main() -> None:
        done = asyncio.Event()

        async def slowloris(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readuntil(b"\r\n\r\n")
            try:
                writer.write(b"HTTP/1.1 200 OK\r\n")
                for _ in range(600):  # (a minute at most: a header line every 0.1 s, each read in time)
                    writer.write(b"x-slow: 1\r\n")
                    await writer.drain()
                    await asyncio.sleep(0.1)
            finally:
                done.set()

        async with _Serving(slowloris) as (url, _):
            client = AsyncAgentClient(url, store=MemoryStore(), timeout=30.0, run_timeout=0.5)
            use_backend(client.http._transport, BACKENDS[name]())  # type: ignore[attr-defined]
            try:
                with pytest.raises(ag.RunTimeout):
                    await client.thread().run("hi")
            finally:
                await client.close()
                await client.http.aclose()
            await asyncio.wait_for(done.wait(), 30)  # (the server saw the client leave)

    asyncio.run(main())
