"""The writer the crash test kills: saves one interrupted thread over and over, with growing data.

Run as ``python crash_writer.py '<json config>'``; the config names the store (``kind``: ``sqlite``,
``redis`` or ``postgres``; ``target``: the file, URL or DSN; ``prefix`` or ``table``), the
``thread_id``, an ``owner`` token and a ``seed``, and optionally ``kill_after`` and ``kill_delay``:
once it has reported ``kill_after`` writes, it arms a timer that SIGKILLs this very process
``kill_delay`` seconds after the next ``begin``, so the kill lands at a chosen offset into a save
rather than wherever the reader's reaction time puts it. It prints, one line each, flushed:

* ``begin <seq>`` just before calling ``save`` for the thread's ``seq``-th state;
* ``saved <version>`` after any write (save, claim, release) returned: that version must be durable.

The data for ``seq`` is a pure function of ``seq`` (:func:`thread_data`), so a reader can rebuild
what each version must hold; it also carries a checksum and the version the save was meant to create.
About one save in three (chosen by the seeded RNG) is followed by a claim, and a writer that finds
a claim left by a killed one releases it first, so kills also land in claims and releases.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import sys
import threading
from typing import Any

from zygote import fork_jobs

from agui_client.core.fold import ThreadState
from agui_client.stores import PostgresStore, RedisStore, SqliteStore
from agui_client.types import AssistantMessage, Interrupt, UserMessage

__all__ = ["thread_data", "checksum", "open_store", "main", "WINDOW"]

#: How many recent messages a state keeps: the data grows with ``seq`` up to this, then stays bounded.
WINDOW = 40


def _message(index: int) -> UserMessage | AssistantMessage:
    # Sizes from 100 bytes to 8 KiB, so records span many SQLite pages and some overflow chains.
    rng = random.Random(index)
    text = rng.randbytes(rng.randint(50, 4096)).hex()
    if index % 2:
        return AssistantMessage(id=f"m{index}", content=text)
    return UserMessage(id=f"m{index}", content=text)


def checksum(data: dict[str, Any]) -> str:
    """SHA-256 of the data without its ``crash`` key, over canonical JSON."""
    body = {k: v for k, v in data.items() if k != "crash"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def thread_data(seq: int, *, thread_id: str, expected_version: int) -> dict[str, Any]:
    """The dump a writer saves as the thread's ``seq``-th state, stamped with checksum and target version."""
    interrupts = [
        Interrupt(id=f"int-{seq}-a", reason="tool_approval", message=f"Approve step {seq}?",
                  response_schema={"type": "object", "properties": {"ok": {"type": "boolean"}}}),
        Interrupt(id=f"int-{seq}-b", reason="confirm", expires_at="2099-01-01T00:00:00Z"),
    ]
    thread = ThreadState(
        messages=[_message(i) for i in range(max(1, seq - WINDOW + 1), seq + 1)],
        state={"seq": seq, "history": list(range(seq % 200))},
        thread_id=thread_id, open_interrupts=interrupts, interrupted_run_id=f"run-{seq}",
    )
    data = thread.dump()
    data["crash"] = {"seq": seq, "expectedVersion": expected_version, "checksum": checksum(data)}
    return data


def open_store(config: dict[str, Any]) -> SqliteStore | RedisStore | PostgresStore:
    """The store a config names."""
    if config["kind"] == "sqlite":
        return SqliteStore(config["target"])
    if config["kind"] == "postgres":
        return PostgresStore(config["target"], table=config["table"])
    return RedisStore(config["target"], prefix=config["prefix"])


def _report(word: str, value: int) -> None:
    # One write per line, so a kill cuts at most the last line short (and never mixes two).
    sys.stdout.write(f"{word} {value}\n")
    sys.stdout.flush()


def main(config: dict[str, Any]) -> None:
    """Save the thread forever (until killed), continuing from whatever the store holds."""
    thread_id, owner = config["thread_id"], config["owner"]
    rng = random.Random(config["seed"])
    kill_after: int | None = config.get("kill_after")
    writes = 0

    def wrote(version: int) -> int:
        nonlocal writes
        _report("saved", version)
        writes += 1
        return version

    with open_store(config) as store:
        stored = store.load(thread_id)
        version: int | None = None
        seq = 0
        if stored is not None:
            version, seq = stored.version, stored.data["crash"]["seq"]
            if stored.claim is not None:
                # The previous writer died holding its claim; its "request" never went out.
                version = wrote(store.release(thread_id, claimed_version=stored.version, owner=stored.claim))
        while True:
            seq += 1
            data = thread_data(seq, thread_id=thread_id, expected_version=1 if version is None else version + 1)
            _report("begin", seq)
            if kill_after is not None and writes >= kill_after:
                kill_after = None
                timer = threading.Timer(config["kill_delay"], os.kill, (os.getpid(), signal.SIGKILL))
                timer.daemon = True
                timer.start()
            version = wrote(store.save(thread_id, data, expected_version=version))
            # Seeded, so each run claims at different points; a claim is a write that must survive too.
            if rng.random() < 1 / 3:
                version = wrote(store.claim(thread_id, expected_version=version, owner=owner))


if __name__ == "__main__":
    # With a config, one writer (as by hand); without, a zygote forking one per job line (zygote.py).
    if len(sys.argv) > 1:
        main(json.loads(sys.argv[1]))
    else:
        fork_jobs(main, announce=True)
