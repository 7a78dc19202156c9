"""PostgresStore's own behaviour: its rows and change rows, compaction, older table layouts migrated,
concurrent opens, dropped connections and errors without the password."""

from __future__ import annotations

import json
import re
import select
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from backendkit import (
    LAYOUT_1_CREATE,
    interrupted_thread,
    older_table,
    pg,
    small,
)
from storekit import refused_open

from agui_client.errors import ConcurrentResume, StoreError
from agui_client.stores import (
    STORE_FORMAT_VERSION,
    PostgresStore,
    apply_changes,
)
from agui_client.stores.base import Compaction

__all__: list[str] = []


def test_postgres_store_keeps_a_thread_in_one_row_of_its_table(postgres_dsn: str, pg_table: str) -> None:
    with PostgresStore(postgres_dsn, table=pg_table) as store:
        store.save("t", small(1), expected_version=None)
        store.claim("t", expected_version=1, owner="replica-a")
        loaded = store.load("t")

    rows = pg(postgres_dsn, f"SELECT thread_id, version, data, claim, format, data_version, changes, change_bytes"
                             f" FROM {pg_table}")
    record_ids = pg(postgres_dsn, f"SELECT record_id FROM {pg_table}")
    columns = pg(postgres_dsn, "SELECT column_name, data_type FROM information_schema.columns"
                                " WHERE table_name = %s ORDER BY ordinal_position", pg_table)
    change_columns = pg(postgres_dsn, "SELECT column_name, data_type FROM information_schema.columns"
                                       " WHERE table_name = %s ORDER BY ordinal_position", f"{pg_table}_changes")
    comment = pg(postgres_dsn, "SELECT obj_description(%s::regclass, 'pg_class')", pg_table)

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
        stored_data = pg(postgres_dsn, f"SELECT data FROM {pg_table}")
        store.append("t", change, expected_version=1)
        store.claim("t", expected_version=2, owner="a")

        head = pg(postgres_dsn, f"SELECT version, data, data_version, changes, change_bytes FROM {pg_table}")
        bodies = pg(postgres_dsn, f"SELECT thread_id, seq, body FROM {pg_table}_changes")
        store.delete("t")
        left = pg(postgres_dsn, f"SELECT count(*) FROM {pg_table}_changes")

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
        pg(postgres_dsn, f"INSERT INTO {pg_table}_changes (thread_id, seq, body) VALUES ('t', 2, %s), ('t', 3, %s)",
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
        names = pg(postgres_dsn, "SELECT relname FROM pg_class WHERE relname LIKE %s AND relkind = 'r'"
                                  " ORDER BY relname", stem[:20] + "%")
    finally:
        with psycopg.connect(postgres_dsn, autocommit=True) as conn:
            for (name,) in pg(postgres_dsn, "SELECT relname FROM pg_class WHERE relname LIKE %s AND relkind = 'r'",
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
    pg(postgres_dsn, f"CREATE FUNCTION {pg_table}_refuse() RETURNS trigger LANGUAGE plpgsql AS"
                      " $$ BEGIN RAISE EXCEPTION 'no deleting here'; END $$")
    try:
        pg(postgres_dsn, f"CREATE TRIGGER refuse BEFORE DELETE ON {pg_table}_changes"
                          f" FOR EACH ROW EXECUTE FUNCTION {pg_table}_refuse()")
        with PostgresStore(postgres_dsn, table=pg_table, compaction=Compaction(min_bytes=0, ratio=0.0),
                           trusted_objects=("refuse",)) as store:
            store.save("t", small(1), expected_version=None)
            with caplog.at_level("DEBUG", logger="agui_client.stores"):
                version = store.append("t", {"set": {"state": {"n": 1}}}, expected_version=1)
            stored = store.load("t")
    finally:  # (the table's drop leaves a function behind in the session's database; a failure too)
        pg(postgres_dsn, f"DROP FUNCTION {pg_table}_refuse() CASCADE")

    assert version == 2
    assert stored is not None and (stored.version, stored.changes) == (2, 1)
    assert stored.data == {**small(1), "state": {"n": 1}}
    assert any("compaction of thread 't' skipped" in record.getMessage() and "no deleting here" in record.getMessage()
               for record in caplog.records)


def test_postgres_store_migrates_a_layout_2_table_and_gives_new_records_ids(postgres_dsn: str, pg_table: str) -> None:
    older_table(postgres_dsn, pg_table, 2)
    # A thread the layout-2 release saved at version 1 and appended one change to (version 2).
    change = {"set": {"state": {"n": 2}}}
    pg(postgres_dsn, f"INSERT INTO {pg_table} (thread_id, version, data, claim, format, data_version, changes,"
                      f" change_bytes) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
        "old", 2, json.dumps(small(1)), None, STORE_FORMAT_VERSION, 1, 1, len(json.dumps(change)))
    pg(postgres_dsn, f"INSERT INTO {pg_table}_changes (thread_id, seq, body) VALUES (%s, %s, %s)",
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
    comment = pg(postgres_dsn, "SELECT obj_description(%s::regclass, 'pg_class')", pg_table)
    rows = pg(postgres_dsn, f"SELECT thread_id, version, record_id FROM {pg_table} ORDER BY thread_id")

    assert loaded is not None and (loaded.version, loaded.record_id, loaded.changes) == (2, None, 1)
    assert loaded.data == {**small(1), "state": {"n": 2}}
    assert (appended, claimed) == (3, 4)
    assert old is not None and (old.record_id, old.claim, old.data["lastRunId"]) == (None, "a", "r")
    assert saved == 2
    assert comment == [("agui-client thread store, layout 3",)]
    assert rows == [("new", 2, new.record_id), ("old", 4, None)]


def test_postgres_store_migrates_a_layout_1_table_and_appends_and_compacts_on_it(postgres_dsn: str,
                                                                                   pg_table: str) -> None:
    pg(postgres_dsn, LAYOUT_1_CREATE.format(table=pg_table))
    pg(postgres_dsn, f"COMMENT ON TABLE {pg_table} IS 'agui-client thread store, layout 1'")
    old = interrupted_thread().dump()
    pg(postgres_dsn, f"INSERT INTO {pg_table} (thread_id, version, data, claim, format) VALUES (%s, %s, %s, %s, %s)",
        "t", 4, json.dumps(old), None, 1)
    pg(postgres_dsn, f"INSERT INTO {pg_table} (thread_id, version, data, claim, format) VALUES (%s, %s, %s, %s, %s)",
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
    comment = pg(postgres_dsn, "SELECT obj_description(%s::regclass, 'pg_class')", pg_table)
    rows = pg(postgres_dsn, f"SELECT thread_id, version, format, data_version, changes FROM {pg_table}"
                             " ORDER BY thread_id")
    left = pg(postgres_dsn, f"SELECT count(*) FROM {pg_table}_changes")

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
    older_table(postgres_dsn, pg_table, layout)
    pg(postgres_dsn, f"INSERT INTO {pg_table} (thread_id, version, data, claim, format) VALUES (%s, %s, %s, %s, %s)",
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
    comment = pg(postgres_dsn, "SELECT obj_description(%s::regclass, 'pg_class')", pg_table)
    assert versions == list(range(2, 2 + workers))
    assert stored is not None and set(stored.data["usageByRun"]) == {f"w{n}" for n in range(workers)}
    assert stored.record_id is None and comment == [("agui-client thread store, layout 3",)]


def test_postgres_store_reads_an_empty_claim_as_none_and_claims_over_it(postgres_dsn: str, pg_table: str) -> None:
    # A row written by another tool: an empty owner holds nothing (as Redis and SQLite read it), and
    # the claim's conditional UPDATE must agree with that reading.
    with PostgresStore(postgres_dsn, table=pg_table) as store:
        store.save("t", small(1), expected_version=None)
        pg(postgres_dsn, f"UPDATE {pg_table} SET claim = ''")
        loaded = store.load("t")
        version = store.claim("t", expected_version=1, owner="a")
        stored = store.load("t")

    assert loaded is not None and loaded.claim is None
    assert stored is not None and (version, stored.version, stored.claim) == (2, 2, "a")


def test_postgres_store_refuses_a_newer_table_layout(postgres_dsn: str, pg_table: str) -> None:
    PostgresStore(postgres_dsn, table=pg_table).close()
    pg(postgres_dsn, f"COMMENT ON TABLE {pg_table} IS 'agui-client thread store, layout 4'")

    refused = refused_open(lambda: PostgresStore(postgres_dsn, table=pg_table))

    assert "layout 4" in str(refused)


def test_postgres_store_takes_a_schema_qualified_table_and_refuses_other_names(postgres_dsn: str) -> None:
    schema = f"agui_schema_{uuid.uuid4().hex}"
    pg(postgres_dsn, f"CREATE SCHEMA {schema}")
    try:
        with PostgresStore(postgres_dsn, table=f"{schema}.threads") as store:
            store.save("t", small(1), expected_version=None)
        rows = pg(postgres_dsn, f"SELECT thread_id, version FROM {schema}.threads")
    finally:
        pg(postgres_dsn, f"DROP SCHEMA {schema} CASCADE")

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
    assert pg(postgres_dsn, f"SELECT count(*) FROM {pg_table}") == [(workers,)]


@pytest.mark.parametrize("write", ["save", "claim", "release"])
def test_postgres_store_drops_idle_connections_the_server_ended(postgres_dsn: str, pg_table: str, write: str) -> None:
    # A database restart (or a terminated backend, or a pooler's idle timeout) ends the store's idle
    # connections. The next call must not fail on one: a save sent on a dead connection could not be
    # sent again (its own landing would refuse it), so the store leaves such connections behind.
    name = f"agui-test-{uuid.uuid4().hex[:12]}"
    with PostgresStore(f"{postgres_dsn} application_name={name}", table=pg_table) as store:
        store.save("t", small(1), expected_version=None)
        store.claim("t", expected_version=1, owner="a")
        ended = pg(postgres_dsn, "SELECT pg_terminate_backend(pid, 30000) FROM pg_stat_activity"
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
        left = pg(postgres_dsn, f'SELECT count(*) FROM "{pg_table}_changes"')
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
        pg(postgres_dsn, f'DELETE FROM "{pg_table}_changes" WHERE seq = 3')

        with pytest.raises(StoreError) as caught:
            store.load("t")

    assert caught.value.thread_id == "t"
    assert "counts 2 changes" in str(caught.value)
