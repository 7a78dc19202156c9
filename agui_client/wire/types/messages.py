"""Messages and their content parts (AG-UI 1.0 ``Message`` union, discriminated by ``role``).

Each may hold an agent's text of any size (a message, a tool call's arguments, a part's base64 data), so
its ``repr`` is the bounded one of :func:`~agui_client.wire.types.base.brief_repr` (attrs' own printed it
all); equality, hashing and the fields stay attrs'.
"""

from __future__ import annotations

from typing import ClassVar, Literal, Union

from attrs import field, frozen

from .base import JSON, Metadata, brief_repr

__all__ = [
    "DataSource",
    "UrlSource",
    "FileSource",
    "PartSource",
    "TextPart",
    "ImagePart",
    "AudioPart",
    "VideoPart",
    "DocumentPart",
    "ContentPart",
    "FunctionCall",
    "ToolCall",
    "DeveloperMessage",
    "SystemMessage",
    "AssistantMessage",
    "UserMessage",
    "ToolMessage",
    "ActivityMessage",
    "ReasoningMessage",
    "Message",
    "TextMessageRole",
    "Role",
]

TextMessageRole = Literal["developer", "system", "assistant", "user"]
Role = Literal["developer", "system", "assistant", "user", "tool", "activity", "reasoning"]


@frozen(kw_only=True)
class DataSource:
    """Inline content: base64 ``value`` with its ``mime_type``."""

    __repr__ = brief_repr

    TYPE: ClassVar[str] = "data"
    value: str
    mime_type: str


@frozen(kw_only=True)
class UrlSource:
    """Content reachable at a URL."""

    __repr__ = brief_repr

    TYPE: ClassVar[str] = "url"
    value: str
    mime_type: str | None = None


@frozen(kw_only=True)
class FileSource:
    """An opaque provider file handle: never fetched, parsed or read for a scheme (UK-17)."""

    __repr__ = brief_repr

    TYPE: ClassVar[str] = "file"
    value: str
    provider: str | None = None
    mime_type: str | None = None


PartSource = Union[DataSource, UrlSource, FileSource]


@frozen(kw_only=True)
class TextPart:
    """A text content part."""

    __repr__ = brief_repr

    TYPE: ClassVar[str] = "text"
    text: str
    id: str | None = None
    metadata: JSON = None


@frozen(kw_only=True)
class ImagePart:
    """An image content part."""

    __repr__ = brief_repr

    TYPE: ClassVar[str] = "image"
    source: PartSource
    id: str | None = None
    metadata: JSON = None


@frozen(kw_only=True)
class AudioPart:
    """An audio content part."""

    __repr__ = brief_repr

    TYPE: ClassVar[str] = "audio"
    source: PartSource
    id: str | None = None
    metadata: JSON = None


@frozen(kw_only=True)
class VideoPart:
    """A video content part."""

    __repr__ = brief_repr

    TYPE: ClassVar[str] = "video"
    source: PartSource
    id: str | None = None
    metadata: JSON = None


@frozen(kw_only=True)
class DocumentPart:
    """A document content part (PDF, text file …)."""

    __repr__ = brief_repr

    TYPE: ClassVar[str] = "document"
    source: PartSource
    id: str | None = None
    metadata: JSON = None


ContentPart = Union[TextPart, ImagePart, AudioPart, VideoPart, DocumentPart]


@frozen(kw_only=True)
class FunctionCall:
    """The function a tool call invokes; ``arguments`` is the raw string as streamed (TC-06)."""

    __repr__ = brief_repr

    name: str
    arguments: str = ""


@frozen(kw_only=True)
class ToolCall:
    """A tool call held by an assistant message."""

    __repr__ = brief_repr

    TYPE: ClassVar[str] = "function"
    id: str
    function: FunctionCall
    encrypted_value: str | None = field(default=None, repr=False)
    metadata: Metadata | None = None


@frozen(kw_only=True)
class DeveloperMessage:
    """A developer instruction."""

    __repr__ = brief_repr

    ROLE: ClassVar[str] = "developer"
    id: str
    content: str
    name: str | None = None
    encrypted_value: str | None = field(default=None, repr=False)
    metadata: Metadata | None = None
    subagent_run_id: str | None = None


@frozen(kw_only=True)
class SystemMessage:
    """A system prompt."""

    __repr__ = brief_repr

    ROLE: ClassVar[str] = "system"
    id: str
    content: str
    name: str | None = None
    encrypted_value: str | None = field(default=None, repr=False)
    metadata: Metadata | None = None
    subagent_run_id: str | None = None


@frozen(kw_only=True)
class AssistantMessage:
    """An assistant turn: text, tool calls, or both."""

    __repr__ = brief_repr

    ROLE: ClassVar[str] = "assistant"
    id: str
    content: str | None = None
    tool_calls: tuple[ToolCall, ...] | None = None
    name: str | None = None
    encrypted_value: str | None = field(default=None, repr=False)
    metadata: Metadata | None = None
    subagent_run_id: str | None = None


@frozen(kw_only=True)
class UserMessage:
    """A user turn: a string or a list of content parts."""

    __repr__ = brief_repr

    ROLE: ClassVar[str] = "user"
    id: str
    content: str | tuple[ContentPart, ...]
    name: str | None = None
    encrypted_value: str | None = field(default=None, repr=False)
    metadata: Metadata | None = None
    subagent_run_id: str | None = None


@frozen(kw_only=True)
class ToolMessage:
    """The result of a tool call."""

    __repr__ = brief_repr

    ROLE: ClassVar[str] = "tool"
    id: str
    tool_call_id: str
    content: str | tuple[ContentPart, ...]
    error: str | None = None
    encrypted_value: str | None = field(default=None, repr=False)
    metadata: Metadata | None = None
    subagent_run_id: str | None = None


@frozen(kw_only=True)
class ActivityMessage:
    """Producer-owned display state (never sent back to the agent, AC-06)."""

    __repr__ = brief_repr

    ROLE: ClassVar[str] = "activity"
    id: str
    activity_type: str
    content: dict[str, JSON]
    metadata: Metadata | None = None
    subagent_run_id: str | None = None


@frozen(kw_only=True)
class ReasoningMessage:
    """Reasoning the agent showed (or an encrypted handle to it)."""

    __repr__ = brief_repr

    ROLE: ClassVar[str] = "reasoning"
    id: str
    content: str
    encrypted_value: str | None = field(default=None, repr=False)
    metadata: Metadata | None = None
    subagent_run_id: str | None = None


Message = Union[
    DeveloperMessage,
    SystemMessage,
    AssistantMessage,
    UserMessage,
    ToolMessage,
    ActivityMessage,
    ReasoningMessage,
]
