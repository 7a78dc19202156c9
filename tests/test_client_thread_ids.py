"""``client.thread_ids()``: the past conversations a client's store holds, from both shells.

The async shell reads the store in a worker thread (as ``load_thread`` does), so a listing from SQLite,
Redis or PostgreSQL never blocks the event loop, and a cancelled listing returns once its read ended.
The CLI's thread pickers (``agui run`` and ``agui chat`` with ``--thread-file``) list through it too.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from clikit import Ran, agui_here
from storekit import BareStore

from agui_client import AgentClient, AsyncAgentClient
from agui_client.errors import StoreError
from agui_client.stores import MAX_LISTING_PAGE, MemoryStore, SqliteStore
from agui_client.testing import ScriptedAgent

__all__: list[str] = []


def test_a_client_lists_the_threads_its_runs_stored_page_by_page(drive: Any, served: Callable[[Any], Any],
                                                                 tmp_path: Path) -> None:
    endpoint = served(ScriptedAgent.chat("noted"))
    with SqliteStore(tmp_path / "threads.db") as store, drive.client(endpoint.url, store=store) as client:
        for thread_id in ["c", "a", "b"]:
            client.thread(thread_id).run(f"hello from {thread_id}")
        client.thread("never-run")  # (a thread object alone stores nothing)

        everything = client.thread_ids()
        first = client.thread_ids(limit=2)
        rest = client.thread_ids(after=first[-1], limit=2)
        store.delete("b")
        after_gone = client.thread_ids(after="b")

    assert everything == ["a", "b", "c"]
    assert (first, rest) == (["a", "b"], ["c"])
    assert after_gone == ["c"]


def test_a_client_of_the_default_memory_store_lists_too(drive: Any, served: Callable[[Any], Any]) -> None:
    endpoint = served(ScriptedAgent.chat("noted"))
    with drive.client(endpoint.url) as client:
        assert client.thread_ids() == []
        thread = client.thread()
        thread.run("hi")
        assert client.thread_ids() == [thread.id]




def test_a_store_that_cannot_list_bad_arguments_and_a_closed_client_are_refused(drive: Any,
                                                                               served: Callable[[Any], Any]) -> None:
    endpoint = served(ScriptedAgent.chat("noted"))
    with drive.client(endpoint.url, store=BareStore()) as bare:
        bare.thread("t").run("hi")  # (the bare store runs threads as before)
        with pytest.raises(TypeError) as cannot:
            bare.thread_ids()
        assert "BareStore cannot list its threads" in str(cannot.value) and "ListingStore" in str(cannot.value)

    client = drive.client(endpoint.url)
    with client:
        for bad in [{"limit": 0}, {"limit": MAX_LISTING_PAGE + 1}, {"after": 3}]:
            with pytest.raises(ValueError) as bad_argument:
                client.thread_ids(**bad)
            assert str(bad_argument.value).startswith(f"{next(iter(bad))} is ")  # (the one at fault)
    with pytest.raises(RuntimeError) as refused:
        client.thread_ids()
    assert "closed" in str(refused.value)


def test_a_failing_store_is_a_store_error_from_both_shells(drive: Any, served: Callable[[Any], Any],
                                                           tmp_path: Path) -> None:
    endpoint = served(ScriptedAgent.chat("noted"))
    store = SqliteStore(tmp_path / "threads.db")
    with drive.client(endpoint.url, store=store) as client:
        store.close()  # (the application closed the store it passed)
        with pytest.raises(StoreError) as refused:
            client.thread_ids()
        assert "closed" in str(refused.value)


class WatchedStore(MemoryStore):
    """A memory store whose listing says which thread ran it, and can be held until released."""

    def __init__(self) -> None:
        super().__init__()
        self.listed_in: list[int] = []
        self.entered = threading.Event()
        self.release = threading.Event()
        self.hold = False
        self.finished = threading.Event()

    def thread_ids(self, *, after: str | None = None, limit: int = 100) -> list[str]:
        self.listed_in.append(threading.get_ident())
        self.entered.set()
        if self.hold:
            self.release.wait()
        try:
            return super().thread_ids(after=after, limit=limit)
        finally:
            self.finished.set()


def test_the_async_client_lists_in_a_worker_thread_and_a_cancel_waits_for_the_read() -> None:
    store = WatchedStore()
    store.save("t", {"messages": []}, expected_version=None)

    async def main() -> tuple[list[str], int, bool, bool]:
        loop_thread = threading.get_ident()
        async with AsyncAgentClient("http://127.0.0.1:9/agent", store=store) as client:
            listed = await client.thread_ids()
            store.hold = True
            task = asyncio.create_task(client.thread_ids())
            await asyncio.to_thread(store.entered.wait)
            store.entered.clear()
            task.cancel()
            for _ in range(20):  # (the loop goes on serving meanwhile; the task waits for the read)
                await asyncio.sleep(0)
            waited = not task.done()
            store.release.set()
            with pytest.raises(asyncio.CancelledError):
                await task
            return listed, loop_thread, waited, store.finished.is_set()

    listed, loop_thread, waited, finished = asyncio.run(main())

    assert listed == ["t"]
    assert store.listed_in and loop_thread not in store.listed_in
    assert waited and finished


def test_the_sync_client_lists_in_the_calling_thread() -> None:
    store = WatchedStore()
    with AgentClient("http://127.0.0.1:9/agent", store=store) as client:
        assert client.thread_ids() == []
    assert store.listed_in == [threading.get_ident()]


# --------------------------------------------------------------------------------------------------
# The CLI's thread pickers list through the store
# --------------------------------------------------------------------------------------------------


def agui(*args: str) -> Ran:
    """Run ``agui ARGS`` in this process with stdin not a terminal (``clikit``: no interpreter start)."""
    return agui_here(*args)


@pytest.mark.parametrize(("command", "flag"), [("run", "--thread-id"), ("chat", "--thread")])
def test_the_cli_pickers_name_the_threads_of_a_thread_file(tmp_path: Path, command: str, flag: str) -> None:
    db = tmp_path / "t.db"
    with SqliteStore(db) as store:
        store.save("beta", {"messages": []}, expected_version=None)
        store.claim("alpha", expected_version=None, owner="someone", data={"messages": []})  # (a first run in flight)
        store.save("gone", {"messages": []}, expected_version=None)
        store.delete("gone")

    message = ["-m", "hi"] if command == "run" else []
    done = agui(command, "http://127.0.0.1:9/agent", "--thread-file", str(db), *message)

    assert done.returncode == 2, done.stderr
    assert f"holds 2 threads; pick one with {flag}: alpha, beta" in done.stderr
    assert "gone" not in done.stderr


def test_the_cli_picker_of_a_file_with_a_page_of_threads_or_more_says_so(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    SqliteStore(db).close()  # (the tables; then the rows in one transaction, rather than a fsync each)
    ids = [f"t{n:05d}" for n in range(MAX_LISTING_PAGE + 1)]
    with contextlib.closing(sqlite3.connect(db)) as conn, conn:
        rows = [(i,) for i in ids]
        conn.executemany("INSERT INTO agui_threads (thread_id, version, format) VALUES (?, 1, 2)", rows)
        conn.executemany("INSERT INTO agui_thread_parts (thread_id, seq, body) VALUES (?, 0, '{}')", rows)

    done = agui("run", "http://127.0.0.1:9/agent", "--thread-file", str(db), "-m", "hi")

    assert done.returncode == 2, done.stderr
    assert f"holds {MAX_LISTING_PAGE} or more threads; pick one with --thread-id: t00000, t00001" in done.stderr
    # (how many more is not known: never a count that contradicts "or more")
    assert done.stderr.rstrip().endswith("t00009 and more"), done.stderr


def test_the_stores_page_listing_example_runs_as_written(served: Callable[[Any], Any], tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    page = (Path(__file__).parent.parent / "docs" / "stores.md").read_text(encoding="utf-8")
    snippets = [s for s in re.findall(r"```py\n(.*?)```", page, flags=re.S) if "thread_ids" in s]
    endpoint = served(ScriptedAgent.chat("hi there"))
    monkeypatch.chdir(tmp_path)

    assert len(snippets) == 1
    exec(compile(snippets[0], "docs/stores.md", "exec"), {"__name__": "__docs__", "url": endpoint.url})

    assert capsys.readouterr().out == "support-42 2\n"
