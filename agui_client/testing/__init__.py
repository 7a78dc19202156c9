"""A scripted AG-UI 1.0 agent and a loopback server, for your tests (and ``agui demo``).

``ScriptedAgent`` is a real agent (a raw ASGI app) that plays scripted runs; ``serve`` runs it (or
any ASGI app) under uvicorn on ``127.0.0.1`` in a background thread. uvicorn comes with the
``testing`` extra and is imported only when ``serve`` is called.

A pytest fixture::

    import pytest
    from agui_client.testing import ScriptedAgent, serve

    @pytest.fixture(scope="session")
    def demo_url():
        with serve(ScriptedAgent.demo()) as server:
            yield server.url

    def test_demo_asks_for_approval(demo_url):
        with AgentClient(demo_url) as client:
            result = client.thread().run("Delete the staging environment")
        assert result.outcome == "interrupt"

An arbitrary script, one step per run on a thread::

    gate = Gate()
    agent = ScriptedAgent([
        [Start(), *text_message("m1", "Hello there"), Wait(gate), Finish()],
        Respond(status=503, body={"detail": "busy"}, headers={"retry-after": "1"}),
    ])

Async code uses the same server: ``async with serve(agent) as server:``.

``probe(target, prompt=...)`` checks a producer (a URL, or an ASGI app in-process) against the
interrupt rules and returns a ``ProbeReport`` (see ``docs/probe.md``)::

    def test_my_agent_follows_the_interrupt_rules():
        probe(app, prompt="Delete the staging environment").assert_conformant()
Recordings: ``RecordingTransport`` (``AsyncRecordingTransport``) keeps every exchange an httpx
client makes in a folder, as ``agui run --record DIR`` does, and ``RecordedAgent(DIR)`` serves such a
folder back, refusing (HTTP 409, then ``RecordingMismatch`` at ``check()``) a request that does not
match the recorded one. See docs/recordings.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .agent import FAULTS, WARNING_EVENT, Fault, OnUncovered, ScriptedAgent
    from .probing import CHECKS, CheckResult, Evidence, ProbeError, ProbeReport, ProbeRun, aprobe, probe
    from .recorded import MISMATCH_CODE, RecordedAgent, RecordingMismatch
    from .recording import AsyncRecordingTransport, RecordingTransport
    from .scenarios import (
        ANSWER_SCHEMA,
        APPROVAL_SCHEMA,
        APPROVE_SCHEMA,
        last_user_text,
        reasoning,
        text_message,
        tool_call,
    )
    from .script import Disconnect, Finish, Gate, Item, KeepAlive, Pause, Respond, Start, Step, StepResult, Stream, Wait
    from .server import Server, serve

_HOMES = {
    "FAULTS": "agent",
    "WARNING_EVENT": "agent",
    "Fault": "agent",
    "OnUncovered": "agent",
    "ScriptedAgent": "agent",
    "Disconnect": "script",
    "Finish": "script",
    "Gate": "script",
    "Item": "script",
    "KeepAlive": "script",
    "Pause": "script",
    "Respond": "script",
    "Start": "script",
    "Step": "script",
    "StepResult": "script",
    "Stream": "script",
    "Wait": "script",
    "CHECKS": "probing",
    "CheckResult": "probing",
    "Evidence": "probing",
    "ProbeError": "probing",
    "ProbeReport": "probing",
    "ProbeRun": "probing",
    "aprobe": "probing",
    "probe": "probing",
    "MISMATCH_CODE": "recorded",
    "RecordedAgent": "recorded",
    "RecordingMismatch": "recorded",
    "AsyncRecordingTransport": "recording",
    "RecordingTransport": "recording",
    "ANSWER_SCHEMA": "scenarios",
    "APPROVAL_SCHEMA": "scenarios",
    "APPROVE_SCHEMA": "scenarios",
    "last_user_text": "scenarios",
    "reasoning": "scenarios",
    "text_message": "scenarios",
    "tool_call": "scenarios",
    "Server": "server",
    "serve": "server",
}

__all__ = [
    "ScriptedAgent",
    "serve",
    "Server",
    "Gate",
    "Start",
    "Finish",
    "Wait",
    "Pause",
    "KeepAlive",
    "Disconnect",
    "Stream",
    "Respond",
    "Item",
    "Step",
    "StepResult",
    "OnUncovered",
    "Fault",
    "FAULTS",
    "WARNING_EVENT",
    "ANSWER_SCHEMA",
    "APPROVAL_SCHEMA",
    "APPROVE_SCHEMA",
    "text_message",
    "reasoning",
    "tool_call",
    "last_user_text",
    "probe",
    "aprobe",
    "ProbeReport",
    "ProbeRun",
    "CheckResult",
    "Evidence",
    "ProbeError",
    "CHECKS",
    "RecordingTransport",
    "AsyncRecordingTransport",
    "RecordedAgent",
    "RecordingMismatch",
    "MISMATCH_CODE",
]


def __getattr__(name: str) -> Any:
    # The kit is imported a name at a time, when first asked for: the CLI reads recordings and probes
    # with a module or two of it, and importing every one (uvicorn's app, the probe, the scenarios)
    # at `agui` start cost about 30 ms that `agui chat` never used.
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
