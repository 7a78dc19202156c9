"""How a store encodes a record's data: orjson's UTF-8 when it writes the data exactly, the stdlib otherwise
(and a request's state, which the stdlib writes the same way when orjson cannot)."""

from __future__ import annotations

import gc
import json
import tracemalloc
from typing import Any

import attrs
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


def _checked_writes_while(call: Any, monkeypatch: pytest.MonkeyPatch) -> int:
    """How many of the standard library's writes while ``call()`` runs check for cycles, which puts
    the id of every list and object they enter in a dict and takes it out again (in C: counted by the
    writes handed a dict for it). ``call()`` must write through the standard library at least once: a
    count of none checked is otherwise no proof (orjson writing the value, or another encoder)."""
    writes = checked = 0
    make = json.encoder.c_make_encoder
    assert make is not None  # (the C encoder, which every write with indent=None uses)

    def counted(markers: Any, *rest: Any) -> Any:
        nonlocal writes, checked
        writes += 1
        checked += markers is not None
        return make(markers, *rest)

    monkeypatch.setattr(json.encoder, "c_make_encoder", counted)
    call()
    assert writes > 0, "the value was not written by the standard library's encoder"
    return checked


def _deep_state(copies: int = 50) -> dict[str, Any]:
    """State nested 400 levels deep, past orjson's 254, ``copies`` times over."""
    nest: Any = []
    for _ in range(400):
        nest = [nest]
    return {"deep": [nest] * copies}


def test_state_deeper_than_orjson_writes_is_saved_without_marking_each_container(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # orjson writes 254 levels at most; the decoder admits 511, and deeper state goes to the standard
    # library, whose check against cycles put each container's id in a dict and took it out again:
    # more than half its time for arrays (a MiB 500 deep: 47 ms of CPU, 20 without the check). The
    # thread's data holds no cycle; data given to a store directly that holds one is still named.
    data = ThreadState(state=_deep_state()).dump()

    encoded: list[Any] = []
    assert _checked_writes_while(lambda: encoded.append(encode_data("t", data)), monkeypatch) == 0
    assert isinstance(encoded[0], str) and load_record(encoded[0]) == data

    # (one nest: each turn of the cycle writes it again until the recursion stops, 3 s for fifty)
    cyclic: dict[str, Any] = {"state": _deep_state(copies=1)}
    cyclic["state"]["self"] = cyclic
    with pytest.raises(StoreError) as refused:
        encode_data("t", cyclic)
    assert "Circular reference detected" in str(refused.value)


def test_state_deeper_than_orjson_writes_is_sent_without_marking_each_container(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Every run's request carries the thread's state: written by the same encoder, the same way.
    run_input = RunAgentInput(thread_id="t", run_id="r", state=_deep_state(), messages=(), tools=(), context=())

    body: list[bytes] = []
    assert _checked_writes_while(lambda: body.append(request_body(run_input)), monkeypatch) == 0
    assert json.loads(body[0])["state"] == _deep_state()

    cyclic = _deep_state(copies=1)  # (one nest, as above)
    cyclic["self"] = cyclic
    with pytest.raises(ValueError) as refused:
        request_body(attrs.evolve(run_input, state=cyclic))
    assert "Circular reference detected" in str(refused.value)
