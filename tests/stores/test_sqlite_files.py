"""``SqliteStore`` given a path it cannot use as a store: a ``StoreError`` that says what the file is and
what to do, never sqlite3's bare words, and nothing written to a file that is not a store.

Before: a NUL in the path was a bare ``ValueError`` ("embedded null character"); another application's
database was taken over (our tables made beside its own, its ``user_version`` set to ours); a file with a
table of our name but other columns failed with "table agui_threads already exists" or "no such column";
a directory, a missing directory or a read-only file with "unable to open database file" or "attempt
to write a readonly database" alone.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest

from agui_client.errors import StoreError
from agui_client.stores import SqliteStore

__all__: list[str] = []

NOT_A_STORE = ("the file is a SQLite database but not an agui_client store ({why}); nothing was changed in it. "
               "Give SqliteStore a file of its own: a new path, where it creates the file and its tables")


def _database(path: Path, *statements: str) -> None:
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        for statement in statements:
            conn.execute(statement)


def _schema(path: Path) -> list[tuple[str, str]]:
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute("SELECT name, sql FROM sqlite_master ORDER BY name").fetchall()


def _user_version(path: Path) -> int:
    with closing(sqlite3.connect(path)) as conn:
        version: int = conn.execute("PRAGMA user_version").fetchone()[0]
        return version


def _journal_mode(path: Path) -> str:
    """The file's journal mode, which a database keeps in its header (``wal`` stays set once set)."""
    with closing(sqlite3.connect(path)) as conn:
        mode: str = conn.execute("PRAGMA journal_mode").fetchone()[0]
        return mode


def _refused(path: str | bytes | Path) -> str:
    with pytest.raises(StoreError) as caught:
        SqliteStore(path)
    assert caught.value.thread_id is None
    return str(caught.value)


def test_a_path_holding_a_nul_is_a_store_error_naming_it_escaped(tmp_path: Path) -> None:
    path = f"{tmp_path}/threads\x00.db"

    said = _refused(path)

    assert said == (f"SQLite store {str(path)!r}: the path holds a NUL character, which no file name can; "
                    "nothing was opened")
    assert "\x00" not in said and list(tmp_path.iterdir()) == []


def test_a_path_that_is_a_url_with_credentials_is_named_without_them(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # (a PostgreSQL DSN handed to the wrong store: a relative path, in a directory that does not exist)
    monkeypatch.chdir(tmp_path)

    said = _refused("postgresql://app:s3cret-pw@db.internal/app")

    assert "s3cret-pw" not in said and "app:" not in said
    assert said.startswith("SQLite store failed for 'postgresql://db.internal/app': unable to open database file; "
                           "check that the file's directory exists"), said


@pytest.mark.parametrize(("statements", "why"), [
    (["CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)", "CREATE TABLE customers (id, name)"],
     "it holds the tables 'customers', 'invoices' and no agui_client table layout"),
    (["CREATE TABLE agui_threads (id INTEGER PRIMARY KEY, body TEXT)"],
     "it holds the tables 'agui_threads' and no agui_client table layout"),
    (["CREATE TABLE agui_threads (id INTEGER PRIMARY KEY, body TEXT)", "PRAGMA user_version = 3"],
     "its agui_threads table has the columns 'body', 'id', not those of agui_client's table layout 3"),
    (["CREATE TABLE agui_threads (thread_id TEXT PRIMARY KEY, version INTEGER, claim TEXT, format INTEGER,"
      " changes INTEGER, change_bytes INTEGER, data_bytes INTEGER, record_id TEXT)", "PRAGMA user_version = 3"],
     "its user_version is 3, agui_client's table layout 3, but it has no agui_thread_parts table"),
    (["CREATE TABLE settings (key, value)", "PRAGMA user_version = 42"],
     "its user_version is 42, which no agui_client table layout uses, and it holds the tables 'settings'"),
])
def test_another_applications_database_is_refused_and_left_as_it_was(tmp_path: Path, statements: list[str],
                                                                     why: str) -> None:
    path = tmp_path / "app.db"
    _database(path, *statements)
    schema, version = _schema(path), _user_version(path)
    assert _journal_mode(path) == "delete"

    said = _refused(path)

    assert said == f"SQLite store {str(path)!r}: " + NOT_A_STORE.format(why=why)
    assert (_schema(path), _user_version(path)) == (schema, version)  # (no table made, its number kept)
    # (nor its journal mode: WAL, set in the file's header, would be kept after the store let go, and
    # changes how the application's own SQLite reads and writes it, or whether an older one can)
    assert _journal_mode(path) == "delete"


def test_a_store_file_and_a_new_file_still_open(tmp_path: Path) -> None:
    # (an empty database, as another tool may create the file first, is a new file: the store makes its tables)
    empty = tmp_path / "empty.db"
    _database(empty, "PRAGMA user_version = 0")
    for path in (tmp_path / "new.db", empty):
        with SqliteStore(path) as store:
            store.save("t", {"n": 1}, expected_version=None)
        with SqliteStore(path) as store:
            loaded = store.load("t")
            assert loaded is not None and loaded.data == {"n": 1}


def test_a_bytes_path_opens_the_file_it_names_as_sqlite3_does(tmp_path: Path) -> None:
    # (bytes as os.listdir(b".") hands them, including a name that is not valid UTF-8; before, a bytes
    # path ended in a TypeError from a string check deep inside the constructor)
    for name in (b"threads.db", b"caf\xe9.db"):
        path = os.fsencode(tmp_path) + b"/" + name
        with SqliteStore(path) as store:
            store.save("t", {"n": 1}, expected_version=None)
        assert name in os.listdir(os.fsencode(tmp_path))
        with SqliteStore(Path(os.fsdecode(path))) as store:
            loaded = store.load("t")
            assert loaded is not None and loaded.data == {"n": 1}


def test_a_bytes_path_holding_a_nul_is_refused_as_a_text_one_is(tmp_path: Path) -> None:
    said = _refused(os.fsencode(tmp_path) + b"/threads\x00.db")

    assert said.startswith("SQLite store ") and "the path holds a NUL character" in said


def test_a_directory_is_refused_saying_it_is_one(tmp_path: Path) -> None:
    said = _refused(tmp_path)

    assert said == (f"SQLite store failed for {str(tmp_path)!r}: unable to open database file; the path is a "
                    "directory: name a file (in that directory, say)")


def _as_another_user(call: Callable[[], str]) -> str:
    """What ``call`` returns in a process that is not root (a forked child that gave root up), for a
    file's permissions to apply; ``call`` itself when the tests do not run as root."""
    if os.geteuid() != 0:
        return call()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # (the child: its answer, or its error, goes back through the pipe)
        try:
            os.close(read)
            try:
                os.setgid(65534)
                os.setuid(65534)
                said = call()
            except BaseException as exc:  # noqa: BLE001 - reported to the parent, which asserts
                said = f"{type(exc).__name__}: {exc}"
            os.write(write, said.encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        said = pipe.read().decode()
    os.waitpid(pid, 0)
    return said


def test_a_store_file_this_process_cannot_write_is_refused_saying_so() -> None:
    # (a directory of its own, readable by the user the child becomes: pytest's are its owner's alone)
    where = Path(tempfile.mkdtemp(prefix="agui-readonly-"))
    try:
        path = where / "threads.db"
        with SqliteStore(path) as store:
            store.save("t", {"n": 1}, expected_version=None)
        path.chmod(0o444)
        where.chmod(0o555)

        def open_it() -> str:
            try:
                SqliteStore(path).close()
            except StoreError as exc:
                return str(exc)
            return "opened"

        said = _as_another_user(open_it)
    finally:
        where.chmod(0o755)
        shutil.rmtree(where)

    assert said == (f"SQLite store failed for {str(path)!r}: attempt to write a readonly database; this process "
                    "cannot write the file, or the directory it is in (SQLite writes its -wal and -shm files "
                    "there): a store writes on every run, so give it a file and a directory it can write"), said
