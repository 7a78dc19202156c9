"""The codec's fast path (generated builders for the plain shape) against its checked path: it either
builds the very same value, or falls back; it never decides anything the checked path would decide
differently (moved from tests/core/test_codec_strict.py, whose ``parse_path``, ``_delta`` and ``_run_end`` these use).
"""

from __future__ import annotations

import copy
import gc
import itertools
import json
import re
import typing
from typing import Any

import attrs
import corpus
import pytest
from test_codec_strict import _delta, _run_end, parse_path  # noqa: F401 (parse_path: a fixture)

from agui_client.errors import DecodeError, LimitExceeded, ProtocolError
from agui_client.types import events as ev
from agui_client.types import messages as msg
from agui_client.types import run as rn
from agui_client.wire import codec, derive, policy, shapes, writers
from agui_client.wire.codec import decode_event
from agui_client.wire.sink import collect_warnings

__all__: list[str] = []

# ------------------------------------------------------------------------------------------------
# The fast path (generated builders for the plain shape) never decides anything the checked path
# would decide differently: it either builds the very same value, or falls back.
# ------------------------------------------------------------------------------------------------

_WRONG: list[Any] = [None, "x", "", 0, -1, 2**53, 1.5, True, [], {}, [None], {"type": "x"}, [{"type": "x"}]]


def _containers(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], Any]]:
    found: list[tuple[tuple[Any, ...], Any]] = []
    if isinstance(node, dict):
        found.append((path, node))
        for key, child in node.items():
            found += _containers(child, (*path, key))
    elif isinstance(node, list):
        found.append((path, node))
        for i, child in enumerate(node):
            found += _containers(child, (*path, i))
    return found


def _at(doc: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        doc = doc[step]
    return doc


def _mutations(sample: dict[str, Any]) -> list[Any]:
    """Every one-step corruption of ``sample``: each key dropped or given each wrong value, an unknown key
    added to each object, each array shortened or given a stray item."""
    out: list[Any] = []
    for path, node in _containers(sample):
        if isinstance(node, dict):
            for key in node:
                dropped = copy.deepcopy(sample)
                del _at(dropped, path)[key]
                out.append(dropped)
                for wrong in _WRONG:
                    changed = copy.deepcopy(sample)
                    _at(changed, path)[key] = copy.deepcopy(wrong)
                    out.append(changed)
            extra = copy.deepcopy(sample)
            _at(extra, path)["zzzUnknown"] = 1
            out.append(extra)
        else:
            for item in (None, {}, "x"):
                grown = copy.deepcopy(sample)
                _at(grown, path).append(item)
                out.append(grown)
            if node:
                shrunk = copy.deepcopy(sample)
                del _at(shrunk, path)[0]
                out.append(shrunk)
    return out


def _checked(value: Any, cls: Any) -> tuple[str, Any, list[Any]]:
    with collect_warnings() as sink:
        try:
            result: tuple[str, Any] = ("ok", codec._structure(value, cls))
        except ProtocolError as exc:
            result = ("error", (type(exc), exc.pointer))
    return (*result, sink.items)


def _fast_or_fallback(value: Any, cls: Any) -> Any:
    fast = codec._derived.reader(cls)
    assert fast is not None, f"{cls} has no fast path"
    try:
        return shapes.charged(shapes.Allowance(), fast, value)  # (a new shape is compiled, not refused)
    except codec.Fallback:
        return codec.Fallback


@pytest.fixture(params=["shaped", "generic", "init"])
def builders(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Fresh fast-path caches; under "generic" no shape gets its own builder (the budget is 0), so every
    class is built by its one all-shapes builder; under "init" the shape builders call the class instead
    of filling its slots."""
    monkeypatch.setattr(codec, "_derived", derive.Derived(codec._derived.policy))
    monkeypatch.setattr(codec, "_READERS", codec._ReaderByKind())
    if request.param == "generic":
        monkeypatch.setattr(shapes, "MAX_LIVE_SHAPES", 0)
    if request.param == "init":
        monkeypatch.setattr(writers, "slot_setters", lambda cls: None)
    return str(request.param)


def test_every_wire_class_is_built_slot_by_slot_and_equals_its_init() -> None:
    """The slot filling covers every field (an unset slot would break ``==``, ``hash`` and ``repr``)."""
    for cls in [*ev.EVENT_TYPES.values(), *codec._MESSAGES.values(), *codec._PARTS.values()]:
        setters = writers.slot_setters(cls)
        assert setters is not None, cls
        assert [name for name, _, _ in setters] == [a.alias or a.name for a in attrs.fields(cls)]
    sample = {"id": "m", "role": "user", "content": [{"type": "text", "text": "t"}], "name": "n"}
    built = codec.decode(sample, msg.UserMessage)
    assert built == msg.UserMessage(id="m", content=(msg.TextPart(text="t"),), name="n")
    assert hash(built) == hash(msg.UserMessage(id="m", content=(msg.TextPart(text="t"),), name="n"))
    assert repr(built) == repr(msg.UserMessage(id="m", content=(msg.TextPart(text="t"),), name="n"))


def _corpus_roots() -> list[tuple[str, Any, dict[str, Any]]]:
    roots = [(name, ev.EVENT_TYPES[sample["type"]], sample) for name, sample in corpus.event_samples()]
    return roots + corpus.value_samples()


def test_the_fast_path_builds_every_corpus_sample_exactly_as_the_checked_path(builders: str) -> None:
    for name, cls, sample in _corpus_roots():
        built = _fast_or_fallback(sample, cls)
        assert built is not codec.Fallback, f"{name} fell back to the checked path"
        assert ("ok", built, []) == _checked(sample, cls), name


@pytest.fixture(scope="module")
def corruptions() -> list[tuple[str, Any, Any, tuple[str, Any, list[Any]]]]:
    """Every corruption of every corpus root, with what the checked path makes of it.

    Made once for the three ``builders``: neither the corruptions nor the checked path (the converter)
    depend on the fast builders the fixture swaps, and making them was three quarters of each run's time
    (4.4 of 5.8 s of CPU). (A fast path that changed an object it read would give the next ``builders``
    another corruption than the checked path judged: a failure, never a pass.) Module-scoped, they are
    let go when this file's tests end.
    """
    gc.disable()  # (the collector's passes walked every corruption kept so far, at each pass: twice the time)
    try:
        return [(name, cls, doc, _checked(doc, cls))
                for name, cls, sample in _corpus_roots() for doc in _mutations(sample)]
    finally:
        gc.enable()


def test_the_fast_path_never_accepts_a_corruption_the_checked_path_refuses_or_warns_about(
        corruptions: list[tuple[str, Any, Any, tuple[str, Any, list[Any]]]], builders: str) -> None:
    """Also: every corruption gives a value or a ProtocolError, never a raw Python error."""
    tried = accepted = 0
    for name, cls, doc, checked in corruptions:
        tried += 1
        built = _fast_or_fallback(doc, cls)
        if built is codec.Fallback:
            continue
        accepted += 1
        assert ("ok", built, []) == checked, (name, doc)
    assert tried > 10_000
    assert 0 < accepted < tried  # corruptions of free-form values are still plain; the rest fall back


#: RFC 6901's grammar of a JSON pointer, as a regular expression: the oracle of the codec's pointer check.
_POINTER = re.compile(r"^(/([^/~]|~[01])*)*$")


def test_the_fast_pointer_check_is_the_pointer_regex() -> None:
    alphabet = ["/", "~", "0", "1", "a", "\n"]
    for length in range(6):
        for chars in itertools.product(alphabet, repeat=length):
            path = "".join(chars)
            assert policy._pointer_ok(path) == bool(_POINTER.fullmatch(path)), repr(path)


def test_a_newline_is_not_a_json_pointer(parse_path: str) -> None:  # noqa: F811
    """``re.match(r"…$")`` accepts a string ending in a newline before ``$``; the check uses fullmatch."""
    with pytest.raises(DecodeError) as info:
        decode_event(_delta([{"op": "remove", "path": "\n"}]))
    assert info.value.pointer == "/delta/0/path"
    assert isinstance(decode_event(_delta([{"op": "remove", "path": "/a\n"}])), ev.StateDeltaEvent)


@pytest.mark.parametrize(("depth", "refused"), [(200, False), (300, False), (600, True)])
def test_depth_is_checked_exactly_in_large_payloads(parse_path: str, depth: int, refused: bool) -> None:  # noqa: F811
    """Large payloads skip counting brackets and let orjson's writer (which refuses deep values) vouch for
    shallow ones; deep ones are still walked exactly."""
    payload = (b'{"type":"CUSTOM","name":"deep","value":[' + b'"' + b"x" * 5000 + b'",' + b"[" * depth
               + b"]" * depth + b"]}")
    if refused:
        with pytest.raises(LimitExceeded):
            decode_event(payload)
    else:
        assert isinstance(decode_event(payload), ev.CustomEvent)


@pytest.mark.parametrize("payload", [
    b'{"type":"CUSTOM","name":"x","value":123456789012345678901234}',
    b'{"type":"CUSTOM","name":"x","value":[123456789012345678901234]}',
    b'{"type":"CUSTOM","name":"x","value":{"n":123456789012345678901234}}',
    b'{"type":"CUSTOM","name":"x","value":-123456789012345678901234}',
], ids=["flat", "in-array", "in-object", "negative"])
def test_integers_of_twenty_digits_and_more_are_read_exactly(parse_path: str, payload: bytes) -> None:  # noqa: F811
    """orjson reads them as (inexact) floats: the codec must notice and read them exactly."""
    event = decode_event(payload)
    assert isinstance(event, ev.CustomEvent)
    assert json.loads(payload)["value"] == event.value
    assert "e+" not in repr(event.value) and "." not in repr(event.value)


def test_an_integer_of_twenty_digits_in_a_known_field_is_out_of_range(parse_path: str) -> None:  # noqa: F811
    with pytest.raises(DecodeError) as info:
        decode_event(b'{"type":"TEXT_MESSAGE_END","messageId":"m","timestamp":12345678901234567890123}')
    assert (info.value.pointer, info.value.event_type) == ("/timestamp", "TEXT_MESSAGE_END")
    assert "2^53" in str(info.value)


def test_many_shapes_of_one_event_stay_correct_past_the_compiled_shape_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each key order is a shape with its own generated builder, more of them than a reader keeps: the
    oldest are sent to rest, then dropped, and every object is decoded alike whichever way it is read."""
    keys = ["messageId", "delta", "timestamp", "subagentRunId"]
    values = {"messageId": "m", "delta": "d", "timestamp": 1, "subagentRunId": "s"}
    expected = ev.TextMessageContentEvent(message_id="m", delta="d", timestamp=1, subagent_run_id="s")
    monkeypatch.setattr(codec, "_derived", derive.Derived(codec._derived.policy))  # fresh caches: this test
    monkeypatch.setattr(codec, "_READERS", codec._ReaderByKind())                  # fills one class's budget
    orders = list(itertools.permutations(keys))
    for _ in range(4):  # 24 orders x 4 positions of "type" = 96 shapes > the budget
        for order in orders:
            for at in range(4):
                fields = [(k, values[k]) for k in order]
                fields.insert(at, ("type", "TEXT_MESSAGE_CONTENT"))
                assert decode_event(dict(fields)) == expected
    assert 4 * 24 > shapes.MAX_LIVE_SHAPES + shapes.MAX_RESTING_SHAPES
    cache = codec._derived.cache_of(codec._READERS["TEXT_MESSAGE_CONTENT"])
    assert cache is not None and cache.compiled > shapes.MAX_LIVE_SHAPES + shapes.MAX_RESTING_SHAPES
    assert (len(cache.live), len(cache.resting)) == (shapes.MAX_LIVE_SHAPES, shapes.MAX_RESTING_SHAPES)


def test_every_wire_type_keeps_its_fast_path_when_typing_forgets_its_union_objects(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``Union[...]`` objects are cached by typing only so long; a rebuilt one is equal but not identical, and
    must still be recognised (a long test run evicted them and silently disabled the fast path)."""
    monkeypatch.setattr(codec, "_derived", derive.Derived(codec._derived.policy))
    for cleanup in getattr(typing, "_cleanups", []):
        cleanup()
    for cls in ev.EVENT_TYPES.values():
        assert codec._derived.reader(cls) is not None, cls
    for union in (msg.Message, msg.ContentPart, msg.PartSource, rn.RunFinishedOutcome, rn.SubagentFinishedOutcome):
        assert codec._derived.reader(union) is not None, union


def test_the_fast_reader_takes_a_patch_exactly_when_the_checked_path_reads_it_silently() -> None:
    """The one patch check, with its glance at plain operations, decides alike on both paths: a STATE_DELTA
    whose operation the checked path refuses or warns about never takes the fast reader, and the one it
    takes is read as the checked path reads it."""
    names: list[Any] = ["add", "remove", "replace", "move", "copy", "test", "merge", 3, None, ["add"]]
    pointers: list[Any] = ["", "/a", "/a~0b~1c", "a", "/a~2", "/~", 5, None]
    absent = object()
    for name, path, source, value in itertools.product(names, pointers + [absent], pointers + [absent],
                                                       [absent, None, 1]):
        op: dict[str, Any] = {"op": name} if name is not None else {}
        for key, item in (("path", path), ("from", source), ("value", value)):
            if item is not absent:
                op[key] = item
        event = {"type": "STATE_DELTA", "delta": [op]}
        checked = _checked(event, ev.StateDeltaEvent)
        fast = _fast_or_fallback(event, ev.StateDeltaEvent)
        if fast is codec.Fallback:
            assert checked[0] == "error" or checked[2], op  # (the checked path refuses or warns)
        else:
            assert checked == ("ok", fast, []), op
        # the glance never passes what the exact check refuses
        try:
            policy.check_patch([op], "delta")
            exact = True
        except codec.FieldError:
            exact = False
        try:
            codec.CHECKS[ev.StateDeltaEvent](event, codec.warn)
            glanced = True
        except codec.FieldError:
            glanced = False
        assert glanced == exact, op


def test_the_fast_reader_takes_a_usage_exactly_when_the_checked_path_reads_it_silently() -> None:
    """A RUN_FINISHED or RUN_ERROR takes the fast reader only when its usage check finds nothing to report
    (no part of a total exceeds it); anything else takes the checked path, which warns."""
    names = ("inputTokens", "outputTokens", "reasoningTokens", "cachedInputTokens", "cacheWriteInputTokens")
    absent = object()
    for counts in itertools.product([absent, 0, 4, 5], repeat=len(names)):
        entry = {name: value for name, value in zip(names, counts, strict=True) if value is not absent}
        event = _run_end("RUN_FINISHED", usage=[{"outputTokens": 1}, entry])
        checked = _checked(event, ev.RunFinishedEvent)
        fast = _fast_or_fallback(event, ev.RunFinishedEvent)
        with collect_warnings() as sink:
            silent = codec.CHECKS[ev.RunFinishedEvent](event, codec.warn) is None
        assert (fast is not codec.Fallback) == (silent and not sink.items), entry
        if fast is not codec.Fallback:
            assert checked == ("ok", fast, []), entry
