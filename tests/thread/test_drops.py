"""Dropped connections and timeouts: what a cut run keeps, and the idle timeout.

Every test body runs through both shells (``drive``: sync and async) against a real ``ScriptedAgent``
served by uvicorn on 127.0.0.1; the agent records what it received, so "nothing was sent" is a count of
requests.
"""

from __future__ import annotations

from typing import Any

import pytest

import agui_client as ag
from agui_client.stores import MemoryStore, SqliteStore
from agui_client.testing import (
    Disconnect,
    Finish,
    Gate,
    KeepAlive,
    Pause,
    ScriptedAgent,
    Start,
    Wait,
    text_message,
)


@pytest.mark.parametrize("end", [
    pytest.param(Disconnect(), id="dropped"),
    pytest.param(None, id="B073-clean-eof"),
])
def test_a_stream_ending_mid_message_keeps_the_text_folded_so_far(drive: Any, served: Any, end: Any) -> None:
    items = [Start(), ag.TextMessageStartEvent(message_id="m1"),
             ag.TextMessageContentEvent(message_id="m1", delta="Hello, "),
             ag.TextMessageContentEvent(message_id="m1", delta="wor")]
    endpoint = served(ScriptedAgent([items + ([end] if end is not None else [])]))

    with drive.client(endpoint.url) as client:
        with pytest.raises(ag.StreamEnded) as caught:
            client.thread().run("hi")

    result = caught.value.result
    assert result is not None
    assert result.outcome is None
    assert result.state.message("m1") == ag.AssistantMessage(id="m1", content="Hello, wor")
    assert result.state.incomplete_ids == {"m1"}


def test_a_stream_ending_right_after_run_started_is_unfinished(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent([[Start()]]))

    with drive.client(endpoint.url) as client:
        with pytest.raises(ag.StreamEnded) as caught:
            client.thread().run("hi")

    result = caught.value.result
    assert result is not None
    assert (result.run_id, result.outcome, result.events) == (endpoint.agent.requests[0].run_id, None, 1)


def test_a_tool_call_cut_mid_arguments_is_never_offered_as_pending(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent([[
        Start(), ag.ToolCallStartEvent(tool_call_id="c1", tool_call_name="search"),
        ag.ToolCallArgsEvent(tool_call_id="c1", delta='{"pattern":"*.t'), Disconnect(),
    ]]))

    with drive.client(endpoint.url) as client:
        with pytest.raises(ag.StreamEnded) as caught:
            client.thread().run("hi")

    result = caught.value.result
    assert result is not None
    assert result.pending_tool_call_ids == ()
    assert result.state.pending_tool_call_ids == ()
    assert result.state.incomplete_ids == {"c1"}


@pytest.mark.parametrize("store", ["memory", "sqlite"])
def test_a_cut_message_stays_flagged_incomplete_once_a_later_run_saved_it(drive: Any, served: Any, store: str,
                                                                          tmp_path: Any) -> None:
    # Found by the lifecycle machine (tests/thread/test_lifecycle_model.py): the cut run is not saved, the
    # next one saves the thread with the cut message in it, and the store lost its flag: loaded again, the
    # half message read as complete (a cut message is kept flagged, never silently closed: LC-04). Both a
    # whole save (the first run's) and an appended change (a later one's) are checked.
    endpoint = served(ScriptedAgent([
        [Start(), Finish()],
        [Start(), ag.TextMessageStartEvent(message_id="m1"), ag.TextMessageContentEvent(message_id="m1", delta="Hel"),
         ag.ToolCallStartEvent(tool_call_id="c1", tool_call_name="search", parent_message_id="m1"), Disconnect()],
        [Start(), *text_message("m2", "Sorry, go on"), Finish()],
        [Start(), ag.TextMessageStartEvent(message_id="m1"), ag.TextMessageContentEvent(message_id="m1", delta="lo"),
         ag.TextMessageEndEvent(message_id="m1"), Finish()],
    ]))
    kept = MemoryStore() if store == "memory" else SqliteStore(tmp_path / "threads.db")

    with drive.client(endpoint.url, store=kept) as client:
        thread = client.thread()
        thread.run("hi")
        with pytest.raises(ag.StreamEnded):
            thread.run("and then?")
        thread.run("hello?")
        assert thread.state.incomplete_ids == {"m1", "c1"}
        again = client.thread(thread.id)
        assert again.state.incomplete_ids == {"m1", "c1"}
        assert again.state.messages == thread.state.messages
        again.run("finish it")  # (TX-05: the message re-opened and ended; its call stays cut)
        assert again.state.incomplete_ids == {"c1"}
        assert client.thread(thread.id).state.incomplete_ids == {"c1"}
    kept.close()


def test_an_injected_http_client_without_timeouts_still_gets_the_idle_timeout(drive: Any, served: Any,
                                                                               gate: Gate) -> None:
    # The AgentClient's timeouts are set on every request: a caller's client built with
    # timeout=None cannot leave a run waiting forever on a silent server.
    endpoint = served(ScriptedAgent([[Start(), Wait(gate, timeout=20), Finish()]]))

    with drive.client(endpoint.url, idle_timeout=0.5, http_client=drive.http_client(timeout=None)) as client:
        with pytest.raises(ag.IdleTimeout) as caught:
            client.thread().run("hi")

    assert caught.value.timeout == 0.5 and gate.reached


def test_a_stalled_stream_ends_in_an_idle_timeout(drive: Any, served: Any, gate: Gate) -> None:
    endpoint = served(ScriptedAgent([[Start(), ag.TextMessageStartEvent(message_id="m1"),
                                      ag.TextMessageContentEvent(message_id="m1", delta="Dele"),
                                      Wait(gate, timeout=20), Finish()]]))

    with drive.client(endpoint.url, idle_timeout=0.5) as client:
        thread = client.thread()
        with pytest.raises(ag.IdleTimeout) as caught:
            thread.run("hi")

    assert caught.value.timeout == 0.5
    assert gate.reached
    assert caught.value.result is not None
    assert caught.value.result.run_id == endpoint.agent.requests[0].run_id
    assert caught.value.result.outcome is None
    # The message cut by the stall is kept as far as it went, flagged, never silently closed; the
    # error says where the run stopped (the index the next event would have had).
    assert (caught.value.run_id, caught.value.index) == (caught.value.result.run_id, 3)
    assert thread.state.incomplete_ids == {"m1"}
    assert thread.state.message("m1").content == "Dele"  # type: ignore[union-attr]


def test_keep_alive_comments_reset_the_idle_timeout(drive: Any, served: Any) -> None:
    # 0.9 s of events-free stream against a 0.75 s idle timeout, never more than 0.3 s without a byte.
    endpoint = served(ScriptedAgent([[
        Start(), KeepAlive(), Pause(0.3), KeepAlive(), Pause(0.3), KeepAlive(), Pause(0.3), KeepAlive(),
        *text_message("m1", "still here"), Finish(),
    ]]))

    with drive.client(endpoint.url, idle_timeout=0.75) as client:
        result = client.thread().run("hi")

    assert result.outcome == "success"
    assert result.text == "still here"


def test_state_none_keeps_the_threads_state_and_a_value_replaces_it(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent.chat())
    with drive.client(endpoint.url) as client:
        thread = client.thread()
        thread.run("one", state={"k": 1})
        thread.run("two", state=None)
    first, second = endpoint.received
    assert first.body["state"] == {"k": 1}
    assert second.body["state"] == {"k": 1}
