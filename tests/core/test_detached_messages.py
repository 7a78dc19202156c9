"""A snapshot's messages detached from the event that brought them (``detached``), and the slot-filling
``replacer`` that builds each copy.

The thread folds copies of the dicts inside a ``MESSAGES_SNAPSHOT``'s messages, so that the event handed
out stays its holder's: no container of one is a container of the other. The dicts of all the messages
are copied together and each message holding one is built again; what holds none is shared as it is.
"""

from __future__ import annotations

import datetime
import math
from typing import Any

import attrs
import pytest

from agui_client import RunSession
from agui_client.core.fold.snapshots import detached
from agui_client.types import events as ev
from agui_client.types import messages as msg
from agui_client.wire import codec
from agui_client.wire.values import PlainDict


def _containers(value: Any) -> list[Any]:
    """Every dict, list and tuple reachable from ``value`` (a message's fields, parts and calls included)."""
    found: list[Any] = []
    stack = [value]
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        if attrs.has(type(node)):
            seen.add(id(node))
            stack += [getattr(node, a.name) for a in attrs.fields(type(node))]
        elif type(node) in (dict, list, tuple, PlainDict):
            seen.add(id(node))
            found.append(node)
            stack += list(node.values() if isinstance(node, dict) else node)
    return found


def _mutable_ids(messages: Any) -> set[int]:
    return {id(c) for c in _containers(messages) if type(c) is not tuple}


def _every_kind() -> list[msg.Message]:
    return [
        msg.UserMessage(id="u1", content=(msg.TextPart(text="plan", metadata={"lang": ["en"]}),
                                          msg.TextPart(text="it")),
                        name="ann", metadata={"source": {"app": "web"}}, subagent_run_id="s1"),
        msg.AssistantMessage(id="a1", content="calling", name="bot", encrypted_value="enc",
                             tool_calls=(msg.ToolCall(id="c1", function=msg.FunctionCall(name="plan", arguments="{}"),
                                                      metadata={"cost": [1]}),
                                         msg.ToolCall(id="c2", function=msg.FunctionCall(name="go"))),
                             metadata={"model": "m"}),
        msg.ToolMessage(id="t1", tool_call_id="c1", content="done", error="none", metadata={"ms": 3}),
        msg.ActivityMessage(id="p1", activity_type="plan", content={"steps": [{"n": 1}]}, metadata={"v": 2}),
        msg.DeveloperMessage(id="d1", content="be brief", metadata={"k": []}),
        msg.SystemMessage(id="s1", content="system"),
        msg.ReasoningMessage(id="r1", content="think", metadata={"t": None}),
        msg.AssistantMessage(id="a2", content="no dicts here"),
    ]


def test_the_copies_share_no_container_with_the_event_and_equal_it() -> None:
    given = _every_kind()
    copies = detached(given)

    assert list(copies) == given
    assert [type(m) for m in copies] == [type(m) for m in given]
    assert _mutable_ids(copies).isdisjoint(_mutable_ids(given))


def test_what_holds_no_dict_is_shared_as_it_is() -> None:
    given = _every_kind()
    copies = detached(given)

    system, plain_assistant = given[5], given[7]
    assert copies[5] is system and copies[7] is plain_assistant
    user, assistant = copies[0], copies[1]
    assert user is not given[0]
    assert user.content[1] is given[0].content[1]  # (a part without metadata)
    assert assistant.tool_calls[1] is given[1].tool_calls[1]  # (a call without metadata)
    assert assistant.tool_calls[0].function is given[1].tool_calls[0].function
    assert (user.id, user.name, user.subagent_run_id) == ("u1", "ann", "s1")
    nothing = [system, plain_assistant]
    assert detached(nothing) is nothing


def test_changing_the_event_after_changes_no_copy_and_the_other_way_round() -> None:
    given = _every_kind()
    copies = detached(given)

    given[0].metadata["source"]["app"] = "spoiled"
    given[0].content[0].metadata["lang"].append("spoiled")
    given[1].tool_calls[0].metadata["cost"].append("spoiled")
    given[3].content["steps"][0]["n"] = "spoiled"
    assert copies == _every_kind()

    copies[2].metadata["ms"] = "spoiled"
    copies[3].content["steps"].clear()
    assert given[2].metadata == {"ms": 3} and given[3].content["steps"] == [{"n": "spoiled"}]


def test_values_come_over_exactly_as_they_were() -> None:
    values = {"nan": math.nan, "big": 2 ** 70, "pair": (1, [2]), "float": 1.0, "flag": True,
              "half": "a\ud800b", "deep": [[[{"x": [1]}]]]}
    [copy] = detached([msg.UserMessage(id="u1", content="hi", metadata=values)])

    held = copy.metadata
    assert math.isnan(held["nan"]) and held["big"] == 2 ** 70 and held["half"] == "a\ud800b"
    assert [type(held[k]) for k in ("float", "flag", "pair")] == [float, bool, tuple]
    assert held["pair"] == (1, [2]) and held["pair"][1] is not values["pair"][1]
    assert held["deep"] == values["deep"] and held["deep"][0][0][0] is not values["deep"][0][0][0]


def test_what_marshal_cannot_write_is_copied_one_message_at_a_time() -> None:
    when = datetime.datetime(2026, 1, 2, tzinfo=datetime.timezone.utc)
    marked = PlainDict({"rows": [1]})
    given = [msg.UserMessage(id="u1", content="hi", metadata={"when": when, "tags": ["a"]}),
             msg.UserMessage(id="u2", content="ho", metadata={"marked": marked}),
             msg.UserMessage(id="u3", content="plain", metadata={"k": [1]})]
    copies = detached(given)

    assert [m.metadata for m in copies] == [m.metadata for m in given]
    assert copies[0].metadata["when"] == when
    assert type(copies[1].metadata["marked"]) is dict  # (as any JSON an event brought is copied)
    assert _mutable_ids(copies).isdisjoint(_mutable_ids(given))


def test_a_dict_two_messages_hold_and_a_dict_inside_itself_are_copied() -> None:
    shared = {"tags": ["a"]}
    looped: dict[str, Any] = {"n": 1}
    looped["self"] = looped
    given = [msg.UserMessage(id="u1", content="a", metadata=shared),
             msg.UserMessage(id="u2", content="b", metadata=shared),
             msg.UserMessage(id="u3", content="c", metadata=looped)]
    copies = detached(given)

    shared["tags"].append("spoiled")
    assert [m.metadata for m in copies[:2]] == [{"tags": ["a"]}] * 2
    # (as copy.deepcopy of the messages would: the copies share among themselves what the messages shared,
    # and none of it with the caller's)
    assert copies[0].metadata is copies[1].metadata is not shared
    held = copies[2].metadata
    assert held is not looped and held["self"] is held and held["n"] == 1


def test_an_event_built_in_python_is_folded_apart_from_the_thread() -> None:
    # The session's typed path (feed_event): an application's event, never parsed; its messages' dicts
    # stay the application's, and the thread's own change nothing the application holds.
    messages = tuple(_every_kind())
    session = RunSession()
    session.feed_event(ev.RunStartedEvent(thread_id="t", run_id="r1"))
    session.feed_event(ev.MessagesSnapshotEvent(messages=messages))

    held = session.state.messages
    assert held == messages
    assert _mutable_ids(held).isdisjoint(_mutable_ids(messages))


@pytest.mark.parametrize("cls", [msg.UserMessage, msg.AssistantMessage, msg.ToolMessage, msg.ActivityMessage,
                                 msg.DeveloperMessage, msg.SystemMessage, msg.ReasoningMessage, msg.ToolCall,
                                 msg.TextPart, msg.ImagePart])
def test_a_replacer_makes_what_evolve_makes(cls: type) -> None:
    [made] = [m for m in [*_every_kind(), msg.ToolCall(id="c", function=msg.FunctionCall(name="f"), metadata={"a": 1}),
                          msg.TextPart(text="t", id="p", metadata={"a": 1}),
                          msg.ImagePart(source=msg.UrlSource(value="https://example.test/i.png"), metadata={"a": 1})]
              if type(m) is cls][:1]
    names = tuple(a.name for a in attrs.fields(cls) if a.name in ("metadata", "content", "tool_calls", "id"))
    values = [f"new-{name}" if name == "id" else getattr(made, name) for name in names]
    values[names.index("metadata")] = {"replaced": True}

    replaced = codec.replacer(cls, names)(made, *values)
    assert type(replaced) is cls
    assert replaced == attrs.evolve(made, **dict(zip(names, values, strict=True)))
    assert replaced.metadata is values[names.index("metadata")]
    assert codec.replacer(cls, names) is codec.replacer(cls, names)  # (compiled once)


def test_a_replacer_names_a_field_the_class_lacks() -> None:
    with pytest.raises(ValueError) as raised:
        codec.replacer(msg.SystemMessage, ("metadata", "tool_calls"))
    assert str(raised.value) == "SystemMessage has no field 'tool_calls'"


def test_a_class_with_a_validator_is_replaced_through_its_init() -> None:
    @attrs.frozen
    class Checked:
        name: str = attrs.field(validator=attrs.validators.instance_of(str))
        size: int = 0

    replace = codec.replacer(Checked, ("name",))
    assert replace(Checked(name="a", size=3), "b") == Checked(name="b", size=3)
    with pytest.raises(TypeError):
        replace(Checked(name="a"), 7)
