"""A user's script, type-checked by CI (`mypy --strict`): what the README imports from the package."""

from __future__ import annotations

from agui_client import (
    AgentClient,
    AnswerProblem,
    AwaitingAnswers,
    StreamNotFinished,
    check_answer,
    AsyncAgentClient,
    Interrupt,
    ResumeBuilder,
    RunFinishedEvent,
    RunResult,
    TextMessageContentEvent,
    ToolCallStartEvent,
    UncoveredInterrupts,
)
from agui_client.stores import SqliteStore


def answer_all(client: AgentClient, thread_id: str) -> RunResult:
    thread = client.thread(thread_id)
    builder: ResumeBuilder = thread.resume_builder()
    for interrupt in thread.state.open_interrupts:
        asked: Interrupt = interrupt
        builder.answer(asked.id, {"approved": True})
    try:
        return thread.run(resume=builder)
    except UncoveredInterrupts as refused:
        raise SystemExit(f"not sent: {refused.ids}") from refused


def texts(client: AgentClient) -> list[str]:
    out: list[str] = []
    with client.thread().stream("hi") as events:
        for event in events:
            if isinstance(event, TextMessageContentEvent):
                out.append(event.delta)
            elif isinstance(event, (ToolCallStartEvent, RunFinishedEvent)):
                out.append(event.TYPE)
    return out


async def later(url: str, store: SqliteStore) -> str | None:
    async with AsyncAgentClient(url, store=store) as client:
        thread = await client.load_thread("t")
        result = await thread.run("again")
        return result.outcome


def problems(interrupt: Interrupt) -> list[str]:
    found: list[AnswerProblem] = check_answer(interrupt, {"approved": True})
    return [f"{p.pointer}: {p.message} ({p.code}, {p.keyword})" for p in found]


def streamed(client: AgentClient) -> str:
    thread = client.thread()
    try:
        with thread.stream("hi") as stream:
            text = "".join(stream.text_stream) + "".join(stream.text_deltas(subagents=True))
            final: RunResult = stream.get_final_result()
    except AwaitingAnswers as waiting:
        return f"{waiting.thread_id}: {[i.id for i in waiting.interrupts]}"
    except StreamNotFinished as early:
        return str(early.run_id)
    return text + (final.outcome or "")
