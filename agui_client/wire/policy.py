"""The policy: what the wire types cannot state, in one place.

The attrs classes of :mod:`~agui_client.wire.types` state every field. What they cannot state is here:
the legacy nulls read as absent, the fields the wire requires though Python has a default, and the
checks beyond field types (a patch's shape, an outcome that must carry interrupts, token usage that
costs only itself when malformed). :mod:`~agui_client.wire.codec`'s converter applies this policy on the
checked path, which alone decides errors and warnings; :mod:`~agui_client.wire.derive` generates from
the same policy the fast readers most payloads take, handed it as one :class:`Policy` record, and hands a
value back to the checked path by raising :class:`Fallback`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from .._inert import quoted_name
from .compat import upgrade_parts
from .types import events as ev
from .types import messages as msg
from .types import run as rn
from .values import describe

__all__ = [
    "FieldError",
    "Fallback",
    "Policy",
    "LEGACY_NULLS",
    "ALWAYS_LEGACY_NULL",
    "WIRE_REQUIRED",
    "TAG_NAMES",
    "Check",
    "EntryFault",
    "checks",
    "check_patch",
    "check_run_usage",
    "usage_contradictions",
]


class FieldError(ValueError):
    """A value of the wrong shape; ``pointer`` is relative to the object being structured."""

    def __init__(self, message: str, pointer: str = "") -> None:
        super().__init__(message)
        self.pointer = pointer



#: Fields a 1.0 producer may still send as null from before the omission rule: read as absent, with
#: a UK-06 warning. UK-06 names ``RUN_FINISHED.outcome``, ``RUN_FINISHED``/``SUBAGENT_FINISHED.result``,
#: ``parentMessageId``, ``rawEvent`` and ``RUN_STARTED.input``'s optional fields (its tools' ``parameters`` and
#: its resume entries' ``payload`` too, as the reference reads them there). Read alike, beyond its
#: list: ``usage`` (a usage the client cannot read costs only the usage, TU-01/TU-04, and null reports
#: nothing, TU-05) and ``SUBAGENT_FINISHED.outcome`` (absent is success, SA-07, as an outcome the client
#: cannot read already is). A producer that writes unset optional fields as null (pydantic's
#: default, which the Python SDK's models once used) writes them next to the listed ones.
LEGACY_NULLS: dict[type, frozenset[str]] = {
    ev.RunFinishedEvent: frozenset({"outcome", "result", "rawEvent", "usage"}),
    ev.RunErrorEvent: frozenset({"usage", "rawEvent"}),
    ev.ToolCallStartEvent: frozenset({"parentMessageId", "rawEvent"}),
    ev.ToolCallChunkEvent: frozenset({"parentMessageId", "rawEvent"}),
    ev.SubagentFinishedEvent: frozenset({"result", "outcome", "rawEvent"}),
    rn.RunAgentInput: frozenset({"state", "tools", "context", "forwardedProps", "resume", "parentRunId",
                                 "protocolVersion"}),
    rn.Tool: frozenset({"parameters"}),
    rn.ResumeEntry: frozenset({"payload"}),
}
ALWAYS_LEGACY_NULL = frozenset({"rawEvent"})

#: Fields with a Python default that the wire still requires.
WIRE_REQUIRED: dict[type, frozenset[str]] = {
    ev.ReasoningMessageStartEvent: frozenset({"role"}),
    rn.RunAgentInput: frozenset({"messages"}),
    msg.FunctionCall: frozenset({"arguments"}),
}

#: How a check warns: ``warn(code, message, pointer=..., event_type=...)`` (:func:`~agui_client.wire.sink.warn`).
Warn = Callable[..., None]
#: A check beyond the field types (see :func:`checks`).
Check = Callable[[dict[str, Any], Warn], "dict[str, Any] | None"]
#: Why the schema refuses one token usage entry, as (pointer within the entry, message), or ``None``.
EntryFault = Callable[[Any], "tuple[str, str] | None"]


class Fallback(Exception):
    """The value is not in the plain shape: the converter's checked path decides."""


@attrs.frozen(kw_only=True)
class Policy:
    """What the generated code needs to know beyond ``attrs.fields`` (stated once, in the codec).

    Attributes:
        wire_name: an attribute's wire name.
        tag_of: a class's tag, ``(key, value)`` (``("type", "TEXT_MESSAGE_START")``), or ``None``.
        wire_required: per class, wire names that must be present although Python has a default.
        checks: per class, its check beyond the field types: ``check(value, warn)`` raises the codec's
            field error, or returns a changed value (``None``: unchanged); may warn.
        field_error: the exception class the checks raise.
        unions: each tagged union type, its members by tag value, and the tag's key.
        max_int: the largest magnitude an integer field holds.
        encodable: the classes the encoders write (any other object inside is left to the converter).
        tag_checks: classes whose check only requires their tag to hold the class's own value (a
            validator that tests the tag itself need not call it).
    """

    wire_name: Callable[[attrs.Attribute[Any]], str]
    tag_of: Callable[[type], tuple[str, str] | None]
    wire_required: Mapping[type, frozenset[str]]
    checks: Mapping[type, Check]
    field_error: type[Exception]
    unions: Mapping[Any, tuple[dict[str, type], str]]
    max_int: int
    encodable: frozenset[type]
    tag_checks: frozenset[type] = frozenset()


def _pointer_ok(path: Any) -> bool:
    """An RFC 6901 pointer: ``""`` or ``/…`` where every ``~`` starts ``~0`` or ``~1``."""
    return type(path) is str and (path == "" or (path[0] == "/" and (
        "~" not in path or path.count("~") == path.count("~0") + path.count("~1"))))


TAG_NAMES = frozenset({"type", "role"})
_PATCH_OPS = {"add": ("value",), "remove": (), "replace": ("value",), "move": ("from",), "copy": ("from",),
              "test": ("value",)}


def _patch_check(field_name: str) -> Callable[[dict[str, Any], Warn], None]:
    """The check of an event's JSON Patch member (``delta``, ``patch``): its shape (see ``check_patch``)."""

    def check(value: dict[str, Any], warn: Warn) -> None:
        patch = value.get(field_name, _ABSENT)
        if patch.__class__ is list:
            # Most patches are a few plain add/replace/test/remove operations: one glance each shows the
            # rules of check_patch cannot refuse them (this runs for every STATE_DELTA, on every path,
            # so its tests are ordered cheapest first).
            for op in patch:
                if op.__class__ is not dict:
                    break
                path = op.get("path")
                if path.__class__ is not str:
                    break
                if "~" in path and path.count("~") != path.count("~0") + path.count("~1"):
                    break
                if path and path[0] != "/":
                    break
                name = op.get("op")
                if name.__class__ is not str:  # (before the set lookup: a list or an object is unhashable)
                    break
                if name in _VALUED_OPS:
                    if "value" not in op:
                        break
                elif name != "remove":
                    break
            else:
                return
        elif patch is _ABSENT:
            return
        check_patch(patch, field_name)
    return check


_VALUED_OPS = frozenset(name for name, members in _PATCH_OPS.items() if members == ("value",))
_ABSENT: Any = object()


def check_patch(patch: Any, field_name: str) -> None:
    """Validate a JSON Patch's shape.

    An operation JSON Patch does not define (``merge``) is kept: the patch is then not applied at all
    (SP-07 / AGUI303, warned by the fold), rather than applied without it (the reference's UK-04 reading).
    So is an operation whose ``op`` is missing or not a string: it names no operation JSON Patch
    defines either, and failing the run for it would make a worse thing of it than an unknown name
    (the reference drops both alike and applies the rest).
    """
    if type(patch) is not list:
        raise FieldError(f"expected a JSON Patch array, got {describe(patch)}", f"/{field_name}")
    for i, op in enumerate(patch):
        if type(op) is not dict:
            raise FieldError(f"expected a patch operation object, got {describe(op)}", f"/{field_name}/{i}")
        name = op.get("op")
        if type(name) is not str or name not in _PATCH_OPS:  # (the type first: a list or an object is unhashable)
            continue
        members = _PATCH_OPS[name]
        path = op.get("path")
        if not _pointer_ok(path):
            raise FieldError(f"invalid JSON pointer {quoted_name(path)}", f"/{field_name}/{i}/path")
        for member in members:
            if member not in op:
                raise FieldError(f"{quoted_name(name)} operation needs {member!r}", f"/{field_name}/{i}/{member}")
            if member == "from" and not _pointer_ok(op["from"]):
                raise FieldError(f"invalid JSON pointer {quoted_name(op['from'])}", f"/{field_name}/{i}/from")


def _check_success_outcome(value: dict[str, Any], warn: Warn) -> None:
    if "interrupts" in value:
        # IR-03: the success outcome is closed; carrying interrupts is a contradiction, never a success.
        raise FieldError("a success outcome cannot carry interrupts", "/interrupts")


def _check_cancelled_outcome(value: dict[str, Any], warn: Warn) -> None:
    if "interrupts" in value:
        raise FieldError("a cancelled outcome cannot carry interrupts", "/interrupts")


def _check_interrupt_outcome(value: dict[str, Any], warn: Warn) -> None:
    interrupts = value.get("interrupts")
    if type(interrupts) is list and not interrupts:
        raise FieldError("an interrupt outcome needs at least one interrupt", "/interrupts")


def _check_suspended(value: dict[str, Any], warn: Warn) -> None:
    ids = value.get("interruptIds")
    if type(ids) is list:
        for i, item in enumerate(ids):
            if type(item) is not str:
                raise FieldError(f"expected a string, got {describe(item)}", f"/interruptIds/{i}")


def _check_usage(value: dict[str, Any], warn: Warn) -> None:
    for key, item in value.items():
        if key in ("provider", "model"):
            continue
        if type(item) is int and item < 0:
            raise FieldError("token counts are never negative", "/" + key)


def check_run_usage(value: dict[str, Any], warn: Warn, entry_fault: EntryFault) -> dict[str, Any] | None:
    """TU-01 and TU-04, a deliberate deviation from the reference (which fails the run): token usage is
    telemetry and must not cost a RUN_FINISHED its outcome and interrupts, nor a RUN_ERROR its failure.
    A ``usage`` that is not an array is dropped whole, an entry the schema refuses is dropped alone,
    each with a warning at its pointer; the rest of the event is read as usual.
    """
    if "usage" not in value:
        return None
    usage = value["usage"]
    kind = value.get("type")
    event_type = kind if type(kind) is str else None
    if type(usage) is not list:
        warn("TU-01", f"usage must be an array of entries, got {describe(usage)}: dropped", pointer="/usage",
             event_type=event_type)
        return {key: item for key, item in value.items() if key != "usage"}
    kept: list[Any] = []
    for i, entry in enumerate(usage):
        fault = entry_fault(entry)
        if fault is not None:
            pointer, message = fault
            warn("TU-04", f"usage entry dropped: {message}", pointer=f"/usage/{i}{pointer}",
                 event_type=event_type)
            continue
        kept.append(entry)
        for code, field_name, message in usage_contradictions(entry):
            warn(code, message, pointer=f"/usage/{i}/{field_name}", event_type=event_type)
    return None if len(kept) == len(usage) else {**value, "usage": kept}


#: Each part of a total (TU-02): reasoning is part of output, cached input part of input.
_USAGE_PARTS = (("reasoningTokens", "outputTokens"), ("cachedInputTokens", "inputTokens"))


def usage_contradictions(entry: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """What a well-formed wire usage entry says against itself, as (warning code, the wire name of the
    field at fault, a message); empty for a consistent entry.

    Reasoning tokens are part of the output, cached and cache-write input tokens disjoint parts of the
    input (TU-02): a part larger than its total is reported (TU-02), never added to anything, since
    totals are summed from the totals alone. ``totalTokens`` is the sum of the input and output totals
    (TU-03), which a consumer may read in its place: a different one is reported, and all three are
    kept as the producer gave them (which one is wrong, the client cannot tell).
    """
    faults = []
    for part, total in _USAGE_PARTS:
        counted, whole = entry.get(part), entry.get(total)
        if counted is not None and whole is not None and counted > whole:
            faults.append(("TU-02", part, f"{part} ({counted}) exceeds {total} ({whole}), of which it is a part"))
    written, cached, whole = (entry.get(key) for key in ("cacheWriteInputTokens", "cachedInputTokens", "inputTokens"))
    if written is not None and whole is not None and written + (cached or 0) > whole:
        faults.append(("TU-02", "cacheWriteInputTokens", f"cacheWriteInputTokens ({written}) and "
                       f"cachedInputTokens ({cached or 0}) exceed inputTokens ({whole}), of which they are "
                       "disjoint parts"))
    stated, given, made = (entry.get(key) for key in ("totalTokens", "inputTokens", "outputTokens"))
    if stated is not None and given is not None and made is not None and stated != given + made:
        faults.append(("TU-03", "totalTokens", f"totalTokens ({stated}) is not inputTokens ({given}) + outputTokens "
                       f"({made}) = {given + made}; all three are kept as reported"))
    return faults


def _check_tool_call(value: dict[str, Any], warn: Warn) -> None:
    kind = value.get("type", "function")
    if kind != "function":
        raise FieldError(f"a tool call's type must be 'function', got {quoted_name(kind)}", "/type")


def checks(entry_fault: EntryFault) -> dict[type, Check]:
    """The checks beyond the field types, by class, run before a class is structured, on every path.

    ``check(value, warn)`` raises :class:`FieldError`, or returns the value changed (``None``:
    unchanged), and may warn. A fast reader runs the same check and leaves to the checked path whatever
    it would refuse, change or warn about. ``entry_fault`` is the schema's verdict on one usage entry:
    the converter's, which sits above this policy (it applies it), so the codec hands it in.
    """

    def check_usage_of_run(value: dict[str, Any], warn: Warn) -> dict[str, Any] | None:
        return check_run_usage(value, warn, entry_fault)

    return {
        msg.ToolCall: _check_tool_call,
        ev.StateDeltaEvent: _patch_check("delta"),
        ev.ActivityDeltaEvent: _patch_check("patch"),
        rn.RunFinishedSuccessOutcome: _check_success_outcome,
        rn.RunFinishedCancelledOutcome: _check_cancelled_outcome,
        rn.RunFinishedInterruptOutcome: _check_interrupt_outcome,
        rn.SubagentFinishedSuspendedOutcome: _check_suspended,
        rn.TokenUsage: _check_usage,
        ev.RunFinishedEvent: check_usage_of_run,
        ev.RunErrorEvent: check_usage_of_run,
        msg.UserMessage: upgrade_parts,
        msg.ToolMessage: upgrade_parts,
    }
