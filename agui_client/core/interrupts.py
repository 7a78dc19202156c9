"""The resume rules, judged before anything is sent.

A run that stops to ask ends with interrupts; the run that continues it carries a resume list that
must answer (``resolved``) or abandon (``cancelled``) every one of them, by id, exactly once, and
must not answer one that has expired. The protocol makes this the consumer's rule (IR-12, IR-13):
the producer is not asked to check, so this module is the only guard.

* When an interrupt expires (``expiresAt`` read, and judged against the clock) is
  :mod:`~agui_client.core.expiry`'s; the rules ask it, once per check, with one reading of the clock.
* :func:`check_resume` applies every rule to any list of entries. It is the egress check: whatever
  built the list, it runs just before the bytes leave.
* :class:`ResumeBuilder` records answers and abandonments and ``build()`` hands the list to
  :func:`check_resume`, so the rules live once.

Everything here is sans-IO: the clock is injected (``now=``) and nothing is sent.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Final

import attrs
from typing_extensions import Self

from .._inert import quoted_name, shown_pointer
from ..errors import (
    AwaitingAnswers,
    DuplicateResumeEntry,
    ExpiredInterruptAnswered,
    InvalidResumeEntry,
    InvalidResumePayload,
    MisdirectedResume,
    NothingToResume,
    ResumeRefused,
    SchemaFault,
    UncoveredInterrupts,
    UnencodableResumePayload,
    UnknownInterrupt,
    UnusableResponseSchema,
)
from ..wire.codec import replacer
from ..wire.jsonio import json_problem
from ..wire.sink import warn as _warn
from ..wire.types.base import JSON, Metadata
from ..wire.types.run import Interrupt, ResumeEntry
from ..wire.values import copy_json, foreign_copy, frozen_json, plain_json, thawed_json
from . import schema as _schema
from .expiry import Clock, current_time, judge_expiry

__all__ = ["check_resume", "check_answer", "AnswerProblem",
           "awaiting_answers", "ResumeBuilder", "PROBLEM_KINDS", "SCHEMA_FAULTS", "check_target", "listed_ids",
           "warn_absent_payloads", "without_abandoned_payloads", "KeptInterrupts", "NO_INTERRUPTS"]

#: The kinds of :attr:`ResumeRefused.problems`, in the order that picks the exception's class.
PROBLEM_KINDS: Final = ("nothing", "uncovered", "expired", "unknown", "duplicate", "invalid", "invalid-entry")

#: The codes of :class:`~agui_client.errors.SchemaFault`: why a ``responseSchema`` could not judge an answer.
SCHEMA_FAULTS: Final = _schema.SCHEMA_FAULTS

_REFUSALS: Final[dict[str, type[ResumeRefused]]] = {
    "nothing": NothingToResume,
    "uncovered": UncoveredInterrupts,
    "expired": ExpiredInterruptAnswered,
    "unknown": UnknownInterrupt,
    "duplicate": DuplicateResumeEntry,
    "invalid": InvalidResumePayload,
    "invalid-entry": InvalidResumeEntry,
}

# A tuple, not a set: a hand-made entry may carry an unhashable status.
_STATUSES: Final = ("resolved", "cancelled")

# --------------------------------------------------------------------------------------------------
# The resume rules
# --------------------------------------------------------------------------------------------------

_MAX_MESSAGES = 10
_MAX_MESSAGE_CHARS = 300


#: How many interrupt ids a refusal lists (the rest are counted; ``.problems`` holds them all).
_LISTED = 10


def listed_ids(ids: Sequence[str]) -> str:
    """``ids`` as a list is written (``['i1', 'i2']``), its first :data:`_LISTED` only, each :func:`_quoted`
    (how every ``repr`` and message of the package names interrupts and tool calls)."""
    more = len(ids) - _LISTED
    return "[" + ", ".join(map(_quoted, ids[:_LISTED])) + (f", ...] ({more} more)" if more > 0 else "]")


def _quoted(value: object) -> str:
    """``repr(value)`` for a message, what could hide in it escaped, cut at 100 characters with a digest
    of the whole (:func:`agui_client._inert.quoted_name`: two ids never read the same)."""
    return quoted_name(value)


def _shorten(text: str) -> str:
    # jsonschema quotes the offending instance in full; a large payload must not make a huge error.
    return text if len(text) <= _MAX_MESSAGE_CHARS else text[: _MAX_MESSAGE_CHARS - 1] + "…"


def _schema_errors(interrupt_id: str, payload: JSON,
                   verdict: _schema.Verdict) -> tuple[list[str], list[SchemaFault]]:
    """Readable reasons ``payload`` fails its schema (``verdict``: :func:`~agui_client.core.schema.check`'s
    judgement of it), and the faults that kept the schema from judging it.

    The schema is the agent's: checking is bounded and never fetches anything (see
    :mod:`agui_client.core.schema`), and an unusable schema is a fault, never a hang or a crash. A pattern
    the linear-time engine cannot run is not checked, with an IR-30 warning naming where it is.
    """
    for pointer, why in verdict.unchecked:
        _warn("IR-30", f"interrupt {_quoted(interrupt_id)}: the responseSchema pattern at {pointer} is not checked: "
                       f"{why}",
              pointer=f"/responseSchema{pointer}", once=("responseSchema", interrupt_id, pointer))
    if verdict.fault is not None:
        fault = attrs.evolve(verdict.fault, interrupt_id=interrupt_id)
        where = f" at {fault.pointer}" if fault.pointer else ""
        return [_shorten(f"responseSchema cannot be used ({fault.code}{where}): {fault.reason}")], [fault]
    found = sorted(verdict.errors, key=lambda e: (list(map(str, e.absolute_path)), e.message))
    messages = []
    for error in found[:_MAX_MESSAGES]:
        where = _schema.json_pointer(error.absolute_path)
        text = f"at {where}: {error.message}" if where else error.message
        messages.append(_shorten(text if payload is not None else f"no payload given, but {text}"))
    if len(found) > _MAX_MESSAGES:
        messages.append(f"… and {len(found) - _MAX_MESSAGES} more")
    return messages, []


def _refusal(problems: Mapping[str, Sequence[str]], order: Sequence[str], errors: Mapping[str, Sequence[str]],
             faults: Mapping[str, Sequence[SchemaFault]], open_ids: Sequence[str] = ()) -> ResumeRefused:
    kind = next(k for k in PROBLEM_KINDS if problems[k])
    offending = {i for ids in problems.values() for i in ids}
    ids = [i for i in order if i in offending]
    parts = []
    if problems["nothing"]:
        parts.append(f"the thread has no open interrupts, so {listed_ids(problems['nothing'])} answer nothing")
    if problems["uncovered"]:
        parts.append(f"no entry for {listed_ids(problems['uncovered'])} (omission is not abandonment: answer or "
                     "abandon each)")
    if problems["expired"]:
        parts.append(f"{listed_ids(problems['expired'])} expired and can only be abandoned")
    if problems["unknown"] and not problems["nothing"]:
        parts.append(f"{listed_ids(problems['unknown'])} name no open interrupt "
                     f"(the open ones: {listed_ids(open_ids)})")
    if problems["duplicate"]:
        parts.append(f"{listed_ids(problems['duplicate'])} have more than one entry")
    if problems["invalid"]:
        parts.append("payloads fail their responseSchema: " + "; ".join(
            f"{_quoted(i)}: {', '.join(errors[i])}" for i in problems["invalid"][:_LISTED])
            + (f"; and {len(problems['invalid']) - _LISTED} more" if len(problems["invalid"]) > _LISTED else ""))
    if problems["invalid-entry"]:
        parts.append(f"entries for {listed_ids(problems['invalid-entry'])} are malformed (status must be "
                     "'resolved' or 'cancelled', the id a string, metadata absent or an object)")
    # A schema that could not judge is its own class of the "invalid" kind: answering differently
    # rarely helps, abandoning does.
    message = "resume refused, nothing was sent: " + "; ".join(parts)
    if kind == "unknown":
        return UnknownInterrupt(message, ids=ids, problems=problems, errors=errors, faults=faults, open_ids=open_ids)
    refused = UnusableResponseSchema if kind == "invalid" and faults else _REFUSALS[kind]
    return refused(message, ids=ids, problems=problems, errors=errors, faults=faults)


#: A number of this many digits or fewer is shown as written when it stands where an interrupt id should.
_SHOWN_DIGITS = 15


def _entry_key(entry: ResumeEntry, position: int) -> str:
    """How the entry at ``position`` in its list is named in refusals, warnings and ``repr``: its id, or,
    for an id that is no string (a malformed entry), ``<entry N: interruptId ..., not a string>``.

    The name says where the entry stands, so two malformed entries never read as one. An agent may
    raise any string as an id, this one too: such an entry is kept apart from those that name an
    interrupt (``_find_problems``), so it never reads as covering one. The name shows a
    number, a boolean or ``None`` as written, anything else by its type only: never its ``repr``, which
    may be of any length, hold line ends, or be an object's own words about what it carries (a token).
    The int 123 reads apart from the string ``'123'``.
    """
    value = entry.interrupt_id
    if isinstance(value, str):
        return value
    kind = type(value)
    if value is None or kind is bool or kind is float or (kind is int and abs(value) < 10 ** _SHOWN_DIGITS):
        shown = repr(value)
    else:
        shown = f"of type {kind.__name__}"
    return f"<entry {position}: interruptId {shown}, not a string>"


def _check_json(interrupt_id: str, payload: JSON, metadata: Metadata | None) -> None:
    """Refuse a payload or metadata JSON cannot hold, naming the interrupt and the pointer inside it."""
    for field, value in (("payload", payload), ("metadata", metadata)):
        found = json_problem(value)
        if found is not None:
            pointer, reason = found
            raise UnencodableResumePayload(
                f"resume refused, nothing was sent: the {field} for interrupt {_quoted(interrupt_id)} is not JSON at "
                f"{shown_pointer(pointer)}: {reason}", interrupt_id=interrupt_id, field=field, pointer=pointer,
                reason=reason)


def _find_problems(open_interrupts: Sequence[Interrupt], entries: Sequence[ResumeEntry], current: datetime,
                   pending_unknown: bool = False,
                   max_schema_steps: int | None = _schema.DEFAULT_MAX_SCHEMA_STEPS) -> ResumeRefused | None:
    # A producer that repeated an id (IR-06) raised one slot under that id: one entry covers it, and it
    # must satisfy every copy (expired if any copy is, valid against every schema).
    raised: dict[str, list[Interrupt]] = {}
    for interrupt in open_interrupts:
        raised.setdefault(interrupt.id, []).append(interrupt)

    named: dict[str, list[ResumeEntry]] = {}  # (the entries that name an interrupt: string ids)
    given: dict[str, None] = {}  # (every entry's name, in the order given)
    nameless: set[str] = set()  # (the names of entries whose id is no string: they name no interrupt)
    malformed: list[str] = []
    for position, entry in enumerate(entries):
        if not isinstance(entry, ResumeEntry):
            raise TypeError(f"a resume list holds ResumeEntry objects, got {type(entry).__name__}")
        key = _entry_key(entry, position)
        # Before any rule: a value JSON cannot hold would be refused, mangled or sent as invalid JSON,
        # and a schema cannot judge it.
        _check_json(key, entry.payload, entry.metadata)
        given[key] = None
        if isinstance(entry.interrupt_id, str):
            named.setdefault(key, []).append(entry)
        else:
            # Kept apart: its name is a string an agent could also have chosen as an id, and an entry
            # that names nothing must not read as covering that interrupt.
            nameless.add(key)
        # (metadata is a JSON object in the schema: another value is refused here, as the agent would
        # refuse the whole input after it was sent)
        bad = (not isinstance(entry.interrupt_id, str) or entry.status not in _STATUSES
               or not (entry.metadata is None or isinstance(entry.metadata, Mapping)))
        if bad and key not in malformed:
            malformed.append(key)

    unknown = [key for key in given if key in nameless or key not in raised]
    # Offending ids are listed in raise order, then the unknown ones in the order given.
    order = list(dict.fromkeys([*raised, *unknown]))
    problems: dict[str, list[str]] = {kind: [] for kind in PROBLEM_KINDS}
    errors: dict[str, list[str]] = {}
    faults: dict[str, list[SchemaFault]] = {}
    if not raised and pending_unknown:
        # The caller vouches for the entries (a rehydrated thread whose open interrupts are unknown):
        # with nothing held to compare them to, no entry is unknown.
        unknown = []
    if not raised:
        problems["nothing"] = list(unknown)
    problems["unknown"] = unknown
    problems["duplicate"] = [key for key in order if len(named.get(key, ())) > 1]
    problems["invalid-entry"] = [key for key in order if key in malformed]
    answers = {key: [entry for entry in named.get(key, ()) if entry.status == "resolved"] for key in raised}
    # Every answer against every schema its interrupt carries, listed once: the shared allowance is
    # sized from exactly the checks that spend it.
    checks = {key: [(interrupt.response_schema, entry.payload) for entry in answers[key] for interrupt in copies
                    if interrupt.response_schema is not None] for key, copies in raised.items()}
    # The answers are checked within one allowance: an agent's interrupts, however many, cost what one
    # check does (see shared_allowance), and never more than the client's ceiling.
    allowance = _schema.shared_allowance((pair for pairs in checks.values() for pair in pairs), max_schema_steps)
    for key, copies in raised.items():
        if key not in named:
            problems["uncovered"].append(key)
        elif answers[key] and any(judge_expiry(interrupt, current) for interrupt in copies):
            problems["expired"].append(key)
        for schema, payload in checks[key]:
            messages, found = _schema_errors(key, payload, _schema.check(schema, payload, allowance))
            errors.setdefault(key, []).extend(messages)
            if found:
                faults.setdefault(key, []).extend(found)
        if errors.get(key):
            problems["invalid"].append(key)
    if not any(problems.values()):
        return None
    return _refusal({k: tuple(v) for k, v in problems.items()}, order, {k: tuple(v) for k, v in errors.items() if v},
                    {k: tuple(v) for k, v in faults.items()}, tuple(raised))


def check_resume(open_interrupts: Sequence[Interrupt], entries: Sequence[ResumeEntry], *, now: Clock = None,
                 pending_unknown: bool = False,
                 max_schema_steps: int | None = _schema.DEFAULT_MAX_SCHEMA_STEPS) -> None:
    """Refuse a resume list that breaks the interrupt rules; the check to run before any byte is sent.

    The list must name every open interrupt (IR-12; omission is never abandonment), each exactly
    once, and nothing else (IR-10). A ``resolved`` entry must not answer an interrupt that is
    expired at ``now`` (IR-19); a ``cancelled`` one may, and is how a thread moves past it (IR-20).
    A ``resolved`` payload must satisfy the interrupt's ``responseSchema`` (IR-30); a missing payload
    is checked as ``null``, and an interrupt without a schema accepts anything. The schema comes from
    the agent, so checking against it is bounded in size, nesting and work, runs every pattern on a
    linear-time engine (one it cannot run is not checked: an IR-30 warning says where) and never
    fetches a reference; a schema that cannot judge within those bounds refuses the answer with a
    :class:`~agui_client.errors.SchemaFault` (see :data:`SCHEMA_FAULTS`). Every status must be
    ``resolved`` or ``cancelled`` (IR-11). With no open interrupts, any entry answers nothing (IR-26);
    an empty list with nothing open is an ordinary run and passes. Every payload and metadata must be
    JSON (see :func:`agui_client.wire.jsonio.json_problem`).

    Plain entries carry no record of the thread or run they were made for, so they are matched to
    the open interrupts by id alone; interrupt ids are unique only within a run. A builder from
    ``thread.resume_builder()`` is the safe path: it is also refused on another thread or after the
    thread was interrupted again (:class:`~agui_client.errors.MisdirectedResume`).

    Args:
        open_interrupts: the interrupts of the run being continued, in the order they were raised.
        entries: the resume list, however it was made.
        now: the clock expiry is judged with (see :func:`is_expired`).
        pending_unknown: the caller does not know the open interrupts (a thread rebuilt from
            elsewhere holds none, though the agent may be waiting): with ``open_interrupts`` empty,
            entries are let through instead of refused as answering nothing. Entries must still be
            well formed, each id named once. It changes nothing when ``open_interrupts`` holds any:
            then every rule applies.
        max_schema_steps: the most steps checking the answers against their schemas may spend in all
            (a client's ``max_schema_steps``; ``None``: what the schemas' and answers' sizes pay for);
            past it the schema that could not finish is refused ``over-budget``.

    Raises:
        ResumeRefused: the subclass of the first kind found in the order of :data:`PROBLEM_KINDS`,
            with ``.problems`` holding every kind (each a tuple of ids, possibly empty), ``.ids``
            every offending id, ``.errors`` the schema messages by id and ``.faults`` the schemas
            that could not judge. When the kind is ``invalid`` and a schema could not judge, the
            class is :class:`~agui_client.errors.UnusableResponseSchema` (an ``InvalidResumePayload``).
        UnencodableResumePayload: a payload or metadata is not JSON (checked first, raised alone).
        TypeError: ``entries`` holds something other than :class:`ResumeEntry`.
    """
    refusal = _find_problems(tuple(open_interrupts), tuple(entries), current_time(now), pending_unknown,
                             max_schema_steps)
    if refusal is not None:
        raise refusal


@attrs.frozen(kw_only=True)
class AnswerProblem:
    """One reason an answer fails its interrupt's ``responseSchema`` (from :func:`check_answer`).

    Attributes:
        pointer: the JSON pointer, inside the answer, of the value at fault (``""``: the answer itself).
        message: the reason, for a person (``-5 is less than the minimum of 0``).
        code: ``"invalid"`` when the value fails the schema, ``"not-json"`` when it is not JSON (a set,
            ``NaN``, a datetime …), or a :data:`SCHEMA_FAULTS` code when the schema cannot judge any
            answer (then only abandoning the interrupt helps).
        keyword: the schema keyword that failed (``"minimum"``, ``"required"``, ``"type"`` …), for ``invalid``.
        schema_pointer: where in the schema the failing keyword (or the fault) is, when known.
        missing: for a property the answer lacks (``required``, ``dependentRequired``), its name: the
            problem's ``pointer`` is the object that lacks it (JSON Schema's convention), and a form
            marks the field ``pointer + "/" + missing`` (escaped as a JSON pointer token).
    """

    pointer: str
    message: str
    code: str = "invalid"
    keyword: str | None = None
    schema_pointer: str | None = None
    missing: str | None = None


def check_answer(interrupt: Interrupt | Mapping[str, Any], payload: JSON) -> list[AnswerProblem]:
    """Check an answer against an interrupt's ``responseSchema`` before anything is recorded or sent.

    The same check a resume runs (bounded, patterns on RE2, no reference fetched), for a form that
    asks again on a bad answer: every problem, with the JSON pointer of the value at fault, in
    document order. An interrupt without a schema accepts any JSON. A pattern the linear-time engine
    cannot run is not checked (the resume's own check warns ``IR-30``). Expiry is not judged here:
    ``ResumeBuilder.build()`` and the run judge it when the answer goes out.

    Args:
        interrupt: the interrupt answered, or a schema (a part of one, as a form checks field by field).
        payload: the answer.

    Returns:
        The problems; an empty list when the answer passes.

    Example::

        problems = check_answer(interrupt, {"approved": True, "ttl_minutes": -5})
        for problem in problems:
            print(problem.pointer, problem.message)    # /ttl_minutes -5 is less than the minimum of 0
    """
    found = json_problem(payload)
    if found is not None:
        pointer, reason = found
        return [AnswerProblem(pointer=pointer, message=f"not JSON: {reason}", code="not-json")]
    schema = interrupt.response_schema if isinstance(interrupt, Interrupt) else interrupt
    if schema is None:
        return []
    verdict = _schema.check(schema, payload)
    if verdict.fault is not None:
        fault = verdict.fault
        where = f" at {fault.pointer}" if fault.pointer else ""
        return [AnswerProblem(pointer="", code=fault.code, schema_pointer=fault.pointer,
                              message=_shorten(f"the responseSchema cannot judge an answer ({fault.code}{where}): "
                                               f"{fault.reason}"))]
    ordered = sorted(verdict.errors, key=lambda e: (list(map(str, e.absolute_path)), e.message))
    return [AnswerProblem(pointer=_schema.json_pointer(e.absolute_path), message=_shorten(e.message),
                          keyword=str(e.validator), schema_pointer=_schema.json_pointer(e.absolute_schema_path),
                          missing=_missing(e))
            for e in ordered]


def _missing(error: Any) -> str | None:
    # The validator says which property is missing in its message alone ("'name' is a required
    # property"): the property is the one of the keyword's names the object lacks that the message
    # names exactly (never parsed out of the message, which would take an agent's text for a name).
    keyword = str(error.validator)
    if keyword not in ("required", "dependentRequired", "dependencies") or not isinstance(error.instance, dict):
        return None
    named = error.validator_value
    said: list[tuple[Any, str]] = []  # (a name, the message that would say it is missing)
    if keyword == "required" and isinstance(named, list):
        said = [(name, f"{quoted_name(name)} is a required property") for name in named]
    elif keyword != "required" and isinstance(named, dict):
        said = [(name, f"{quoted_name(name)} is a dependency of {quoted_name(key)}")
                for key, names in named.items() if isinstance(names, list) for name in names]
    for name, message in said:
        if isinstance(name, str) and name not in error.instance and error.message == message:
            return name
    return None


def awaiting_answers(thread_id: str, open_interrupts: Sequence[Interrupt]) -> AwaitingAnswers:
    """The refusal of a run sent without a resume while ``open_interrupts`` wait: it names each
    interrupt and its prompt, and says how to answer them."""
    first: dict[str, Interrupt] = {}
    for interrupt in open_interrupts:
        first.setdefault(interrupt.id, interrupt)  # (a repeated id is one question: IR-06)
    interrupts = tuple(first.values())
    count = len(interrupts)
    listed = ", ".join(f"{_quoted(i.id)} ({_prompt(i)})" for i in interrupts[:_LISTED]) \
        + (f" and {count - _LISTED} more" if count > _LISTED else "")
    example = interrupts[0].id
    problems = {kind: tuple(i.id for i in interrupts) if kind == "uncovered" else () for kind in PROBLEM_KINDS}
    return AwaitingAnswers(
        f"nothing was sent: thread {_quoted(thread_id)} is waiting for {count} answer{'s' if count != 1 else ''} "
        f"to the interrupt{'s' if count != 1 else ''} its last run raised: {listed}. Answer (or abandon) each, then "
        f"run with them: builder = thread.resume_builder(); builder.answer({_quoted(example)}, payload) or "
        f"builder.abandon({_quoted(example)}); thread.run(resume=builder)", thread_id=thread_id, interrupts=interrupts,
        problems=problems)


def _prompt(interrupt: Interrupt) -> str:
    # The agent's words, shown inert (repr escapes control characters) and short.
    text = interrupt.message or ""
    if not text:
        return f"reason {_quoted(interrupt.reason)}, no prompt"
    return repr(text if len(text) <= 80 else text[:79] + "…")


def without_abandoned_payloads(entries: Sequence[ResumeEntry]) -> tuple[ResumeEntry, ...]:
    """``entries`` with the payload of each abandoning (``cancelled``) entry dropped, and an ``IR-11``
    warning naming the interrupt.

    Abandoning answers nothing: an agent reading the payload of a cancelled entry would act on an answer
    the caller abandoned. The caller's own entry objects are left as they are; what is sent has none.
    """
    out = []
    for position, entry in enumerate(entries):
        if entry.status == "cancelled" and entry.payload is not None:
            _warn("IR-11", f"the cancelled entry for interrupt {_quoted(_entry_key(entry, position))} carries a "
                           "payload: dropped (abandoning answers nothing; answer with status 'resolved' to send it)")
            entry = attrs.evolve(entry, payload=None)
        out.append(entry)
    return tuple(out)


def warn_absent_payloads(entries: Sequence[ResumeEntry]) -> None:
    """Warn that ``resolved`` entries without a payload go out without one (IR-11)."""
    ids = [_entry_key(e, n) for n, e in enumerate(entries) if e.status == "resolved" and e.payload is None]
    if ids:
        # Both SDKs leave a null payload out of the wire entry, so an agent cannot tell "answered with
        # null" from "answered with nothing"; sent as is, but said.
        _warn("IR-11", f"resolved entries for {listed_ids(ids)} carry no payload and are sent without one: an "
                       "agent cannot tell a null payload from an absent one (answer with a value such as false or "
                       "{} if null was meant)")


def check_target(builder: ResumeBuilder, thread_id: str, run_id: str | None, open_interrupts: Sequence[Interrupt],
                 run_ids: Callable[[], Sequence[str]] | None = None) -> None:
    """Refuse ``builder``, when bound, used on another thread or on interrupts it was not made for (IR-10).

    Every run that resumes with a builder asks this (``Conversation``, before anything is sent).

    ``run_ids``: the ids of the runs the thread holds, oldest first (asked only for the message of a
    refusal, and only when the thread waits on nothing: it costs a pass over the runs). Without it
    the message does not say what became of the builder's run."""
    if builder.thread_id is None:
        return
    if builder.thread_id != thread_id:
        why = f"the builder was made for thread {_quoted(builder.thread_id)}, not {_quoted(thread_id)}"
    elif builder.run_id != run_id or not _same_interrupts(builder._interrupts, open_interrupts):
        made = f"the builder was made for the interrupts of run {_quoted(builder.run_id)}"
        if not open_interrupts:
            why = f"{made}, and the thread waits on none now{'' if run_ids is None else builder._since(run_ids())}"
        elif builder.run_id != run_id:
            why = f"{made}, and the thread now waits on those of run {_quoted(run_id)}"
        else:
            why = "the thread's open interrupts are no longer the ones the builder was made for"
    else:
        return
    ids = tuple(dict.fromkeys(_entry_key(e, n) for n, e in enumerate(builder.entries)))
    raise MisdirectedResume(f"resume refused, nothing was sent: {why} (make a new one with "
                            "thread.resume_builder())", ids=ids, builder_thread_id=builder.thread_id,
                            builder_run_id=builder.run_id, thread_id=thread_id, interrupted_run_id=run_id)


class KeptInterrupts:
    """Interrupts an owner keeps as its own (a thread's ledger, a :class:`ResumeBuilder`), and the copies
    it hands out.

    An interrupt is frozen, but its ``responseSchema`` and ``metadata`` are dicts. Whoever checks answers
    against them holds its own copies (:attr:`interrupts`, made here) and hands out others
    (:meth:`handed_out`), so a caller changing what it was handed (a form filling in its defaults)
    changes neither the schema an answer is checked against, nor the record the next save writes, nor
    what any other caller was handed. An interrupt holding neither dict is immutable, and kept as it is.

    The copies are made from ``marshal`` bytes kept beside the owner's (:func:`frozen_json`): every dict
    and list built anew at C speed, each value exactly as it was. Bytes can be kept when the dicts are
    plain JSON: known when a parser made them (``plain``: a ``RUN_FINISHED`` off the wire, a store's
    record), or else found by one walk here (:func:`plain_json`), then copied through orjson as any
    foreign JSON. A value ``marshal`` cannot write (nested past some 2,000 levels), or one that is not
    plain JSON (a ``datetime``, ``NaN``), is copied by :func:`foreign_copy` at each hand-out, as before.
    Measured on 200 ordinary 50-field forms (CPU time, best of 7, load 13-15 on two cores): a read of a
    thread's ``open_interrupts`` 6.7-7.8 ms, where the walk and an orjson copy each time took 17.5-19.5;
    the owner's own copy of parsed schemas 7-9 ms (the bytes written and read) against 13-17. The bytes
    take some 0.2 times the memory of the copies they make.
    """

    __slots__ = ("interrupts", "_asking", "_frozen", "_plain")

    def __init__(self, interrupts: Iterable[Interrupt] = (), *, plain: bool = False) -> None:
        """Keep copies of ``interrupts``' dicts; ``plain``: they are plain JSON a parser made (no tuple,
        no subclass, no container held twice), so no walk judges them."""
        given = tuple(interrupts)
        asking = tuple(n for n, interrupt in enumerate(given)
                       if interrupt.response_schema is not None or interrupt.metadata is not None)
        values = [value for n in asking for value in (given[n].response_schema, given[n].metadata)]
        frozen = None
        if plain:
            frozen = frozen_json(values)
            own = thawed_json(frozen) if frozen is not None else [copy_json(value) for value in values]
        elif values and plain_json(values):
            # (orjson's copy makes a tuple inside a list, as a copy of foreign JSON always has)
            own, plain = [copy_json(value) for value in values], True
            frozen = frozen_json(own)
        else:
            own = [foreign_copy(value) for value in values]
        self.interrupts = _with_values(given, asking, own)
        self._asking = asking
        self._frozen = frozen
        self._plain = plain

    def handed_out(self) -> tuple[Interrupt, ...]:
        """The interrupts for a caller: copies of their dicts, made for this call alone."""
        if not self._asking:
            return self.interrupts
        return _with_values(self.interrupts, self._asking, self._values())

    def copy(self) -> KeptInterrupts:
        """The same interrupts kept by another owner (a builder made from a thread's): copies of their
        own, and the same bytes (never handed out) to copy from."""
        copied = KeptInterrupts.__new__(KeptInterrupts)
        copied.interrupts = self.handed_out()
        copied._asking, copied._frozen, copied._plain = self._asking, self._frozen, self._plain
        return copied

    def _values(self) -> list[Any]:
        # (each asking interrupt's schema, then its metadata, in order: as _with_values takes them)
        if self._frozen is not None:
            return thawed_json(self._frozen)  # type: ignore[no-any-return]
        kept = self.interrupts
        return [foreign_copy(value, self._plain or None) for n in self._asking
                for value in (kept[n].response_schema, kept[n].metadata)]


_replace_values = replacer(Interrupt, ("response_schema", "metadata"))


def _with_values(interrupts: tuple[Interrupt, ...], asking: tuple[int, ...],
                 values: list[Any]) -> tuple[Interrupt, ...]:
    """``interrupts`` with those at ``asking`` built again holding ``values`` (a schema, then metadata, each)."""
    if not asking:
        return interrupts
    out = list(interrupts)
    take = iter(values).__next__
    for n in asking:
        out[n] = _replace_values(out[n], take(), take())
    return tuple(out)


#: An owner keeping no interrupts.
NO_INTERRUPTS = KeptInterrupts()


def _same_interrupts(made_for: Sequence[Interrupt], held: Sequence[Interrupt]) -> bool:
    # Content, not only ids: a re-interrupted thread may raise a different question under the same id.
    return len(made_for) == len(held) and all(a is b or a == b for a, b in zip(made_for, held, strict=True))


class ResumeBuilder:
    """Assembles the resume list for a thread's open interrupts, refusing an invalid one at ``build()``.

    ``answer`` and ``abandon`` refuse at once an id that is not one of the builder's open interrupts
    (:class:`~agui_client.errors.UnknownInterrupt`, listing the open ids in ``.open_ids``), and a payload
    or metadata JSON cannot hold (:class:`~agui_client.errors.UnencodableResumePayload`); a builder
    holding no interrupts (``pending_unknown``) takes any id. A second entry for one id is kept and
    reported by ``build()``, never silently overwritten or dropped. To check an answer against its
    interrupt's ``responseSchema`` before recording it, see :func:`check_answer`.

    A builder from ``thread.resume_builder()`` is *bound*: it records the thread, the interrupted run
    and the exact interrupts it answers, and ``thread.run(resume=builder)`` refuses it
    (:class:`~agui_client.errors.MisdirectedResume`) on another thread, or once the thread has been
    interrupted again, even when the new interrupt reuses an id. One made directly, as below, is
    unbound: a run matches its entries to the open interrupts by id alone.

    Example (the usual way: bound to the thread)::

        result = thread.run("deploy to production")
        if result.outcome == "interrupt":
            builder = thread.resume_builder()  # the thread's open interrupts, its interrupted run
            for interrupt in result.interrupts:
                builder.answer(interrupt.id, {"answer": "yes"})  # or builder.abandon(interrupt.id)
            print(builder.uncovered)  # () once every open interrupt has an entry
            result = thread.run(resume=builder)  # refused before anything is sent if incomplete or stale

    Example (unbound, checked by hand)::

        builder = ResumeBuilder(result.interrupts, now=clock)
        builder.answer("approve-1", {"approved": True}).abandon("upload-2")
        entries = builder.build()  # raises ResumeRefused naming every offending id
    """

    __slots__ = ("_kept", "_interrupts", "_open_ids", "_now", "_entries", "_thread_id", "_run_id")

    def __init__(self, interrupts: Iterable[Interrupt] | KeptInterrupts, *, now: Clock = None,
                 thread_id: str | None = None, run_id: str | None = None) -> None:
        """Start a resume list.

        Args:
            interrupts: the open interrupts of the run being continued, in the order raised (or a
                thread's :class:`KeptInterrupts`, copied from the bytes it keeps).
            now: the clock ``build()`` and :attr:`expired` judge expiry with (see :func:`is_expired`).
            thread_id: bind the builder to this thread: a run on another thread refuses it, and so
                does a run on this one whose interrupted run or open interrupts differ from
                ``run_id`` and ``interrupts``. ``None`` (the default) leaves the builder unbound.
            run_id: the run that raised ``interrupts`` (checked only when ``thread_id`` is given).
        """
        # (its own: the schemas its answers are checked against; a thread's are copied from its bytes)
        self._kept = interrupts.copy() if isinstance(interrupts, KeptInterrupts) else KeptInterrupts(interrupts)
        self._interrupts = self._kept.interrupts
        # The open ids once, in raise order: answering n interrupts one by one looks each id up here
        # (it read them all again per answer, n² for a run that raised thousands).
        self._open_ids = dict.fromkeys(i.id for i in self._interrupts)
        self._now = now
        self._entries: list[ResumeEntry] = []
        self._thread_id = thread_id
        self._run_id = run_id

    @property
    def thread_id(self) -> str | None:
        """The thread the builder is bound to (``None``: unbound)."""
        return self._thread_id

    @property
    def run_id(self) -> str | None:
        """The interrupted run the builder answers, when bound (``None`` when unknown or unbound)."""
        return self._run_id

    def _since(self, run_ids: Sequence[str]) -> str:
        """What became of the builder's run, as the thread's runs tell it: a run after it (a builder
        used twice, say) answered or abandoned its interrupts; or the thread holds no such run. Then
        either it holds none at all (made anew), or its runs start later: a thread loaded from a store
        keeps only its last run, so the first run it holds, or one before it, is the one that did."""
        if self._run_id is None or self._run_id not in run_ids:
            missing = f" and holds no run {_quoted(self._run_id)}"
            if not run_ids or self._run_id is None:
                return f"{missing} (this copy of the thread was made or loaded without it)"
            first = _quoted(run_ids[0])
            return (f"{missing}: the first run it holds is {first} (a thread loaded from a store keeps only its "
                    f"last run), so if {_quoted(self._run_id)} was this thread's, {first} or a run before it "
                    "answered or abandoned them")
        after = run_ids[len(run_ids) - list(reversed(run_ids)).index(self._run_id):]
        if not after:
            return ", though that run is its last"
        return f" (run {_quoted(after[0])}, after it, answered or abandoned them)"

    def __repr__(self) -> str:
        # Ids only, never the payloads: an answer may hold what a person typed, of any size.
        answered = [_entry_key(e, n) for n, e in enumerate(self._entries) if e.status == "resolved"]
        abandoned = [_entry_key(e, n) for n, e in enumerate(self._entries) if e.status != "resolved"]
        bound = ("unbound" if self._thread_id is None else
                 f"thread_id={_quoted(self._thread_id)} run_id={_quoted(self._run_id)}")
        return (f"<ResumeBuilder {bound} answered={listed_ids(answered)} abandoned={listed_ids(abandoned)} "
                f"uncovered={listed_ids(self.uncovered)}>")

    @property
    def interrupts(self) -> tuple[Interrupt, ...]:
        """The open interrupts, in the order they were raised (copies of their schemas and metadata, made
        for this read: changing them changes none the builder checks against; see :class:`KeptInterrupts`)."""
        return self._kept.handed_out()

    @property
    def entries(self) -> tuple[ResumeEntry, ...]:
        """The entries recorded so far, in call order (duplicates and unknown ids included)."""
        return tuple(self._entries)

    @property
    def uncovered(self) -> tuple[str, ...]:
        """Ids of open interrupts that have no entry yet, in raise order."""
        # (an id that is no string names no interrupt, and may be a list or a dict, which no set holds)
        named = {entry.interrupt_id for entry in self._entries if isinstance(entry.interrupt_id, str)}
        return tuple(dict.fromkeys(i.id for i in self._interrupts if i.id not in named))

    @property
    def expired(self) -> tuple[str, ...]:
        """Ids of open interrupts that are expired now (abandon them; they cannot be answered)."""
        current = current_time(self._now)
        return tuple(dict.fromkeys(i.id for i in self._interrupts if judge_expiry(i, current)))

    def answer(self, interrupt_id: str, payload: JSON = None, *, metadata: Metadata | None = None) -> Self:
        """Record a ``resolved`` entry: the answer the interrupt asked for.

        Args:
            interrupt_id: the interrupt answered.
            payload: the answer (any JSON). ``None`` means no payload: it is left out of the wire
                entry, as ``null`` is (IR-11), and is allowed only when the schema accepts ``null``;
                a run sending it warns that the agent cannot tell null from absent.
            metadata: envelope information about the answer (signatures, routing), not the answer.

        Returns:
            The builder, for chaining.

        Raises:
            UnknownInterrupt: ``interrupt_id`` is not an open interrupt of the builder (``.open_ids``
                lists those); nothing is recorded.
            UnencodableResumePayload: ``payload`` or ``metadata`` is not JSON (a set, bytes, a
                datetime, ``NaN``, a lone surrogate …); nothing is recorded.
        """
        self._refuse_unknown(interrupt_id)
        _check_json(interrupt_id, payload, metadata)
        self._entries.append(ResumeEntry(interrupt_id=interrupt_id, status="resolved", payload=payload,
                                         metadata=metadata))
        return self

    def abandon(self, interrupt_id: str, *, metadata: Metadata | None = None) -> Self:
        """Record a ``cancelled`` entry: the interrupt is explicitly abandoned (allowed when expired).

        Args:
            interrupt_id: the interrupt abandoned.
            metadata: envelope information about the decision.

        Returns:
            The builder, for chaining.

        Raises:
            UnknownInterrupt: ``interrupt_id`` is not an open interrupt of the builder; nothing is recorded.
            UnencodableResumePayload: ``metadata`` is not JSON; nothing is recorded.
        """
        self._refuse_unknown(interrupt_id)
        _check_json(interrupt_id, None, metadata)
        self._entries.append(ResumeEntry(interrupt_id=interrupt_id, status="cancelled", metadata=metadata))
        return self

    def _refuse_unknown(self, interrupt_id: str) -> None:
        # Said when the id is given, not when the list is built or sent: the caller still knows then
        # which answer it meant. (A non-string id is a malformed entry, reported by build().)
        if not self._interrupts or not isinstance(interrupt_id, str):
            return  # (no interrupts held: the agent's are unknown, see build(pending_unknown=True))
        if interrupt_id in self._open_ids:
            return
        open_ids = tuple(self._open_ids)
        problems = {kind: (interrupt_id,) if kind == "unknown" else () for kind in PROBLEM_KINDS}
        raise UnknownInterrupt(f"resume refused, nothing was recorded: {_quoted(interrupt_id)} is not an open "
                               f"interrupt; the open ones are {listed_ids(open_ids)}", ids=(interrupt_id,),
                               problems=problems, open_ids=open_ids)

    def build(self, *, pending_unknown: bool = False,
              max_schema_steps: int | None = _schema.DEFAULT_MAX_SCHEMA_STEPS) -> tuple[ResumeEntry, ...]:
        """The resume list, in the order the interrupts were raised, after :func:`check_resume`.

        Expiry is judged now, at build time, with the builder's clock.

        Checking answers against their ``responseSchema`` s is CPU work, bounded by ``max_schema_steps``
        (the default, 8,000,000 steps, is some 4.5 s), made where ``build()`` is called. On an event loop,
        hand the builder to ``await thread.run(resume=builder)``, which builds it in a worker thread, or
        make the call there yourself: ``await asyncio.to_thread(builder.build)``.

        Args:
            pending_unknown: the builder holds no interrupts because they are unknown (a thread
                rebuilt from elsewhere): return the recorded entries, in call order, instead of
                refusing them as answering nothing (see :func:`check_resume`). Without effect when
                the builder holds interrupts.
            max_schema_steps: the most steps the answers' schema checks may spend in all (see
                :func:`check_resume`; a thread's run passes its client's ``max_schema_steps``).

        Returns:
            One entry per open interrupt.

        Raises:
            NothingToResume: there are no open interrupts (and ``pending_unknown`` is not set).
            ResumeRefused: the subclass named by :func:`check_resume`, listing every offending id.
        """
        if not self._interrupts and pending_unknown:
            check_resume((), self._entries, now=self._now, pending_unknown=True)
            return tuple(self._entries)
        if not self._interrupts:
            # Entries are refused as the run's egress check refuses them, naming each id (they answer
            # nothing); a builder with none is refused too: there is nothing to resume.
            check_resume((), self._entries, now=self._now)
            raise NothingToResume("resume refused, nothing was sent: the thread has no open interrupts",
                                  ids=(), problems={kind: () for kind in PROBLEM_KINDS})
        check_resume(self._interrupts, self._entries, now=self._now, max_schema_steps=max_schema_steps)
        rank = {interrupt_id: n for n, interrupt_id in enumerate(dict.fromkeys(i.id for i in self._interrupts))}
        return tuple(sorted(self._entries, key=lambda entry: rank[entry.interrupt_id]))
