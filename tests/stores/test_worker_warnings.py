"""Where a warning said while the async client reads its store in a worker thread points.

A warning said through :mod:`warnings` names the first line outside the package. The async client
reads a store in a worker thread, whose stack starts in ``concurrent/futures``: the warning a loaded
record gave (a message id repeated, ``MS-01``) named the executor's line, not the application's
``await``. Driven with ``asyncio.run`` here, not the ``drive`` fixture: its portal awaits on a thread
of its own, so the line that awaited is the portal's, never the test's.
"""

from __future__ import annotations

import asyncio
import sys
import warnings
from pathlib import Path

from agui_client import AguiWarning, AsyncAgentClient, ThreadState
from agui_client.stores import SqliteStore
from agui_client.types import UserMessage

__all__: list[str] = []


def _line() -> int:
    """The line of the call to this function."""
    return sys._getframe(1).f_lineno


def _store_repeating_an_id(tmp_path: Path) -> SqliteStore:
    """A SQLite store holding thread ``t``, whose record repeats a message id (loaded, it warns MS-01)."""
    store = SqliteStore(str(tmp_path / "threads.db"))
    record = ThreadState(thread_id="t", messages=[UserMessage(id="u1", content="hi")]).dump()
    record["messages"] = record["messages"] * 2
    store.save("t", record, expected_version=None)
    return store


def _shown(caught: list[warnings.WarningMessage]) -> list[tuple[str, int]]:
    return [(w.filename, w.lineno) for w in caught if issubclass(w.category, AguiWarning) and "MS-01" in str(w.message)]


def test_an_async_load_thread_warning_names_the_line_that_awaited(tmp_path: Path) -> None:
    store = _store_repeating_an_id(tmp_path)
    awaited_at: list[int] = []

    async def load() -> None:
        async with AsyncAgentClient("http://127.0.0.1:9/agent", store=store) as client:
            awaited_at.append(_line() + 1)
            await client.load_thread("t")

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        asyncio.run(load())
    store.close()
    assert _shown(caught) == [(__file__, awaited_at[0])]

