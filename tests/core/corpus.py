"""A hand-written corpus of AG-UI 1.0 wire values that, together, set every field of every wire type.

Each sample is the exact JSON a conforming producer may send (camelCase keys, absent optional fields
left out, never ``null`` for an optional field), so ``encode(decode(x)) == x`` must hold for all of
them. Free-form JSON (state, payloads, metadata values, rawEvent, results, responseSchema, patch
values) deliberately carries ``null`` *inside*: it must pass through untouched.

* ``EVENTS``: ``(name, wire)``; every one of the 31 event types has a ``full`` sample with every
  optional field set and a ``min`` sample with only the required ones, plus variants (each outcome,
  every message role, every content part and source, every patch op …).
* ``VALUES``: ``(name, cls, wire)`` for the non-event types read with ``decode(value, cls)``:
  ``RunAgentInput``, ``Interrupt``, messages, outcomes, ``TokenUsage``, capabilities …
* ``INPUTS``: the ``RunAgentInput`` samples of ``VALUES``.

``test_codec_roundtrip`` checks that the corpus really covers every field (so adding a field to a
wire type without a sample fails a test).
"""

from __future__ import annotations

import copy
from typing import Any

from agui_client.types import capabilities as cap
from agui_client.types import messages as msg
from agui_client.types import run as rn

__all__ = ["EVENTS", "VALUES", "INPUTS", "event_samples", "value_samples"]

Wire = dict[str, Any]

TS = 1767225600000
MAX_SAFE = 2**53 - 1

# Free-form JSON with nulls inside, reused wherever the protocol carries opaque JSON.
RAW_EVENT: Any = {"provider": "openai", "id": "evt_1", "parent": None, "items": [1, None, {"x": None}]}
METADATA: Wire = {"ag-ui": {"trace": "t-1", "span": None}, "note": None, "n": 1, "list": [None, "x"]}
STATE: Any = {"counter": 3, "empty": None, "nested": {"list": [1, None, "two"], "flag": False}, "ünï": "✅"}
RESULT: Any = {"answer": 42, "detail": None, "parts": [None, {"ok": True}]}
PAYLOAD: Any = {"approved": True, "comment": None, "edits": [{"path": "/a", "value": None}]}
RESPONSE_SCHEMA: Wire = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "comment": {"type": ["string", "null"], "default": None}},
    "required": ["approved"],
}
PARAMETERS: Wire = {"type": "object", "properties": {"q": {"type": "string", "default": None}}, "required": ["q"]}

BASE: Wire = {"timestamp": TS, "rawEvent": RAW_EVENT, "metadata": METADATA}
ATTR: Wire = {"subagentRunId": "sub_1"}


def _event(kind: str, required: Wire, optional: Wire | None = None, *, attributable: bool = True) -> list[
        tuple[str, Wire]]:
    """A ``min`` sample (required fields only) and a ``full`` sample (every optional field set)."""
    full = {"type": kind, **required, **(optional or {}), **(ATTR if attributable else {}), **BASE}
    return [(f"{kind}/min", {"type": kind, **required}), (f"{kind}/full", full)]


# ------------------------------------------------------------------------------------------------
# Content parts, sources, tool calls, messages
# ------------------------------------------------------------------------------------------------

SOURCES: list[tuple[str, Wire]] = [
    ("data", {"type": "data", "value": "iVBORw0KGgo=", "mimeType": "image/png"}),
    ("url/min", {"type": "url", "value": "https://example.com/cat.png"}),
    ("url/full", {"type": "url", "value": "https://example.com/cat.png", "mimeType": "image/png"}),
    ("file/min", {"type": "file", "value": "file-abc123"}),
    ("file/full", {"type": "file", "value": "gs://bucket/doc.pdf", "provider": "google",
                   "mimeType": "application/pdf"}),
]
_SOURCE = dict(SOURCES)

PARTS: list[tuple[str, Wire]] = [
    ("text/min", {"type": "text", "text": "look at this"}),
    ("text/full", {"type": "text", "text": "caption", "id": "p_text", "metadata": {"lang": "en", "x": None}}),
    ("image/data", {"type": "image", "source": _SOURCE["data"], "id": "p_img", "metadata": {"alt": None}}),
    ("image/url", {"type": "image", "source": _SOURCE["url/full"]}),
    ("audio/url", {"type": "audio", "source": {"type": "url", "value": "https://example.com/a.mp3"}}),
    ("audio/data", {"type": "audio", "source": {"type": "data", "value": "SUQz", "mimeType": "audio/mpeg"},
                    "id": "p_audio", "metadata": ["any", "json", None]}),
    ("video/file", {"type": "video", "source": {"type": "file", "value": "file-vid", "provider": "openai"},
                    "id": "p_video", "metadata": "a string is JSON too"}),
    ("document/file", {"type": "document", "source": _SOURCE["file/full"], "id": "p_doc", "metadata": 7}),
    ("document/data", {"type": "document", "source": {"type": "data", "value": "JVBERi0=",
                                                      "mimeType": "application/pdf"}}),
    ("document/url", {"type": "document", "source": {"type": "url", "value": "https://example.com/d.pdf",
                                                     "mimeType": "application/pdf"}}),
]
ALL_PARTS = [part for _, part in PARTS]

TOOL_CALL_MIN: Wire = {"id": "call_1", "type": "function", "function": {"name": "search", "arguments": ""}}
TOOL_CALL_FULL: Wire = {
    "id": "call_2",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city": "Zürich", "unit": null}'},
    "encryptedValue": "enc-tool-call",
    "metadata": {"ui": {"collapsed": True}, "origin": None},
}

MESSAGES: list[tuple[str, Wire]] = [
    ("developer/min", {"id": "d1", "role": "developer", "content": "be terse"}),
    ("developer/full", {"id": "d2", "role": "developer", "content": "be kind", "name": "ops",
                        "encryptedValue": "enc-d", "metadata": METADATA, "subagentRunId": "sub_1"}),
    ("system/min", {"id": "s1", "role": "system", "content": "You are helpful."}),
    ("system/full", {"id": "s2", "role": "system", "content": "You are a bot.", "name": "sys",
                     "encryptedValue": "enc-s", "metadata": {"v": None}, "subagentRunId": "sub_2"}),
    ("assistant/min", {"id": "a1", "role": "assistant"}),
    ("assistant/text", {"id": "a2", "role": "assistant", "content": "Hello! 🚀"}),
    ("assistant/full", {"id": "a3", "role": "assistant", "content": "Let me check.",
                        "toolCalls": [TOOL_CALL_MIN, TOOL_CALL_FULL], "name": "helper", "encryptedValue": "enc-a",
                        "metadata": METADATA, "subagentRunId": "sub_1"}),
    ("assistant/empty-tool-calls", {"id": "a4", "role": "assistant", "toolCalls": []}),
    ("user/min", {"id": "u1", "role": "user", "content": "hi"}),
    ("user/parts", {"id": "u2", "role": "user", "content": ALL_PARTS, "name": "ann", "encryptedValue": "enc-u",
                    "metadata": {"client": None}, "subagentRunId": "sub_3"}),
    ("user/empty-parts", {"id": "u3", "role": "user", "content": []}),
    ("tool/min", {"id": "t1", "role": "tool", "toolCallId": "call_1", "content": "42"}),
    ("tool/full", {"id": "t2", "role": "tool", "toolCallId": "call_2", "content": [ALL_PARTS[0], ALL_PARTS[2]],
                   "error": "partial failure", "encryptedValue": "enc-t", "metadata": METADATA,
                   "subagentRunId": "sub_1"}),
    ("activity/min", {"id": "act1", "role": "activity", "activityType": "progress", "content": {}}),
    ("activity/full", {"id": "act2", "role": "activity", "activityType": "plan",
                       "content": {"steps": ["a", None], "done": None}, "metadata": {"m": None},
                       "subagentRunId": "sub_2"}),
    ("reasoning/min", {"id": "r1", "role": "reasoning", "content": ""}),
    ("reasoning/full", {"id": "r2", "role": "reasoning", "content": "thinking…", "encryptedValue": "enc-r",
                        "metadata": METADATA, "subagentRunId": "sub_1"}),
]
ALL_MESSAGES = [m for _, m in MESSAGES]

# ------------------------------------------------------------------------------------------------
# Run input, interrupts, outcomes, usage
# ------------------------------------------------------------------------------------------------

TOOL_MIN: Wire = {"name": "confirm", "description": "ask the user"}
TOOL_FULL: Wire = {"name": "search", "description": "search the web", "parameters": PARAMETERS,
                   "metadata": {"render": "card", "x": None}}

INTERRUPT_MIN: Wire = {"id": "int_1", "reason": "approval"}
INTERRUPT_FULL: Wire = {
    "id": "int_2",
    "reason": "tool_approval",
    "message": "Delete the staging database?",
    "toolCallId": "call_2",
    "responseSchema": RESPONSE_SCHEMA,
    "expiresAt": "2026-11-30T00:00:00Z",
    "metadata": {"risk": "high", "ticket": None},
    "subagentRunId": "sub_1",
}

USAGE_MIN: Wire = {}
USAGE_FULL: Wire = {
    "provider": "anthropic",
    "model": "claude",
    "inputTokens": 1200,
    "outputTokens": 300,
    "totalTokens": 1500,
    "reasoningTokens": 120,
    "cachedInputTokens": 1000,
    "cacheWriteInputTokens": 0,
}
USAGE_MAX: Wire = {"inputTokens": MAX_SAFE, "outputTokens": 0}

INPUT_MIN: Wire = {"threadId": "thread_1", "runId": "run_1", "messages": []}
INPUT_FULL: Wire = {
    "threadId": "thread_1",
    "runId": "run_2",
    "messages": ALL_MESSAGES,
    "state": STATE,
    "tools": [TOOL_MIN, TOOL_FULL],
    "context": [{"description": "user locale", "value": "de-CH"}, {"description": "", "value": ""}],
    "forwardedProps": {"feature": "x", "off": None},
    "resume": [
        {"interruptId": "int_1", "status": "resolved", "payload": PAYLOAD, "metadata": {"sig": None}},
        {"interruptId": "int_2", "status": "cancelled"},
    ],
    "protocolVersion": "1.0",
    "parentRunId": "run_1",
}
INPUT_SCALAR_STATE: Wire = {"threadId": "t", "runId": "r", "messages": [ALL_MESSAGES[0]], "state": "just a string",
                            "forwardedProps": [None, 1], "tools": [], "context": [], "resume": []}

SUCCESS_MIN: Wire = {"type": "success"}
SUCCESS_FULL: Wire = {"type": "success", "pendingToolCallIds": ["call_1", "call_2"]}
INTERRUPT_OUTCOME: Wire = {"type": "interrupt", "interrupts": [INTERRUPT_MIN, INTERRUPT_FULL]}
CANCELLED: Wire = {"type": "cancelled"}
SUB_SUCCESS: Wire = {"type": "success"}
SUB_SUSPENDED_MIN: Wire = {"type": "suspended"}
SUB_SUSPENDED_FULL: Wire = {"type": "suspended", "interruptIds": ["int_2"]}

PATCH: list[Wire] = [
    {"op": "add", "path": "/a", "value": None},
    {"op": "add", "path": "/list/-", "value": {"x": [None]}},
    {"op": "remove", "path": "/b~0c~1d"},
    {"op": "replace", "path": "", "value": {"root": None}},
    {"op": "move", "from": "/a", "path": "/moved"},
    {"op": "copy", "from": "/moved", "path": "/copied"},
    {"op": "test", "path": "/copied", "value": None},
]

# ------------------------------------------------------------------------------------------------
# Events
# ------------------------------------------------------------------------------------------------

EVENTS: list[tuple[str, Wire]] = [
    *_event("RUN_STARTED", {"threadId": "thread_1", "runId": "run_1"},
            {"protocolVersion": "1.0", "parentRunId": "run_0", "input": INPUT_FULL}, attributable=False),
    ("RUN_STARTED/input-min", {"type": "RUN_STARTED", "threadId": "t", "runId": "r", "input": INPUT_MIN}),
    *_event("RUN_FINISHED", {"threadId": "thread_1", "runId": "run_1"},
            {"result": RESULT, "outcome": SUCCESS_FULL, "usage": [USAGE_FULL, USAGE_MIN, USAGE_MAX]},
            attributable=False),
    ("RUN_FINISHED/success-min", {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": SUCCESS_MIN}),
    ("RUN_FINISHED/interrupt", {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": INTERRUPT_OUTCOME,
                                "usage": [USAGE_FULL]}),
    ("RUN_FINISHED/cancelled", {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": CANCELLED}),
    ("RUN_FINISHED/scalar-result", {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "result": "done"}),
    ("RUN_FINISHED/false-result", {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "result": False}),
    *_event("RUN_ERROR", {"message": "boom"}, {"code": "rate_limited", "usage": [USAGE_FULL]}, attributable=False),
    *_event("STEP_STARTED", {"stepName": "plan"}),
    *_event("STEP_FINISHED", {"stepName": "plan"}),
    *_event("TEXT_MESSAGE_START", {"messageId": "m1"}, {"role": "assistant", "name": "bot"}),
    *[(f"TEXT_MESSAGE_START/{role}", {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": role})
      for role in ("developer", "system", "user")],
    *_event("TEXT_MESSAGE_CONTENT", {"messageId": "m1", "delta": "Hello, wörld 🚀\n"}),
    ("TEXT_MESSAGE_CONTENT/empty", {"type": "TEXT_MESSAGE_CONTENT", "messageId": "", "delta": ""}),
    *_event("TEXT_MESSAGE_END", {"messageId": "m1"}),
    *_event("TEXT_MESSAGE_CHUNK", {}, {"messageId": "m1", "role": "user", "delta": "hi", "name": "ann"}),
    *_event("TOOL_CALL_START", {"toolCallId": "call_1", "toolCallName": "search"}, {"parentMessageId": "m1"}),
    *_event("TOOL_CALL_ARGS", {"toolCallId": "call_1", "delta": '{"q": "wea'}),
    *_event("TOOL_CALL_END", {"toolCallId": "call_1"}),
    *_event("TOOL_CALL_CHUNK", {}, {"toolCallId": "call_1", "toolCallName": "search", "parentMessageId": "m1",
                                    "delta": '{"q": null}'}),
    *_event("TOOL_CALL_RESULT", {"messageId": "t1", "toolCallId": "call_1", "content": "sunny"}, {"role": "tool"}),
    ("TOOL_CALL_RESULT/parts", {"type": "TOOL_CALL_RESULT", "messageId": "t2", "toolCallId": "call_2",
                                "content": ALL_PARTS}),
    *_event("STATE_SNAPSHOT", {"snapshot": STATE}),
    ("STATE_SNAPSHOT/null", {"type": "STATE_SNAPSHOT", "snapshot": None}),
    ("STATE_SNAPSHOT/array", {"type": "STATE_SNAPSHOT", "snapshot": [1, None, 2.5, -0.0, "x"]}),
    ("STATE_SNAPSHOT/number", {"type": "STATE_SNAPSHOT", "snapshot": 12345678901234567890}),
    *_event("STATE_DELTA", {"delta": PATCH}),
    ("STATE_DELTA/empty", {"type": "STATE_DELTA", "delta": []}),
    *_event("MESSAGES_SNAPSHOT", {"messages": ALL_MESSAGES}, attributable=False),
    ("MESSAGES_SNAPSHOT/empty", {"type": "MESSAGES_SNAPSHOT", "messages": []}),
    *_event("ACTIVITY_SNAPSHOT", {"messageId": "act1", "activityType": "progress", "content": {"done": 1, "x": None}},
            {"replace": False}),
    ("ACTIVITY_SNAPSHOT/replace-true", {"type": "ACTIVITY_SNAPSHOT", "messageId": "act1", "activityType": "p",
                                        "content": {}, "replace": True}),
    *_event("ACTIVITY_DELTA", {"messageId": "act1", "activityType": "progress", "patch": PATCH}),
    *_event("RAW", {"event": {"provider_type": "delta", "payload": None}}, {"source": "openai"}),
    ("RAW/null", {"type": "RAW", "event": None}),
    *_event("CUSTOM", {"name": "acme.ping", "value": {"n": 1, "z": None}}),
    ("CUSTOM/null", {"type": "CUSTOM", "name": "x", "value": None}),
    ("CUSTOM/scalar", {"type": "CUSTOM", "name": "x", "value": 0}),
    *_event("REASONING_START", {"messageId": "rs1"}),
    *_event("REASONING_MESSAGE_START", {"messageId": "rm1", "role": "reasoning"}),
    *_event("REASONING_MESSAGE_CONTENT", {"messageId": "rm1", "delta": "hmm"}),
    *_event("REASONING_MESSAGE_END", {"messageId": "rm1"}),
    *_event("REASONING_MESSAGE_CHUNK", {}, {"messageId": "rm1", "delta": "…"}),
    *_event("REASONING_END", {"messageId": "rs1"}),
    *_event("REASONING_ENCRYPTED_VALUE", {"subtype": "message", "entityId": "m1", "encryptedValue": "gAAAA"}),
    ("REASONING_ENCRYPTED_VALUE/tool-call", {"type": "REASONING_ENCRYPTED_VALUE", "subtype": "tool-call",
                                             "entityId": "call_1", "encryptedValue": "gBBBB"}),
    *_event("SUBAGENT_STARTED", {"subagentRunId": "sub_1", "name": "researcher"},
            {"description": "digs", "parentSubagentRunId": "sub_0", "parentToolCallId": "call_1",
             "parentMessageId": "m1"}, attributable=False),
    *_event("SUBAGENT_FINISHED", {"subagentRunId": "sub_1"}, {"result": RESULT, "outcome": SUB_SUSPENDED_FULL},
            attributable=False),
    ("SUBAGENT_FINISHED/success", {"type": "SUBAGENT_FINISHED", "subagentRunId": "sub_1", "outcome": SUB_SUCCESS}),
    ("SUBAGENT_FINISHED/suspended-min", {"type": "SUBAGENT_FINISHED", "subagentRunId": "sub_1",
                                         "outcome": SUB_SUSPENDED_MIN}),
    *_event("SUBAGENT_ERROR", {"subagentRunId": "sub_1", "message": "subagent failed"}, {"code": "E42"},
            attributable=False),
    ("RUN_STARTED/extremes", {"type": "RUN_STARTED", "threadId": "", "runId": "", "timestamp": -MAX_SAFE}),
    ("RUN_FINISHED/ts-max", {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "timestamp": MAX_SAFE}),
    ("TEXT_MESSAGE_END/ts-zero", {"type": "TEXT_MESSAGE_END", "messageId": "m", "timestamp": 0, "metadata": {}}),
]

# ------------------------------------------------------------------------------------------------
# Values read with decode(value, cls)
# ------------------------------------------------------------------------------------------------

CAPABILITIES_FULL: Wire = {
    "identity": {"name": "agent", "type": "langgraph", "description": "does things", "version": "1.2.3",
                 "provider": "acme", "documentationUrl": "https://example.com/docs",
                 "metadata": {"team": None}},
    "transport": {"streaming": True, "websocket": False, "httpBinary": False, "pushNotifications": True,
                  "resumable": False},
    "tools": {"supported": True, "items": [TOOL_MIN, TOOL_FULL], "parallelCalls": True, "clientProvided": False},
    "output": {"structuredOutput": True, "supportedMimeTypes": ["text/plain", "application/json"]},
    "state": {"snapshots": True, "deltas": True, "memory": False, "persistentState": True},
    "multiAgent": {"supported": True, "delegation": True, "handoffs": False,
                   "subagents": [{"name": "researcher"}, {"name": "coder", "description": "writes code"}]},
    "reasoning": {"supported": True, "streaming": True, "encrypted": False},
    "multimodal": {"input": {"image": True, "audio": False, "video": False, "pdf": True, "file": True},
                   "output": {"image": False, "audio": True}},
    "execution": {"codeExecution": True, "sandboxed": True, "maxIterations": 10, "maxExecutionTime": 60000},
    "humanInTheLoop": {"supported": True, "approvals": True, "interventions": False, "feedback": True,
                       "interrupts": True, "approveWithEdits": False},
    "custom": {"acme": {"tier": None}},
}

VALUES: list[tuple[str, Any, Wire]] = [
    ("RunAgentInput/min", rn.RunAgentInput, INPUT_MIN),
    ("RunAgentInput/full", rn.RunAgentInput, INPUT_FULL),
    ("RunAgentInput/scalar-state", rn.RunAgentInput, INPUT_SCALAR_STATE),
    ("Interrupt/min", rn.Interrupt, INTERRUPT_MIN),
    ("Interrupt/full", rn.Interrupt, INTERRUPT_FULL),
    ("ResumeEntry/full", rn.ResumeEntry, INPUT_FULL["resume"][0]),
    ("ResumeEntry/min", rn.ResumeEntry, INPUT_FULL["resume"][1]),
    ("Tool/min", rn.Tool, TOOL_MIN),
    ("Tool/full", rn.Tool, TOOL_FULL),
    ("Context", rn.Context, {"description": "d", "value": "v"}),
    ("RunFinishedOutcome/success-min", rn.RunFinishedOutcome, SUCCESS_MIN),
    ("RunFinishedOutcome/success-full", rn.RunFinishedOutcome, SUCCESS_FULL),
    ("RunFinishedOutcome/interrupt", rn.RunFinishedOutcome, INTERRUPT_OUTCOME),
    ("RunFinishedOutcome/cancelled", rn.RunFinishedOutcome, CANCELLED),
    ("SubagentFinishedOutcome/success", rn.SubagentFinishedOutcome, SUB_SUCCESS),
    ("SubagentFinishedOutcome/suspended", rn.SubagentFinishedOutcome, SUB_SUSPENDED_FULL),
    ("TokenUsage/min", rn.TokenUsage, USAGE_MIN),
    ("TokenUsage/full", rn.TokenUsage, USAGE_FULL),
    ("ToolCall/min", msg.ToolCall, TOOL_CALL_MIN),
    ("ToolCall/full", msg.ToolCall, TOOL_CALL_FULL),
    ("FunctionCall", msg.FunctionCall, {"name": "f", "arguments": "{}"}),
    *[(f"Message/{name}", msg.Message, m) for name, m in MESSAGES],
    *[(f"ContentPart/{name}", msg.ContentPart, p) for name, p in PARTS],
    *[(f"PartSource/{name}", msg.PartSource, s) for name, s in SOURCES],
    ("AgentCapabilities/min", cap.AgentCapabilities, {}),
    ("AgentCapabilities/full", cap.AgentCapabilities, CAPABILITIES_FULL),
    ("AgentCapabilities/empty-sections", cap.AgentCapabilities,
     {"identity": {}, "transport": {}, "tools": {}, "output": {}, "state": {}, "multiAgent": {}, "reasoning": {},
      "multimodal": {"input": {}, "output": {}}, "execution": {}, "humanInTheLoop": {}, "custom": {}}),
    ("SubagentInfo", cap.SubagentInfo, {"name": "n", "description": "d"}),
]

INPUTS: list[tuple[str, Wire]] = [(name, wire) for name, cls, wire in VALUES if cls is rn.RunAgentInput]


def event_samples() -> list[tuple[str, Wire]]:
    """Deep copies of ``EVENTS`` (tests may not share mutable samples)."""
    return copy.deepcopy(EVENTS)


def value_samples() -> list[tuple[str, Any, Wire]]:
    """Deep copies of ``VALUES``."""
    return [(name, cls, copy.deepcopy(wire)) for name, cls, wire in VALUES]
