"""A writer killed at every step of an append, and of the compaction it triggers, on RedisStore.

``step_crash_writer_redis.py`` counts the commands its store sends to Redis and SIGKILLs itself just
before command K, or just after command K answered, for K = 1, 2, ... until a writer finishes without
reaching K. Each run starts from the same thread (data plus two appended changes), with the server's
script cache emptied, so the steps include the script's ``EVALSHA`` refused as unknown, its
``SCRIPT LOAD`` and the ``EVALSHA`` again, for the append's script and the compaction's.

After every kill a fresh store loads the thread, which must be EITHER the thread before the append
(its version) OR the thread after it (one version on), whether the compaction landed or not; the
hash's counters must describe its ``c:*`` fields and its data (nothing torn); and a next append, a
claim and a release must still work on it.
"""

from __future__ import annotations

import copy
import signal
import uuid
from collections.abc import Iterator
from itertools import count
from pathlib import Path
from typing import Any

import pytest
import redis
import step_crash_writer_redis
from backendkit import small
from step_crash_writer_redis import change
from zygote import Zygote

from agui_client.stores import Compaction, RedisStore, apply_changes

__all__: list[str] = []

THREAD_ID = "step-crash"
NEVER = Compaction(min_bytes=1 << 40, ratio=1e9, max_changes=1 << 30)


def earlier_change(n: int) -> dict[str, Any]:
    return {"messagesFrom": n, "messages": [{"id": f"e{n}", "role": "user", "content": "y" * (100 * n)}],
            "set": {"state": {"earlier": n}}}


@pytest.fixture
def raw(redis_url: str) -> Iterator[redis.Redis]:
    with redis.Redis.from_url(redis_url) as client:
        yield client


def prepare(store: RedisStore, raw: redis.Redis) -> tuple[dict[str, Any], int]:
    """The thread every run starts from: data saved whole, then two appended changes. Returns its data
    and version, and empties the server's script cache."""
    store.delete(THREAD_ID)
    store.save(THREAD_ID, small(1), expected_version=None)
    store.append(THREAD_ID, earlier_change(1), expected_version=1)
    store.append(THREAD_ID, earlier_change(2), expected_version=2)
    raw.script_flush()
    return apply_changes(small(1), [earlier_change(1), earlier_change(2)]), 3


def check_counters(raw: redis.Redis, key: str) -> int:
    """The hash's counters describe its fields; returns how many changes it holds."""
    fields: dict[Any, Any] = raw.hgetall(key)
    changes = int(fields[b"changes"])
    numbers = sorted(int(field[2:]) for field in fields if field.startswith(b"c:"))
    assert numbers == list(range(1, changes + 1))
    assert int(fields[b"change_bytes"]) == sum(len(fields[b"c:%d" % n]) for n in numbers)
    assert int(fields[b"data_bytes"]) == len(fields[b"data"])
    return changes


@pytest.fixture
def writers(tmp_path: Path) -> Iterator[Zygote]:
    """The writers, each forked from one zygote (``zygote.py``): a kill costs a fork, not an interpreter."""
    with Zygote(Path(step_crash_writer_redis.__file__), tmp_path / "writers.err") as zygote:
        yield zygote


@pytest.mark.parametrize(("mode", "kind", "kill"), [
    ("append", "redis", "before"), ("append", "redis", "after"), ("compact", "redis", "before"),
    ("compact", "redis", "after"), ("compact", "redis-decoded", "after"),
])
def test_a_writer_killed_at_any_step_leaves_the_thread_before_or_after_its_append(
    redis_url: str, raw: redis.Redis, writers: Zygote, mode: str, kind: str, kill: str
) -> None:
    prefix = f"agui:test:{uuid.uuid4().hex}:"
    config = {"url": redis_url, "prefix": prefix, "decoded": kind == "redis-decoded", "thread_id": THREAD_ID,
              "mode": mode, "kill": kill}
    seen: list[tuple[str, int]] = []
    with RedisStore(redis_url, prefix=prefix, compaction=NEVER) as store:
        for at in count(1):
            before, version = prepare(store, raw)
            written = change(len(before["messages"]))
            after = apply_changes(copy.deepcopy(before), [written])
            returncode, lines = writers.run({**config, "at": at})
            stored = store.load(THREAD_ID)
            assert stored is not None
            changes = check_counters(raw, prefix + THREAD_ID)
            if returncode == 0:
                word, new_version, calls = "".join(lines).split()
                # Finished without reaching K: every step has been killed at, before or after.
                assert (word, int(new_version), int(calls)) == ("done", version + 1, at - 1)
                assert (stored.version, stored.data, stored.claim) == (version + 1, after, None)
                assert changes == (0 if mode == "compact" else 3)
                break
            assert returncode == -signal.SIGKILL, writers.stderr.read_text()
            if stored.version == version:
                assert (stored.data, changes) == (before, 2), f"killed {kill} call {at}"
                seen.append(("before", changes))
            else:
                assert (stored.version, stored.data) == (version + 1, after), f"killed {kill} call {at}"
                seen.append(("after", changes))
            assert stored.claim is None
            # The thread goes on: an append, a claim and a release, read back whole.
            follow = {"messagesFrom": 0, "messages": [], "set": {"lastOutcome": "success"}}
            appended = store.append(THREAD_ID, follow, expected_version=stored.version)
            claimed = store.claim(THREAD_ID, expected_version=appended, owner="next")
            released = store.release(THREAD_ID, claimed_version=claimed, owner="next")
            again = store.load(THREAD_ID)
            assert again is not None
            assert (again.version, again.data) == (released, apply_changes(copy.deepcopy(stored.data), [follow]))
            check_counters(raw, prefix + THREAD_ID)
        store.delete(THREAD_ID)

    # The steps, in order: the append's script refused as unknown, loaded, run; then the compaction's
    # HGETALL and its script, refused, loaded, run. A kill before the append's run leaves the thread as
    # it was; after it, the change is appended; after the compaction's run, it is folded in.
    steps = {("append", "before"): [("before", 2)] * 3,
             ("append", "after"): [("before", 2)] * 2 + [("after", 3)],
             ("compact", "before"): [("before", 2)] * 3 + [("after", 3)] * 4,
             ("compact", "after"): [("before", 2)] * 2 + [("after", 3)] * 4 + [("after", 0)]}
    assert seen == steps[mode, kill]
