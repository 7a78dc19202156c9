"""The five transport fixtures of ag-ui-validate 0.4.0, played byte for byte by a real server.

Each scenario's chunks are written as separate HTTP body writes with the scenario's content type (an
abnormal end of file becomes a dropped connection); the client must reach the verdict
shared/spec/bad-inputs.md decides, which is not always the validator's (a reason says why).
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import pytest

from agui_client import AgentClient, StreamEnded
from agui_client.testing import Disconnect, ScriptedAgent, Stream, serve

FIXTURES = resources.files("ag_ui_validate") / "spec" / "fixtures" / "invalid"

# fixture -> (verdict, warning code expected on the result or None, why)
VERDICTS: dict[str, tuple[str, str | None, str]] = {
    "AGUI501-missing-data-prefix": ("warn", "AGUI501", "B001: the JSON line without data: is an unknown SSE field, "
                                    "warned and not parsed; the run completes (the validator rates it an error)"),
    "AGUI505-unexpected-content-type": ("warn", "AGUI505", "B043: warned, then read as SSE"),
    "AGUI506-keepalive-gap": ("accept", None, "B078: a long gap is fine under the default idle timeout "
                              "(the gaps are not replayed here: they would only slow the test)"),
    "AGUI507-buffered-response": ("accept", None, "B070: one read folds like a stream"),
    "AGUI508-connection-dropped": ("reject", None, "B074: the connection ended mid-run: StreamEnded"),
}


def _scenario(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / name / "scenario.json").read_text())


@pytest.mark.parametrize("name", sorted(VERDICTS))
def test_transport_fixture_gets_the_decided_verdict(name: str) -> None:
    scenario = _scenario(name)
    verdict, code, _why = VERDICTS[name]
    items: list[Any] = [chunk["text"].encode() for chunk in scenario["chunks"]]
    if scenario.get("abnormalEof"):
        items.append(Disconnect())
    agent = ScriptedAgent([Stream(items=items, content_type=scenario["contentType"])])
    with serve(agent) as server, AgentClient(server.url) as client:
        thread = client.thread()
        if verdict == "reject":
            with pytest.raises(StreamEnded) as caught:
                thread.run("go")
            assert caught.value.result is not None and caught.value.result.outcome is None
            return
        result = thread.run("go")
    assert result.outcome == "success"
    codes = {w.code for w in result.warnings}
    if code is not None:
        assert code in codes
    else:
        assert not codes - {"LC-08"}  # the fixtures' own thread/run ids differ from the request's


def test_every_transport_fixture_has_a_verdict() -> None:
    scenarios = {p.name for p in FIXTURES.iterdir() if (p / "scenario.json").is_file()}
    assert scenarios == set(VERDICTS)
