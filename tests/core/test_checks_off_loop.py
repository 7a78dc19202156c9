"""Where a resume's checks of answers against ``responseSchema`` s run: never on an event loop.

Such a check may spend up to the client's ``max_schema_steps`` (seconds of CPU), and on a loop every
other run waited for it. Each check an async thread makes is one ``Check`` the shell judges in a worker
thread: the plan's (``run(resume=...)``), the tool loop's before its handlers run (``run_until_done``),
and the one made again before a retried request is sent (``max_retries``). The sync shell makes them all
on the caller's thread.

"The loop keeps ticking" is shown without a clock: the first check watched waits, inside the check, for
a task on the loop to tick three times. On the loop it would wait for itself: the gate would stay shut
and the test fail (after ``GATE_SECONDS``, the only wait here, which a passing run never reaches).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from test_schema_budget import answer, form

import agui_client as ag
from agui_client.core import schema as schema_module
from agui_client.core.fold import ThreadState
from agui_client.testing import Finish, Respond, ScriptedAgent, Start, tool_call

__all__: list[str] = []

#: How long the first check waits for the loop's ticks before the test gives up (a failure, never a pass).
GATE_SECONDS = 30.0

#: Forms per response: 40 ordinary forms of their own, some 330,000 steps to check in full (allowed).
FORMS = 40

BUSY = Respond(status=503, body={"detail": "busy"}, headers={"Retry-After": "0"})


def on_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


class Watched:
    """``schema.check`` watched: where each call ran (on a loop or not, which OS thread), and, once
    ``armed``, the first call after waits inside the check for the loop's ticks (``gate``)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, *, armed: bool = True) -> None:
        self.where: list[tuple[bool, int]] = []
        self.armed = threading.Event()
        if armed:
            self.armed.set()
        self.checking = threading.Event()
        self.ticked = threading.Event()
        self.gate_opened: bool | None = None
        self.order: list[str] = []
        checking = schema_module.check

        def watched(schema: Any, instance: Any, allowance: Any = None) -> Any:
            self.where.append((on_loop(), threading.get_ident()))
            self.order.append("check")
            if self.armed.is_set() and not self.checking.is_set():
                self.checking.set()
                self.gate_opened = self.ticked.wait(GATE_SECONDS)
            return checking(schema, instance, allowance)

        monkeypatch.setattr(schema_module, "check", watched)

    @asynccontextmanager
    async def ticking(self) -> AsyncIterator[list[int]]:
        """A task on the loop counting its ticks while a check runs (three open the gate)."""
        ticks: list[int] = []

        async def tick() -> None:
            while True:
                await anyio.sleep(0.001)
                if self.checking.is_set():
                    ticks.append(1)
                    if len(ticks) == 3:
                        self.ticked.set()

        async with anyio.create_task_group() as group:
            group.start_soon(tick)
            try:
                yield ticks
            finally:
                group.cancel_scope.cancel()


def forms_agent(*runs: Any) -> ScriptedAgent:
    """An agent asking ``FORMS`` forms, then answering as ``runs`` say."""
    return ScriptedAgent.interrupts(FORMS, response_schema=[form(n) for n in range(FORMS)]) if not runs else \
        ScriptedAgent(list(runs))


def answered(thread: Any) -> Any:
    builder = thread.resume_builder()
    for n, interrupt in enumerate(thread.open_interrupts):
        builder.answer(interrupt.id, answer(n))
    return builder


def asking(*items: Any) -> list[Any]:
    """A run asking ``FORMS`` forms (after ``items``)."""
    interrupts = tuple(ag.Interrupt(id=f"ask-{n}", reason="input", response_schema=form(n)) for n in range(FORMS))
    return [Start(), *items, Finish(outcome=ag.RunFinishedInterruptOutcome(interrupts=interrupts))]


#: A run leaving a frontend call for the client, then one asking the forms: the thread holds both.
HELD_CALL_THEN_FORMS = ([Start(), *tool_call("c1", "pick", {"q": "which"}), Finish()], asking())


# -- the async shell: the loop ticks while each check runs ---------------------------------------------


@pytest.mark.anyio
async def test_a_resumes_plan_checks_while_the_loop_ticks(served: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    endpoint = served(forms_agent())
    async with ag.AsyncAgentClient(endpoint.url) as client:
        thread = client.thread()
        await thread.run("hi")
        watched = Watched(monkeypatch)
        async with watched.ticking():
            result = await thread.run(resume=answered(thread))

    assert result.outcome == "success"
    assert watched.gate_opened is True
    # (each answer checked by build() and again as the egress check, none on the loop)
    assert len(watched.where) == 2 * FORMS and not any(loop for loop, _ in watched.where)


@pytest.mark.anyio
@pytest.mark.parametrize("streamed", [False, True])
async def test_the_tool_loops_early_check_runs_while_the_loop_ticks(
        served: Any, monkeypatch: pytest.MonkeyPatch, streamed: bool) -> None:
    # The thread holds a frontend call (its first run's) and the forms' questions (its second's):
    # run_until_done judges the resume before the handler runs (a refused resume must not have had an
    # action taken on its behalf).
    endpoint = served(forms_agent(*HELD_CALL_THEN_FORMS, [Start(), Finish()]))
    order: list[str] = []

    async with ag.AsyncAgentClient(endpoint.url) as client:
        thread = client.thread(tool_handlers={"pick": lambda q: order.append("handler") or "this one"})
        await thread.run("hi")
        await thread.run("and the forms?")
        watched = Watched(monkeypatch)
        watched.order = order
        async with watched.ticking():
            if streamed:
                async with thread.stream_until_done(resume=answered(thread)) as loop:
                    async for _ in loop:
                        pass
                result = loop.result
            else:
                result = await thread.run_until_done(resume=answered(thread))

    assert result.outcome == "success" and watched.gate_opened is True
    # The early check (a build and the egress rules: each form twice) came before the handler, then the
    # run's plan checked them again; none on the loop.
    assert order == ["check"] * (2 * FORMS) + ["handler"] + ["check"] * (2 * FORMS)
    assert not any(loop for loop, _ in watched.where)


@pytest.mark.anyio
async def test_the_check_before_a_retried_send_runs_while_the_loop_ticks(
        served: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    watched = Watched(monkeypatch, armed=False)

    def busy(run_input: Any) -> Respond:
        watched.armed.set()  # (the checks after this one are the retry's)
        return BUSY

    endpoint = served(forms_agent(asking(), busy, [Start(), Finish()]))
    async with ag.AsyncAgentClient(endpoint.url, max_retries=1) as client:
        thread = client.thread()
        await thread.run("hi")
        builder = answered(thread)
        async with watched.ticking():
            result = await thread.run(resume=builder)

    assert result.outcome == "success" and endpoint.agent.request_count == 3
    assert watched.gate_opened is True
    # The plan's checks (build and egress) and the retry's (egress): none on the loop.
    assert len(watched.where) == 3 * FORMS and not any(loop for loop, _ in watched.where)


# -- both shells: where each check runs ------------------------------------------------------------------


def test_the_sync_shell_makes_every_check_on_the_callers_thread(
        served: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    watched = Watched(monkeypatch, armed=False)
    endpoint = served(forms_agent(*HELD_CALL_THEN_FORMS, BUSY, [Start(), Finish()]))
    with ag.AgentClient(endpoint.url, max_retries=1) as client:
        thread = client.thread(tool_handlers={"pick": lambda q: "this one"})
        thread.run("hi")
        thread.run("and the forms?")
        result = thread.run_until_done(resume=answered(thread))

    assert result.outcome == "success" and endpoint.agent.request_count == 4
    # The early check, the plan's, the retry's: all here.
    assert len(watched.where) == 5 * FORMS
    assert {ident for _, ident in watched.where} == {threading.get_ident()}


def test_a_check_with_no_schema_to_check_stays_on_the_loop(served: Any, drive: Any,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    # Answers to interrupts without schemas cost nothing a thread hop would not cost more: judged where
    # asked (the async shell: on the loop). Seen through the builder's build(), which every plan calls.
    where: list[bool] = []
    building: Callable[..., Any] = ag.ResumeBuilder.build

    def build(self: Any, **kwargs: Any) -> Any:
        where.append(on_loop())
        return building(self, **kwargs)

    monkeypatch.setattr(ag.ResumeBuilder, "build", build)
    endpoint = served(ScriptedAgent.interrupts(2, response_schema=None))
    with drive.client(endpoint.url) as client:
        thread = client.thread()
        thread.run("hi")
        builder = thread.resume_builder().answer("interrupt-1", "a").answer("interrupt-2", "b")
        assert thread.run(resume=builder).outcome == "success"

    assert where == [drive.kind == "async"]


@pytest.mark.anyio
async def test_the_plan_judges_its_checks_by_the_arguments_names_not_their_places(
        served: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # The plan, given every argument by name, still knows its resume answers schemas (it read the resume
    # from the second place it was given): its checks leave the loop.
    endpoint = served(forms_agent())
    async with ag.AsyncAgentClient(endpoint.url) as client:
        thread = client.thread()
        await thread.run("hi")
        watched = Watched(monkeypatch, armed=False)
        plan = await thread._planned(message=None, resume=answered(thread), tools=None, context=None,
                                     forwarded_props=None, state=None, run_id="r2")

    assert plan.resuming and len(plan.run_input.resume or ()) == FORMS
    assert len(watched.where) == 2 * FORMS and not any(loop for loop, _ in watched.where)


@pytest.mark.parametrize("loop", [False, True])
def test_a_resumes_plan_copies_no_schema_of_the_threads_interrupts(
        drive: Any, served: Any, monkeypatch: pytest.MonkeyPatch, loop: bool) -> None:
    # The checks only read the interrupts: the plan (and the tool loop's early check) hand them the
    # thread's own, never changed in place, where each read of ``thread.open_interrupts`` copies every
    # schema (200 forms: some 0.17 s, on the loop in the async shell; the plan read them three times,
    # the tool loop's early check three more).
    endpoint = served(forms_agent(*HELD_CALL_THEN_FORMS, [Start(), Finish()]))
    with drive.client(endpoint.url) as client:
        thread = client.thread(tool_handlers={"pick": lambda q: "this one"})
        thread.run("hi")
        thread.run("and the forms?")
        builder = answered(thread)
        reads: list[int] = []
        reading = ThreadState.open_interrupts

        def counted(state: ThreadState) -> Any:
            reads.append(1)
            return reading.fget(state)  # type: ignore[attr-defined]

        monkeypatch.setattr(ThreadState, "open_interrupts", property(counted))
        result = thread.run_until_done(resume=builder) if loop else thread.run(resume=builder)

    assert result.outcome == "success" and reads == []
