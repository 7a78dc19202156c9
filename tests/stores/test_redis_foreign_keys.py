"""``RedisStore`` and a key of another kind under one of its names, written after the store opened (another
application's key, one written by hand), on the session's real redis-server.

Before: a write script updated the thread's hash first and restated its listing entry last, so a string
under the listing index's name failed the script after the hash was written (Redis keeps what a script
wrote before its error): a claim reported as failed had landed (the thread claimed, its owner told
nothing was claimed), a save or an append reported as failed had moved the version on, and a delete
reported as failed had deleted the thread. Now the index entry is each script's first write, and the
failure names the key and what it holds.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import redis
from backendkit import small

from agui_client.errors import StoreError
from agui_client.stores import RedisStore

__all__: list[str] = []


def test_a_string_under_the_index_name_fails_every_write_before_it_writes_and_names_the_key(
        redis_url: str, raw_redis: redis.Redis, prefix: str) -> None:
    index = f"agui-ids:{prefix}"
    with RedisStore(redis_url, prefix=prefix) as store:
        store.save("t", small(1), expected_version=None)
        assert store.claim("t", expected_version=1, owner="me") == 2
        raw_redis.delete(index)
        raw_redis.set(index, "another application's value")
        before = raw_redis.hgetall(f"{prefix}t")
        writes: dict[str, Callable[[], object]] = {
            "save": lambda: store.save("t", small(2), expected_version=2),
            "append": lambda: store.append("t", {"set": {"state": {"n": 2}}}, expected_version=2),
            "release": lambda: store.release("t", claimed_version=2, owner="me"),
            "delete": lambda: store.delete("t"),
            "create": lambda: store.claim("new", expected_version=None, owner="me", data=small(1)),
            "listing": lambda: store.thread_ids(),
        }
        refused = {}
        for name, write in writes.items():
            with pytest.raises(StoreError) as caught:
                write()
            refused[name] = caught.value
        after = raw_redis.hgetall(f"{prefix}t")
        created = raw_redis.exists(f"{prefix}new")
        raw_redis.delete(index)
        released = store.release("t", claimed_version=2, owner="me")

    assert after == before and created == 0
    for name, error in refused.items():
        said = str(error)
        assert f"key '{index}' holds a 'string', not the listing's index (a zset)" in said, (name, said)
        assert "nothing was written" in said and error.thread_id == {"listing": None, "create": "new"}.get(name, "t")
        assert "another application's value" not in said
    assert released == 3


def test_a_string_under_a_threads_key_is_named_by_a_load_and_a_write_and_left_as_it_is(
        redis_url: str, raw_redis: redis.Redis, prefix: str) -> None:
    with RedisStore(redis_url, prefix=prefix) as store:
        store.save("t", small(1), expected_version=None)
        raw_redis.delete(f"{prefix}t")
        raw_redis.set(f"{prefix}t", "another application's value")
        refused = []
        for call in (lambda: store.load("t"), lambda: store.claim("t", expected_version=1, owner="me"),
                     lambda: store.save("t", small(2), expected_version=None)):
            with pytest.raises(StoreError) as caught:
                call()
            refused.append(caught.value)

    assert raw_redis.get(f"{prefix}t") == b"another application's value"
    for error in refused:
        assert f"key '{prefix}t' holds a 'string', not the thread record (a hash)" in str(error), str(error)
        assert error.thread_id == "t"
