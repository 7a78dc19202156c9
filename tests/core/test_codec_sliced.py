"""A large MESSAGES_SNAPSHOT is read slice by slice (``codec.decode_large``).

The sliced path only ever returns what the general path (parse the whole payload, then decode) would
return for the same bytes, and returns ``None`` for anything it cannot prove plain, so that the
general path alone decides errors, pointers and warnings. The tests below run with slicing forced on
for tiny payloads and tiny slices, so that every cut position is exercised.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agui_client import replay
from agui_client.errors import ProtocolError
from agui_client.types import events as ev
from agui_client.wire import codec, jsonio, slices
from agui_client.wire.codec import decode_event
from agui_client.wire.sink import collect_warnings

HEAD = codec.SNAPSHOT_HEAD


@pytest.fixture(autouse=True)
def orjson_present() -> None:
    assert jsonio._orjson is not None, "the dev extra installs orjson: slicing must be tested"


def _general(raw: bytes) -> tuple[str, Any, list[Any]]:
    """decode_event without slicing: the value or the error (type, pointer, message), and the warnings."""
    saved = codec.SLICED_MIN
    codec.SLICED_MIN = 1 << 62
    try:
        with collect_warnings() as sink:
            try:
                result: tuple[str, Any] = ("ok", decode_event(raw))
            except ProtocolError as exc:
                result = ("error", (type(exc), exc.pointer, str(exc)))
    finally:
        codec.SLICED_MIN = saved
    return (*result, [(w.code, w.pointer) for w in sink.items])


def _sliced(raw: bytes, monkeypatch: pytest.MonkeyPatch, step: int, max_depth: int = 512) -> Any:
    monkeypatch.setattr(codec, "SLICED_MIN", 0)
    monkeypatch.setattr(slices, "_SLICE", step)
    return codec.decode_large(raw, max_depth)


def _compact(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def _snapshot(messages: list[Any], **rest: Any) -> bytes:
    return _compact({"type": "MESSAGES_SNAPSHOT", "messages": messages, **rest})


_text = st.text(alphabet=st.sampled_from(list('ab:},{"\\\u03c0/ ') + ["\u003a"]), max_size=8)
_json = st.recursive(st.none() | st.booleans() | st.integers(-10**25, 10**25) | st.floats(allow_nan=False,
                     allow_infinity=False) | _text, lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(_text, inner, max_size=3), max_leaves=6)
_call = st.fixed_dictionaries({"id": _text, "type": st.just("function"),
                               "function": st.fixed_dictionaries({"name": _text, "arguments": _text})},
                              optional={"metadata": st.dictionaries(_text, _json, max_size=2)})
_part = st.fixed_dictionaries({"type": st.just("text"), "text": _text}, optional={"id": _text})
_message = st.one_of(
    st.fixed_dictionaries({"id": _text, "role": st.sampled_from(["user", "system", "developer", "reasoning"]),
                           "content": _text}, optional={"name": _text, "metadata": st.dictionaries(_text, _json)}),
    st.fixed_dictionaries({"id": _text, "role": st.just("assistant")},
                          optional={"content": _text, "toolCalls": st.lists(_call, max_size=3)}),
    st.fixed_dictionaries({"id": _text, "role": st.just("user"), "content": st.lists(_part, max_size=3)}),
    st.fixed_dictionaries({"id": _text, "role": st.just("tool"), "toolCallId": _text, "content": _text}),
    st.fixed_dictionaries({"id": _text, "role": st.just("activity"), "activityType": _text,
                           "content": st.dictionaries(_text, _json, max_size=2)}),
    st.fixed_dictionaries({"id": _text, "role": st.sampled_from(["robot", 3])}, optional={"content": _text}),
    st.fixed_dictionaries({"id": st.one_of(_text, st.none(), st.integers()), "role": st.just("user"),
                           "content": st.one_of(_text, st.none(), st.integers())}),
)


@st.composite
def _payloads(draw: st.DrawFn) -> bytes:
    raw = _snapshot(draw(st.lists(_message, max_size=6)),
                    **draw(st.fixed_dictionaries({}, optional={"timestamp": st.integers(0, 10**20),
                                                               "metadata": st.dictionaries(_text, _json)})))
    # Hostile edits of the text: a key repeated (anywhere), a long integer, nesting, a broken byte.
    edit = draw(st.sampled_from(["none", "dup", "dup-top", "long-int", "deep", "bad-utf8", "escape-key"]))
    if edit == "dup" and b'"content":' in raw:
        raw = raw.replace(b'"content":', b'"content":"x","content":', 1)
    elif edit == "dup-top":
        raw = raw[:-1] + b',"messages":[]}'
    elif edit == "long-int" and b'"content":' in raw:
        raw = raw.replace(b'"content":', b'"metadata":{"n":123456789012345678901234},"content":', 1)
    elif edit == "deep":
        raw = raw[:-1] + b',"metadata":{"d":' + b"[" * 40 + b"]" * 40 + b"}}"
    elif edit == "bad-utf8":
        raw = raw.replace(b"a", b"\xff", 1)
    elif edit == "escape-key":
        raw = raw.replace(b'"role":', b'"r\\u006fle":"user","role":', 1)
    return raw


@settings(max_examples=400, deadline=None)
@given(_payloads(), st.sampled_from([1, 2, 5, 30]))
def test_the_sliced_path_returns_only_what_the_general_path_returns(raw: bytes, step: int) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        sliced = _sliced(raw, monkeypatch, step)
    general = _general(raw)
    if sliced is not None:
        assert general == ("ok", sliced, [])


@settings(max_examples=200, deadline=None)
@given(_payloads(), st.sampled_from([1, 3, 40]))
def test_decode_event_says_the_same_with_slicing_on(raw: bytes, step: int) -> None:
    """Whatever the payload, the public result (event, error and pointer, warnings) does not change."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(codec, "SLICED_MIN", 0)
        monkeypatch.setattr(slices, "_SLICE", step)
        with collect_warnings() as sink:
            try:
                result: tuple[str, Any] = ("ok", decode_event(raw))
            except ProtocolError as exc:
                result = ("error", (type(exc), exc.pointer, str(exc)))
        sliced = (*result, [(w.code, w.pointer) for w in sink.items])
    assert sliced == _general(raw)


PLAIN = [{"id": f"m{i}", "role": "user", "content": f"text {i} " + '},{"x":'} for i in range(5)] + [
    {"id": "a", "role": "assistant", "toolCalls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}},
        {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "{}"}}]},
    {"id": "u", "role": "user", "content": [{"type": "text", "text": "t"}, {"type": "text", "text": "u"}]},
]


@pytest.mark.parametrize("step", [1, 2, 10, 100, 10_000])
def test_a_plain_snapshot_is_read_by_slices_wherever_they_cut(step: int, monkeypatch: pytest.MonkeyPatch) -> None:
    raw = _snapshot(PLAIN, timestamp=5).replace(b"text 1", b"text\\u003a1")  # an escaped colon
    event = _sliced(raw, monkeypatch, step)
    assert isinstance(event, ev.MessagesSnapshotEvent)
    assert _general(raw) == ("ok", event, [])
    assert [m.id for m in event.messages] == [m["id"] for m in PLAIN]


@pytest.mark.parametrize(("name", "raw"), [
    ("nested duplicate", _snapshot([*PLAIN, {"id": "d", "role": "user", "content": "a"}]).replace(
        b'"content":"a"', b'"content":"a","content":"b"')),
    ("duplicate in a slice", _snapshot(PLAIN).replace(b'"content":"text 1', b'"content":1,"content":"text 1')),
    ("top-level duplicate", _snapshot(PLAIN)[:-1] + b',"messages":[]}'),
    ("type spelled twice", _snapshot(PLAIN)[:-1] + b',"t\\u0079pe":"RUN_STARTED"}'),
    ("long integer", _snapshot(PLAIN).replace(b'"role":"user"', b'"role":"user","metadata":{"n":1' + b"0" * 25 + b"}",
                                              1)),
    ("too deep", _snapshot([*PLAIN, {"id": "x", "role": "activity", "activityType": "a",
                                     "content": {"d": json.loads("[" * 600 + "]" * 600)}}])),
    ("unknown role", _snapshot([*PLAIN, {"id": "r", "role": "robot"}])),
    ("null", _snapshot([*PLAIN, {"id": "n", "role": "user", "content": None}])),
    ("wrong type", _snapshot([*PLAIN[:3], {"id": "w", "role": "user", "content": 5}, *PLAIN[3:]])),
    ("NaN", _snapshot(PLAIN).replace(b'"role":"user"', b'"role":"user","metadata":{"n":NaN}', 1)),
    ("invalid UTF-8", _snapshot(PLAIN).replace(b"text 2", b"text \xff")),
    ("not closed", _snapshot(PLAIN)[:-2]),
])
@pytest.mark.parametrize("step", [1, 7, 10_000])
def test_anything_not_proved_plain_is_left_to_the_general_path(name: str, raw: bytes, step: int,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    general = _general(raw)
    assert _sliced(raw, monkeypatch, step) is None, name
    monkeypatch.setattr(codec, "SLICED_MIN", 0)
    with collect_warnings() as sink:
        try:
            result: tuple[str, Any] = ("ok", decode_event(raw))
        except ProtocolError as exc:
            result = ("error", (type(exc), exc.pointer, str(exc)))
    assert (*result, [(w.code, w.pointer) for w in sink.items]) == general


def test_the_general_path_points_at_the_bad_message(monkeypatch: pytest.MonkeyPatch) -> None:
    raw = _snapshot([*PLAIN[:3], {"id": "w", "role": "user", "content": 5}, *PLAIN[3:]])
    monkeypatch.setattr(codec, "SLICED_MIN", 0)
    monkeypatch.setattr(slices, "_SLICE", 1)
    with pytest.raises(ProtocolError) as caught:
        decode_event(raw)
    assert caught.value.pointer == "/messages/3/content"


def test_a_low_depth_limit_is_never_vouched_for_by_the_writer(monkeypatch: pytest.MonkeyPatch) -> None:
    raw = _snapshot(PLAIN)
    assert _sliced(raw, monkeypatch, 5, max_depth=jsonio.ORJSON_WRITE_DEPTH or 0) is None
    assert _sliced(raw, monkeypatch, 5, max_depth=2) is None


def test_the_slice_reader_takes_orjson_from_jsonios_one_binding(monkeypatch: pytest.MonkeyPatch) -> None:
    # (it lives beside jsonio but reads orjson from jsonio's binding at call time: what the stdlib-path
    # tests and the benchmark set there, set aside or counted, holds for the slices too)
    real = jsonio._orjson
    read: list[int] = []

    class Counted:
        JSONDecodeError = real.JSONDecodeError
        dumps = real.dumps

        def loads(self, text: bytes) -> Any:
            read.append(len(text))
            return real.loads(text)

    raw = _snapshot(PLAIN)
    monkeypatch.setattr(jsonio, "_orjson", Counted())
    assert _sliced(raw, monkeypatch, 5) is not None
    assert len(read) > 2 and max(read) < len(raw)  # (slices and the rest, never the whole payload)
    monkeypatch.setattr(jsonio, "_orjson", None)
    assert _sliced(raw, monkeypatch, 5) is None
    assert decode_event(raw) == _general(raw)[1]


def test_a_boundary_inside_every_message_gives_up_after_a_few_misses(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = [{"id": f"c{i}", "type": "function", "function": {"name": "f", "arguments": ""}} for i in range(60)]
    raw = _snapshot([{"id": "a", "role": "assistant", "toolCalls": calls}, *PLAIN])
    assert _sliced(raw, monkeypatch, 1) is None  # 59 candidate ends inside the first message
    monkeypatch.setattr(slices, "_SLICE_MISSES", 100)
    event = codec.decode_large(raw, 512)
    assert _general(raw) == ("ok", event, [])


def test_other_layouts_and_forms_are_not_sliced(monkeypatch: pytest.MonkeyPatch) -> None:
    raw = _snapshot(PLAIN)
    monkeypatch.setattr(codec, "SLICED_MIN", 0)
    assert codec.decode_large(raw.decode(), 512) is None
    assert codec.decode_large(_compact({"messages": PLAIN, "type": "MESSAGES_SNAPSHOT"}), 512) is None
    assert codec.decode_large(raw.replace(b",", b", ", 1), 512) is None
    monkeypatch.setattr(codec, "SLICED_MIN", len(raw) + 1)
    assert codec.decode_large(raw, 512) is None


@pytest.mark.parametrize("form", ["jsonl", "sse"])
def test_replay_folds_a_sliced_snapshot_as_the_general_path_does(form: str, monkeypatch: pytest.MonkeyPatch) -> None:
    events = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
              {"type": "MESSAGES_SNAPSHOT", "messages": [*PLAIN, PLAIN[0]]},  # a repeated id: B205
              {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}]
    lines = [_compact(e) for e in events]
    data = b"".join(line + b"\n" for line in lines) if form == "jsonl" else b"".join(
        b"data: " + line + b"\n\n" for line in lines)
    general = replay(data)
    monkeypatch.setattr(codec, "SLICED_MIN", 0)
    monkeypatch.setattr(slices, "_SLICE", 3)
    sliced = replay(data)
    assert sliced.state.to_wire() == general.state.to_wire()
    assert sliced.new_messages == general.new_messages
    assert [(w.code, w.index) for w in sliced.warnings] == [(w.code, w.index) for w in general.warnings]
    assert [w.code for w in sliced.warnings] == ["MS-01"]


def test_replay_reports_a_bad_snapshot_message_with_its_pointer(monkeypatch: pytest.MonkeyPatch) -> None:
    bad = {"type": "MESSAGES_SNAPSHOT", "messages": [*PLAIN[:3], {"id": "w", "role": "user", "content": 5}]}
    data = b"\n".join(_compact(e) for e in [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}, bad])
    monkeypatch.setattr(codec, "SLICED_MIN", 0)
    monkeypatch.setattr(slices, "_SLICE", 2)
    with pytest.raises(ProtocolError) as caught:
        replay(data)
    assert (caught.value.pointer, caught.value.index) == ("/messages/3/content", 1)


def test_a_digit_run_in_an_id_does_not_stop_slicing_but_a_float_beside_it_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ids = [{"id": "msg_69434802190441449421", "role": "user", "content": "x"}, *PLAIN]
    raw = _snapshot(ids)
    event = _sliced(raw, monkeypatch, 3)
    assert event is not None and _general(raw) == ("ok", event, [])
    with_float = _snapshot([{**ids[0], "metadata": {"f": 0.5}}, *PLAIN])
    event = _sliced(with_float, monkeypatch, 3)  # written back byte for byte: every number read exactly
    assert event is not None and _general(with_float) == ("ok", event, [])
    respelled = with_float.replace(b"0.5", b"0.50")  # not written back alike: the digit run is doubted
    assert _sliced(respelled, monkeypatch, 3) is None
    assert _general(respelled)[0] == "ok"
    with_long = _snapshot([{**ids[0], "metadata": {"n": 10**30}}, *PLAIN])
    assert _sliced(with_long, monkeypatch, 3) is None
    assert _general(with_long)[1].messages[0].metadata == {"n": 10**30}
