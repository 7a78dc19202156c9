"""The writer ``test_step_crash_redis.py`` kills at each step of an append and of a compaction.

Run as ``python step_crash_writer_redis.py '<json config>'``; the config names the server (``url``,
``prefix``, ``decoded`` for a ``decode_responses=True`` client), the ``thread_id``, the ``mode``
(``append``: the append alone; ``compact``: a policy that makes exactly this append fold the record),
and where to die: ``kill`` (``before`` or ``after``) call number ``at``. Every command the store
sends goes through the client's ``execute_command``, so counting those counts the store's round trips
to Redis (a script call that finds the script missing from the server's cache is three: the
``EVALSHA`` refused, ``SCRIPT LOAD``, the ``EVALSHA`` again). The writer SIGKILLs itself just before
sending call ``at`` or just after its reply (or error reply) came back, or, when the append and its compaction take
fewer calls, prints ``done <version> <calls>`` and exits.

It loads the thread first (not counted) and appends :func:`change` at the version it found.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Callable
from typing import Any

import redis
from zygote import fork_jobs

from agui_client.stores import Compaction, RedisStore

__all__ = ["change", "main"]


def change(n: int) -> dict[str, Any]:
    """The change the writer appends to a thread of ``n`` messages."""
    return {"messagesFrom": n, "messages": [{"id": f"w{n}", "role": "assistant", "content": f"written {n} \u00e9"}],
            "set": {"lastRunId": f"run-w{n}", "state": {"written": n}}, "merge": {"usageByRun": {f"run-w{n}": [n]}}}


def main(config: dict[str, Any]) -> None:
    client = redis.Redis.from_url(config["url"], decode_responses=config["decoded"])
    store = RedisStore(client, prefix=config["prefix"])
    stored = store.load(config["thread_id"])
    assert stored is not None
    never = Compaction(min_bytes=1 << 40, ratio=1e9, max_changes=1 << 30)
    # Due when the record holds one more change than now: exactly after this append.
    store.compaction = (Compaction(min_bytes=1 << 40, ratio=1e9, max_changes=stored.changes + 1)
                        if config["mode"] == "compact" else never)
    inner: Callable[..., Any] = client.execute_command
    calls = 0

    def execute_command(*args: Any, **options: Any) -> Any:
        nonlocal calls
        calls += 1
        if config["kill"] == "before" and calls == config["at"]:
            os.kill(os.getpid(), signal.SIGKILL)
        try:
            return inner(*args, **options)
        finally:
            # (after the reply came back, an error reply such as NOSCRIPT as well)
            if config["kill"] == "after" and calls == config["at"]:
                os.kill(os.getpid(), signal.SIGKILL)

    client.execute_command = execute_command  # type: ignore[method-assign]
    version = store.append(config["thread_id"], change(len(stored.data["messages"])),
                           expected_version=stored.version)
    sys.stdout.write(f"done {version} {calls}\n")
    sys.stdout.flush()
    store.close()
    client.close()


if __name__ == "__main__":
    # With a config, one writer (as by hand); without, a zygote forking one per job line (zygote.py).
    if len(sys.argv) > 1:
        main(json.loads(sys.argv[1]))
    else:
        fork_jobs(main, announce=True)
