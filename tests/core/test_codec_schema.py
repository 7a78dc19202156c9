"""What we encode is valid AG-UI 1.0: every encoded corpus value validates against the reference's own JSON
Schema (``tests/data/agui-1.0.schema.json``, exported by the reference TS client with
``fold.mjs --export-schema``), with jsonschema's Draft 2020-12 validator.

The schema's ``$defs`` are reached through a ``referencing`` registry, so ``#/$defs/Event``,
``#/$defs/RunAgentInput`` … are validated exactly as the schema states them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import corpus
import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from agui_client.types.run import RunAgentInput
from agui_client.wire.codec import decode, decode_event, encode

SCHEMA_PATH = Path(__file__).resolve().parents[1] / "data" / "agui-1.0.schema.json"
GEN = Path(__file__).resolve().parents[2] / "bench" / "gen.py"
KINDS = ("chat", "state", "tools", "snapshot", "mixed")

#: The schema definition for each ``VALUES`` sample, by the sample name's prefix.
DEFS = {
    "RunAgentInput": "RunAgentInput",
    "Interrupt": "Interrupt",
    "ResumeEntry": "ResumeEntry",
    "Tool": "Tool",
    "Context": "Context",
    "RunFinishedOutcome": "RunFinishedOutcome",
    "SubagentFinishedOutcome": "SubagentFinishedOutcome",
    "TokenUsage": "TokenUsage",
    "ToolCall": "ToolCall",
    "FunctionCall": "FunctionCall",
    "Message": "Message",
    "ContentPart": "ContentPart",
    "PartSource": "PartSource",
    "AgentCapabilities": "AgentCapabilities",
    "SubagentInfo": "SubagentInfo",
}


@cache
def _schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return schema


@cache
def validator(definition: str) -> Draft202012Validator:
    """A validator for ``#/$defs/<definition>`` of the AG-UI schema."""
    schema = _schema()
    resource = Resource.from_contents(schema, default_specification=DRAFT202012)
    registry: Registry[Any] = Registry().with_resource(schema["$id"], resource)
    return Draft202012Validator({"$ref": f"{schema['$id']}#/$defs/{definition}"}, registry=registry)


def errors(definition: str, instance: Any) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
            for e in validator(definition).iter_errors(instance)]


def test_the_schema_is_the_reference_draft_2020_12_schema() -> None:
    schema = _schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)
    assert {"Event", "RunAgentInput", "Message", "AgentCapabilities"} <= set(schema["$defs"])


def test_the_validator_really_validates() -> None:
    """Guard against a vacuous validator (a wrong ``$ref`` would accept everything)."""
    assert errors("Event", {"type": "TEXT_MESSAGE_END"}) != []
    assert errors("Event", {"type": "TEXT_MESSAGE_END", "messageId": "m", "timestamp": "1"}) != []
    assert errors("Event", {"type": "RUN_FINISHED", "threadId": "t", "runId": "r",
                            "outcome": {"type": "interrupt", "interrupts": []}}) != []
    assert errors("RunAgentInput", {"threadId": "t", "runId": "r"}) != []
    assert errors("Event", {"type": "TEXT_MESSAGE_END", "messageId": "m"}) == []


@pytest.mark.parametrize(("name", "sample"), corpus.event_samples(), ids=[n for n, _ in corpus.EVENTS])
def test_every_encoded_event_is_valid_against_the_schema(name: str, sample: dict[str, Any]) -> None:
    assert errors("Event", encode(decode_event(sample))) == []


@pytest.mark.parametrize(("name", "sample"), corpus.INPUTS, ids=[n for n, _ in corpus.INPUTS])
def test_every_encoded_run_agent_input_is_valid_against_the_schema(name: str, sample: dict[str, Any]) -> None:
    assert errors("RunAgentInput", encode(decode(sample, RunAgentInput))) == []


@pytest.mark.parametrize(("name", "cls", "sample"), corpus.value_samples(), ids=[n for n, _, _ in corpus.VALUES])
def test_every_encoded_value_is_valid_against_its_definition(name: str, cls: Any, sample: dict[str, Any]) -> None:
    assert errors(DEFS[name.split("/")[0]], encode(decode(sample, cls))) == []


def test_every_encoded_run_started_input_is_valid_against_the_schema() -> None:
    inputs = [s["input"] for _, s in corpus.event_samples() if s["type"] == "RUN_STARTED" and "input" in s]
    assert len(inputs) >= 2
    for value in inputs:
        assert errors("RunAgentInput", value) == []


@pytest.mark.parametrize("kind", KINDS)
def test_every_encoded_event_of_a_generated_stream_is_valid(kind: str, tmp_path: Path) -> None:
    out = tmp_path / f"{kind}.jsonl"
    subprocess.run([sys.executable, str(GEN), kind, "--scale", "0.01", "--seed", "3", "-o", str(out)],
                   check=True, capture_output=True)
    lines = out.read_bytes().splitlines()
    assert lines
    check = validator("Event")
    for line in lines:
        encoded = encode(decode_event(line))
        problems = [e.message for e in check.iter_errors(encoded)]
        assert problems == [], encoded.get("type")
