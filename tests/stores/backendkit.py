"""The store tests' backends: each store kind opened fresh for a test, with a back door to its raw
records (``Backend``), the fixtures that hand them out (``backend``, ``durable_backend``, ``store``,
``raw_redis``; offered to every store test by ``conftest.py``), the threads the tests save, and the
PostgreSQL helpers (``pg_table``, ``pg``, a table as an older release made it).

(Importable from every file in this folder: pytest puts the folder on ``sys.path`` for its tests.)
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
import redis
from attrs import frozen

from agui_client.core.fold import ThreadState
from agui_client.stores import (
    MemoryStore,
    PostgresStore,
    RedisStore,
    SqliteStore,
    StoredThread,
    ThreadStore,
)
from agui_client.stores.base import Compaction
from agui_client.types import (
    AssistantMessage,
    FunctionCall,
    Interrupt,
    Message,
    ToolCall,
    ToolMessage,
    UserMessage,
)

__all__: list[str] = []


def plain(stored: StoredThread | None) -> StoredThread | None:
    """The loaded thread without its record id (random, checked by tests/stores/test_record_id.py)."""
    return None if stored is None else attrs.evolve(stored, record_id=None)

KINDS = ["memory", "sqlite", "redis", "redis-decoded", "postgres"]
DURABLE_KINDS = ["sqlite", "redis", "redis-decoded", "postgres"]


# --------------------------------------------------------------------------------------------------
# Fixtures: a store plus a back door to its raw records
# --------------------------------------------------------------------------------------------------


@frozen(kw_only=True)
class Backend:
    """A store under test and how to reach past it (to tamper with records, or to open a second store)."""

    store: ThreadStore
    reopen: Callable[[], ThreadStore]
    raw_format: Callable[[str], int]
    set_raw: Callable[[str, str, Any], None]
    cleanup: Callable[[], None] = lambda: None
    #: Another store on the same records that folds appended changes by ``compaction`` (issue 21).
    compacting: Callable[[Compaction], ThreadStore] | None = None


def _memory_backend() -> Backend:
    store = MemoryStore()

    def set_raw(thread_id: str, field: str, value: Any) -> None:
        record = store._records[thread_id]
        if field == "data":
            store._records[thread_id] = attrs.evolve(record, text=value)
        else:
            store._records[thread_id] = attrs.evolve(record, head=attrs.evolve(record.head, **{field: value}))

    def compacting(compaction: Compaction) -> ThreadStore:
        # (one process's memory: the same records, folded by another policy)
        store.compaction = compaction
        return store

    return Backend(store=store, reopen=lambda: store, raw_format=lambda tid: store._records[tid].head.format,
                   set_raw=set_raw, compacting=compacting)


def sqlite_backend(path: Path) -> Backend:
    def raw(sql: str, params: tuple[Any, ...]) -> Any:
        with sqlite3.connect(path) as conn:
            row = conn.execute(sql, params).fetchone()
        conn.close()
        return row

    def set_raw(thread_id: str, field: str, value: Any) -> None:
        # (layout 2: the data is the thread's part 0, the rest is in its head row)
        if field == "data":
            raw("UPDATE agui_thread_parts SET body = ? WHERE thread_id = ? AND seq = 0", (value, thread_id))
        else:
            raw(f"UPDATE agui_threads SET {field} = ? WHERE thread_id = ?", (value, thread_id))

    return Backend(
        store=SqliteStore(path),
        reopen=lambda: SqliteStore(path),
        raw_format=lambda tid: raw("SELECT format FROM agui_threads WHERE thread_id = ?", (tid,))[0],
        set_raw=set_raw,
        compacting=lambda compaction: SqliteStore(path, compaction=compaction),
    )


def _redis_backend(url: str, client: redis.Redis, *, decoded: bool) -> Backend:
    # A fresh prefix per test keeps tests apart on the one session server.
    prefix = f"agui:test:{uuid.uuid4().hex}:"

    def make(compaction: Compaction | None = None) -> ThreadStore:
        if decoded:
            return RedisStore(redis.Redis.from_url(url, decode_responses=True), prefix=prefix, compaction=compaction)
        return RedisStore(url, prefix=prefix, compaction=compaction)

    def set_raw(thread_id: str, field: str, value: Any) -> None:
        client.hset(prefix + thread_id, field, value)

    return Backend(store=make(), reopen=make, raw_format=lambda tid: int(client.hget(prefix + tid, "format") or -1),
                   set_raw=set_raw, compacting=make)


def _postgres_backend(dsn: str) -> Backend:
    import psycopg
    from psycopg import sql

    # A fresh table per test keeps tests apart on the one session server (dropped at the end).
    table = f"agui_test_{uuid.uuid4().hex}"

    def raw(query: sql.Composable, params: tuple[Any, ...]) -> Any:
        with psycopg.connect(dsn, autocommit=True) as conn:
            cursor = conn.execute(query, params)
            return cursor.fetchone() if cursor.description else None

    def set_raw(thread_id: str, field: str, value: Any) -> None:
        raw(sql.SQL("UPDATE {} SET {} = %s WHERE thread_id = %s").format(sql.Identifier(table), sql.Identifier(field)),
            (value, thread_id))

    return Backend(
        store=PostgresStore(dsn, table=table),
        reopen=lambda: PostgresStore(dsn, table=table),
        raw_format=lambda tid: raw(sql.SQL("SELECT format FROM {} WHERE thread_id = %s").format(sql.Identifier(table)),
                                   (tid,))[0],
        set_raw=set_raw,
        cleanup=lambda: raw(sql.SQL("DROP TABLE IF EXISTS {}, {}").format(
            sql.Identifier(table), sql.Identifier(f"{table}_changes")), ()),
        compacting=lambda compaction: PostgresStore(dsn, table=table, compaction=compaction),
    )


@pytest.fixture
def prefix() -> str:
    """A Redis key prefix of the test's own (the server is shared by the session's tests)."""
    return f"agui:test:{uuid.uuid4().hex}:"


@pytest.fixture
def raw_redis(request: pytest.FixtureRequest) -> Iterator[redis.Redis]:
    url: str = request.getfixturevalue("redis_url")
    with redis.Redis.from_url(url) as client:
        yield client


def open_backend(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if kind == "memory":
        backend = _memory_backend()
    elif kind == "sqlite":
        backend = sqlite_backend(tmp_path / "threads.db")
    elif kind == "postgres":
        # Only the PostgreSQL cases ask for the server, so a missing PostgreSQL fails just those.
        backend = _postgres_backend(request.getfixturevalue("postgres_dsn"))
    else:
        # Only the Redis cases ask for the server, so a missing redis-server fails just those.
        client: redis.Redis = request.getfixturevalue("raw_redis")
        backend = _redis_backend(request.getfixturevalue("redis_url"), client, decoded=kind == "redis-decoded")
    opened = [backend.store]
    reopen = backend.reopen

    def tracked_reopen() -> ThreadStore:
        store = reopen()
        opened.append(store)
        return store

    def tracked_compacting(compaction: Compaction) -> ThreadStore:
        assert backend.compacting is not None
        store = backend.compacting(compaction)
        if store not in opened:
            opened.append(store)
        return store

    try:
        yield attrs.evolve(backend, reopen=tracked_reopen,
                           compacting=None if backend.compacting is None else tracked_compacting)
    finally:
        for store in opened:
            store.close()
            if isinstance(store, RedisStore) and not store._owns_client:
                store._client.close()
        backend.cleanup()


@pytest.fixture(params=KINDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    yield from open_backend(request.param, request, tmp_path)


@pytest.fixture(params=DURABLE_KINDS)
def durable_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    yield from open_backend(request.param, request, tmp_path)


@pytest.fixture
def store(backend: Backend) -> ThreadStore:
    return backend.store


# --------------------------------------------------------------------------------------------------
# A real thread: messages, a pending tool call and open interrupts
# --------------------------------------------------------------------------------------------------

APPROVAL = {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]}


def interrupted_thread() -> ThreadState:
    messages: list[Message] = [
        UserMessage(id="u1", content="Delete the staging database, then tell me about caf\u00e9 \u2615 \U0001f600"),
        AssistantMessage(id="a1", content="Checking first.", tool_calls=(
            ToolCall(id="call-1", function=FunctionCall(name="list_dbs", arguments="{}")),
        )),
        ToolMessage(id="t1", tool_call_id="call-1", content='["staging","prod"]'),
        AssistantMessage(id="a2", tool_calls=(
            ToolCall(id="call-2", function=FunctionCall(name="drop_db", arguments='{"name":"staging"}')),
        )),
    ]
    interrupts = [
        Interrupt(id="int-1", reason="tool_approval", message="Drop staging?", tool_call_id="call-2",
                  response_schema=APPROVAL, expires_at="2030-01-01T00:00:00Z", metadata={"risk": "high"}),
        Interrupt(id="int-2", reason="confirm", message="Really?"),
    ]
    return ThreadState(messages=messages, state={"step": 3, "dbs": ["staging", "prod"], "note": None},
                       thread_id="thread-1", open_interrupts=interrupts, interrupted_run_id="run-7")


def small(n: int) -> dict[str, Any]:
    return ThreadState(messages=[UserMessage(id=f"u{n}", content=f"message {n}")], thread_id="t").dump()


@attrs.frozen(kw_only=True)
class FoldsNow(Compaction):
    """A compaction policy that says "fold now" after every append and runs ``first`` when first asked:
    the moment between an append and its compaction (a trigger added there, say), reached without a hook
    in the store. ``asked``: the change counts it was asked about."""

    first: Callable[[], object]
    asked: list[int] = attrs.field(factory=list)

    def due(self, data_bytes: int, change_bytes: int, changes: int) -> bool:
        self.asked.append(changes)
        if len(self.asked) == 1:
            self.first()
        return True


@pytest.fixture
def pg_table(postgres_dsn: str) -> Iterator[str]:
    """A fresh table name on the session's PostgreSQL server, dropped afterwards."""
    import psycopg
    from psycopg import sql

    table = f"agui_test_{uuid.uuid4().hex}"
    yield table
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}, {}").format(sql.Identifier(table),
                                                                   sql.Identifier(f"{table}_changes")))


def pg(dsn: str, query: str, *params: Any) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        cursor = conn.execute(query.encode(), params)  # (bytes: a test's own SQL, with its table name in it)
        return cursor.fetchall() if cursor.description else []


# The thread table as the release before the change table made it (layout 1), verbatim.
LAYOUT_1_CREATE = """
CREATE TABLE {table} (
    thread_id TEXT PRIMARY KEY NOT NULL,
    version BIGINT NOT NULL,
    data TEXT NOT NULL,
    claim TEXT,
    format INTEGER NOT NULL
)
"""


# The thread and change tables as the release before record ids made them (layout 2), verbatim.
_LAYOUT_2_CREATE = """
CREATE TABLE {table} (
    thread_id TEXT PRIMARY KEY NOT NULL,
    version BIGINT NOT NULL,
    data TEXT NOT NULL,
    claim TEXT,
    format INTEGER NOT NULL,
    data_version BIGINT NOT NULL DEFAULT 0,
    changes INTEGER NOT NULL DEFAULT 0,
    change_bytes BIGINT NOT NULL DEFAULT 0
)
"""
_LAYOUT_2_CREATE_CHANGES = """
CREATE TABLE IF NOT EXISTS {table}_changes (
    thread_id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (thread_id, seq)
)
"""


def older_table(dsn: str, table: str, layout: int) -> None:
    """The thread table (and for layout 2 the change table) as the release of that layout made it."""
    if layout == 1:
        pg(dsn, LAYOUT_1_CREATE.format(table=table))
    else:
        pg(dsn, _LAYOUT_2_CREATE.format(table=table))
        pg(dsn, _LAYOUT_2_CREATE_CHANGES.format(table=table))
    pg(dsn, f"COMMENT ON TABLE {table} IS 'agui-client thread store, layout {layout}'")
