"""A ``RedisStore`` made from a URL closes its pool with the store, after runs in the async shell's
worker threads (the connections they took were opened there); an unclosed socket fails the test."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import pytest

import agui_client as ag
from agui_client.stores import RedisStore
from agui_client.testing import ScriptedAgent


@pytest.mark.filterwarnings("error::ResourceWarning")
def test_a_redis_store_made_from_a_url_closes_its_pool(served: Any, redis_url: str) -> None:
    endpoint = served(ScriptedAgent.chat())

    async def main() -> Any:
        with RedisStore(redis_url, prefix="closing:") as store:
            async with ag.AsyncAgentClient(endpoint.url, store=store) as client:
                threads = [await client.load_thread() for _ in range(6)]
                results = await asyncio.gather(*(t.run("hi") for t in threads))
                assert all(r.outcome == "success" for r in results)
            pool = store._client.connection_pool
            assert pool._created_connections >= 1
        # (the store is still referenced: what closed the pool is the store's close, not a finalizer)
        assert pool._available_connections and all(c._sock is None for c in pool._available_connections)
        assert not pool._in_use_connections
        return store

    asyncio.run(main())
    gc.collect()  # (an unclosed socket warns here, in the test, as an error)
