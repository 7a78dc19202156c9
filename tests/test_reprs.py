"""What a user's ``print``, a log line's ``%r`` and a test's failure show of an object: short.

A run's result, its interrupts, its messages, a stored record and an error may hold a megabyte an agent
sent (a message's text, a 50-field ``responseSchema``, a ``RUN_ERROR``'s words). Their ``repr`` is the
class, what identifies the object (the thread and run ids, the interrupt and call ids, the outcome) and
counts, with a cut preview at most: under :data:`BOUND` characters whatever they hold, and with what the
agent wrote escaped, never obeyed by the terminal. Equality and the fields are unchanged. Against a
ScriptedAgent on 127.0.0.1, through both shells.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import pytest

import agui_client as ag
from agui_client.stores import MemoryStore
from agui_client.testing import Finish, ScriptedAgent, Start

#: The most characters a repr of anything below may take.
BOUND = 300
#: A megabyte of the agent's text, opening with what a terminal would obey (a colour, a bidi override).
BIG = "\x1b[31mred\u202e " + "x" * 2**20
#: A response schema of fifty fields, each with a long description.
SCHEMA = {"type": "object", "properties": {f"field_{n}": {"type": "string", "description": "d" * 200}
                                           for n in range(50)}}


def _short(shown: str, *names: str) -> None:
    """``shown`` is bounded, names each of ``names`` and holds nothing a terminal obeys."""
    assert len(shown) < BOUND, shown[:2 * BOUND]
    for name in names:
        assert name in shown, (name, shown)
    assert "\x1b" not in shown and "\u202e" not in shown, shown


def _asking_agent() -> ScriptedAgent:
    asked = ag.Interrupt(id="ask-1", reason="approval", message=BIG, response_schema=SCHEMA)
    return ScriptedAgent([[Start(), ag.TextMessageStartEvent(message_id="m-big"),
                           ag.TextMessageContentEvent(message_id="m-big", delta=BIG),
                           ag.TextMessageEndEvent(message_id="m-big"),
                           Finish(outcome=ag.RunFinishedInterruptOutcome(interrupts=(asked,)))]])


def test_a_result_its_interrupt_and_its_messages_print_short(drive: Any, served: Callable[[Any], Any]) -> None:
    endpoint = served(_asking_agent())
    with drive.client(endpoint.url) as client:
        thread = client.thread("thread-1")
        result = thread.run(BIG, run_id="run-1")

    assert result.outcome == "interrupt" and result.interrupts[0].response_schema == SCHEMA
    _short(repr(result), "RunResult", "thread_id='thread-1'", "run_id='run-1'", "outcome='interrupt'",
           "interrupts=['ask-1']", "new_messages=1", f"events={result.events}")
    _short(repr(result.interrupts[0]), "<Interrupt id='ask-1' reason='approval' message=",
           f"({len(BIG)} chars)", "response_schema={2 keys}")
    sent, reply = thread.state.messages
    _short(repr(sent), "<UserMessage id=", f"({len(BIG)} chars)")
    _short(repr(reply), "<AssistantMessage id='m-big' content=", f"({len(BIG)} chars)")
    assert repr(reply).startswith("<AssistantMessage id='m-big' content='\\x1b[31mred\\u202e xxx")
    _short(repr(thread.state), "thread_id='thread-1'", "open_interrupts=['ask-1']")
    # (what the repr leaves out is all still there, and compared as before)
    assert reply.content == BIG and reply == attrs.evolve(reply)
    assert attrs.asdict(result.interrupts[0])["message"] == BIG


def test_a_failed_run_and_its_error_print_short(drive: Any, served: Callable[[Any], Any]) -> None:
    endpoint = served(ScriptedAgent([[Start(), ag.RunErrorEvent(message=BIG, code="E1")]]))
    with drive.client(endpoint.url) as client:
        with pytest.raises(ag.RunFailed) as caught:
            client.thread("thread-1").run("hi", run_id="run-1").raise_for_outcome()

    error = caught.value
    assert error.message == BIG and error.result is not None
    _short(repr(error), "RunFailed(\"run 'run-1' failed: \\\\x1b[31mred\\\\u202e xxx", "chars))")
    _short(repr(error.result), "run_id='run-1'", "outcome='error'", "error=<RunErrorInfo message=", "code='E1'")


def test_a_stored_record_prints_its_thread_and_version_not_its_data() -> None:
    state = ag.ThreadState(thread_id="thread-1", messages=[ag.UserMessage(id="u1", content=BIG)])
    store = MemoryStore()
    store.save("thread-1", state.dump(), expected_version=None)

    stored = store.load("thread-1")

    assert stored is not None and stored.data == state.dump()
    _short(repr(stored), "<StoredThread thread_id='thread-1' version=1 data=")


def test_records_built_by_hand_print_short_and_keep_their_equality() -> None:
    call = ag.ToolCall(id="call-1", function=ag.FunctionCall(name="search", arguments=BIG))
    entry = ag.ResumeEntry(interrupt_id="ask-1", status="resolved", payload={"note": BIG})
    run_input = ag.RunAgentInput(thread_id="thread-1", run_id="run-1", state={"doc": BIG},
                                 messages=tuple(ag.UserMessage(id=f"u{n}", content=BIG) for n in range(5)))

    _short(repr(call), "<ToolCall id='call-1' function=<FunctionCall name='search' arguments=")
    _short(repr(entry), "<ResumeEntry interrupt_id='ask-1' status='resolved' payload={1 key}>")
    _short(repr(run_input), "thread_id='thread-1' run_id='run-1' messages=['u0', 'u1', 'u2', ...] (2 more)")
    assert call == ag.ToolCall(id="call-1", function=ag.FunctionCall(name="search", arguments=BIG))
    assert call != attrs.evolve(call, id="call-2") and hash(call) == hash(attrs.evolve(call))


def test_an_id_too_long_to_show_is_cut_with_a_digest() -> None:
    # (ids are quoted whole as every message of the package quotes them, up to 100 characters; past that,
    # cut with a digest of the whole, so two long ids still read apart)
    first, second = (ag.UserMessage(id="m" * 10_000 + end, content="hi") for end in "ab")

    assert len(repr(first)) < BOUND and repr(first) != repr(second)
