"""``SqliteStore`` and a thread file whose store tables are not as the store makes them (``STORE-SCHEMA`` in
docs/codes.md).

Before (the twenty-third round refused triggers alone): a CHECK constraint, a DEFAULT or a generated
column, an expression index or a partial index's WHERE clause ran the file's own SQL on every write (a
megabyte of ``zeroblob`` per claim, or a gigabyte); a collation, a type or a table without its primary
key changed what a claim compares or let two claims both win; and whatever another process added after
the store opened the file (a trigger undoing claims, an index) was run by every later write, the turn
sent. Now the store's tables and all they carry must be what agui_client's own statements leave (made
new or migrated from an earlier layout), at open and, when the file's schema cookie moved, before each
write; anything else is a ``StoreError`` with ``code == "STORE-SCHEMA"``, naming the object (quoted as
an id) and never its SQL, with nothing written. What the file holds beside them is left alone.

The twenty-fourth round's way out: ``trusted_objects`` names the triggers and indexes the operator vouches
for (an audit trigger, an index of their own), compared exactly; they open, run with the store's writes and
pass the per-write schema check when added later, while anything else is still refused. A trusted name on
none of the tables is a ``STORE-TRUSTED-ABSENT`` warning. Before, such a file could not be opened at all.
"""

from __future__ import annotations

import pickle
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from backendkit import FoldsNow, small
from test_sqlite_layout import make_layout_1, make_layout_2, query

from agui_client._inert import quoted_name
from agui_client.errors import AguiWarning, StoreError
from agui_client.stores import SqliteStore
from agui_client.testing import ScriptedAgent

__all__: list[str] = []

#: The current layout's tables, written as another tool would (one line each): the same tables.
HEADS = ("CREATE TABLE agui_threads (thread_id TEXT PRIMARY KEY NOT NULL, version INTEGER NOT NULL, claim TEXT,"
         " format INTEGER NOT NULL, changes INTEGER NOT NULL DEFAULT 0, change_bytes INTEGER NOT NULL DEFAULT 0,"
         " data_bytes INTEGER NOT NULL DEFAULT 0, record_id TEXT)")
PARTS = ("CREATE TABLE agui_thread_parts (thread_id TEXT NOT NULL, seq INTEGER NOT NULL, body TEXT NOT NULL,"
         " PRIMARY KEY (thread_id, seq))")
#: A name no message may show raw (a screen clear, a bidi override): it is quoted as an id.
HOSTILE_NAME = "spent\x1b[2J\u202e"
#: A megabyte computed by every write that evaluates it (a gigabyte is one digit away).
MEGABYTE = "length(zeroblob(1000000))"

# (kind, the head table's statement, statements after it, the object the refusal names, SQL it must not quote)
HOSTILE = [
    ("check", HEADS.replace("record_id TEXT", f"record_id TEXT, CHECK ({MEGABYTE} > 0)"), [], "agui_threads",
     "zeroblob"),
    ("default", HEADS.replace("claim TEXT", "claim TEXT DEFAULT (hex(randomblob(500000)))"), [], "agui_threads",
     "randomblob"),
    ("generated-column", HEADS, [f"ALTER TABLE agui_threads ADD COLUMN spent INTEGER AS ({MEGABYTE})"],
     "agui_threads", "zeroblob"),
    ("type-affinity", HEADS.replace("version INTEGER", "version TEXT"), [], "agui_threads", "version TEXT"),
    ("collation", HEADS.replace("thread_id TEXT PRIMARY KEY", "thread_id TEXT COLLATE NOCASE PRIMARY KEY"), [],
     "agui_threads", "NOCASE"),
    ("no-primary-key", HEADS.replace("thread_id TEXT PRIMARY KEY", "thread_id TEXT"), [], "agui_threads",
     "CREATE TABLE"),
    ("expression-index", HEADS, [f'CREATE INDEX "{HOSTILE_NAME}" ON agui_threads ({MEGABYTE})'], HOSTILE_NAME,
     "zeroblob"),
    ("partial-index", HEADS, [f"CREATE INDEX claimed ON agui_threads (claim) WHERE {MEGABYTE} > 0"], "claimed",
     "zeroblob"),
    ("trigger-on-parts", HEADS, ["CREATE TRIGGER spin BEFORE INSERT ON Agui_Thread_Parts BEGIN SELECT "
                                 f"{MEGABYTE}; END"], "spin", "zeroblob"),
]


def _store_file(path: Path, heads: str, *statements: str, user_version: int = 3) -> None:
    """A store file of the current layout made with ``heads`` (and ``statements`` after), holding thread 't'."""
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute(heads)
        conn.execute(PARTS)
        for statement in statements:
            conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {user_version}")
        conn.execute("INSERT INTO agui_threads (thread_id, version, format, data_bytes) VALUES ('t', 1, 1, 2)")
        conn.execute("INSERT INTO agui_thread_parts (thread_id, seq, body) VALUES ('t', 0, '{}')")


def _file(path: Path) -> tuple[Any, ...]:
    """What a refusal must leave as it was: the schema, the layout number, the journal mode, the rows."""
    return (query(path, "SELECT type, name, sql FROM sqlite_master ORDER BY name"), query(path, "PRAGMA user_version"),
            query(path, "PRAGMA journal_mode"), query(path, "SELECT * FROM agui_threads"))


def _refused(path: Path) -> StoreError:
    with pytest.raises(StoreError) as caught:
        SqliteStore(path)
    return caught.value


@pytest.mark.parametrize(("heads", "statements", "name", "sql"), [case[1:] for case in HOSTILE],
                         ids=[case[0] for case in HOSTILE])
def test_a_schema_the_store_does_not_make_is_refused_at_open_naming_the_object(tmp_path: Path, heads: str,
                                                                               statements: list[str], name: str,
                                                                               sql: str) -> None:
    path = tmp_path / "threads.db"
    _store_file(path, heads, *statements)
    before = _file(path)

    refused = _refused(path)

    said = str(refused)
    assert refused.code == "STORE-SCHEMA" and refused.thread_id is None
    assert quoted_name(name, 40) in said and "not an agui_client store" in said, said
    assert sql not in said and "\x1b" not in said
    assert _file(path) == before  # (not migrated, not switched to WAL, no row touched)
    assert pickle.loads(pickle.dumps(refused)).code == "STORE-SCHEMA"


def test_the_same_tables_written_otherwise_open_and_work(tmp_path: Path) -> None:
    # (the tables above, spelled on one line and in other case: SQLite reads them alike, and so does the store)
    path = tmp_path / "threads.db"
    _store_file(path, HEADS.lower())
    with SqliteStore(path) as store:
        assert store.claim("t", expected_version=1, owner="me") == 2


def test_what_the_file_holds_beside_the_store_tables_is_left_alone(tmp_path: Path) -> None:
    # (the store's statements never touch another table, and SQLite runs a trigger, an index or a
    # default only for a statement on its own table: a file an application shares keeps working, as
    # the release before promised; a view runs only when read, and the store reads none)
    path = tmp_path / "threads.db"
    _store_file(path, HEADS, "CREATE TABLE audit (at TEXT DEFAULT (hex(randomblob(8))))",
                f"CREATE INDEX spent ON audit ({MEGABYTE})",
                "CREATE TRIGGER audited AFTER INSERT ON audit BEGIN SELECT 1; END",
                "CREATE VIEW agui_summary AS SELECT count(*) FROM agui_threads")
    with SqliteStore(path) as store:
        assert store.claim("t", expected_version=1, owner="me") == 2
        with closing(sqlite3.connect(path, isolation_level=None)) as other:
            other.execute("CREATE VIEW claimed AS SELECT thread_id FROM agui_threads WHERE claim IS NOT NULL")
        assert store.release("t", claimed_version=2, owner="me") == 3


def test_an_earlier_layout_with_an_index_of_its_own_is_refused_before_it_is_migrated(tmp_path: Path) -> None:
    path = tmp_path / "threads.db"
    make_layout_2(path, [("a", 1, None, 0)], [("a", 0, small(1))])
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute(f"CREATE INDEX spent ON agui_threads ({MEGABYTE})")
    before = _file(path)

    refused = _refused(path)

    assert refused.code == "STORE-SCHEMA" and "indexes 'spent'" in str(refused)
    assert _file(path) == before and query(path, "PRAGMA user_version") == [(2,)]


#: What another process adds to the file after the store opened it, and how it is taken away again.
ADDED_LATER = [
    ("trigger", "CREATE TRIGGER unclaim AFTER UPDATE OF claim ON agui_threads BEGIN "
                "UPDATE agui_threads SET claim = NULL WHERE thread_id = NEW.thread_id; END",
     "DROP TRIGGER unclaim", "unclaim"),
    ("index", f"CREATE INDEX spent ON agui_threads ({MEGABYTE})", "DROP INDEX spent", "spent"),
    ("column", f"ALTER TABLE agui_threads ADD COLUMN spent INTEGER AS ({MEGABYTE})",
     "ALTER TABLE agui_threads DROP COLUMN spent", "agui_threads"),
]


@pytest.mark.parametrize(("added", "removed", "name"), [case[1:] for case in ADDED_LATER],
                         ids=[case[0] for case in ADDED_LATER])
def test_a_schema_changed_after_open_is_refused_at_the_next_claim_and_nothing_is_sent(
        drive: Any, served: Any, tmp_path: Path, added: str, removed: str, name: str) -> None:
    path = tmp_path / "threads.db"
    endpoint = served(ScriptedAgent.chat())
    with SqliteStore(path) as store, drive.client(endpoint.url, store=store) as client:
        thread = client.thread("t")
        thread.run("hi")
        stored = store.load("t")
        with closing(sqlite3.connect(path, isolation_level=None)) as other:
            other.execute(added)

            with pytest.raises(StoreError) as caught:
                thread.run("again")

            assert caught.value.code == "STORE-SCHEMA" and caught.value.thread_id == "t"
            said = str(caught.value)
            assert "changed after the store opened it" in said and quoted_name(name, 40) in said, said
            assert "zeroblob" not in said and "NEW.thread_id" not in said
            assert len(endpoint.received) == 1  # (the second turn never left)
            assert store.load("t") == stored  # (not claimed: nothing written)

            # Taken away again, the schema is the store's own: the cookie moved, the schema is judged
            # again, and the writes go on.
            other.execute(removed)
        thread.run("once more")
    assert len(endpoint.received) == 2


def test_every_write_is_judged_against_a_schema_changed_after_open(tmp_path: Path) -> None:
    path = tmp_path / "threads.db"
    with SqliteStore(path) as store:
        store.save("t", small(1), expected_version=None)
        with closing(sqlite3.connect(path, isolation_level=None)) as other:
            other.execute(f"CREATE INDEX spent ON agui_threads ({MEGABYTE})")
        writes = {
            "save": lambda: store.save("t", small(2), expected_version=1),
            "append": lambda: store.append("t", {"messagesFrom": 0}, expected_version=1),
            "claim": lambda: store.claim("t", expected_version=1, owner="me"),
            "release": lambda: store.release("t", claimed_version=1, owner="me"),
            "delete": lambda: store.delete("t"),
        }
        for write in writes.values():
            with pytest.raises(StoreError) as caught:
                write()
            assert caught.value.code == "STORE-SCHEMA" and "indexes 'spent'" in str(caught.value)
        stored = store.load("t")  # (a load reads: an index's expressions run on writes)
    assert stored is not None and (stored.version, stored.data) == (1, small(1))


def test_a_trigger_added_between_an_append_and_its_compaction_is_refused_by_the_compaction(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # The compaction is a write transaction of its own, judged like every write (the cookie moved).
    path = tmp_path / "threads.db"

    def add_trigger() -> None:  # (from another connection)
        with closing(sqlite3.connect(path, isolation_level=None)) as other:
            other.execute("CREATE TABLE spy (what TEXT)")
            other.execute("CREATE TRIGGER spy AFTER UPDATE ON agui_threads BEGIN INSERT INTO spy VALUES ('ran'); END")

    policy = FoldsNow(first=add_trigger)
    with SqliteStore(path, compaction=policy) as store, caplog.at_level("DEBUG", logger="agui_client.stores"):
        store.save("t", small(1), expected_version=None)
        version = store.append("t", {"set": {"state": {"n": 2}}}, expected_version=1)
        stored = store.load("t")

    assert version == 2 and policy.asked == [1]
    assert stored is not None and (stored.changes, stored.data["state"]) == (1, {"n": 2})
    assert query(path, "SELECT * FROM spy") == []
    skipped = [r.getMessage() for r in caplog.records if "compaction of thread 't' skipped" in r.getMessage()]
    assert len(skipped) == 1 and "the file's schema changed after the store opened it" in skipped[0], skipped


@pytest.mark.parametrize("how", ["schema_version set back", "writable_schema"])
def test_a_trigger_hidden_from_the_schema_cookie_is_refused_in_a_new_connections_first_write(
        tmp_path: Path, how: str) -> None:
    # A trigger added with the schema cookie left where it was (set back after CREATE TRIGGER, or
    # written into sqlite_master under writable_schema) is not seen by the per-write cookie check. The
    # connection already in the pool keeps the schema it read and runs none of it; one the pool opens
    # afterwards reads the changed schema, and ran the trigger in its writes. Its first write now
    # judges the schema, refusing it (and says the cookie did not move).
    path = tmp_path / "threads.db"
    trigger = "CREATE TRIGGER spy AFTER UPDATE ON agui_threads BEGIN INSERT INTO seen VALUES (NEW.claim); END"
    with SqliteStore(path) as store:
        store.save("t", small(1), expected_version=None)
        with closing(sqlite3.connect(path, isolation_level=None)) as other:
            other.execute("CREATE TABLE seen (claim TEXT)")  # (beside the store's tables: left alone)
            store.claim("t", expected_version=1, owner="a")  # (the store judges the moved cookie)
            (cookie,) = other.execute("PRAGMA schema_version").fetchone()
            if how == "writable_schema":
                other.execute("PRAGMA writable_schema = ON")
                other.execute("INSERT INTO sqlite_master (type, name, tbl_name, rootpage, sql)"
                              " VALUES ('trigger', 'spy', 'agui_threads', 0, ?)", (trigger,))
                other.execute("PRAGMA writable_schema = OFF")
            else:
                other.execute(trigger)
                other.execute(f"PRAGMA schema_version = {cookie}")
            assert other.execute("PRAGMA schema_version").fetchone() == (cookie,)
        pooled = store.release("t", claimed_version=2, owner="a")  # (the pooled connection: the schema it read)
        with store._connection():  # (holds that one: the next write opens a new connection)
            with pytest.raises(StoreError) as caught:
                store.claim("t", expected_version=3, owner="b")
        stored = store.load("t")

    said = str(caught.value)
    assert caught.value.code == "STORE-SCHEMA" and "triggers 'spy'" in said, said
    assert "without moving its schema cookie" in said
    assert pooled == 3 and stored is not None and (stored.version, stored.claim) == (3, None)
    assert query(path, "SELECT count(*) FROM seen") == [(0,)]


def _hide(path: Path, statement: str) -> None:
    """``statement`` run on ``sqlite_master`` under ``writable_schema``: the schema cookie stays where it was."""
    with closing(sqlite3.connect(path, isolation_level=None)) as other:
        (cookie,) = other.execute("PRAGMA schema_version").fetchone()
        other.execute("PRAGMA writable_schema = ON")
        other.execute(statement)
        other.execute("PRAGMA writable_schema = OFF")
        assert other.execute("PRAGMA schema_version").fetchone() == (cookie,)


def test_two_hidden_changes_around_a_connections_first_read_and_write_run_nothing(tmp_path: Path) -> None:
    # A trigger written in with the cookie left where it was, then a new connection's first read (SQLite
    # loads the connection's schema, trigger included), then the trigger's row taken out again, cookie
    # still unmoved, before that connection's first write. The judgement at its first write read the
    # file, found nothing, and the write ran the trigger the connection had loaded. The connection's
    # schema is now judged in the read transaction that loads it: found foreign, the connection is not
    # kept after the read, and the write goes to a new one, which loads the file's schema as it is now.
    path = tmp_path / "threads.db"
    trigger = "CREATE TRIGGER spy AFTER UPDATE ON agui_threads BEGIN INSERT INTO seen VALUES (NEW.claim); END"
    with SqliteStore(path) as store:
        store.save("t", small(1), expected_version=None)
        with closing(sqlite3.connect(path, isolation_level=None)) as other:
            other.execute("CREATE TABLE seen (claim TEXT)")  # (beside the store's tables: left alone)
        assert store.claim("t", expected_version=1, owner="a") == 2  # (the pooled connection judges the new cookie)
        _hide(path, "INSERT INTO sqlite_master (type, name, tbl_name, rootpage, sql)"
                    f" VALUES ('trigger', 'spy', 'agui_threads', 0, '{trigger}')")
        with store._connection():  # (holds the pooled one: the load and the release need another)
            loaded = store.load("t")  # (a read: a trigger runs in none)
            _hide(path, "DELETE FROM sqlite_master WHERE name = 'spy'")
            released = store.release("t", claimed_version=2, owner="a")
        stored = store.load("t")

    assert loaded is not None and loaded.claim == "a"
    assert released == 3 and stored is not None and (stored.version, stored.claim) == (3, None)
    assert query(path, "SELECT count(*) FROM seen") == [(0,)]


def test_a_hidden_change_after_a_moved_cookie_is_judged_by_a_connection_that_loaded_the_schema_before(
        tmp_path: Path) -> None:
    # A connection holds the schema it loaded at one cookie; the cookie moves (a table of the operator's),
    # another connection judges the new schema and finds it ours, then a trigger is written in hidden from
    # the cookie. The first connection, writing next, loads the file's schema again (its cookie is not the
    # file's): judged by the cookie it loaded under, not by the one the store last saw, it refuses.
    path = tmp_path / "threads.db"
    trigger = "CREATE TRIGGER spy AFTER UPDATE ON agui_threads BEGIN INSERT INTO seen VALUES (NEW.claim); END"
    with SqliteStore(path) as store:
        store.save("t", small(1), expected_version=None)  # (the first connection, pooled)
        with closing(sqlite3.connect(path, isolation_level=None)) as other:
            other.execute("CREATE TABLE seen (claim TEXT)")  # (the cookie moves; beside the store's tables)
        with store._connection():  # (holds the first: the claim takes a second, which judges the new cookie)
            assert store.claim("t", expected_version=1, owner="a") == 2
            _hide(path, "INSERT INTO sqlite_master (type, name, tbl_name, rootpage, sql)"
                        f" VALUES ('trigger', 'spy', 'agui_threads', 0, '{trigger}')")
        with pytest.raises(StoreError) as refused:  # (the first again: the last given back)
            store.release("t", claimed_version=2, owner="a")

    assert refused.value.code == "STORE-SCHEMA" and "spy" in str(refused.value), str(refused.value)
    assert query(path, "SELECT count(*) FROM seen") == [(0,)]


def _as_the_previous_release_migrated_layout_1(path: Path) -> None:
    """A layout-1 file as the layout-2 release left it: its head table rebuilt and renamed (SQLite then
    quotes the name in the statement it keeps), no record_id column yet."""
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(PARTS)
        conn.execute("INSERT INTO agui_thread_parts SELECT thread_id, 0, data FROM agui_threads")
        conn.execute(HEADS.replace("agui_threads", "agui_threads_migrated").replace(", record_id TEXT", ""))
        conn.execute("INSERT INTO agui_threads_migrated (thread_id, version, claim, format, data_bytes)"
                     " SELECT thread_id, version, claim, format, length(data) FROM agui_threads")
        conn.execute("DROP TABLE agui_threads")
        conn.execute("ALTER TABLE agui_threads_migrated RENAME TO agui_threads")
        conn.execute("PRAGMA user_version = 2")
        conn.execute("COMMIT")


@pytest.mark.parametrize("layout", ["1", "2", "1-then-2", "new"])
def test_every_layout_the_store_made_opens_migrates_and_opens_again(tmp_path: Path, layout: str) -> None:
    # (none of these failed before: they show the exact comparison knows every schema the store leaves,
    # and that the statistics ANALYZE keeps are no schema of the file's own)
    path = tmp_path / "threads.db"
    if layout in ("1", "1-then-2"):
        make_layout_1(path, [("t", 1, small(1), None)])
    if layout == "1-then-2":
        _as_the_previous_release_migrated_layout_1(path)
        assert query(path, "SELECT sql FROM sqlite_master WHERE name = 'agui_threads'")[0][0].startswith(
            'CREATE TABLE "agui_threads"')
    if layout == "2":
        make_layout_2(path, [("t", 1, None, 0)], [("t", 0, small(1))])
    if layout == "new":
        with SqliteStore(path) as store:
            store.save("t", small(1), expected_version=None)
    for opening in range(2):
        with SqliteStore(path) as store:
            with closing(sqlite3.connect(path, isolation_level=None)) as other:
                other.execute("ANALYZE")  # (after the open: the cookie moves, and the schema is still ours)
            assert store.claim("t", expected_version=1 + 2 * opening, owner="me") == 2 + 2 * opening
            assert store.release("t", claimed_version=2 + 2 * opening, owner="me") == 3 + 2 * opening
    assert query(path, "PRAGMA user_version") == [(3,)]


#: The operator's own objects on the store's tables: audit triggers writing each head row as a write left
#: it into a table of theirs (beside the store's tables, where nothing is judged), and an index.
AUDIT_TABLE = "CREATE TABLE audit (thread_id TEXT, version INTEGER, claimed INTEGER)"
AUDIT_TRIGGERS = ["CREATE TRIGGER audit_claims AFTER UPDATE ON agui_threads BEGIN INSERT INTO audit"
                  " VALUES (NEW.thread_id, NEW.version, NEW.claim IS NOT NULL); END",
                  "CREATE TRIGGER audit_created AFTER INSERT ON agui_threads BEGIN INSERT INTO audit"
                  " VALUES (NEW.thread_id, NEW.version, NEW.claim IS NOT NULL); END"]
AUDIT_INDEX = "CREATE INDEX by_claim ON agui_threads (claim)"
TRUSTED = ("audit_claims", "audit_created", "by_claim")


def test_trusted_objects_open_and_run_with_every_write_of_a_run(drive: Any, served: Any, tmp_path: Path) -> None:
    path = tmp_path / "threads.db"
    _store_file(path, HEADS, AUDIT_TABLE, *AUDIT_TRIGGERS, AUDIT_INDEX)
    endpoint = served(ScriptedAgent.chat())

    with SqliteStore(path, trusted_objects=TRUSTED) as store, drive.client(endpoint.url, store=store) as client:
        thread = client.thread("r")
        thread.run("hi")
        thread.run("again")
        stored = store.load("r")

    assert stored is not None and stored.claim is None and len(endpoint.received) == 2
    # Each turn: a claim (the first one creates the row), then the run's changes with the claim let go.
    rows = query(path, "SELECT version, claimed FROM audit WHERE thread_id = 'r' ORDER BY version")
    assert [claimed for _version, claimed in rows] == [1, 0, 1, 0] and rows[-1][0] == stored.version


def test_an_untrusted_object_beside_trusted_ones_is_still_refused_naming_it_alone(tmp_path: Path) -> None:
    path = tmp_path / "threads.db"
    _store_file(path, HEADS, AUDIT_TABLE, *AUDIT_TRIGGERS, AUDIT_INDEX,
                f'CREATE INDEX "{HOSTILE_NAME}" ON agui_threads ({MEGABYTE})')
    before = _file(path)

    with pytest.raises(StoreError) as caught:
        SqliteStore(path, trusted_objects=TRUSTED)

    said = str(caught.value)
    assert caught.value.code == "STORE-SCHEMA"
    assert f"the indexes {quoted_name(HOSTILE_NAME, 40)}," in said, said
    assert not any(name in said for name in TRUSTED) and "zeroblob" not in said
    assert _file(path) == before


def test_trusted_objects_added_after_open_pass_the_check_before_each_write(tmp_path: Path) -> None:
    path = tmp_path / "threads.db"
    with pytest.warns(AguiWarning), SqliteStore(path, trusted_objects=TRUSTED) as store:
        store.save("t", small(1), expected_version=None)
        with closing(sqlite3.connect(path, isolation_level=None)) as other:
            for statement in (AUDIT_TABLE, *AUDIT_TRIGGERS, AUDIT_INDEX):
                other.execute(statement)
            assert store.claim("t", expected_version=1, owner="me") == 2  # (the cookie moved: judged again)
            assert query(path, "SELECT version, claimed FROM audit") == [(2, 1)]

            other.execute("CREATE TRIGGER unclaim AFTER UPDATE OF claim ON agui_threads BEGIN "
                          "UPDATE agui_threads SET claim = NULL WHERE thread_id = NEW.thread_id; END")
            with pytest.raises(StoreError) as caught:
                store.release("t", claimed_version=2, owner="me")

    said = str(caught.value)
    assert caught.value.code == "STORE-SCHEMA" and "changed after the store opened it" in said
    assert "the triggers 'unclaim'," in said and "audit_claims" not in said, said
    assert query(path, "SELECT version, claim FROM agui_threads") == [(2, "me")]


def test_a_trusted_name_on_none_of_the_tables_is_warned_about_and_the_store_opens(tmp_path: Path) -> None:
    # (the audit table's own trigger carries a trusted name, but on a table not the store's)
    path = tmp_path / "threads.db"
    _store_file(path, HEADS, AUDIT_TABLE, "CREATE TRIGGER by_claim AFTER INSERT ON audit BEGIN SELECT 1; END")

    with pytest.warns(AguiWarning) as warned, SqliteStore(path, trusted_objects=("by_claim",)) as store:
        assert store.claim("t", expected_version=1, owner="me") == 2

    (said,) = [str(w.message) for w in warned]
    assert said.startswith("[STORE-TRUSTED-ABSENT]") and str(path) in said, said
    assert "trusted_objects names 'by_claim', but no trigger or index on its tables" in said, said


def test_a_misspelt_trusted_name_leaves_the_object_refused_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "threads.db"
    _store_file(path, HEADS, AUDIT_INDEX)

    with pytest.raises(StoreError) as caught:
        SqliteStore(path, trusted_objects=("By_Claim",))  # (compared exactly, as the file spells it)

    said = str(caught.value)
    assert caught.value.code == "STORE-SCHEMA" and "the indexes 'by_claim'," in said
    assert "trusted_objects names 'By_Claim', found on none of them" in said, said


@pytest.mark.parametrize(("trusted", "said"), [
    ("by_claim", "not the single string 'by_claim'"),
    (("agui_threads",), "not the table or SQLite object 'agui_threads'"),
    (("AGUI_THREAD_PARTS",), "not the table or SQLite object 'AGUI_THREAD_PARTS'"),
    (("sqlite_autoindex_agui_threads_1",), "not the table or SQLite object 'sqlite_autoindex_agui_threads_1'"),
    (("",), "non-empty names, not ''"),
], ids=["one-string", "head-table", "parts-table", "sqlite-own", "empty"])
def test_trusted_objects_that_would_trust_too_much_or_nothing_are_refused(tmp_path: Path, trusted: Any,
                                                                          said: str) -> None:
    path = tmp_path / "threads.db"
    with pytest.raises(ValueError) as caught:
        SqliteStore(path, trusted_objects=trusted)

    assert said in str(caught.value), str(caught.value)
    assert not path.exists()  # (refused before the file is made)


@pytest.mark.parametrize("write", ["delete", "layout-1 migration"])
def test_another_tables_foreign_key_cascades_nothing_in_a_store_write_where_sqlite_turns_them_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, write: str) -> None:
    # A SQLite built with SQLITE_DEFAULT_FOREIGN_KEYS=1 opens every connection with foreign keys on
    # (emulated: each connection sqlite3.connect makes turns them on). A table beside the store's, never
    # judged, whose foreign key references the head table then had its ON DELETE CASCADE (and its own
    # triggers) run by the store's delete, and by the DROP TABLE of a layout-1 file's migration. The
    # store's connections now turn foreign keys off themselves.
    connect = sqlite3.connect

    def foreign_keys_on(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn = connect(*args, **kwargs)
        conn.execute("PRAGMA foreign_keys = ON")
        return conn

    path = tmp_path / "threads.db"
    notes = ["CREATE TABLE notes (thread_id TEXT REFERENCES agui_threads (thread_id) ON DELETE CASCADE, note TEXT)",
             "CREATE TABLE seen (note TEXT)",
             "CREATE TRIGGER noted AFTER DELETE ON notes BEGIN INSERT INTO seen VALUES (OLD.note); END",
             "INSERT INTO notes VALUES ('t', 'kept')"]
    if write == "layout-1 migration":
        make_layout_1(path, [("t", 1, small(1), None)])
    else:
        with SqliteStore(path) as store:
            store.save("t", small(1), expected_version=None)
    with closing(sqlite3.connect(path, isolation_level=None)) as other:
        for statement in notes:
            other.execute(statement)
    monkeypatch.setattr(sqlite3, "connect", foreign_keys_on)

    with SqliteStore(path) as store:
        if write == "delete":
            store.delete("t")
        stored = store.load("t")

    assert (stored is None) if write == "delete" else (stored is not None and stored.data == small(1))
    assert query(path, "SELECT note FROM notes") == [("kept",)]
    assert query(path, "SELECT count(*) FROM seen") == [(0,)]
