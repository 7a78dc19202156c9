"""SqliteStore's table layout 3: small head rows (with the record id) plus the thread's parts (its data,
then its changes).

What the shared contract tests cannot see: a claim, a release or an append writes a few pages of the
file whatever the thread's size (counted as WAL frames); a layout-1 or layout-2 file, made with the
SQL the earlier releases ran, is migrated when a store opens it (also by several stores opening it at
once) and then loads, appends and compacts, its records without an id and new ones with one; a
compaction that finds the record moved (or made again) is skipped, and one that fails leaves its append
standing; parts that do not match their head, or a record id that is not text, are a StoreError.
"""

from __future__ import annotations

import copy
import json
import logging
import sqlite3
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from backendkit import small
from test_incremental_record import run_change

from agui_client.core.fold import ThreadState
from agui_client.errors import ConcurrentResume, StoreError
from agui_client.stores import STORE_FORMAT_VERSION, Compaction, SqliteStore, apply_changes
from agui_client.stores import sqlite as sqlite_store
from agui_client.types import UserMessage

__all__: list[str] = []

NEVER = Compaction(min_bytes=1 << 40, ratio=1e9, max_changes=1 << 30)
EVERY_THIRD = Compaction(min_bytes=1 << 40, ratio=1e9, max_changes=3)


def big(n: int, size: int = 1 << 20) -> dict[str, Any]:
    """A thread of about ``size`` bytes: many messages, as a long conversation has."""
    messages = [UserMessage(id=f"u{i}", content=f"{i:06d}" + "x" * 1000) for i in range(size // 1024)]
    return ThreadState(messages=messages, thread_id="t", state={"n": n}).dump()


def query(path: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        return conn.execute(sql, params).fetchall()


def wal_frames_of(path: Path, write: Any) -> int:
    """How many pages ``write()`` put into the write-ahead log (emptied first)."""
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        assert busy == 0
        write()
        _, frames, _ = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    return int(frames)


def after_one(n: int) -> dict[str, Any]:
    """A run's changes to a thread of one message."""
    return {**run_change(n), "messagesFrom": 1}


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "threads.db"


@pytest.fixture
def store(path: Path) -> Iterator[SqliteStore]:
    with SqliteStore(path, compaction=NEVER) as opened:
        yield opened


def test_claims_releases_and_appends_write_a_few_pages_of_a_large_thread(path: Path, store: SqliteStore) -> None:
    store.save("t", big(1), expected_version=None)
    store.append("t", run_change(1), expected_version=1)
    longer = big(2, (1 << 20) + 4096)  # (a save of data as long as the old is written in place, page by page)

    save = wal_frames_of(path, lambda: store.save("t", longer, expected_version=2))
    claim = wal_frames_of(path, lambda: store.claim("t", expected_version=3, owner="replica-a"))
    release = wal_frames_of(path, lambda: store.release("t", claimed_version=4, owner="replica-a"))
    append = wal_frames_of(path, lambda: store.append("t", run_change(2), expected_version=5))

    # The thread is a megabyte, 256 pages of 4 KiB: a save writes them all; the others write the
    # head row's page, an index page or two, and the change's page.
    assert save > 256
    assert claim <= 4 and release <= 4
    assert append <= 8
    stored = store.load("t")
    assert stored is not None
    assert stored.data == apply_changes(longer, [run_change(2)])


def test_a_record_is_a_head_row_and_its_parts(path: Path, store: SqliteStore) -> None:
    store.save("t", small(1), expected_version=None, record_id="rec-1")
    store.append("t", run_change(1), expected_version=1, record_id="rec-1")
    store.append("t", run_change(2), expected_version=2)

    heads = query(path, "SELECT thread_id, version, claim, format, changes, record_id FROM agui_threads")
    parts = query(path, "SELECT thread_id, seq FROM agui_thread_parts ORDER BY seq")
    columns = [row[1] for row in query(path, "PRAGMA table_info(agui_threads)")]

    assert heads == [("t", 3, None, STORE_FORMAT_VERSION, 2, "rec-1")]
    assert parts == [("t", 0), ("t", 1), ("t", 2)]
    assert "data" not in columns
    assert query(path, "PRAGMA user_version") == [(3,)]

    store.delete("t")

    assert query(path, "SELECT count(*) FROM agui_thread_parts") == [(0,)]
    assert query(path, "SELECT count(*) FROM agui_threads") == [(0,)]


def make_layout_1(path: Path, rows: list[tuple[str, int, dict[str, Any], str | None]]) -> None:
    """A file as the earlier release wrote it: its CREATE TABLE, user_version 1, format-1 rows."""
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("CREATE TABLE IF NOT EXISTS agui_threads (thread_id TEXT PRIMARY KEY NOT NULL,"
                     " version INTEGER NOT NULL, data TEXT NOT NULL, claim TEXT, format INTEGER NOT NULL)")
        conn.execute("PRAGMA user_version = 1")
        for thread_id, version, data, claim in rows:
            conn.execute("INSERT INTO agui_threads (thread_id, version, data, claim, format) VALUES (?, ?, ?, ?, 1)",
                         (thread_id, version, _json(data), claim))
        conn.execute("COMMIT")


def _json(data: dict[str, Any]) -> str:
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


def test_a_layout_1_file_is_migrated_on_open_and_then_loads_appends_and_compacts(path: Path) -> None:
    thread = ThreadState(messages=[UserMessage(id="u1", content="caf\u00e9 \U0001f600")], thread_id="a").dump()
    make_layout_1(path, [("a", 4, thread, None), ("b", 2, small(2), "replica-b")])

    with SqliteStore(path, compaction=EVERY_THIRD) as store:
        a, b = store.load("a"), store.load("b")
        assert a is not None and b is not None
        assert (a.version, a.format, a.claim, a.data) == (4, 1, None, thread)
        assert (b.version, b.format, b.claim, b.data) == (2, 1, "replica-b", small(2))
        sizes = query(path, "SELECT thread_id, data_bytes FROM agui_threads ORDER BY thread_id")
        assert sizes == [("a", len(_json(thread).encode())), ("b", len(_json(small(2)).encode()))]

        expected = copy.deepcopy(thread)
        for n in range(4, 7):
            change = {**run_change(n), "messagesFrom": len(expected["messages"])}
            store.append("a", change, expected_version=n)
            apply_changes(expected, [change])
        released = store.release("b", claimed_version=2, owner="replica-b")
        a, b = store.load("a"), store.load("b")

    assert a is not None and (a.version, a.format, a.changes, a.data) == (7, STORE_FORMAT_VERSION, 0, expected)
    assert released == 3
    assert b is not None and (b.version, b.format, b.claim, b.data) == (3, 1, None, small(2))
    assert (a.record_id, b.record_id) == (None, None)  # (the earlier release kept none)
    assert query(path, "SELECT thread_id, seq FROM agui_thread_parts ORDER BY thread_id, seq") == [("a", 0), ("b", 0)]
    assert query(path, "PRAGMA user_version") == [(3,)]


#: An operator's own objects on a layout-1 head table: an audit trigger copying each head row into a table
#: of theirs (beside the store's tables) and an index for their reports.
AUDIT = ["CREATE TABLE audit (thread_id TEXT, version INTEGER, claimed INTEGER)",
         "CREATE TRIGGER audit_claims AFTER UPDATE ON agui_threads BEGIN INSERT INTO audit"
         " VALUES (NEW.thread_id, NEW.version, NEW.claim IS NOT NULL); END",
         "CREATE INDEX by_claim ON agui_threads (claim)"]


def _own_objects(path: Path) -> list[tuple[Any, ...]]:
    return query(path, "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name IN ('audit_claims', 'by_claim')"
                       " ORDER BY name")


def test_a_layout_1_migration_makes_trusted_triggers_and_indexes_again_on_the_rebuilt_table(path: Path) -> None:
    # Before: the migration rebuilt the head table and dropped the operator's trusted trigger and index
    # with the old one (documented: "make them again after upgrading"), the audit trail silently ended.
    make_layout_1(path, [("a", 1, small(1), None)])
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        for statement in AUDIT:
            conn.execute(statement)
    before = _own_objects(path)

    with SqliteStore(path, trusted_objects=("audit_claims", "by_claim")) as store:
        migrated = query(path, "SELECT count(*) FROM audit")
        assert store.claim("a", expected_version=1, owner="me") == 2
        assert store.release("a", claimed_version=2, owner="me") == 3
    with SqliteStore(path, trusted_objects=("audit_claims", "by_claim")) as store:  # (opens again: judged ours)
        loaded = store.load("a")

    assert query(path, "PRAGMA user_version") == [(3,)] and _own_objects(path) == before
    assert migrated == [(0,)]  # (made again after the rows were copied: the migration is no write of a thread)
    assert query(path, "SELECT version, claimed FROM audit ORDER BY version") == [(2, 1), (3, 0)]
    assert "INDEX by_claim" in query(path, "EXPLAIN QUERY PLAN SELECT * FROM agui_threads WHERE claim = 'me'")[0][3]
    assert loaded is not None and loaded.data == small(1)


@pytest.mark.parametrize("made", [
    "CREATE TRIGGER audit_claims AFTER UPDATE ON agui_threads BEGIN INSERT INTO audit"
    " VALUES (NEW.thread_id, length(NEW.data), 0); END",
    "CREATE INDEX by_claim ON agui_threads (data)",
], ids=["trigger", "index"])
def test_a_trusted_object_that_names_the_data_column_refuses_the_layout_1_migration(path: Path, made: str) -> None:
    # The data column moves out of the head table: a trusted trigger or index that reads it cannot be made
    # again (a trigger's columns are resolved only when a write fires it: every write would then fail).
    make_layout_1(path, [("a", 1, small(1), None)])
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute(AUDIT[0])
        conn.execute(made)
    schema = query(path, "SELECT type, name, sql FROM sqlite_master ORDER BY name")

    with pytest.raises(StoreError) as caught:
        SqliteStore(path, trusted_objects=("audit_claims", "by_claim"))

    said = str(caught.value)
    assert caught.value.code == "STORE-SCHEMA", said
    assert "named in trusted_objects, cannot be made again" in said and "data" in said, said
    assert ("'audit_claims'" if "TRIGGER" in made else "'by_claim'") in said
    assert query(path, "SELECT type, name, sql FROM sqlite_master ORDER BY name") == schema  # (nothing changed)
    assert query(path, "PRAGMA user_version") == [(1,)]


def test_an_untrusted_object_on_a_layout_1_head_table_is_refused_before_the_migration(path: Path) -> None:
    make_layout_1(path, [("a", 1, small(1), None)])
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        for statement in AUDIT:
            conn.execute(statement)

    with pytest.raises(StoreError) as caught:
        SqliteStore(path, trusted_objects=("by_claim",))

    assert caught.value.code == "STORE-SCHEMA" and "triggers 'audit_claims'" in str(caught.value)
    assert query(path, "PRAGMA user_version") == [(1,)]


def test_stores_opening_a_layout_1_file_at_once_migrate_it_once(path: Path) -> None:
    make_layout_1(path, [(f"t{i}", i + 1, small(i), None) for i in range(20)])
    workers = 6
    barrier = threading.Barrier(workers)

    def open_one(worker: int) -> int:
        barrier.wait(timeout=60)  # (a watchdog, not a timing)
        with SqliteStore(path) as store:
            return store.append(f"t{worker}", after_one(worker), expected_version=worker + 1)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        versions = list(pool.map(open_one, range(workers)))

    assert versions == [i + 2 for i in range(workers)]
    assert query(path, "SELECT count(*) FROM agui_thread_parts WHERE seq = 0") == [(20,)]
    with SqliteStore(path) as store:
        for i in range(20):
            stored = store.load(f"t{i}")
            expected = small(i) if i >= workers else apply_changes(small(i), [after_one(i)])
            assert stored is not None and stored.data == expected


def test_a_compaction_that_finds_the_record_moved_is_skipped(store: SqliteStore) -> None:
    # The append's own compaction is a second transaction; a claim may land in between.
    store.save("t", small(1), expected_version=None)
    store.append("t", run_change(1), expected_version=1)
    written = store._write("t", "append", expected_version=2, owner=None, text=_json(run_change(2)), size=10)
    store.claim("t", expected_version=3, owner="replica-a")

    folded = store._compact("t", written)

    stored = store.load("t")
    assert folded is False
    assert stored is not None and (stored.version, stored.claim, stored.changes) == (4, "replica-a", 2)
    assert stored.data == apply_changes(small(1), [run_change(1), run_change(2)])


def test_a_compaction_that_fails_leaves_its_append_standing(path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with SqliteStore(path, compaction=EVERY_THIRD) as store:
        store.save("t", small(1), expected_version=None)
        store.append("t", run_change(1), expected_version=1)
        store.append("t", run_change(2), expected_version=2)
        query(path, "UPDATE agui_thread_parts SET body = '[1, 2' WHERE thread_id = 't' AND seq = 1")

        with caplog.at_level(logging.DEBUG, logger="agui_client"):
            version = store.append("t", run_change(3), expected_version=3)

        assert version == 4
        assert query(path, "SELECT version, changes FROM agui_threads") == [(4, 3)]
        assert "not compacted" in caplog.text and "'t'" in caplog.text
        with pytest.raises(StoreError) as caught:
            store.load("t")
        assert caught.value.thread_id == "t"


def test_parts_that_do_not_match_their_head_are_a_store_error(path: Path, store: SqliteStore) -> None:
    store.save("t", small(1), expected_version=None)
    store.append("t", run_change(1), expected_version=1)
    query(path, "DELETE FROM agui_thread_parts WHERE seq = 1")

    with pytest.raises(StoreError) as missing_change:
        store.load("t")
    query(path, "DELETE FROM agui_thread_parts")
    with pytest.raises(StoreError) as missing_data:
        store.load("t")

    assert missing_change.value.thread_id == missing_data.value.thread_id == "t"
    assert "damaged" in str(missing_change.value) and "none" in str(missing_data.value)


def test_loads_racing_appends_and_compactions_see_whole_versions(path: Path) -> None:
    # A load is one statement over the head and the parts: never the head of one write with the
    # parts of another, whether the write was an append or a fold.
    with SqliteStore(path, compaction=EVERY_THIRD) as writer, SqliteStore(path, compaction=NEVER) as reader:
        models = {1: small(1)}
        writer.save("t", small(1), expected_version=None)
        for version in range(1, 31):
            models[version + 1] = apply_changes(copy.deepcopy(models[version]),
                                                [{**run_change(version), "messagesFrom": version}])
        done = threading.Event()
        seen: list[tuple[int, int, bool]] = []  # (version, changes, data as the model of that version)

        def read_once() -> None:
            stored = reader.load("t")
            assert stored is not None
            seen.append((stored.version, stored.changes, stored.data == models[stored.version]))

        def read() -> None:
            while not done.is_set():
                read_once()

        loader = threading.Thread(target=read)
        loader.start()
        try:
            for version in range(1, 31):
                writer.append("t", {**run_change(version), "messagesFrom": version}, expected_version=version)
        finally:
            done.set()
            loader.join()
        read_once()  # (after the last write, whatever the thread got to see)

    assert seen[-1] == (31, 0, True)
    assert all(whole for _, _, whole in seen), [entry for entry in seen if not entry[2]]
    assert [version for version, _, _ in seen] == sorted(version for version, _, _ in seen)


def make_layout_2(path: Path, heads: list[tuple[str, int, str | None, int]],
                  parts: list[tuple[str, int, dict[str, Any]]]) -> None:
    """A file as the previous release wrote it: its CREATE TABLEs, user_version 2, and rows (``heads``:
    thread id, version, claim, changes; ``parts``: thread id, seq, body)."""
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("CREATE TABLE agui_threads (thread_id TEXT PRIMARY KEY NOT NULL, version INTEGER NOT NULL,"
                     " claim TEXT, format INTEGER NOT NULL, changes INTEGER NOT NULL DEFAULT 0,"
                     " change_bytes INTEGER NOT NULL DEFAULT 0, data_bytes INTEGER NOT NULL DEFAULT 0)")
        conn.execute("CREATE TABLE agui_thread_parts (thread_id TEXT NOT NULL, seq INTEGER NOT NULL,"
                     " body TEXT NOT NULL, PRIMARY KEY (thread_id, seq))")
        conn.execute("PRAGMA user_version = 2")
        sizes: dict[tuple[str, bool], int] = {}
        for thread_id, seq, body in parts:
            text = _json(body)
            conn.execute("INSERT INTO agui_thread_parts (thread_id, seq, body) VALUES (?, ?, ?)",
                         (thread_id, seq, text))
            key = (thread_id, seq > 0)
            sizes[key] = sizes.get(key, 0) + len(text.encode())
        for thread_id, version, claim, changes in heads:
            conn.execute("INSERT INTO agui_threads (thread_id, version, claim, format, changes, change_bytes,"
                         " data_bytes) VALUES (?, ?, ?, ?, ?, ?, ?)",
                         (thread_id, version, claim, STORE_FORMAT_VERSION, changes, sizes.get((thread_id, True), 0),
                          sizes[(thread_id, False)]))
        conn.execute("COMMIT")


def test_a_layout_2_file_gets_record_ids_on_open_and_its_records_keep_working_without_one(path: Path) -> None:
    make_layout_2(path, [("a", 3, None, 1), ("b", 2, "replica-b", 0)],
                  [("a", 0, small(1)), ("a", 1, after_one(1)), ("b", 0, small(2))])

    with SqliteStore(path, compaction=NEVER) as store:
        a, b = store.load("a"), store.load("b")
        assert a is not None and b is not None
        assert (a.version, a.changes, a.record_id, a.data) == (3, 1, None, apply_changes(small(1), [after_one(1)]))
        assert (b.version, b.claim, b.record_id, b.data) == (2, "replica-b", None, small(2))

        # (a writer naming an id holds another record than this one, which has none: refused, nothing written)
        with pytest.raises(ConcurrentResume) as refused:
            store.append("a", after_one(2), expected_version=3, record_id="some-record")
        assert refused.value.thread_id == "a" and "deleted and created again" in str(refused.value)
        assert store.load("a") == a
        # (the writers of the previous release, and any that name no id, go on as before)
        assert store.append("a", {**run_change(2), "messagesFrom": 2}, expected_version=3) == 4
        assert store.release("b", claimed_version=2, owner="replica-b") == 3
        store.save("c", small(3), expected_version=None)
        store.claim("d", expected_version=None, owner="replica-d", data=small(4), record_id="rec-d")
        a, c, d = store.load("a"), store.load("c"), store.load("d")

    assert a is not None and (a.version, a.changes, a.record_id) == (4, 2, None)
    assert c is not None and isinstance(c.record_id, str) and len(c.record_id) >= 16
    assert d is not None and d.record_id == "rec-d"
    assert query(path, "SELECT thread_id, record_id FROM agui_threads WHERE record_id IS NULL ORDER BY thread_id") \
        == [("a", None), ("b", None)]
    assert query(path, "SELECT thread_id, seq FROM agui_thread_parts ORDER BY thread_id, seq") \
        == [("a", 0), ("a", 1), ("a", 2), ("b", 0), ("c", 0), ("d", 0)]
    assert query(path, "PRAGMA user_version") == [(3,)]


def test_stores_opening_a_layout_2_file_at_once_migrate_it_once(path: Path) -> None:
    # A second ALTER TABLE ... ADD COLUMN would fail (duplicate column): every store opening at once
    # must find the layout the first one left.
    make_layout_2(path, [(f"t{i}", i + 1, None, 0) for i in range(20)], [(f"t{i}", 0, small(i)) for i in range(20)])
    workers = 6
    barrier = threading.Barrier(workers)

    def open_one(worker: int) -> tuple[int, int]:
        barrier.wait(timeout=60)  # (a watchdog, not a timing)
        with SqliteStore(path) as store:
            appended = store.append(f"t{worker}", after_one(worker), expected_version=worker + 1)
            return appended, store.save(f"new{worker}", small(worker), expected_version=None, record_id=f"r{worker}")

    with ThreadPoolExecutor(max_workers=workers) as pool:
        results = list(pool.map(open_one, range(workers)))

    assert results == [(i + 2, 1) for i in range(workers)]
    columns = [row[1] for row in query(path, "PRAGMA table_info(agui_threads)")]
    assert columns.count("record_id") == 1
    assert query(path, "SELECT thread_id, record_id FROM agui_threads WHERE record_id IS NOT NULL ORDER BY thread_id") \
        == [(f"new{i}", f"r{i}") for i in range(workers)]
    with SqliteStore(path) as store:
        for i in range(20):
            stored = store.load(f"t{i}")
            expected = small(i) if i >= workers else apply_changes(small(i), [after_one(i)])
            assert stored is not None and stored.data == expected and stored.record_id is None


def test_a_migration_committing_between_the_first_looks_two_reads_is_not_judged_foreign(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first look at a file reads its layout number, then its tables and schema. Another store
    # migrating the file (layout 2 to 3) and committing between those reads made this one judge its
    # own layout-3 schema against layout 2's, and refuse it as STORE-SCHEMA (a CI run). Here the other
    # store opens, and migrates, at exactly that step, every time: the reads must share one snapshot.
    make_layout_2(path, [("t", 1, None, 0)], [("t", 0, small(1))])
    judged = sqlite_store._foreign_layout
    migrated: list[int] = []

    def migrate_in_between(conn: sqlite3.Connection, layout: int) -> str | None:
        if not migrated:
            migrated.append(layout)  # (first: the other store's own first look comes through here too)
            with SqliteStore(path):
                pass
            assert query(path, "PRAGMA user_version") == [(3,)]  # (committed, seen by a new connection)
        return judged(conn, layout)

    monkeypatch.setattr(sqlite_store, "_foreign_layout", migrate_in_between)
    with SqliteStore(path) as store:
        stored = store.load("t")
        created = store.save("new", small(2), expected_version=None, record_id="r-new")

    assert migrated == [2]
    assert stored is not None and (stored.version, stored.record_id, stored.data) == (1, None, small(1))
    assert created == 1
    assert [row[1] for row in query(path, "PRAGMA table_info(agui_threads)")].count("record_id") == 1
    assert query(path, "SELECT thread_id, record_id FROM agui_threads ORDER BY thread_id") \
        == [("new", "r-new"), ("t", None)]


def test_a_record_made_by_the_previous_release_after_the_migration_has_no_id(path: Path) -> None:
    # A process of the previous release that still has the file open creates rows with its own SQL,
    # which names no record_id: the row is NULL there, and loads and takes id-less writes as any
    # record of that release.
    with SqliteStore(path, compaction=NEVER) as store:
        with closing(sqlite3.connect(path, isolation_level=None)) as old:
            old.execute("BEGIN IMMEDIATE")
            old.execute("INSERT INTO agui_threads (thread_id, version, claim, format, data_bytes)"
                        " VALUES (?, ?, ?, ?, ?)", ("t", 1, None, STORE_FORMAT_VERSION, len(_json(small(1)))))
            old.execute("INSERT OR REPLACE INTO agui_thread_parts (thread_id, seq, body) VALUES (?, 0, ?)",
                        ("t", _json(small(1))))
            old.execute("COMMIT")

        stored = store.load("t")
        assert stored is not None and (stored.version, stored.record_id, stored.data) == (1, None, small(1))
        assert store.append("t", after_one(1), expected_version=1) == 2
        with pytest.raises(ConcurrentResume) as refused:
            store.claim("t", expected_version=2, owner="a", record_id="0123456789abcdef")
        assert refused.value.thread_id == "t" and "deleted and created again" in str(refused.value)


def test_a_record_id_that_is_not_text_is_a_store_error(path: Path, store: SqliteStore) -> None:
    # (a row written by another tool: the id is refused as damaged, never compared as if it were one)
    store.save("t", small(1), expected_version=None, record_id="rec")
    query(path, "UPDATE agui_threads SET record_id = X'00ff' WHERE thread_id = 't'")  # (a BLOB: TEXT affinity keeps it)

    with pytest.raises(StoreError) as on_load:
        store.load("t")
    assert "record id is damaged" in str(on_load.value)
    with pytest.raises(StoreError) as on_claim:
        store.claim("t", expected_version=1, owner="a")
    assert "record id is damaged" in str(on_claim.value)

    assert on_load.value.thread_id == on_claim.value.thread_id == "t"
    assert query(path, "SELECT version, claim FROM agui_threads") == [(1, None)]


def test_a_compaction_that_finds_the_thread_made_again_is_skipped(store: SqliteStore) -> None:
    # Deleted and made again between an append and its compaction, up to the same version and change
    # count: another record, whose changes are not the append's to fold.
    store.save("t", small(1), expected_version=None, record_id="old")
    written = store._write("t", "append", expected_version=1, owner=None, record_id="old",
                           text=_json(after_one(1)), size=10)
    store.delete("t")
    store.save("t", small(5), expected_version=None, record_id="new")
    store.append("t", after_one(5), expected_version=1, record_id="new")

    folded = store._compact("t", written)

    stored = store.load("t")
    assert folded is False
    assert stored is not None and (stored.version, stored.changes, stored.record_id) == (2, 1, "new")
    assert stored.data == apply_changes(small(5), [after_one(5)])


def test_a_compaction_records_the_folded_data_in_utf8_bytes(path: Path) -> None:
    # data_bytes is what the compaction policy weighs the changes against, in UTF-8 bytes as every
    # other write records it; a compaction counted the folded text's characters instead, so a thread
    # outside ASCII looked smaller than it is and was folded sooner (review of the twelfth round).
    with SqliteStore(path, compaction=EVERY_THIRD) as store:
        store.save("t", small(1), expected_version=None)
        for n in range(1, 4):  # (the third append folds; run_change's text holds "café 😀")
            store.append("t", run_change(n), expected_version=n)
        stored = store.load("t")

    assert stored is not None and stored.changes == 0
    [(body,)] = query(path, "SELECT body FROM agui_thread_parts WHERE thread_id = 't' AND seq = 0")
    assert len(body.encode()) > len(body)  # (the folded data holds non-ASCII text)
    assert query(path, "SELECT data_bytes FROM agui_threads WHERE thread_id = 't'") == [(len(body.encode()),)]


def previous_release_append(path: Path, thread_id: str, change: dict[str, Any], expected_version: int) -> bool:
    """An append as a process of the previous release (layout 2, no record ids) still running on the
    migrated file makes it, with that release's statements: whether it landed (``False``: its own
    compare-and-set refused it, as that release raised ``ConcurrentResume``)."""
    body = _json(change)
    with closing(sqlite3.connect(path, isolation_level=None)) as old:
        old.execute("BEGIN IMMEDIATE")
        row = old.execute("SELECT version, changes, change_bytes FROM agui_threads WHERE thread_id = ?",
                          (thread_id,)).fetchone()
        if row is None or row[0] != expected_version:
            old.execute("ROLLBACK")
            return False
        version, changes, change_bytes = row
        old.execute("INSERT INTO agui_thread_parts (thread_id, seq, body) VALUES (?, ?, ?)",
                    (thread_id, changes + 1, body))
        old.execute("UPDATE agui_threads SET version = ?, claim = NULL, format = ?, changes = ?, change_bytes = ?"
                    " WHERE thread_id = ? AND version = ?",
                    (version + 1, STORE_FORMAT_VERSION, changes + 1, change_bytes + len(body.encode()), thread_id,
                     expected_version))
        old.execute("COMMIT")
    return True


def test_mixed_releases_on_a_record_without_an_id_lose_and_repeat_nothing(
        path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A record the previous release wrote, loaded and written by this release while a process of the
    # previous one still appends to it (replicas upgraded one at a time): every write is a
    # compare-and-set on the version in both releases, so a stale write of either is refused, and this
    # release's lock-free fold, raced by the old process's append, is skipped rather than written over it.
    import agui_client.stores.sqlite as module

    make_layout_2(path, [("a", 3, None, 1)], [("a", 0, small(1)), ("a", 1, after_one(1))])
    changes = [after_one(1)] + [{**run_change(n), "messagesFrom": n} for n in range(2, 6)]
    fold = module.compacted
    raced: list[bool] = []

    def folding(thread_id: str, text: Any, parts: Any) -> Any:
        if not raced:  # (the old process appends between this release's read and its write)
            raced.append(previous_release_append(path, "a", changes[3], expected_version=5))
        return fold(thread_id, text, parts)

    with SqliteStore(path, compaction=EVERY_THIRD) as store:
        loaded = store.load("a")
        assert previous_release_append(path, "a", changes[1], expected_version=3)
        with pytest.raises(ConcurrentResume) as stale:
            store.append("a", changes[1], expected_version=3)
        assert (stale.value.expected_version, stale.value.actual_version) == (3, 4)
        monkeypatch.setattr(module, "compacted", folding)
        assert store.append("a", changes[2], expected_version=4) == 5  # (the third change: its fold is raced)
        assert not previous_release_append(path, "a", changes[4], expected_version=5)
        raced_to = store.load("a")
        monkeypatch.setattr(module, "compacted", fold)
        assert store.append("a", changes[4], expected_version=6) == 7  # (folds the five)
        folded = store.load("a")

    assert loaded is not None and (loaded.version, loaded.record_id) == (3, None)
    assert raced == [True]
    expected = [apply_changes(small(1), copy.deepcopy(changes[:k])) for k in (4, 5)]
    assert raced_to is not None and (raced_to.version, raced_to.changes, raced_to.data) == (6, 4, expected[0])
    assert folded is not None and (folded.version, folded.changes, folded.data) == (7, 0, expected[1])


@pytest.mark.parametrize("part", ["data", "change"])
def test_a_part_another_tool_wrote_as_text_that_is_not_utf8_is_refused_without_quoting_it(
        tmp_path: Path, part: str) -> None:
    # SQLite keeps TEXT as given: a tool writing bytes as text leaves a body Python cannot decode.
    # The load raised sqlite3's decode error, quoting the start of the body (a thread's content, in an
    # error that may be logged); the body is now read as bytes, and refused as JSON naming the thread.
    path = tmp_path / "threads.db"
    with SqliteStore(path) as store:
        store.save("t", small(1), expected_version=None)
        store.append("t", {"set": {"state": {"n": 1}}}, expected_version=1)
    body = b'{"state": {"secret": "hunter2 \xff\xfe"}}'
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("UPDATE agui_thread_parts SET body = CAST(? AS TEXT) WHERE thread_id = 't' AND seq = ?",
                     (body, 0 if part == "data" else 1))

    with SqliteStore(path) as store, pytest.raises(StoreError) as caught:
        store.load("t")

    assert caught.value.thread_id == "t"
    said = {"data": "stored data is not JSON", "change": "a stored change is not JSON"}[part]
    assert str(caught.value).startswith(f"thread 't': {said}: ") and "hunter2" not in str(caught.value)
