"""Many runs at once on one event loop (issue 21): the async client's pool, and where store calls run.

``python -m bench.concurrency`` measures the speed; these prove the behaviour that speed rests on:
more runs open at once than httpx's default pool admits (100), spread over pool shards that give
their places back, and an in-memory store called on the loop while any other store (or a
``MemoryStore`` subclass that overrides a call) keeps its worker thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
import threading
from pathlib import Path
from typing import Any

import certifi
import httpx
import pytest
from wirekit import request_body

import agui_client as ag
from agui_client import _tls
from agui_client._async.thread_io import calls_on_loop
from agui_client._pool import SHARD_SIZE, ProxiedSyncTransport, ProxiedTransport, ShardedSyncTransport, ShardedTransport
from agui_client.stores import MemoryStore
from agui_client.testing import serve

OPEN_AT_ONCE = 110  # past httpx's default cap of 100 connections


async def _held_open(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Answers a run with RUN_STARTED (its own ids), then holds the response open until the client leaves."""
    if scope["type"] != "http":
        return
    body = await request_body(receive)
    sent = json.loads(body)
    started = {"type": "RUN_STARTED", "threadId": sent["threadId"], "runId": sent["runId"]}
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
    await send({"type": "http.response.body", "body": b"data: " + json.dumps(started).encode() + b"\n\n",
                "more_body": True})
    while (await receive())["type"] != "http.disconnect":
        pass


def test_more_runs_than_httpx_default_pool_admits_stream_at_once_over_shards() -> None:
    with serve(_held_open) as server:
        url = f"http://127.0.0.1:{server.port}/agent"

        async def main() -> tuple[list[int], list[int], list[str]]:
            async with ag.AsyncAgentClient(url) as client:
                transport = client.http._transport
                assert isinstance(transport, ShardedTransport)
                opened: list[str] = []
                all_open, release = asyncio.Event(), asyncio.Event()

                async def one(i: int) -> None:
                    async with client.thread(f"t{i}").stream(run_id=f"r{i}") as stream:
                        async for event in stream:
                            opened.append(event.run_id)  # type: ignore[union-attr]
                            if len(opened) == OPEN_AT_ONCE:
                                all_open.set()
                            await release.wait()
                            return

                tasks = [asyncio.create_task(one(i)) for i in range(OPEN_AT_ONCE)]
                # (a guard against a hang, not a timing: with a cap of 100 the 101st run never starts)
                await asyncio.wait_for(all_open.wait(), 60)
                held = [shard.open for shard in transport._shards]
                release.set()
                await asyncio.gather(*tasks)
                after = [shard.open for shard in transport._shards]
                return held, after, opened

        held, after, opened = asyncio.run(main())
    assert sorted(opened) == sorted(f"r{i}" for i in range(OPEN_AT_ONCE))
    # Filled in order, SHARD_SIZE runs a shard; every place given back when the responses closed.
    full, rest = divmod(OPEN_AT_ONCE, SHARD_SIZE)
    assert held == [SHARD_SIZE] * full + [rest]
    assert after == [0] * len(held)


def test_a_few_runs_share_the_first_shard_and_its_kept_alive_connection() -> None:
    with serve(_held_open) as server:
        url = f"http://127.0.0.1:{server.port}/agent"

        async def main() -> tuple[int, set[Any]]:
            transport = ShardedTransport()
            peers: set[Any] = set()

            def track(name: str, info: dict[str, Any]) -> None:
                if name == "connection.connect_tcp.complete":
                    peers.add(info["return_value"].get_extra_info("socket").getsockname())

            async def trace(name: str, info: dict[str, Any]) -> None:
                track(name, info)

            async with httpx.AsyncClient(transport=transport) as http:
                for i in range(3):  # one after the other: one connection, kept alive
                    async with http.stream("POST", url, json={"threadId": "t", "runId": f"r{i}"},
                                           extensions={"trace": trace}) as response:
                        async for _ in response.aiter_raw():
                            break
                return len(transport._shards), peers

        shards, peers = asyncio.run(main())
    assert shards == 1
    # (a response left before its end cannot be reused: each run here opens one connection of the one shard)
    assert len(peers) == 3


def test_with_a_proxy_in_the_environment_httpx_own_transport_goes_through_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # A transport of ours turns off the proxies httpx reads from the environment: where one serves the
    # agent, httpx's own transport is given it (test_attack_io sends through a loopback proxy).
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    client = ag.AsyncAgentClient("http://agent.invalid/run")
    assert type(client.http._transport) is ProxiedTransport
    asyncio.run(client.close())
    with ag.AgentClient("http://agent.invalid/run") as sync:
        assert type(sync.http._transport) is ProxiedSyncTransport
    monkeypatch.delenv("HTTP_PROXY")
    for name in ("http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    client = ag.AsyncAgentClient("http://agent.invalid/run")
    assert type(client.http._transport) is ShardedTransport
    asyncio.run(client.close())
    with ag.AgentClient("http://agent.invalid/run") as sync:
        assert type(sync.http._transport) is ShardedSyncTransport


def test_only_an_in_memory_store_of_its_own_calls_is_called_on_the_loop() -> None:
    class Subclass(MemoryStore):
        pass

    class Overrides(MemoryStore):
        def save(self, thread_id: str, data: Any, *, expected_version: int | None) -> int:
            return super().save(thread_id, data, expected_version=expected_version)

    assert calls_on_loop(MemoryStore()) and calls_on_loop(Subclass())
    assert not calls_on_loop(Overrides())
    assert not calls_on_loop(object())


@pytest.mark.parametrize("store_kind", ["memory", "overriding"])
def test_store_writes_run_on_the_loop_for_memory_and_in_a_worker_otherwise(
        store_kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, int]] = []

    class Overrides(MemoryStore):
        def claim(self, thread_id: str, **kwargs: Any) -> int:
            return super().claim(thread_id, **kwargs)

    if store_kind == "memory":
        store: MemoryStore = MemoryStore()
        target: type[MemoryStore] = MemoryStore
    else:
        store, target = Overrides(), Overrides
    for name in ("save", "append", "claim"):
        original = getattr(MemoryStore, name)

        def recorded(self: MemoryStore, thread_id: str, *args: Any, _name: str = name, _original: Any = original,
                     **kwargs: Any) -> int:
            calls.append((_name, threading.get_ident()))
            return int(_original(self, thread_id, *args, **kwargs))

        monkeypatch.setattr(MemoryStore, name, recorded)

    with serve(_finishing) as server:
        async def main() -> int:
            async with ag.AsyncAgentClient(f"http://127.0.0.1:{server.port}/agent", store=store) as client:
                result = await client.thread("t1").run("hi", run_id="r1")
                assert result.outcome == "success"
                return threading.get_ident()

        loop_thread = asyncio.run(main())
    # (the claim created the record: the first run's save writes it whole)
    assert target is not None and [name for name, _ in calls] == ["claim", "save"]
    on_loop = [ident == loop_thread for _, ident in calls]
    assert on_loop == ([True, True] if store_kind == "memory" else [False, False])
    assert store.load("t1") is not None and store.load("t1").version == 1  # type: ignore[union-attr]


async def _finishing(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    body = await request_body(receive)
    sent = json.loads(body)
    ids = {"threadId": sent["threadId"], "runId": sent["runId"]}
    frames = [{"type": "RUN_STARTED", **ids}, {"type": "RUN_FINISHED", **ids}]
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
    await send({"type": "http.response.body", "body": b"".join(b"data: " + json.dumps(f).encode() + b"\n\n"
                                                               for f in frames)})


def test_the_sync_client_spreads_a_thread_per_run_over_shards() -> None:
    runs = SHARD_SIZE + 8
    all_open = threading.Barrier(runs + 1)
    release = threading.Event()
    opened: list[str] = []
    with serve(_held_open) as server, ag.AgentClient(f"http://127.0.0.1:{server.port}/agent") as client:
        transport = client.http._transport
        assert isinstance(transport, ShardedSyncTransport)

        def one(i: int) -> None:
            with client.thread(f"t{i}").stream(run_id=f"r{i}") as stream:
                for event in stream:
                    opened.append(event.run_id)  # type: ignore[union-attr]
                    all_open.wait(60)  # (a guard against a hang, not a timing)
                    release.wait(60)
                    return

        workers = [threading.Thread(target=one, args=(i,)) for i in range(runs)]
        for worker in workers:
            worker.start()
        all_open.wait(60)
        held = [shard.open for shard in transport._shards]
        release.set()
        for worker in workers:
            worker.join(60)
        after = [shard.open for shard in transport._shards]
    assert sorted(opened) == sorted(f"r{i}" for i in range(runs))
    assert held == [SHARD_SIZE, 8] and after == [0, 0]


@pytest.mark.parametrize("shell", ["async", "sync"])
def test_every_shard_uses_one_tls_context_made_once(monkeypatch: pytest.MonkeyPatch, shell: str) -> None:
    # httpx makes a TLS context (loading the CA bundle: tens of milliseconds of the loop) for each
    # transport it builds; a backend's ninth concurrent run opened a shard and paid it again. Shards of
    # one run here, three runs held open at once: three shards, one context.
    made: list[Any] = []
    create = ssl.create_default_context

    def counted(*args: Any, **kwargs: Any) -> ssl.SSLContext:
        context = create(*args, **kwargs)
        made.append(context)
        return context

    monkeypatch.setattr(ssl, "create_default_context", counted)
    monkeypatch.setattr(_tls, "_DEFAULT_CONTEXTS", {})  # (as in a new process: none made yet)
    with serve(_held_open) as server:
        url = f"http://127.0.0.1:{server.port}/agent"
        body = [{"threadId": "t", "runId": f"r{i}"} for i in range(3)]

        async def held_async() -> int:
            transport = ShardedTransport(shard_size=1)
            async with httpx.AsyncClient(transport=transport) as http, contextlib.AsyncExitStack() as held:
                for sent in body:
                    response = await held.enter_async_context(http.stream("POST", url, json=sent))
                    assert response.status_code == 200
                return len(transport._shards)

        def held_sync() -> int:
            transport = ShardedSyncTransport(shard_size=1)
            with httpx.Client(transport=transport) as http, contextlib.ExitStack() as held:
                for sent in body:
                    assert held.enter_context(http.stream("POST", url, json=sent)).status_code == 200
                return len(transport._shards)

        shards = asyncio.run(held_async()) if shell == "async" else held_sync()
    assert shards == 3
    assert len(made) == 1  # (before: one a shard, 3)


def test_clients_share_one_default_tls_context_and_settings_that_differ_do_not(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    # Each client loaded the CA bundle again at its first run (22-55 ms, for plain HTTP too): a script
    # or backend making a client per request paid it each time. The default settings' context is the
    # process's one; what httpcore sets on it per connection (ALPN, from http2) and the bundle the
    # environment names are part of what makes one differ.
    made: list[ssl.SSLContext] = []
    create = ssl.create_default_context

    def counted(*args: Any, **kwargs: Any) -> ssl.SSLContext:
        made.append(create(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(ssl, "create_default_context", counted)
    monkeypatch.setattr(_tls, "_DEFAULT_CONTEXTS", {})
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    with serve(_held_open) as server:
        url = f"http://127.0.0.1:{server.port}/agent"

        def context_of(**options: Any) -> ssl.SSLContext:
            transport = ShardedSyncTransport(**options)
            with httpx.Client(transport=transport) as http:
                with http.stream("POST", url, json={"threadId": "t", "runId": "r"}) as response:
                    assert response.status_code == 200
                verify = transport._options["verify"]
            assert isinstance(verify, ssl.SSLContext)
            return verify

        first, second = context_of(), context_of()
        assert first is second and len(made) == 1
        assert context_of(http2=True) is not first and len(made) == 2
        bundle = tmp_path / "ca.pem"  # (any file of certificates: none is used, the agent is plain HTTP)
        bundle.write_bytes(Path(certifi.where()).read_bytes())
        monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
        named = context_of()
        assert named is not first and context_of() is named and len(made) == 3
        untrusting = context_of(trust_env=False)  # (the environment's names do not count then)
        assert untrusting is not named and context_of(trust_env=False) is untrusting and len(made) == 4
        assert context_of(verify=False) is not context_of(verify=False)  # (not the default: made each time)
