"""RedisStore's incremental record (issue 21): one hash per thread, the changes as ``c:<n>`` fields.

What the shared contract (``test_incremental_record.py``) cannot see from outside the store: what an
append and a claim send to Redis (the change alone, whatever the size of the thread), a record written
by the previous release as it wrote it, and a compaction that finds the record moved on (a racing
append, a thread deleted and created again) or fails, which must never lose a write or fail the append;
and the record id in the hash's ``record`` field: checked in the write's one script, absent from an
earlier release's record, sent again unchanged with a creating claim whose reply was lost.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis
from backendkit import small

from agui_client.errors import ConcurrentResume, StoreError
from agui_client.stores import STORE_FORMAT_VERSION, Compaction, RedisStore, apply_changes

__all__: list[str] = []

#: Fold after every second change, whatever its size.
EVERY_SECOND = Compaction(min_bytes=1 << 40, ratio=1e9, max_changes=2)
NEVER = Compaction(min_bytes=1 << 40, ratio=1e9, max_changes=1 << 30)


def change(n: int) -> dict[str, Any]:
    return {"messagesFrom": n, "messages": [{"id": f"a{n}", "role": "assistant", "content": f"answer {n}"}],
            "set": {"lastRunId": f"run-{n}"}}


def big(n: int) -> dict[str, Any]:
    """A thread of ``n`` messages of about 1 KiB each."""
    data = small(0)
    data["messages"] = [{"id": f"m{i}", "role": "user", "content": "x" * 1000} for i in range(n)]
    return data


@pytest.fixture
def client(redis_url: str) -> Iterator[redis.Redis]:
    with redis.Redis.from_url(redis_url) as made:
        yield made


class Recorder:
    """Wraps a client's ``execute_command``: records every command sent, and can act around one."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client
        self.calls: list[tuple[Any, ...]] = []
        self.after: Callable[[tuple[Any, ...]], None] | None = None
        inner: Callable[..., Any] = client.execute_command

        def execute_command(*args: Any, **options: Any) -> Any:
            self.calls.append(args)
            reply = inner(*args, **options)
            if self.after is not None:
                self.after(args)
            return reply

        client.execute_command = execute_command  # type: ignore[method-assign]

    def sent_bytes(self) -> int:
        return sum(len(arg) if isinstance(arg, (bytes, str)) else len(str(arg)) for call in self.calls for arg in call)


def test_an_append_and_a_claim_send_the_same_bytes_whatever_the_size_of_the_thread(
    redis_url: str, prefix: str
) -> None:
    sent: dict[int, list[int]] = {}
    for size, thread_id in ((1, "short"), (300, "longy")):
        with redis.Redis.from_url(redis_url) as client, RedisStore(client, prefix=prefix, compaction=NEVER) as store:
            store.save(thread_id, big(size), expected_version=None)
            store.append(thread_id, change(1), expected_version=1)  # (the script is loaded now)
            recorder = Recorder(client)
            store.append(thread_id, change(1), expected_version=2)
            appended = recorder.sent_bytes()
            recorder.calls.clear()
            claimed = store.claim(thread_id, expected_version=3, owner="replica-a")
            store.release(thread_id, claimed_version=claimed, owner="replica-a")
            sent[size] = [appended, recorder.sent_bytes()]

    # 300 KiB of thread or 1 KiB: the same command, the same bytes (the script's hash, the key, the change).
    assert sent[300] == sent[1]
    assert sent[300][0] < 400


def test_a_record_the_previous_release_wrote_loads_appends_and_compacts(
    redis_url: str, client: redis.Redis, prefix: str
) -> None:
    # The hash exactly as the release before the incremental record wrote it (record format 1).
    data = small(1)
    client.hset(prefix + "t", mapping={"version": 4, "data": json.dumps(data), "claim": "", "format": 1})
    with RedisStore(redis_url, prefix=prefix, compaction=EVERY_SECOND) as store:
        loaded = store.load("t")
        first = store.append("t", change(1), expected_version=4)
        between = store.load("t")
        raw_between: dict[Any, Any] = client.hgetall(prefix + "t")
        second = store.append("t", change(2), expected_version=5)
        after = store.load("t")
    raw_after: dict[Any, Any] = client.hgetall(prefix + "t")

    assert loaded is not None and (loaded.version, loaded.format, loaded.data, loaded.changes) == (4, 1, data, 0)
    assert (first, second) == (5, 6)
    assert between is not None and (between.format, between.changes) == (STORE_FORMAT_VERSION, 1)
    # The data field is untouched by the append; its size is measured on the server for the policy.
    assert raw_between[b"data"] == json.dumps(data).encode()
    assert raw_between[b"data_bytes"] == str(len(json.dumps(data))).encode()
    assert b"record" not in raw_between
    # The second append made two changes: folded into the data, the counters reset.
    expected = apply_changes(copy.deepcopy(data), [change(1), change(2)])
    assert after is not None and (after.version, after.changes, after.data) == (6, 0, expected)
    assert json.loads(raw_after[b"data"]) == expected
    assert (raw_after[b"changes"], raw_after[b"change_bytes"]) == (b"0", b"0")
    assert not [field for field in raw_after if field.startswith(b"c:")]


def test_a_save_drops_the_appended_changes(redis_url: str, client: redis.Redis, prefix: str) -> None:
    with RedisStore(redis_url, prefix=prefix, compaction=NEVER) as store:
        store.save("t", small(1), expected_version=None)
        for n in range(1, 4):
            store.append("t", change(n), expected_version=n)
        store.save("t", small(9), expected_version=4)
        stored = store.load("t")

    fields: dict[Any, Any] = client.hgetall(prefix + "t")
    assert stored is not None and (stored.version, stored.data, stored.changes) == (5, small(9), 0)
    assert not [field for field in fields if field.startswith(b"c:")]
    assert fields[b"changes"] == b"0"


def _meddle_while_folding(redis_url: str, prefix: str, meddle: Callable[[RedisStore], None]) -> tuple[int, Any]:
    """A thread saved and appended to once; the next append's compaction reads it, and ``meddle`` runs
    (another replica's writes) before the compaction writes. The append's version and the thread after."""
    with (redis.Redis.from_url(redis_url) as client,
          RedisStore(client, prefix=prefix, compaction=EVERY_SECOND) as store,
          RedisStore(redis_url, prefix=prefix, compaction=NEVER) as other):
        store.save("t", small(1), expected_version=None)
        store.append("t", change(1), expected_version=1)
        recorder = Recorder(client)

        def after(args: tuple[Any, ...]) -> None:
            if args[0] == "HGETALL":  # (the compaction's read)
                recorder.after = None
                meddle(other)

        recorder.after = after
        version = store.append("t", change(2), expected_version=2)
        return version, store.load("t")


def test_a_compaction_that_finds_a_newer_append_leaves_it_alone(redis_url: str, prefix: str) -> None:
    # Between the compaction's read and its write, another replica appends: the fold would drop that
    # append, so the compaction is skipped and the next one folds everything.
    def append(other: RedisStore) -> None:
        other.append("t", change(3), expected_version=3)

    version, raced = _meddle_while_folding(redis_url, prefix, append)

    expected = apply_changes(small(1), [change(1), change(2), change(3)])
    assert version == 3
    assert raced is not None and (raced.version, raced.changes, raced.data) == (4, 3, expected)


def test_a_compaction_never_writes_into_a_thread_created_again_meanwhile(redis_url: str, prefix: str) -> None:
    # The thread is deleted and made again, up to the very version and change count the compaction
    # read: only the record's creation token tells the two apart.
    def recreate(other: RedisStore) -> None:
        other.delete("t")
        other.save("t", small(5), expected_version=None)
        other.append("t", {**change(7), "messagesFrom": 1}, expected_version=1)
        other.append("t", {**change(8), "messagesFrom": 2}, expected_version=2)

    _version, stored = _meddle_while_folding(redis_url, prefix, recreate)

    assert stored is not None
    again = apply_changes(small(5), [{**change(7), "messagesFrom": 1}, {**change(8), "messagesFrom": 2}])
    assert (stored.version, stored.changes, stored.data) == (3, 2, again)


def test_a_compaction_that_fails_does_not_fail_the_append(
    redis_url: str, prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    with redis.Redis.from_url(redis_url) as client, RedisStore(client, prefix=prefix, compaction=EVERY_SECOND) as store:
        store.save("t", small(1), expected_version=None)
        store.append("t", change(1), expected_version=1)
        inner = client.execute_command

        def broken(*args: Any, **options: Any) -> Any:
            if args[0] == "HGETALL":
                raise redis.ConnectionError("the connection dropped")
            return inner(*args, **options)

        client.execute_command = broken
        with caplog.at_level("DEBUG", logger="agui_client.stores"):
            version = store.append("t", change(2), expected_version=2)
        client.execute_command = inner
        stored = store.load("t")

    assert version == 3
    assert stored is not None and (stored.version, stored.changes) == (3, 2)
    assert stored.data == apply_changes(small(1), [change(1), change(2)])
    assert any("compaction" in record.getMessage() and "'t'" in record.getMessage() for record in caplog.records)


def test_an_append_whose_reply_is_lost_is_not_sent_again(redis_url: str, prefix: str) -> None:
    # The script ran; its reply never came back. Sent again it would be refused by its own landing.
    with redis.Redis.from_url(redis_url) as client, RedisStore(client, prefix=prefix, compaction=NEVER) as store:
        store.save("t", small(1), expected_version=None)
        inner = client.execute_command
        sent: list[Any] = []

        def lose_reply(*args: Any, **options: Any) -> Any:
            reply = inner(*args, **options)
            if args[0] == "EVALSHA":
                sent.append(args)
                raise redis.ConnectionError("the reply was lost")
            return reply

        client.execute_command = lose_reply
        with pytest.raises(StoreError) as caught:
            store.append("t", change(1), expected_version=1)
        client.execute_command = inner
        stored = store.load("t")
        with pytest.raises(ConcurrentResume):
            store.append("t", change(1), expected_version=1)

    assert caught.value.thread_id == "t" and isinstance(caught.value.__cause__, redis.ConnectionError)
    assert len(sent) == 1
    assert stored is not None and (stored.version, stored.changes) == (2, 1)


def test_a_record_with_a_missing_change_field_is_refused(redis_url: str, client: redis.Redis, prefix: str) -> None:
    with RedisStore(redis_url, prefix=prefix, compaction=NEVER) as store:
        store.save("t", small(1), expected_version=None)
        store.append("t", change(1), expected_version=1)
        store.append("t", change(2), expected_version=2)
        client.hdel(prefix + "t", "c:1")
        with pytest.raises(StoreError) as caught:
            store.load("t")

    assert caught.value.thread_id == "t"
    assert "c:1" in str(caught.value)


@pytest.mark.parametrize("stored_id", [None, b""])
def test_a_record_without_an_id_loads_and_works_for_writers_that_name_none(
    redis_url: str, client: redis.Redis, prefix: str, stored_id: bytes | None
) -> None:
    # A hash an earlier release wrote: no ``record`` field (format 1), or an empty one, is no id.
    fields: dict[bytes, bytes] = {b"version": b"4", b"data": json.dumps(small(1)).encode(), b"claim": b"",
                                  b"format": b"1"}
    if stored_id is not None:
        fields[b"record"] = stored_id
    for field, value in fields.items():
        client.hset(prefix + "t", field, value)
    with RedisStore(redis_url, prefix=prefix, compaction=NEVER) as store:
        loaded = store.load("t")
        with pytest.raises(ConcurrentResume) as refused:
            store.append("t", change(1), expected_version=4, record_id="some-record")
        assert refused.value.thread_id == "t" and "deleted and created again" in str(refused.value)
        untouched: dict[Any, Any] = client.hgetall(prefix + "t")
        appended = store.append("t", change(1), expected_version=4)
        claimed = store.claim("t", expected_version=appended, owner="a")
        released = store.release("t", claimed_version=claimed, owner="a")
        saved = store.save("t", small(2), expected_version=released)
        after = store.load("t")
    raw_after: dict[Any, Any] = client.hgetall(prefix + "t")

    assert loaded is not None and (loaded.version, loaded.record_id) == (4, None)
    assert (refused.value.expected_version, refused.value.actual_version) == (4, 4)
    assert untouched == fields
    assert (appended, claimed, released, saved) == (5, 6, 7, 8)
    # The writes keep the record as it was, without an id: none is made up for it.
    assert after is not None and (after.version, after.data, after.record_id) == (8, small(2), None)
    assert raw_after.get(b"record", b"") == b""


def test_a_stale_write_is_refused_by_the_one_script_that_would_have_written(
    redis_url: str, client: redis.Redis, prefix: str
) -> None:
    # The record id is checked with the version, in the append's one script: no extra read, and a
    # refused append leaves the hash exactly as it was.
    with RedisStore(client, prefix=prefix, compaction=NEVER) as store:
        store.save("t", small(1), expected_version=None, record_id="old")
        store.delete("t")
        store.save("t", small(2), expected_version=None, record_id="new")
        store.append("t", change(1), expected_version=1, record_id="new")  # (the script is loaded now)
        before: dict[Any, Any] = client.hgetall(prefix + "t")
        recorder = Recorder(client)
        with pytest.raises(ConcurrentResume) as refused:
            store.append("t", change(2), expected_version=2, record_id="old")
        assert refused.value.thread_id == "t" and "deleted and created again" in str(refused.value)
        sent = [call[0] for call in recorder.calls]
        recorder.calls.clear()
        assert store.append("t", change(2), expected_version=2, record_id="new") == 3

    assert sent == ["EVALSHA"]
    assert [call[0] for call in recorder.calls] == ["EVALSHA"]
    assert before[b"record"] == b"new" and client.hgetall(prefix + "t")[b"record"] == b"new"
    assert client.hget(prefix + "t", "version") == b"3"


@pytest.mark.parametrize("record_id", [None, "mine"])
def test_a_creating_claim_whose_reply_is_lost_is_sent_again_with_the_same_record_id(
    redis_url: str, prefix: str, record_id: str | None
) -> None:
    with redis.Redis.from_url(redis_url) as client, RedisStore(client, prefix=prefix, compaction=NEVER) as store:
        store.claim("warm", expected_version=None, owner="a", data=small(0))  # (the script is loaded now)
        inner = client.execute_command
        sent: list[Any] = []

        def lose_first_reply(*args: Any, **options: Any) -> Any:
            reply = inner(*args, **options)
            if args[0] == "EVALSHA":
                sent.append(args)
                if len(sent) == 1:
                    raise redis.ConnectionError("the reply was lost")
            return reply

        client.execute_command = lose_first_reply
        version = store.claim("t", expected_version=None, owner="a", data=small(1), record_id=record_id)
        client.execute_command = inner
        stored = store.load("t")

    # Sent twice, word for word: the second finds the first one's claim, of its own record, and takes it.
    assert version == 0 and len(sent) == 2 and sent[0] == sent[1]
    assert stored is not None and (stored.version, stored.claim, stored.data) == (0, "a", small(1))
    assert stored.record_id == (record_id or sent[0][-2]) and stored.record_id is not None


def test_a_record_without_a_format_field_is_format_1_to_the_script_and_to_load(
    redis_url: str, client: redis.Redis, prefix: str
) -> None:
    # (a record another tool wrote without the field: the write script reads it as format 1, and so
    # does a load; they used to disagree, a load saying 2)
    client.hset(prefix + "t", mapping={"version": 1, "data": json.dumps({"messages": []}), "claim": ""})
    with RedisStore(redis_url, prefix=prefix, compaction=NEVER) as store:
        loaded = store.load("t")
        store.claim("t", expected_version=1, owner="a")  # (a claim keeps the record's format)
        claimed = store.load("t")
        store.save("t", {"messages": []}, expected_version=2)
        saved = store.load("t")

    assert loaded is not None and claimed is not None and saved is not None
    assert (loaded.format, claimed.format, saved.format) == (1, 1, STORE_FORMAT_VERSION)


@pytest.mark.parametrize("decoded", [False, True])
def test_a_record_whose_fields_are_not_utf8_is_a_store_error_on_load_and_on_a_refused_write(
    redis_url: str, client: redis.Redis, prefix: str, decoded: bool
) -> None:
    # (a hash another tool wrote with binary fields: every way of reading it back names the thread)
    client.hset(prefix + "t", mapping={"version": 3, "data": "{}", "claim": b"\xff\xfe", "format": 2,
                                       "record": b"\xff\xfe"})
    reader = redis.Redis.from_url(redis_url, decode_responses=decoded)
    with RedisStore(reader, prefix=prefix, compaction=NEVER) as store:
        with pytest.raises(StoreError) as loading:
            store.load("t")
        with pytest.raises(StoreError) as writing:
            store.save("t", {"messages": []}, expected_version=1, record_id="mine")
    reader.close()

    assert loading.value.thread_id == writing.value.thread_id == "t"
    assert client.hget(prefix + "t", "version") == b"3"


def test_a_data_field_that_is_not_utf8_is_refused_without_quoting_it(redis_url: str, client: redis.Redis,
                                                                     prefix: str) -> None:
    # A bytes client reads the field as bytes; its decode error's repr held every byte of the field (a
    # thread's content, megabytes of it) in the StoreError's message.
    with RedisStore(redis_url, prefix=prefix) as store:
        store.save("t", small(1), expected_version=None)
        client.hset(prefix + "t", "data", b'{"secret": "hunter2 \xff' + b"x" * (1 << 20) + b'"}')
        with pytest.raises(StoreError) as caught:
            store.load("t")

    assert caught.value.thread_id == "t"
    assert "not UTF-8" in str(caught.value) and "hunter2" not in str(caught.value) and len(str(caught.value)) < 300


@pytest.mark.parametrize("version", ["x", "-5", "1.5"])
def test_a_write_to_a_record_whose_version_is_damaged_says_so_not_that_the_thread_is_gone(
        redis_url: str, client: redis.Redis, prefix: str, version: str) -> None:
    # The script read an unparsable version as none, and a negative one was taken for "no record":
    # the write was refused as a ConcurrentResume saying the thread "is not in the store".
    with RedisStore(redis_url, prefix=prefix) as store:
        store.save("t", small(1), expected_version=None)
        client.hset(prefix + "t", "version", version)
        with pytest.raises(StoreError) as caught:
            store.claim("t", expected_version=1, owner="me")

    assert caught.value.thread_id == "t" and "damaged" in str(caught.value), str(caught.value)
    assert client.hget(prefix + "t", "version") == version.encode()


def test_a_thread_id_whose_key_is_the_listings_own_is_refused_and_the_listing_survives(
        redis_url: str, client: redis.Redis, prefix: str) -> None:
    # With the index inside the prefix (an index_key under it, or prefix=""), a thread id could name
    # the index's key or its mark: deleting thread "ids" deleted the listing of every thread.
    index = prefix + "ids"
    with RedisStore(redis_url, prefix=prefix, index_key=index) as store:
        store.save("a", small(1), expected_version=None)
        assert store.thread_ids() == ["a"]
        calls: list[tuple[Callable[..., object], tuple[Any, ...], dict[str, Any]]] = [
            (store.delete, (), {}), (store.load, (), {}), (store.save, (small(1),), {"expected_version": None})]
        for thread_id in ("ids", "ids:complete"):
            for call, args, kwargs in calls:
                with pytest.raises(StoreError) as caught:
                    call(thread_id, *args, **kwargs)
                assert caught.value.thread_id == thread_id and "listing" in str(caught.value), call
        assert store.thread_ids() == ["a"]
        assert client.type(index) == b"zset"
