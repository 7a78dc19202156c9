"""The conversation behind ``agui demo`` and ``agui run``: send, render, answer interrupts, resume.

One :class:`Conversation` drives a :class:`~agui_client.Thread`: it streams a run into the view (or
as JSON lines), and while the run stops on interrupts it shows them, gets the answers the
:class:`AnswerPolicy` says (asked through a form built from each ``responseSchema``, the schema's
defaults for ``--yes``, a given JSON per interrupt or for all, or abandonment) and resumes with
``thread.resume_builder()``. Expired interrupts cannot be answered: when the person is asked, or
under ``--abandon``/``--abandon-expired``, they are abandoned, saying so; under ``--yes`` or
``--answer`` the command stops instead (``failure``), as abandoning is not what it was asked to do.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import IO, Any, Literal

import attrs
from attrs import frozen

from ..core.interrupts import ResumeBuilder
from ..core.result import RunResult
from ..errors import ExpiredInterruptAnswered, InvalidResumePayload, UnusableResponseSchema
from ..thread import Thread
from ..wire import codec
from ..wire.types.base import JSON
from ..wire.types.run import Interrupt
from . import forms
from .render import EventRenderer, Output, answer_text, render_interrupt, render_run_end
from .stopping import held_signals, left_whole
from .terminal import ascii_named, json_text, listed, named

__all__ = ["AnswerPolicy", "Conversation", "UsageProblem", "near"]

Mode = Literal["ask", "yes", "answer", "abandon", "stop"]

#: How many times one invocation resumes before it stops asking (an agent that keeps interrupting).
MAX_ROUNDS = 8
#: How many times a person is asked again after an answer the schema refuses.
MAX_ATTEMPTS = 3


class UsageProblem(Exception):
    """The command cannot go on because of how it was called (exit status 2)."""


def near(given: object, choices: Any) -> str | None:
    """The one of ``choices`` that ``given`` (a string) is most likely a misspelling of, if any is close: the
    CLI's "did you mean" (a command, an option, a choice, a code)."""
    if not isinstance(given, str) or not given:
        return None
    close = difflib.get_close_matches(given, [choice for choice in choices if isinstance(choice, str)], n=1)
    return close[0] if close else None


@frozen(kw_only=True)
class AnswerPolicy:
    """How interrupts are answered.

    Attributes:
        mode: ``ask`` (a form per interrupt), ``yes`` (defaults and ``approved: true``), ``answer``
            (``answers[id]``, else ``payload``), ``abandon``, or ``stop`` (leave them open).
        payload: the answer for ``answer`` mode to every interrupt ``answers`` does not name
            (``has_payload``: one was given; ``None`` is a JSON answer too).
        answers: per interrupt id, its answer (``--answer ID=JSON``).
        abandon_expired: under ``yes`` and ``answer``, abandon an expired interrupt (saying so)
            instead of stopping with a failure.
        note: said once before the first answer (why this mode was chosen).
    """

    mode: Mode
    payload: JSON = None
    has_payload: bool = True
    answers: Mapping[str, JSON] = attrs.field(factory=dict)
    abandon_expired: bool = False
    note: str | None = None


class Conversation:
    """Runs a thread to the end the policy allows, rendering as it goes.

    Args:
        thread: the thread to drive.
        out: the human view (stderr notices only when ``json_lines`` is set).
        policy: how to answer interrupts.
        asker: asks the questions in ``ask`` mode.
        json_lines: when set, each event is written there as one JSON line instead of rendered.
    """

    def __init__(self, thread: Thread, out: Output, *, policy: AnswerPolicy, asker: forms.Asker | None = None,
                 json_lines: IO[str] | None = None) -> None:
        self.thread = thread
        self.out = out
        self.policy = policy
        self.asker = asker
        self.json_lines = json_lines
        self.runs: list[RunResult] = []
        self.stopped_at_interrupt = False
        #: Why the conversation stopped short of what was asked (exit status 1), e.g. an interrupt
        #: that expired under ``--yes``; ``None`` when it did not.
        self.failure: str | None = None
        self.used_answers: set[str] = set()
        self._noted = False

    def start(self, message: str | None, *, state: JSON = None, has_state: bool = False) -> RunResult:
        """Send ``message`` (with ``state`` when ``has_state``) and go on through the interrupts."""
        kwargs: dict[str, Any] = {"state": state} if has_state else {}
        result = self._stream(message, **kwargs)
        return self._through_interrupts(result)

    def resume(self, message: str | None = None) -> RunResult | None:
        """Answer the thread's open interrupts (with ``message`` as a new turn), then go on.

        Returns ``None`` when the policy leaves the interrupts open.

        Raises:
            UsageProblem: the thread has no open interrupts.
        """
        interrupts = self.thread.open_interrupts
        if not interrupts:
            raise UsageProblem(f"thread {named(self.thread.id)} has no open interrupts to resume")
        self.out.line(f"thread {named(self.thread.id)} is waiting on {len(interrupts)} interrupt(s)", "bold")
        self._show(interrupts)
        builder = self._answers(interrupts)
        if builder is None:
            self.stopped_at_interrupt = True
            return None
        result = self._stream(message, resume=builder)
        return self._through_interrupts(result)

    # -- internals --------------------------------------------------------------------------------------

    def _through_interrupts(self, result: RunResult) -> RunResult:
        rounds = 0
        while result.outcome == "interrupt" and self.thread.open_interrupts:
            interrupts = self.thread.open_interrupts
            self._show(interrupts)
            if rounds >= MAX_ROUNDS:
                self.out.line(f"the agent interrupted {rounds} times in a row; leaving these open", "yellow")
                self.stopped_at_interrupt = True
                break
            builder = self._answers(interrupts)
            if builder is None:
                self.stopped_at_interrupt = True
                break
            rounds += 1
            result = self._stream(None, resume=builder)
        return result

    def _show(self, interrupts: Sequence[Interrupt]) -> None:
        if self.json_lines is not None:
            return
        for interrupt in interrupts:
            render_interrupt(self.out, interrupt, self.thread.state)

    def _stream(self, message: str | None, **kwargs: Any) -> RunResult:
        out = self.out
        renderer = EventRenderer(out, self.thread.state)
        if self.json_lines is None:
            out.start_waiting("waiting for the agent...")
        try:
            # (left whole: a second Ctrl-C while the response closes waits until the run is settled)
            with left_whole(self.thread.stream(message, **kwargs)) as events:
                for event in events:
                    if self.json_lines is not None:
                        self.json_lines.write(json_text(codec.encode(event)) + "\n")
                        self.json_lines.flush()
                    else:
                        renderer.event(event)
            result = events.result
        finally:
            with held_signals():
                out.stop_waiting()
                renderer.close()
        assert result is not None
        self.runs.append(result)
        render_run_end(out, result, "the CLI")
        return result

    def _answers(self, interrupts: Sequence[Interrupt]) -> ResumeBuilder | None:
        policy = self.policy
        if policy.note and not self._noted:
            self.out.line(policy.note, "yellow")
            self._noted = True
        if policy.mode == "stop":
            return None
        builder = self.thread.resume_builder()
        expired = set(builder.expired)
        if expired and policy.mode in ("yes", "answer") and not policy.abandon_expired:
            # Asked to answer, not to abandon: an expired interrupt stops the command, nothing sent.
            ids = listed(i.id for i in interrupts if i.id in expired)
            self.failure = (f"interrupt(s) {ids} expired and cannot be answered; nothing was sent "
                            "(--abandon-expired abandons them and answers the rest)")
            return None
        if policy.mode == "answer":
            self._check_answers(interrupts, expired)
        for interrupt in interrupts:
            if interrupt.id in expired:
                self.out.line(f"interrupt {named(interrupt.id)} has expired and cannot be answered: abandoning it",
                              "yellow")
                builder.abandon(interrupt.id)
                continue
            if policy.mode == "abandon":
                builder.abandon(interrupt.id)
                self.out.line(f"abandoned interrupt {named(interrupt.id)}", "bold")
                continue
            payload = self._payload(interrupt)
            if payload is _EXPIRED:
                self.out.line(f"interrupt {named(interrupt.id)} expired while you answered: abandoning it", "yellow")
                builder.abandon(interrupt.id)
                continue
            builder.answer(interrupt.id, payload)
        # Refuses an incomplete or invalid list here, with every offending id (within the client's
        # ceiling, as the run will check it).
        builder.build(max_schema_steps=self.thread.client.max_schema_steps)
        for entry in builder.entries:
            if entry.status == "resolved":
                self.out.line(f"answer to {ascii_named(entry.interrupt_id)}: {answer_text(entry.payload)}", "bold")
        return builder

    def _check_answers(self, interrupts: Sequence[Interrupt], expired: set[str]) -> None:
        policy = self.policy
        if policy.has_payload:
            return
        missing = [i.id for i in interrupts if i.id not in expired and i.id not in policy.answers]
        if missing:
            raise UsageProblem(f"no --answer for interrupt(s) {listed(missing)} (open: "
                               f"{listed(i.id for i in interrupts)}); give --answer ID=JSON for each, "
                               "or a bare --answer JSON for the rest; nothing was sent")

    def unused_answers(self) -> list[str]:
        """The ids ``--answer ID=JSON`` named that no open interrupt had."""
        return [i for i in self.policy.answers if i not in self.used_answers]

    def _payload(self, interrupt: Interrupt) -> Any:
        policy = self.policy
        if policy.mode == "yes":
            unfilled = forms.yes_unfilled(interrupt.response_schema)
            if unfilled:
                raise UsageProblem(
                    f"--yes does not invent answers: interrupt {named(interrupt.id)} requires {listed(unfilled)} "
                    f"with no default; give them with --answer {named(interrupt.id)}=JSON; nothing was sent")
            return forms.yes_payload(interrupt.response_schema)
        if policy.mode == "answer":
            if interrupt.id in policy.answers:
                self.used_answers.add(interrupt.id)
                return policy.answers[interrupt.id]
            return policy.payload
        assert self.asker is not None, "ask mode needs an asker"
        for attempt in range(MAX_ATTEMPTS):
            if attempt == 0:
                self.out.line(f"Your answer to {ascii_named(interrupt.id)} (empty input takes the default shown):",
                              "bold")
            payload = forms.ask_payload(interrupt.response_schema, self.asker)
            try:
                # Judged on its own: the other open interrupts are not answered yet.
                forms.judge_alone(interrupt, payload, max_schema_steps=self.thread.client.max_schema_steps)
            except ExpiredInterruptAnswered:
                return _EXPIRED
            except UnusableResponseSchema:
                raise  # the schema cannot judge any answer: asking again would not help
            except InvalidResumePayload as exc:
                for problem in exc.errors.get(interrupt.id, (str(exc),)):
                    self.asker.say(f"not accepted: {problem}")
                continue
            return payload
        raise UsageProblem(f"no valid answer to interrupt {named(interrupt.id)} after {MAX_ATTEMPTS} attempts")


_EXPIRED: Any = object()
