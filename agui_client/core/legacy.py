"""Interrupts asked the pre-1.0 way: noticed (two warnings), and bridged for LangGraph (opt-in). Sans-IO.

Before AG-UI 1.0 gave runs an interrupt outcome, producers paused in two ways that read, on a 1.0
wire, as a plain success, which a consumer is right to take at its word (ignoring ``CUSTOM`` is
conformant):

* a ``CUSTOM`` event named ``on_interrupt`` whose value is the question (ag-ui-langgraph and the
  CrewAI adapter, with their defaults), then a bare ``RUN_FINISHED``;
* a tool call the consumer is meant to answer as a confirmation, left unanswered at a success.

The fold notes the first in the ``CUSTOM`` handler (a name compared, nothing else) and looks for
both at the run's end; what it finds is one of the two warnings below, and nothing else changes.

With ``legacy_interrupts="langgraph"`` (the client's, or ``ThreadState``'s) the first form is
bridged instead: the run's ``on_interrupt`` values become :class:`~agui_client.types.run.Interrupt`
objects, the run reads as the interrupt outcome, the thread holds them open, the resume rules apply
as to any interrupt, and :func:`forward_resume` puts the answers where that producer reads them,
``forwardedProps.command.resume``, in place of the ``resume`` list. See docs/legacy-interrupts.md.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from .._inert import quoted_name
from ..errors import InvalidResumePayload, ProtocolError, ResumeRefused, StreamWarning
from ..wire.jsonio import parse_json
from ..wire.types.base import JSON
from ..wire.types.run import Interrupt, ResumeEntry

__all__ = ["LegacyInterrupts", "LEGACY_BRIDGES", "ON_INTERRUPT", "CUSTOM_ASKED", "TOOL_ASKED", "ASKS_NOT_KEPT",
           "MAX_ASKS",
           "looks_like_confirmation", "notice", "bridge", "unkept", "forward_resume"]

#: The legacy bridges there are (the value of ``legacy_interrupts``).
LegacyInterrupts = Literal["langgraph"]
LEGACY_BRIDGES: tuple[str, ...] = ("langgraph",)

#: The ``CUSTOM`` event name LangGraph's and CrewAI's adapters pause with.
ON_INTERRUPT = "on_interrupt"

#: Warning codes (docs/legacy-interrupts.md has a section for each).
CUSTOM_ASKED = "LEGACY-CUSTOM-INTERRUPT"
TOOL_ASKED = "LEGACY-CONFIRMATION-CALL"
ASKS_NOT_KEPT = "LEGACY-ASKS-NOT-KEPT"

#: How many ``on_interrupt`` events of one run are kept: a producer raises a handful at most, and a
#: stream of them must not grow the run's record without bound (the rest are counted, not kept).
MAX_ASKS = 64

#: The reason a bridged interrupt carries when the value names none (ag-ui-langgraph's own default).
DEFAULT_REASON = "langgraph:interrupt"

# The name heuristic for a confirmation tool call: the name is split into words (snake_case,
# kebab-case, camelCase, dots), and it looks like a confirmation when a word starts with one of
# these stems (confirm, confirmation, confirmed; approve, approval; authorize, authorisation …), is
# one of the whole words, or is "ask" followed by "user" or "human".
_STEMS = ("confirm", "approv", "authori", "permission", "consent")
_WORDS = frozenset({"hitl", "human"})
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SPLIT = re.compile(r"[^a-z0-9]+")


def looks_like_confirmation(name: str) -> bool:
    """Whether a tool's name reads like a request for a person's confirmation (the documented heuristic).

    Example::

        >>> [looks_like_confirmation(n) for n in ("confirm_delete", "requestApproval", "ask_user", "get_weather")]
        [True, True, True, False]
    """
    words = [w for w in _SPLIT.split(_CAMEL.sub("_", name[:200]).lower()) if w]
    for i, word in enumerate(words):
        if word in _WORDS or word.startswith(_STEMS):
            return True
        if word == "ask" and i + 1 < len(words) and words[i + 1] in ("user", "human"):
            return True
    return False


def notice(asked: int, pending_names: Sequence[tuple[str, str]]) -> list[StreamWarning]:
    """The warnings for a run that ended as success after asking the pre-1.0 way.

    Args:
        asked: how many ``on_interrupt`` events the run carried.
        pending_names: the run's unanswered tool calls, as ``(id, name)``.
    """
    found: list[StreamWarning] = []
    if asked:
        found.append(StreamWarning(
            code=CUSTOM_ASKED, message=f"the run ended as success after {asked} CUSTOM {ON_INTERRUPT!r} "
            "event(s): the agent asked a question the pre-1.0 way, and this thread holds no interrupt to answer. "
            "Configure the producer to send the interrupt outcome (ag-ui-langgraph: "
            "LangGraphAgent(..., emit_interrupt_outcome=True)), or, for a LangGraph agent, construct the client "
            "with legacy_interrupts='langgraph'", pointer="/outcome"))
    confirming = [(i, n) for i, n in pending_names if looks_like_confirmation(n)]
    if confirming:
        # (names and ids are the agent's: quoted as ids, cut with a digest past 80 characters)
        calls = ", ".join(f"{quoted_name(n, 80)} ({quoted_name(i, 80)})" for i, n in confirming[:5]) + (
            " …" if len(confirming) > 5 else "")
        found.append(StreamWarning(
            code=TOOL_ASKED, message=f"the run ended as success with unanswered tool call(s) named like a "
            f"confirmation: {calls}. If the agent is waiting for a person, it asked the pre-1.0 way: answer the "
            "call with thread.add_tool_result() and run again, or configure the producer to send the interrupt "
            "outcome", pointer="/outcome"))
    return found


def bridge(asks: Sequence[tuple[JSON, JSON, str | None]], run_id: str,
           subagents: Mapping[str, Any]) -> tuple[Interrupt, ...]:
    """LangGraph's ``on_interrupt`` events of one run as interrupts (one per distinct id, in order).

    Each ask is ``(value, rawEvent, subagentRunId)`` as the event carried them. The value is the
    ``interrupt()`` payload, sent as JSON text (plain text stays a message); ``rawEvent.id``, when the
    producer sends its raw copy, is LangGraph's interrupt id, the one its interrupt outcome would
    carry; without it the id is made from the run's (``<runId>:on_interrupt:<n>``, with ``~1``, ``~2`` …
    when LangGraph gave that id to another of the run's events: two questions never share an id). ``reason``,
    ``message``, ``toolCallId``, ``responseSchema`` and ``expiresAt`` are read from the value's keys
    (camelCase or snake_case) when they have the right type, as ag-ui-langgraph reads them for its
    interrupt outcome; the whole value is kept in ``metadata["langgraph"]["raw"]``.
    """
    natives = [_raw_id(raw) for _value, raw, _owner in asks]
    # An id made from the run's names a question LangGraph gave no id, so it must not be an id LangGraph
    # gave another: "one per id, the first" would then merge two questions, and the one dropped would
    # never be seen while an answer meant for the other reached the graph for it. LangGraph's own ids
    # are kept as sent (they are what its channel reads); a made one that meets one steps aside.
    taken = {native for native in natives if native is not None}
    out: dict[str, Interrupt] = {}
    for n, ((value, _raw, owner), native) in enumerate(zip(asks, natives, strict=True)):
        parsed = value
        if isinstance(value, str):
            try:
                parsed = parse_json(value, check_duplicates=False)
            except ProtocolError:
                parsed = value  # (the adapter sends a text payload as it is, unquoted)
        interrupt_id = native if native is not None else _made_id(f"{run_id}:{ON_INTERRUPT}:{n}", taken)
        if interrupt_id in out:
            continue  # (LangGraph's id again: one question, the first, as the ledger holds any repeat)
        fields = parsed if isinstance(parsed, dict) else {}
        reason = _read(fields, "reason", "reason", str)
        message = parsed if isinstance(parsed, str) else _read(fields, "message", "message", str)
        out[interrupt_id] = Interrupt(
            id=interrupt_id,
            reason=reason if reason is not None else DEFAULT_REASON,
            message=message,
            tool_call_id=_read(fields, "toolCallId", "tool_call_id", str),
            response_schema=_read(fields, "responseSchema", "response_schema", dict),
            expires_at=_read(fields, "expiresAt", "expires_at", str),
            metadata={"langgraph": {"raw": parsed, "id": native}},
            subagent_run_id=owner if owner is not None and owner in subagents else None,
        )
    return tuple(out.values())


def _raw_id(raw: JSON) -> str | None:
    found = raw.get("id") if isinstance(raw, dict) else None
    return found if isinstance(found, str) and found else None


def _made_id(made: str, taken: set[str]) -> str:
    """``made``, or when LangGraph gave that id to another question, ``made~1`` (``~2`` …): the first free."""
    candidate, k = made, 0
    while candidate in taken:  # (at most one step per question of the run: MAX_ASKS)
        k += 1
        candidate = f"{made}~{k}"
    taken.add(candidate)
    return candidate


def unkept(asked: int, kept: int) -> list[StreamWarning]:
    """The warning for a bridged run that asked more than :data:`MAX_ASKS` questions (none if it did not):
    those past the kept ones are not held, and a success read as the interrupt outcome must say so, as
    the run read as a success does (``LEGACY-CUSTOM-INTERRUPT`` gives the count)."""
    if asked <= kept:
        return []
    return [StreamWarning(
        code=ASKS_NOT_KEPT, message=f"the run asked {asked} CUSTOM {ON_INTERRUPT!r} question(s): the first {kept} "
        f"are held as interrupts, the other {asked - kept} are not (a run keeps at most {MAX_ASKS}). Answer these; "
        "LangGraph asks again what its resume does not answer, or configure the producer to send the interrupt "
        "outcome", pointer="/outcome")]


def _read(fields: Mapping[str, Any], camel: str, snake: str, kind: type) -> Any:
    for key in (camel, snake):
        value = fields.get(key)
        if isinstance(value, kind):
            return value
    return None


# -- answers, the way the producer reads them -------------------------------------------------------

#: ag-ui-langgraph's sentinel for an abandoned interrupt (what its own 1.0 path hands the graph).
CANCELLED_SENTINEL = "__agui_cancelled__"


def _ids(ids: Sequence[str], limit: int = 10) -> str:
    """The interrupt ids a refusal names, as a list is written, each as a message quotes an id (escaped,
    cut with a digest: ``agui_client._inert.quoted_name``), the first ``limit`` only."""
    more = f", ...] ({len(ids) - limit} more)" if len(ids) > limit else "]"
    return "[" + ", ".join(map(quoted_name, ids[:limit])) + more


def forward_resume(via: str, forwarded_props: JSON, entries: Sequence[ResumeEntry],
                   open_interrupts: Sequence[Interrupt]) -> dict[str, Any]:
    """``forwarded_props`` with the answers in ``command.resume``, as LangGraph's legacy channel reads them.

    The entries have passed the resume rules already. One ``resolved`` entry sends its payload (a text
    payload as JSON text: the adapter parses text that is JSON, which would turn ``"true"`` into
    ``true``); one ``cancelled`` entry sends ``{"__agui_cancelled__": true, "interrupt_id": id}``, what
    ag-ui-langgraph's 1.0 path hands the graph for an abandoned interrupt; several send a map from
    LangGraph's interrupt id to each answer (the sentinel for an abandoned one), which LangGraph reads
    natively.

    Raises:
        InvalidResumePayload: a ``resolved`` entry has no payload (the channel reads a null as "no
            answer" and would ask again).
        ResumeRefused: ``forwarded_props`` already holds a ``command.resume`` or is not an object, or
            several interrupts are answered and one of them has no LangGraph id, or two share one.
    """
    del via  # (one bridge so far; the parameter names the channel for the next)
    ids = tuple(e.interrupt_id for e in entries)
    empty = [e.interrupt_id for e in entries if e.status == "resolved" and e.payload is None]
    if empty:
        reason = ("LangGraph's legacy channel reads a null answer as no answer and would ask again: answer with "
                  "a value (true, false, {} …) or abandon the interrupt")
        raise InvalidResumePayload(f"nothing was sent: {reason} (interrupts {_ids(empty)})", ids=empty,
                                   problems={"invalid": empty}, errors={i: (reason,) for i in empty})
    props = {} if forwarded_props is None else forwarded_props
    if not isinstance(props, dict):
        raise ResumeRefused("nothing was sent: the legacy bridge sends the answers in forwardedProps.command.resume, "
                            "and forwarded_props is not an object", ids=ids, problems={"legacy-channel": ids})
    command = props.get("command", {})
    if not isinstance(command, dict) or "resume" in command:
        raise ResumeRefused("nothing was sent: the legacy bridge sends the answers in forwardedProps.command.resume, "
                            "and forwarded_props already holds a command.resume (send one or the other)",
                            ids=ids, problems={"legacy-channel": ids})
    if len(entries) == 1:
        value = _answer(entries[0])
        if isinstance(value, str):
            value = json.dumps(value, ensure_ascii=False)
    else:
        native = {i.id: _native_id(i) for i in open_interrupts}
        missing = [i for i in ids if native.get(i) is None]
        if missing:
            raise ResumeRefused(
                f"nothing was sent: interrupts {_ids(missing)} carry no LangGraph id (the producer sent no rawEvent), "
                "so LangGraph cannot match several answers to them, and every open interrupt is answered in one run: "
                "configure the producer to send its raw events or the interrupt outcome",
                ids=missing, problems={"legacy-channel": missing})
        answered: dict[str, list[str]] = {}
        for i in ids:
            answered.setdefault(native[i] or "", []).append(i)
        shared = [i for group in answered.values() if len(group) > 1 for i in group]
        if shared:
            # (a record can say so, though no stream the bridge read can: one key would carry the last
            # answer only, and the others, counted as given, would never reach the graph)
            raise ResumeRefused(
                f"nothing was sent: interrupts {_ids(shared)} carry one LangGraph id between them, so their "
                "answers would be one key of the map LangGraph reads, and all but the last lost: the thread's "
                "record is not one the bridge wrote", ids=shared, problems={"legacy-channel": tuple(shared)})
        value = {native[e.interrupt_id]: _answer(e) for e in entries}
    return {**props, "command": {**command, "resume": value}}


def _answer(entry: ResumeEntry) -> JSON:
    if entry.status == "resolved":
        return entry.payload
    return {CANCELLED_SENTINEL: True, "interrupt_id": entry.interrupt_id}


def _native_id(interrupt: Interrupt) -> str | None:
    meta = interrupt.metadata
    held = meta.get("langgraph") if isinstance(meta, Mapping) else None
    native = held.get("id") if isinstance(held, Mapping) else None
    return native if isinstance(native, str) and native else None
