"""Interrupts and resume: what a run records, what a resume may send, and what is refused before anything is sent.

Every test body runs through both shells (``drive``: sync and async) against a real ``ScriptedAgent``
served by uvicorn on 127.0.0.1; the agent records what it received, so "nothing was sent" is a count of
requests.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest
from threadkit import UTC, finishing, interrupted

import agui_client as ag
from agui_client.stores import MemoryStore
from agui_client.testing import (
    Finish,
    Respond,
    ScriptedAgent,
    Start,
    text_message,
)


def clock_at(when: datetime) -> Callable[[], datetime]:
    return lambda: when


def ask_then_finish(*messages: str) -> ScriptedAgent:
    """Each run but the last raises interrupt ``i1`` with the next message; the last finishes."""
    return ScriptedAgent([*([Start(), interrupted("i1", message=m)] for m in messages), [Start(), Finish()]],
                         stateless=True)


NOT_JSON = [
    pytest.param({1, 2}, id="set"),
    pytest.param(b"yes", id="bytes"),
    pytest.param(float("nan"), id="nan"),
    pytest.param(float("inf"), id="inf"),
    pytest.param("x\ud800", id="lone-surrogate"),
    pytest.param(datetime(2026, 1, 1), id="datetime"),
]


def test_a_run_ending_with_the_interrupt_outcome_records_its_interrupts(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent.interrupts(2))

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        result = thread.run("hi")

    assert result.outcome == "interrupt"
    assert [i.id for i in result.interrupts] == ["interrupt-1", "interrupt-2"]
    assert [i.id for i in thread.open_interrupts] == ["interrupt-1", "interrupt-2"]


def test_a_plain_run_on_an_interrupted_thread_is_refused_before_anything_is_sent(
    drive: Any, served: Any
) -> None:
    endpoint = served(ScriptedAgent.interrupts(2))

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        thread.run("hi")
        messages_before = thread.state.messages
        with pytest.raises(ag.UncoveredInterrupts) as caught:
            thread.run("never mind, do something else")

    assert caught.value.ids == ("interrupt-1", "interrupt-2")
    assert endpoint.agent.request_count == 1
    assert thread.state.messages == messages_before


@pytest.mark.parametrize("how", ["run", "stream"])
def test_interrupts_of_a_refused_outcome_are_saved_open_and_end_the_resume_claim(drive: Any, served: Any,
                                                                                 how: str) -> None:
    # B232: a resumed run stops to ask again, repeating an interrupt id (IR-06). The outcome is
    # refused, but its interrupts are held open AND saved, so a thread loaded elsewhere cannot move
    # past them either, and the resume's claim ends (the agent answered it): the next resume goes out.
    asked = {"type": "interrupt", "interrupts": [{"id": "i1", "reason": "approval"}]}
    repeated = {"type": "interrupt", "interrupts": [{"id": "i2", "reason": "approval", "message": "a?"},
                                                    {"id": "i2", "reason": "approval", "message": "b?"}]}
    endpoint = served(ScriptedAgent([finishing(asked), finishing(repeated), finishing(None)], stateless=True))

    with drive.client(endpoint.url, store=MemoryStore()) as client:
        thread = client.thread()
        thread.run("go")
        with pytest.raises(ag.SequenceError) as caught:
            if how == "run":
                thread.run(resume=thread.resume_builder().answer("i1", "yes"))
            else:
                with thread.stream(resume=thread.resume_builder().answer("i1", "yes")) as events:
                    list(events)
        elsewhere = client.thread(thread.id)
        with pytest.raises(ag.UncoveredInterrupts) as waiting:
            elsewhere.run("something else")
        requests_before = endpoint.agent.request_count
        result = elsewhere.run(resume=elsewhere.resume_builder().answer("i2", "yes"))

    assert caught.value.rule == "IR-06"
    assert not getattr(caught.value, "claim_held", False)
    # (the id raised twice is one question, asked as it was raised first: docs/codes.md#ir-06)
    assert [i.message for i in waiting.value.interrupts] == ["a?"]
    assert "waiting for 1 answer to the interrupt its last run raised: 'i2' ('a?')" in str(waiting.value)
    assert [i.message for i in elsewhere.state.open_interrupts] == []
    assert requests_before == 2 and endpoint.agent.request_count == 3
    assert result.outcome == "success"
    sent = endpoint.received[-1].body
    assert [e["interruptId"] for e in sent["resume"]] == ["i2"]


def test_a_resume_built_with_the_builder_answers_and_abandons(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent.interrupts(2))

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        thread.run("hi")
        builder = thread.resume_builder().answer("interrupt-1", {"answer": "yes"}).abandon("interrupt-2")
        result = thread.run(resume=builder)

    assert result.outcome == "success"
    assert result.result == {"answers": {"interrupt-1": {"answer": "yes"}}, "abandoned": ["interrupt-2"]}
    assert thread.open_interrupts == ()
    assert [(e.interrupt_id, e.status, e.payload) for e in endpoint.agent.requests[1].resume or ()] == [
        ("interrupt-1", "resolved", {"answer": "yes"}), ("interrupt-2", "cancelled", None)]


def test_the_resuming_input_carries_the_thread_its_messages_without_activities_and_its_state(
    drive: Any, served: Any
) -> None:
    endpoint = served(ScriptedAgent([
        [
            Start(),
            ag.StateSnapshotEvent(snapshot={"plan": ["drop staging"], "step": 1}),
            ag.ActivitySnapshotEvent(message_id="act-1", activity_type="progress", content={"percent": 50}),
            *text_message("m1", "May I?"),
            interrupted("ask-1"),
        ],
        [Start(), Finish()],
    ]))

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        thread.run("hi")
        activities = [m.id for m in thread.state.messages if isinstance(m, ag.ActivityMessage)]
        thread.run(resume=thread.resume_builder().answer("ask-1", {"ok": True}))

    first, second = (r.body for r in endpoint.received)
    assert activities == ["act-1"]
    assert second["threadId"] == first["threadId"] == thread.id
    assert second["runId"] != first["runId"]
    assert [m["id"] for m in second["messages"]] == [first["messages"][0]["id"], "m1"]
    assert second["state"] == {"plan": ["drop staging"], "step": 1}
    assert second["resume"] == [{"interruptId": "ask-1", "status": "resolved", "payload": {"ok": True}}]


@pytest.mark.parametrize("form", ["builder", "entries"])
def test_answering_an_expired_interrupt_is_refused_before_anything_is_sent(
    drive: Any, served: Any, form: str
) -> None:
    endpoint = served(ScriptedAgent.interrupts(1, expires_at="2026-06-01T00:00:00Z", response_schema=None))

    with drive.client(endpoint.url, clock=clock_at(datetime(2026, 7, 1, tzinfo=UTC))) as client:
        thread = client.thread()
        thread.run("hi")
        resume: Any = thread.resume_builder().answer("interrupt-1", "too late") if form == "builder" else [
            ag.ResumeEntry(interrupt_id="interrupt-1", status="resolved", payload="too late")]
        with pytest.raises(ag.ExpiredInterruptAnswered) as caught:
            thread.run(resume=resume)

    assert caught.value.ids == ("interrupt-1",)
    assert endpoint.agent.request_count == 1


def test_an_expired_interrupt_can_be_abandoned(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent.interrupts(1, expires_at="2026-06-01T00:00:00Z", response_schema=None))

    with drive.client(endpoint.url, clock=clock_at(datetime(2026, 7, 1, tzinfo=UTC))) as client:
        thread = client.thread()
        thread.run("hi")
        result = thread.run(resume=thread.resume_builder().abandon("interrupt-1"))

    assert result.outcome == "success"
    assert result.result == {"answers": {}, "abandoned": ["interrupt-1"]}


def test_expiry_is_judged_with_the_clients_clock(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent.interrupts(1, expires_at="2026-06-01T00:00:00Z", response_schema=None))

    with drive.client(endpoint.url, clock=clock_at(datetime(2026, 5, 1, tzinfo=UTC))) as client:
        thread = client.thread()
        thread.run("hi")
        result = thread.run(resume=thread.resume_builder().answer("interrupt-1", "in time"))

    assert result.result == {"answers": {"interrupt-1": "in time"}, "abandoned": []}


@pytest.mark.parametrize("status", [500, 502, 504])
def test_a_resume_that_may_have_reached_the_agent_keeps_the_thread_claimed_until_released(
    drive: Any, served: Any, status: int
) -> None:
    endpoint = served(ScriptedAgent([
        [Start(), interrupted("ask-1")],
        # (a 5xx but 503 may come after the agent acted on the answers (a gateway's 502 or 504, a handler
        # failing part-way with a 500); a 503 says it served nothing)
        Respond(status=status, body={"detail": "failed"}),
        [Start(), Finish()],
    ]))

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        thread.run("hi")
        with pytest.raises(ag.HTTPStatusError):
            thread.run(resume=thread.resume_builder().answer("ask-1", "go"))
        with pytest.raises(ag.ConcurrentResume):
            thread.run(resume=thread.resume_builder().answer("ask-1", "go"))
        sent_while_claimed = endpoint.agent.request_count
        thread.release_claim()
        result = thread.run(resume=thread.resume_builder().answer("ask-1", "go"))

    assert sent_while_claimed == 2
    assert result.outcome == "success"
    assert endpoint.agent.request_count == 3


def _resume_refused(client: Any) -> tuple[Any, ag.HTTPStatusError]:
    """A new thread of ``client`` interrupted by its first run (``ask-1``), and the error status its resume
    answering ``ask-1`` met."""
    thread = client.thread()
    thread.run("hi")
    with pytest.raises(ag.HTTPStatusError) as caught:
        thread.run(resume=thread.resume_builder().answer("ask-1", "go"))
    return thread, caught.value


@pytest.mark.parametrize("status", [400, 422, 429, 499, 503])
def test_a_resume_the_agent_refused_with_a_4xx_or_a_503_gives_the_claim_back(drive: Any, served: Any,
                                                                             status: int) -> None:
    # A 4xx is the agent refusing the request, a 503 with a Retry-After the agent saying it did not serve
    # it (what a retry bets a resume on): it acted on nothing, so the thread is not held claimed and the
    # answer can be sent again at once.
    endpoint = served(ScriptedAgent([
        [Start(), interrupted("ask-1")],
        Respond(status=status, body={"detail": "not an answer I take"}, headers={"Retry-After": "5"}),
        [Start(), Finish()],
    ]))
    store = MemoryStore()

    with drive.client(endpoint.url, store=store) as client:
        thread, refused = _resume_refused(client)
        claim = store.load(thread.id).claim  # type: ignore[union-attr]
        result = thread.run(resume=thread.resume_builder().answer("ask-1", "go"))

    assert refused.status_code == status and claim is None
    assert result.outcome == "success" and endpoint.agent.request_count == 3


def test_a_resume_met_by_a_503_without_retry_after_stays_claimed(drive: Any, served: Any) -> None:
    # A proxy answers 503 for an agent that failed mid-request (Envoy's "upstream connect error or
    # disconnect/reset before headers"), after the agent may have acted on the answers: a 503 says the
    # agent served nothing only with a Retry-After, which a server declining on purpose sends.
    endpoint = served(ScriptedAgent([[Start(), interrupted("ask-1")],
                                     Respond(status=503, body="upstream connect error or disconnect/reset before "
                                                              "headers. reset reason: connection termination")]))
    store = MemoryStore()

    with drive.client(endpoint.url, store=store) as client:
        thread, refused = _resume_refused(client)

    assert refused.status_code == 503 and refused.retry_after is None
    assert store.load(thread.id).claim is not None  # type: ignore[union-attr]


@pytest.mark.parametrize("status", [503, 404])
def test_a_resume_the_agent_took_with_a_see_other_stays_claimed_whatever_the_get_after_it_meets(
    drive: Any, served: Any, status: int
) -> None:
    # The 303 says the agent took the answers; the 503 or 404 answers the GET it sent the client on to,
    # and was read as the agent refusing the resume: the claim went, and the same answers could be
    # sent again at once, acted on twice.
    agent = ScriptedAgent([[Start(), interrupted("ask-1")], Respond(status=303, headers={"Location": "agent"})])

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "GET":
            await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"text/plain")]})
            await send({"type": "http.response.body", "body": b"not now"})
            return
        await agent(scope, receive, send)

    store = MemoryStore()
    with drive.client(served(app).url, store=store, follow_redirects=True) as client:
        thread, refused = _resume_refused(client)
        with pytest.raises(ag.ConcurrentResume):
            thread.run(resume=thread.resume_builder().answer("ask-1", "go"))

    assert refused.status_code == status and refused.request.method == "GET"
    assert store.load(thread.id).claim is not None  # type: ignore[union-attr]
    assert agent.request_count == 2


def test_a_resume_met_by_a_503_holding_an_event_stream_stays_claimed(drive: Any, served: Any) -> None:
    # Events under a 503 may be the resume's own run: it does not say the agent served nothing.
    events = b'data: {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}\n\n'
    endpoint = served(ScriptedAgent([[Start(), interrupted("ask-1")],
                                     Respond(status=503, body=events, content_type="text/event-stream",
                                             headers={"Retry-After": "5"})]))
    store = MemoryStore()

    with drive.client(endpoint.url, store=store) as client:
        thread, refused = _resume_refused(client)

    assert refused.status_code == 503
    assert store.load(thread.id).claim is not None  # type: ignore[union-attr]


def test_a_resume_that_never_reached_the_agent_gives_the_claim_back(drive: Any, served: Any) -> None:
    # A refused connection sent nothing: the claim goes, and a replica answers from the stored thread.
    endpoint = served(ScriptedAgent([[Start(), interrupted("ask-1")], [Start(), Finish()]]))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    store = MemoryStore()

    with drive.client(endpoint.url, store=store) as client, \
            drive.client(f"http://127.0.0.1:{port}/agent", store=store) as unreachable:
        client.thread("t1").run("hi")
        cut_off = unreachable.thread("t1")
        with pytest.raises(ag.TransportError) as caught:
            cut_off.run(resume=cut_off.resume_builder().answer("ask-1", "go"))
        claim = store.load("t1").claim  # type: ignore[union-attr]
        replica = client.thread("t1")
        result = replica.run(resume=replica.resume_builder().answer("ask-1", "go"))

    assert caught.value.request_sent is False and claim is None
    assert result.outcome == "success" and endpoint.agent.request_count == 2


def test_b275_a_builder_from_one_thread_is_refused_on_another_before_anything_is_sent(
    drive: Any, served: Any
) -> None:
    endpoint = served(ask_then_finish("a question"))  # the script plays per thread: both get i1

    with drive.client(endpoint.url) as client:
        t1, t2 = client.thread("t1"), client.thread("t2")
        t1.run("go")
        t2.run("go")
        builder = t1.resume_builder().answer("i1", {"approved": True})
        with pytest.raises(ag.MisdirectedResume) as caught:
            t2.run(resume=builder)

    assert (caught.value.builder_thread_id, caught.value.thread_id) == ("t1", "t2")
    assert caught.value.ids == ("i1",)
    assert len(endpoint.received) == 2
    assert [i.id for i in t2.open_interrupts] == ["i1"]


def test_a_kept_builder_refused_on_a_thread_waiting_on_nothing_says_what_became_of_its_run(
    drive: Any, served: Any
) -> None:
    # The refusal said "a later run answered or abandoned them" whenever the thread waited on nothing,
    # also on a copy of the thread made (or loaded) without the builder's run, where no later run did.
    endpoint = served(ask_then_finish("a question"))

    with drive.client(endpoint.url) as client, drive.client(endpoint.url) as elsewhere:
        thread = client.thread("t")
        asked = thread.run("go", run_id="r1")
        builder = thread.resume_builder().answer("i1", {"approved": True})
        with pytest.raises(ag.MisdirectedResume) as anew:
            elsewhere.thread("t").run(resume=builder)  # (another client's store: the thread made anew)
        thread.run(resume=builder, run_id="r2")
        with pytest.raises(ag.MisdirectedResume) as twice:
            thread.run(resume=builder)
        last = ag.ResumeBuilder(asked.interrupts, thread_id="t", run_id="r2").answer("i1", {"approved": True})
        with pytest.raises(ag.MisdirectedResume) as own_last:
            thread.run(resume=last)

    made = "resume refused, nothing was sent: the builder was made for the interrupts of run"
    again = "(make a new one with thread.resume_builder())"
    assert str(anew.value) == (f"{made} 'r1', and the thread waits on none now and holds no run 'r1' (this copy "
                               f"of the thread was made or loaded without it) {again}")
    assert str(twice.value) == (f"{made} 'r1', and the thread waits on none now (run 'r2', after it, answered or "
                                f"abandoned them) {again}")
    assert str(own_last.value) == f"{made} 'r2', and the thread waits on none now, though that run is its last {again}"
    assert [(e.builder_run_id, e.interrupted_run_id) for e in (anew.value, twice.value, own_last.value)] == [
        ("r1", None), ("r1", None), ("r2", None)]
    assert len(endpoint.received) == 2


def test_a_kept_builder_refused_on_a_reloaded_thread_names_the_run_the_store_kept(drive: Any, served: Any) -> None:
    # A stored thread keeps only its last run: reloaded after its resume (run r2), it holds r2 alone.
    # The refusal said the copy "was made or loaded without" any such run, as if no run had answered;
    # it now names the run it holds, the one that (or one before it) answered the builder's run.
    endpoint = served(ask_then_finish("a question"))
    store = MemoryStore()

    with drive.client(endpoint.url, store=store) as client, drive.client(endpoint.url, store=store) as other:
        thread = client.thread("t")
        thread.run("go", run_id="r1")
        builder = thread.resume_builder().answer("i1", {"approved": True})
        thread.run(resume=builder, run_id="r2")
        reloaded = other.load_thread("t")
        with pytest.raises(ag.MisdirectedResume) as caught:
            reloaded.run(resume=builder)

    assert str(caught.value) == (
        "resume refused, nothing was sent: the builder was made for the interrupts of run 'r1', and the thread "
        "waits on none now and holds no run 'r1': the first run it holds is 'r2' (a thread loaded from a store "
        "keeps only its last run), so if 'r1' was this thread's, 'r2' or a run before it answered or abandoned "
        "them (make a new one with thread.resume_builder())")
    assert (caught.value.builder_run_id, caught.value.interrupted_run_id) == ("r1", None)
    assert len(endpoint.received) == 2


@pytest.mark.parametrize("way", ["run", "stream"])
def test_b275_a_kept_builder_is_refused_once_the_thread_is_interrupted_again_under_the_same_id(
    drive: Any, served: Any, way: str
) -> None:
    endpoint = served(ask_then_finish("delete STAGING?", "delete PRODUCTION?"))

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        first = thread.run("go")
        stale = thread.resume_builder().answer("i1", {"approved": True})
        thread.run(resume=thread.resume_builder().abandon("i1"))
        with pytest.raises(ag.MisdirectedResume) as caught:
            if way == "run":
                thread.run(resume=stale)
            else:
                with thread.stream(resume=stale):
                    pass

    assert caught.value.builder_run_id == first.run_id
    assert caught.value.interrupted_run_id == thread.state.interrupted_run_id != first.run_id
    assert len(endpoint.received) == 2
    assert [i.message for i in thread.open_interrupts] == ["delete PRODUCTION?"]


def test_a_builder_still_answers_its_run_after_the_thread_is_read_again_from_the_store(
    drive: Any, served: Any
) -> None:
    endpoint = served(ask_then_finish("delete STAGING?"))

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        thread.run("go")
        builder = thread.resume_builder().answer("i1", {"approved": True})
        thread.reload()
        elsewhere = client.thread(thread.id)
        result = elsewhere.run(resume=builder)

    assert result.outcome == "success"
    assert endpoint.received[-1].body["resume"] == [
        {"interruptId": "i1", "status": "resolved", "payload": {"approved": True}}]


def test_an_unbound_builder_is_matched_by_id_alone(drive: Any, served: Any) -> None:
    endpoint = served(ask_then_finish("delete STAGING?"))

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        first = thread.run("go")
        result = thread.run(resume=ag.ResumeBuilder(first.interrupts).answer("i1", {"approved": True}))

    assert result.outcome == "success"


@pytest.mark.parametrize("form", ["builder", "entries"])
@pytest.mark.parametrize("payload", NOT_JSON)
def test_a_resume_payload_json_cannot_hold_is_refused_before_the_claim_and_anything_is_sent(
    drive: Any, served: Any, payload: Any, form: str
) -> None:
    endpoint = served(ask_then_finish("approve?"))
    store = MemoryStore()

    with drive.client(endpoint.url, store=store) as client:
        thread = client.thread()
        thread.run("go")
        with pytest.raises(ag.UnencodableResumePayload) as caught:
            if form == "builder":
                thread.run(resume=thread.resume_builder().answer("i1", {"answer": [payload]}))
            else:
                thread.run(resume=[ag.ResumeEntry(interrupt_id="i1", status="resolved", payload={"answer": [payload]})])
        sent = len(endpoint.received)
        claim = store.load(thread.id).claim  # type: ignore[union-attr]
        result = thread.run(resume=thread.resume_builder().answer("i1", "yes"))

    assert (caught.value.interrupt_id, caught.value.field, caught.value.pointer) == ("i1", "payload", "/answer/0")
    assert isinstance(caught.value, ag.ResumeRefused)
    assert sent == 1
    assert claim is None
    assert result.outcome == "success"


@pytest.mark.parametrize(("arguments", "field", "pointer"), [
    pytest.param({"forwarded_props": {"trace": {"at": datetime(2026, 1, 1)}}}, "forwardedProps", "/trace/at",
                 id="forwarded-props"),
    pytest.param({"state": {"seen": {1, 2}}}, "state", "/seen", id="state"),
    pytest.param({"state": float("nan")}, "state", "", id="state-nan"),
    pytest.param({"context": [ag.Context(description="ok", value="fine"),
                              ag.Context(description="d", value="x\udc00")]}, "context", "/1/value", id="context"),
    pytest.param({"tools": [ag.Tool(name="t", description="d", parameters={"default": b"x"})]}, "tools",
                 "/0/parameters/default", id="tools"),
    pytest.param({"message": "hello \ud83d"}, "messages", "/0/content", id="new-message"),
])
@pytest.mark.parametrize("resuming", [False, True], ids=["plain-run", "resume"])
def test_a_run_input_value_json_cannot_hold_is_refused_before_the_claim_and_anything_is_sent(
    drive: Any, served: Any, arguments: dict[str, Any], field: str, pointer: str, resuming: bool
) -> None:
    endpoint = served(ask_then_finish("approve?") if resuming else ScriptedAgent.chat("hi"))
    store = MemoryStore()

    with drive.client(endpoint.url, store=store) as client:
        thread = client.thread()
        if resuming:
            thread.run("go")
            arguments = {**arguments, "resume": thread.resume_builder().abandon("i1")}
            if "message" in arguments:
                pointer = f"/{len(thread.state.messages)}/content"
        before = len(endpoint.received)
        with pytest.raises(ag.UnencodableValue) as caught:
            thread.run(**arguments)
        stored = store.load(thread.id)

    assert (caught.value.field, caught.value.pointer) == (field, pointer)
    assert not isinstance(caught.value, ag.ResumeRefused)
    assert len(endpoint.received) == before
    assert stored is None or stored.claim is None


def test_a_value_json_cannot_hold_that_reached_the_thread_by_hand_is_still_refused_before_the_claim(
    drive: Any, served: Any
) -> None:
    endpoint = served(ask_then_finish("approve?"))
    store = MemoryStore()

    with drive.client(endpoint.url, store=store) as client:
        thread = client.thread()
        thread.run("go")
        thread.add_message(ag.UserMessage(id="by-hand", content={"a": {1}}))  # type: ignore[arg-type]
        with pytest.raises(ag.UnencodableValue) as caught:
            thread.run(resume=thread.resume_builder().abandon("i1"))
        claim = store.load(thread.id).claim  # type: ignore[union-attr]
        by_hand = len(thread.state.messages) - 1

    assert caught.value.field == "input"
    assert caught.value.pointer == f"/messages/{by_hand}/content/a"
    assert claim is None
    assert len(endpoint.received) == 1


@pytest.mark.parametrize("content", NOT_JSON + [pytest.param({"k": {1}}, id="nested-set")])
def test_a_tool_result_json_cannot_hold_is_refused_when_added(drive: Any, served: Any, content: Any) -> None:
    endpoint = served(ScriptedAgent.frontend_tool("confirm_choice"))

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        result = thread.run("pick one")
        messages = thread.state.messages
        with pytest.raises(ag.UnencodableValue) as caught:
            thread.add_tool_result(result.pending_tool_calls[0].id, content)

    assert caught.value.field == "content"
    assert thread.state.messages == messages


@pytest.mark.parametrize("form", ["builder", "entries"])
def test_b273_a_resolved_entry_without_payload_is_sent_without_one_and_warns(
    drive: Any, served: Any, form: str
) -> None:
    endpoint = served(ask_then_finish("approve?"))

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        thread.run("go")
        resume: Any = thread.resume_builder().answer("i1", None) if form == "builder" else [
            ag.ResumeEntry(interrupt_id="i1", status="resolved", payload=None)]
        with pytest.warns(ag.AguiWarning) as warned:
            thread.run(resume=resume)

    assert [str(w.message) for w in warned if "i1" in str(w.message) and "IR-11" in str(w.message)]
    assert endpoint.received[-1].body["resume"] == [{"interruptId": "i1", "status": "resolved"}]


@pytest.mark.parametrize("way", ["run", "stream"])
@pytest.mark.parametrize("form", ["builder", "entries"])
def test_b269_pending_unknown_sends_entries_for_a_thread_that_holds_no_interrupts(
    drive: Any, served: Any, form: str, way: str
) -> None:
    endpoint = served(ScriptedAgent([[Start(), Finish()]], stateless=True))

    with drive.client(endpoint.url) as client:
        thread = client.thread("rebuilt-elsewhere")
        resume: Any = thread.resume_builder().answer("i1", {"approved": True}) if form == "builder" else [
            ag.ResumeEntry(interrupt_id="i1", status="resolved", payload={"approved": True})]
        with pytest.raises(ag.NothingToResume):
            thread.run(resume=resume)
        refused_sent = len(endpoint.received)
        if way == "run":
            result = thread.run(resume=resume, pending_unknown=True)
        else:
            with thread.stream(resume=resume, pending_unknown=True) as events:
                list(events)
            result = events.result

    assert refused_sent == 0
    assert result.outcome == "success"
    assert endpoint.received[-1].body["resume"] == [
        {"interruptId": "i1", "status": "resolved", "payload": {"approved": True}}]


def test_b269_pending_unknown_still_refuses_a_list_leaving_a_held_interrupt_uncovered(
    drive: Any, served: Any
) -> None:
    endpoint = served(ScriptedAgent.interrupts(2))

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        thread.run("hi")
        with pytest.raises(ag.UncoveredInterrupts) as caught:
            thread.run(resume=[ag.ResumeEntry(interrupt_id="interrupt-1", status="cancelled")], pending_unknown=True)

    assert caught.value.ids == ("interrupt-2",)
    assert len(endpoint.received) == 1


def test_an_interrupted_run_whose_finish_holds_a_number_past_a_double_still_needs_its_answers(
        drive: Any, served: Any) -> None:
    # The RUN_FINISHED is refused (1e400 is no JSON either side could write back), yet it says the agent
    # stopped to ask: the next run may not go out without covering i1, and the thread, saved, says so.
    def finish_with_overflow(run_input: Any) -> list[Any]:
        return [Start(), b'data: {"type":"RUN_FINISHED","threadId":"%s","runId":"%s","outcome":{"type":"interrupt",'
                b'"interrupts":[{"id":"i1","reason":"approval","metadata":{"budget":1e400}}]}}\n\n'
                % (run_input.thread_id.encode(), run_input.run_id.encode())]
    endpoint = served(ScriptedAgent([finish_with_overflow, [Start(), Finish()]], stateless=True))
    store = MemoryStore()

    with drive.client(endpoint.url, store=store) as client:
        thread = client.thread("t-overflow")
        with pytest.raises(ag.DecodeError) as caught:
            thread.run("pay the invoice")
        assert caught.value.pointer == "/outcome/interrupts/0/metadata/budget"
        with pytest.raises(ag.UncoveredInterrupts):
            thread.run("and the next one")
        assert len(endpoint.received) == 1
        reloaded = client.thread("t-overflow")
        assert [i.id for i in reloaded.open_interrupts] == ["i1"]
        result = reloaded.run(resume=[ag.ResumeEntry(interrupt_id="i1", status="cancelled")])

    assert result.outcome == "success"
    assert endpoint.received[-1].body["resume"] == [{"interruptId": "i1", "status": "cancelled"}]


def test_interrupt_ids_holding_lone_utf16_halves_are_answered_by_the_ids_the_agent_raised(
        drive: Any, served: Any) -> None:
    # A producer in a UTF-16 language may raise ids that differ only in a lone half. Each entry must name
    # its interrupt exactly: written as U+FFFD both became 'ask-\ufffd', a resume answering neither.
    def ask(run_input: Any) -> list[Any]:
        return [Start(), b'data: {"type":"RUN_FINISHED","threadId":"%s","runId":"%s","outcome":{"type":"interrupt",'
                b'"interrupts":[{"id":"ask-\\ud800","reason":"approval"},{"id":"ask-\\udbff","reason":"approval"}]}}'
                b'\n\n' % (run_input.thread_id.encode(), run_input.run_id.encode())]
    endpoint = served(ScriptedAgent([ask, [Start(), Finish()]], stateless=True))

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        asked = thread.run("rotate the keys")
        assert [i.id for i in asked.interrupts] == ["ask-\ud800", "ask-\udbff"]
        builder = thread.resume_builder().answer("ask-\ud800", True).abandon("ask-\udbff")
        with pytest.warns(ag.AguiWarning) as warned:
            result = thread.run(resume=builder)

    assert result.outcome == "success"
    assert endpoint.received[-1].body["resume"] == [
        {"interruptId": "ask-\ud800", "status": "resolved", "payload": True},
        {"interruptId": "ask-\udbff", "status": "cancelled"}]
    assert any("UTF16-SURROGATE" in str(w.message) for w in warned)


def test_state_nested_deeper_than_the_encoders_go_is_refused_before_the_claim_and_anything_is_sent(
    drive: Any, served: Any
) -> None:
    # JSON to every check before the encoder (it holds nothing else), and then a RecursionError out of
    # the run, as the command line's own reader of typed JSON had.
    deep: list[Any] = []
    inner = deep
    for _ in range(5_000):
        inner.append([])
        inner = inner[0]
    endpoint = served(ScriptedAgent.chat("hi"))
    store = MemoryStore()

    with drive.client(endpoint.url, store=store) as client:
        thread = client.thread()
        with pytest.raises(ag.UnencodableValue) as caught:
            thread.run("go", state={"deep": deep})
        stored = store.load(thread.id)

    assert caught.value.field == "input" and "nested deeper than JSON encoders go" in str(caught.value)
    assert "nothing was sent" in str(caught.value)
    assert len(endpoint.received) == 0
    assert stored is None or stored.claim is None
