"""A user's script, type-checked by CI (`mypy --strict`): what the README imports from the package."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agui_client import (
    AgentClient,
    AnswerProblem,
    AsyncAgentClient,
    AwaitingAnswers,
    Interrupt,
    InvalidHeader,
    ResumeBuilder,
    RunFinishedEvent,
    RunResult,
    StreamNotFinished,
    TextMessageContentEvent,
    ToolCallStartEvent,
    UncoveredInterrupts,
    check_answer,
)
from agui_client.stores import STORE_FORMAT_VERSION, SqliteStore, StoredThread, ThreadStore
from agui_client.terminal import NAME_CHARS, InertDeltas, inert_name, inert_text


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


async def for_user(client: AsyncAgentClient, user_token: str) -> str | None:
    thread = await client.load_thread()
    try:
        result = await thread.run("hi", headers={"Authorization": f"Bearer {user_token}"})
    except InvalidHeader as refused:
        return f"{refused.code}: {refused.name} {refused.reason}"
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


def streamed_tool_loop(client: AgentClient) -> list[str | None]:
    thread = client.thread(tool_handlers={"confirm_choice": lambda question: "yes"})
    with thread.stream_until_done("hi", max_steps=4, headers={"X-Tenant": "a"}) as loop:
        text = "".join(loop.text_stream)
        final: RunResult = loop.get_final_result()
    runs: tuple[RunResult, ...] = loop.results
    return [text, final.outcome, *(r.outcome for r in runs)]


async def async_streamed_tool_loop(client: AsyncAgentClient) -> str | None:
    thread = client.thread(tool_handlers={"confirm_choice": lambda question: "yes"})
    async with thread.stream_until_done("hi") as loop:
        async for event in loop:
            if isinstance(event, RunFinishedEvent):
                break
    return loop.result.outcome


def shown_safely(client: AgentClient) -> str:
    thread = client.thread()
    deltas = InertDeltas()
    with thread.stream("hi") as stream:
        pieces: list[str] = [deltas.feed(text) for text in stream.text_stream]
    names = [inert_name(i.id, limit=NAME_CHARS // 2) for i in stream.result.interrupts]
    return "".join(pieces) + deltas.end() + inert_text(stream.result.text) + ", ".join(names)


class DictStore:
    """A user's own store, written for the protocol without record ids: it still type-checks as one."""

    def __init__(self) -> None:
        self.records: dict[str, StoredThread] = {}

    def load(self, thread_id: str) -> StoredThread | None:
        return self.records.get(thread_id)

    def save(self, thread_id: str, data: Mapping[str, Any], *, expected_version: int | None) -> int:
        version = (expected_version or 0) + 1
        self.records[thread_id] = StoredThread(thread_id=thread_id, version=version, data=dict(data), claim=None,
                                               format=STORE_FORMAT_VERSION)
        return version

    def claim(self, thread_id: str, *, expected_version: int | None, owner: str,
              data: Mapping[str, Any] | None = None) -> int:
        return 0 if expected_version is None else expected_version + 1

    def release(self, thread_id: str, *, claimed_version: int, owner: str) -> int:
        return claimed_version + 1

    def delete(self, thread_id: str) -> None:
        self.records.pop(thread_id, None)

    def close(self) -> None:
        self.records.clear()


def own_store(url: str) -> AgentClient:
    store: ThreadStore = DictStore()
    return AgentClient(url, store=store)
