"""RunVerifier._seed (the ids a snapshot or an input echo puts on record) against the ``match`` it replaced.

``_seed`` reads a :class:`~agui_client.core.roster.Roster` (gathered once, by role, for typed messages or
their JSON); it must file every message, tool call and owner exactly as the isinstance-based ``match`` did,
subclasses included, in the same dict order. (An input echo's roster keeps the first owner of a repeated id.)
"""

from __future__ import annotations

from typing import Any

from attrs import frozen
from hypothesis import given, settings
from hypothesis import strategies as st

from agui_client.core.roster import Roster
from agui_client.core.verify import _SEEDED, RunVerifier
from agui_client.types.events import RunStartedEvent
from agui_client.types.messages import (
    ActivityMessage,
    AssistantMessage,
    FunctionCall,
    Message,
    ReasoningMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)


@frozen(kw_only=True)
class LocalReasoning(ReasoningMessage):
    """An application's own subclass: still reasoning."""


@frozen(kw_only=True)
class LocalAssistant(AssistantMessage):
    """An application's own subclass: still an assistant, its tool calls seeded."""


def reference_seed(verifier: RunVerifier, messages: tuple[Message, ...], *, authoritative: bool) -> None:
    """The implementation ``_seed`` replaced, verbatim."""
    run = verifier._run
    for message in messages:
        match message:
            case ReasoningMessage():
                owners = run.reasoning_owner
            case ActivityMessage():
                owners = run.activity_owner
            case _:
                owners = run.message_owner
                verifier._message_run.setdefault(message.id, _SEEDED)
        if authoritative or message.id not in owners:
            owners[message.id] = message.subagent_run_id
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls or ():
                if authoritative or call.id not in run.tool_call_owner:
                    run.tool_call_owner[call.id] = message.subagent_run_id
                verifier._tool_call_run.setdefault(call.id, _SEEDED)


_ids = st.sampled_from(["a", "b", "c", "d"])
_owners = st.none() | st.sampled_from(["s1", "s2"])
_calls = st.none() | st.lists(st.builds(lambda i: ToolCall(id=i, function=FunctionCall(name="f")), _ids), max_size=3) \
    .map(tuple)
_messages = st.one_of(
    st.builds(lambda i, o: UserMessage(id=i, content="u", subagent_run_id=o), _ids, _owners),
    st.builds(lambda i, o, c: AssistantMessage(id=i, tool_calls=c, subagent_run_id=o), _ids, _owners, _calls),
    st.builds(lambda i, o, c: LocalAssistant(id=i, tool_calls=c, subagent_run_id=o), _ids, _owners, _calls),
    st.builds(lambda i, o: ReasoningMessage(id=i, content="r", subagent_run_id=o), _ids, _owners),
    st.builds(lambda i, o: LocalReasoning(id=i, content="r", subagent_run_id=o), _ids, _owners),
    st.builds(lambda i, o: ActivityMessage(id=i, activity_type="p", content={}, subagent_run_id=o), _ids, _owners),
    st.builds(lambda i, o: ToolMessage(id=i, tool_call_id="a", content="t", subagent_run_id=o), _ids, _owners),
)


def _running(before: list[tuple[str, str, Any]]) -> RunVerifier:
    verifier = RunVerifier()
    verifier.check(RunStartedEvent(thread_id="t", run_id="r"), 0)
    run = verifier._run
    for where, key, value in before:
        {"message": run.message_owner, "reasoning": run.reasoning_owner, "activity": run.activity_owner,
         "call": run.tool_call_owner, "message_run": verifier._message_run,
         "call_run": verifier._tool_call_run}[where][key] = value
    return verifier


def _record(verifier: RunVerifier) -> list[list[tuple[str, Any]]]:
    run = verifier._run
    return [list(d.items()) for d in (run.message_owner, run.reasoning_owner, run.activity_owner,
                                      run.tool_call_owner, verifier._message_run, verifier._tool_call_run)]


@settings(max_examples=300, deadline=None)
@given(
    batches=st.lists(st.tuples(st.lists(_messages, max_size=6).map(tuple), st.booleans()), min_size=1, max_size=3),
    before=st.lists(st.tuples(st.sampled_from(["message", "reasoning", "activity", "call", "message_run", "call_run"]),
                              _ids, st.one_of(_owners, st.integers(0, 2))), max_size=4),
)
def test_seed_files_every_message_as_the_match_did(batches: list[tuple[tuple[Message, ...], bool]],
                                                   before: list[tuple[str, str, Any]]) -> None:
    fast, slow = _running(before), _running(before)
    for messages, authoritative in batches:
        fast._seed(Roster.of(messages, first_wins=not authoritative), authoritative=authoritative)
        reference_seed(slow, messages, authoritative=authoritative)
        assert _record(fast) == _record(slow)


def test_a_subclass_is_filed_by_what_it_is() -> None:
    verifier = _running([])
    calls = (ToolCall(id="c1", function=FunctionCall(name="f")),)
    verifier._seed(Roster.of((LocalReasoning(id="r1", content="x", subagent_run_id="s1"),
                              LocalAssistant(id="a1", tool_calls=calls, subagent_run_id="s2"))), authoritative=True)
    run = verifier._run
    assert run.reasoning_owner == {"r1": "s1"} and "r1" not in verifier._message_run
    assert run.message_owner == {"a1": "s2"} and verifier._message_run == {"a1": _SEEDED}
    assert run.tool_call_owner == {"c1": "s2"} and verifier._tool_call_run == {"c1": _SEEDED}
