"""What one store kind does of its own: SQLite's file and journal, Redis's keys and clients, and the
stores' imports without their extras."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
import redis
from backendkit import (
    small,
)

from agui_client.errors import StoreError
from agui_client.stores import (
    RedisStore,
    SqliteStore,
)
from agui_client.stores.base import Head, check_write

__all__: list[str] = []


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


@pytest.mark.parametrize(("extra", "module", "store", "target"), [
    ("postgres", "psycopg", "PostgresStore", "'host=127.0.0.1 port=1'"),
    ("redis", "redis", "RedisStore", "'redis://127.0.0.1:1/0'"),
])
def test_the_stores_import_without_their_extra(extra: str, module: str, store: str, target: str) -> None:
    # A None entry in sys.modules makes the import fail as if the package were not installed.
    code = (
        f"import sys; sys.modules[{module!r}] = None\n"
        "import agui_client, agui_client.stores\n"
        f"from agui_client.stores import MemoryStore, {store}\n"
        "MemoryStore().close()\n"
        "try:\n"
        f"    {store}({target})\n"
        "except ImportError as exc:\n"
        "    print('ImportError:', exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)

    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == f"ImportError: {store} needs the {extra} extra: pip install 'agui-client[{extra}]'\n"
