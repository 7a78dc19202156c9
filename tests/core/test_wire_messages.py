"""``codec.encode_messages``: the wire form of messages built directly, equal to ``codec.encode``'s."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from corpus import ALL_MESSAGES

from agui_client.core.fold import ThreadState
from agui_client.errors import StoreError
from agui_client.stores import MemoryStore
from agui_client.types import messages as msg
from agui_client.wire import codec, jsonio
from agui_client.wire.codec import encode_messages
from agui_client.wire.values import PlainList, plain_json

__all__: list[str] = []


def _corpus() -> list[msg.Message]:
    return [codec.decode(copy.deepcopy(m), msg.Message) for m in ALL_MESSAGES]


def test_every_corpus_message_encodes_as_the_converter_encodes_it() -> None:
    messages = _corpus()

    built = encode_messages(messages, checked=True)

    assert built == codec.encode(tuple(messages))
    assert built == ALL_MESSAGES  # every field of every role, parts and sources included
    # Key order too (the role first), so the stored text is what the converter's would be.
    assert [list(m) for m in built] == [list(m) for m in codec.encode(tuple(messages))]
    assert type(built) is PlainList


def test_checked_is_only_claimed_on_request() -> None:
    assert type(encode_messages(_corpus())) is list


class _Name(str):
    pass


@pytest.mark.parametrize("message", [
    msg.UserMessage(id="u", content="x", metadata={"score": float("nan")}),
    msg.AssistantMessage(id="a", content=_Name("subclass")),
    msg.AssistantMessage(id="a", name=float("nan")),  # type: ignore[arg-type]  # attrs does not check types
    msg.ActivityMessage(id="a", activity_type="plan", content={"p": float("inf")}),
    msg.AssistantMessage(id="a", tool_calls=(msg.ToolCall(id="c", function=msg.FunctionCall(name="f"),
                                                          metadata={"x": -float("inf")}),)),
    msg.UserMessage(id="u", content=(msg.TextPart(text="t", metadata={"d": float("nan")}),)),
])
def test_a_message_that_is_not_plain_json_leaves_the_list_unchecked_but_encoded_alike(message: Any) -> None:
    messages = [msg.UserMessage(id="first", content="fine"), message]

    built = encode_messages(messages, checked=True)

    assert type(built) is list
    assert repr(built) == repr(codec.encode(tuple(messages)))  # repr: NaN != NaN


def test_a_message_subclass_goes_through_the_converter() -> None:
    class Custom(msg.UserMessage):
        pass

    messages = [Custom(id="u", content="x")]

    assert encode_messages(messages, checked=True) == codec.encode(tuple(messages))
    assert type(encode_messages(messages, checked=True)) is list


def test_a_save_still_refuses_nan_inside_a_messages_metadata() -> None:
    # The messages of dump(share_state=True) are not walked again by the store: the check made while
    # building them is what refuses this.
    thread = ThreadState(messages=[msg.UserMessage(id="u", content="x", metadata={"n": float("nan")})])

    with MemoryStore() as store, pytest.raises(StoreError):
        store.save("t", thread.dump(share_state=True), expected_version=None)


def test_plain_json_trusts_a_plain_list() -> None:
    assert plain_json({"messages": PlainList([{"a": 1}])})
    assert not plain_json({"messages": [{"a": float("nan")}]})


def test_a_request_body_is_the_converters_encoding_of_the_run_input() -> None:
    from agui_client.core.exchange import request_body as _request_body
    from agui_client.types.run import PROTOCOL_VERSION, RunAgentInput

    with_messages = RunAgentInput(thread_id="t", run_id="r", messages=tuple(_corpus()), state={"k": [1.5, None]},
                                  protocol_version=PROTOCOL_VERSION)
    without = RunAgentInput(thread_id="t", run_id="r", protocol_version=PROTOCOL_VERSION)

    for run_input in (with_messages, without):
        body = _request_body(run_input)
        assert body == jsonio.dump_json(codec.encode(run_input))
