"""The golden streams a hostile variant may meet: the documented differences of the reference
differential that the mutations make.

Some mutations of ``hostile.py`` meet a deliberate difference the golden tests document wherever the
stream lets them (two messages sharing an id, a parent id ``""``, a lone UTF-16 half, ...).
``DOCUMENTED`` names, for each mutation's label, the golden streams that document what it may make;
``SIGNS`` checks a variant for the situation each such golden stream pins; ``documented()`` puts the
two together, so the differential allows a golden stream's fields only on a variant that holds its
situation. Standard library only (and ``hostile.py``'s reading of an event).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .hostile import Event, event_type

# Mutations that meet a documented deliberate difference (``DIFFERENCES`` of tests/test_golden.py) wherever the
# stream gives them the chance: the label a mutation writes (``fnmatch`` pattern) -> the golden streams that
# document what it makes. The reference differential allows those streams' fields, and only those, on a
# variant whose label carries the mutation (any other field that differs still fails it).
_COLLIDES = ("tool-result-message-id-collides", "tool-call-parentless-id-collides",
             "tool-call-parentless-id-collides-subagent", "tool-call-foreign-parent-id-collides",
             "tool-result-named-after-parentless-call", "messages-snapshot-duplicate-ids",
             "tool-result-id-collides-open-subagent-message")
# A run ended otherwise than in success after a run that returned a result: ours is the last run's (none), the
# reference's the earlier run's.
_RESULT_KEPT = ("runs-error-after-success-result", "runs-cancelled-after-success-result",
                "runs-interrupt-after-success-result")
# An interrupt outcome refused with something open, or after the run's RUN_ERROR: golden stream -> what is open.
_OPENED = {"interrupt-outcome-message-open": "message", "interrupt-outcome-reasoning-open": "reasoning",
           "interrupt-outcome-step-open": "step", "interrupt-outcome-call-open": "call",
           "interrupt-outcome-subagent-open": "subagent", "interrupt-outcome-after-run-error": "error"}
_REFUSED_INTERRUPTS = tuple(_OPENED)
DOCUMENTED: dict[str, tuple[str, ...]] = {
    # An entity's id made another's (the rename also reaches a snapshot that restates it): a result, a text
    # or a reasoning message, a parentless call's message, sharing one id; a call given the id of a call in
    # the history is that call started again.
    "rename-result-as-*": _COLLIDES,
    "rename-text-as-*": _COLLIDES,
    "rename-reasoning-as-*": _COLLIDES,
    "rename-tool-as-*": (*_COLLIDES, "tool-call-restarted-from-history"),
    # The id "" for a message calls name as their parent (a text's; an activity's written over a holder,
    # the rename reaching the text and its calls): the reference reads "" as absent.
    "empty-id-*": ("tool-call-empty-parent-id",),
    # An emptied delta that carried one half of a character cut between deltas leaves the other alone.
    "empty-delta": ("text-surrogate-lone", "reasoning-surrogate-lone", "tool-call-args-surrogate-lone"),
    # A call on both sides of the split (a chunk lane named again, a START sent again) is a call of an
    # earlier run started again.
    # The run split off may end otherwise than in success after the first returned a result (the stream's own,
    # or one numbers-result gives it), and so may the last run when an interrupt outcome is written on it.
    "split-run": ("tool-call-restarted-from-history", *_RESULT_KEPT),
    "split-run-same-id": ("tool-call-restarted-from-history", *_RESULT_KEPT),
    "numbers-result": _RESULT_KEPT,
    # Text appended to an argument delta that ends with a character's first half parts it from its second.
    "numbers-args": ("tool-call-args-surrogate-lone",),
    # Unusual unicode put in place of a delta, or before or after it, parts a character cut between that delta
    # and its neighbour: the half left is alone.
    "unicode-delta": ("text-surrogate-lone", "reasoning-surrogate-lone", "tool-call-args-surrogate-lone"),
    # An interrupt outcome written on a run's RUN_FINISHED may land while something of the run is open or after
    # its RUN_ERROR: both refuse that RUN_FINISHED, and we hold its interrupts open (the reference does not).
    "interrupt-outcome": ("runs-interrupt-after-success-result", *_REFUSED_INTERRUPTS),
    # A result sent again under its messageId; two results for no call drawn at one point share ``tr{at}``.
    "tool-result-again-same-id": ("tool-result-resent-same-id",),
    "tool-result-unknown": ("tool-result-resent-same-id",),
    # Every result the mutation draws at one point is named ``tr{at}``: two of them for two calls (a call's
    # and one for no call, say) are a result whose messageId names another message (TC-09).
    "tool-result-*": ("tool-result-message-id-collides",),
}


# What each of those golden streams documents, as a check on a variant's events and starting thread: a
# mutation only says it *may* meet the difference; the variant must also hold the situation the golden
# stream pins (an id on two messages, a lone UTF-16 half, ...), or its fields are compared as usual.
Check = Callable[[list[Event], dict[str, Any] | None], bool]


def _calls_in(messages: Any) -> list[Any]:
    return [c.get("id") for m in messages if isinstance(m, dict) for c in m.get("toolCalls") or []
            if isinstance(c, dict)] if isinstance(messages, list) else []


def has_empty_parent(events: list[Event], inp: dict[str, Any] | None) -> bool:
    """A call names the message id "" as its parent (golden tool-call-empty-parent-id)."""
    return any(event_type(e) in ("TOOL_CALL_START", "TOOL_CALL_CHUNK") and e.get("parentMessageId") == ""
               for e in events)


def has_lone_half(events: list[Event], inp: dict[str, Any] | None) -> bool:
    """A delta holds a UTF-16 half (of a character cut between deltas, or alone): golden *-surrogate-lone."""
    return any(isinstance(e, dict) and isinstance(e.get("delta"), str) and any("\ud800" <= ch <= "\udfff"
                                                                            for ch in e["delta"]) for e in events)


def has_call_started_again(events: list[Event], inp: dict[str, Any] | None) -> bool:
    """A call the thread held at a run's start (an earlier run's, the history's) started again in that run."""
    held = set(_calls_in((inp or {}).get("messages")))
    this_run: set[Any] = set()
    for e in events:
        t = event_type(e)
        if t == "RUN_STARTED":
            held |= this_run
            this_run = set()
        elif t in ("TOOL_CALL_START", "TOOL_CALL_CHUNK") and "toolCallId" in e:
            if e["toolCallId"] in held and e["toolCallId"] not in this_run:
                return True
            this_run.add(e["toolCallId"])
        elif t == "MESSAGES_SNAPSHOT":
            held |= set(_calls_in(e.get("messages")))
    return False


def _result_kept(ends: str) -> Check:
    """A check: a run ended ``ends`` (error, cancelled, interrupt) after a run returned a result, and none succeeded
    since (golden runs-*-after-success-result: the reference keeps reporting that result)."""
    def check(events: list[Event], inp: dict[str, Any] | None) -> bool:
        returned = differs = False
        for e in events:
            t = event_type(e)
            outcome = e.get("outcome") if t == "RUN_FINISHED" else None
            kind = "error" if t == "RUN_ERROR" else str(outcome.get("type")) if isinstance(outcome, dict) else "success"
            if t == "RUN_FINISHED" and kind == "success":
                returned, differs = e.get("result") is not None, False
            elif t in ("RUN_FINISHED", "RUN_ERROR") and kind == ends and returned:
                differs = True
        return differs

    check.__name__ = f"has_result_kept_past_{ends}"
    return check


# What opens and what closes each kind of thing a RUN_FINISHED may not leave open (chunks' implied ends are not
# followed: a variant holding only such an opening is compared as usual).
_OPENS = {"TEXT_MESSAGE_START": ("message", "messageId"), "REASONING_START": ("reasoning", "messageId"),
          "REASONING_MESSAGE_START": ("reasoning", "messageId"), "STEP_STARTED": ("step", "stepName"),
          "TOOL_CALL_START": ("call", "toolCallId"), "SUBAGENT_STARTED": ("subagent", "subagentRunId")}
_CLOSES = {"TEXT_MESSAGE_END": ("message", "messageId"), "REASONING_END": ("reasoning", "messageId"),
           "REASONING_MESSAGE_END": ("reasoning", "messageId"), "STEP_FINISHED": ("step", "stepName"),
           "TOOL_CALL_END": ("call", "toolCallId"), "SUBAGENT_FINISHED": ("subagent", "subagentRunId"),
           "SUBAGENT_ERROR": ("subagent", "subagentRunId")}


def _interrupt_refused(kind: str) -> Check:
    """A check: a RUN_FINISHED with an interrupt outcome while a ``kind`` of the run is open (a message, a reasoning
    span, a step, a call, a subagent) or, for ``error``, after the run's RUN_ERROR (golden interrupt-outcome-*)."""
    def check(events: list[Event], inp: dict[str, Any] | None) -> bool:
        open_: set[tuple[str, Any]] = set()
        for e in events:
            t = event_type(e)
            if t == "RUN_STARTED":
                open_.clear()
            elif t == "RUN_ERROR":
                open_.add(("error", None))
            elif t in _OPENS:
                open_.add((_OPENS[t][0], e.get(_OPENS[t][1])))
            elif t in _CLOSES:
                open_.discard((_CLOSES[t][0], e.get(_CLOSES[t][1])))
            elif t == "RUN_FINISHED":
                outcome = e.get("outcome")
                if isinstance(outcome, dict) and outcome.get("type") == "interrupt" and any(k == kind
                                                                                           for k, _ in open_):
                    return True
                open_.clear()
        return False

    check.__name__ = f"has_interrupt_outcome_with_{kind}_open"
    return check


def has_result_again(events: list[Event], inp: dict[str, Any] | None) -> bool:
    """A call's result under the messageId of its result the thread holds (golden tool-result-resent-same-id)."""
    def results(messages: Any) -> set[Any]:
        return {(m.get("id"), m.get("toolCallId")) for m in messages if isinstance(m, dict)
                and m.get("role") == "tool"} if isinstance(messages, list) else set()

    seen = results((inp or {}).get("messages"))
    for e in events:
        if event_type(e) == "TOOL_CALL_RESULT":
            if (e.get("messageId"), e.get("toolCallId")) in seen:
                return True
            seen.add((e.get("messageId"), e.get("toolCallId")))
        elif event_type(e) == "MESSAGES_SNAPSHOT":
            seen |= results(e.get("messages"))
    return False


# Which claims on one message id belong to one message: a text message and the calls made in it; a
# parentless call's message (keyed by the call's id) and the calls naming it; an assistant message restated.
_ONE_MESSAGE = (frozenset({"text", "holder", "assistant"}), frozenset({"parentless", "holder", "assistant"}))
_ASSISTANT = frozenset({"text", "holder", "assistant", "parentless"})  # (claims of assistant messages)
_KEPT = frozenset({"activity", "reasoning"})  # (claims of messages a snapshot that leaves them out keeps)


def has_shared_id(events: list[Event], inp: dict[str, Any] | None) -> bool:
    """One id on two messages (of two kinds, two calls' results), or twice in one snapshot (the id collisions)."""
    claims: dict[Any, set[str]] = {}
    held = set(_calls_in((inp or {}).get("messages")))  # (a call held already makes no message when started again)

    def restate(messages: Any) -> bool:
        # A snapshot keeps the thread's activity and reasoning messages it does not restate (MS-03, golden
        # messages-snapshot-keeps-local-activity-reasoning), so their ids stay taken past it.
        kept = {key: kinds & _KEPT for key, kinds in claims.items() if kinds & _KEPT}
        claims.clear()
        held.clear()
        held.update(_calls_in(messages))
        ids = [m.get("id") for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []
        for m in messages if isinstance(messages, list) else []:
            if isinstance(m, dict):
                role = str(m.get("role"))
                claims.setdefault(m.get("id"), set()).add(f"result:{m.get('toolCallId')}" if role == "tool" else role)
        for key, kinds in kept.items():
            claims.setdefault(key, kinds)
        return len(ids) != len(set(ids)) or any(not _one(kinds) for kinds in claims.values())

    def claim(key: Any, kind: str) -> bool:
        kinds = claims.setdefault(key, set())
        kinds.add(kind)
        return not _one(kinds)

    if restate((inp or {}).get("messages")):
        return True
    kind_of = {"TEXT_MESSAGE_START": "text", "TEXT_MESSAGE_CHUNK": "text", "REASONING_MESSAGE_START": "reasoning",
               "REASONING_MESSAGE_CHUNK": "reasoning", "ACTIVITY_SNAPSHOT": "activity",
               "ACTIVITY_DELTA": "activity"}
    for e in events:
        t = event_type(e)
        if t == "TOOL_CALL_RESULT" and "messageId" in e:  # (one message per call: a result for another is not it)
            shared = claim(e["messageId"], f"result:{e.get('toolCallId')}")
        elif t in kind_of and "messageId" in e:
            # (a text message of a user, a system or a developer is no assistant message: not one a call joins;
            # a chunk without role goes on with the message it names)
            role = e.get("role") if t.startswith("TEXT_") else None
            if role is None and t == "TEXT_MESSAGE_CHUNK":
                role = next((k for k in claims.get(e["messageId"], ()) if k in ("user", "system", "developer")), None)
            shared = claim(e["messageId"], kind_of[t] if role in (None, "assistant") else str(role))
        elif t in ("TOOL_CALL_START", "TOOL_CALL_CHUNK") and "toolCallId" in e:
            call, parent = e["toolCallId"], e.get("parentMessageId")
            if call in held:
                continue
            held.add(call)
            if parent is not None and not claims.get(parent, set()) - _ASSISTANT:
                shared = claim(parent, "holder")
            else:
                # No parent, or one of another role (TC-08): the call's message is keyed by the call's id, which
                # another message may hold already (whatever it is: a text, the parent itself, another holder).
                shared = call in claims or claim(call, "parentless")
        elif t == "MESSAGES_SNAPSHOT":
            shared = restate(e.get("messages"))
        else:
            continue
        if shared:
            return True
    return False


def _one(kinds: set[str]) -> bool:
    return len(kinds) == 1 or any(kinds <= group for group in _ONE_MESSAGE)


SIGNS: dict[str, Check] = {
    "tool-result-message-id-collides": has_shared_id, "tool-call-parentless-id-collides": has_shared_id,
    "tool-result-id-collides-open-subagent-message": has_shared_id,
    "tool-result-named-after-parentless-call": has_shared_id, "messages-snapshot-duplicate-ids": has_shared_id,
    "tool-call-restarted-from-history": has_call_started_again, "tool-call-empty-parent-id": has_empty_parent,
    "text-surrogate-lone": has_lone_half, "reasoning-surrogate-lone": has_lone_half,
    "tool-call-args-surrogate-lone": has_lone_half, "tool-result-resent-same-id": has_result_again,
    "tool-call-parentless-id-collides-subagent": has_shared_id, "tool-call-foreign-parent-id-collides": has_shared_id,
    "runs-error-after-success-result": _result_kept("error"),
    "runs-cancelled-after-success-result": _result_kept("cancelled"),
    "runs-interrupt-after-success-result": _result_kept("interrupt"),
    **{name: _interrupt_refused(kind) for name, kind in _OPENED.items()},
}


def documented(labels: list[str], events: list[Event] | None = None,
               inp: dict[str, Any] | None = None) -> dict[str, tuple[str, ...]]:
    """The golden streams documenting what the mutations ``labels`` name may make: label -> streams (``DOCUMENTED``).

    Given the variant's ``events`` (and starting thread), only the streams whose situation it holds (``SIGNS``).

    >>> documented(["numbers-args", "empty-id-text"])
    {'empty-id-text': ('tool-call-empty-parent-id',)}
    >>> documented(["empty-id-text"], [{"type": "TOOL_CALL_START", "toolCallId": "c", "parentMessageId": "m"}])
    {}
    """
    from fnmatch import fnmatchcase

    out: dict[str, tuple[str, ...]] = {}
    signs: dict[str, bool] = {}

    def holds(name: str) -> bool:
        if events is None or name not in SIGNS:
            return True
        if name not in signs:
            signs[name] = SIGNS[name](events, inp)
        return signs[name]

    for label in labels:
        found = [name for pattern, names in DOCUMENTED.items() if fnmatchcase(label, pattern) for name in names
                 if holds(name)]
        if found:
            out[label] = tuple(dict.fromkeys(found))
    return out
