"""The writer ``test_step_crash_sqlite.py`` kills: one append to a SqliteStore, SIGKILLed at a chosen statement.

Run as ``python step_crash_writer_sqlite.py '<json config>'``. The config names the database ``path``,
the ``thread_id``, the ``change`` to append, ``compact`` (whether this append is to trigger a
compaction: the record then holds 2 changes and the policy folds at 3), ``kill_at`` (a statement
number, counted from 1 after the thread was loaded) and ``when`` (``"before"``: SIGKILL as SQLite
starts statement ``kill_at``; ``"after"``: once the call that ran it returned to the store).

Every connection the store opens counts the statements SQLite runs (``set_trace_callback``, which
SQLite calls as a statement starts), so a step is one statement: ``BEGIN IMMEDIATE``, a ``SELECT``,
an ``INSERT``, an ``UPDATE``, ``COMMIT``. It prints, one line each, flushed:

* ``step <n> <statement>`` as statement ``n`` starts (before the kill, for ``"before"``);
* ``done <version>`` when the append returned: the run did not reach ``kill_at``.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import sys
from typing import Any

from zygote import fork_jobs

from agui_client.stores import Compaction, SqliteStore

__all__ = ["policy", "main"]


def policy(compact: bool) -> Compaction:
    """Fold at the third change (``compact``), or never."""
    return Compaction(min_bytes=1 << 40, ratio=1e9, max_changes=3 if compact else 1 << 30)


def main(config: dict[str, Any]) -> None:
    kill_at: int = config["kill_at"]
    when: str = config["when"]
    steps = 0
    armed = False

    def die() -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    def trace(statement: str) -> None:
        nonlocal steps
        if not armed:
            return
        steps += 1
        print(f"step {steps} {' '.join(statement.split())}", flush=True)
        if when == "before" and steps == kill_at:
            die()

    class Counted(sqlite3.Connection):
        """A connection that counts its statements and can die just after one returned."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.set_trace_callback(trace)

        def execute(self, *args: Any) -> sqlite3.Cursor:
            cursor = super().execute(*args)
            if armed and when == "after" and steps == kill_at:
                die()
            return cursor

    connect = sqlite3.connect

    made: dict[type, type] = {}

    def counted_connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        # (on top of the connection class the store asks for, which keeps what it knows of the connection)
        base = kwargs.pop("factory", sqlite3.Connection)
        factory = made.setdefault(base, Counted if base is sqlite3.Connection else type("Counted", (Counted, base), {}))
        return connect(*args, factory=factory, **kwargs)

    sqlite3.connect = counted_connect  # type: ignore[assignment]  # (this process only: the store's connections)
    store = SqliteStore(config["path"], compaction=policy(config["compact"]))
    stored = store.load(config["thread_id"])
    assert stored is not None
    armed = True
    version = store.append(config["thread_id"], config["change"], expected_version=stored.version)
    print(f"done {version}", flush=True)
    store.close()


if __name__ == "__main__":
    # With a config, one writer (as by hand); without, a zygote forking one per job line (zygote.py).
    if len(sys.argv) > 1:
        main(json.loads(sys.argv[1]))
    else:
        fork_jobs(main, announce=True)
