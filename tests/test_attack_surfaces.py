"""Attack audit, third round: the surfaces the first two rounds did not reach.

A hostile agent on 127.0.0.1 (or a hostile recording folder, or a tampered stored thread) against
what the CLI prints, what the chat exports, what `agui probe` answers, what spans and warnings say,
and how recording folders are read. Each test fails without its fix (CHANGELOG, "Attack audit, third
round").
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agui_client.cli import forms
from agui_client.testing import ScriptedAgent

AGUI = [sys.executable, "-m", "agui_client.cli"]
ENV = {**os.environ, "PYTHONIOENCODING": "utf-8", "NO_COLOR": "1"}
ENV.pop("FORCE_COLOR", None)


def agui(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*AGUI, *args], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=timeout, env=ENV, check=False)


# --------------------------------------------------------------------------------------------------
# --yes and agui probe: an object schema without properties
# --------------------------------------------------------------------------------------------------


def _nested(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"a": schema}, "required": ["a"]}
    return schema


@pytest.mark.parametrize(("schema", "expected"), [
    ({"type": "object"}, {}),
    ({"type": "object", "properties": {}}, {}),
    ({"properties": {}}, {}),
    ({"type": "object", "properties": {"a": {"type": "object"}}, "required": ["a"]}, {"a": {}}),
])
def test_the_yes_answer_to_an_object_without_properties_is_the_empty_object(schema: dict[str, Any],
                                                                            expected: Any) -> None:
    assert forms.yes_payload(schema) == expected


def test_the_yes_answer_fills_an_agents_deep_nesting_to_a_bounded_depth() -> None:
    payload = forms.yes_payload(_nested(2000))

    depth = 0
    while isinstance(payload, dict) and "a" in payload:
        payload, depth = payload["a"], depth + 1
    assert payload == {}
    assert 16 <= depth <= 64


def test_agui_probe_answers_an_interrupt_whose_schema_is_a_bare_object(served: Any) -> None:
    # `{"type": "object"}` is a schema producers write; the probe's default answer went round between
    # the form and its filler until Python's recursion limit, and the probe died with a traceback.
    endpoint = served(ScriptedAgent.interrupts(1, response_schema={"type": "object"}))

    done = agui("probe", endpoint.url, "--prompt", "do it", "--json")

    assert "Traceback" not in done.stderr and "RecursionError" not in done.stderr
    report = json.loads(done.stdout)
    assert done.returncode == 0, done.stderr
    resumes = [r for r in endpoint.agent.requests if r.resume]
    assert any(entry.payload == {} for r in resumes for entry in r.resume)  # (the schema's own answer)
    assert report["checks"]
