"""Listing a store's threads (``ListingStore.thread_ids``): every store, the same answers.

Paged by key (``after=`` the last id of a page), in code point order whatever the backend, never
reading a record; deleted threads gone, a first run's claim (version 0) listed, records of earlier
formats and layouts listed, and no id seen twice while threads are created under a listing.
"""

from __future__ import annotations

import sqlite3
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest
import redis
from backendkit import (
    Backend,
    older_table,
    pg,
    pg_table,  # noqa: F401 (a fixture)
    small,
)
from storekit import BareStore

from agui_client.errors import ConcurrentResume, StoreError
from agui_client.stores import (
    MAX_LISTING_PAGE,
    ListingStore,
    PostgresStore,
    RedisStore,
    SqliteStore,
    ThreadStore,
)

__all__: list[str] = []


@pytest.fixture
def store(backend: Backend) -> ListingStore:
    assert isinstance(backend.store, ListingStore)
    return backend.store


def everything(store: ListingStore, *, limit: int = 100) -> list[str]:
    """Every id, page by page."""
    listed: list[str] = []
    after: str | None = None
    while True:
        page = store.thread_ids(after=after, limit=limit)
        listed += page
        if len(page) < limit:
            return listed
        after = page[-1]


def create(store: ThreadStore, *ids: str) -> None:
    for n, thread_id in enumerate(ids):
        store.save(thread_id, small(n), expected_version=None)


# Ids whose code point order differs from a locale's (case, accents) and from UTF-16's (a character
# past U+FFFF before one just under it), and a prefix of another.
AWKWARD = ["b", "a", "B", "Z1", "aa", "a\u00e9", "\u00e4", "z", "\U0001f600", "\uff5e", "A b", "a-1", "a_1", "10", "9"]


# --------------------------------------------------------------------------------------------------
# The capability
# --------------------------------------------------------------------------------------------------


def test_every_store_lists_and_a_bare_thread_store_is_not_a_listing_one(store: ListingStore) -> None:
    assert isinstance(store, ListingStore)
    assert isinstance(BareStore(), ThreadStore) and not isinstance(BareStore(), ListingStore)


# --------------------------------------------------------------------------------------------------
# Order and pages
# --------------------------------------------------------------------------------------------------


def test_an_empty_store_lists_nothing(store: ListingStore) -> None:
    assert store.thread_ids() == []
    assert store.thread_ids(after="anything", limit=1) == []


def test_threads_are_listed_in_code_point_order_in_every_store(store: ListingStore) -> None:
    create(store, *AWKWARD)

    assert store.thread_ids(limit=MAX_LISTING_PAGE) == sorted(AWKWARD)
    # (code point order is the UTF-8 bytes' order: what SQLite, PostgreSQL's "C" and Redis compare)
    assert sorted(AWKWARD) == sorted(AWKWARD, key=lambda i: i.encode("utf-8"))


@pytest.mark.parametrize(("count", "limit"), [(25, 7), (21, 7), (5, 1), (3, 1000)])
def test_pages_join_into_every_id_once_across_page_boundaries(store: ListingStore, count: int, limit: int) -> None:
    ids = [f"t{n:03d}" for n in range(count)]
    create(store, *reversed(ids))

    pages: list[list[str]] = []
    after: str | None = None
    while True:
        page = store.thread_ids(after=after, limit=limit)
        pages.append(page)
        if len(page) < limit:
            break
        after = page[-1]

    assert [n for page in pages for n in page] == ids
    full, rest = divmod(count, limit)
    assert [len(page) for page in pages] == [limit] * full + [rest]  # (an exact multiple ends with an empty page)


def test_after_an_id_that_no_longer_exists_or_never_did_goes_on_from_where_it_would_be(store: ListingStore) -> None:
    create(store, "a", "b", "c", "d", "e")
    first = store.thread_ids(limit=2)
    store.delete("b")  # (the last id of the page the caller holds)

    assert first == ["a", "b"]
    assert store.thread_ids(after="b", limit=2) == ["c", "d"]
    assert store.thread_ids(after="bz", limit=10) == ["c", "d", "e"]
    assert store.thread_ids(after="", limit=10) == ["a", "c", "d", "e"]
    assert store.thread_ids(after="zzz") == []


def test_deleted_threads_are_not_listed_and_a_thread_made_again_is_listed_once(store: ListingStore) -> None:
    create(store, "keep", "gone", "again")
    store.delete("gone")
    store.delete("again")
    store.delete("never-there")
    store.save("again", small(9), expected_version=None)

    assert everything(store, limit=1) == ["again", "keep"]


def test_a_first_run_claim_never_saved_is_listed_and_a_released_one_too(store: ListingStore) -> None:
    # A creating claim makes the record (version 0, claimed): its first run is in flight, or its
    # writer died not knowing whether the request went out. It is a thread the store holds: listed,
    # and load() tells what it is.
    store.save("saved", small(1), expected_version=None)
    store.claim("in-flight", expected_version=None, owner="replica-a", data=small(2))
    store.claim("released", expected_version=None, owner="replica-b", data=small(3))
    store.release("released", claimed_version=0, owner="replica-b")

    assert store.thread_ids() == ["in-flight", "released", "saved"]
    in_flight = store.load("in-flight")
    assert in_flight is not None and (in_flight.version, in_flight.claim) == (0, "replica-a")


def test_a_record_of_an_older_format_is_listed(backend: Backend, store: ListingStore) -> None:
    create(store, "old", "new")
    backend.set_raw("old", "format", 1)

    assert store.thread_ids() == ["new", "old"]
    assert backend.reopen().thread_ids() == ["new", "old"]  # type: ignore[attr-defined]


# --------------------------------------------------------------------------------------------------
# Writers during a listing
# --------------------------------------------------------------------------------------------------


def test_threads_created_and_deleted_between_pages_never_repeat_an_id(store: ListingStore) -> None:
    standing = [f"m{n:02d}" for n in range(0, 40, 2)]
    create(store, *standing)
    deleted: set[str] = set()
    skipped: set[str] = set()
    listed: list[str] = []
    after: str | None = None
    n = 0
    while True:
        page = store.thread_ids(after=after, limit=3)
        listed += page
        if len(page) < 3:
            break
        after = page[-1]
        # Between two pages: threads created behind the cursor, just after it and far ahead; the
        # cursor's own thread deleted, and the next page's first one.
        n += 1
        create(store, f"a{n:02d}", f"{after}+", f"z{n:02d}")
        store.delete(after)
        deleted.add(after)
        following = store.thread_ids(after=after, limit=1)
        if following:
            store.delete(following[0])
            deleted.add(following[0])
            skipped.add(following[0])

    assert n > 5
    assert listed == sorted(set(listed))  # (strictly rising: no id twice)
    assert not [i for i in listed if i.startswith("a")]  # (created behind the cursor: the next listing's)
    assert set(standing) - deleted <= set(listed)  # (every thread that stood throughout)
    assert not set(listed) & skipped  # (deleted before its page was read)
    assert [i for i in everything(store) if i.startswith("z")] == [f"z{k:02d}" for k in range(1, n + 1)
                                                                  if f"z{k:02d}" not in deleted]


def test_a_listing_while_another_thread_creates_threads_sees_no_id_twice(backend: Backend) -> None:
    store = backend.store
    assert isinstance(store, ListingStore)
    before = [f"t{n:04d}" for n in range(0, 300, 3)]
    create(store, *before)
    writer_store = backend.reopen()
    done = threading.Event()
    created: list[str] = []
    failures: list[BaseException] = []

    def write() -> None:
        try:
            n = 0
            while not done.is_set():
                thread_id = f"t{(n * 7919) % 300:04d}.{n}"  # (all over the key range)
                writer_store.save(thread_id, small(n), expected_version=None)
                created.append(thread_id)
                n += 1
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            failures.append(exc)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        listed = everything(store, limit=4)
    finally:
        done.set()
        writer.join()

    assert not failures
    assert listed == sorted(set(listed))
    assert set(before) <= set(listed)  # (every thread that stood throughout)
    assert set(listed) <= set(before) | set(created)
    assert everything(store) == sorted(before + created)


# --------------------------------------------------------------------------------------------------
# Refusals
# --------------------------------------------------------------------------------------------------


def test_a_closed_store_refuses_a_listing_with_a_store_error(backend: Backend) -> None:
    store = backend.store
    assert isinstance(store, ListingStore)
    create(store, "t")
    store.close()

    with pytest.raises(StoreError) as caught:
        store.thread_ids()
    assert "closed" in str(caught.value)
    assert caught.value.thread_id is None


@pytest.mark.parametrize(("after", "limit"), [(None, 0), (None, MAX_LISTING_PAGE + 1), (None, -1), (None, "5"),
                                              (None, True), (5, 10), (b"a", 10)])
def test_a_listing_of_bad_arguments_is_refused_before_anything_is_read(store: ListingStore, after: Any,
                                                                     limit: Any) -> None:
    with pytest.raises(ValueError) as refused:
        store.thread_ids(after=after, limit=limit)
    assert str(refused.value).startswith("limit is " if after is None else "after is ")  # (the one at fault)


# --------------------------------------------------------------------------------------------------
# SQLite: the primary key's index, and files of earlier layouts
# --------------------------------------------------------------------------------------------------


def test_sqlite_listing_reads_the_primary_key_index_alone(tmp_path: Path) -> None:
    path = tmp_path / "threads.db"
    with SqliteStore(path) as store:
        create(store, "a", "b")
    from agui_client.stores.sqlite import _IDS_AFTER, _IDS_FIRST

    with sqlite3.connect(path) as conn:
        plans = [" ".join(str(row[-1]) for row in conn.execute("EXPLAIN QUERY PLAN " + query, params))
                 for query, params in [(_IDS_FIRST, (10,)), (_IDS_AFTER, ("a", 10))]]
    conn.close()

    assert all("COVERING INDEX sqlite_autoindex_agui_threads_1" in plan for plan in plans), plans
    assert not any("TEMP B-TREE" in plan for plan in plans)  # (no sort)


@pytest.mark.parametrize("layout", [1, 2])
def test_sqlite_file_of_an_earlier_layout_lists_its_threads(tmp_path: Path, layout: int) -> None:
    from test_sqlite_layout import make_layout_1, make_layout_2

    path = tmp_path / "threads.db"
    if layout == 1:
        make_layout_1(path, [("b", 4, small(1), None), ("a", 2, small(2), "replica-b")])
    else:
        make_layout_2(path, [("b", 3, None, 0), ("a", 2, "replica-b", 0)], [("b", 0, small(1)), ("a", 0, small(2))])

    with SqliteStore(path) as store:
        assert store.thread_ids() == ["a", "b"]
        store.save("c", small(3), expected_version=None)
        store.delete("a")
        assert store.thread_ids() == ["b", "c"]


# --------------------------------------------------------------------------------------------------
# PostgreSQL: the ids' index, made on tables that lack it
# --------------------------------------------------------------------------------------------------


def test_postgres_listing_reads_the_ids_index_alone(postgres_dsn: str, pg_table: str) -> None:  # noqa: F811
    import psycopg

    with PostgresStore(postgres_dsn, table=pg_table) as store:
        create(store, *(f"t{n}" for n in range(50)))
        query = store._sql["ids_after"].as_string(None)
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute("SET enable_seqscan = off")
        conn.execute(f"VACUUM ANALYZE {pg_table}".encode())
        plan = "\n".join(row[0] for row in conn.execute(f"EXPLAIN {query}".encode(), ("t1", 10)).fetchall())

    # (an index-only scan: the rows, and their data, are never read; no sort: the index is in order)
    assert f"Index Only Scan using {pg_table}_ids" in plan, plan
    assert "Sort" not in plan, plan


@pytest.mark.parametrize("layout", [1, 2, 3])
def test_postgres_table_of_an_earlier_layout_or_without_the_index_lists_its_threads(
        postgres_dsn: str, pg_table: str, layout: int) -> None:  # noqa: F811
    if layout == 3:
        with PostgresStore(postgres_dsn, table=pg_table) as store:
            create(store, "b", "a")
        pg(postgres_dsn, f"DROP INDEX {pg_table}_ids")  # (a layout-3 table the release before made)
    else:
        older_table(postgres_dsn, pg_table, layout)
        extra = ", 2, 0, 0" if layout == 2 else ""
        columns = ", data_version, changes, change_bytes" if layout == 2 else ""
        pg(postgres_dsn, f"INSERT INTO {pg_table} (thread_id, version, data, claim, format{columns}) VALUES "
                          f"('b', 2, '{{}}', NULL, 1{extra}), ('a', 3, '{{}}', 'replica-b', 2{extra})")
    assert pg(postgres_dsn, "SELECT to_regclass(%s)", f"{pg_table}_ids") == [(None,)]

    with PostgresStore(postgres_dsn, table=pg_table) as store:
        assert store.thread_ids() == ["a", "b"]
        assert store.thread_ids(after="a") == ["b"]

    assert pg(postgres_dsn, "SELECT to_regclass(%s)::text", f"{pg_table}_ids") == [(f"{pg_table}_ids",)]


def test_postgres_role_that_may_not_create_the_index_opens_the_table_and_lists_without_it(
        postgres_dsn: str, pg_table: str, caplog: pytest.LogCaptureFixture) -> None:  # noqa: F811
    # A table an earlier release made, used by a role that is not its owner (only the owner may index
    # it): the store opens as before, and its listing gives the same pages from a scan.
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    role = f"agui_user_{uuid.uuid4().hex[:12]}"
    with PostgresStore(postgres_dsn, table=pg_table) as owner:
        create(owner, *AWKWARD)
    pg(postgres_dsn, f"DROP INDEX {pg_table}_ids")
    pg(postgres_dsn, f"CREATE ROLE {role} LOGIN")
    try:
        pg(postgres_dsn, f"GRANT SELECT, INSERT, UPDATE, DELETE ON {pg_table}, {pg_table}_changes TO {role}")
        dsn = make_conninfo(**{**conninfo_to_dict(postgres_dsn), "user": role})
        with caplog.at_level("DEBUG", logger="agui_client.stores"), PostgresStore(dsn, table=pg_table) as store:
            store.save("new", small(1), expected_version=None)
            listed = everything(store, limit=4)
        missing = pg(postgres_dsn, "SELECT to_regclass(%s)", f"{pg_table}_ids")
    finally:
        pg(postgres_dsn, f"DROP OWNED BY {role}")
        pg(postgres_dsn, f"DROP ROLE {role}")

    assert listed == sorted([*AWKWARD, "new"])
    assert missing == [(None,)]
    assert any("may not create it" in record.getMessage() for record in caplog.records)


def test_postgres_lists_in_code_point_order_in_a_database_of_another_collation(postgres_dsn: str,
                                                                               pg_table: str) -> None:  # noqa: F811
    # The thread id column in a collation that sorts "a" before "B" (as en_US does): the listing
    # still answers code point order (the "C" collation of its index).
    found = pg(postgres_dsn, "SELECT collname FROM pg_collation WHERE collname IN ('und-x-icu', 'en_US', 'en_US.utf8')"
                " ORDER BY collname")
    if not found:  # (no such collation in this build: the column's own "C" order is checked elsewhere)
        found = [("C",)]
    collation = found[0][0]
    older_table(postgres_dsn, pg_table, 2)
    pg(postgres_dsn, f'ALTER TABLE {pg_table} ALTER COLUMN thread_id TYPE TEXT COLLATE "{collation}"')

    with PostgresStore(postgres_dsn, table=pg_table) as store:
        create(store, *AWKWARD)
        assert store.thread_ids(limit=MAX_LISTING_PAGE) == sorted(AWKWARD)
        assert everything(store, limit=2) == sorted(AWKWARD)


# --------------------------------------------------------------------------------------------------
# Redis: the index, its upkeep, and the records written before it
# --------------------------------------------------------------------------------------------------


def format_1_hash(client: redis.Redis, key: str, version: int) -> None:
    """A thread hash as the first release wrote it (no index then)."""
    client.hset(key, mapping={"version": version, "data": "{}", "claim": "", "format": 1})


def test_redis_index_is_kept_outside_the_prefix_by_the_writes_that_create_and_delete(
        redis_url: str, raw_redis: redis.Redis, prefix: str) -> None:
    with RedisStore(redis_url, prefix=prefix) as store:
        create(store, "b", "a")
        store.claim("c", expected_version=None, owner="o", data=small(3))
        store.delete("b")
        index = raw_redis.zrange("agui-ids:" + prefix, 0, -1, withscores=True)
        listed = store.thread_ids()

    assert index == [(b"a", 0.0), (b"c", 0.0)]
    assert listed == ["a", "c"]
    assert sorted(raw_redis.keys(prefix + "*")) == [(prefix + "a").encode(), (prefix + "c").encode()]


def test_redis_lists_the_threads_an_earlier_release_wrote_scanning_once_in_batches(
        redis_url: str, raw_redis: redis.Redis, prefix: str) -> None:
    # Written before the index existed: thousands of hashes (more than one SCAN batch), plus keys
    # under the prefix that are no thread record. The first listing indexes them, once.
    old = [f"old{n:05d}" for n in range(2500)]
    with raw_redis.pipeline(transaction=False) as pipe:
        for n, thread_id in enumerate(old):
            format_1_hash(pipe, prefix + thread_id, n + 1)  # type: ignore[arg-type]
        pipe.execute()
    raw_redis.set(prefix + "not-a-hash", "x")
    raw_redis.hset(prefix + "not-a-record", "something", "else")

    with RedisStore(redis_url, prefix=prefix) as store:
        store.save("new", small(1), expected_version=None)
        first = store.thread_ids(limit=3)
        listed = everything(store, limit=MAX_LISTING_PAGE)
        marked = raw_redis.exists("agui-ids:" + prefix + ":complete")
        # The documented way to index again (an earlier release kept writing): delete the mark.
        format_1_hash(raw_redis, prefix + "late", 1)
        before_unmarking = store.thread_ids(after="k", limit=2)
        raw_redis.delete("agui-ids:" + prefix + ":complete")
        after_unmarking = store.thread_ids(after="k", limit=2)

    assert first == ["new", *old[:2]]
    assert listed == sorted([*old, "new"])
    assert marked == 1
    assert before_unmarking == ["new", "old00000"] and after_unmarking == ["late", "new"]


def test_redis_a_thread_an_earlier_release_made_after_the_index_is_listed_from_its_next_write(
        redis_url: str, raw_redis: redis.Redis, prefix: str) -> None:
    with RedisStore(redis_url, prefix=prefix) as store:
        store.save("a", small(1), expected_version=None)
        assert store.thread_ids() == ["a"]  # (the index is built and marked)
        # Then a replica of the earlier release creates threads: hashes with no index entry.
        for thread_id in ["b", "c", "d", "e"]:
            format_1_hash(raw_redis, prefix + thread_id, 1)
        unseen = store.thread_ids()
        store.save("b", small(2), expected_version=1)
        store.claim("c", expected_version=1, owner="o")
        store.append("d", {"set": {"state": {"n": 1}}}, expected_version=1)
        with pytest.raises(ConcurrentResume):
            store.save("e", small(3), expected_version=7)  # (refused: writes nothing, the index neither)
        listed = store.thread_ids()

    assert unseen == ["a"]
    assert listed == ["a", "b", "c", "d"]


def test_redis_an_id_whose_hash_went_behind_the_stores_back_is_skipped_and_dropped(
        redis_url: str, raw_redis: redis.Redis, prefix: str) -> None:
    with RedisStore(redis_url, prefix=prefix) as store:
        create(store, *(f"t{n}" for n in range(6)))
        raw_redis.delete(prefix + "t1", prefix + "t2", prefix + "t3")  # (an earlier release's delete, or by hand)
        page = store.thread_ids(limit=2)
        index = raw_redis.zrange("agui-ids:" + prefix, 0, -1)

    # The page went on past the gone ids, so a page of 2 is full: a short page is still the last one.
    assert page == ["t0", "t4"]
    assert index == [b"t0", b"t4", b"t5"]


def test_redis_index_key_and_a_prefix_holding_glob_characters(redis_url: str, raw_redis: redis.Redis) -> None:  # noqa: F811
    prefix = f"agui:test:*[{uuid.uuid4().hex}]?:"
    other = prefix.replace("*", "x")  # (what an unescaped * in SCAN's pattern would match too)
    format_1_hash(raw_redis, prefix + "old", 3)
    format_1_hash(raw_redis, other + "stranger", 3)
    index_key = f"my-index:{uuid.uuid4().hex}"

    with RedisStore(redis_url, prefix=prefix, index_key=index_key) as store:
        store.save("new", small(1), expected_version=None)
        listed = store.thread_ids()

    assert listed == ["new", "old"]
    assert raw_redis.zrange(index_key, 0, -1) == [b"new", b"old"]


def test_redis_listing_never_sends_keys(redis_url: str, raw_redis: redis.Redis, prefix: str) -> None:
    format_1_hash(raw_redis, prefix + "old", 1)
    with redis.Redis.from_url(redis_url) as client, RedisStore(client, prefix=prefix) as store:
        inner = client.execute_command
        sent: list[str] = []

        def recorded(*args: Any, **options: Any) -> Any:
            sent.append(str(args[0]).upper())
            return inner(*args, **options)

        client.execute_command = recorded  # type: ignore[method-assign]
        assert everything(store, limit=1) == ["old"]
        first = list(sent)
        sent.clear()
        assert everything(store, limit=1) == ["old"]

    assert "KEYS" not in first and "SCAN" in first  # (the earlier records: indexed by SCAN, once)
    assert "SCAN" not in sent and "KEYS" not in sent
