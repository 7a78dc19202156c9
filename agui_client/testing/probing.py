"""``probe(target, prompt=...)``: run a fixed plan against an AG-UI producer and judge it by the interrupt rules.

The interrupts page gives producers rules of their own (an interrupted run is never reported as
success, interrupt ids are unique, an unrecognised resume entry is skipped, an uncovered interrupt is
never taken as answered or abandoned). ``probe`` drives a producer through a fixed plan of runs, each
plan step on a fresh thread, and reports one :class:`CheckResult` per rule: the rule in a sentence,
its level (``MUST``, ``SHOULD`` or ``heuristic``), the verdict (``pass``, ``fail``, ``warn`` or
``n/a``) and the evidence (the plan run, the event index, the values seen). See ``docs/probe.md``.

In a producer's own test suite, in-process (an ASGI app is driven through httpx's ASGI transport)::

    from agui_client.testing import probe

    def test_my_agent_follows_the_interrupt_rules():
        report = probe(app, prompt="Delete the staging environment")
        report.assert_conformant()

The plan (``name``: thread, what is sent):

* ``ask``: thread 1, the prompt. ``answer``: thread 1, every interrupt answered (``answers`` by id,
  else the schema's defaults, as ``agui run --yes`` answers).
* ``ask-2``: thread 2, the prompt. ``unknown-entry``: thread 2, the same answers plus, last, an entry
  for an interrupt nobody raised.
* ``fresh-resume``: thread 3, the prompt with a resume list naming an interrupt nobody raised.
* With ``defective=True`` only (inputs a conforming consumer never sends): ``repeat``: thread 1 again,
  the ``answer`` run's entries sent a second time; ``ask-3``/``uncovered``: thread 4, the prompt, then a
  resume list that leaves one interrupt uncovered.

Conforming inputs pass the library's own resume check before they leave; the defective ones are
built here as raw ``RunAgentInput`` values (the library's send paths refuse them) and posted with
:meth:`AsyncAgentClient.open`, the transport every run uses.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs
import httpx

from .._inert import named
from ..cli.forms import yes_payload
from ..client import AsyncAgentClient
from ..core.exchange import StreamHandle
from ..core.expiry import is_expired
from ..core.fold import ThreadState
from ..core.interrupts import check_resume
from ..core.redact import displayed_url
from ..core.session import RunSession
from ..errors import (
    AguiError,
    HTTPStatusError,
    InvalidResumePayload,
    ProtocolError,
    ResumeRefused,
    RunTimeout,
    TransportError,
)
from ..wire.jsonio import parse_json
from ..wire.sink import collect_warnings
from ..wire.types import messages as msg
from ..wire.types.base import JSON
from ..wire.types.run import PROTOCOL_VERSION, Interrupt, ResumeEntry, RunAgentInput
from .probe_checks import CHECKS, KEPT_PER_RUN, Observed, Plan, judge, note
from .probe_report import CheckResult, Evidence, Level, ProbeReport, ProbeRun, Verdict

__all__ = ["probe", "aprobe", "ProbeReport", "CheckResult", "Evidence", "ProbeRun", "ProbeError", "CHECKS",
           "Level", "Verdict", "DEFAULT_RUN_TIMEOUT"]

#: Seconds one run of the plan may take, from its request to its last byte.
DEFAULT_RUN_TIMEOUT = 120.0

#: The id the probe's made-up resume entries name (with a random suffix): an interrupt nobody raised.
NEVER_RAISED = "agui-probe-never-raised"

#: Bytes an in-process (ASGI) target's response may hold: httpx's ASGI transport keeps the whole
#: body in memory until the app is done, so the probe ends a run whose body grows past this.
DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024 * 1024




class ProbeError(AguiError):
    """The probe could not run its plan (the target is unreachable or refuses the plain prompt with an
    HTTP error status, or an answer given is unusable).

    Attributes:
        usage: whether the caller's input is at fault (an ``answers`` payload the schema refuses);
            ``agui probe`` exits 2 for every ``ProbeError``.
    """

    def __init__(self, message: str, *, usage: bool = False) -> None:
        super().__init__(message)
        self.usage = usage




# --------------------------------------------------------------------------------------------------
# The driver
# --------------------------------------------------------------------------------------------------


def _mentions(payload: str | bytes, word: str) -> bool:
    return (word.encode() in payload) if isinstance(payload, bytes) else (word in payload)


class _BoundedApp:
    """An ASGI app whose response bodies may hold at most ``limit`` bytes.

    httpx's ASGI transport keeps a response's whole body until the app is done with it: past the
    limit, the app's next ``send`` raises (which ends it) and nothing more is kept; ``exceeded`` says so.
    """

    def __init__(self, app: Any, limit: int) -> None:
        self.app = app
        self.limit = limit
        self.exceeded = False

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        self.exceeded = False
        held = 0

        async def bounded(message: Any) -> None:
            nonlocal held
            if message.get("type") == "http.response.body":
                held += len(message.get("body", b""))
                if held > self.limit or self.exceeded:
                    self.exceeded = True
                    raise ProbeError(f"the response grew past max_response_bytes ({self.limit} bytes)")
            await send(message)

        await self.app(scope, receive, bounded)


class _Driver:
    """Sends the plan's inputs and folds each response with ``RunSession(collect_errors=True)``."""

    def __init__(self, client: AsyncAgentClient, prompt: str, answers: Mapping[str, JSON],
                 run_timeout: float, bounded: _BoundedApp | None = None,
                 thread_ids: Callable[[], str] | None = None) -> None:
        self.client = client
        self.prompt = prompt
        self.answers = answers
        self.run_timeout = run_timeout
        self.bounded = bounded
        self.thread_ids = thread_ids or (lambda: f"agui-probe-{uuid.uuid4()}")
        self.observed: list[Observed] = []

    def new_thread(self) -> ThreadState:
        return ThreadState(thread_id=self.thread_ids())

    async def send(self, name: str, thread: ThreadState, *, sent: str, prompt: bool = False,
                   resume: Sequence[ResumeEntry] | None = None) -> Observed:
        """One request on ``thread`` (the thread's messages and state, as any next run carries them)."""
        new = (msg.UserMessage(id=str(uuid.uuid4()), content=self.prompt),) if prompt else ()
        assert thread.thread_id is not None
        run_input = RunAgentInput(
            thread_id=thread.thread_id, run_id=str(uuid.uuid4()), messages=(*thread.input_messages(), *new),
            state=thread.state, tools=(), context=(), forwarded_props={},
            resume=tuple(resume) if resume is not None else None, protocol_version=PROTOCOL_VERSION)
        for message in new:
            thread.add_message(message)
        seen = Observed(name=name, run_input=run_input, sent=sent, entries=tuple(resume or ()))
        self.observed.append(seen)
        before = {m.id for m in thread.messages}
        handle = StreamHandle()
        session = RunSession(thread, run_input=run_input, collect_errors=True, max_errors=KEPT_PER_RUN)
        try:
            # (The client's run_timeout bounds a run over HTTP; httpx's ASGI transport runs the app to
            # its end before handing the response over, so an app that never finishes is bounded here.)
            await asyncio.wait_for(self._read(seen, session, handle), self.run_timeout)
        except (asyncio.TimeoutError, RunTimeout):  # (whichever bound came first: the same fact)
            seen.rejected = f"no complete response within {self.run_timeout:g} s"
        except HTTPStatusError as exc:
            seen.rejected = f"HTTP {exc.status_code}" + (f": {seen.quote(exc.body)}" if exc.body else "")
            if len(self.observed) == 1:
                # The plain prompt refused: every check would say n/a and the probe exit 0, a pass in
                # CI for an agent that answered nothing (a missing credential, a wrong path).
                raise ProbeError(
                    "the target refused the plan's first request, the plain prompt "
                    f"({self.client.unsent_redactor().text(seen.rejected)}): "
                    "nothing can be judged; check the URL (and path= for an ASGI app), the headers a request "
                    f"needs (-H), and that the agent accepts a threadId like {thread.thread_id!r} (thread_ids= "
                    "or --thread-prefix choose others)") from exc
        except TransportError as exc:
            if len(self.observed) == 1 and not exc.request_sent:
                raise ProbeError(f"the target could not be reached: {exc}") from exc
            seen.rejected = f"{type(exc).__name__}: {exc}"
        except ProtocolError as exc:  # not an event stream at all
            seen.rejected = f"{type(exc).__name__}: {exc}"
        if self.bounded is not None and self.bounded.exceeded:
            raise ProbeError(f"the ASGI app's response to the {name} request grew past max_response_bytes "
                             f"({self.bounded.limit} bytes): the probe stops there")
        seen.result = session.end()
        if seen.rejected is None:  # (a rejected request has no stream to judge)
            seen.errors = list(session.errors)
            seen.errors_dropped = session.errors_dropped
            seen.warnings = [*handle.warnings, *session.warnings]
        if seen.result.outcome == "error" and seen.run_error is None and seen.result.error is not None:
            seen.run_error = (None, seen.quote(seen.result.error.message))
        # A result for a call is a TOOL_CALL_RESULT, or a tool message only a MESSAGES_SNAPSHOT carried.
        for held in thread.messages:
            if isinstance(held, msg.ToolMessage) and held.id not in before:
                seen.results.setdefault(held.tool_call_id, None)
        return seen

    async def _read(self, seen: Observed, session: RunSession, handle: StreamHandle) -> None:
        async with self.client.open(seen.run_input, handle=handle, run_timeout=self.run_timeout) as payloads:
            seen.redact = session.redact = handle.redactor.text
            async for payload in payloads:
                index = session.index
                if _mentions(payload, "RUN_FINISHED"):
                    self._keep_finished(seen, index, payload)
                for event in session.feed_payload(payload):
                    note(seen, index, event)

    @staticmethod
    def _keep_finished(seen: Observed, index: int, payload: str | bytes) -> None:
        # Kept raw: the shape checks judge what was sent, also when the codec refused it.
        try:
            value = parse_json(payload)
        except ProtocolError:
            return  # (the session reports it)
        if isinstance(value, dict) and value.get("type") == "RUN_FINISHED":
            if len(seen.finished) < KEPT_PER_RUN:
                seen.finished.append((index, value))
            else:  # (the first ones are kept, and the last: the run's outcome is judged by it)
                seen.finished[-1] = (index, value)
                seen.finished_dropped += 1

    def answer_entries(self, interrupts: Sequence[Interrupt]) -> list[ResumeEntry]:
        """One entry per interrupt: the caller's answer for its id, else the schema's defaults (``cancelled``
        when it has expired)."""
        entries = []
        for interrupt in interrupts:
            with collect_warnings():  # (an unreadable expiresAt is the expires-at check's to report)
                expired = is_expired(interrupt)
            if expired:
                # Past its expiresAt it can no longer be answered, only abandoned (as `agui run --yes` does).
                entries.append(ResumeEntry(interrupt_id=interrupt.id, status="cancelled"))
                continue
            if interrupt.id in self.answers:
                payload = self.answers[interrupt.id]
            elif "*" in self.answers:
                payload = self.answers["*"]
            else:
                payload = yes_payload(interrupt.response_schema)
            entries.append(ResumeEntry(interrupt_id=interrupt.id, status="resolved", payload=payload))
        return entries

    def refusal(self, thread: ThreadState, entries: Sequence[ResumeEntry]) -> str | None:
        """``None`` when the library's own resume rules accept ``entries``, else why they refuse them.

        Raises:
            ProbeError: an answer the caller gave is refused by its interrupt's schema (a usage error).
        """
        try:
            with collect_warnings():  # (what it would warn of, the checks report)
                check_resume(thread.open_interrupts, entries)
        except InvalidResumePayload as exc:
            if any(e.interrupt_id in self.answers or "*" in self.answers for e in entries):
                raise ProbeError(f"an answer given is refused: {exc}", usage=True) from exc
            return f"{type(exc).__name__}: {exc}"
        except ResumeRefused as exc:
            return f"{type(exc).__name__}: {exc}"
        return None


def _never_raised() -> ResumeEntry:
    return ResumeEntry(interrupt_id=f"{NEVER_RAISED}-{uuid.uuid4().hex[:12]}", status="resolved",
                       payload={"approved": True})


#: The most resume entries a run's description names (an agent may raise thousands of interrupts).
_ENTRIES_LISTED = 10


def _entries_text(entries: Sequence[ResumeEntry]) -> str:
    # Each id as the CLI shows one (escaped so two read apart, cut with a digest): the description goes
    # to the report's table on a terminal, its JSON and its JUnit file.
    shown = ", ".join(f"{named(e.interrupt_id)}={e.status}" for e in entries[:_ENTRIES_LISTED])
    more = len(entries) - _ENTRIES_LISTED
    return (shown + (f" and {more} more" if more > 0 else "")) or "none"






# --------------------------------------------------------------------------------------------------
# The plan
# --------------------------------------------------------------------------------------------------


async def _run_plan(driver: _Driver, *, defective: bool) -> Plan:
    plan = Plan()
    thread = driver.new_thread()
    plan.ask = await driver.send("ask", thread, sent="the prompt", prompt=True)
    if thread.open_interrupts:
        entries = driver.answer_entries(thread.open_interrupts)
        plan.answer_refused = driver.refusal(thread, entries)
        if plan.answer_refused is None:
            plan.answer = await driver.send("answer", thread, resume=entries,
                                            sent=f"resume answering every interrupt: {_entries_text(entries)}")
            if defective and plan.answer.outcome == "success":
                plan.repeat = await driver.send("repeat", thread, resume=entries,
                                                sent=f"the same resume again: {_entries_text(entries)}")

    thread = driver.new_thread()
    plan.ask_2 = await driver.send("ask-2", thread, sent="the prompt", prompt=True)
    if thread.open_interrupts:
        entries = driver.answer_entries(thread.open_interrupts)
        plan.unknown_refused = driver.refusal(thread, entries)
        if plan.unknown_refused is None:
            entries.append(_never_raised())  # last: a producer that reads only the last entry drops the others
            plan.unknown = await driver.send("unknown-entry", thread, resume=entries,
                                             sent=f"every interrupt answered, plus: {_entries_text(entries)}")

    thread = driver.new_thread()
    extra = [_never_raised()]
    plan.fresh = await driver.send("fresh-resume", thread, prompt=True, resume=extra,
                                   sent=f"the prompt on a new thread, with resume: {_entries_text(extra)}")

    if defective:
        thread = driver.new_thread()
        plan.ask_3 = await driver.send("ask-3", thread, sent="the prompt", prompt=True)
        raised = thread.open_interrupts
        if raised:
            # Leave out an interrupt gated on a tool call when there is one: then even a producer that
            # keeps nothing between runs can tell from the messages that it is still open.
            plan.left_open = next((i for i in raised if i.tool_call_id is not None), raised[0])
            entries = [e for e in driver.answer_entries(raised) if e.interrupt_id != plan.left_open.id]
            plan.uncovered = await driver.send(
                "uncovered", thread, resume=entries,
                sent=f"resume leaving {named(plan.left_open.id)} uncovered: {_entries_text(entries)}")
    return plan


# --------------------------------------------------------------------------------------------------
# Entry points
# --------------------------------------------------------------------------------------------------


async def aprobe(target: str | Any, *, prompt: str, answers: Mapping[str, JSON] | None = None,
                 defective: bool = False, headers: Mapping[str, str] | None = None, path: str = "/",
                 run_timeout: float = DEFAULT_RUN_TIMEOUT,
                 max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
                 thread_ids: Callable[[], str] | None = None) -> ProbeReport:
    """:func:`probe` for async code (the same arguments); see there."""
    bounded = None
    if isinstance(target, str):
        client = AsyncAgentClient(target, headers=headers, run_timeout=run_timeout)
        described = displayed_url(target)
    else:
        # In-process: httpx's ASGI transport (it hands over the response once the app has finished it,
        # which is all the probe needs). An exception in the app becomes a 500, as a server would send.
        # httpx keeps the whole body in memory: the app is bounded to max_response_bytes.
        bounded = _BoundedApp(target, max_response_bytes)
        http = httpx.AsyncClient(transport=httpx.ASGITransport(app=bounded, raise_app_exceptions=False))
        client = AsyncAgentClient(f"http://asgi-app{path if path.startswith('/') else '/' + path}",
                                  headers=headers, http_client=http, run_timeout=run_timeout)
        described = f"ASGI app {type(target).__name__} {path}"
    driver = _Driver(client, prompt, dict(answers or {}), run_timeout, bounded, thread_ids)
    try:
        async with client:
            plan = await _run_plan(driver, defective=defective)
    finally:
        if not isinstance(target, str):
            await http.aclose()
    report = ProbeReport(target=described, prompt=prompt, defective=defective,
                         runs=tuple(s.run() for s in driver.observed),
                         checks=judge(plan, driver.observed, defective))
    return _redacted(report, client.unsent_redactor().text)


def _redacted(report: ProbeReport, redact: Callable[[str], str]) -> ProbeReport:
    """``report`` with the request's credentials replaced wherever the agent could have echoed them.

    The quotes of the agent's text are redacted as they are made; what the report says in its own words
    also names what the agent chose (its interrupt ids, in the runs and in the resumes described), and a
    probe report is a CI artifact: an agent echoing the ``Authorization`` header as an interrupt id
    must not get it there.
    """
    runs = tuple(attrs.evolve(run, sent=redact(run.sent), detail=None if run.detail is None else redact(run.detail),
                              interrupts=tuple(map(redact, run.interrupts))) for run in report.runs)
    checks = tuple(attrs.evolve(check, reason=redact(check.reason), evidence=tuple(
        attrs.evolve(item, detail=redact(item.detail)) for item in check.evidence)) for check in report.checks)
    return attrs.evolve(report, runs=runs, checks=checks)


def probe(target: str | Any, *, prompt: str, answers: Mapping[str, JSON] | None = None, defective: bool = False,
          headers: Mapping[str, str] | None = None, path: str = "/",
          run_timeout: float = DEFAULT_RUN_TIMEOUT, max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
          thread_ids: Callable[[], str] | None = None) -> ProbeReport:
    """Run the probe's plan against ``target`` and judge every check; see ``docs/probe.md``.

    Args:
        target: the agent's URL, or an ASGI app driven in-process (a FastAPI/Starlette app, a
            :class:`~agui_client.testing.ScriptedAgent`).
        prompt: the user message that makes the agent stop to ask (each plan part starts with it).
        answers: payloads by interrupt id (``"*"``: for every interrupt without its own); an interrupt
            without one is answered with its schema's defaults, as ``agui run --yes`` answers.
        defective: also send the two inputs a conforming consumer never sends (a resume leaving an
            interrupt uncovered, the same resume twice); off by default.
        headers: request headers (credentials are redacted from everything the report quotes).
        path: the path the ASGI app serves the agent on (ignored for a URL).
        run_timeout: seconds each run may take.
        max_response_bytes: for an ASGI app, the bytes one response's body may hold (httpx's ASGI
            transport keeps the whole body in memory until the app is done): past it the probe stops
            with a :class:`ProbeError`. A URL target's stream is read as it comes, bounded per event.
        thread_ids: called once per plan part for its new thread's id (each call a new id); by default
            ``agui-probe-<uuid4>``. For an agent that accepts only ids of its own form (a bare UUID:
            ``thread_ids=lambda: str(uuid.uuid4())``).

    Returns:
        The :class:`ProbeReport`; ``report.assert_conformant()`` fails a test when a MUST check failed.

    Raises:
        ProbeError: the target could not be reached or answered the plan's first request (the plain
            prompt) with an HTTP error status, an answer given is refused by its schema, or an ASGI
            app's response grew past ``max_response_bytes``.
        RuntimeError: called from a running event loop (use ``await aprobe(...)`` there).
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(aprobe(target, prompt=prompt, answers=answers, defective=defective, headers=headers,
                                  path=path, run_timeout=run_timeout, max_response_bytes=max_response_bytes,
                                  thread_ids=thread_ids))
    raise RuntimeError("probe() was called from a running event loop: use `await aprobe(...)` there")
