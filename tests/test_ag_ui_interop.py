"""``agui_client.ag_ui``: the client's wire types <-> the official ``ag_ui.core`` models, both ways.

Round trips over every event of the golden streams, the recorded producer captures (``tests/data/legacy``)
and every kind of stream ``bench/gen.py`` makes, plus the interrupts, resume entries and run inputs of the
golden resume vectors and the recorded requests:

* agui -> ag_ui -> agui gives back an equal object, for every event the client decodes;
* ag_ui -> agui -> ag_ui gives back an equal model (its wire JSON) for every event the official models
  accept, but for the places ``docs/ag-ui-interop.md`` names: the model's unknown fields (dropped with a
  UK-03 warning), and what the client refuses on the wire (``DecodeError``).
"""

from __future__ import annotations

import functools
import io
import json
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from ag_ui import core as official
from pydantic import BaseModel, TypeAdapter

from agui_client import (
    AgentCapabilities,
    DecodeError,
    Interrupt,
    ResumeEntry,
    RunAgentInput,
    TextMessageContentEvent,
    UnknownEvent,
)
from agui_client.ag_ui import _CLASSES, from_ag_ui, to_ag_ui
from agui_client.wire.codec import camel, decode, decode_value, encode
from agui_client.wire.sink import collect_warnings
from agui_client.wire.types.events import EVENT_TYPES

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"
LEGACY = ROOT / "tests" / "data" / "legacy"
EVENTS: TypeAdapter[Any] = TypeAdapter(official.Event)

#: Golden streams whose events the official models accept and the client refuses (IR-03, IR-04: a closed
#: outcome carrying interrupts; the models keep ``interrupts`` there as an unknown field).
CLIENT_REFUSES = {("run-finished-success-with-interrupts", 4), ("run-finished-cancelled-with-interrupts", 4)}
#: Events the client decodes and the official models refuse: a patch operation AG-UI does not define, or one
#: whose ``op`` is missing or not a string (the client keeps it and its fold skips the patch with a warning;
#: the models' patch union is closed).
#: Events the official models read but cannot write back (nested past pydantic's serialization depth; the
#: client refuses them, deeper than its 512 levels: TR-09).
MODELS_CANNOT_WRITE = {("payload-nested-past-limit", 2)}
MODELS_REFUSE = {("state-delta-unknown-op", 5), ("state-delta-op-not-string", 2), ("state-delta-op-not-string", 3),
                 ("state-delta-op-not-string", 4)}


def _quiet_decode(raw: Any) -> Any:
    with collect_warnings():
        return decode_value(raw)


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"{text} overflows a double")  # (B090: not JSON the client reads)
    return value


def _golden_lines() -> Iterator[tuple[str, int, Any]]:
    for path in sorted((GOLDEN / "streams").glob("*.jsonl")):
        for index, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
            try:
                yield path.stem, index, json.loads(line, parse_float=_finite)
            except ValueError:
                continue  # (the streams that test broken JSON: no event to convert)


def _sse_payloads(text: str) -> list[Any]:
    return [json.loads(line[len("data: "):]) for line in text.splitlines() if line.startswith("data: ")]


def _capture_events() -> Iterator[tuple[str, Any]]:
    for path in sorted(LEGACY.glob("*.sse")):
        for raw in _sse_payloads(path.read_text(encoding="utf-8")):
            yield path.name, raw


def _generated_events() -> Iterator[tuple[str, Any]]:
    sys.path.insert(0, str(ROOT))
    try:
        from bench import gen
    finally:
        sys.path.remove(str(ROOT))
    for kind in ("chat", "state", "tools", "snapshot", "mixed"):
        out = io.BytesIO()
        gen.write(kind, 7, 0.005, False, out)
        for line in out.getvalue().decode("utf-8").splitlines():
            yield kind, json.loads(line)


def _agui_round_trip(event: Any) -> None:
    model = to_ag_ui(event)
    assert type(model).__name__ == type(event).__name__
    assert isinstance(model, BaseModel) and model.__class__.__module__.startswith("ag_ui")
    assert from_ag_ui(model) == event


def _model_dump(model: BaseModel) -> Any:
    return model.model_dump(mode="json", by_alias=True)


def _known_only(model: BaseModel) -> Any:
    """The model's wire JSON without its unknown fields (``model_extra``), at every depth but inside a JSON
    Patch operation: the client holds a patch as plain JSON, so it keeps an operation's unknown fields."""
    def strip(value: Any) -> Any:
        if _is_patch_operation(value):
            return _model_dump(value)
        if isinstance(value, BaseModel):
            extra = set(value.model_extra or ())
            dumped = {}
            for name, field in type(value).model_fields.items():
                key = field.alias or name
                attr = getattr(value, name)
                if attr is None and not field.is_required():
                    continue
                dumped[key] = strip(attr)
            assert not extra & set(dumped)
            return dumped
        if isinstance(value, list):
            return [strip(item) for item in value]
        if isinstance(value, dict):
            return {key: strip(item) for key, item in value.items()}
        return value.value if hasattr(value, "value") and type(value).__module__.startswith("ag_ui") else value
    return json.loads(json.dumps(strip(model)))


def _is_patch_operation(value: Any) -> bool:
    return isinstance(value, BaseModel) and type(value).__name__.endswith("Operation")


def _has_extra(model: Any) -> bool:
    if _is_patch_operation(model):
        return False
    if isinstance(model, BaseModel):
        return bool(model.model_extra) or any(_has_extra(getattr(model, name)) for name in type(model).model_fields)
    if isinstance(model, list):
        return any(_has_extra(item) for item in model)
    return False


def _official_round_trip(model: BaseModel) -> None:
    with collect_warnings() as sink:
        back = to_ag_ui(from_ag_ui(model))
    assert _model_dump(back) == _known_only(model)
    # The unknown fields are what is lost, and the loss is reported (UK-03), never silent.
    assert ("UK-03" in {w.code for w in sink.items}) == _has_extra(model)


def test_every_wire_class_has_an_official_model_with_the_same_wire_fields() -> None:
    for cls in _CLASSES:
        model = getattr(official, cls.__name__)
        ours = {camel(field.name) for field in attrs.fields(cls)}
        ours |= {"type"} if hasattr(cls, "TYPE") else {"role"} if hasattr(cls, "ROLE") else set()
        assert {f.alias or n for n, f in model.model_fields.items()} == ours, cls.__name__
    assert {cls.__name__ for cls in EVENT_TYPES.values()} <= {cls.__name__ for cls in _CLASSES}


def test_every_golden_event_round_trips_both_ways() -> None:
    seen_types: set[str] = set()
    client_refused, models_refused = set(), set()
    for stream, index, raw in _golden_lines():
        if (stream, index) in MODELS_CANNOT_WRITE:
            with pytest.raises(DecodeError) as unwritable:  # (typed, naming the field: pydantic's is neither)
                _official_round_trip(EVENTS.validate_python(raw))
            assert unwritable.value.pointer == "/value"
            continue
        try:
            event = _quiet_decode(raw)
        except DecodeError:
            event = None
        if event is not None and not isinstance(event, UnknownEvent):
            seen_types.add(type(event).__name__)
            if (stream, index) in MODELS_REFUSE:
                with pytest.raises(ValueError) as caught:
                    to_ag_ui(event)
                assert ("merge" if stream == "state-delta-unknown-op" else "tag") in str(caught.value)
                models_refused.add((stream, index))
            else:
                _agui_round_trip(event)
        try:
            model = EVENTS.validate_python(raw)
        except ValueError:
            continue
        if (stream, index) in CLIENT_REFUSES:
            with pytest.raises(DecodeError) as refused, collect_warnings():
                from_ag_ui(model)
            assert refused.value.pointer == "/outcome/interrupts"
            client_refused.add((stream, index))
            continue
        _official_round_trip(model)
    assert client_refused == CLIENT_REFUSES and models_refused == MODELS_REFUSE
    assert seen_types == {cls.__name__ for cls in EVENT_TYPES.values()}  # every AG-UI 1.0 event type met


def test_the_recorded_captures_round_trip_both_ways() -> None:
    count = 0
    for _, raw in _capture_events():
        event = _quiet_decode(raw)
        if isinstance(event, UnknownEvent):
            continue  # (a pre-1.0 event without ids: the run session mints them, the decoder cannot)
        _agui_round_trip(event)
        _official_round_trip(EVENTS.validate_python(raw))
        count += 1
    assert count > 20


def test_every_generated_stream_round_trips_both_ways() -> None:
    kinds = set()
    for kind, raw in _generated_events():
        event = _quiet_decode(raw)
        _agui_round_trip(event)
        _official_round_trip(EVENTS.validate_python(raw))
        kinds.add(kind)
    assert kinds == {"chat", "state", "tools", "snapshot", "mixed"}


def test_interrupts_resume_entries_and_run_inputs_round_trip_both_ways() -> None:
    counts = {"Interrupt": 0, "ResumeEntry": 0, "RunAgentInput": 0}
    cases: list[tuple[Any, Any]] = []
    for path in sorted((GOLDEN / "resume").glob("*.json")):
        vector = json.loads(path.read_text(encoding="utf-8"))
        cases += [(Interrupt, raw) for raw in vector["case"].get("pendingInterrupts", [])]
        cases += [(ResumeEntry, raw) for raw in vector["case"].get("resume", [])]
        if vector["oracle"].get("wireInput"):
            cases.append((RunAgentInput, vector["oracle"]["wireInput"]))
    for path in sorted(LEGACY.glob("*.requests.json")):
        cases += [(RunAgentInput, raw) for raw in json.loads(path.read_text(encoding="utf-8"))]
    for cls, raw in cases:
        try:
            with collect_warnings():
                ours = decode(raw, cls)
        except DecodeError:
            continue  # (vectors of refused input: an expiresAt that is not a string, say)
        _agui_round_trip(ours)
        model = getattr(official, cls.__name__).model_validate(raw)
        _official_round_trip(model)
        counts[cls.__name__] += 1
    assert min(counts.values()) >= 8, counts


CAPABILITIES = {
    "identity": {"name": "a", "type": "langgraph", "description": "d", "version": "1", "provider": "p",
                 "documentationUrl": "https://example.invalid/doc", "metadata": {"k": 1}},
    "transport": {"streaming": True, "websocket": False, "httpBinary": False, "pushNotifications": False,
                  "resumable": True},
    "tools": {"supported": True, "items": [{"name": "t", "description": "d", "parameters": {"type": "object"}}],
              "parallelCalls": True, "clientProvided": True},
    "output": {"structuredOutput": True, "supportedMimeTypes": ["text/plain"]},
    "state": {"snapshots": True, "deltas": True, "memory": False, "persistentState": True},
    "multiAgent": {"supported": True, "delegation": True, "handoffs": False,
                   "subagents": [{"name": "s", "description": "d"}]},
    "reasoning": {"supported": True, "streaming": True, "encrypted": False},
    "multimodal": {"input": {"image": True, "audio": False, "video": False, "pdf": True, "file": True},
                   "output": {"image": False, "audio": False}},
    "execution": {"codeExecution": False, "sandboxed": True, "maxIterations": 10, "maxExecutionTime": 1000},
    "humanInTheLoop": {"supported": True, "approvals": True, "interventions": False, "feedback": True,
                       "interrupts": True, "approveWithEdits": True},
    "custom": {"x": None},
}


def test_agent_capabilities_round_trip_both_ways_with_every_field() -> None:
    ours = decode(CAPABILITIES, AgentCapabilities)
    model = to_ag_ui(ours)

    assert isinstance(model, official.AgentCapabilities)
    assert _model_dump(model) == CAPABILITIES
    assert from_ag_ui(model) == ours
    _official_round_trip(official.AgentCapabilities.model_validate(CAPABILITIES))


def test_what_the_conversion_keeps_field_by_field() -> None:
    model = to_ag_ui(TextMessageContentEvent(message_id="m1", delta="", timestamp=5, metadata={"k": None}))
    # Enums become the wire's strings, absent fields stay absent, a null inside metadata stays.
    assert _model_dump(model) == {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "",
                                  "timestamp": 5, "metadata": {"k": None}}
    assert isinstance(model, official.TextMessageContentEvent)
    custom = official.CustomEvent(name="n", value=None)  # (a required null is a value, not an absence)
    assert encode(from_ag_ui(custom)) == {"type": "CUSTOM", "name": "n", "value": None}
    assert _model_dump(to_ag_ui(from_ag_ui(custom))) == {"type": "CUSTOM", "name": "n", "value": None}


def test_an_official_model_with_unknown_fields_loses_them_with_a_warning() -> None:
    model = official.RunStartedEvent.model_validate({"threadId": "t", "runId": "r", "futureField": 1})

    with collect_warnings() as sink:
        event = from_ag_ui(model)

    assert encode(event) == {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
    assert [(w.code, w.pointer) for w in sink.items] == [("UK-03", "/futureField")]


@pytest.mark.parametrize(("model", "pointer", "said"), [
    (official.StateSnapshotEvent(snapshot=functools.reduce(lambda inner, _: {"d": inner}, range(300), 1)),
     "/snapshot", "Maximum serialization depth exceeded"),
    (official.ResumeEntry(interrupt_id="i1", status="resolved",
                          payload=functools.reduce(lambda v, _: [v], range(300), 1)),
     "/payload", "Maximum serialization depth exceeded"),
    (official.CustomEvent(name="n", value={"blob": b"\xff"}), "/value", "invalid utf-8"),
], ids=["deep-snapshot", "deep-payload", "bytes"])
def test_a_model_pydantic_cannot_write_is_a_decode_error_naming_the_field(model: Any, pointer: str, said: str) -> None:
    # pydantic validates values it cannot write back: nested past its writer's depth (about 250 levels;
    # the client reads 512) or bytes that are not UTF-8. from_ag_ui let pydantic's bare ValueError out,
    # naming neither the field nor the model: a relay turning a browser's resume entry into the
    # client's answered with a 500.
    with pytest.raises(DecodeError) as refused:
        from_ag_ui(model)

    assert refused.value.pointer == pointer
    assert type(model).__name__ in str(refused.value) and said in str(refused.value)


def test_an_unknown_event_and_foreign_objects_are_refused_by_name() -> None:
    with pytest.raises(ValueError) as refused:
        to_ag_ui(UnknownEvent(type="FUTURE_EVENT", raw={"type": "FUTURE_EVENT"}))
    assert "'FUTURE_EVENT'" in str(refused.value)
    with pytest.raises(TypeError) as refused:
        to_ag_ui({"type": "RUN_STARTED"})
    assert "not dict" in str(refused.value)
    with pytest.raises(TypeError) as refused:
        from_ag_ui(Foreign(type="RUN_STARTED"))
    assert "not Foreign" in str(refused.value)


class Foreign(BaseModel):
    """A pydantic model that is not one of ``ag_ui.core``'s."""

    type: str


def test_the_docstring_examples_run_as_written() -> None:
    import agui_client.ag_ui as module

    blocks = [textwrap.dedent(block) for obj in (module, to_ag_ui, from_ag_ui)
              for block in re.findall(r"Example::\n\n((?:    .*\n|\n)+)", obj.__doc__ or "")]
    assert len(blocks) == 3
    for block in blocks:
        exec(block, {"to_ag_ui": to_ag_ui, "from_ag_ui": from_ag_ui})  # (each asserts what it shows)


def _run_plain(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          check=False, cwd=ROOT)


def test_the_core_imports_without_ag_ui_and_the_module_says_which_extra_it_needs() -> None:
    done = _run_plain("""
        import sys
        sys.modules["ag_ui"] = None  # (ag-ui-protocol not installed)
        import agui_client, agui_client.ag_ui
        from agui_client import CustomEvent
        assert "pydantic" not in sys.modules, "the core must not import pydantic"
        try:
            agui_client.ag_ui.to_ag_ui(CustomEvent(name="n", value=1))
        except ImportError as exc:
            print(exc)
    """)
    assert done.returncode == 0, done.stderr
    assert "pip install 'agui-client[ag-ui]'" in done.stdout
