"""``agui_client.wire.codec.constructor``: the slot-writing constructors the decoder and the fold use.

They must build exactly what the class's own ``__init__`` builds, and must not be used for a class
whose ``__init__`` does more than set its fields.
"""

from __future__ import annotations

from typing import Any

import attrs
import corpus
import pytest

from agui_client.types import capabilities as cap
from agui_client.types import events as ev
from agui_client.types import messages as msg
from agui_client.types import run as rn
from agui_client.wire import codec
from agui_client.wire.codec import constructor as builder


def _walk(value: Any) -> list[Any]:
    """Every attrs instance inside ``value``, itself included."""
    found: list[Any] = []
    stack = [value]
    while stack:
        node = stack.pop()
        if attrs.has(type(node)):
            found.append(node)
            stack.extend(getattr(node, a.name) for a in attrs.fields(type(node)))
        elif isinstance(node, (tuple, list)):
            stack.extend(node)
    return found


def _instances() -> list[Any]:
    out: list[Any] = []
    for _, wire in corpus.EVENTS:
        out.extend(_walk(codec.decode_event(wire)))
    for _, cls, wire in corpus.VALUES:
        out.extend(_walk(codec.decode(wire, cls)))
    return out


def test_a_built_object_equals_the_constructed_one_on_every_corpus_type() -> None:
    seen: set[type] = set()
    for obj in _instances():
        cls = type(obj)
        make = builder(cls)
        kwargs = {a.alias: getattr(obj, a.name) for a in attrs.fields(cls)}
        built, constructed = make(**kwargs), cls(**kwargs)
        assert type(built) is cls
        assert built == constructed
        assert attrs.asdict(built, recurse=False) == attrs.asdict(constructed, recurse=False)
        if make is not cls:
            seen.add(cls)
    # The decoder's and the fold's types really take the fast constructor.
    assert {ev.TextMessageContentEvent, ev.ToolCallStartEvent, msg.ToolMessage, msg.AssistantMessage,
            msg.ToolCall, msg.FunctionCall, rn.TokenUsage} <= seen


def test_defaults_are_the_classes_own() -> None:
    built = builder(msg.ToolMessage)(id="t1", tool_call_id="c1", content="ok")
    assert built == msg.ToolMessage(id="t1", tool_call_id="c1", content="ok")
    assert built.error is None and built.metadata is None
    with pytest.raises(TypeError):
        builder(msg.ToolMessage)(id="t1", content="ok")  # a required field is required
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        built.content = "changed"  # type: ignore[misc]


def test_classes_whose_init_does_more_keep_their_constructor() -> None:
    @attrs.frozen(kw_only=True)
    class Checked:
        n: int = attrs.field(validator=attrs.validators.instance_of(int))

    @attrs.frozen(kw_only=True)
    class WithFactory:
        items: list[int] = attrs.field(factory=list)

    @attrs.frozen(kw_only=True)
    class PostInit:
        n: int

        def __attrs_post_init__(self) -> None:
            raise ValueError("post-init ran")

    @attrs.define
    class Plain:
        n: int

    assert builder(Checked) is Checked
    assert builder(WithFactory) is WithFactory
    assert builder(PostInit) is PostInit
    assert builder(ev.UnknownEvent) is ev.UnknownEvent  # its raw payload defaults through a factory
    # A class of plain fields gets the slot-writing builder, with the class's own defaults.
    assert builder(cap.AgentCapabilities) is not cap.AgentCapabilities
    assert builder(cap.AgentCapabilities)() == cap.AgentCapabilities()
    assert builder(Plain) is not Plain
    assert builder(Plain)(n=1) == Plain(1)
