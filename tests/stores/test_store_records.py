"""The thread-store contract, continued: what a record holds and how it is written, bad data refused
or reported, delete and close, run against every store (see test_store_contract.py)."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from backendkit import (
    Backend,
    interrupted_thread,
    plain,
    small,
    sqlite_backend,
)

from agui_client.core.fold import ThreadState
from agui_client.errors import ConcurrentResume, StoreError
from agui_client.stores import (
    STORE_FORMAT_VERSION,
    MemoryStore,
    PostgresStore,
    RedisStore,
    SqliteStore,
    StoredThread,
    ThreadStore,
)
from agui_client.types import (
    UserMessage,
)

__all__: list[str] = []


# --------------------------------------------------------------------------------------------------
# Format, delete, close, bad data
# --------------------------------------------------------------------------------------------------


def test_the_record_format_is_stored_with_the_record(backend: Backend) -> None:
    backend.store.save("t", small(1), expected_version=None)

    stored = backend.store.load("t")

    assert stored is not None
    assert stored.format == STORE_FORMAT_VERSION == 2
    assert backend.raw_format("t") == STORE_FORMAT_VERSION


def test_a_record_of_a_newer_format_is_neither_read_nor_overwritten(backend: Backend) -> None:
    backend.store.save("t", small(1), expected_version=None)
    backend.set_raw("t", "format", STORE_FORMAT_VERSION + 1)

    with pytest.raises(StoreError) as on_load:
        backend.store.load("t")
    with pytest.raises(StoreError) as on_save:
        backend.store.save("t", small(2), expected_version=1)
    with pytest.raises(StoreError) as on_claim:
        backend.store.claim("t", expected_version=1, owner="a")

    assert on_load.value.thread_id == on_save.value.thread_id == on_claim.value.thread_id == "t"
    assert backend.raw_format("t") == STORE_FORMAT_VERSION + 1


def test_an_unreadable_record_is_a_store_error(backend: Backend) -> None:
    backend.store.save("t", small(1), expected_version=None)
    backend.set_raw("t", "data", '{"messages": [')

    with pytest.raises(StoreError) as caught:
        backend.store.load("t")

    assert caught.value.thread_id == "t"
    # (where the text breaks, said in the message; the parser's error, which holds the whole record in its
    # .doc, is neither the cause nor the context)
    assert str(caught.value).startswith("thread 't': stored data is not JSON: ")
    assert "at character 14" in str(caught.value)
    assert caught.value.__cause__ is None and caught.value.__context__ is None


def test_integers_beyond_64_bits_come_back_exact(store: ThreadStore) -> None:
    # orjson reads an integer below -2**63 (19 digits) as a float, and refuses one too large for a
    # double (309+ digits) outright: a thread holding either in its state became inexact, or could
    # never be opened again.
    state = {"below": -9223372036854775809, "nines": -9999999999999999999, "huge": 10**309, "f": 1.5,
             "edge": -9223372036854775808}
    store.save("t", ThreadState(state=state).dump(), expected_version=None)

    stored = store.load("t")

    assert stored is not None and stored.data["state"] == state
    assert all(type(stored.data["state"][k]) is int for k in ("below", "nines", "huge", "edge"))


@pytest.mark.parametrize(("field", "value"), [
    # (a message without a string role is dropped with MS-05, as one of an unknown role is, since the
    # nineteenth round's fuzzer: a message of a known role with an id that is not a string is damage)
    ("messages", 5), ("messages", [{"id": 1, "role": "user", "content": "hi"}]), ("openInterrupts", [5]),
    ("usageByRun", []),
    ("subagents", {"s": 5}), ("pendingToolCallIds", 5), ("format", 99), ("state", float("nan")),
    # (attack audit, third round: ids of another JSON type loaded, and failed later where compared or sent)
    ("interruptedRunId", 5), ("lastRunId", ["r"]), ("lastOutcome", {}), ("threadId", 7), ("pendingToolCallIds", [5]),
])
def test_a_damaged_record_is_a_store_error_naming_the_thread_when_a_thread_is_built(
    backend: Backend, field: str, value: Any
) -> None:
    # The store reads the JSON; the thread rebuilt from it meets what is wrong inside. Either way the
    # caller gets the store's error naming the thread, never a TypeError from deep in the rebuild.
    from agui_client import AgentClient

    data = {**small(1), field: value}
    backend.store.save("t", small(1), expected_version=None)  # then overwritten past the store's checks
    backend.set_raw("t", "data", json.dumps(data, allow_nan=True))
    with AgentClient("http://127.0.0.1:9/agent", store=backend.store) as client:
        with pytest.raises(StoreError) as caught:
            client.thread("t")

    assert caught.value.thread_id == "t"


def test_a_stored_message_without_a_role_is_dropped_with_a_warning_as_one_of_an_unknown_role(backend: Backend) -> None:
    # A record holds messages as the wire carries them, and reads them by the wire's rule: a message
    # whose role this release does not know (a newer release's, or none) is dropped with MS-05, the
    # thread's other messages kept, not the whole thread refused.
    from agui_client import AgentClient, AguiWarning

    data = small(1)
    data = {**data, "messages": [*data["messages"], {"id": "m2", "content": "no role"}]}
    backend.store.save("t", small(1), expected_version=None)
    backend.set_raw("t", "data", json.dumps(data))
    with AgentClient("http://127.0.0.1:9/agent", store=backend.store) as client:
        with pytest.warns(AguiWarning) as warned:
            thread = client.thread("t")

    assert [m.id for m in thread.state.messages] == ["u1"]
    assert any("MS-05" in str(w.message) and "without a string 'role'" in str(w.message) for w in warned)


def test_a_foreign_sqlite_head_empty_claim_is_none_and_a_text_format_a_store_error(tmp_path: Path) -> None:
    # A row written by another tool: an empty claim owner holds nothing (as Redis reads it), and a
    # version or format that is not an integer is the store's error, not a TypeError at the resume.
    backend = sqlite_backend(tmp_path / "threads.db")
    backend.store.save("t", small(1), expected_version=None)
    backend.set_raw("t", "claim", "")
    stored = backend.store.load("t")
    assert stored is not None and stored.claim is None
    backend.store.claim("t", expected_version=1, owner="a")  # (an empty owner holds nothing)

    backend.set_raw("t", "format", "one")
    with pytest.raises(StoreError) as on_load:
        backend.store.load("t")
    with pytest.raises(StoreError) as on_claim:
        backend.store.claim("t", expected_version=2, owner="b")
    assert on_load.value.thread_id == on_claim.value.thread_id == "t"
    backend.store.close()


def test_data_that_is_not_json_ready_is_refused_and_nothing_is_stored(store: ThreadStore) -> None:
    for bad in ({"state": float("nan")}, {"state": object()}, {"state": {1, 2}}):
        with pytest.raises(StoreError) as caught:
            store.save("t", bad, expected_version=None)
        assert caught.value.thread_id == "t"

    assert store.load("t") is None


class _Colour(enum.Enum):
    RED = "red"


@dataclasses.dataclass
class _Point:
    x: int


def test_what_orjson_could_write_but_json_refuses_is_still_refused(store: ThreadStore) -> None:
    # orjson writes NaN as null and serialises these types natively; the record must not.
    nested_bad = [
        {"state": {"deep": [1, 2.5, {"x": float("nan")}]}},
        {"state": (1.0, float("inf"))},
        {"messages": [{"id": "m", "content": -float("inf")}]},
        {"state": datetime.datetime(2030, 1, 1, tzinfo=datetime.timezone.utc)},
        {"state": {"id": uuid.UUID(int=1)}},
        {"state": [_Colour.RED]},
        {"state": _Point(1)},
    ]
    for bad in nested_bad:
        with pytest.raises(StoreError) as caught:
            store.save("t", bad, expected_version=None)
        assert caught.value.thread_id == "t"

    assert store.load("t") is None


def test_data_the_fast_encoder_cannot_write_round_trips_as_json_writes_it(store: ThreadStore) -> None:
    # Lone surrogates, integer keys, integers past 64 bits, str subclasses: the stdlib encoder's output.
    class Name(str):
        pass

    data = {"state": {"lone": "a\ud800b", 7: "seven", "big": -(2**63) - 1, "name": Name("n")}}
    store.save("t", data, expected_version=None)

    stored = store.load("t")

    assert stored is not None
    assert stored.data == {"state": {"lone": "a\ud800b", "7": "seven", "big": -(2**63) - 1, "name": "n"}}


def test_non_ascii_and_awkward_numbers_round_trip(store: ThreadStore) -> None:
    data = {"state": {"text": "h\u00e9llo \u2028 \U0001f389 \x1f", "floats": [1e16, -0.0, 1e-7, 0.1],
                      "ints": [2**64 - 1, -(2**63)], "nested": [[{"a": None, "b": True}], ()]},
            "messages": ThreadState(messages=[UserMessage(id="u", content="\u00fcber \U0001f600")]).dump()["messages"]}
    store.save("t", data, expected_version=None)
    store.save("t", data, expected_version=1)

    stored = store.load("t")

    assert stored is not None
    want = json.loads(json.dumps(data))
    assert stored.data == want
    assert ThreadState.load(stored.data).messages[0].content == "\u00fcber \U0001f600"


def test_a_record_written_as_escaped_ascii_text_still_loads(backend: Backend) -> None:
    # Records written before the store encoded with orjson: ASCII text with \u escapes.
    backend.store.save("t", small(1), expected_version=None)
    data = {"state": {"text": "h\u00e9 \U0001f389"}, "messages": []}
    backend.set_raw("t", "data", json.dumps(data, ensure_ascii=True, separators=(",", ":")))

    stored = backend.store.load("t")

    assert stored is not None
    assert stored.data == data


def test_delete_forgets_the_thread(store: ThreadStore) -> None:
    store.save("t", small(1), expected_version=None)
    store.save("other", small(2), expected_version=None)

    store.delete("t")
    store.delete("t")

    assert store.load("t") is None
    with pytest.raises(ConcurrentResume) as caught:
        store.save("t", small(3), expected_version=1)
    assert caught.value.actual_version is None
    assert store.save("t", small(4), expected_version=None) == 1
    other = store.load("other")
    assert other is not None
    assert other.data == small(2)


def test_a_closed_store_refuses_every_call(backend: Backend) -> None:
    backend.store.save("t", small(1), expected_version=None)

    backend.store.close()
    backend.store.close()

    calls: list[Callable[[], object]] = [
        lambda: backend.store.load("t"),
        lambda: backend.store.save("t", small(2), expected_version=1),
        lambda: backend.store.claim("t", expected_version=1, owner="a"),
        lambda: backend.store.release("t", claimed_version=1, owner="a"),
        lambda: backend.store.delete("t"),
    ]
    for call in calls:
        with pytest.raises(StoreError):
            call()


def test_a_store_is_a_context_manager_that_closes_itself(backend: Backend) -> None:
    store = backend.reopen()
    assert isinstance(store, (MemoryStore, SqliteStore, RedisStore, PostgresStore))

    with store as entered:
        entered.save("t", small(1), expected_version=None)

    assert entered is store
    with pytest.raises(StoreError):
        store.load("t")


def test_a_durable_thread_survives_into_a_second_store_object(durable_backend: Backend) -> None:
    thread = interrupted_thread()
    durable_backend.store.save("thread-1", thread.dump(), expected_version=None)
    durable_backend.store.claim("thread-1", expected_version=1, owner="replica-a")

    second = durable_backend.reopen()
    stored = second.load("thread-1")

    assert plain(stored) == StoredThread(thread_id="thread-1", version=2, data=thread.dump(), claim="replica-a",
                                  format=STORE_FORMAT_VERSION)
    assert ThreadState.load(stored.data).open_interrupts == thread.open_interrupts
    with pytest.raises(ConcurrentResume):
        second.claim("thread-1", expected_version=2, owner="replica-b")


def test_integers_beyond_64_bits_load_back_exact(store: ThreadStore) -> None:
    """orjson reads a 20+ digit integer as a float; the store must hand back the integer the thread held."""
    data = small(1)
    data["state"] = {"big": 2**70, "neg": -(2**65) - 1, "f": 1.5, "id": "12345678901234567890123"}
    store.save("t", data, expected_version=None)

    stored = store.load("t")

    assert stored is not None
    assert stored.data["state"] == data["state"]
    assert type(stored.data["state"]["big"]) is int and stored.data["state"]["big"] == 2**70
