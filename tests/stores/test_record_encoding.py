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
from agui_client.errors import StoreError
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
    # few MB of state ran a process out of memory instead. Written with the check, it is named as
    # the cycle is first entered.
    cyclic = _cyclic_beside(20_000)  # (some 110 KB of text)
    if write == "save":
        def refused() -> None:
            with pytest.raises(StoreError) as caught:
                encode_data("t", cyclic)
            assert "Circular reference detected" in str(caught.value)
    else:
        run_input = RunAgentInput(thread_id="t", run_id="r", state=cyclic, messages=(), tools=(), context=())

        def refused() -> None:
            with pytest.raises(ValueError) as caught:
                request_body(run_input)
            assert "Circular reference detected" in str(caught.value)
    # (the state's text is some 110 KB: orjson, tried first, writes it 150-odd times before its depth
    # limit refuses it, 17 MB; the standard library's unchecked write then took 55 MB and more)
    assert _peak_while(refused) < 30_000_000


def test_state_deeper_than_orjson_writes_is_saved_and_sent_as_it_is() -> None:
    # orjson writes 254 levels at most; the decoder admits 511, and deeper state goes to the standard
    # library's encoder, for a save and for every run's request.
    data = ThreadState(state=_deep_state()).dump()
    encoded = encode_data("t", data)
    assert isinstance(encoded, str) and load_record(encoded) == data
    run_input = RunAgentInput(thread_id="t", run_id="r", state=_deep_state(), messages=(), tools=(), context=())
    assert json.loads(request_body(run_input))["state"] == _deep_state()
