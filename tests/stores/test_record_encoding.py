"""How a store encodes a record's data: orjson's UTF-8 when it writes the data exactly, the stdlib otherwise
(and a request's state, which the stdlib writes the same way when orjson cannot)."""

from __future__ import annotations

import gc
import json
import tracemalloc
from typing import Any

import pytest

from agui_client.core.exchange import request_body
from agui_client.core.fold import ThreadState
from agui_client.errors import StoreError, UnencodableValue
from agui_client.stores import MemoryStore
from agui_client.stores.base import encode_data
from agui_client.types import UserMessage
from agui_client.wire import jsonio
from agui_client.wire.records import load_record
from agui_client.wire.types.run import RunAgentInput
from agui_client.wire.values import plain_json as _plain_json

__all__: list[str] = []

import orjson  # noqa: E402 - the dev extra installs it; without it these tests must fail, not skip


def test_plain_data_is_written_by_orjson_as_utf8_bytes() -> None:
    data = ThreadState(messages=[UserMessage(id="u", content="h\u00e9 \U0001f389")], state={"x": [1.5, None]}).dump()

    encoded = encode_data("t", data)

    assert isinstance(encoded, bytes)
    assert encoded == orjson.dumps(data)
    assert json.loads(encoded) == data


@pytest.mark.parametrize("value", [
    {"a": float("nan")}, [1, float("inf")], {"a": {"b": [float("-inf")]}}, {"a": b"bytes"}, {"a": {1, 2}},
])
def test_anything_but_finite_plain_json_is_refused_as_json_dumps_refuses_it(value: Any) -> None:
    with pytest.raises(StoreError):
        encode_data("t", {"state": value})


def test_with_orjson_set_aside_in_jsonio_records_take_the_standard_librarys_path(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # (the record reader takes orjson from jsonio's one binding at call time, so the stdlib-path tests
    # and the benchmark, which set it aside there, reach the stores' records too)
    data = {"threadId": "t", "state": {"n": 12, "s": "h\u00e9"}}
    assert isinstance(encode_data("t", data), bytes)  # (orjson's, while it is there)
    monkeypatch.setattr(jsonio, "_orjson", None)

    encoded = encode_data("t", data)

    assert encoded == '{"threadId":"t","state":{"n":12,"s":"h\\u00e9"}}'
    assert load_record(encoded) == data


def test_what_only_the_stdlib_can_write_comes_back_as_its_text() -> None:
    encoded = encode_data("t", {"state": {1: "one", "s": "\ud800"}})

    assert encoded == '{"state":{"1":"one","s":"\\ud800"}}'


@pytest.mark.parametrize(("value", "plain"), [
    ({"a": [1, 2.5, "s", None, True, (3,)], "b": {}}, True),
    ([[[[]]]], True),
    (float("nan"), False),
    ({"a": [{"b": float("inf")}]}, False),
    ({"a": 1 + 2j}, False),
    ({"a": type("S", (str,), {})("x")}, False),
    ({"a": type("D", (dict,), {})()}, False),
])
def test_plain_json_accepts_exactly_the_builtin_json_types(value: Any, plain: bool) -> None:
    assert _plain_json(value) is plain


def test_a_memory_store_keeps_a_record_at_its_size_not_the_encoders_buffer() -> None:
    # orjson returns its whole output buffer (several times a small record): kept for the life of
    # the thread, that would cost several times the record.
    store = MemoryStore()
    data = {"state": {"text": "x" * 20_000}}
    store.save("warm-up", data, expected_version=None)
    gc.collect()
    tracemalloc.start()
    try:
        store.save("t", data, expected_version=None)
        gc.collect()
        kept, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert kept < 1.5 * len(json.dumps(data))
    stored = store.load("t")
    assert stored is not None and stored.data == data


def _deep_state() -> dict[str, Any]:
    nest: Any = []
    for _ in range(400):
        nest = [nest]
    return {"deep": [nest] * 50}


def _cyclic_beside(size: int) -> dict[str, Any]:
    """A record whose state holds ``size`` numbers beside a way back to the record itself."""
    cyclic: dict[str, Any] = {"state": {"rows": list(range(size))}}
    cyclic["state"]["self"] = cyclic
    return cyclic


def _peak_while(call: Any) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        call()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


@pytest.mark.parametrize("write", ["save", "request"])
def test_a_cycle_is_named_at_once_however_much_sits_beside_it(write: str) -> None:
    # Written first without the check for cycles (to save its marking of each container), a cycle
    # went round until Python's recursion limit, writing what sat beside it again at every turn: a
    # state of 100,000 numbers (0.6 MB) took 8.5 s of CPU and 600 MB before the cycle was named; a
    # few MB of state ran a process out of memory instead. orjson, tried first, went round it to its
    # own depth limit (254 levels: 17 MB for this state's 110 KB). Now a save's walk finds it before
    # anything is written, and a request's orjson gives up after 32 levels: named where it is.
    cyclic = _cyclic_beside(20_000)  # (some 110 KB of text)
    if write == "save":
        def refused() -> None:
            with pytest.raises(StoreError) as caught:
                encode_data("t", cyclic)
            cause = caught.value.__cause__
            assert isinstance(cause, UnencodableValue) and cause.pointer == "/state/self"
            assert "/state/self" in str(caught.value)
    else:
        run_input = RunAgentInput(thread_id="t", run_id="r", state=cyclic, messages=(), tools=(), context=())

        def refused() -> None:
            with pytest.raises(UnencodableValue) as caught:
                request_body(run_input)
            assert caught.value.pointer == "/state/state/self"
            assert caught.value.reason == "the value contains itself"
    assert _peak_while(refused) < 12_000_000  # (8.4 MB for the request: orjson's turns and its buffer)


@pytest.mark.parametrize("write", ["save", "request"])
def test_a_cycle_beside_a_megabyte_costs_what_the_megabyte_does(write: str) -> None:
    # orjson has no check for cycles: a state holding itself beside 1.1 MB was written some 250 times
    # before orjson's depth limit stopped it (0.4-0.5 s of CPU and 280 MB), then named by the standard
    # library without saying where. A save's walk now finds it before anything is written; a request's
    # orjson goes round it at most 32 levels (a turn a level here: 36 MB, in a buffer of 64).
    state: dict[str, Any] = {"rows": [{"k": n, "t": "x" * 20} for n in range(30_000)]}
    state["self"] = state
    assert len(orjson.dumps(state["rows"])) > 1_100_000
    if write == "save":
        def refused() -> None:
            with pytest.raises(StoreError) as caught:
                encode_data("t", {"state": state})
            cause = caught.value.__cause__
            assert isinstance(cause, UnencodableValue) and cause.pointer == "/state/self"
        bound = 10_000_000
    else:
        run_input = RunAgentInput(thread_id="t", run_id="r", state=state, messages=(), tools=(), context=())

        def refused() -> None:
            with pytest.raises(UnencodableValue) as caught:
                request_body(run_input)
            assert caught.value.pointer == "/state/self"
        bound = 80_000_000
    assert _peak_while(refused) < bound


def test_state_deeper_than_orjson_writes_is_saved_and_sent_as_it_is() -> None:
    # orjson writes 254 levels at most; the decoder admits 511, and deeper state goes to the standard
    # library's encoder, for a save and for every run's request.
    data = ThreadState(state=_deep_state()).dump()
    encoded = encode_data("t", data)
    assert isinstance(encoded, str) and load_record(encoded) == data
    run_input = RunAgentInput(thread_id="t", run_id="r", state=_deep_state(), messages=(), tools=(), context=())
    assert json.loads(request_body(run_input))["state"] == _deep_state()
