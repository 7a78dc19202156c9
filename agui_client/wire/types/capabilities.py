"""Agent capability declarations (AG-UI 1.0 ``AgentCapabilities``)."""

from __future__ import annotations

from attrs import frozen

from .base import JSON, Metadata
from .run import Tool

__all__ = [
    "SubagentInfo",
    "IdentityCapabilities",
    "TransportCapabilities",
    "ToolsCapabilities",
    "OutputCapabilities",
    "StateCapabilities",
    "MultiAgentCapabilities",
    "ReasoningCapabilities",
    "MultimodalInputCapabilities",
    "MultimodalOutputCapabilities",
    "MultimodalCapabilities",
    "ExecutionCapabilities",
    "HumanInTheLoopCapabilities",
    "AgentCapabilities",
]


@frozen(kw_only=True)
class SubagentInfo:
    """A subagent the agent can delegate to."""

    name: str
    description: str | None = None


@frozen(kw_only=True)
class IdentityCapabilities:
    """Who the agent is."""

    name: str | None = None
    type: str | None = None
    description: str | None = None
    version: str | None = None
    provider: str | None = None
    documentation_url: str | None = None
    metadata: Metadata | None = None


@frozen(kw_only=True)
class TransportCapabilities:
    """How the agent streams."""

    streaming: bool | None = None
    websocket: bool | None = None
    http_binary: bool | None = None
    push_notifications: bool | None = None
    resumable: bool | None = None


@frozen(kw_only=True)
class ToolsCapabilities:
    """Tool support."""

    supported: bool | None = None
    items: tuple[Tool, ...] | None = None
    parallel_calls: bool | None = None
    client_provided: bool | None = None


@frozen(kw_only=True)
class OutputCapabilities:
    """Output formats."""

    structured_output: bool | None = None
    supported_mime_types: tuple[str, ...] | None = None


@frozen(kw_only=True)
class StateCapabilities:
    """Shared-state support."""

    snapshots: bool | None = None
    deltas: bool | None = None
    memory: bool | None = None
    persistent_state: bool | None = None


@frozen(kw_only=True)
class MultiAgentCapabilities:
    """Delegation and subagents."""

    supported: bool | None = None
    delegation: bool | None = None
    handoffs: bool | None = None
    subagents: tuple[SubagentInfo, ...] | None = None


@frozen(kw_only=True)
class ReasoningCapabilities:
    """Reasoning support."""

    supported: bool | None = None
    streaming: bool | None = None
    encrypted: bool | None = None


@frozen(kw_only=True)
class MultimodalInputCapabilities:
    """Accepted input media."""

    image: bool | None = None
    audio: bool | None = None
    video: bool | None = None
    pdf: bool | None = None
    file: bool | None = None


@frozen(kw_only=True)
class MultimodalOutputCapabilities:
    """Produced output media."""

    image: bool | None = None
    audio: bool | None = None


@frozen(kw_only=True)
class MultimodalCapabilities:
    """Multimodal input and output."""

    input: MultimodalInputCapabilities | None = None
    output: MultimodalOutputCapabilities | None = None


@frozen(kw_only=True)
class ExecutionCapabilities:
    """Code execution limits."""

    code_execution: bool | None = None
    sandboxed: bool | None = None
    max_iterations: int | None = None
    max_execution_time: int | None = None


@frozen(kw_only=True)
class HumanInTheLoopCapabilities:
    """Human-in-the-loop support; ``interrupts`` means the interrupt outcome and resume (IR-29)."""

    supported: bool | None = None
    approvals: bool | None = None
    interventions: bool | None = None
    feedback: bool | None = None
    interrupts: bool | None = None
    approve_with_edits: bool | None = None


@frozen(kw_only=True)
class AgentCapabilities:
    """What an agent declares it can do."""

    identity: IdentityCapabilities | None = None
    transport: TransportCapabilities | None = None
    tools: ToolsCapabilities | None = None
    output: OutputCapabilities | None = None
    state: StateCapabilities | None = None
    multi_agent: MultiAgentCapabilities | None = None
    reasoning: ReasoningCapabilities | None = None
    multimodal: MultimodalCapabilities | None = None
    execution: ExecutionCapabilities | None = None
    human_in_the_loop: HumanInTheLoopCapabilities | None = None
    custom: dict[str, JSON] | None = None
