"""The probe's checks: what each one judges, what it reads of the responses, and its verdict.

:mod:`~agui_client.testing.probing` drives a producer through the plan and records each response as
an :class:`Observed`; :func:`judge` turns the plan's observations into one :class:`CheckResult` per
check of :data:`CHECKS`, each reason ending with what to change in the producer.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

import attrs

from .._inert import one_line
from ..core import legacy
from ..core import schema as _schema
from ..core.expiry import parse_expires_at
from ..core.result import RunResult
from ..errors import ProtocolError, StreamWarning
from ..wire.jsonio import dump_json
from ..wire.types import events as ev
from ..wire.types import messages as msg
from ..wire.types.run import Interrupt, ResumeEntry, RunAgentInput
from .probe_report import CheckResult, Evidence, Level, ProbeRun, Verdict

__all__ = ["CHECKS", "KEPT_PER_RUN", "Observed", "Plan", "note", "judge"]

# Per run, the protocol errors and the raw RUN_FINISHED events kept for the checks: a hostile stream
# may hold one per event; the first ones are kept (and the last RUN_FINISHED), the rest counted.
KEPT_PER_RUN = 100

# Evidence quotes what the producer sent; a long value is cut so a report stays readable.
_QUOTE_LIMIT = 163

# A CUSTOM event whose name says it asks something (LangGraph's and CrewAI's ``on_interrupt``, an
# approval or confirmation request): in a run that ended as success, the question went unanswered.
# Judged word by word (``on_interrupt``, ``askHuman``, ``approval-request``): a word that merely holds
# one (``task_progress``, ``flask``) asks nothing.
_ASKING = ("interrupt", "approv", "confirm", "permission", "consent", "human", "input", "question", "ask")
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def _asks(name: str) -> bool:
    return any(word.lower().startswith(_ASKING) for word in _WORDS.findall(name))


# --------------------------------------------------------------------------------------------------
# The checks
# --------------------------------------------------------------------------------------------------


#: Every check, in report order: ``(id, rule, level)``; ``docs/probe.md`` has a section per id.
CHECKS: tuple[tuple[str, str, Level], ...] = (
    ("stream-rules", "Every response of the plan is a well-formed AG-UI 1.0 event stream (what `agui verify` "
                     "checks).", "MUST"),
    ("pause-as-success", "A run that stopped to ask ends with the interrupt outcome, not with success and the "
                         "question in a CUSTOM event or an unanswered tool call.", "heuristic"),
    ("interrupt-count", "An interrupt outcome carries at least one interrupt.", "MUST"),
    ("interrupt-ids-unique", "Each interrupt's id is unique within its run.", "MUST"),
    ("response-schema", "An interrupt's responseSchema is a JSON Schema a consumer can check an answer "
                        "against.", "SHOULD"),
    ("tool-call-id", "An interrupt's toolCallId names a tool call the thread holds.", "SHOULD"),
    ("subagent-run-id", "An interrupt's subagentRunId names a subagent the run started.", "SHOULD"),
    ("expires-at", "An interrupt's expiresAt is a date a consumer can read (conventionally ISO 8601).",
     "heuristic"),
    ("answers-proceed", "A resume that answers every interrupt is taken as the answers the run stopped for: the "
                        "run proceeds.", "MUST"),
    ("approval-result", "An approved interrupt naming a toolCallId is followed, in the resuming run, by a result "
                        "for that call.", "heuristic"),
    ("unknown-entry", "A resume entry naming an interrupt the producer never raised is skipped: the run "
                      "proceeds without it.", "SHOULD"),
    ("fresh-thread-resume", "A resume list on a run that continues nothing is unrecognised entries: the run "
                            "proceeds.", "SHOULD"),
    ("uncovered-resume", "A resume that leaves an interrupt uncovered never ends as success and never performs "
                         "the uncovered action (rejecting the input, or interrupting again, both conform).",
     "MUST"),
    ("repeated-resume", "The same resume sent a second time does not perform the approved action again.",
     "SHOULD"),
)

_DEFECTIVE_OFF = ("not run: --defective is off by default (it sends inputs a conforming consumer never sends; "
                  "pass defective=True / --defective to run it)")


# --------------------------------------------------------------------------------------------------
# One response, observed
# --------------------------------------------------------------------------------------------------


@attrs.define
class Observed:
    """What one request of the plan came to, with the positions the checks quote."""

    name: str
    run_input: RunAgentInput
    sent: str
    entries: tuple[ResumeEntry, ...] = ()
    rejected: str | None = None
    result: RunResult | None = None
    errors: list[ProtocolError] = attrs.Factory(list)
    warnings: list[StreamWarning] = attrs.Factory(list)
    finished: list[tuple[int, dict[str, Any]]] = attrs.Factory(list)   # raw RUN_FINISHED payloads
    errors_dropped: int = 0                                            # past KEPT_PER_RUN: counted
    finished_dropped: int = 0
    customs: list[tuple[int, str]] = attrs.Factory(list)               # (index, name)
    started_calls: dict[str, tuple[int, str]] = attrs.Factory(dict)    # call id -> (index, tool name)
    results: dict[str, int | None] = attrs.Factory(dict)               # call id -> index of its result
    subagents: set[str] = attrs.Factory(set)
    run_error: tuple[int | None, str] | None = None
    redact: Callable[[str], str] = str

    @property
    def outcome(self) -> str | None:
        if self.rejected is not None:
            return "rejected"
        return self.result.outcome if self.result is not None else None

    @property
    def interrupt_ids(self) -> tuple[str, ...]:
        return tuple(i.id for i in self.result.interrupts) if self.result is not None else ()

    def proceeded(self) -> tuple[bool, str, int | None]:
        """Whether the run went on (``success``, ``interrupt`` or ``cancelled``), what it did, and where."""
        if self.rejected is not None:
            return False, f"rejected: {self.rejected}", None
        outcome = self.result.outcome if self.result is not None else None
        if outcome is not None and outcome != "error":  # (a late RUN_ERROR after it leaves the outcome standing)
            return True, f"ended {outcome}", self.finished[-1][0] if self.finished else None
        if self.run_error is not None:
            return False, f"RUN_ERROR: {self.run_error[1]}", self.run_error[0]
        if self.finished:
            # A RUN_FINISHED the stream rules refused still ends the run (stream-rules reports it).
            sent = self.finished[-1][1].get("outcome")
            kind = sent.get("type") if isinstance(sent, dict) else "success"
            return True, f"ended {self.quote(kind)} (a RUN_FINISHED the stream rules refuse)", self.finished[-1][0]
        return False, "the stream ended before the run's terminal event", None

    def quote(self, value: Any) -> str:
        text = value if isinstance(value, str) else dump_json(value).decode("utf-8", "replace")
        return _short(self.redact(text))

    def evidence(self, index: int | None, detail: str) -> Evidence:
        return Evidence(run=self.name, index=index, detail=detail)

    def run(self) -> ProbeRun:
        detail = self.rejected if self.rejected is not None else (self.run_error[1] if self.run_error else None)
        return ProbeRun(name=self.name, thread_id=self.run_input.thread_id, run_id=self.run_input.run_id,
                        sent=self.sent, outcome=self.outcome, detail=detail,
                        events=self.result.events if self.result is not None else 0, interrupts=self.interrupt_ids)


def _short(text: str) -> str:
    # On one line as the CLI's other commands quote an agent's words (``one_line``: a line end written
    # as ``\\n`` or ``\\r``; a line or paragraph separator, NEL, is escaped where the output leaves).
    # Splitting on whitespace wrote each as a space: the report hid what the agent sent.
    return one_line(text, _QUOTE_LIMIT)


def note(seen: Observed, index: int, event: ev.Event | ev.UnknownEvent) -> None:
    """Record in ``seen`` what the checks read of one event of its response (at ``index``)."""
    if isinstance(event, ev.CustomEvent):
        seen.customs.append((index, event.name))
    elif isinstance(event, ev.ToolCallStartEvent):
        seen.started_calls.setdefault(event.tool_call_id, (index, event.tool_call_name))
    elif isinstance(event, ev.ToolCallResultEvent):
        seen.results.setdefault(event.tool_call_id, index)
    elif isinstance(event, ev.SubagentStartedEvent):
        seen.subagents.add(event.subagent_run_id)
    elif isinstance(event, ev.RunErrorEvent) and seen.run_error is None:
        code = f" (code {seen.quote(event.code)})" if event.code else ""
        seen.run_error = (index, seen.quote(event.message) + code)


def _approved(entry: ResumeEntry) -> bool:
    # An answer approves unless it says otherwise: `false`, or an object whose `approved` is not true.
    if entry.status != "resolved" or entry.payload is False:
        return False
    return not (isinstance(entry.payload, Mapping) and "approved" in entry.payload
                and entry.payload["approved"] is not True)


@attrs.define
class Plan:
    """The observed runs, by the part of the plan they belong to."""

    ask: Observed | None = None
    answer: Observed | None = None
    answer_refused: str | None = None
    repeat: Observed | None = None
    ask_2: Observed | None = None
    unknown: Observed | None = None
    unknown_refused: str | None = None
    fresh: Observed | None = None
    ask_3: Observed | None = None
    uncovered: Observed | None = None
    left_open: Interrupt | None = None


# --------------------------------------------------------------------------------------------------
# Judging
# --------------------------------------------------------------------------------------------------

_RULES: dict[str, tuple[str, Level]] = {check_id: (rule, level) for check_id, rule, level in CHECKS}


def _verdict(check_id: str, verdict: Verdict, reason: str, evidence: Sequence[Evidence] = ()) -> CheckResult:
    rule, level = _RULES[check_id]
    return CheckResult(id=check_id, rule=rule, level=level, verdict=verdict, reason=reason, evidence=tuple(evidence))


def _broken(check_id: str, reason: str, evidence: Sequence[Evidence]) -> CheckResult:
    """A rule broken: ``fail`` for a MUST, ``warn`` for a SHOULD or a heuristic."""
    return _verdict(check_id, "fail" if _RULES[check_id][1] == "MUST" else "warn", reason, evidence)


def _raw_interrupts(seen: Sequence[Observed]) -> list[tuple[Observed, int, list[Any]]]:
    """Every interrupt outcome sent, raw: (run, event index, its ``interrupts`` value as sent)."""
    found = []
    for item in seen:
        for index, finished in item.finished:
            outcome = finished.get("outcome")
            if isinstance(outcome, dict) and outcome.get("type") == "interrupt":
                interrupts = outcome.get("interrupts")
                found.append((item, index, interrupts if isinstance(interrupts, list) else []))
    return found


def _each_interrupt(seen: Sequence[Observed], key: str) -> list[tuple[Observed, int, str, Any]]:
    """(run, event index, interrupt id, value) for every interrupt sent carrying ``key``."""
    return [(item, index, str(i.get("id")), i[key]) for item, index, interrupts in _raw_interrupts(seen)
            for i in interrupts if isinstance(i, dict) and key in i]


#: Warnings another check judges, left out of the stream check so that one finding is reported once.
#: A question asked the pre-1.0 way breaks no stream rule (ignoring CUSTOM is conformant): the
#: pause-as-success check judges it from the events themselves. An interrupt naming a subagent (SA-09)
#: or a tool call (IR-07) the run never had is what the subagent-run-id and tool-call-id checks judge,
#: on the same interrupts by the same reading.
_JUDGED_ELSEWHERE = frozenset({legacy.CUSTOM_ASKED, legacy.TOOL_ASKED, "SA-09", "IR-07"})


# What to do about a stream rule broken: each code named in the evidence has a section in docs/codes.md.
_CODES_SAY = "each line names the rule's code; docs/codes.md says what to do about each"


def _check_stream(seen: Sequence[Observed]) -> CheckResult:
    errors = [s.evidence(e.index, f"{e.event_type or '-'} [{e.rule or type(e).__name__}] {s.quote(e.detail)}")
              for s in seen for e in s.errors]
    warnings = [s.evidence(w.index, f"{w.event_type or '-'} [{w.code}] {s.quote(w.message)}")
                for s in seen for w in s.warnings if w.code not in _JUDGED_ELSEWHERE]
    streams = sum(1 for s in seen if s.rejected is None)
    more = [s.evidence(None, f"and {s.errors_dropped} more protocol error(s), counted, not kept (the first "
                             f"{KEPT_PER_RUN} are)") for s in seen if s.errors_dropped]
    more += [s.evidence(None, f"and {s.finished_dropped} more RUN_FINISHED event(s), counted, not judged (the "
                              f"first {KEPT_PER_RUN - 1} and the last are)") for s in seen if s.finished_dropped]
    if errors:
        total = len(errors) + sum(s.errors_dropped for s in seen)
        return _verdict("stream-rules", "fail", f"{total} protocol error(s) in {streams} response(s); "
                        f"{_CODES_SAY}",
                        errors + more + warnings)
    if warnings:
        return _verdict("stream-rules", "warn", f"no protocol error, {len(warnings)} warning(s); {_CODES_SAY}",
                        warnings)
    return _verdict("stream-rules", "pass", f"{streams} response(s), no protocol error or warning")


def _check_pause(seen: Sequence[Observed]) -> CheckResult:
    evidence = []
    successes = [s for s in seen if s.outcome == "success"]
    for s in successes:
        assert s.result is not None
        for index, name in s.customs:
            if _asks(name):
                evidence.append(s.evidence(index, f"CUSTOM event {s.quote(name)!s} in a run that ended as success"))
        pending = set(s.result.pending_tool_call_ids)
        for call_id, (index, name) in s.started_calls.items():
            if call_id not in s.results:
                named = " (named pending)" if call_id in pending else ""
                evidence.append(s.evidence(index, f"tool call {s.quote(call_id)} ({s.quote(name)}) left "
                                                  f"unanswered{named} in a run that ended as success; the probe "
                                                  "offers no frontend tools"))
    evidence += _asked_outside_interrupt(seen)
    if evidence:
        return _broken("pause-as-success", "a run ended as success while asking something; end a run that stops "
                                           "to ask with the interrupt outcome carrying what it asks", evidence)
    if not successes:
        return _verdict("pause-as-success", "pass", "no run ended as success")
    return _verdict("pause-as-success", "pass", f"{len(successes)} run(s) ended as success with nothing left asked")


def _asked_outside_interrupt(seen: Sequence[Observed]) -> list[Evidence]:
    """Every RUN_FINISHED, as sent, whose outcome carries interrupts but is not the interrupt outcome: the
    run asked, and a consumer sees a run that did not (the schema refuses a success outcome carrying
    them; an outcome type 1.0 does not know is read as success)."""
    found = []
    for item in seen:
        for index, finished in item.finished:
            outcome = finished.get("outcome")
            if (isinstance(outcome, dict) and outcome.get("type") != "interrupt"
                    and isinstance(outcome.get("interrupts"), list) and outcome["interrupts"]):
                found.append(item.evidence(index, f"a {item.quote(outcome.get('type'))} outcome carrying "
                                                  f"{len(outcome['interrupts'])} interrupt(s)"))
    return found


def _check_count(seen: Sequence[Observed]) -> CheckResult:
    outcomes = _raw_interrupts(seen)
    if not outcomes:
        return _verdict("interrupt-count", "n/a", "no run ended with the interrupt outcome")
    empty = [s.evidence(index, "an interrupt outcome with no interrupts") for s, index, items in outcomes
             if not items]
    if empty:
        return _broken("interrupt-count", "an interrupt outcome carried nothing to answer; carry at least one "
                       "interrupt, or end the run as success", empty)
    return _verdict("interrupt-count", "pass", f"{len(outcomes)} interrupt outcome(s), each with interrupts")


def _check_unique(seen: Sequence[Observed]) -> CheckResult:
    outcomes = [o for o in _raw_interrupts(seen) if o[2]]
    if not outcomes:
        return _verdict("interrupt-ids-unique", "n/a", "no interrupt was raised")
    evidence = []
    for s, index, items in outcomes:
        ids = [i.get("id") if isinstance(i, dict) else None for i in items]
        repeated = sorted({s.quote(i) for i in ids if ids.count(i) > 1 and i is not None})
        if repeated:
            evidence.append(s.evidence(index, f"interrupt id(s) {', '.join(repeated)} appear more than once"))
    if evidence:
        return _broken("interrupt-ids-unique", "an interrupt id repeats within a run; give each interrupt of a "
                       "run its own id", evidence)
    return _verdict("interrupt-ids-unique", "pass", f"{len(outcomes)} interrupt outcome(s), ids unique")


def _check_field(seen: Sequence[Observed], check_id: str, key: str, fault: Callable[[Observed, Any], str | None], *,
                 absent: str, broken: str, passed: str, judged: Callable[[Any], bool] = lambda value: True
                 ) -> CheckResult:
    """One interrupt field judged on every interrupt that carries it (and whose value ``judged`` takes):
    ``fault(run, value)`` says what is wrong with it, after "interrupt ID" (``None``: nothing);
    ``passed`` takes the number judged."""
    found = [f for f in _each_interrupt(seen, key) if judged(f[3])]
    if not found:
        return _verdict(check_id, "n/a", absent)
    evidence = []
    for s, index, interrupt_id, value in found:
        said = fault(s, value)
        if said is not None:
            evidence.append(s.evidence(index, f"interrupt {s.quote(interrupt_id)}{said}"))
    if evidence:
        return _broken(check_id, broken, evidence)
    return _verdict(check_id, "pass", passed.format(len(found)))


def _schema_fault(s: Observed, value: Any) -> str | None:
    fault = _schema.check(value, None).fault
    if fault is None:
        return None
    where = f" at {fault.pointer}" if fault.pointer else ""
    return f": {fault.code}{where}: {s.quote(fault.reason)}"


def _tool_call_fault(s: Observed, value: Any) -> str | None:
    assert s.result is not None
    if isinstance(value, str) and s.result.state.has_tool_call(value):
        return None
    return f" names tool call {s.quote(value)}, which the thread does not hold"


def _subagent_fault(s: Observed, value: Any) -> str | None:
    # A subagent's id names one invocation, so only one this run started can have raised the
    # interrupt: a subagent of an earlier run of the thread does not count (as the stream's own SA-09
    # reads it, which this check reports in its place).
    if isinstance(value, str) and value in s.subagents:
        return None
    return f" names subagent {s.quote(value)}, never started in this run"


# ISO 8601's basic form (no separators) and a bare count of seconds: both are dates to their writer,
# and no date to a consumer (the reference's parser and parse_expires_at read neither), so each is
# named with the extended form that says the same instant.
_BASIC_FORM = re.compile(r"(\d{4})(\d{2})(\d{2})[Tt](\d{2})(\d{2})(\d{2})?(\.\d+)?([Zz]|[+-]\d{2}(?:\d{2})?)?")
_EPOCH = re.compile(r"-?\d{9,11}")


def _extended(value: str) -> str | None:
    """The extended ISO 8601 form of a basic-form or epoch-seconds ``expiresAt``, or ``None``."""
    basic = _BASIC_FORM.fullmatch(value)
    if basic is not None:
        year, month, day, hour, minute, second, fraction, zone = basic.groups()
        zone = "Z" if zone is None or zone in "Zz" else f"{zone[:3]}:{zone[3:] or '00'}"
        return f"{year}-{month}-{day}T{hour}:{minute}:{second or '00'}{fraction or ''}{zone}"
    if _EPOCH.fullmatch(value):
        try:
            return datetime.fromtimestamp(int(value), timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        except (OverflowError, OSError, ValueError):  # before year 1: no date-time to suggest
            return None
    return None


def _expires_fault(s: Observed, value: str) -> str | None:
    if parse_expires_at(value) is not None:
        return None
    meant = _extended(value)
    if meant is None:
        return f": expiresAt {s.quote(value)} is not a readable date"
    form = "ISO 8601's basic form" if _BASIC_FORM.fullmatch(value) else "seconds since 1970"
    return f": expiresAt {s.quote(value)} is {form}, read as no date; write {meant}"


def _check_interrupt_fields(seen: Sequence[Observed]) -> list[CheckResult]:
    # Each ``broken`` reason ends with what to change in the producer.
    return [
        _check_field(seen, "response-schema", "responseSchema", _schema_fault,
                     absent="no interrupt carried a responseSchema",
                     broken="a responseSchema cannot judge an answer; send a self-contained JSON Schema an answer "
                            "can be checked against",
                     passed="{} responseSchema(s), each a usable JSON Schema"),
        _check_field(seen, "tool-call-id", "toolCallId", _tool_call_fault,
                     absent="no interrupt carried a toolCallId",
                     broken="a toolCallId names no tool call; stream the call (TOOL_CALL_START) before the "
                            "interrupt that asks about it",
                     passed="{} toolCallId(s), each naming a call of the thread"),
        _check_field(seen, "subagent-run-id", "subagentRunId", _subagent_fault,
                     absent="no interrupt carried a subagentRunId",
                     broken="a subagentRunId names no subagent; start it (SUBAGENT_STARTED) in the run that "
                            "raises its interrupt",
                     passed="{} subagentRunId(s), each naming a subagent"),
        # Only strings are judged: the schema types expiresAt as one, so a number (epoch seconds, say)
        # already fails the stream check as a schema violation, and saying so again here would be twice.
        _check_field(seen, "expires-at", "expiresAt", _expires_fault, judged=lambda value: isinstance(value, str),
                     absent="no interrupt carried an expiresAt string",
                     broken="an expiresAt cannot be read as a date, so the interrupt never expires; write an "
                            "ISO 8601 extended-form date-time with a zone (2026-06-01T11:00:00Z)",
                     passed="{} expiresAt value(s), each a readable date"),
    ]


def _no_interrupt(check_id: str, ask: Observed | None) -> CheckResult:
    if ask is not None and not ask.proceeded()[0]:
        # The prompt did not get a run at all: another prompt would not help.
        return _verdict(check_id, "n/a", f"the prompt raised no interrupt: the {ask.name} run did not finish "
                                         f"({ask.proceeded()[1]}); make it finish, then use a prompt that makes "
                                         "the agent stop to ask")
    outcome = ask.outcome if ask is not None else None
    return _verdict(check_id, "n/a", f"the prompt raised no interrupt ({ask.name if ask else 'ask'} ended "
                                     f"{outcome}); use a prompt that makes the agent stop to ask")


def _check_answers(plan: Plan) -> CheckResult:
    ask, answer = plan.ask, plan.answer
    if plan.answer_refused is not None:
        return _verdict("answers-proceed", "n/a", f"no conforming resume could be built: {plan.answer_refused}")
    if answer is None or ask is None:
        return _no_interrupt("answers-proceed", ask)
    went_on, what, index = answer.proceeded()
    if not went_on:
        return _broken("answers-proceed", "a complete resume did not proceed; take the entries as the answers "
                       "the run stopped for and run on",
                       [answer.evidence(index, f"{what}; sent {answer.sent}"), *_own_thread(ask)])
    again = _asked_again(ask, answer)
    if again:
        return _broken("answers-proceed", "the run stopped again for the interrupts it was answered for; "
                       "take the entries as the answers the run stopped for",
                       [answer.evidence(index, f"interrupted again with {', '.join(map(answer.quote, again))}, "
                                               "each as it was first asked"),
                        *_own_thread(ask)])
    return _verdict("answers-proceed", "pass", f"the resume {what}", [answer.evidence(index, answer.sent)])


def _own_thread(ask: Observed) -> list[Evidence]:
    """Evidence that ``ask`` ran under a threadId of the agent's own: the likely cause of a lost resume (a
    consumer, the probe too, continues the thread its input names, not one the agent minted)."""
    return [ask.evidence(w.index, f"the agent started this run under another threadId than the request's "
                                  f"({ask.quote(w.message)}); a resume carries the request's threadId, so key the "
                                  "interrupted run's checkpoint by the threadId of the input")
            for w in ask.warnings if w.code == "LC-08" and w.pointer == "/threadId"][:1]


def _asked_again(ask: Observed, answer: Observed) -> list[str]:
    """The ids of ``answer``'s interrupts asking again what its resume answered: the same id, reason,
    message, tool call and subagent (ids are unique within a run only: a new question may reuse one)."""
    def asked(interrupt: Interrupt) -> tuple[Any, ...]:
        return (interrupt.id, interrupt.reason, interrupt.message, interrupt.tool_call_id, interrupt.subagent_run_id)

    answered = {e.interrupt_id for e in answer.entries}
    first = {asked(i) for i in (ask.result.interrupts if ask.result is not None else ()) if i.id in answered}
    raised = answer.result.interrupts if answer.result is not None else ()
    return sorted({i.id for i in raised if asked(i) in first})


def _gated(plan: Plan, run: Observed) -> list[tuple[ResumeEntry, str]]:
    """(entry, tool call id) for every approving entry of ``run`` whose interrupt names a tool call."""
    raised = {i.id: i for source in (plan.ask, plan.ask_2) if source is not None and source.result is not None
              for i in source.result.interrupts}
    return [(e, raised[e.interrupt_id].tool_call_id or "") for e in run.entries
            if e.interrupt_id in raised and raised[e.interrupt_id].tool_call_id is not None and _approved(e)]


def _check_approval(plan: Plan) -> CheckResult:
    judged = 0
    evidence = []
    for run in (plan.answer, plan.unknown):
        went_on, _, end = run.proceeded() if run is not None else (False, "", None)
        if run is None or not went_on:
            continue
        for entry, call_id in _gated(plan, run):
            judged += 1
            if call_id not in run.results:
                evidence.append(run.evidence(end, f"interrupt {run.quote(entry.interrupt_id)} approved "
                                                   f"({run.quote(entry.payload)}); tool call {run.quote(call_id)} "
                                                   f"got no result in this run, which ended {run.outcome}"))
    if evidence:
        return _broken("approval-result", "an approved action was not performed; in the resuming run, perform "
                       "each approved call and send its result", evidence)
    if not judged:
        reason = ("no approved interrupt named a toolCallId in a run that proceeded"
                  if plan.ask is not None and plan.ask.interrupt_ids else "the prompt raised no interrupt")
        return _verdict("approval-result", "n/a", reason)
    return _verdict("approval-result", "pass", f"{judged} approved tool call(s), each followed by its result")


def _check_unknown(plan: Plan) -> CheckResult:
    if plan.unknown_refused is not None:
        return _verdict("unknown-entry", "n/a", f"no conforming resume could be built: {plan.unknown_refused}")
    run = plan.unknown
    if run is None:
        return _no_interrupt("unknown-entry", plan.ask_2)
    return _proceeds("unknown-entry", run, "an entry for an interrupt never raised failed the run; skip such an "
                     "entry (with a warning of your own) and run on")


def _check_fresh(plan: Plan) -> CheckResult:
    run = plan.fresh
    assert run is not None
    return _proceeds("fresh-thread-resume", run, "a resume list on a fresh thread failed the run; its entries "
                     "answer nothing: skip them and run the input")


def _proceeds(check_id: str, run: Observed, failed: str) -> CheckResult:
    """``check_id`` passes when ``run`` went on, and is broken (``failed``: why, and what to change) when not."""
    went_on, what, index = run.proceeded()
    if not went_on:
        return _broken(check_id, failed, [run.evidence(index, f"{what}; sent {run.sent}")])
    return _verdict(check_id, "pass", f"the run {what}", [run.evidence(index, run.sent)])


def _check_uncovered(plan: Plan, defective: bool) -> CheckResult:
    if not defective:
        return _verdict("uncovered-resume", "n/a", _DEFECTIVE_OFF)
    run, left = plan.uncovered, plan.left_open
    if run is None or left is None:
        return _no_interrupt("uncovered-resume", plan.ask_3)
    call = left.tool_call_id
    if call is not None and call in run.results:
        return _verdict("uncovered-resume", "fail", "the uncovered action was performed; never act on an absent "
                        "entry: reject the input, or interrupt again carrying the interrupt", [run.evidence(
            run.results[call], f"a result for tool call {run.quote(call)}, gated by uncovered interrupt "
                               f"{run.quote(left.id)}")])
    went_on, what, index = run.proceeded()
    if run.outcome == "success":
        detail = [run.evidence(index, f"ended as success with interrupt {run.quote(left.id)} uncovered")]
        if call is not None and _carries_open_call(run.run_input, call):
            return _verdict("uncovered-resume", "fail", "the run ended as success with an interrupt the producer "
                            "can tell is open (the messages sent carry its tool call with neither a result nor an "
                            "entry); keep it open: reject the input, or end with the interrupt outcome again "
                            "carrying it", detail)
        # The page asks this only of a producer that can tell: one that keeps nothing between runs can
        # tell from the messages alone, and only when they carry the gated call (a toolCallId naming a
        # call never streamed, which tool-call-id reports, leaves nothing there to notice).
        unseen = ("no tool call names it" if call is None else
                  f"its toolCallId {run.quote(call)} names no tool call the messages sent carry")
        return _verdict("uncovered-resume", "warn", "the run ended as success with an interrupt uncovered; a "
                        "producer that keeps the interrupted run's checkpoint MUST NOT, one that keeps nothing "
                        f"cannot tell ({unseen}); if yours keeps it, keep the interrupt open", detail)
    if run.outcome == "interrupt":
        if left.id in run.interrupt_ids:
            return _verdict("uncovered-resume", "pass", "interrupted again with the uncovered interrupt",
                            [run.evidence(index, f"interrupts {', '.join(map(run.quote, run.interrupt_ids))}")])
        return _verdict("uncovered-resume", "warn", "interrupted again, but not with the uncovered interrupt; carry "
                        "the still-open interrupt, under its id, in the new interrupt outcome",
                        [run.evidence(index, f"interrupts {', '.join(map(run.quote, run.interrupt_ids))}; "
                                             f"{run.quote(left.id)} is not among them")])
    if run.outcome == "cancelled":
        return _verdict("uncovered-resume", "warn", "the run ended cancelled: nobody asked for that; keep the "
                        "interrupt open: reject the input, or interrupt again carrying it",
                        [run.evidence(index, what)])
    # Rejected before the run starts (an HTTP error, a stream opening with RUN_ERROR), or a run that
    # failed on its way: neither ends as success, and the interrupt stays open for the consumer.
    rejected = run.rejected is not None or (run.run_error is not None and run.run_error[0] == 0)
    return _verdict("uncovered-resume", "pass", "the input was rejected" if rejected else
                    f"the run did not end as success ({what})", [run.evidence(index, what)])


def _carries_open_call(run_input: RunAgentInput, call_id: str) -> bool:
    """Whether ``run_input``'s messages carry tool call ``call_id`` with no tool message answering it."""
    held = run_input.messages
    made = any(isinstance(m, msg.AssistantMessage) and any(c.id == call_id for c in m.tool_calls or ()) for m in held)
    return made and not any(isinstance(m, msg.ToolMessage) and m.tool_call_id == call_id for m in held)


def _check_repeated(plan: Plan, defective: bool) -> CheckResult:
    if not defective:
        return _verdict("repeated-resume", "n/a", _DEFECTIVE_OFF)
    run = plan.repeat
    if run is None:
        if plan.answer is None:
            return _no_interrupt("repeated-resume", plan.ask)
        return _verdict("repeated-resume", "n/a", f"the answer run ended {plan.answer.outcome}, not success: there "
                                                  "is no finished resume to repeat")
    gated = _gated(plan, run)
    if not gated:
        return _verdict("repeated-resume", "n/a", "no approved interrupt named a toolCallId: no action to count")
    evidence = [run.evidence(run.results[call], f"a second result for tool call {run.quote(call)} (interrupt "
                                                f"{run.quote(entry.interrupt_id)})")
                for entry, call in gated if call in run.results]
    if evidence:
        return _broken("repeated-resume", "the repeated resume performed the action again; skip entries "
                       "naming interrupts already answered", evidence)
    return _verdict("repeated-resume", "pass", f"the repeated resume {run.proceeded()[1]}, no action repeated",
                    [run.evidence(None, run.sent)])


def judge(plan: Plan, seen: Sequence[Observed], defective: bool) -> tuple[CheckResult, ...]:
    """One result per check of :data:`CHECKS`, in its order, from the plan's responses (``seen``: all of
    them, in the order they were sent)."""
    return (
        _check_stream(seen), _check_pause(seen), _check_count(seen), _check_unique(seen),
        *_check_interrupt_fields(seen), _check_answers(plan),
        _check_approval(plan), _check_unknown(plan), _check_fresh(plan), _check_uncovered(plan, defective),
        _check_repeated(plan, defective),
    )
