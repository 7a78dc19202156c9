"""Which frontend calls ``run_until_done`` answers: exactly the ones the fold calls pending (TC-17).

Issue 17 item 13: one final message gives one answer however the run built it; a call a snapshot
adds to a message only snapshots built is never run by a handler.
"""

from __future__ import annotations

from typing import Any

import pytest

from agui_client.testing import Finish, ScriptedAgent, Start


def _call(call_id: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": "pick", "arguments": "{}"}}


TEXT = {"id": "a1", "role": "assistant", "content": "x"}
WITH_CALL = {**TEXT, "toolCalls": [_call("c1")]}
STREAMED_TEXT = [{"type": "TEXT_MESSAGE_START", "messageId": "a1", "role": "assistant"},
                 {"type": "TEXT_MESSAGE_CONTENT", "messageId": "a1", "delta": "x"},
                 {"type": "TEXT_MESSAGE_END", "messageId": "a1"}]
SHAPES = {
    "one snapshot": ([{"type": "MESSAGES_SNAPSHOT", "messages": [WITH_CALL]}], 0),
    "two snapshots": ([{"type": "MESSAGES_SNAPSHOT", "messages": [TEXT]},
                       {"type": "MESSAGES_SNAPSHOT", "messages": [WITH_CALL]}], 0),
    "streamed, then a snapshot": ([*STREAMED_TEXT, {"type": "MESSAGES_SNAPSHOT", "messages": [WITH_CALL]}], 1),
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_run_until_done_runs_a_handler_only_for_the_calls_the_rule_calls_pending(
    drive: Any, served: Any, shape: str
) -> None:
    body, handled = SHAPES[shape]
    endpoint = served(ScriptedAgent([[Start(), *body, Finish()],
                                     [Start(), {"type": "TEXT_MESSAGE_START", "messageId": "a2", "role": "assistant"},
                                      {"type": "TEXT_MESSAGE_CONTENT", "messageId": "a2", "delta": "thanks"},
                                      {"type": "TEXT_MESSAGE_END", "messageId": "a2"}, Finish()]]))
    picked: list[str] = []

    with drive.client(endpoint.url) as client:
        thread = client.thread(tool_handlers={"pick": lambda: picked.append("pick") or "ok"})
        result = thread.run_until_done("go")

    assert len(picked) == handled
    assert endpoint.agent.request_count == 1 + handled
    assert result.pending_tool_call_ids == ()
