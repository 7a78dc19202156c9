"""Every way a run can end gives its connection back to the pool (both shells, a real server).

A web backend holds many runs open and abandons some. Each test gives the client an ``httpx`` client
whose pool holds ONE connection, ends a run one way, and then checks that the pool holds no request
any more and that the next run on the same client goes out: a response left open would keep the only
connection, and that run would wait for the pool until the client's ``timeout`` (a few seconds) and
fail, so a leak fails the test instead of hanging it. Nothing here sleeps or measures time.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any

import httpx
import pytest

import agui_client as ag
from agui_client.stores import MemoryStore
from agui_client.testing import (
    Finish,
    Gate,
    Respond,
    ScriptedAgent,
    Start,
    Stream,
    Wait,
    last_user_text,
    text_message,
    tool_call,
)

#: The next run's wait for the pool, at most (a leak fails it with ``IdleTimeout`` after this long).
POOL_WAIT = 5.0


def one_connection(drive: Any) -> Any:
    """An httpx client (sync or async, as the shell) whose pool holds a single connection."""
    return drive.http_client(limits=httpx.Limits(max_connections=1, max_keepalive_connections=1))


def in_flight(http: httpx.Client | httpx.AsyncClient) -> int:
    """How many requests the pool still holds a connection for (httpcore's own count)."""
    return len(http._transport._pool._requests)  # type: ignore[attr-defined]


def reply(run_input: Any) -> list[Any]:
    return [Start(), *text_message("m-ok", "all good here"), Finish()]


def agent(first: Callable[[Any], Any]) -> ScriptedAgent:
    """An agent playing ``first`` for every turn but one whose text says ``again`` (then a plain reply)."""
    def step(run_input: Any) -> Any:
        text = last_user_text(run_input) or ""
        return reply(run_input) if text.startswith("again") else first(run_input)
    return ScriptedAgent([step], cycle=True)


def check_pool_free(client: Any, http: Any, endpoint: Any) -> None:
    """The pool holds nothing, and a run on the same client goes out and ends (on a fresh thread)."""
    before = endpoint.agent.request_count
    assert in_flight(http) == 0
    assert client.thread().run("again, after").outcome == "success"
    assert endpoint.agent.request_count == before + 1
    assert in_flight(http) == 0


def asked(*ids: str) -> Finish:
    return Finish(outcome=ag.RunFinishedInterruptOutcome(
        interrupts=tuple(ag.Interrupt(id=i, reason="approval") for i in ids)))


GATE = Gate()  # (never opened while a test waits on it: the runs that reach it end by a timeout)

#: How a run ends: (the first run's step, client options, what ``run()`` returns or raises).
ENDINGS: dict[str, tuple[Callable[[Any], Any], dict[str, Any], Any]] = {
    "normal-end": (reply, {}, "success"),
    "interrupt-outcome": (lambda r: [Start(), asked("ask-1")], {}, "interrupt"),
    "run-error": (lambda r: [Start(), {"type": "RUN_ERROR", "message": "boom"}], {}, "error"),
    "bad-json-at-event-2": (lambda r: [Start(), *text_message("m1", "a b")[:1], b"data: {nope\n\n", Finish()], {},
                            ag.DecodeError),
    "verifier-refusal-at-event-2": (
        lambda r: [Start(), {"type": "TEXT_MESSAGE_CONTENT", "messageId": "nobody", "delta": "x"}, Finish()], {},
        ag.SequenceError),
    "oversized-event": (lambda r: [Start(), *text_message("m1", "x" * 5000), Finish()], {"max_event_bytes": 1000},
                        ag.LimitExceeded),
    "byte-budget": (lambda r: [Start(), *text_message("m1", "word " * 2000), Finish()], {"max_run_bytes": 3000},
                    ag.LimitExceeded),
    "http-500-with-json-body": (lambda r: Respond(status=500, body={"detail": "down " * 50}), {}, ag.HTTPStatusError),
    "http-404-with-long-body": (lambda r: Respond(status=404, body="nothing here " * 20_000), {},
                                ag.HTTPStatusError),
    "http-429-streamed-body": (lambda r: Stream(items=[b"busy " * 30_000], status=429, content_type="text/plain"),
                               {}, ag.HTTPStatusError),
    "redirect-refused": (lambda r: Respond(status=307, headers={"location": "/elsewhere"}), {}, ag.HTTPStatusError),
    "redirect-to-another-origin": (lambda r: Respond(status=307, headers={"location": "http://192.0.2.1/x"}),
                                   {"follow_redirects": True}, ag.HTTPStatusError),
    "html-instead-of-events": (lambda r: Respond(status=200, body="<p>hi</p>" * 2000, content_type="text/html"), {},
                               ag.ProtocolError),
    "read-timeout": (lambda r: [Start(), *text_message("m1", "a b"), Wait(GATE, timeout=10)], {"idle_timeout": 0.3},
                     ag.IdleTimeout),
    "run-deadline": (lambda r: [Start(), *text_message("m1", "a b"), Wait(GATE, timeout=10)], {"run_timeout": 0.3},
                     ag.RunTimeout),
}


def run_or_stream(thread: Any, how: str) -> Any:
    """The turn's result through ``run()``, or through ``stream()`` read to its end."""
    if how == "run":
        return thread.run("hi")
    with thread.stream("hi") as stream:
        for _ in stream:
            pass
    return stream.result


@pytest.mark.parametrize("how", ["run", "stream"])
@pytest.mark.parametrize("ending", list(ENDINGS))
def test_every_way_a_run_ends_gives_the_connection_back(drive: Any, served: Any, ending: str, how: str) -> None:
    step, options, expected = ENDINGS[ending]
    endpoint = served(agent(step))
    http = one_connection(drive)
    store = MemoryStore()
    with drive.client(endpoint.url, http_client=http, store=store, timeout=POOL_WAIT, **options) as client:
        thread = client.thread()
        if isinstance(expected, str):
            assert run_or_stream(thread, how).outcome == expected
        else:
            with pytest.raises(expected):
                run_or_stream(thread, how)
        stored = store.load(thread.id)
        assert stored is None or stored.claim is None  # (a turn lets go of its thread, however it ended)
        check_pool_free(client, http, endpoint)


@pytest.mark.parametrize("ending", list(ENDINGS))
def test_the_clients_own_pool_counts_no_open_run_after_any_ending(drive: Any, served: Any, ending: str) -> None:
    # The client's own pool is in shards, each counting the runs it holds open (a shard is picked by
    # that count): a run that ended without giving its place back would count as open for good.
    step, options, expected = ENDINGS[ending]
    endpoint = served(agent(step))
    with drive.client(endpoint.url, timeout=POOL_WAIT, **options) as client:
        for how in ("run", "stream"):
            try:
                run_or_stream(client.thread(), how)
            except ag.AguiError:
                assert not isinstance(expected, str)
        shards = client.http._transport._shards
        assert shards and sum(shard.open for shard in shards) == 0


@pytest.mark.parametrize("leave", ["break-at-event-3", "block-left-unread", "caller-raises-at-event-3",
                                   "read-to-the-end", "get-final-result-after-one"])
def test_every_way_the_caller_leaves_a_stream_gives_the_connection_back(drive: Any, served: Any, leave: str) -> None:
    endpoint = served(agent(lambda r: [Start(), *text_message("m1", "one two three four five six"), Finish()]))
    http = one_connection(drive)
    with drive.client(endpoint.url, http_client=http, timeout=POOL_WAIT) as client:
        thread = client.thread()
        seen = 0
        try:
            with thread.stream("hi") as stream:
                if leave == "get-final-result-after-one":
                    next(iter(stream))
                    assert stream.get_final_result().outcome == "success"
                elif leave != "block-left-unread":
                    for _ in stream:
                        seen += 1
                        if seen == 3 and leave == "break-at-event-3":
                            break
                        if seen == 3 and leave == "caller-raises-at-event-3":
                            raise LookupError("the caller's own error")
        except LookupError:
            assert leave == "caller-raises-at-event-3"
        if leave in ("read-to-the-end", "get-final-result-after-one"):
            assert stream.result.outcome == "success"
        elif leave != "caller-raises-at-event-3":
            assert stream.result.outcome is None  # (left early: the result says so, TR-16)
        check_pool_free(client, http, endpoint)


def test_a_refused_resume_sends_nothing_and_holds_no_connection(drive: Any, served: Any) -> None:
    endpoint = served(agent(lambda r: [Start(), asked("ask-1")]))
    http = one_connection(drive)
    with drive.client(endpoint.url, http_client=http, timeout=POOL_WAIT) as client:
        thread = client.thread()
        assert thread.run("hi").outcome == "interrupt"
        sent = endpoint.agent.request_count
        with pytest.raises(ag.ResumeRefused):
            thread.run("a new turn past the question")
        with pytest.raises(ag.ResumeRefused):
            thread.run(resume=[ag.ResumeEntry(interrupt_id="not-asked", status="cancelled")])
        assert endpoint.agent.request_count == sent
        check_pool_free(client, http, endpoint)


@pytest.mark.parametrize("handler", ["raises", "returns"])
def test_a_tool_loop_whose_handler_raises_gives_the_connection_back(drive: Any, served: Any, handler: str) -> None:
    def first(run_input: Any) -> Any:
        if any(isinstance(m, ag.ToolMessage) for m in run_input.messages):
            return reply(run_input)
        return [Start(), *tool_call("call-1", "lookup", {"q": "x"}), Finish()]

    endpoint = served(agent(first))
    http = one_connection(drive)

    def lookup(q: str) -> str:
        if handler == "raises":
            raise RuntimeError("the handler failed")
        return "found"

    with drive.client(endpoint.url, http_client=http, timeout=POOL_WAIT) as client:
        thread = client.thread(tool_handlers={"lookup": lookup})
        assert thread.run_until_done("look it up").outcome == "success"
        assert endpoint.agent.request_count == 2  # (the failure was reported to the agent, in a second run)
        check_pool_free(client, http, endpoint)


@pytest.mark.parametrize("leave", ["break-in-the-second-run", "caller-raises-in-the-second-run", "read-to-the-end"])
def test_every_way_the_caller_leaves_a_streamed_tool_loop_gives_the_connection_back(
        drive: Any, served: Any, leave: str) -> None:
    def first(run_input: Any) -> Any:
        if any(isinstance(m, ag.ToolMessage) for m in run_input.messages):
            return [Start(), *text_message("m-2", "one two three four five"), Finish()]
        return [Start(), *tool_call("call-1", "lookup", {"q": "x"}), Finish()]

    endpoint = served(agent(first))
    http = one_connection(drive)
    with drive.client(endpoint.url, http_client=http, timeout=POOL_WAIT) as client:
        thread = client.thread(tool_handlers={"lookup": lambda q: "found"})
        try:
            with thread.stream_until_done("look it up") as loop:
                for event in loop:
                    if isinstance(event, ag.TextMessageContentEvent) and leave != "read-to-the-end":
                        if leave == "caller-raises-in-the-second-run":
                            raise LookupError("the caller's own error")
                        break
        except LookupError:
            assert leave == "caller-raises-in-the-second-run"
        assert endpoint.agent.request_count == 2
        if leave == "break-in-the-second-run":
            assert loop.result.outcome is None
        check_pool_free(client, http, endpoint)


def test_the_low_level_payload_iterator_left_early_gives_the_connection_back(drive: Any, served: Any) -> None:
    endpoint = served(agent(lambda r: [Start(), *text_message("m1", "one two three four"), Finish()]))
    http = one_connection(drive)
    with drive.client(endpoint.url, http_client=http, timeout=POOL_WAIT) as client:
        run_input = ag.RunAgentInput(thread_id="t-low", run_id="r-low", messages=(
            ag.UserMessage(id="u1", content="hi"),))
        with client.open(run_input) as payloads:
            for _ in payloads:
                break
        check_pool_free(client, http, endpoint)


def test_a_sync_stream_dropped_without_closing_gives_everything_back_when_collected(served: Any) -> None:
    # The caller entered the stream by hand, read two events and dropped it: the generator's
    # finalizer closes the response and gives the thread back, as leaving the block would.
    endpoint = served(agent(lambda r: [Start(), *text_message("m1", "one two three four"), Finish()]))
    store = MemoryStore()
    with httpx.Client(limits=httpx.Limits(max_connections=1)) as http, \
            ag.AgentClient(endpoint.url, http_client=http, store=store, timeout=POOL_WAIT) as client:
        thread = client.thread()
        manager = thread.stream("hi")
        events = iter(manager.__enter__())
        next(events), next(events)
        assert in_flight(http) == 1 and store.load(thread.id).claim is not None  # type: ignore[union-attr]
        del manager, events
        gc.collect()
        assert store.load(thread.id).claim is None  # type: ignore[union-attr]
        assert thread.run("again").outcome == "success"  # (the object is free for its next run)
        check_pool_free(client, http, endpoint)


@pytest.mark.parametrize("ending", ["oversized-event", "byte-budget"])
def test_a_stream_cut_by_a_limit_has_given_its_connection_back_when_the_error_arrives(
        drive: Any, served: Any, ending: str) -> None:
    # The async reader let go of httpx's reader, and with it httpcore's generators, before closing the
    # response: collected open, their finalizer began the close in a task of its own, and the client's
    # own close, finding it begun, returned with the connection still counted in the pool (about one
    # time in two here). Repeated, so that such a race cannot pass by luck.
    step, options, expected = ENDINGS[ending]
    endpoint = served(agent(step))
    http = one_connection(drive)
    with drive.client(endpoint.url, http_client=http, store=MemoryStore(), timeout=POOL_WAIT, **options) as client:
        for _ in range(20):
            with pytest.raises(expected):
                run_or_stream(client.thread(), "stream")
            assert in_flight(http) == 0
