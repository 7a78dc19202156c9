"""Run input, outcomes, interrupts, resume entries and token usage.

The records that may hold words or JSON of any size (an interrupt's message and schema, a tool's
parameters, an answer's payload, a run's whole input) have the bounded ``repr`` of
:func:`~agui_client.wire.types.base.brief_repr`, as the messages do; token usage, a few numbers, keeps
attrs'.
"""

from __future__ import annotations

from typing import ClassVar, Literal, Union

from attrs import frozen

from .base import JSON, Metadata, brief_repr
from .messages import Message

__all__ = [
    "Tool",
    "Context",
    "ResumeEntry",
    "ResumeStatus",
    "RunAgentInput",
    "Interrupt",
    "RunFinishedSuccessOutcome",
    "RunFinishedInterruptOutcome",
    "RunFinishedCancelledOutcome",
    "RunFinishedOutcome",
    "SubagentFinishedSuccessOutcome",
    "SubagentFinishedSuspendedOutcome",
    "SubagentFinishedOutcome",
    "TokenUsage",
    "PROTOCOL_VERSION",
]

#: The AG-UI version this client speaks, declared in every input (PV-01, PV-06).
PROTOCOL_VERSION = "1.0"

ResumeStatus = Literal["resolved", "cancelled"]


@frozen(kw_only=True)
class Tool:
    """A tool the consumer offers the agent (a frontend tool)."""

    __repr__ = brief_repr

    name: str
    description: str
    parameters: JSON = None
    metadata: Metadata | None = None


@frozen(kw_only=True)
class Context:
    """A piece of context handed to the agent."""

    __repr__ = brief_repr

    description: str
    value: str


@frozen(kw_only=True)
class ResumeEntry:
    """Answers (``resolved``) or abandons (``cancelled``) one interrupt of the run being continued.

    An abandoning entry answers nothing: a thread sends one given a payload without it, with an
    ``IR-11`` warning naming the interrupt.
    """

    __repr__ = brief_repr

    interrupt_id: str
    status: ResumeStatus
    payload: JSON = None
    metadata: Metadata | None = None


@frozen(kw_only=True)
class RunAgentInput:
    """What the consumer POSTs to start (or continue) a run."""

    __repr__ = brief_repr

    thread_id: str
    run_id: str
    messages: tuple[Message, ...] = ()
    state: JSON = None
    tools: tuple[Tool, ...] | None = None
    context: tuple[Context, ...] | None = None
    forwarded_props: JSON = None
    resume: tuple[ResumeEntry, ...] | None = None
    protocol_version: str | None = None
    parent_run_id: str | None = None


@frozen(kw_only=True)
class Interrupt:
    """Something a run stopped to ask for; answered by a ``ResumeEntry`` naming its ``id``."""

    __repr__ = brief_repr

    id: str
    reason: str
    message: str | None = None
    tool_call_id: str | None = None
    response_schema: dict[str, JSON] | None = None
    expires_at: str | None = None
    metadata: Metadata | None = None
    subagent_run_id: str | None = None


@frozen(kw_only=True)
class RunFinishedSuccessOutcome:
    """The run did what it was asked; ``pending_tool_call_ids`` names frontend calls left to answer."""

    TYPE: ClassVar[str] = "success"
    pending_tool_call_ids: tuple[str, ...] | None = None


@frozen(kw_only=True)
class RunFinishedInterruptOutcome:
    """The run stopped to ask: at least one interrupt to answer or abandon."""

    __repr__ = brief_repr

    TYPE: ClassVar[str] = "interrupt"
    interrupts: tuple[Interrupt, ...]


@frozen(kw_only=True)
class RunFinishedCancelledOutcome:
    """The run was stopped by whoever ran it; it asks for nothing."""

    TYPE: ClassVar[str] = "cancelled"


RunFinishedOutcome = Union[RunFinishedSuccessOutcome, RunFinishedInterruptOutcome, RunFinishedCancelledOutcome]


@frozen(kw_only=True)
class SubagentFinishedSuccessOutcome:
    """The subagent completed."""

    TYPE: ClassVar[str] = "success"


@frozen(kw_only=True)
class SubagentFinishedSuspendedOutcome:
    """The subagent paused for outside input; ``interrupt_ids`` are the run-level interrupts it raised."""

    TYPE: ClassVar[str] = "suspended"
    interrupt_ids: tuple[str, ...] | None = None


SubagentFinishedOutcome = Union[SubagentFinishedSuccessOutcome, SubagentFinishedSuspendedOutcome]


@frozen(kw_only=True)
class TokenUsage:
    """Token counts for one provider+model. Absent means "not reported", not zero (TU-05)."""

    provider: str | None = None
    model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    reasoning_tokens: int | None = None
    cached_input_tokens: int | None = None
    cache_write_input_tokens: int | None = None
