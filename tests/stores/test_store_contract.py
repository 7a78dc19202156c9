"""The thread-store contract, run against every store: MemoryStore, SqliteStore, RedisStore, PostgresStore.

Each store must give the same answers: the same versions, the same errors with the same attributes.
Redis runs twice, with a bytes client and with a ``decode_responses=True`` client.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import re
import select
import sqlite3
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import attrs
import pytest
import redis
from attrs import frozen
from storekit import refused_open

from agui_client.core.fold import ThreadState
from agui_client.errors import AguiError, ConcurrentResume, StoreError
from agui_client.stores import (
    STORE_FORMAT_VERSION,
    MemoryStore,
    PostgresStore,
    RedisStore,
    SqliteStore,
    StoredThread,
    ThreadStore,
    apply_changes,
)
from agui_client.stores.base import Compaction, Head, check_write
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


def _plain(stored: StoredThread | None) -> StoredThread | None:
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


def _sqlite_backend(path: Path) -> Backend:
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
def raw_redis(request: pytest.FixtureRequest) -> Iterator[redis.Redis]:
    url: str = request.getfixturevalue("redis_url")
    with redis.Redis.from_url(url) as client:
        yield client


def _backend(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if kind == "memory":
        backend = _memory_backend()
    elif kind == "sqlite":
        backend = _sqlite_backend(tmp_path / "threads.db")
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
    yield from _backend(request.param, request, tmp_path)


@pytest.fixture(params=DURABLE_KINDS)
def durable_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    yield from _backend(request.param, request, tmp_path)


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


# --------------------------------------------------------------------------------------------------
# Round trip
# --------------------------------------------------------------------------------------------------


def test_store_satisfies_the_protocol(store: ThreadStore) -> None:
    assert isinstance(store, ThreadStore)


def test_saved_thread_loads_back_equal_with_its_open_interrupts(store: ThreadStore) -> None:
    thread = interrupted_thread()
    version = store.save("thread-1", thread.dump(), expected_version=None)

    stored = store.load("thread-1")

    assert version == 1
    assert _plain(stored) == StoredThread(thread_id="thread-1", version=1, data=thread.dump(), claim=None,
                                  format=STORE_FORMAT_VERSION)
    back = ThreadState.load(stored.data)
    assert back.messages == thread.messages
    assert back.state == thread.state
    assert back.open_interrupts == thread.open_interrupts
    assert [i.id for i in back.open_interrupts] == ["int-1", "int-2"]
    assert back.interrupted_run_id == "run-7"
    assert back.thread_id == "thread-1"


def test_missing_thread_loads_as_none(store: ThreadStore) -> None:
    assert store.load("nobody") is None


def test_loaded_data_is_the_callers_own_copy(store: ThreadStore) -> None:
    store.save("t", small(1), expected_version=None)
    first = store.load("t")
    assert first is not None
    first.data["messages"].clear()

    again = store.load("t")

    assert again is not None
    assert again.data == small(1)


def test_each_write_raises_the_version_by_one(store: ThreadStore) -> None:
    versions = [store.save("t", small(1), expected_version=None)]
    versions.append(store.save("t", small(2), expected_version=versions[-1]))
    versions.append(store.claim("t", expected_version=versions[-1], owner="a"))
    versions.append(store.release("t", claimed_version=versions[-1], owner="a"))
    versions.append(store.save("t", small(3), expected_version=versions[-1]))

    assert versions == [1, 2, 3, 4, 5]
    stored = store.load("t")
    assert stored is not None
    assert (stored.version, stored.data) == (5, small(3))


def test_threads_are_kept_apart(store: ThreadStore) -> None:
    store.save("a", small(1), expected_version=None)
    store.save("b", small(2), expected_version=None)
    store.save("b", small(3), expected_version=1)

    a, b = store.load("a"), store.load("b")

    assert a is not None and b is not None
    assert (a.version, a.data) == (1, small(1))
    assert (b.version, b.data) == (2, small(3))


# --------------------------------------------------------------------------------------------------
# Compare-and-set
# --------------------------------------------------------------------------------------------------


def test_creating_an_existing_thread_is_refused(store: ThreadStore) -> None:
    store.save("t", small(1), expected_version=None)
    store.save("t", small(2), expected_version=1)

    with pytest.raises(ConcurrentResume) as caught:
        store.save("t", small(9), expected_version=None)

    assert (caught.value.thread_id, caught.value.expected_version, caught.value.actual_version) == ("t", 0, 2)
    stored = store.load("t")
    assert stored is not None
    assert (stored.version, stored.data) == (2, small(2))


def test_save_with_a_stale_version_is_refused_and_changes_nothing(store: ThreadStore) -> None:
    store.save("t", small(1), expected_version=None)
    store.save("t", small(2), expected_version=1)

    with pytest.raises(ConcurrentResume) as caught:
        store.save("t", small(9), expected_version=1)

    assert (caught.value.thread_id, caught.value.expected_version, caught.value.actual_version) == ("t", 1, 2)
    stored = store.load("t")
    assert stored is not None
    assert (stored.version, stored.data, stored.claim) == (2, small(2), None)


def test_save_with_a_version_from_the_future_is_refused(store: ThreadStore) -> None:
    store.save("t", small(1), expected_version=None)

    with pytest.raises(ConcurrentResume) as caught:
        store.save("t", small(9), expected_version=2)

    assert (caught.value.expected_version, caught.value.actual_version) == (2, 1)


def test_save_of_a_thread_that_is_not_stored_is_refused(store: ThreadStore) -> None:
    with pytest.raises(ConcurrentResume) as caught:
        store.save("t", small(1), expected_version=3)

    assert (caught.value.thread_id, caught.value.expected_version, caught.value.actual_version) == ("t", 3, None)
    assert store.load("t") is None


def test_a_lost_race_is_an_agui_error_and_not_a_store_error(store: ThreadStore) -> None:
    store.save("t", small(1), expected_version=None)

    with pytest.raises(AguiError) as caught:
        store.claim("t", expected_version=7, owner="a")

    assert type(caught.value) is ConcurrentResume


# --------------------------------------------------------------------------------------------------
# Claims
# --------------------------------------------------------------------------------------------------


def test_claim_keeps_the_data_and_records_the_owner(store: ThreadStore) -> None:
    store.save("t", small(1), expected_version=None)

    version = store.claim("t", expected_version=1, owner="replica-a")

    stored = store.load("t")
    assert version == 2
    assert _plain(stored) == StoredThread(thread_id="t", version=2, data=small(1), claim="replica-a",
                                  format=STORE_FORMAT_VERSION)


def test_second_claim_of_the_same_version_is_refused(store: ThreadStore) -> None:
    store.save("t", small(1), expected_version=None)
    store.claim("t", expected_version=1, owner="a")

    with pytest.raises(ConcurrentResume) as stale:
        store.claim("t", expected_version=1, owner="b")

    assert (stale.value.expected_version, stale.value.actual_version) == (1, 2)
    stored = store.load("t")
    assert stored is not None
    assert (stored.version, stored.claim) == (2, "a")


def test_claim_of_a_claimed_thread_at_its_current_version_is_refused(store: ThreadStore) -> None:
    store.save("t", small(1), expected_version=None)
    store.claim("t", expected_version=1, owner="a")

    with pytest.raises(ConcurrentResume) as held:
        store.claim("t", expected_version=2, owner="b")

    assert (held.value.expected_version, held.value.actual_version) == (2, 2)
    stored = store.load("t")
    assert stored is not None
    assert (stored.version, stored.claim) == (2, "a")


def test_the_claim_holder_cannot_claim_twice_either(store: ThreadStore) -> None:
    store.save("t", small(1), expected_version=None)
    store.claim("t", expected_version=1, owner="a")

    with pytest.raises(ConcurrentResume):
        store.claim("t", expected_version=2, owner="a")


def test_claim_of_a_thread_that_is_not_stored_is_refused(store: ThreadStore) -> None:
    with pytest.raises(ConcurrentResume) as caught:
        store.claim("t", expected_version=1, owner="a")

    assert caught.value.actual_version is None
    assert store.load("t") is None


def test_a_claim_without_a_version_creates_the_thread_claimed_at_version_0(store: ThreadStore) -> None:
    created = store.claim("t", expected_version=None, owner="a", data=small(1))

    claimed = _plain(store.load("t"))
    saved = store.save("t", small(2), expected_version=created)
    stored = _plain(store.load("t"))
    assert (created, claimed) == (0, StoredThread(thread_id="t", version=0, data=small(1), claim="a",
                                                  format=STORE_FORMAT_VERSION))
    assert (saved, stored) == (1, StoredThread(thread_id="t", version=1, data=small(2), claim=None,
                                               format=STORE_FORMAT_VERSION))


def test_a_creating_claim_of_a_thread_that_exists_is_refused_and_changes_nothing(store: ThreadStore) -> None:
    store.save("saved", small(1), expected_version=None)
    store.claim("claimed", expected_version=None, owner="a", data=small(1))

    with pytest.raises(ConcurrentResume) as saved:
        store.claim("saved", expected_version=None, owner="b", data=small(2))
    with pytest.raises(ConcurrentResume) as claimed:
        store.claim("claimed", expected_version=None, owner="b", data=small(2))
    with pytest.raises(ConcurrentResume) as created:
        store.save("claimed", small(2), expected_version=None)

    assert [(c.value.thread_id, c.value.expected_version, c.value.actual_version) for c in (saved, claimed, created)] \
        == [("saved", 0, 1), ("claimed", 0, 0), ("claimed", 0, 0)]
    assert _plain(store.load("saved")) == StoredThread(thread_id="saved", version=1, data=small(1), claim=None,
                                               format=STORE_FORMAT_VERSION)
    assert _plain(store.load("claimed")) == StoredThread(thread_id="claimed", version=0, data=small(1), claim="a",
                                                 format=STORE_FORMAT_VERSION)


def test_releasing_a_creating_claim_leaves_the_thread_at_version_1_unclaimed(store: ThreadStore) -> None:
    store.claim("t", expected_version=None, owner="a", data=small(1))

    released = store.release("t", claimed_version=0, owner="a")

    assert (released, _plain(store.load("t"))) == (1, StoredThread(thread_id="t", version=1, data=small(1), claim=None,
                                                           format=STORE_FORMAT_VERSION))
    assert store.claim("t", expected_version=1, owner="b") == 2


def test_a_claim_sent_again_by_its_owner_is_recognised_and_writes_nothing(store: ThreadStore) -> None:
    # The owner's claim landed but its reply was lost: sent again, it finds itself (the same version
    # back, nothing written) instead of being refused. Nobody else's claim is recognised, and a claim
    # the owner knows it holds (asked for from the version it made) stays refused.
    store.save("t", small(1), expected_version=None)
    store.claim("t", expected_version=1, owner="a")
    store.claim("new", expected_version=None, owner="a", data=small(1))

    again = store.claim("t", expected_version=1, owner="a")
    created_again = store.claim("new", expected_version=None, owner="a", data=small(2))
    with pytest.raises(ConcurrentResume) as other:
        store.claim("t", expected_version=1, owner="b")
    with pytest.raises(ConcurrentResume) as held:
        store.claim("t", expected_version=2, owner="a")

    assert (again, created_again) == (2, 0)
    assert _plain(store.load("t")) == StoredThread(thread_id="t", version=2, data=small(1), claim="a",
                                           format=STORE_FORMAT_VERSION)
    assert _plain(store.load("new")) == StoredThread(thread_id="new", version=0, data=small(1), claim="a",
                                             format=STORE_FORMAT_VERSION)
    assert [(c.value.expected_version, c.value.actual_version) for c in (other, held)] == [(1, 2), (2, 2)]
    assert store.save("t", small(3), expected_version=again) == 3


def test_a_claim_takes_data_exactly_when_it_creates_the_thread(store: ThreadStore) -> None:
    store.save("t", small(1), expected_version=None)

    with pytest.raises(ValueError):
        store.claim("new", expected_version=None, owner="a")
    with pytest.raises(ValueError):
        store.claim("t", expected_version=1, owner="a", data=small(2))
    with pytest.raises(StoreError):
        store.claim("new", expected_version=None, owner="a", data={"bad": {1, 2}})

    assert store.load("new") is None
    assert _plain(store.load("t")) == StoredThread(thread_id="t", version=1, data=small(1), claim=None,
                                           format=STORE_FORMAT_VERSION)


def test_release_makes_the_thread_claimable_again(store: ThreadStore) -> None:
    store.save("t", small(1), expected_version=None)
    claimed = store.claim("t", expected_version=1, owner="a")

    released = store.release("t", claimed_version=claimed, owner="a")

    after_release = _plain(store.load("t"))
    assert (released, after_release) == (3, StoredThread(thread_id="t", version=3, data=small(1), claim=None,
                                                          format=STORE_FORMAT_VERSION))
    assert store.claim("t", expected_version=3, owner="b") == 4
    stored = store.load("t")
    assert stored is not None
    assert stored.claim == "b"


def test_release_by_someone_who_does_not_hold_the_claim_is_refused(store: ThreadStore) -> None:
    store.save("t", small(1), expected_version=None)
    claimed = store.claim("t", expected_version=1, owner="a")

    with pytest.raises(ConcurrentResume) as caught:
        store.release("t", claimed_version=claimed, owner="b")

    assert (caught.value.expected_version, caught.value.actual_version) == (2, 2)
    stored = store.load("t")
    assert stored is not None
    assert (stored.version, stored.claim) == (2, "a")


def test_release_of_an_unclaimed_thread_is_refused(store: ThreadStore) -> None:
    store.save("t", small(1), expected_version=None)

    with pytest.raises(ConcurrentResume) as caught:
        store.release("t", claimed_version=1, owner="a")

    assert caught.value.actual_version == 1
    stored = store.load("t")
    assert stored is not None
    assert stored.version == 1


def test_release_after_the_thread_moved_on_is_refused(store: ThreadStore) -> None:
    store.save("t", small(1), expected_version=None)
    claimed = store.claim("t", expected_version=1, owner="a")
    store.save("t", small(2), expected_version=claimed)

    with pytest.raises(ConcurrentResume) as caught:
        store.release("t", claimed_version=claimed, owner="a")

    assert (caught.value.expected_version, caught.value.actual_version) == (2, 3)


def test_save_by_the_claim_holder_clears_the_claim(store: ThreadStore) -> None:
    store.save("t", small(1), expected_version=None)
    claimed = store.claim("t", expected_version=1, owner="a")

    saved = store.save("t", small(2), expected_version=claimed)

    stored = store.load("t")
    assert _plain(stored) == StoredThread(thread_id="t", version=saved, data=small(2), claim=None,
                                          format=STORE_FORMAT_VERSION)
    assert saved == 3
    assert store.claim("t", expected_version=3, owner="b") == 4


def test_an_empty_owner_is_refused(store: ThreadStore) -> None:
    store.save("t", small(1), expected_version=None)

    with pytest.raises(ValueError):
        store.claim("t", expected_version=1, owner="")

    stored = store.load("t")
    assert stored is not None
    assert (stored.version, stored.claim) == (1, None)


@pytest.fixture
def eager_thread_switching() -> Iterator[None]:
    """Switch threads every microsecond, so interleavings a missing lock would allow actually happen."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


@pytest.mark.usefixtures("eager_thread_switching")
def test_racing_claims_of_one_version_admit_exactly_one(store: ThreadStore) -> None:
    """16 threads load the same version and claim it at once, 50 times over: one wins each time."""
    workers, rounds = 16, 50
    barrier = threading.Barrier(workers)

    def contend(thread_id: str, worker: int) -> tuple[str, int | None]:
        # The barrier lines the loads up; a broken one raises rather than hangs (a watchdog, not a timing).
        barrier.wait(timeout=60)
        stored = store.load(thread_id)
        assert stored is not None
        try:
            store.claim(thread_id, expected_version=stored.version, owner=f"w{worker}")
        except ConcurrentResume as exc:
            return "lost", exc.actual_version
        return "won", None

    with ThreadPoolExecutor(max_workers=workers) as pool:
        for n in range(rounds):
            thread_id = f"race-{n}"
            store.save(thread_id, small(n), expected_version=None)
            results = list(pool.map(contend, [thread_id] * workers, range(workers)))

            winners = [w for w, (outcome, _) in enumerate(results) if outcome == "won"]
            assert len(winners) == 1, f"round {n}: {len(winners)} claims succeeded"
            assert {actual for outcome, actual in results if outcome == "lost"} == {2}
            stored = store.load(thread_id)
            assert stored is not None
            assert (stored.version, stored.claim, stored.data) == (2, f"w{winners[0]}", small(n))


@pytest.mark.usefixtures("eager_thread_switching")
def test_racing_creating_claims_of_one_new_thread_admit_exactly_one(store: ThreadStore) -> None:
    """16 threads claim a thread id nobody holds at once, 50 times over: one creates it each time."""
    workers, rounds = 16, 50
    barrier = threading.Barrier(workers)

    def contend(thread_id: str, worker: int) -> tuple[str, int | None]:
        barrier.wait(timeout=60)  # (a watchdog, not a timing)
        try:
            store.claim(thread_id, expected_version=None, owner=f"w{worker}", data=small(worker))
        except ConcurrentResume as exc:
            return "lost", exc.actual_version
        return "won", None

    with ThreadPoolExecutor(max_workers=workers) as pool:
        for n in range(rounds):
            thread_id = f"new-{n}"
            results = list(pool.map(contend, [thread_id] * workers, range(workers)))

            winners = [w for w, (outcome, _) in enumerate(results) if outcome == "won"]
            assert len(winners) == 1, f"round {n}: {len(winners)} creating claims succeeded"
            assert {actual for outcome, actual in results if outcome == "lost"} == {0}
            stored = store.load(thread_id)
            assert stored is not None
            assert (stored.version, stored.claim, stored.data) == (0, f"w{winners[0]}", small(winners[0]))


@pytest.mark.usefixtures("eager_thread_switching")
def test_racing_saves_of_one_version_admit_exactly_one(store: ThreadStore) -> None:
    workers, rounds = 8, 10
    barrier = threading.Barrier(workers)
    store.save("t", small(0), expected_version=None)

    def contend(worker: int, expected: int) -> bool:
        barrier.wait(timeout=60)
        try:
            store.save("t", small(worker), expected_version=expected)
        except ConcurrentResume:
            return False
        return True

    with ThreadPoolExecutor(max_workers=workers) as pool:
        for n in range(rounds):
            wins = list(pool.map(contend, range(workers), [n + 1] * workers))

            assert wins.count(True) == 1
            stored = store.load("t")
            assert stored is not None
            assert (stored.version, stored.data) == (n + 2, small(wins.index(True)))


# --------------------------------------------------------------------------------------------------
# Format, delete, close, bad data
# --------------------------------------------------------------------------------------------------


def test_the_record_format_is_stored_with_the_record(backend: Backend) -> None:
    backend.store.save("t", small(1), expected_version=None)

    stored = backend.store.load("t")

    assert stored is not None
    assert stored.format == STORE_FORMAT_VERSION == 2
    assert backend.raw_format("t") == STORE_FORMAT_VERSION


def test_a_record_of_a_newer_format_is_neither_read_nor_overwritten(backend: Backend) -> None:
    backend.store.save("t", small(1), expected_version=None)
    backend.set_raw("t", "format", STORE_FORMAT_VERSION + 1)

    with pytest.raises(StoreError) as on_load:
        backend.store.load("t")
    with pytest.raises(StoreError) as on_save:
        backend.store.save("t", small(2), expected_version=1)
    with pytest.raises(StoreError) as on_claim:
        backend.store.claim("t", expected_version=1, owner="a")

    assert on_load.value.thread_id == on_save.value.thread_id == on_claim.value.thread_id == "t"
    assert backend.raw_format("t") == STORE_FORMAT_VERSION + 1


def test_an_unreadable_record_is_a_store_error(backend: Backend) -> None:
    backend.store.save("t", small(1), expected_version=None)
    backend.set_raw("t", "data", '{"messages": [')

    with pytest.raises(StoreError) as caught:
        backend.store.load("t")

    assert caught.value.thread_id == "t"
    # (where the text breaks, said in the message; the parser's error, which holds the whole record in its
    # .doc, is neither the cause nor the context)
    assert str(caught.value).startswith("thread 't': stored data is not JSON: ")
    assert "at character 14" in str(caught.value)
    assert caught.value.__cause__ is None and caught.value.__context__ is None


def test_integers_beyond_64_bits_come_back_exact(store: ThreadStore) -> None:
    # orjson reads an integer below -2**63 (19 digits) as a float, and refuses one too large for a
    # double (309+ digits) outright: a thread holding either in its state became inexact, or could
    # never be opened again.
    state = {"below": -9223372036854775809, "nines": -9999999999999999999, "huge": 10**309, "f": 1.5,
             "edge": -9223372036854775808}
    store.save("t", ThreadState(state=state).dump(), expected_version=None)

    stored = store.load("t")

    assert stored is not None and stored.data["state"] == state
    assert all(type(stored.data["state"][k]) is int for k in ("below", "nines", "huge", "edge"))


@pytest.mark.parametrize(("field", "value"), [
    # (a message without a string role is dropped with MS-05, as one of an unknown role is, since the
    # nineteenth round's fuzzer: a message of a known role with an id that is not a string is damage)
    ("messages", 5), ("messages", [{"id": 1, "role": "user", "content": "hi"}]), ("openInterrupts", [5]),
    ("usageByRun", []),
    ("subagents", {"s": 5}), ("pendingToolCallIds", 5), ("format", 99), ("state", float("nan")),
    # (attack audit, third round: ids of another JSON type loaded, and failed later where compared or sent)
    ("interruptedRunId", 5), ("lastRunId", ["r"]), ("lastOutcome", {}), ("threadId", 7), ("pendingToolCallIds", [5]),
])
def test_a_damaged_record_is_a_store_error_naming_the_thread_when_a_thread_is_built(
    backend: Backend, field: str, value: Any
) -> None:
    # The store reads the JSON; the thread rebuilt from it meets what is wrong inside. Either way the
    # caller gets the store's error naming the thread, never a TypeError from deep in the rebuild.
    from agui_client import AgentClient

    data = {**small(1), field: value}
    backend.store.save("t", small(1), expected_version=None)  # then overwritten past the store's checks
    backend.set_raw("t", "data", json.dumps(data, allow_nan=True))
    with AgentClient("http://127.0.0.1:9/agent", store=backend.store) as client:
        with pytest.raises(StoreError) as caught:
            client.thread("t")

    assert caught.value.thread_id == "t"


def test_a_stored_message_without_a_role_is_dropped_with_a_warning_as_one_of_an_unknown_role(backend: Backend) -> None:
    # A record holds messages as the wire carries them, and reads them by the wire's rule: a message
    # whose role this release does not know (a newer release's, or none) is dropped with MS-05, the
    # thread's other messages kept, not the whole thread refused.
    from agui_client import AgentClient, AguiWarning

    data = small(1)
    data = {**data, "messages": [*data["messages"], {"id": "m2", "content": "no role"}]}
    backend.store.save("t", small(1), expected_version=None)
    backend.set_raw("t", "data", json.dumps(data))
    with AgentClient("http://127.0.0.1:9/agent", store=backend.store) as client:
        with pytest.warns(AguiWarning) as warned:
            thread = client.thread("t")

    assert [m.id for m in thread.state.messages] == ["u1"]
    assert any("MS-05" in str(w.message) and "without a string 'role'" in str(w.message) for w in warned)


def test_a_foreign_sqlite_head_empty_claim_is_none_and_a_text_format_a_store_error(tmp_path: Path) -> None:
    # A row written by another tool: an empty claim owner holds nothing (as Redis reads it), and a
    # version or format that is not an integer is the store's error, not a TypeError at the resume.
    backend = _sqlite_backend(tmp_path / "threads.db")
    backend.store.save("t", small(1), expected_version=None)
    backend.set_raw("t", "claim", "")
    stored = backend.store.load("t")
    assert stored is not None and stored.claim is None
    backend.store.claim("t", expected_version=1, owner="a")  # (an empty owner holds nothing)

    backend.set_raw("t", "format", "one")
    with pytest.raises(StoreError) as on_load:
        backend.store.load("t")
    with pytest.raises(StoreError) as on_claim:
        backend.store.claim("t", expected_version=2, owner="b")
    assert on_load.value.thread_id == on_claim.value.thread_id == "t"
    backend.store.close()


def test_data_that_is_not_json_ready_is_refused_and_nothing_is_stored(store: ThreadStore) -> None:
    for bad in ({"state": float("nan")}, {"state": object()}, {"state": {1, 2}}):
        with pytest.raises(StoreError) as caught:
            store.save("t", bad, expected_version=None)
        assert caught.value.thread_id == "t"

    assert store.load("t") is None


class _Colour(enum.Enum):
    RED = "red"


@dataclasses.dataclass
class _Point:
    x: int


def test_what_orjson_could_write_but_json_refuses_is_still_refused(store: ThreadStore) -> None:
    # orjson writes NaN as null and serialises these types natively; the record must not.
    nested_bad = [
        {"state": {"deep": [1, 2.5, {"x": float("nan")}]}},
        {"state": (1.0, float("inf"))},
        {"messages": [{"id": "m", "content": -float("inf")}]},
        {"state": datetime.datetime(2030, 1, 1, tzinfo=datetime.timezone.utc)},
        {"state": {"id": uuid.UUID(int=1)}},
        {"state": [_Colour.RED]},
        {"state": _Point(1)},
    ]
    for bad in nested_bad:
        with pytest.raises(StoreError) as caught:
            store.save("t", bad, expected_version=None)
        assert caught.value.thread_id == "t"

    assert store.load("t") is None


def test_data_the_fast_encoder_cannot_write_round_trips_as_json_writes_it(store: ThreadStore) -> None:
    # Lone surrogates, integer keys, integers past 64 bits, str subclasses: the stdlib encoder's output.
    class Name(str):
        pass

    data = {"state": {"lone": "a\ud800b", 7: "seven", "big": -(2**63) - 1, "name": Name("n")}}
    store.save("t", data, expected_version=None)

    stored = store.load("t")

    assert stored is not None
    assert stored.data == {"state": {"lone": "a\ud800b", "7": "seven", "big": -(2**63) - 1, "name": "n"}}


def test_non_ascii_and_awkward_numbers_round_trip(store: ThreadStore) -> None:
    data = {"state": {"text": "h\u00e9llo \u2028 \U0001f389 \x1f", "floats": [1e16, -0.0, 1e-7, 0.1],
                      "ints": [2**64 - 1, -(2**63)], "nested": [[{"a": None, "b": True}], ()]},
            "messages": ThreadState(messages=[UserMessage(id="u", content="\u00fcber \U0001f600")]).dump()["messages"]}
    store.save("t", data, expected_version=None)
    store.save("t", data, expected_version=1)

    stored = store.load("t")

    assert stored is not None
    want = json.loads(json.dumps(data))
    assert stored.data == want
    assert ThreadState.load(stored.data).messages[0].content == "\u00fcber \U0001f600"


def test_a_record_written_as_escaped_ascii_text_still_loads(backend: Backend) -> None:
    # Records written before the store encoded with orjson: ASCII text with \u escapes.
    backend.store.save("t", small(1), expected_version=None)
    data = {"state": {"text": "h\u00e9 \U0001f389"}, "messages": []}
    backend.set_raw("t", "data", json.dumps(data, ensure_ascii=True, separators=(",", ":")))

    stored = backend.store.load("t")

    assert stored is not None
    assert stored.data == data


def test_delete_forgets_the_thread(store: ThreadStore) -> None:
    store.save("t", small(1), expected_version=None)
    store.save("other", small(2), expected_version=None)

    store.delete("t")
    store.delete("t")

    assert store.load("t") is None
    with pytest.raises(ConcurrentResume) as caught:
        store.save("t", small(3), expected_version=1)
    assert caught.value.actual_version is None
    assert store.save("t", small(4), expected_version=None) == 1
    other = store.load("other")
    assert other is not None
    assert other.data == small(2)


def test_a_closed_store_refuses_every_call(backend: Backend) -> None:
    backend.store.save("t", small(1), expected_version=None)

    backend.store.close()
    backend.store.close()

    calls: list[Callable[[], object]] = [
        lambda: backend.store.load("t"),
        lambda: backend.store.save("t", small(2), expected_version=1),
        lambda: backend.store.claim("t", expected_version=1, owner="a"),
        lambda: backend.store.release("t", claimed_version=1, owner="a"),
        lambda: backend.store.delete("t"),
    ]
    for call in calls:
        with pytest.raises(StoreError):
            call()


def test_a_store_is_a_context_manager_that_closes_itself(backend: Backend) -> None:
    store = backend.reopen()
    assert isinstance(store, (MemoryStore, SqliteStore, RedisStore, PostgresStore))

    with store as entered:
        entered.save("t", small(1), expected_version=None)

    assert entered is store
    with pytest.raises(StoreError):
        store.load("t")


def test_a_durable_thread_survives_into_a_second_store_object(durable_backend: Backend) -> None:
    thread = interrupted_thread()
    durable_backend.store.save("thread-1", thread.dump(), expected_version=None)
    durable_backend.store.claim("thread-1", expected_version=1, owner="replica-a")

    second = durable_backend.reopen()
    stored = second.load("thread-1")

    assert _plain(stored) == StoredThread(thread_id="thread-1", version=2, data=thread.dump(), claim="replica-a",
                                  format=STORE_FORMAT_VERSION)
    assert ThreadState.load(stored.data).open_interrupts == thread.open_interrupts
    with pytest.raises(ConcurrentResume):
        second.claim("thread-1", expected_version=2, owner="replica-b")


# --------------------------------------------------------------------------------------------------
# The rules themselves, and store-specific behaviour
# --------------------------------------------------------------------------------------------------


def test_check_write_refuses_a_release_without_a_version() -> None:
    # (a save or a claim without one creates the thread)
    with pytest.raises(ValueError):
        check_write("t", Head(version=1, claim="a", format=1), "release", expected_version=None, owner="a")


def test_sqlite_store_uses_wal_and_refuses_an_in_memory_database(tmp_path: Path) -> None:
    path = tmp_path / "threads.db"
    with SqliteStore(path) as store:
        store.save("t", small(1), expected_version=None)
    conn = sqlite3.connect(path)
    try:
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
    finally:
        conn.close()

    assert mode == "wal"
    with pytest.raises(ValueError):
        SqliteStore(":memory:")


def test_sqlite_store_refuses_a_newer_table_layout(tmp_path: Path) -> None:
    path = tmp_path / "threads.db"
    SqliteStore(path).close()
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA user_version = 4")
    finally:
        conn.close()

    with pytest.raises(StoreError) as caught:
        SqliteStore(path)

    assert "table layout 4" in str(caught.value)


def test_sqlite_store_reports_a_file_that_is_not_a_database(tmp_path: Path) -> None:
    path = tmp_path / "threads.db"
    path.write_bytes(b"this is not a database, it is a text file that is long enough to have a header" * 20)

    with pytest.raises(StoreError) as caught:
        SqliteStore(path)

    assert isinstance(caught.value.__cause__, sqlite3.DatabaseError)


def test_redis_store_keeps_a_thread_under_its_prefix(redis_url: str, raw_redis: redis.Redis) -> None:
    prefix = f"agui:test:{uuid.uuid4().hex}:"
    with RedisStore(redis_url, prefix=prefix) as store:
        store.save("t", small(1), expected_version=None)

        saved: dict[Any, Any] = raw_redis.hgetall(prefix + "t")
        stored = store.load("t")
        store.append("t", {"set": {"lastRunId": "r2"}}, expected_version=1)
        appended: dict[Any, Any] = raw_redis.hgetall(prefix + "t")

    size = str(len(saved[b"data"])).encode()
    assert raw_redis.keys(prefix + "*") == [(prefix + "t").encode()]
    assert saved == {b"version": b"1", b"data": saved[b"data"], b"claim": b"", b"format": b"2", b"changes": b"0",
                     b"change_bytes": b"0", b"data_bytes": size, b"record": saved[b"record"]}
    assert json.loads(saved[b"data"]) == small(1)
    # The record id, a fresh one as no record_id was given, is what load hands out.
    assert stored is not None and stored.record_id is not None and len(stored.record_id) == 24
    assert saved[b"record"] == stored.record_id.encode()
    # An append adds its change as one field and leaves the data as it was.
    change = b'{"set":{"lastRunId":"r2"}}'
    assert appended == {**saved, b"version": b"2", b"changes": b"1", b"c:1": change,
                        b"change_bytes": str(len(change)).encode()}


def test_redis_store_leaves_a_client_it_was_given_open(redis_url: str) -> None:
    with redis.Redis.from_url(redis_url) as client:
        with RedisStore(client, prefix=f"agui:test:{uuid.uuid4().hex}:") as store:
            store.save("t", small(1), expected_version=None)

        assert client.ping() is True


def test_redis_store_reports_an_unreachable_server(closed_port: int) -> None:
    with RedisStore(f"redis://127.0.0.1:{closed_port}/0") as store:
        with pytest.raises(StoreError) as caught:
            store.load("t")

    assert caught.value.thread_id == "t"
    assert isinstance(caught.value.__cause__, redis.ConnectionError)


def test_redis_store_refuses_an_asyncio_client(redis_url: str) -> None:
    import redis.asyncio

    client: Any = redis.asyncio.Redis.from_url(redis_url)
    with pytest.raises(TypeError):
        RedisStore(client)


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


def _pg(dsn: str, query: str, *params: Any) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        cursor = conn.execute(query.encode(), params)  # (bytes: a test's own SQL, with its table name in it)
        return cursor.fetchall() if cursor.description else []


def test_postgres_store_keeps_a_thread_in_one_row_of_its_table(postgres_dsn: str, pg_table: str) -> None:
    with PostgresStore(postgres_dsn, table=pg_table) as store:
        store.save("t", small(1), expected_version=None)
        store.claim("t", expected_version=1, owner="replica-a")
        loaded = store.load("t")

    rows = _pg(postgres_dsn, f"SELECT thread_id, version, data, claim, format, data_version, changes, change_bytes"
                             f" FROM {pg_table}")
    record_ids = _pg(postgres_dsn, f"SELECT record_id FROM {pg_table}")
    columns = _pg(postgres_dsn, "SELECT column_name, data_type FROM information_schema.columns"
                                " WHERE table_name = %s ORDER BY ordinal_position", pg_table)
    change_columns = _pg(postgres_dsn, "SELECT column_name, data_type FROM information_schema.columns"
                                       " WHERE table_name = %s ORDER BY ordinal_position", f"{pg_table}_changes")
    comment = _pg(postgres_dsn, "SELECT obj_description(%s::regclass, 'pg_class')", pg_table)

    assert [(tid, version, claim, format, data_version, changes, change_bytes)
            for tid, version, _, claim, format, data_version, changes, change_bytes in rows] == [
        ("t", 2, "replica-a", STORE_FORMAT_VERSION, 1, 0, 0)]
    assert json.loads(rows[0][2]) == small(1)
    assert columns == [("thread_id", "text"), ("version", "bigint"), ("data", "text"), ("claim", "text"),
                       ("format", "integer"), ("data_version", "bigint"), ("changes", "integer"),
                       ("change_bytes", "bigint"), ("record_id", "text")]
    assert change_columns == [("thread_id", "text"), ("seq", "bigint"), ("body", "text")]
    assert comment == [("agui-client thread store, layout 3",)]
    assert loaded is not None and loaded.record_id is not None and record_ids == [(loaded.record_id,)]


def test_postgres_store_appends_a_change_row_and_leaves_the_data_alone(postgres_dsn: str, pg_table: str) -> None:
    change = {"messagesFrom": 1, "messages": [{"id": "a1", "role": "assistant", "content": "caf\u00e9"}]}
    with PostgresStore(postgres_dsn, table=pg_table) as store:
        store.save("t", small(1), expected_version=None)
        stored_data = _pg(postgres_dsn, f"SELECT data FROM {pg_table}")
        store.append("t", change, expected_version=1)
        store.claim("t", expected_version=2, owner="a")

        head = _pg(postgres_dsn, f"SELECT version, data, data_version, changes, change_bytes FROM {pg_table}")
        bodies = _pg(postgres_dsn, f"SELECT thread_id, seq, body FROM {pg_table}_changes")
        store.delete("t")
        left = _pg(postgres_dsn, f"SELECT count(*) FROM {pg_table}_changes")

    assert head == [(3, stored_data[0][0], 1, 1, len(bodies[0][2].encode()))]
    assert [(tid, seq, json.loads(body)) for tid, seq, body in bodies] == [("t", 2, change)]
    assert left == [(0,)]


def test_postgres_store_never_reads_change_rows_left_over_from_a_deleted_thread(postgres_dsn: str,
                                                                                pg_table: str) -> None:
    # Rows a racing delete's snapshot missed (made here by hand): past the new thread's version they
    # are not part of it, and the append that reaches their seq replaces them.
    stale = json.dumps({"set": {"state": {"stale": True}}})
    with PostgresStore(postgres_dsn, table=pg_table) as store:
        store.save("t", small(1), expected_version=None)
        _pg(postgres_dsn, f"INSERT INTO {pg_table}_changes (thread_id, seq, body) VALUES ('t', 2, %s), ('t', 3, %s)",
            stale, stale)
        loaded = store.load("t")
        store.append("t", {"set": {"state": {"n": 2}}}, expected_version=1)
        appended = store.load("t")

    assert loaded is not None and (loaded.changes, loaded.data) == (0, small(1))
    assert appended is not None and (appended.version, appended.changes) == (2, 1)
    assert appended.data == {**small(1), "state": {"n": 2}}


def test_postgres_store_names_the_change_table_of_a_long_table_name_within_63_bytes(postgres_dsn: str) -> None:
    import psycopg
    from psycopg import sql

    # Two 63-byte names that differ only at their end: PostgreSQL would cut both "<name>_changes"
    # to the same 63 bytes; each needs its own change table.
    stem = f"agui_long_{uuid.uuid4().hex[:12]}_\u00e9\u00e9" + "x" * 10
    tables = [stem + "a" * (63 - len(stem.encode()) - 1) + end for end in "12"]
    try:
        for n, table in enumerate(tables):
            assert len(table.encode()) == 63
            with PostgresStore(postgres_dsn, table=table) as store:
                store.save("t", small(n), expected_version=None)
                store.append("t", {"set": {"state": {"table": n}}}, expected_version=1)
        loaded = []
        for table in tables:
            with PostgresStore(postgres_dsn, table=table) as store:
                loaded.append(store.load("t"))
        names = _pg(postgres_dsn, "SELECT relname FROM pg_class WHERE relname LIKE %s AND relkind = 'r'"
                                  " ORDER BY relname", stem[:20] + "%")
    finally:
        with psycopg.connect(postgres_dsn, autocommit=True) as conn:
            for (name,) in _pg(postgres_dsn, "SELECT relname FROM pg_class WHERE relname LIKE %s AND relkind = 'r'",
                               stem[:20] + "%"):
                conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(name)))

    assert [(s.version, s.data["state"]) for s in loaded if s is not None] == [(2, {"table": 0}), (2, {"table": 1})]
    assert len(names) == 4 and all(len(name.encode()) <= 63 for (name,) in names)
    assert sum(name.endswith("_changes") for (name,) in names) == 2


def test_postgres_store_compaction_does_not_hold_the_thread_while_it_folds(postgres_dsn: str, pg_table: str,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    # While the compaction folds, another replica claims the thread: the claim lands at once (the fold
    # holds no lock), and the fold, built from a version the claim moved on from, is not written.
    import agui_client.stores.postgres as pg_module

    store = PostgresStore(postgres_dsn, table=pg_table, compaction=Compaction(min_bytes=0, ratio=0.0, max_changes=1))
    other = PostgresStore(postgres_dsn, table=pg_table)
    claimed: list[int] = []
    landed_during_fold: list[bool] = []
    fold = pg_module.compacted

    def fold_while_claimed(thread_id: str, text: str | bytes, changes: Any) -> str | bytes:
        done = threading.Event()

        def claim() -> None:
            claimed.append(other.claim(thread_id, expected_version=2, owner="replica-b"))
            done.set()

        threading.Thread(target=claim, daemon=True).start()
        landed_during_fold.append(done.wait(20))
        return fold(thread_id, text, changes)

    try:
        other.save("t", small(1), expected_version=None)
        monkeypatch.setattr(pg_module, "compacted", fold_while_claimed)
        version = store.append("t", {"set": {"state": {"n": 1}}}, expected_version=1)
        monkeypatch.undo()
        stored = store.load("t")
    finally:
        store.close()
        other.close()

    assert version == 2 and claimed == [3] and landed_during_fold == [True]
    assert stored is not None and (stored.version, stored.claim, stored.changes) == (3, "replica-b", 1)
    assert stored.data == {**small(1), "state": {"n": 1}}


def _a_backend_waits_on_a_lock(dsn: str) -> bool:
    """Whether another session is waiting on a lock, polled until one is (a bounded number of reads)."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        for _ in range(5000):
            row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'").fetchone()
            if row is not None and row[0] > 0:
                return True
    return False


def test_postgres_store_append_succeeds_when_its_compaction_fails(postgres_dsn: str, pg_table: str,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    PostgresStore(postgres_dsn, table=pg_table).close()  # (the tables, for the trigger)
    # The server refuses the fold's deletion of change rows (a trigger here, trusted: an untrusted one
    # refuses the append itself; a role that lost its DELETE grant alike): the folding statement fails as
    # a whole, the head's update with it.
    _pg(postgres_dsn, f"CREATE FUNCTION {pg_table}_refuse() RETURNS trigger LANGUAGE plpgsql AS"
                      " $$ BEGIN RAISE EXCEPTION 'no deleting here'; END $$")
    try:
        _pg(postgres_dsn, f"CREATE TRIGGER refuse BEFORE DELETE ON {pg_table}_changes"
                          f" FOR EACH ROW EXECUTE FUNCTION {pg_table}_refuse()")
        with PostgresStore(postgres_dsn, table=pg_table, compaction=Compaction(min_bytes=0, ratio=0.0),
                           trusted_objects=("refuse",)) as store:
            store.save("t", small(1), expected_version=None)
            with caplog.at_level("DEBUG", logger="agui_client.stores"):
                version = store.append("t", {"set": {"state": {"n": 1}}}, expected_version=1)
            stored = store.load("t")
    finally:  # (the table's drop leaves a function behind in the session's database; a failure too)
        _pg(postgres_dsn, f"DROP FUNCTION {pg_table}_refuse() CASCADE")

    assert version == 2
    assert stored is not None and (stored.version, stored.changes) == (2, 1)
    assert stored.data == {**small(1), "state": {"n": 1}}
    assert any("compaction of thread 't' skipped" in record.getMessage() and "no deleting here" in record.getMessage()
               for record in caplog.records)


# The thread table as the release before the change table made it (layout 1), verbatim.
_LAYOUT_1_CREATE = """
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


def _older_table(dsn: str, table: str, layout: int) -> None:
    """The thread table (and for layout 2 the change table) as the release of that layout made it."""
    if layout == 1:
        _pg(dsn, _LAYOUT_1_CREATE.format(table=table))
    else:
        _pg(dsn, _LAYOUT_2_CREATE.format(table=table))
        _pg(dsn, _LAYOUT_2_CREATE_CHANGES.format(table=table))
    _pg(dsn, f"COMMENT ON TABLE {table} IS 'agui-client thread store, layout {layout}'")


def test_postgres_store_migrates_a_layout_2_table_and_gives_new_records_ids(postgres_dsn: str, pg_table: str) -> None:
    _older_table(postgres_dsn, pg_table, 2)
    # A thread the layout-2 release saved at version 1 and appended one change to (version 2).
    change = {"set": {"state": {"n": 2}}}
    _pg(postgres_dsn, f"INSERT INTO {pg_table} (thread_id, version, data, claim, format, data_version, changes,"
                      f" change_bytes) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
        "old", 2, json.dumps(small(1)), None, STORE_FORMAT_VERSION, 1, 1, len(json.dumps(change)))
    _pg(postgres_dsn, f"INSERT INTO {pg_table}_changes (thread_id, seq, body) VALUES (%s, %s, %s)",
        "old", 2, json.dumps(change))

    with PostgresStore(postgres_dsn, table=pg_table) as store:
        loaded = store.load("old")
        with pytest.raises(ConcurrentResume) as refused:
            # (a writer naming an id: the record an earlier release made has none, so it is not its record)
            store.append("old", {"set": {"lastRunId": "r"}}, expected_version=2, record_id="some-record")
        assert refused.value.thread_id == "old" and "deleted and created again" in str(refused.value)
        appended = store.append("old", {"set": {"lastRunId": "r"}}, expected_version=2)
        claimed = store.claim("old", expected_version=3, owner="a")
        old = store.load("old")
        store.save("new", small(5), expected_version=None)
        new = store.load("new")
        assert new is not None and new.record_id is not None
        with pytest.raises(ConcurrentResume) as refused:
            store.save("new", small(6), expected_version=1, record_id="another-record")
        assert refused.value.thread_id == "new" and "deleted and created again" in str(refused.value)
        saved = store.save("new", small(6), expected_version=1, record_id=new.record_id)
    comment = _pg(postgres_dsn, "SELECT obj_description(%s::regclass, 'pg_class')", pg_table)
    rows = _pg(postgres_dsn, f"SELECT thread_id, version, record_id FROM {pg_table} ORDER BY thread_id")

    assert loaded is not None and (loaded.version, loaded.record_id, loaded.changes) == (2, None, 1)
    assert loaded.data == {**small(1), "state": {"n": 2}}
    assert (appended, claimed) == (3, 4)
    assert old is not None and (old.record_id, old.claim, old.data["lastRunId"]) == (None, "a", "r")
    assert saved == 2
    assert comment == [("agui-client thread store, layout 3",)]
    assert rows == [("new", 2, new.record_id), ("old", 4, None)]


def test_postgres_store_migrates_a_layout_1_table_and_appends_and_compacts_on_it(postgres_dsn: str,
                                                                                   pg_table: str) -> None:
    _pg(postgres_dsn, _LAYOUT_1_CREATE.format(table=pg_table))
    _pg(postgres_dsn, f"COMMENT ON TABLE {pg_table} IS 'agui-client thread store, layout 1'")
    old = interrupted_thread().dump()
    _pg(postgres_dsn, f"INSERT INTO {pg_table} (thread_id, version, data, claim, format) VALUES (%s, %s, %s, %s, %s)",
        "t", 4, json.dumps(old), None, 1)
    _pg(postgres_dsn, f"INSERT INTO {pg_table} (thread_id, version, data, claim, format) VALUES (%s, %s, %s, %s, %s)",
        "held", 2, json.dumps(small(2)), "replica-a", 1)
    every_second = Compaction(min_bytes=1 << 40, ratio=1e9, max_changes=2)
    first = {"messagesFrom": 4, "messages": [{"id": "a3", "role": "assistant", "content": "done"}],
             "set": {"lastRunId": "run-8"}}
    second = {"messagesFrom": 5, "messages": [{"id": "a4", "role": "assistant", "content": "more"}]}

    with PostgresStore(postgres_dsn, table=pg_table, compaction=every_second) as store:
        loaded = store.load("t")
        held = store.load("held")
        store.append("t", first, expected_version=4)
        appended = store.load("t")
        store.append("t", second, expected_version=5)
        compacted = store.load("t")
        released = store.release("held", claimed_version=2, owner="replica-a")
    comment = _pg(postgres_dsn, "SELECT obj_description(%s::regclass, 'pg_class')", pg_table)
    rows = _pg(postgres_dsn, f"SELECT thread_id, version, format, data_version, changes FROM {pg_table}"
                             " ORDER BY thread_id")
    left = _pg(postgres_dsn, f"SELECT count(*) FROM {pg_table}_changes")

    assert loaded is not None and (loaded.version, loaded.format, loaded.data) == (4, 1, old)
    assert held is not None and (held.version, held.claim, held.data) == (2, "replica-a", small(2))
    model = apply_changes(json.loads(json.dumps(old)), [first])
    assert appended is not None and (appended.version, appended.changes, appended.data) == (5, 1, model)
    apply_changes(model, [second])
    assert compacted is not None and (compacted.version, compacted.changes, compacted.data) == (6, 0, model)
    assert released == 3
    assert comment == [("agui-client thread store, layout 3",)]
    assert rows == [("held", 3, 1, 0, 0), ("t", 6, STORE_FORMAT_VERSION, 6, 0)]
    assert (loaded.record_id, held.record_id, compacted.record_id) == (None, None, None)
    assert left == [(0,)]


@pytest.mark.parametrize("layout", [1, 2])
def test_postgres_stores_opened_at_once_on_an_older_table_migrate_it_once(postgres_dsn: str, pg_table: str,
                                                                          layout: int) -> None:
    _older_table(postgres_dsn, pg_table, layout)
    _pg(postgres_dsn, f"INSERT INTO {pg_table} (thread_id, version, data, claim, format) VALUES (%s, %s, %s, %s, %s)",
        "t", 1, json.dumps(small(1)), None, layout)
    workers = 6
    barrier = threading.Barrier(workers)

    def open_one(worker: int) -> int:
        barrier.wait(timeout=60)  # (a watchdog, not a timing)
        with PostgresStore(postgres_dsn, table=pg_table) as store:
            for _ in range(20):
                stored = store.load("t")
                assert stored is not None
                try:
                    return store.append("t", {"merge": {"usageByRun": {f"w{worker}": []}}},
                                        expected_version=stored.version)
                except ConcurrentResume:
                    continue
            return -1

    with ThreadPoolExecutor(max_workers=workers) as pool:
        versions = sorted(pool.map(open_one, range(workers)))

    with PostgresStore(postgres_dsn, table=pg_table) as store:
        stored = store.load("t")
    comment = _pg(postgres_dsn, "SELECT obj_description(%s::regclass, 'pg_class')", pg_table)
    assert versions == list(range(2, 2 + workers))
    assert stored is not None and set(stored.data["usageByRun"]) == {f"w{n}" for n in range(workers)}
    assert stored.record_id is None and comment == [("agui-client thread store, layout 3",)]


def test_postgres_store_reads_an_empty_claim_as_none_and_claims_over_it(postgres_dsn: str, pg_table: str) -> None:
    # A row written by another tool: an empty owner holds nothing (as Redis and SQLite read it), and
    # the claim's conditional UPDATE must agree with that reading.
    with PostgresStore(postgres_dsn, table=pg_table) as store:
        store.save("t", small(1), expected_version=None)
        _pg(postgres_dsn, f"UPDATE {pg_table} SET claim = ''")
        loaded = store.load("t")
        version = store.claim("t", expected_version=1, owner="a")
        stored = store.load("t")

    assert loaded is not None and loaded.claim is None
    assert stored is not None and (version, stored.version, stored.claim) == (2, 2, "a")


def test_postgres_store_refuses_a_newer_table_layout(postgres_dsn: str, pg_table: str) -> None:
    PostgresStore(postgres_dsn, table=pg_table).close()
    _pg(postgres_dsn, f"COMMENT ON TABLE {pg_table} IS 'agui-client thread store, layout 4'")

    refused = refused_open(lambda: PostgresStore(postgres_dsn, table=pg_table))

    assert "layout 4" in str(refused)


def test_postgres_store_takes_a_schema_qualified_table_and_refuses_other_names(postgres_dsn: str) -> None:
    schema = f"agui_schema_{uuid.uuid4().hex}"
    _pg(postgres_dsn, f"CREATE SCHEMA {schema}")
    try:
        with PostgresStore(postgres_dsn, table=f"{schema}.threads") as store:
            store.save("t", small(1), expected_version=None)
        rows = _pg(postgres_dsn, f"SELECT thread_id, version FROM {schema}.threads")
    finally:
        _pg(postgres_dsn, f"DROP SCHEMA {schema} CASCADE")

    assert rows == [("t", 1)]
    for bad in ("", "a.b.c", "a.", ".b"):
        with pytest.raises(ValueError):
            PostgresStore(postgres_dsn, table=bad)


def test_postgres_stores_opened_at_once_on_a_new_table_all_open(postgres_dsn: str, pg_table: str) -> None:
    # Eight replicas starting together race to create the table; the catalog would refuse all but
    # one CREATE TABLE with a unique violation, unless they are lined up.
    workers = 8
    barrier = threading.Barrier(workers)

    def open_one(worker: int) -> int:
        barrier.wait(timeout=60)  # (a watchdog, not a timing)
        with PostgresStore(postgres_dsn, table=pg_table) as store:
            try:
                return store.save(f"t{worker}", small(worker), expected_version=None)
            except ConcurrentResume:
                return -1

    with ThreadPoolExecutor(max_workers=workers) as pool:
        versions = list(pool.map(open_one, range(workers)))

    assert versions == [1] * workers
    assert _pg(postgres_dsn, f"SELECT count(*) FROM {pg_table}") == [(workers,)]


@pytest.mark.parametrize("write", ["save", "claim", "release"])
def test_postgres_store_drops_idle_connections_the_server_ended(postgres_dsn: str, pg_table: str, write: str) -> None:
    # A database restart (or a terminated backend, or a pooler's idle timeout) ends the store's idle
    # connections. The next call must not fail on one: a save sent on a dead connection could not be
    # sent again (its own landing would refuse it), so the store leaves such connections behind.
    name = f"agui-test-{uuid.uuid4().hex[:12]}"
    with PostgresStore(f"{postgres_dsn} application_name={name}", table=pg_table) as store:
        store.save("t", small(1), expected_version=None)
        store.claim("t", expected_version=1, owner="a")
        ended = _pg(postgres_dsn, "SELECT pg_terminate_backend(pid, 30000) FROM pg_stat_activity"
                                  " WHERE application_name = %s", name)
        # The server's goodbye reaches the idle connection's socket (a watchdog, not a timing).
        idle = store._idle[0].fileno()
        assert select.select([idle], [], [], 30)[0] == [idle]
        version = {"save": lambda: store.save("t", small(2), expected_version=2),
                   "claim": lambda: store.claim("t", expected_version=1, owner="a"),  # (its own claim, recognised)
                   "release": lambda: store.release("t", claimed_version=2, owner="a")}[write]()
        stored = store.load("t")

    assert ended == [(True,)]
    assert stored is not None and stored.version == version == (2 if write == "claim" else 3)


def test_postgres_store_reports_an_unreachable_server_without_its_password(closed_port: int) -> None:
    import psycopg

    dsn = f"postgresql://agui:s3cret-word@127.0.0.1:{closed_port}/threads"
    with pytest.raises(StoreError) as caught:
        PostgresStore(dsn, connect_timeout=5)

    assert f"127.0.0.1:{closed_port}/threads" in str(caught.value)
    assert isinstance(caught.value.__cause__, psycopg.OperationalError)
    assert "s3cret-word" not in str(caught.value) and "s3cret-word" not in repr(caught.value)


def test_the_stores_page_postgres_example_runs_as_written(postgres_dsn: str, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    page = (Path(__file__).parent.parent.parent / "docs" / "stores.md").read_text()
    snippets = re.findall(r"```python\n(.*?)```", page, flags=re.S)
    monkeypatch.setenv("DATABASE_URL", postgres_dsn)

    for snippet in snippets:
        exec(compile(snippet, "docs/stores.md", "exec"), {"__name__": "__docs__"})

    assert len(snippets) == 1 and "PostgresStore" in snippets[0]
    assert capsys.readouterr().out == "1\n"


def test_the_stores_import_without_the_postgres_extra() -> None:
    # A None entry in sys.modules makes `import psycopg` fail as if the package were not installed.
    code = (
        "import sys; sys.modules['psycopg'] = None\n"
        "import agui_client, agui_client.stores\n"
        "from agui_client.stores import MemoryStore, PostgresStore\n"
        "MemoryStore().close()\n"
        "try:\n"
        "    PostgresStore('host=127.0.0.1 port=1')\n"
        "except ImportError as exc:\n"
        "    print('ImportError:', exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)

    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == "ImportError: PostgresStore needs the postgres extra: pip install 'agui-client[postgres]'\n"


def test_the_stores_import_without_the_redis_extra() -> None:
    # A None entry in sys.modules makes `import redis` fail as if the package were not installed.
    code = (
        "import sys; sys.modules['redis'] = None\n"
        "import agui_client, agui_client.stores\n"
        "from agui_client.stores import MemoryStore, RedisStore\n"
        "MemoryStore().close()\n"
        "try:\n"
        "    RedisStore('redis://127.0.0.1:1/0')\n"
        "except ImportError as exc:\n"
        "    print('ImportError:', exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)

    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == "ImportError: RedisStore needs the redis extra: pip install 'agui-client[redis]'\n"


def test_integers_beyond_64_bits_load_back_exact(store: ThreadStore) -> None:
    """orjson reads a 20+ digit integer as a float; the store must hand back the integer the thread held."""
    data = small(1)
    data["state"] = {"big": 2**70, "neg": -(2**65) - 1, "f": 1.5, "id": "12345678901234567890123"}
    store.save("t", data, expected_version=None)

    stored = store.load("t")

    assert stored is not None
    assert stored.data["state"] == data["state"]
    assert type(stored.data["state"]["big"]) is int and stored.data["state"]["big"] == 2**70


def test_postgres_store_delete_takes_the_change_of_an_append_it_waited_for(postgres_dsn: str, pg_table: str) -> None:
    # An append in flight holds the thread's row; the delete waits for it, and must then delete the
    # change row that append wrote too, or a thread created again under the id (and moved to that
    # version by claims and releases, which write no change row) would read it as its own.
    import psycopg

    with PostgresStore(postgres_dsn, table=pg_table) as store:
        store.save("t", small(1), expected_version=None)
        store.append("t", {"set": {"owner": "old"}}, expected_version=1)
        with psycopg.connect(postgres_dsn) as appending:  # (a transaction left open: the append in flight)
            appending.execute(store._sql["append"], {
                "thread_id": "t", "expected": 2, "owner": None, "data": '{"set": {"owner": "OLD"}}',
                "ours": STORE_FORMAT_VERSION, "record_id": None, **store._code_params})
            deleting = threading.Thread(target=store.delete, args=("t",))
            deleting.start()
            assert _a_backend_waits_on_a_lock(postgres_dsn)
            appending.commit()
        deleting.join()
        left = _pg(postgres_dsn, f'SELECT count(*) FROM "{pg_table}_changes"')
        store.save("t", small(2), expected_version=None)
        version = 1
        while version < 3:  # (to the version the deleted thread's last change row had)
            version = store.release("t", claimed_version=store.claim("t", expected_version=version, owner="o"),
                                    owner="o")
        stored = store.load("t")

    assert left == [(0,)]
    assert stored is not None and stored.data == small(2) and "owner" not in stored.data


def test_postgres_store_refuses_a_thread_whose_change_rows_are_missing(postgres_dsn: str, pg_table: str) -> None:
    with PostgresStore(postgres_dsn, table=pg_table) as store:
        store.save("t", small(1), expected_version=None)
        store.append("t", {"set": {"state": {"n": 1}}}, expected_version=1)
        store.append("t", {"set": {"state": {"n": 2}}}, expected_version=2)
        _pg(postgres_dsn, f'DELETE FROM "{pg_table}_changes" WHERE seq = 3')

        with pytest.raises(StoreError) as caught:
            store.load("t")

    assert caught.value.thread_id == "t"
    assert "counts 2 changes" in str(caught.value)
