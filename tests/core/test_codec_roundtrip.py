"""Round trips: ``encode(decode(x)) == x`` for every sample of the corpus and every line of the gen.py streams.

The corpus (``corpus.py``) is checked here to really cover the wire types: every field of every
attrs wire class is set in at least one sample, every event type has a sample with no optional field,
and every union member (event, role, content part, source, outcome) appears.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import corpus
import pytest

from agui_client.types import capabilities as cap
from agui_client.types import events as ev
from agui_client.types import messages as msg
from agui_client.types import run as rn
from agui_client.wire import codec, jsonio, values
from agui_client.wire.codec import decode, decode_event, encode

GEN = Path(__file__).resolve().parents[2] / "bench" / "gen.py"
KINDS = ("chat", "state", "tools", "snapshot", "mixed")

EVENT_IDS = [name for name, _ in corpus.EVENTS]
VALUE_IDS = [name for name, _, _ in corpus.VALUES]


@pytest.fixture(params=["orjson", "stdlib"])
def parse_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "stdlib":
        monkeypatch.setattr(jsonio, "_orjson", None)
        monkeypatch.setattr(values, "ORJSON", None)  # (the copies and surrogate check use it too)
    else:
        assert jsonio._orjson is not None, "orjson (the `fast` extra) must be installed to test its parse path"
    return str(request.param)


# ------------------------------------------------------------------------------------------------
# The corpus round-trips
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "sample"), corpus.event_samples(), ids=EVENT_IDS)
def test_every_event_sample_round_trips(name: str, sample: dict[str, Any]) -> None:
    pristine = copy.deepcopy(sample)
    event = decode_event(sample)
    assert type(event) is ev.EVENT_TYPES[sample["type"]]
    assert encode(event) == pristine
    assert sample == pristine  # decoding never mutates the caller's mapping


@pytest.mark.parametrize("separators", [(", ", ": "), (",", ":")], ids=["spaced", "compact"])
@pytest.mark.parametrize(("name", "sample"), corpus.event_samples(), ids=EVENT_IDS)
def test_every_event_sample_round_trips_from_json_text(
    parse_path: str, name: str, sample: dict[str, Any], separators: tuple[str, str]
) -> None:
    text = json.dumps(sample, ensure_ascii=False, separators=separators)
    assert encode(decode_event(text.encode("utf-8"))) == sample
    assert encode(decode_event(text)) == sample
    assert json.loads(jsonio.dump_json(encode(decode_event(text)))) == sample


@pytest.mark.parametrize(("name", "cls", "sample"), corpus.value_samples(), ids=VALUE_IDS)
def test_every_value_sample_round_trips(name: str, cls: Any, sample: dict[str, Any]) -> None:
    pristine = copy.deepcopy(sample)
    assert encode(decode(sample, cls)) == pristine
    assert sample == pristine


def test_encode_of_a_sequence_is_a_list_of_wire_objects() -> None:
    messages = [decode(m, msg.Message) for m in corpus.ALL_MESSAGES]
    assert encode(messages) == corpus.ALL_MESSAGES
    assert encode(tuple(messages)) == corpus.ALL_MESSAGES


def test_free_form_json_keeps_its_nulls() -> None:
    """Nulls *inside* opaque JSON are data: state, payload, metadata values, rawEvent, result, responseSchema."""
    started = decode_event(dict(corpus.EVENTS)["RUN_STARTED/full"])
    assert isinstance(started, ev.RunStartedEvent) and started.input is not None
    assert started.raw_event == {"provider": "openai", "id": "evt_1", "parent": None, "items": [1, None, {"x": None}]}
    assert started.metadata is not None and started.metadata["note"] is None
    assert started.input.state["empty"] is None
    assert started.input.forwarded_props == {"feature": "x", "off": None}
    assert started.input.resume is not None and started.input.resume[0].payload["comment"] is None
    assert started.input.tools is not None and started.input.tools[1].parameters["properties"]["q"]["default"] is None

    finished = decode_event(dict(corpus.EVENTS)["RUN_FINISHED/interrupt"])
    assert isinstance(finished, ev.RunFinishedEvent)
    assert isinstance(finished.outcome, rn.RunFinishedInterruptOutcome)
    schema = finished.outcome.interrupts[1].response_schema
    assert schema is not None and schema["properties"]["comment"]["default"] is None
    assert finished.outcome.interrupts[1].metadata == {"risk": "high", "ticket": None}

    result = decode_event(dict(corpus.EVENTS)["RUN_FINISHED/full"])
    assert isinstance(result, ev.RunFinishedEvent) and result.result["detail"] is None

    delta = decode_event(dict(corpus.EVENTS)["STATE_DELTA/min"])
    assert isinstance(delta, ev.StateDeltaEvent)
    assert delta.delta[0] == {"op": "add", "path": "/a", "value": None}


@pytest.mark.parametrize(("kind", "field"), [("STATE_SNAPSHOT", "snapshot"), ("CUSTOM", "value"), ("RAW", "event")])
def test_a_required_free_form_field_may_be_null(kind: str, field: str) -> None:
    """SP-01 / UK-12 / UK-11: null is a value of a required any-JSON field, not a legacy absent one."""
    sample = dict(corpus.EVENTS)[f"{kind}/null"]
    event = decode_event(sample)
    assert getattr(event, field) is None
    assert encode(event) == sample


def test_unknown_event_round_trips_verbatim() -> None:
    raw = {"type": "ACME_FUTURE", "a": [1, None], "b": {"c": None}}
    with codec.collect_warnings() as sink:
        event = decode_event(raw)
    assert event == ev.UnknownEvent(type="ACME_FUTURE", raw=raw)
    assert encode(event) == raw
    assert [w.code for w in sink.items] == ["UK-02"]


# ------------------------------------------------------------------------------------------------
# The corpus covers the wire types
# ------------------------------------------------------------------------------------------------


def _wire_classes() -> set[type]:
    classes: set[type] = set()
    for module in (ev, msg, rn, cap):
        for name in module.__all__:
            obj = getattr(module, name)
            if isinstance(obj, type) and attrs.has(obj) and obj is not ev.UnknownEvent:
                classes.add(obj)
    return classes


def _walk(obj: Any) -> Iterator[Any]:
    """Every attrs instance reachable from ``obj`` (through attrs fields and tuples, not free-form JSON)."""
    if isinstance(obj, tuple):
        for item in obj:
            yield from _walk(item)
    elif attrs.has(type(obj)):
        yield obj
        for a in attrs.fields(type(obj)):
            yield from _walk(getattr(obj, a.name))


def _decoded_corpus() -> list[Any]:
    decoded: list[Any] = [decode_event(sample) for _, sample in corpus.event_samples()]
    decoded += [decode(sample, cls) for _, cls, sample in corpus.value_samples()]
    return decoded


def test_corpus_has_every_event_type() -> None:
    assert {sample["type"] for _, sample in corpus.EVENTS} == set(ev.EVENT_TYPES)
    assert len(ev.EVENT_TYPES) == 31


def test_corpus_sets_every_field_of_every_wire_type() -> None:
    seen_classes: set[type] = set()
    set_fields: set[tuple[type, str]] = set()
    for root in _decoded_corpus():
        for obj in _walk(root):
            seen_classes.add(type(obj))
            for a in attrs.fields(type(obj)):
                if getattr(obj, a.name) is not None:
                    set_fields.add((type(obj), a.name))
    classes = _wire_classes()
    assert classes - seen_classes == set()
    every_field = {(cls, a.name) for cls in classes for a in attrs.fields(cls)}
    missing = sorted(f"{cls.__name__}.{name}" for cls, name in every_field - set_fields)
    assert missing == []


def test_every_event_type_has_a_sample_without_optional_fields() -> None:
    bare: set[str] = set()
    for _, sample in corpus.event_samples():
        event = decode_event(sample)
        optional = [a.name for a in attrs.fields(type(event)) if a.default is None]
        if all(getattr(event, name) is None for name in optional):
            bare.add(sample["type"])
    assert bare == set(ev.EVENT_TYPES)


def test_every_optional_field_of_every_event_is_set_in_one_sample() -> None:
    """Per event type, one ``full`` sample sets every optional field at once (not just across samples)."""
    for kind, cls in ev.EVENT_TYPES.items():
        event = decode_event(dict(corpus.EVENTS)[f"{kind}/full"])
        unset = [a.name for a in attrs.fields(cls) if getattr(event, a.name) is None]
        assert unset == [], kind


def test_corpus_has_every_union_member() -> None:
    decoded = [obj for root in _decoded_corpus() for obj in _walk(root)]
    roles = {type(obj).ROLE for obj in decoded if hasattr(type(obj), "ROLE")}
    assert roles == {"developer", "system", "assistant", "user", "tool", "activity", "reasoning"}
    parts = {type(obj).TYPE for obj in decoded if isinstance(obj, (msg.TextPart, msg.ImagePart, msg.AudioPart,
                                                                    msg.VideoPart, msg.DocumentPart))}
    assert parts == {"text", "image", "audio", "video", "document"}
    sources = {type(obj).TYPE for obj in decoded if isinstance(obj, (msg.DataSource, msg.UrlSource, msg.FileSource))}
    assert sources == {"data", "url", "file"}
    run_outcomes = {type(e.outcome) for e in decoded if isinstance(e, ev.RunFinishedEvent) and e.outcome}
    assert run_outcomes == {rn.RunFinishedSuccessOutcome, rn.RunFinishedInterruptOutcome,
                            rn.RunFinishedCancelledOutcome}
    sub_outcomes = {type(e.outcome) for e in decoded if isinstance(e, ev.SubagentFinishedEvent) and e.outcome}
    assert sub_outcomes == {rn.SubagentFinishedSuccessOutcome, rn.SubagentFinishedSuspendedOutcome}
    ops = {op["op"] for e in decoded if isinstance(e, ev.StateDeltaEvent) for op in e.delta}
    assert ops == {"add", "remove", "replace", "move", "copy", "test"}
    user_content = [m.content for m in decoded if isinstance(m, msg.UserMessage)]
    assert any(isinstance(c, str) for c in user_content) and any(isinstance(c, tuple) for c in user_content)
    tool_results = [e.content for e in decoded if isinstance(e, ev.ToolCallResultEvent)]
    assert any(isinstance(c, str) for c in tool_results) and any(isinstance(c, tuple) for c in tool_results)


# ------------------------------------------------------------------------------------------------
# The gen.py streams
# ------------------------------------------------------------------------------------------------


def _generate(kind: str, out: Path) -> list[bytes]:
    subprocess.run([sys.executable, str(GEN), kind, "--scale", "0.01", "--seed", "3", "-o", str(out)],
                   check=True, capture_output=True)
    lines = out.read_bytes().splitlines()
    assert lines, f"gen.py {kind} wrote nothing"
    return lines


@pytest.mark.parametrize("kind", KINDS)
def test_every_line_of_a_generated_stream_round_trips(parse_path: str, kind: str, tmp_path: Path) -> None:
    """No warning may be raised (filterwarnings=error): the generated streams are clean 1.0."""
    lines = _generate(kind, tmp_path / f"{kind}.jsonl")
    types = set()
    for line in lines:
        event = decode_event(line)
        assert not isinstance(event, ev.UnknownEvent)
        assert encode(event) == json.loads(line)
        types.add(event.TYPE)
    assert {"RUN_STARTED", "RUN_FINISHED"} <= types
    assert len(types) >= 4
