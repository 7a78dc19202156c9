"""Interop with the official ``ag-ui-protocol`` pydantic models (``ag_ui.core``): the ``ag-ui`` extra.

:func:`to_ag_ui` turns any agui_client wire object (an event, a message, ``RunAgentInput``, ``Interrupt``,
``ResumeEntry``, and what they contain: tool calls, content parts and their sources, outcomes, token usage,
tools, context; and ``AgentCapabilities`` with its parts) into the ``ag_ui.core`` model of the same name;
:func:`from_ag_ui` turns such a model back.

Both go through the wire JSON, the one form the two sides agree on by definition: ``to_ag_ui`` validates
:func:`~agui_client.wire.codec.encode`'s output with the model, ``from_ag_ui`` decodes the model's
``model_dump(mode="json", by_alias=True)`` with the client's own decoder, so a model is read exactly as the
same event on a stream would be (the same checks, errors and warnings). The two are inverse for every
field both sides model; ``docs/ag-ui-interop.md`` has the table of where one side keeps more (a model's
unknown fields, the client's :class:`~agui_client.types.UnknownEvent`).

``ag_ui`` is imported on the first call, never by ``import agui_client``: the core works without the
extra, and a call without it raises an ``ImportError`` naming ``agui-client[ag-ui]``.

Example::

    from ag_ui.encoder import EventEncoder
    from agui_client import TextMessageContentEvent
    from agui_client.ag_ui import from_ag_ui, to_ag_ui

    event = TextMessageContentEvent(message_id="m1", delta="Hello")
    model = to_ag_ui(event)              # ag_ui.core.TextMessageContentEvent
    EventEncoder().encode(model)         # 'data: {"type":"TEXT_MESSAGE_CONTENT",...}\\n\\n'
    assert from_ag_ui(model) == event
"""

from __future__ import annotations

import functools
from types import ModuleType
from typing import TYPE_CHECKING, Any, overload

import attrs

from ._inert import quoted_name
from .errors import DecodeError
from .wire.codec import decode, encode
from .wire.types import capabilities as cap
from .wire.types import events as ev
from .wire.types import messages as msg
from .wire.types import run as rn

if TYPE_CHECKING:
    from ag_ui.core import BaseEvent
    from pydantic import BaseModel

__all__ = ["to_ag_ui", "from_ag_ui"]

#: Every wire class that has an ``ag_ui.core`` model; the model has the same class name.
_CLASSES: tuple[type, ...] = tuple(
    cls for module in (ev, msg, rn, cap) for name in module.__all__
    if isinstance(cls := getattr(module, name), type) and attrs.has(cls) and cls is not ev.UnknownEvent
)
_BY_NAME: dict[str, type] = {cls.__name__: cls for cls in _CLASSES}


def _official() -> ModuleType:
    try:
        import ag_ui.core
    except ImportError as exc:  # (the extra is optional: say which one brings it)
        raise ImportError("agui_client.ag_ui needs the ag-ui-protocol package: "
                          "pip install 'agui-client[ag-ui]'") from exc
    module: ModuleType = ag_ui.core
    return module


@functools.cache
def _model_for(mro: tuple[type, ...]) -> Any:
    """The ``ag_ui.core`` model for a wire class (or a subclass of one, by its ``__mro__``), or ``None``."""
    official = _official()
    for base in mro:
        if _BY_NAME.get(base.__name__) is base:
            return getattr(official, base.__name__)
    return None


@functools.cache
def _wire_for(mro: tuple[type, ...]) -> type | None:
    """The wire class for an ``ag_ui.core`` model class (or a subclass of one, by its ``__mro__``), or ``None``."""
    official = _official()
    for base in mro:
        cls = _BY_NAME.get(base.__name__)
        if cls is not None and getattr(official, base.__name__, None) is base:
            return cls
    return None


@overload
def to_ag_ui(obj: ev.Event) -> BaseEvent: ...


@overload
def to_ag_ui(obj: object) -> BaseModel: ...


def to_ag_ui(obj: object) -> BaseModel:
    """The ``ag_ui.core`` model equal to ``obj``, an agui_client wire object.

    ``obj`` is any event but :class:`~agui_client.types.UnknownEvent` (``ag_ui.core`` has no model for a
    type it does not define), any message, ``RunAgentInput``, ``Interrupt``, ``ResumeEntry``, or a part of
    one (``ToolCall``, ``FunctionCall``, a content part or source, an outcome, ``TokenUsage``, ``Tool``,
    ``Context``), or ``AgentCapabilities`` and its parts. ``from_ag_ui(to_ag_ui(obj)) == obj`` for every
    such object the official models accept (``docs/ag-ui-interop.md``: all but a JSON Patch operation
    AG-UI does not define, which the client keeps and the models refuse).

    Raises:
        ValueError: ``obj`` is an ``UnknownEvent``, or the model refuses a value built in Python that the
            wire would not carry either (a ``pydantic.ValidationError``, which is a ``ValueError``).
        TypeError: ``obj`` is not an agui_client wire object.
        ImportError: the ``ag-ui`` extra is not installed.

    Example::

        from agui_client import Interrupt

        model = to_ag_ui(Interrupt(id="i1", reason="approval", tool_call_id="c1"))
        assert type(model).__module__.startswith("ag_ui") and model.tool_call_id == "c1"
    """
    if isinstance(obj, ev.UnknownEvent):
        raise ValueError(f"an UnknownEvent ({quoted_name(obj.type)}) has no ag_ui.core model: ag_ui.core defines only "
                         "the AG-UI 1.0 event types (forward obj.raw as JSON instead)")
    model = _model_for(obj.__class__.__mro__)
    if model is None:
        raise TypeError(f"to_ag_ui takes an agui_client wire object (an event, a message, RunAgentInput, "
                        f"Interrupt, ResumeEntry …), not {type(obj).__name__}")
    converted: BaseModel = model.model_validate(encode(obj))
    return converted


def from_ag_ui(model: BaseModel) -> Any:
    """The agui_client wire object equal to ``model``, an ``ag_ui.core`` model instance.

    The model's wire JSON is decoded as the client decodes a stream: its unknown fields (pydantic keeps
    them) are left out with a ``UK-03`` warning, and what the client refuses on the wire it refuses here
    with a :class:`~agui_client.DecodeError` naming the field. ``to_ag_ui(from_ag_ui(m))`` equals ``m``
    but for those unknown fields.

    Raises:
        DecodeError: the model holds a value the client's decoder refuses, or one pydantic cannot write
            as JSON (nested deeper than its writer goes, about 250 levels); ``pointer`` names it.
        TypeError: ``model`` is not an ``ag_ui.core`` model the client has a type for.
        ImportError: the ``ag-ui`` extra is not installed.

    Example::

        from ag_ui.core import ToolCallStartEvent
        from agui_client import ToolCallStartEvent as Start

        event = from_ag_ui(ToolCallStartEvent(tool_call_id="c1", tool_call_name="search"))
        assert event == Start(tool_call_id="c1", tool_call_name="search")
    """
    cls = _wire_for(model.__class__.__mro__)
    if cls is None:
        raise TypeError(f"from_ag_ui takes an ag_ui.core model (an event, a message, RunAgentInput, Interrupt, "
                        f"ResumeEntry …), not {type(model).__name__}")
    # mode="json": the models hold their enums as Enum members (EventType), the wire as strings.
    try:
        wire = model.model_dump(mode="json", by_alias=True)
    except ValueError as exc:  # (pydantic's PydanticSerializationError is one)
        raise _unwritable(model, exc) from None
    return decode(wire, cls)


def _unwritable(model: BaseModel, exc: ValueError) -> DecodeError:
    """The error for a model pydantic cannot write as JSON, naming the first field it cannot write.

    pydantic validates what it cannot write back: a value nested deeper than its writer goes (about 250
    levels, where the client reads 512), or one of a type JSON has no form for (bytes that are not
    UTF-8). Its own error is a bare ``ValueError`` naming neither the field nor the model.
    """
    pointer = None
    for name, field in type(model).model_fields.items():
        try:
            model.model_dump(mode="json", include={name})
        except ValueError:
            pointer = "/" + (field.alias or name)
            break
    kind = type(model).__name__
    return DecodeError(f"the {kind} cannot be read: pydantic cannot write {'its ' + pointer[1:] if pointer else 'it'} "
                       f"as JSON ({exc})", pointer=pointer)
