"""A ``PostgresStore`` closes every connection it opened with the store, after runs in the async shell's
worker threads, and one still in use when the store closes is closed when its call gives it back; the
server's own list of sessions (``pg_stat_activity``) is the witness, and an unclosed connection fails
the test (``ResourceWarning`` is an error here)."""

from __future__ import annotations

import asyncio
import gc
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

import agui_client as ag
from agui_client.stores import PostgresStore
from agui_client.testing import ScriptedAgent

BOUND = 10.0


@pytest.fixture
def tagged(postgres_dsn: str) -> Iterator[tuple[str, str, str]]:
    """The session's DSN with a fresh ``application_name`` (whose sessions the test counts), the name,
    and a fresh table (dropped afterwards)."""
    import psycopg
    from psycopg import sql

    name, table = f"closing-{uuid.uuid4().hex[:12]}", f"agui_closing_{uuid.uuid4().hex}"
    yield f"{postgres_dsn} application_name={name}", name, table
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}, {}").format(sql.Identifier(table),
                                                                   sql.Identifier(f"{table}_changes")))


def sessions(postgres_dsn: str, name: str) -> int:
    """How many server sessions carry ``name`` (the store's connections), seen from another connection."""
    import psycopg

    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (name,)).fetchone()
    assert row is not None
    return int(row[0])


def closed_on_the_server(postgres_dsn: str, name: str) -> bool:
    # A client's close reaches the server as a message; the backend leaves pg_stat_activity once it has
    # read it. Asked again (bounded, no clock) rather than waited for.
    return any(sessions(postgres_dsn, name) == 0 for _ in range(200))


@pytest.mark.filterwarnings("error::ResourceWarning")
def test_a_postgres_store_closes_the_connections_its_worker_threads_opened(
        served: Any, postgres_dsn: str, tagged: tuple[str, str, str]) -> None:
    endpoint = served(ScriptedAgent.chat())
    dsn, name, table = tagged

    async def main() -> None:
        with PostgresStore(dsn, table=table) as store:
            async with ag.AsyncAgentClient(endpoint.url, store=store) as client:
                threads = [await client.load_thread() for _ in range(6)]
                results = await asyncio.gather(*(t.run("hi") for t in threads))
                assert all(r.outcome == "success" for r in results)
            assert sessions(postgres_dsn, name) >= 1  # (the idle ones, kept for the next calls)

    asyncio.run(main())
    assert closed_on_the_server(postgres_dsn, name)
    gc.collect()  # (an unclosed connection warns here, in the test, as an error)


@pytest.mark.filterwarnings("error::ResourceWarning")
def test_a_connection_in_use_when_the_store_closes_is_closed_when_given_back(
        postgres_dsn: str, tagged: tuple[str, str, str]) -> None:
    dsn, name, table = tagged
    store = PostgresStore(dsn, table=table)
    store.save("t1", {"messages": []}, expected_version=None)
    inside, go = threading.Event(), threading.Event()
    done: list[Any] = []

    def slow_load() -> None:
        with store._connection("t1") as conn:  # (a call in flight: its connection is out of the idle list)
            inside.set()
            assert go.wait(BOUND)
            done.append(conn.execute("SELECT 1").fetchone())

    worker = threading.Thread(target=slow_load)
    worker.start()
    assert inside.wait(BOUND)
    store.close()
    go.set()
    worker.join(BOUND)

    assert done == [(1,)]  # (the call in flight finished on its connection)
    assert closed_on_the_server(postgres_dsn, name)
    with pytest.raises(ag.StoreError) as refused:
        store.load("t1")
    assert refused.value.thread_id == "t1" and "closed" in str(refused.value)
    gc.collect()


def test_a_read_after_the_server_dropped_the_stores_idle_connections_succeeds(
        postgres_dsn: str, tagged: tuple[str, str, str]) -> None:
    # (a failover, an idle timeout, an operator's pg_terminate_backend: the store does not hand out the
    # dead idle connection; a connection that breaks during a read is read again, ``_read``, which this
    # test does not reach: the idle check sees the dead connection first)
    import psycopg

    dsn, name, table = tagged
    with PostgresStore(dsn, table=table) as store:
        store.save("t1", {"messages": []}, expected_version=None)
        reads = {"load": lambda: store.load("t1").version, "thread_ids": store.thread_ids}  # type: ignore[union-attr]
        expected = {"load": 1, "thread_ids": ["t1"]}
        for read, call in reads.items():
            assert sessions(postgres_dsn, name) >= 1  # (an idle connection kept for the next call)
            with psycopg.connect(postgres_dsn, autocommit=True) as conn:
                conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
                             (name,))
            assert closed_on_the_server(postgres_dsn, name)
            assert call() == expected[read]
