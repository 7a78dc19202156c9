"""Ids the agent, a stored record or a recording chose are quoted by the package's one rule in messages.

An error, a warning or a log line that names an id, a name, a key or a type the other side chose shows it
with ``quoted_name`` (``repr``, what ``repr`` leaves invisible escaped, cut with a digest): a call id of a
megabyte made a message of a megabyte, and ``approve\\u3164`` read as ``approve``. Each case below is a
stream, a record or a run that makes one module say such a message: (a) with an id of 200,000 characters
the message is short and carries the digest marker; (b) with a Hangul filler, a variation selector and an
ESC in the id, the message shows their escapes.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import pytest

import agui_client as ag
from agui_client import replay
from agui_client.errors import AguiError, RunFailed
from agui_client.stores import MemoryStore
from agui_client.testing import Finish, Respond, ScriptedAgent, Start, tool_call
from agui_client.wire.records import load_record
from agui_client.wire.types.run import RunAgentInput

STARTED = {"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"}
FINISHED = {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1"}
#: An id far longer than any message should be.
LONG = "x" * 200_000
#: An id a reader would take for ``approve``, with an ESC a terminal would obey.
HIDDEN = "approve\u3164\ufe0f\x1b[2J"
#: How ``quoted_name`` writes HIDDEN's characters.
ESCAPES = ("\\u3164", "\\ufe0f", "\\x1b")
#: How a cut id ends: ``...#`` and the digest of the whole.
CUT = "...#"


def _said(events: Any, **options: Any) -> str:
    """The one message a recording makes: the error it raises, or its single warning."""
    try:
        result = replay(events, **options)
    except AguiError as exc:
        return str(exc)
    (warning,) = result.warnings
    return warning.message


def _sse(*events: str) -> str:
    return "".join(f"data: {event}\n\n" for event in events)


def _repeated_key(name: str) -> str:
    try:
        load_record('{"a": 1, ' + json.dumps(name) + ": 1, " + json.dumps(name) + ": 2}")
    except ValueError as exc:
        return str(exc)
    raise AssertionError("a record repeating a key was read")


def _missing_thread(name: str) -> str:
    try:
        MemoryStore().save(name, {}, expected_version=3)
    except (ag.ConcurrentResume, ag.StoreError) as exc:  # (not in the store; past 1,024 bytes, no store takes it)
        return str(exc)
    raise AssertionError("a thread not in the store was saved over")


CASES: dict[str, Callable[[str], str]] = {
    # core/id_rules.py: an error naming a message id opened twice
    "id_rules": lambda name: _said([STARTED, *[{"type": "TEXT_MESSAGE_START", "messageId": name,
                                                "role": "assistant"}] * 2, FINISHED]),
    # core/fold/streams.py: a tool result whose messageId names a user message
    "fold_streams": lambda name: _said([
        STARTED, {"type": "MESSAGES_SNAPSHOT", "messages": [{"id": name, "role": "user", "content": "a"}]},
        {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "a"},
        {"type": "TOOL_CALL_END", "toolCallId": "c1"},
        {"type": "TOOL_CALL_RESULT", "messageId": name, "toolCallId": "c1", "content": "a"}, FINISHED]),
    # core/fold/snapshots.py: a snapshot repeating a message id
    "fold_snapshots": lambda name: _said([STARTED, {"type": "MESSAGES_SNAPSHOT", "messages": [
        {"id": name, "role": "user", "content": "a"}, {"id": name, "role": "user", "content": "b"}]}, FINISHED]),
    # core/fold/entries.py: a lone UTF-16 half in a message's text, named by the message's id
    "fold_entries": lambda name: _said(_sse(
        json.dumps(STARTED), json.dumps({"type": "TEXT_MESSAGE_START", "messageId": name, "role": "assistant"}),
        '{"type": "TEXT_MESSAGE_CONTENT", "messageId": ' + json.dumps(name) + ', "delta": "a\\ud800"}',
        json.dumps({"type": "TEXT_MESSAGE_END", "messageId": name}), json.dumps(FINISHED))),
    # core/verify.py: RUN_FINISHED's runId differing from RUN_STARTED's
    "verify": lambda name: _said([STARTED, {**FINISHED, "runId": name}]),
    # core/session.py: RUN_STARTED's runId differing from the request's (LC-08)
    "session": lambda name: _said([{**STARTED, "runId": name}, {**FINISHED, "runId": name}],
                                  run_input=RunAgentInput(thread_id="t1", run_id="r1")),
    # core/patch.py: a state patch replacing a member the state lacks
    "patch": lambda name: _said([STARTED, {"type": "STATE_DELTA", "delta": [
        {"op": "replace", "path": "/" + name, "value": 1}]}, FINISHED]),
    # core/chunks.py: a continuation chunk naming another parent than its call's first chunk
    "chunks": lambda name: _said([
        STARTED, {"type": "TOOL_CALL_CHUNK", "toolCallId": "c1", "toolCallName": "a", "parentMessageId": "p1"},
        {"type": "TOOL_CALL_CHUNK", "toolCallId": "c1", "parentMessageId": name, "delta": "{}"}, FINISHED]),
    # wire/codec.py: an event type this client does not know
    "codec": lambda name: _said([STARTED, {"type": name}, FINISHED]),
    # wire/values.py: an unknown field of a known event, named by its key
    "values": lambda name: _said([{**STARTED, name: 1}, FINISHED]),
    # wire/policy.py: a patch operation's path that is no JSON pointer
    "policy": lambda name: _said([STARTED, {"type": "STATE_DELTA", "delta": [
        {"op": "replace", "path": name, "value": 1}]}, FINISHED]),
    # wire/sse.py: an SSE field of an unknown name
    "sse": lambda name: _said(_sse(json.dumps(STARTED)) + f"{name}: v\n\n" + _sse(json.dumps(FINISHED))),
    # wire/records.py: a stored record repeating a key
    "records": _repeated_key,
    # stores/base.py: a save naming a thread the store does not hold (an id from a listing)
    "stores": _missing_thread,
    # errors.py: the run failed, as a RUN_ERROR carrying the agent's run id and code said
    "errors": lambda name: str(RunFailed("it broke", run_id=name, code=name)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_long_id_makes_a_short_message_with_a_digest(case: str) -> None:
    said = CASES[case](LONG)

    assert len(said) < 1_000 and CUT in said, said[:300]


@pytest.mark.parametrize("case", sorted(CASES))
def test_characters_an_id_hides_are_shown_as_escapes(case: str) -> None:
    said = CASES[case](HIDDEN)

    assert all(escape in said for escape in ESCAPES), said
    assert "\x1b" not in said and "\u3164" not in said and "\ufe0f" not in said


def test_two_ids_that_differ_only_past_the_cut_read_differently() -> None:
    first, second = (CASES["verify"](LONG + end) for end in ("a", "b"))

    assert first != second and first.split(CUT)[0] == second.split(CUT)[0]


def _logged(caplog: pytest.LogCaptureFixture, words: str) -> list[str]:
    return [record.getMessage() for record in caplog.records if words in record.getMessage()]


@pytest.mark.parametrize("name", [LONG, HIDDEN], ids=["long", "hidden"])
def test_a_failed_tool_handlers_log_line_quotes_the_tool_and_the_call(
        drive: Any, served: Any, caplog: pytest.LogCaptureFixture, name: str) -> None:
    endpoint = served(ScriptedAgent([[Start(), *tool_call(name, name, {"q": 1}), Finish()],
                                     [Start(), Finish()]]))

    def lookup(q: int) -> str:
        raise RuntimeError("backend down")

    with caplog.at_level(logging.WARNING, logger="agui_client"), \
            drive.client(endpoint.url, telemetry=False) as client:
        client.thread(tool_handlers={name: lookup}).run_until_done("hi")

    (line,) = _logged(caplog, "tool handler")
    assert "backend down" in line
    if name is LONG:
        assert len(line) < 1_000 and line.count(CUT) == 2, line[:300]
    else:
        assert line.count("'approve\\u3164\\ufe0f\\x1b[2J'") == 2 and "\x1b" not in line, line


class _NoRelease(MemoryStore):
    """A store that cannot give a claim back: the failed run's release is logged as a warning."""

    def release(self, thread_id: str, *, claimed_version: int, owner: str) -> int:
        raise ag.StoreError("the store is down", thread_id=thread_id)


#: The longest thread id a store takes (MAX_THREAD_ID_BYTES): one it handed the application in a listing.
STORED_LONG = "t" * 1_000


@pytest.mark.parametrize("name", [STORED_LONG, HIDDEN], ids=["long", "hidden"])
def test_a_claim_left_held_is_logged_with_the_thread_id_quoted(
        drive: Any, served: Any, caplog: pytest.LogCaptureFixture, name: str) -> None:
    endpoint = served(ScriptedAgent([Respond(status=500, body="oops")]))

    with caplog.at_level(logging.WARNING, logger="agui_client"), \
            drive.client(endpoint.url, store=_NoRelease(), telemetry=False) as client, \
            pytest.raises(ag.HTTPStatusError):
        client.thread(name).run("hi")

    (line,) = _logged(caplog, "could not release its claim")
    assert "the store is down" in line
    if name is STORED_LONG:
        assert len(line) < 300 and line.count(CUT) == 1, line
    else:
        assert line.startswith("thread approve\\u3164\\ufe0f\\x1b[2J: could not release") and "\x1b" not in line


def test_a_claim_the_store_refused_is_logged_with_the_thread_id_quoted(
        drive: Any, served: Any, caplog: pytest.LogCaptureFixture) -> None:
    # (the store refuses an id of 200,000 characters when it is claimed; the warning that the claim may
    # be held names it, and so does the store's error it quotes)
    endpoint = served(ScriptedAgent([[Start(), Finish()]]))

    with caplog.at_level(logging.WARNING, logger="agui_client"), \
            drive.client(endpoint.url, store=MemoryStore(), telemetry=False) as client, \
            pytest.raises(ag.StoreError) as caught:
        client.thread(LONG).run("hi")

    (line,) = _logged(caplog, "the store failed while claiming it")
    assert len(line) < 1_000 and line.count(CUT) == 2, line[:300]
    assert len(str(caught.value)) < 1_000 and endpoint.agent.request_count == 0
