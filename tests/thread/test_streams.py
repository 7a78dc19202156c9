"""The run stream as the SDKs shape it: ``text_stream``, ``get_final_result()``, a typed ``result``, and
leaving the ``with`` block early said in the result (a ``TR-16`` warning), through both shells.

Every test runs through the sync and the async shell (the ``drive`` fixture) against a ScriptedAgent
served by uvicorn on 127.0.0.1.
"""

from __future__ import annotations

import gc
import json
import weakref
from typing import Any

import pytest
from threadkit import interrupted

import agui_client as ag
from agui_client.core.flow import Conversation
from agui_client.stores import MemoryStore
from agui_client.testing import Finish, Gate, ScriptedAgent, Start, Wait, reasoning, text_message, tool_call


def mixed_run() -> list[Any]:
    """Main text, reasoning, a subagent's text, a tool call, a user-role message, then more main text."""
    return [
        Start(),
        *reasoning("r1", "let me think"),
        *text_message("m1", "Hello there"),
        *text_message("s1", "sub agent words", subagent_run_id="sub-1"),
        *tool_call("c1", "lookup", {"q": "x"}, result="found"),
        *text_message("u1", "not the agent's", role="user"),
        *text_message("m2", "and more"),
        Finish(),
    ]


def test_text_stream_yields_the_main_agents_text_deltas_only(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent([mixed_run()]))

    with drive.client(endpoint.url) as client:
        with client.thread().stream("hi") as stream:
            texts = list(stream.text_stream)

    assert texts == ["Hello ", "there", "and ", "more"]
    assert all(type(t) is str for t in texts)
    assert stream.result.outcome == "success"
    assert stream.result.text == "Hello there\n\nsub agent words\n\nand more"


def test_text_deltas_with_subagents_also_yields_the_subagents_text(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent([mixed_run()]))

    with drive.client(endpoint.url) as client:
        with client.thread().stream("hi") as stream:
            texts = list(stream.text_deltas(subagents=True))

    assert "".join(texts) == "Hello theresub agent wordsand more"
    assert stream.result.outcome == "success"


def test_a_subagents_message_whose_start_was_read_as_an_event_stays_out_of_the_text_stream(
        drive: Any, served: Any) -> None:
    # The deltas leave the owner out (the START carries it): the text stream asks the folded thread.
    events = [
        Start(),
        {"type": "TEXT_MESSAGE_START", "messageId": "s1", "subagentRunId": "sub-1"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "s1", "delta": "hidden "},
        {"type": "TEXT_MESSAGE_START", "messageId": "m1"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "s1", "delta": "still hidden"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "shown"},
        {"type": "TEXT_MESSAGE_END", "messageId": "s1"},
        {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
        Finish(),
    ]
    endpoint = served(ScriptedAgent([events]))

    with drive.client(endpoint.url) as client:
        with client.thread().stream("hi") as stream:
            iterator = iter(stream)
            first = [next(iterator), next(iterator)]  # RUN_STARTED and the subagent's START
            texts = list(stream.text_stream)

    assert [type(e) for e in first] == [ag.RunStartedEvent, ag.TextMessageStartEvent]
    assert texts == ["shown"]


def test_get_final_result_reads_the_rest_and_returns_the_saved_run(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent([[Start(), *text_message("m1", "one two three"), Finish()]]))
    store = MemoryStore()

    with drive.client(endpoint.url, store=store) as client:
        thread = client.thread()
        with thread.stream("hi") as stream:
            first = next(iter(stream))
            result = stream.get_final_result()
            again = stream.get_final_result()
            rest = list(stream)
        stored = store.load(thread.id)

    assert type(first) is ag.RunStartedEvent
    assert type(result) is ag.RunResult
    assert (result.outcome, result.text, result.events) == ("success", "one two three", 7)
    assert again is result and stream.result is result
    assert rest == []
    assert stored is not None and stored.claim is None and stored.version == thread.version
    assert [w.code for w in result.warnings] == []


def test_result_read_before_the_stream_ended_raises_stream_not_finished(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent([[Start(), *text_message("m1", "hi there"), Finish()]]))

    with drive.client(endpoint.url) as client:
        with client.thread().stream("hi") as stream:
            next(iter(stream))
            with pytest.raises(ag.StreamNotFinished) as caught:
                stream.result  # noqa: B018 - reading it is the test
            list(stream)
            inside = stream.result

    assert caught.value.run_id == stream.run_input.run_id
    assert caught.value.failed is None
    assert isinstance(caught.value, RuntimeError) and isinstance(caught.value, ag.AguiError)
    assert inside.outcome == "success"


def test_a_stream_that_failed_has_no_result_and_says_which_error_holds_it(drive: Any, served: Any) -> None:
    # TEXT_MESSAGE_CONTENT for a message never started: a SequenceError, raised in the block.
    endpoint = served(ScriptedAgent([[Start(), {"type": "TEXT_MESSAGE_CONTENT", "messageId": "x", "delta": "?"},
                                      Finish()]]))

    with drive.client(endpoint.url) as client:
        with pytest.raises(ag.SequenceError) as failed, client.thread().stream("hi") as stream:
            list(stream)
        with pytest.raises(ag.StreamNotFinished) as caught:
            stream.get_final_result()

    assert caught.value.failed is failed.value
    assert failed.value.result is not None and failed.value.result.run_id == stream.run_input.run_id


def test_leaving_the_block_before_reading_says_so_in_the_result_and_gives_the_thread_back(
        drive: Any, served: Any) -> None:
    gate = Gate()
    endpoint = served(ScriptedAgent([[Start(), *text_message("m1", "never read"), Wait(gate, timeout=20), Finish()],
                                     [Start(), *text_message("m2", "fine"), Finish()]]))
    store = MemoryStore()

    with drive.client(endpoint.url, store=store) as client:
        thread = client.thread()
        with thread.stream("hi") as stream:
            pass
        left = stream.result
        after_block = list(stream)
        closed = endpoint.agent.wait_until(lambda a: bool(a.disconnects), timeout=10)
        stored = store.load(thread.id)
        again = thread.run("once more")
    gate.open()

    assert type(left) is ag.RunResult
    assert left.outcome is None
    assert [(w.code, w.run_id, w.index) for w in left.warnings] == [("TR-16", stream.run_input.run_id, 0)]
    assert "the thread was given back" in left.warnings[0].message
    assert stream.get_final_result() is left
    assert after_block == []
    assert closed and endpoint.agent.disconnects == [stream.run_input.run_id]
    assert stored is not None and stored.claim is None
    assert again.outcome == "success"


def test_leaving_mid_message_cuts_it_where_it_stopped(drive: Any, served: Any) -> None:
    gate = Gate()
    endpoint = served(ScriptedAgent([[Start(), *text_message("m1", "one two three"), Wait(gate, timeout=20),
                                      Finish()]]))

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        with thread.stream("hi") as stream:
            texts = stream.text_stream
            taken = [next(iter(texts)), next(iter(texts))]
    gate.open()

    result = stream.result
    assert taken == ["one ", "two "]
    assert result.outcome is None and result.events == 4
    assert [w.code for w in result.warnings] == ["TR-16"]
    assert [m.content for m in result.new_messages] == ["one two "]


def test_leaving_a_resume_early_keeps_its_claim_and_says_so(drive: Any, served: Any) -> None:
    gate = Gate()
    endpoint = served(ScriptedAgent([[Start(), interrupted("ask-1")],
                                     [Start(), *text_message("m1", "doing it"), Wait(gate, timeout=20), Finish()]]))
    store = MemoryStore()

    with drive.client(endpoint.url, store=store) as client:
        thread = client.thread()
        thread.run("go")
        with thread.stream(resume=thread.resume_builder().answer("ask-1", "yes")) as stream:
            next(iter(stream))
        stored = store.load(thread.id)
    gate.open()

    [warning] = stream.result.warnings
    assert warning.code == "TR-16" and "stays claimed" in warning.message
    assert stored is not None and stored.claim is not None


def test_breaking_out_after_the_terminal_event_is_a_complete_run(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent([[Start(), *text_message("m1", "done"), Finish()]]))
    store = MemoryStore()

    with drive.client(endpoint.url, store=store) as client:
        thread = client.thread()
        with thread.stream("hi") as stream:
            for event in stream:
                if isinstance(event, ag.RunFinishedEvent):
                    break
        stored = store.load(thread.id)

    assert stream.result.outcome == "success"
    assert stream.result.warnings == ()
    assert stored is not None and stored.claim is None and stored.version == thread.version


def test_a_chat_reading_the_thread_at_every_event_keeps_a_character_split_across_deltas(
        drive: Any, served: Any) -> None:
    # A UTF-16 producer splits an emoji into two deltas, one half each (B093), and may split it across
    # a restarted call's later END and its next START (TC-05). A chat that showed the message at every
    # event made the thread keep the repair it was shown (two U+FFFD and a false UTF16-SURROGATE
    # warning); the same run folded unread kept the character.
    def sent(event: dict[str, Any]) -> bytes:  # (as a UTF-16 producer writes it: a lone half escaped)
        return b"data: " + json.dumps(event).encode() + b"\n\n"

    def text(delta: str) -> bytes:
        return sent({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": delta})

    def call(delta: str) -> list[bytes]:
        return [sent({"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "f", "parentMessageId": "a1"}),
                sent({"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": delta}),
                sent({"type": "TOOL_CALL_END", "toolCallId": "c1"})]

    endpoint = served(ScriptedAgent([[
        Start(),
        ag.TextMessageStartEvent(message_id="m1", role="assistant"),
        text("hi \ud83d"), text("\ude00!"),
        ag.TextMessageEndEvent(message_id="m1"),
        *call('{"a":"x'), *call("y\ud83d"), *call('\ude00"}'),
        Finish(),
    ]]))
    store = MemoryStore()
    shown: list[str] = []

    with drive.client(endpoint.url, store=store) as client:
        thread = client.thread()
        with thread.stream("hi") as stream:
            for _event in stream:
                message = thread.state.message("m1")
                shown.append(message.content or "" if isinstance(message, ag.AssistantMessage) else "")
        stored = store.load(thread.id)

    assert shown[-1] == "hi \U0001f600!" and "hi \ufffd" in shown  # (a lone half is shown repaired)
    assert thread.state.message("m1").content == "hi \U0001f600!"  # type: ignore[union-attr]
    assert thread.state.tool_call("c1").function.arguments == '{"a":"xy\U0001f600"}'  # type: ignore[union-attr]
    assert "UTF16-SURROGATE" not in [w.code for w in stream.result.warnings]
    assert stored is not None and stored.data["messages"][1]["content"] == "hi \U0001f600!"


def test_a_stream_and_a_tool_loops_stream_read_through_are_freed_with_their_last_reference(drive: Any,
                                                                                          served: Any) -> None:
    # (no cycle holds a stream once its block was left: what it holds, the run's result among it, goes
    # with it, not at the cycle collector's next pass)
    endpoint = served(ScriptedAgent.chat())
    with drive.client(endpoint.url) as client:
        collecting = gc.isenabled()
        gc.disable()
        try:
            with client.thread("run").stream("hi") as stream:
                assert stream.get_final_result().outcome == "success"
            with client.thread("loop").stream_until_done("hi") as loop:
                assert loop.get_final_result().outcome == "success"
            # (the stream itself, not the async shell's blocking stand-in for it)
            left = [weakref.ref(getattr(stream, "_target", stream)), weakref.ref(getattr(loop, "_target", loop))]
            del stream, loop
            assert [ref() for ref in left] == [None, None]
        finally:
            if collecting:
                gc.enable()


def test_an_error_about_a_chunk_names_the_chunk_the_agent_sent(drive: Any, served: Any) -> None:
    # A TEXT_MESSAGE_CHUNK after the run finished is folded as a TEXT_MESSAGE_START and its content: the
    # error named the TEXT_MESSAGE_START, an event the agent never sent.
    endpoint = served(ScriptedAgent([[Start(), Finish(),
                                      {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m9", "delta": "late"}]]))

    with drive.client(endpoint.url) as client:
        with pytest.raises(ag.SequenceError) as caught:
            client.thread().run("hi")

    error = caught.value
    assert (error.index, error.event_type, error.rule) == (2, "TEXT_MESSAGE_CHUNK", "CL-01/AGUI004")
    assert str(error).startswith(f"run {error.run_id!r}, event #2, TEXT_MESSAGE_CHUNK, [CL-01/AGUI004]: ")
    assert str(error).endswith(" (folded as TEXT_MESSAGE_START)")


@pytest.mark.parametrize("read", ["left early", "read through"])
def test_a_stream_kept_for_its_result_holds_none_of_its_runs_reading(drive: Any, served: Any, read: str,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # (the step a stream's readers took, the run's flow folding its reads, holds the run's exchange: once
    # the block was left, a stream kept for its result lets go of it, in the sync shell as in the async
    # one, so it goes at once, with no cycle collector pass; the sync stream kept it as long as it lived)
    flows: list[weakref.ref[Any]] = []
    receive = Conversation._receive

    def watched(self: Any, *args: Any, **kwargs: Any) -> Any:
        flow = receive(self, *args, **kwargs)
        flows.append(weakref.ref(flow))
        return flow

    monkeypatch.setattr(Conversation, "_receive", watched)
    endpoint = served(ScriptedAgent([[Start(), *text_message("m1", "one two"), Finish()]]))
    with drive.client(endpoint.url) as client:
        collecting = gc.isenabled()
        gc.disable()
        try:
            with client.thread().stream("hi") as stream:
                for event in stream:
                    if read == "left early" and isinstance(event, ag.TextMessageStartEvent):
                        break
            (flow,) = flows
            assert flow() is None
            assert stream.result.outcome == (None if read == "left early" else "success")  # (kept, and read)
        finally:
            if collecting:
                gc.enable()
