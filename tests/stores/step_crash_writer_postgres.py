"""The writer ``test_step_crash_postgres.py`` kills at one chosen step of an append (and its compaction).

Run as ``python step_crash_writer_postgres.py '<json config>'``; the config names the server
(``dsn``), the ``table``, the ``thread_id``, the change to append (``turn``: :func:`change` builds it),
whether this append must trigger a compaction (``compact``), and where to die: ``kill_at`` (the
number of the statement, counted from the append's first) and ``when`` (``"before"``: just before the
statement is sent; ``"after"``: just after its reply came back).

It opens the store and loads the thread, and only then counts: every ``Connection.execute`` (the one
call through which the store talks to PostgreSQL, one statement and one round trip each) is one step.
At step ``kill_at`` it SIGKILLs itself (no cleanup, no goodbye to the server). A writer whose append
is done before that step prints ``done <steps>`` and exits 0.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from typing import Any

import psycopg
from zygote import fork_jobs

from agui_client.stores import Compaction, PostgresStore

__all__ = ["change", "main"]


def change(turn: int) -> dict[str, Any]:
    """One run's change: a message appended and fields set, as ``ThreadState.changes()`` writes them."""
    return {
        "messagesFrom": turn,
        "messages": [{"id": f"a{turn}", "role": "assistant", "content": f"answer {turn} " + "x" * 200}],
        "set": {"lastRunId": f"run-{turn}", "state": {"turn": turn}},
        "merge": {"usageByRun": {f"run-{turn}": [{"inputTokens": turn}]}},
    }


def main(config: dict[str, Any]) -> None:
    thread_id: str = config["thread_id"]
    with PostgresStore(config["dsn"], table=config["table"]) as store:
        stored = store.load(thread_id)
        assert stored is not None
        if config["compact"]:
            # Due exactly when this append makes one change more than the record holds now.
            store.compaction = Compaction(min_bytes=1 << 40, ratio=1e9, max_changes=stored.changes + 1)
        else:
            store.compaction = Compaction(min_bytes=1 << 40, ratio=1e9, max_changes=1 << 30)
        steps = 0
        execute = psycopg.Connection.execute
        kill_at, when = config["kill_at"], config["when"]

        def counted(conn: Any, *args: Any, **kwargs: Any) -> Any:
            nonlocal steps
            steps += 1
            if steps == kill_at and when == "before":
                os.kill(os.getpid(), signal.SIGKILL)
            result = execute(conn, *args, **kwargs)
            if steps == kill_at and when == "after":
                os.kill(os.getpid(), signal.SIGKILL)
            return result

        psycopg.Connection.execute = counted  # type: ignore[method-assign]
        store.append(thread_id, change(config["turn"]), expected_version=stored.version)
        psycopg.Connection.execute = execute  # type: ignore[method-assign]
    sys.stdout.write(f"done {steps}\n")
    sys.stdout.flush()


if __name__ == "__main__":
    # With a config, one writer (as by hand); without, a zygote forking one per job line (zygote.py).
    if len(sys.argv) > 1:
        main(json.loads(sys.argv[1]))
    else:
        fork_jobs(main, announce=True)
