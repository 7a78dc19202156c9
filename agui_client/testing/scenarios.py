"""Building blocks for scripts, and the steps behind ``ScriptedAgent``'s ready-made scenarios.

The helpers return plain event lists, so a script can splice them: ``[Start(), *text_message("m1",
"Hi!"), Finish()]``. The ``*_step`` functions return the callables the scenarios play; those that
resume take ``open_interrupts``, the agent's view of what each thread left open.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any, Literal

from ..wire.jsonio import dump_json
from ..wire.types.base import JSON
from ..wire.types.events import (
    ActivityDeltaEvent,
    ActivitySnapshotEvent,
    Event,
    ReasoningEndEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    RunFinishedEvent,
    RunStartedEvent,
    StateDeltaEvent,
    StateSnapshotEvent,
    SubagentFinishedEvent,
    SubagentStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from ..wire.types.messages import AssistantMessage, TextMessageRole, ToolMessage, UserMessage
from ..wire.types.run import (
    PROTOCOL_VERSION,
    Interrupt,
    RunAgentInput,
    RunFinishedInterruptOutcome,
    RunFinishedOutcome,
    RunFinishedSuccessOutcome,
    TokenUsage,
)

__all__ = [
    "ANSWER_SCHEMA",
    "APPROVAL_SCHEMA",
    "text_message",
    "reasoning",
    "tool_call",
    "last_user_text",
    "chat_step",
    "demo_step",
    "frontend_tool_step",
    "interrupts_step",
    "approvals_step",
    "APPROVE_SCHEMA",
    "APPROVAL_PREFIX",
]

#: The default ``responseSchema`` of ``ScriptedAgent.interrupts``: an object with a required string ``answer``.
ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "string", "description": "Your answer"}},
    "required": ["answer"],
}

#: The ``responseSchema`` of the demo's approval interrupt.
APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "title": "Approve the deletion",
    "properties": {
        "approved": {"type": "boolean", "title": "Approve", "description": "Delete the environment?"},
        "environment": {"type": "string", "enum": ["staging", "preview", "qa"], "default": "staging",
                        "description": "The environment to delete"},
        "comment": {"type": "string", "description": "A note for the audit log"},
        "ttl_minutes": {"type": "integer", "minimum": 0, "default": 60,
                        "description": "Minutes to keep a backup before it is purged"},
    },
    "required": ["approved"],
}

#: The ``responseSchema`` of ``ScriptedAgent.approvals``' interrupts: a required boolean ``approved``.
APPROVE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"approved": {"type": "boolean", "description": "Run the call?"}},
    "required": ["approved"],
}

#: ``ScriptedAgent.approvals`` names each interrupt after the call it gates: ``approve-<toolCallId>``.
APPROVAL_PREFIX = "approve-"

OpenInterrupts = Callable[[str], Sequence[Interrupt]]
ScenarioStep = Callable[[RunAgentInput], list[Event]]

_WORDS = re.compile(r"\S+\s*|\s+")


# --------------------------------------------------------------------------------------------------
# Building blocks
# --------------------------------------------------------------------------------------------------


def text_message(message_id: str, text: str, *, role: TextMessageRole | None = None,
                 subagent_run_id: str | None = None) -> list[Event]:
    """A streamed text message: START, one CONTENT delta per word, END.

    Args:
        message_id: the message's id.
        text: the whole text; the deltas join back to it exactly (no CONTENT when it is empty).
        role: the message's role (absent means assistant).
        subagent_run_id: attribute the message to this subagent.
    """
    events: list[Event] = [TextMessageStartEvent(message_id=message_id, role=role, subagent_run_id=subagent_run_id)]
    events += [TextMessageContentEvent(message_id=message_id, delta=word, subagent_run_id=subagent_run_id)
               for word in _WORDS.findall(text)]
    events.append(TextMessageEndEvent(message_id=message_id, subagent_run_id=subagent_run_id))
    return events


def reasoning(message_id: str, text: str, *, subagent_run_id: str | None = None) -> list[Event]:
    """A reasoning span holding one streamed reasoning message; span and message share ``message_id``."""
    events: list[Event] = [
        ReasoningStartEvent(message_id=message_id, subagent_run_id=subagent_run_id),
        ReasoningMessageStartEvent(message_id=message_id, subagent_run_id=subagent_run_id),
    ]
    events += [ReasoningMessageContentEvent(message_id=message_id, delta=word, subagent_run_id=subagent_run_id)
               for word in _WORDS.findall(text)]
    events += [
        ReasoningMessageEndEvent(message_id=message_id, subagent_run_id=subagent_run_id),
        ReasoningEndEvent(message_id=message_id, subagent_run_id=subagent_run_id),
    ]
    return events


def tool_call(call_id: str, name: str, arguments: JSON = None, *, parent_message_id: str | None = None,
              result: str | None = None, result_message_id: str | None = None,
              subagent_run_id: str | None = None) -> list[Event]:
    """A tool call: START, ARGS in two deltas, END, then a TOOL_CALL_RESULT when ``result`` is given.

    Args:
        call_id: the tool call's id.
        name: the tool's name.
        arguments: a JSON value (serialised compactly) or a ``str`` sent as it is; ``None``: no ARGS.
        parent_message_id: the assistant message holding the call.
        result: the tool message's content; ``None`` leaves the call unanswered (a frontend tool, or a
            call waiting for approval).
        result_message_id: the tool message's id (default ``<call_id>-result``).
        subagent_run_id: attribute the call to this subagent.
    """
    events: list[Event] = [ToolCallStartEvent(tool_call_id=call_id, tool_call_name=name,
                                              parent_message_id=parent_message_id, subagent_run_id=subagent_run_id)]
    if arguments is not None:
        text = arguments if isinstance(arguments, str) else dump_json(arguments).decode()
        half = len(text) // 2
        events += [ToolCallArgsEvent(tool_call_id=call_id, delta=part, subagent_run_id=subagent_run_id)
                   for part in (text[:half], text[half:]) if part]
    events.append(ToolCallEndEvent(tool_call_id=call_id, subagent_run_id=subagent_run_id))
    if result is not None:
        events.append(ToolCallResultEvent(message_id=result_message_id or f"{call_id}-result", tool_call_id=call_id,
                                          content=result, role="tool", subagent_run_id=subagent_run_id))
    return events


def last_user_text(run_input: RunAgentInput) -> str | None:
    """The text of the input's last user message (its text parts joined), ``None`` when there is none."""
    for message in reversed(run_input.messages):
        if isinstance(message, UserMessage):
            return _text_of(message.content)
    return None


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(getattr(part, "text", "") for part in content)


def _started(run_input: RunAgentInput) -> RunStartedEvent:
    return RunStartedEvent(thread_id=run_input.thread_id, run_id=run_input.run_id, protocol_version=PROTOCOL_VERSION)


def _finished(run_input: RunAgentInput, *, outcome: RunFinishedOutcome | None = None, result: JSON = None,
              usage: TokenUsage | None = None) -> RunFinishedEvent:
    return RunFinishedEvent(thread_id=run_input.thread_id, run_id=run_input.run_id, outcome=outcome, result=result,
                            usage=(usage,) if usage is not None else None)


def _usage(run_input: RunAgentInput, events: Sequence[Event], model: str) -> TokenUsage:
    # Made-up but deterministic counts: the input's size in, the streamed deltas out.
    prompt = 50 + sum(len(_text_of(getattr(m, "content", "") or "").split()) for m in run_input.messages)
    output = sum(1 for e in events if isinstance(e, (TextMessageContentEvent, ReasoningMessageContentEvent,
                                                     ToolCallArgsEvent)))
    reasoning_tokens = sum(1 for e in events if isinstance(e, ReasoningMessageContentEvent))
    return TokenUsage(provider="scripted", model=model, input_tokens=prompt, output_tokens=output,
                      total_tokens=prompt + output, reasoning_tokens=reasoning_tokens)


def _entries(run_input: RunAgentInput) -> dict[str, Any]:
    return {entry.interrupt_id: entry for entry in run_input.resume or ()}


# --------------------------------------------------------------------------------------------------
# Scenario steps
# --------------------------------------------------------------------------------------------------


def chat_step(reply: str | Callable[[RunAgentInput], str]) -> ScenarioStep:
    """A step streaming ``reply`` (or ``reply(run_input)``) word by word, then succeeding."""
    def step(run_input: RunAgentInput) -> list[Event]:
        text = reply(run_input) if callable(reply) else reply
        return [_started(run_input), *text_message(f"{run_input.run_id}-reply", text), _finished(run_input)]
    return step


def frontend_tool_step(tool_name: str, arguments: JSON = None) -> ScenarioStep:
    """A step that calls the frontend tool ``tool_name``, or answers its result when the input ends with one."""
    args = arguments if arguments is not None else {"question": "Which option do you prefer?"}

    def step(run_input: RunAgentInput) -> list[Event]:
        p = run_input.run_id
        last = run_input.messages[-1] if run_input.messages else None
        if isinstance(last, ToolMessage):
            text = f"Thanks! {tool_name} answered: {_text_of(last.content)}"
            return [_started(run_input), *text_message(f"{p}-text", text), _finished(run_input)]
        call = f"{p}-call"
        return [
            _started(run_input),
            *text_message(f"{p}-text", f"I need your input: let me ask {tool_name} in your app."),
            *tool_call(call, tool_name, args, parent_message_id=f"{p}-text"),
            _finished(run_input, outcome=RunFinishedSuccessOutcome(pending_tool_call_ids=(call,))),
        ]
    return step


def _per(value: Any, index: int, scalar: type) -> Any:
    if value is None or isinstance(value, scalar):
        return value  # one value for every interrupt
    return value[index]


def interrupts_step(open_interrupts: OpenInterrupts, *, n: int, reason: str,
                    expires_at: str | Sequence[str | None] | None,
                    response_schema: Mapping[str, Any] | Sequence[Mapping[str, Any] | None] | None) -> ScenarioStep:
    """A step raising ``n`` interrupts on a new message, and honouring the answers on the resume."""
    for value in (expires_at, response_schema):
        if value is not None and not isinstance(value, (str, Mapping)) and len(value) != n:
            raise ValueError(f"a per-interrupt sequence needs exactly {n} values, got {len(value)}")

    def ask(run_input: RunAgentInput) -> list[Event]:
        raised = []
        for i in range(n):
            schema = _per(response_schema, i, Mapping)
            raised.append(Interrupt(
                id=f"interrupt-{i + 1}", reason=reason, message=f"Question {i + 1} of {n}: what should I do?",
                response_schema=copy.deepcopy(dict(schema)) if schema is not None else None,
                expires_at=_per(expires_at, i, str)))
        events = [_started(run_input),
                  *text_message(f"{run_input.run_id}-ask", f"I need {n} answer(s) before I can go on.")]
        outcome = RunFinishedInterruptOutcome(interrupts=tuple(raised))
        return [*events, _finished(run_input, outcome=outcome, usage=_usage(run_input, events, "scripted-interrupts"))]

    def resume(run_input: RunAgentInput, open_: Sequence[Interrupt]) -> list[Event]:
        entries = _entries(run_input)
        events: list[Event] = [_started(run_input)]
        answers: dict[str, JSON] = {}
        abandoned: list[str] = []
        for k, interrupt in enumerate(open_):
            entry = entries.get(interrupt.id)
            if entry is None:
                continue  # uncovered: never acted on; the agent keeps it open
            if entry.status == "cancelled":
                abandoned.append(interrupt.id)
                text = f"{interrupt.id}: abandoned"
            else:
                answers[interrupt.id] = entry.payload
                text = f"{interrupt.id}: answered {dump_json(entry.payload).decode()}"
            events += text_message(f"{run_input.run_id}-answer-{k + 1}", text)
        usage = _usage(run_input, events, "scripted-interrupts")
        return [*events, _finished(run_input, result={"answers": answers, "abandoned": abandoned}, usage=usage)]

    def step(run_input: RunAgentInput) -> list[Event]:
        open_ = open_interrupts(run_input.thread_id)
        return resume(run_input, open_) if open_ else ask(run_input)
    return step


def approvals_step(*, n: int, tool_name: str, repeat: bool = False) -> ScenarioStep:
    """A step gating ``n`` calls of ``tool_name`` on approval interrupts, judged from the input alone.

    A new user message gets the calls and one interrupt per call; a resume list acts on each entry
    whose call the messages hold (approved: the call's result; declined or abandoned: a result saying
    so). A call that already has a result is left alone unless ``repeat`` (a fault).
    """
    def step(run_input: RunAgentInput) -> list[Event]:
        p = run_input.run_id
        calls = {call.id for m in run_input.messages if isinstance(m, AssistantMessage)
                 for call in m.tool_calls or () if call.function.name == tool_name}
        answered = {m.tool_call_id for m in run_input.messages if isinstance(m, ToolMessage)}
        events: list[Event] = [_started(run_input)]
        if run_input.resume:
            done = []
            for k, entry in enumerate(run_input.resume):
                call_id = entry.interrupt_id[len(APPROVAL_PREFIX):]
                if not entry.interrupt_id.startswith(APPROVAL_PREFIX) or call_id not in calls or (
                        call_id in answered and not repeat):
                    continue
                payload = entry.payload if isinstance(entry.payload, Mapping) else {}
                verdict = "cancelled" if entry.status == "cancelled" else (
                    "done" if payload.get("approved") is True else "denied")
                done.append(f"{call_id}: {verdict}")
                events.append(ToolCallResultEvent(message_id=f"{p}-result-{k}", tool_call_id=call_id, role="tool",
                                                  content=dump_json({"status": verdict}).decode()))
            events += text_message(f"{p}-text", "; ".join(done) or "Nothing to do.")
            return [*events, _finished(run_input)]
        last = run_input.messages[-1] if run_input.messages else None
        if not isinstance(last, UserMessage):
            return [*events, *text_message(f"{p}-text", "Nothing to do."), _finished(run_input)]
        events += text_message(f"{p}-text", f"I need your approval for {n} call(s) of {tool_name}.")
        asked = []
        for k in range(n):
            call_id = f"{p}-call-{k + 1}"
            events += tool_call(call_id, tool_name, {"path": f"scratch/file-{k + 1}"}, parent_message_id=f"{p}-text")
            asked.append(Interrupt(id=APPROVAL_PREFIX + call_id, reason="tool_call", tool_call_id=call_id,
                                   message=f"Run {tool_name} on scratch/file-{k + 1}?",
                                   response_schema=copy.deepcopy(APPROVE_SCHEMA)))
        return [*events, _finished(run_input, outcome=RunFinishedInterruptOutcome(interrupts=tuple(asked)))]
    return step


# --------------------------------------------------------------------------------------------------
# The demo
# --------------------------------------------------------------------------------------------------


def demo_step(open_interrupts: OpenInterrupts, *, expires_in: float | None = 600.0,
              clock: Callable[[], datetime] | None = None) -> ScenarioStep:
    """The demo's step: a new message asks for approval to delete an environment; the resume acts on it."""
    def step(run_input: RunAgentInput) -> list[Event]:
        open_ = open_interrupts(run_input.thread_id)
        if open_:
            return _demo_resume(run_input, open_)
        now = clock() if clock is not None else datetime.now(timezone.utc)
        expires = None if expires_in is None else (
            (now + timedelta(seconds=expires_in)).astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))
        return _demo_ask(run_input, expires)
    return step


def _demo_ask(run_input: RunAgentInput, expires_at: str | None) -> list[Event]:
    p = run_input.run_id
    request = last_user_text(run_input) or "Clean up the staging environment"
    delete_call = f"{p}-delete"
    risk = f"{p}-risk"
    events: list[Event] = [
        _started(run_input),
        StateSnapshotEvent(snapshot={"task": {"request": request, "status": "planning"}, "log": []}),
        *reasoning(f"{p}-thinking", "The user wants an environment removed. Deleting is irreversible, "
                                    "so I will check what exists, assess the risk and ask before acting."),
        *text_message(f"{p}-text-1", f'You asked: "{request}". Let me look at the environments first.'),
        ActivitySnapshotEvent(message_id=f"{p}-progress", activity_type="progress",
                              content={"label": "Inspecting environments", "percent": 10}),
        *tool_call(f"{p}-list", "list_environments", {"include": "all"}, parent_message_id=f"{p}-text-1",
                   result='["staging","preview","production"]'),
        StateDeltaEvent(delta=(
            {"op": "replace", "path": "/task/status", "value": "assessing"},
            {"op": "add", "path": "/log/-", "value": "listed 3 environments"},
        )),
        SubagentStartedEvent(subagent_run_id=risk, name="risk-checker",
                             description="Estimates what a change would break"),
        *text_message(f"{p}-risk-text", "Nothing has deployed to staging for 30 days: deleting it is low risk.",
                      subagent_run_id=risk),
        SubagentFinishedEvent(subagent_run_id=risk, result={"environment": "staging", "risk": "low"}),
        ActivityDeltaEvent(message_id=f"{p}-progress", activity_type="progress", patch=(
            {"op": "replace", "path": "/label", "value": "Waiting for approval"},
            {"op": "replace", "path": "/percent", "value": 80},
        )),
        *text_message(f"{p}-text-2", "Staging can go. I need your approval before I delete it."),
        *tool_call(delete_call, "delete_environment", {"environment": "staging"}, parent_message_id=f"{p}-text-2"),
        StateDeltaEvent(delta=({"op": "replace", "path": "/task/status", "value": "awaiting_approval"},)),
    ]
    approval = Interrupt(
        id=f"{p}-approval", reason="approval", message="Delete the staging environment? This cannot be undone.",
        tool_call_id=delete_call, response_schema=copy.deepcopy(APPROVAL_SCHEMA), expires_at=expires_at)
    outcome = RunFinishedInterruptOutcome(interrupts=(approval,))
    return [*events, _finished(run_input, outcome=outcome, usage=_usage(run_input, events, "scripted-demo"))]


def _demo_resume(run_input: RunAgentInput, open_: Sequence[Interrupt]) -> list[Event]:
    p = run_input.run_id
    entries = _entries(run_input)
    events: list[Event] = [_started(run_input)]
    status: Literal["done", "declined", "abandoned"] | None = None
    for interrupt in open_:
        entry = entries.get(interrupt.id)
        if entry is None:
            continue  # uncovered: never acted on; the agent keeps it open
        payload = entry.payload if isinstance(entry.payload, Mapping) else {}
        if entry.status == "cancelled":
            status = "abandoned"
            events += text_message(f"{p}-text", "Understood: the request was abandoned. Nothing was deleted.")
        elif payload.get("approved") is True:
            status = "done"
            environment = payload.get("environment", "staging")
            ttl = payload.get("ttl_minutes", 60)
            if interrupt.tool_call_id is not None:
                content = dump_json({"deleted": environment, "backupTtlMinutes": ttl}).decode()
                events.append(ToolCallResultEvent(message_id=f"{p}-result", tool_call_id=interrupt.tool_call_id,
                                                  content=content, role="tool"))
            events += text_message(f"{p}-text", f"Done: the {environment} environment is deleted. "
                                                 f"A backup is kept for {ttl} minutes.")
        else:
            status = "declined"
            events += text_message(f"{p}-text", "OK, I did not delete anything: the deletion was not approved.")
    if status is None:
        events += text_message(f"{p}-text", "I am still waiting for your approval.")
    else:
        events += _status_update(run_input.state, status)
    return [*events, _finished(run_input, usage=_usage(run_input, events, "scripted-demo"))]


def _status_update(state: JSON, status: str) -> list[Event]:
    # The resume input carries the state run 1 left behind; a consumer that dropped it still gets a
    # state the delta applies to.
    events: list[Event] = []
    if not (isinstance(state, Mapping) and isinstance(state.get("task"), Mapping)
            and isinstance(state.get("log"), list)):
        events.append(StateSnapshotEvent(snapshot={"task": {"status": "awaiting_approval"}, "log": []}))
    events.append(StateDeltaEvent(delta=(
        {"op": "replace", "path": "/task/status", "value": status},
        {"op": "add", "path": "/log/-", "value": f"deletion {status}"},
    )))
    return events
