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
"""

from __future__ import annotations

import pickle
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from test_sqlite_layout import make_layout_1, make_layout_2, query
from test_store_contract import small

from agui_client._inert import quoted_name
from agui_client.errors import StoreError
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
