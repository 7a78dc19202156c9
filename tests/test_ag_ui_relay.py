"""The ag-ui relay example (``examples/ag_ui_relay.py``), run for real.

The relay runs under uvicorn in a process of its own against a ``ScriptedAgent`` served on 127.0.0.1 by
this test. What it sends the browser is read the way a browser-side consumer reads it (each SSE frame
validated by the official ``ag_ui.core`` models) and must be the very events the agent sent; the resume
the browser writes as the official ``ResumeEntry`` JSON reaches the agent as the client's resume list.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from ag_ui import core as official
from pydantic import TypeAdapter
from serverkit import SURROGATE_HALVES, drain_log, free_port

from agui_client import decode_event
from agui_client.ag_ui import from_ag_ui
from agui_client.testing import Finish, Gate, ScriptedAgent, Start, Wait
from agui_client.types import (
    ActivitySnapshotEvent,
    CustomEvent,
    Event,
    RunAgentInput,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    StateDeltaEvent,
    StateSnapshotEvent,
    StepFinishedEvent,
    StepStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    TokenUsage,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)

ROOT = Path(__file__).resolve().parent.parent
#: A watchdog for a process or a response that never comes, never a timing.
WATCHDOG = 60.0
EVENTS: TypeAdapter[Any] = TypeAdapter(official.Event)


@pytest.fixture
def relay(served: Callable[[Any], Any]) -> Iterator[Callable[[Any], str]]:
    """``relay(agent)``: the example under uvicorn, relaying to ``agent``; returns the relay's URL."""
    processes: list[tuple[subprocess.Popen[str], threading.Thread]] = []

    def start(agent: Any) -> str:
        env = {**os.environ, "AGENT_URL": served(agent).url}
        log: list[str] = []
        for _attempt in range(5):
            port = free_port()
            process = subprocess.Popen(
                [sys.executable, "-m", "uvicorn", "examples.ag_ui_relay:app", "--host", "127.0.0.1",
                 "--port", str(port)],
                cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                text=True)
            assert process.stderr is not None
            # uvicorn says when the app is ready; waiting on its log needs no polling or sleeps.
            for line in process.stderr:
                log.append(line)
                if "Application startup complete" in line:
                    drain = threading.Thread(target=drain_log, args=(process.stderr,), daemon=True)
                    drain.start()
                    processes.append((process, drain))
                    return f"http://127.0.0.1:{port}"
            process.wait()
            process.stderr.close()
        pytest.fail("the relay did not start:\n" + "".join(log[-30:]), pytrace=False)

    yield start
    for process, drain in processes:
        process.terminate()
        process.wait(WATCHDOG)
        drain.join(WATCHDOG)
        assert process.stderr is not None
        process.stderr.close()


def browser_events(response: httpx.Response) -> list[Any]:
    """What a browser-side consumer reads: each frame's JSON validated by the official models."""
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    frames = [block[len("data: "):] for block in response.text.split("\n\n") if block.startswith("data: ")]
    assert len(frames) == response.text.count("\n\n")  # (nothing but data frames)
    models = [EVENTS.validate_json(frame) for frame in frames]
    # The client's own decoder reads the same frames as the same events.
    assert [from_ag_ui(model) for model in models] == [decode_event(frame) for frame in frames]
    return models


class Recorded:
    """A step playing one of every kind of streamed event, with fixed ids, remembering what it played."""

    def __init__(self) -> None:
        self.played: list[list[Event]] = []

    def step(self, run_input: RunAgentInput) -> list[Any]:
        body: list[Event] = [
            StepStartedEvent(step_name="plan", timestamp=1),
            TextMessageStartEvent(message_id="m1", role="assistant"),
            TextMessageContentEvent(message_id="m1", delta="Héllo, "),
            TextMessageContentEvent(message_id="m1", delta="wörld"),
            TextMessageEndEvent(message_id="m1"),
            ToolCallStartEvent(tool_call_id="c1", tool_call_name="search", parent_message_id="m1"),
            ToolCallArgsEvent(tool_call_id="c1", delta='{"q": "x"}'),
            ToolCallEndEvent(tool_call_id="c1"),
            ToolCallResultEvent(message_id="t1", tool_call_id="c1", content="found", role="tool"),
            StateSnapshotEvent(snapshot={"n": 1, "tags": ["a"]}),
            StateDeltaEvent(delta=({"op": "replace", "path": "/n", "value": 2},)),
            ActivitySnapshotEvent(message_id="a1", activity_type="progress", content={"done": 1}),
            CustomEvent(name="note", value=None, metadata={"k": "v"}),
            StepFinishedEvent(step_name="plan"),
        ]
        finished = Finish(outcome=RunFinishedSuccessOutcome(), result={"ok": True},
                          usage=(TokenUsage(model="m", input_tokens=3, output_tokens=4, total_tokens=7),))
        self.played.append(body)
        return [Start(), *body, finished]


def test_the_browser_reads_the_very_events_the_agent_sent(relay: Callable[[Any], str]) -> None:
    recorded = Recorded()
    agent = ScriptedAgent([recorded.step], cycle=True)
    url = relay(agent)

    with httpx.Client(timeout=WATCHDOG) as http:
        models = browser_events(http.post(f"{url}/threads/t1/runs", json={"message": "hi"}))

    events = [from_ag_ui(model) for model in models]
    run_input = agent.requests[0]
    assert isinstance(events[0], RunStartedEvent)
    assert (events[0].thread_id, events[0].run_id, events[0].protocol_version) == ("t1", run_input.run_id, "1.0")
    assert events[1:-1] == recorded.played[0]
    finished = events[-1]
    assert (finished.run_id, finished.result, finished.usage) == (
        run_input.run_id, {"ok": True}, (TokenUsage(model="m", input_tokens=3, output_tokens=4, total_tokens=7),))
    assert isinstance(models[-1], official.RunFinishedEvent)
    assert isinstance(models[-1].outcome, official.RunFinishedSuccessOutcome)


def test_the_browser_answers_an_interrupt_with_the_official_resume_entry(relay: Callable[[Any], str]) -> None:
    agent = ScriptedAgent.demo()
    url = relay(agent)

    with httpx.Client(timeout=WATCHDOG) as http:
        first = browser_events(http.post(f"{url}/threads/t2/runs", json={"message": "Delete the staging environment"}))
        assert isinstance(first[-1], official.RunFinishedEvent)
        assert isinstance(first[-1].outcome, official.RunFinishedInterruptOutcome)
        (interrupt,) = first[-1].outcome.interrupts
        # An answer that leaves the interrupt uncovered is refused by the relay's client: nothing is sent.
        refused = browser_events(http.post(f"{url}/threads/t2/runs", json={"message": "and another"}))
        entry = {"interruptId": interrupt.id, "status": "resolved", "payload": {"approved": True}}
        second = browser_events(http.post(f"{url}/threads/t2/runs", json={"resume": [entry]}))

    assert [type(model).__name__ for model in refused] == ["RunErrorEvent"]
    assert refused[0].code == "AwaitingAnswers" and interrupt.id in refused[0].message
    assert agent.request_count == 2  # (the refused turn never reached the agent)
    resume = agent.requests[1].resume
    assert resume is not None and [(e.interrupt_id, e.status, e.payload) for e in resume] == [
        (interrupt.id, "resolved", {"approved": True})]
    assert isinstance(second[0], official.RunStartedEvent)
    assert isinstance(second[-1], official.RunFinishedEvent)
    assert second[-1].outcome is None or second[-1].outcome.type == "success"  # (absent means success)
    assert any(isinstance(m, official.ToolCallResultEvent) and m.tool_call_id == interrupt.tool_call_id
               for m in second)
    assert json.loads(second[-1].model_dump_json(by_alias=True))["threadId"] == "t2"


def test_what_pydantic_cannot_write_reaches_the_browser_as_the_agent_sent_it(relay: Callable[[Any], str]) -> None:
    # An agent slicing text by UTF-16 code unit sends half a character as its JSON escape, and state may
    # nest deeper than pydantic writes (about 250 levels; the client reads 512). The client keeps both
    # as sent, but the SDK's encoder raised on them: the relay's stream broke off mid-run, with no
    # RUN_ERROR and no RUN_FINISHED.
    deep: Any = "bottom"
    for _ in range(300):
        deep = {"d": deep}
    url = relay(ScriptedAgent([[Start(), SURROGATE_HALVES, StateSnapshotEvent(snapshot=deep), Finish()]]))

    with httpx.Client(timeout=WATCHDOG) as http:
        response = http.post(f"{url}/threads/t3/runs", json={"message": "hi"})

    # Read as a browser reads it (JSON.parse takes a lone surrogate's escape; pydantic's own JSON parser
    # refuses one, so a Python consumer on the official models parses with json first, as here).
    frames = [block[len("data: "):] for block in response.text.split("\n\n") if block.startswith("data: ")]
    models = [EVENTS.validate_python(json.loads(frame)) for frame in frames]
    events = [decode_event(frame) for frame in frames]
    assert events[5] == StateSnapshotEvent(snapshot=deep)  # (from_ag_ui cannot read that model back either)
    assert [from_ag_ui(model) for model in models[:5] + models[6:]] == events[:5] + events[6:]
    assert [type(m).__name__ for m in models] == [
        "RunStartedEvent", "TextMessageStartEvent", "TextMessageContentEvent", "TextMessageContentEvent",
        "TextMessageEndEvent", "StateSnapshotEvent", "RunFinishedEvent"]
    assert [m.delta for m in models[2:4]] == ["café \ud83d", "\ude00!"]  # (the browser joins the halves)
    assert models[5].snapshot == deep


def test_a_resume_entry_the_client_cannot_read_is_a_run_error_not_a_500(relay: Callable[[Any], str]) -> None:
    # A payload nested deeper than pydantic writes (it validates 300 levels, writes about 250) made
    # from_ag_ui raise outside the relay's stream: the browser got a bare 500.
    agent = ScriptedAgent.demo()
    url = relay(agent)
    deep: Any = True
    for _ in range(300):
        deep = [deep]

    with httpx.Client(timeout=WATCHDOG) as http:
        asked = browser_events(http.post(f"{url}/threads/t4/runs", json={"message": "Delete the staging environment"}))
        (interrupt,) = asked[-1].outcome.interrupts
        entry = {"interruptId": interrupt.id, "status": "resolved", "payload": deep}
        refused = browser_events(http.post(f"{url}/threads/t4/runs", json={"resume": [entry]}))

    assert [(type(m).__name__, m.code) for m in refused] == [("RunErrorEvent", "DecodeError")]
    assert "/payload" in refused[0].message and agent.request_count == 1  # (nothing reached the agent)


def test_a_browser_leaving_mid_stream_closes_the_agents_response_and_frees_the_thread(
        relay: Callable[[Any], str]) -> None:
    # The browser reads the run's first text and goes away while the agent is still working (held at a
    # gate it never passes), and sends its next turn at once. The relay must stop the run: its response
    # from the agent closed, which the agent sees as its client gone, and the thread no longer running, so
    # the browser's next turn on it is run rather than refused as a second writer. (The next turn is sent
    # before the agent saw the first go: the relay's next turn waits for the first to end, and without
    # that wait it read the thread while the first still held it. Sent once the agent saw it go, the
    # turn was refused only when it came while the first was still releasing the thread, 3 times in 12.)
    gate = Gate()
    agent = ScriptedAgent([
        [Start(), TextMessageStartEvent(message_id="m1", role="assistant"),
         TextMessageContentEvent(message_id="m1", delta="working"), Wait(gate, timeout=WATCHDOG)],
        [Start(), Finish()]])
    url = relay(agent)

    with httpx.Client(timeout=WATCHDOG) as http:
        with http.stream("POST", f"{url}/threads/t5/runs", json={"message": "hi"}) as response:
            for line in response.iter_lines():
                if '"TEXT_MESSAGE_CONTENT"' in line:
                    break  # (leaving the block closes the browser's connection mid-stream)
        again = browser_events(http.post(f"{url}/threads/t5/runs", json={"message": "again"}))
        assert gate.wait_reached(WATCHDOG)
        assert agent.wait_until(lambda a: bool(a.disconnects), timeout=WATCHDOG)
        assert agent.disconnects == [agent.requests[0].run_id]

    assert [type(model).__name__ for model in again] == ["RunStartedEvent", "RunFinishedEvent"], \
        [getattr(model, "message", None) for model in again]
    assert agent.request_count == 2 and not gate.is_open
