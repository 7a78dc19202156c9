"""Retries (``max_retries``): a request is sent again only when the agent certainly did not act on it.

Every ``drive`` test runs through both shells against a real ``ScriptedAgent`` on 127.0.0.1, which
records every request it received: "sent again" and "not sent again" are counts of requests. No test
waits on a clock: the agent's ``Retry-After: 0`` or ``retry_backoff=0`` makes the waits nothing.
"""

from __future__ import annotations

import email.utils
import logging
import math
import socket
import threading
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

import anyio
import httpx
import pytest
from serverkit import read_request
from threadkit import UTC, interrupted

import agui_client as ag
from agui_client._async import retries as async_retries
from agui_client._sync import retries as sync_retries
from agui_client.stores import MemoryStore
from agui_client.testing import Finish, Respond, ScriptedAgent, Start

BUSY = Respond(status=503, body={"detail": "busy"}, headers={"Retry-After": "0"})


class CountingStore(MemoryStore):
    """A memory store that lists the writes it was asked for, in order (the reads are left out)."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[str] = []

    def save(self, thread_id: str, data: Mapping[str, Any], **kwargs: Any) -> int:
        self.writes.append("save")
        return super().save(thread_id, data, **kwargs)

    def append(self, thread_id: str, changes: Mapping[str, Any], **kwargs: Any) -> int:
        self.writes.append("append")
        return super().append(thread_id, changes, **kwargs)

    def claim(self, thread_id: str, **kwargs: Any) -> int:
        self.writes.append("claim")
        return super().claim(thread_id, **kwargs)

    def release(self, thread_id: str, **kwargs: Any) -> int:
        self.writes.append("release")
        return super().release(thread_id, **kwargs)


def _refused_url() -> str:
    with socket.socket() as probe:  # (bound, never listening, then closed: a connection is refused)
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}/agent"


def _retry_records(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "sending the request again" in r.getMessage()]


def test_two_503_answers_then_a_run_are_one_run_in_the_thread_and_the_store(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent([BUSY, BUSY, [Start(), Finish()]]))
    reference = served(ScriptedAgent([[Start(), Finish()]]))
    retried_store, reference_store = CountingStore(), CountingStore()

    with drive.client(endpoint.url, store=retried_store, max_retries=2) as client:
        thread = client.thread("t1")
        result = thread.run("hi")
        messages = thread.state.messages
    with drive.client(reference.url, store=reference_store) as client:
        client.thread("t1").run("hi")

    assert result.outcome == "success"
    assert endpoint.agent.request_count == 3
    assert len({request.run_id for request in endpoint.agent.requests}) == 1  # (the same request, sent again)
    assert [m.content for m in messages] == ["hi"]
    assert retried_store.writes == reference_store.writes  # (the store saw one run, as without the 503s)
    assert [m["content"] for m in retried_store.load("t1").data["messages"]] == ["hi"]


def test_a_429_whose_retry_after_date_has_passed_is_retried_at_once(drive: Any, served: Any) -> None:
    past = email.utils.format_datetime(datetime.now(UTC) - timedelta(hours=1), usegmt=True)
    endpoint = served(ScriptedAgent([Respond(status=429, body="slow down", headers={"Retry-After": past}),
                                     [Start(), Finish()]]))

    with drive.client(endpoint.url, max_retries=1) as client:
        result = client.thread().run("hi")

    assert result.outcome == "success" and endpoint.agent.request_count == 2


@pytest.mark.parametrize("status", [500, 502, 504, 408])
def test_an_answer_a_gateway_may_send_after_the_agent_acted_is_never_retried(
    drive: Any, served: Any, status: int
) -> None:
    endpoint = served(ScriptedAgent([Respond(status=status, body="no", headers={"Retry-After": "0"}),
                                     [Start(), Finish()]]))

    with drive.client(endpoint.url, max_retries=3, retry_backoff=0) as client:
        with pytest.raises(ag.HTTPStatusError) as caught:
            client.thread().run("hi")

    assert caught.value.status_code == status
    assert endpoint.agent.request_count == 1
    assert caught.value.tries == 1 and "tries" not in str(caught.value)


def test_a_503_without_retry_after_is_never_retried(drive: Any, served: Any) -> None:
    # A proxy's 503 for an agent that failed mid-request (Envoy's "upstream connect error or
    # disconnect/reset before headers") has no Retry-After, and the agent may have acted.
    endpoint = served(ScriptedAgent([Respond(status=503, body="upstream connect error or disconnect/reset "
                                                               "before headers"), [Start(), Finish()]]))

    with drive.client(endpoint.url, max_retries=3, retry_backoff=0) as client:
        with pytest.raises(ag.HTTPStatusError) as caught:
            client.thread().run("hi")

    assert caught.value.status_code == 503 and caught.value.retry_after is None
    assert endpoint.agent.request_count == 1 and caught.value.tries == 1


def test_a_retry_after_past_the_cap_is_not_waited_for(drive: Any, served: Any,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    # (just past the cap: were the cap gone, the test would fail a minute later, not hang for an hour)
    endpoint = served(ScriptedAgent([Respond(status=503, body="down a while", headers={"Retry-After": "61"}),
                                     [Start(), Finish()]]))

    with caplog.at_level(logging.INFO, logger="agui_client"), drive.client(endpoint.url, max_retries=2) as client:
        with pytest.raises(ag.HTTPStatusError) as caught:
            client.thread().run("hi")

    assert (caught.value.status_code, caught.value.retry_after, caught.value.tries) == (503, 61.0, 1)
    assert endpoint.agent.request_count == 1
    assert any("past the 60s the client waits at most" in r.getMessage() for r in caplog.records)


def test_a_wait_that_would_pass_the_run_timeout_is_not_made(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent([Respond(status=503, body="busy", headers={"Retry-After": "30"}),
                                     [Start(), Finish()]]))

    with drive.client(endpoint.url, max_retries=2, run_timeout=5) as client:
        with pytest.raises(ag.HTTPStatusError) as caught:
            client.thread().run("hi")

    assert caught.value.status_code == 503 and endpoint.agent.request_count == 1


def test_a_resume_met_by_a_503_is_sent_again_and_acted_on_once(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent([[Start(), interrupted("ask-1")], BUSY, [Start(), Finish()], [Start(), Finish()]]))

    with drive.client(endpoint.url, max_retries=1) as client:
        thread = client.thread()
        thread.run("hi")
        result = thread.run(resume=thread.resume_builder().answer("ask-1", "go"))
        after = thread.run("and then")  # (the claim the resume held across its tries was given back)

    first_resume, second_resume = endpoint.agent.requests[1:3]
    assert result.outcome == "success" and after.outcome == "success"
    assert endpoint.agent.request_count == 4
    assert first_resume == second_resume  # the same answers, the same run id: the agent acted on the second only
    assert [(e.interrupt_id, e.payload) for e in second_resume.resume or ()] == [("ask-1", "go")]
    assert thread.state.open_interrupts == ()


def test_an_answer_whose_interrupt_expired_while_the_retry_waited_is_not_sent_again(drive: Any, served: Any) -> None:
    # Expiry is judged before the first try; a try the agent did not serve (503) is sent again later,
    # and by then the interrupt may have expired: judged again before each try, the answer is refused,
    # nothing more is sent and the thread is given back (it can still abandon the interrupt).
    expires = datetime(2026, 7, 1, 12, tzinfo=UTC)
    now = [expires - timedelta(seconds=1)]

    def busy_until_expired(run_input: Any) -> Respond:
        now[0] = expires  # (the agent's 503 arrives as the interrupt expires)
        return BUSY

    endpoint = served(ScriptedAgent([[Start(), interrupted("ask-1", expires_at="2026-07-01T12:00:00Z")],
                                     busy_until_expired, [Start(), Finish()]]))

    with drive.client(endpoint.url, max_retries=1, clock=lambda: now[0]) as client:
        thread = client.thread()
        thread.run("rotate the keys")
        answer = thread.resume_builder().answer("ask-1", "go")
        with pytest.raises(ag.ExpiredInterruptAnswered) as refused:
            thread.run(resume=answer)
        assert refused.value.ids == ("ask-1",)
        assert isinstance(refused.value.__cause__, ag.HTTPStatusError)
        assert endpoint.agent.request_count == 2  # (the busy try only: not sent again)
        result = thread.run(resume=thread.resume_builder().abandon("ask-1"))

    assert result.outcome == "success" and thread.state.open_interrupts == ()
    assert [(e.interrupt_id, e.status) for e in endpoint.agent.requests[2].resume or ()] == [("ask-1", "cancelled")]


def test_a_refused_connection_is_tried_max_retries_more_times_then_raised_with_the_count(
    drive: Any, caplog: pytest.LogCaptureFixture
) -> None:
    token = {"Authorization": "Bearer s3cr3t-t0k3n"}
    with caplog.at_level(logging.INFO, logger="agui_client"), \
            drive.client(_refused_url(), max_retries=2, retry_backoff=0, headers=token) as client:
        with pytest.raises(ag.TransportError) as caught:
            client.thread().run("hi")

    assert type(caught.value) is ag.TransportError and caught.value.request_sent is False
    assert caught.value.tries == 3 and str(caught.value).endswith("(after 3 tries)")
    assert [m.split("; ", 1)[1] for m in _retry_records(caplog)] == [
        "sending the request again in 0.00s (try 2 of 3)", "sending the request again in 0.00s (try 3 of 3)"]
    assert not any("s3cr3t-t0k3n" in r.getMessage() for r in caplog.records)


def test_one_retry_is_two_tries_and_the_error_says_so(drive: Any) -> None:
    # (the count is written on the error from the second try on, not only from the third)
    with drive.client(_refused_url(), max_retries=1, retry_backoff=0) as client:
        with pytest.raises(ag.TransportError) as caught:
            client.thread().run("hi")

    assert caught.value.tries == 2 and str(caught.value).endswith("(after 2 tries)")


def test_a_retry_waits_its_backoff_before_sending_again(drive: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # retry_backoff=0.2: the one wait is 0.1 to 0.2 s (the jitter shortens it by up to half); a loop that
    # did not wait would send again at once, as fast as the refusals come. The waits are recorded where
    # each shell's retry loop makes them (its client_io's pause), not timed.
    waits: list[float] = []

    async def asleep(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr(sync_retries, "pause", waits.append)
    monkeypatch.setattr(async_retries, "pause", asleep)
    with drive.client(_refused_url(), max_retries=1, retry_backoff=0.2) as client:
        with pytest.raises(ag.TransportError) as caught:
            client.thread().run("hi")

    assert caught.value.tries == 2
    assert len(waits) == 1 and 0.1 <= waits[0] <= 0.2


def test_a_connection_that_timed_out_is_tried_again(drive: Any) -> None:
    # A listening socket whose backlog one connection fills: Linux drops the SYNs that follow, so the
    # connection never completes (ConnectTimeout), and the agent certainly saw nothing of the request.
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    host, port = listener.getsockname()
    filler = socket.create_connection((host, port))
    try:
        with drive.client(f"http://{host}:{port}/agent", timeout=0.2, max_retries=1, retry_backoff=0) as client:
            with pytest.raises(ag.ConnectTimeout) as caught:
                client.thread().run("hi")
    finally:
        filler.close()
        listener.close()

    assert caught.value.tries == 2 and caught.value.request_sent is False


def test_a_failed_tls_handshake_is_not_retried(drive: Any, served: Any, caplog: pytest.LogCaptureFixture) -> None:
    # https:// to the plain-HTTP server: the handshake fails the same way every time.
    endpoint = served(ScriptedAgent([[Start(), Finish()]]))

    with caplog.at_level(logging.INFO, logger="agui_client"), \
            drive.client(endpoint.url.replace("http://", "https://"), max_retries=2, retry_backoff=0) as client:
        with pytest.raises(ag.TransportError) as caught:
            client.thread().run("hi")

    assert caught.value.request_sent is False and caught.value.tries == 1
    assert _retry_records(caplog) == []


def test_max_retries_0_is_the_default_and_sends_once(drive: Any, served: Any,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    endpoint = served(ScriptedAgent([BUSY, [Start(), Finish()]]))

    with caplog.at_level(logging.DEBUG, logger="agui_client"), drive.client(endpoint.url) as client:
        assert client.max_retries == 0
        with pytest.raises(ag.HTTPStatusError) as caught:
            client.thread().run("hi")

    assert endpoint.agent.request_count == 1
    assert caught.value.tries == 1 and "(after " not in str(caught.value)  # (no count of tries: one was made)
    assert not any("sent again" in r.getMessage() or "again in" in r.getMessage() for r in caplog.records)


def _get_answered(status: int, agent: ScriptedAgent) -> Any:
    """``agent``, but a ``GET`` (the one a 303 of its sends the client to) is answered ``status`` with
    ``Retry-After: 0``."""
    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "GET":
            await agent(scope, receive, send)
            return
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"text/plain"), (b"retry-after", b"0")]})
        await send({"type": "http.response.body", "body": b"busy"})
    return app


#: The agent's answer to the run: taken, and its answer is at the same URL (a relative ``Location``).
SEE_OTHER = Respond(status=303, headers={"Location": "agent"})


@pytest.mark.parametrize("status", [503, 429])
def test_a_busy_answer_to_the_get_a_see_other_asked_for_never_sends_the_run_again(
    drive: Any, served: Any, status: int, caplog: pytest.LogCaptureFixture
) -> None:
    # The 303 says the agent took the run; the 503 answers the GET after it, and says nothing of the
    # run: the POST was sent again, a second run of the same turn.
    agent = ScriptedAgent([SEE_OTHER, [Start(), Finish()]])
    endpoint = served(_get_answered(status, agent))

    with caplog.at_level(logging.INFO, logger="agui_client"), \
            drive.client(endpoint.url, max_retries=2, follow_redirects=True) as client:
        with pytest.raises(ag.HTTPStatusError) as caught:
            client.thread().run("hi")

    assert caught.value.status_code == status and caught.value.request.method == "GET"
    assert agent.request_count == 1 and caught.value.tries == 1
    assert _retry_records(caplog) == []


def _see_other_then_gone() -> tuple[str, list[bytes], threading.Thread]:
    """A raw agent taking one run: it reads the POST, stops listening, then answers 303 (so the GET the
    303 asks for finds the port closed); what it received, the request lines, is listed."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    received: list[bytes] = []

    def serve() -> None:
        connection, _ = listener.accept()
        with connection:
            head, _ = read_request(lambda: connection.recv(65536))
            received.append(head.split(b"\r\n", 1)[0])
            listener.close()
            connection.sendall(b"HTTP/1.1 303 See Other\r\nlocation: /runs/r\r\ncontent-length: 0\r\n"
                               b"connection: close\r\n\r\n")

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    return f"http://127.0.0.1:{listener.getsockname()[1]}/agent", received, server


def test_a_refused_connection_for_the_get_a_see_other_asked_for_never_sends_the_run_again(
    drive: Any, caplog: pytest.LogCaptureFixture
) -> None:
    # The run reached the agent (its 303 says so); only the GET after it found no connection. That
    # failure said request_sent=False, "could not reach" the agent: the POST was sent again.
    url, received, server = _see_other_then_gone()

    with caplog.at_level(logging.INFO, logger="agui_client"), \
            drive.client(url, max_retries=1, retry_backoff=0, follow_redirects=True) as client:
        with pytest.raises(ag.TransportError) as caught:
            client.thread().run("hi")
    server.join(10)

    assert caught.value.request_sent is True and caught.value.tries == 1
    assert "took the run and sent the client on (303)" in str(caught.value)
    assert received == [b"POST /agent HTTP/1.1"] and _retry_records(caplog) == []


def test_a_503_whose_body_is_an_event_stream_is_not_sent_again(drive: Any, served: Any) -> None:
    # Events under a 503 may be the run's own (an agent that started it, then set the wrong status):
    # the answer does not say the agent served nothing.
    events = b'data: {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}\n\n'
    endpoint = served(ScriptedAgent([Respond(status=503, body=events, content_type="text/event-stream",
                                             headers={"Retry-After": "0"}), [Start(), Finish()]]))

    with drive.client(endpoint.url, max_retries=2) as client:
        with pytest.raises(ag.HTTPStatusError) as caught:
            client.thread("t").run("hi", run_id="r")

    assert caught.value.status_code == 503 and caught.value.tries == 1
    assert endpoint.agent.request_count == 1


class _DeliversThenFails(httpx.BaseTransport, httpx.AsyncBaseTransport):
    """A caller's transport, which reports nothing of its progress: it delivers the request through httpx's
    own, then raises ``ConnectError``, as one that tries again on its own does when its second try finds
    the agent gone."""

    def __init__(self) -> None:
        self.inner, self.async_inner = httpx.HTTPTransport(), httpx.AsyncHTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.inner.handle_request(request).close()
        raise httpx.ConnectError("the agent went away", request=request)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        await (await self.async_inner.handle_async_request(request)).aclose()
        raise httpx.ConnectError("the agent went away", request=request)

    def close(self) -> None:
        self.inner.close()

    async def aclose(self) -> None:
        await self.async_inner.aclose()


def test_a_connect_error_through_a_transport_that_reports_nothing_is_not_sent_again(drive: Any, served: Any) -> None:
    # The client cannot see what such a transport did before its ConnectError: the request counts as
    # sent once handed over (StreamHandle), and was sent again, to an agent that had taken it.
    endpoint = served(ScriptedAgent([[Start(), Finish()]] * 3))

    with drive.client(endpoint.url, max_retries=2, retry_backoff=0,
                      http_client=drive.http_client(_DeliversThenFails())) as client:
        with pytest.raises(ag.TransportError) as caught:
            client.thread().run("hi")

    assert caught.value.tries == 1 and endpoint.agent.request_count == 1


class _TimeoutsSeen(httpx.BaseTransport, httpx.AsyncBaseTransport):
    """httpx's own transport, noting each request's connect timeout (``passes_through``: the client sees
    httpx's own, which reports its progress)."""

    passes_through = True

    def __init__(self) -> None:
        self.inner, self.async_inner = httpx.HTTPTransport(), httpx.AsyncHTTPTransport()
        self.connect: list[float] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.connect.append(request.extensions["timeout"]["connect"])
        return self.inner.handle_request(request)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.connect.append(request.extensions["timeout"]["connect"])
        return await self.async_inner.handle_async_request(request)

    def close(self) -> None:
        self.inner.close()

    async def aclose(self) -> None:
        await self.async_inner.aclose()


def test_a_request_sent_again_through_a_client_you_pass_waits_no_longer_than_the_run_has_left(
    drive: Any, served: Any
) -> None:
    # A client you pass is bounded by the timeouts each request is given: the try after a 1 s wait was
    # given the run's whole run_timeout again, and could end that second past the run's deadline.
    endpoint = served(ScriptedAgent([Respond(status=503, body="busy", headers={"Retry-After": "1"}),
                                     [Start(), Finish()]]))
    seen = _TimeoutsSeen()

    with drive.client(endpoint.url, max_retries=1, run_timeout=5, http_client=drive.http_client(seen)) as client:
        assert client.thread().run("hi").outcome == "success"

    first, second = seen.connect
    assert 4.5 < first <= 5 and second <= 4.0


@pytest.mark.parametrize(("keywords", "named"), [
    ({"max_retries": -1}, "max_retries"), ({"max_retries": 1.5}, "max_retries"), ({"max_retries": True}, "max_retries"),
    ({"retry_backoff": -0.1}, "retry_backoff"), ({"retry_backoff": math.nan}, "retry_backoff"),
    ({"retry_backoff": "1"}, "retry_backoff"), ({"retry_backoff": True}, "retry_backoff"),
])
def test_a_retry_setting_out_of_range_is_refused_when_the_client_is_made(
    drive: Any, keywords: dict[str, Any], named: str
) -> None:
    with pytest.raises(ValueError) as caught:
        drive.client("http://127.0.0.1:9/agent", **keywords)

    assert str(caught.value).startswith(named)


@pytest.mark.anyio
async def test_cancelling_a_resume_during_the_wait_ends_it_at_once_sends_nothing_more_and_frees_the_thread(
    served: Any,
) -> None:
    endpoint = served(ScriptedAgent([[Start(), interrupted("ask-1")],
                                     Respond(status=503, body="busy", headers={"Retry-After": "50"}),
                                     [Start(), Finish()]]))
    waiting = anyio.Event()

    class Waiting(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "sending the request again" in record.getMessage():
                waiting.set()  # (logged just before the wait, by the task that waits: on the loop)

    handler = Waiting(level=logging.INFO)
    logger = logging.getLogger("agui_client")
    previous = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        store = MemoryStore()
        async with ag.AsyncAgentClient(endpoint.url, max_retries=3, store=store) as client:
            thread = client.thread("t1")
            await thread.run("hi")
            resume = thread.resume_builder().answer("ask-1", "go")
            with anyio.fail_after(20):  # (far below the 50 s asked for: the cancellation ended the wait)
                async with anyio.create_task_group() as group:
                    group.start_soon(lambda: thread.run(resume=resume))
                    await waiting.wait()
                    group.cancel_scope.cancel()
            sent_before = endpoint.agent.request_count
            result = await thread.run(resume=thread.resume_builder().answer("ask-1", "go"))
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous)

    # Nothing more was sent after the cancellation; the agent acted on none of the resume's tries, so
    # the thread was not left claimed: the same answers go at once, without release_claim().
    assert sent_before == 2
    assert result.outcome == "success" and endpoint.agent.request_count == 3


def test_a_client_closed_while_a_retry_waits_sends_nothing_more_and_says_so(
    drive: Any, served: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The client closed (by another thread or task) while a run waited to send its request again: the
    # resend met httpx's closed client, whose bare RuntimeError ("the client has been closed") said nothing
    # of this run, nor of the close; every other run in flight that a close cuts carries the note.
    endpoint = served(ScriptedAgent([BUSY, [Start(), Finish()]]))
    store = MemoryStore()
    with drive.client(endpoint.url, max_retries=1, store=store) as client:
        target = getattr(client, "_target", client)  # (the async shell's own client, behind the test's wrapper)

        async def aclose_meanwhile(seconds: float) -> None:
            await target.close()

        monkeypatch.setattr(sync_retries, "pause", lambda seconds: target.close())
        monkeypatch.setattr(async_retries, "pause", aclose_meanwhile)
        with pytest.raises(ag.HTTPStatusError) as failed:  # (the last try's failure, as the agent answered it)
            client.thread("t1").run("hi")

    assert failed.value.status_code == 503
    assert failed.value.__notes__ == ["the client was closed while this run was in flight"]
    assert endpoint.agent.request_count == 1  # (the busy try only)
    stored = store.load("t1")
    assert stored is None or stored.claim is None  # (the turn gave the thread back)


def test_a_retry_leaves_the_global_random_generator_as_it_was(drive: Any, served: Any) -> None:
    """The jitter comes from the client's own generator: the ``random`` module's is the application's (seeded
    for a reproducible run, or a property test's, which Hypothesis watches while it draws: a retry in another
    thread that moved it then failed the draw with ``HypothesisDeprecationWarning``)."""
    import random

    endpoint = served(ScriptedAgent([BUSY, BUSY, [Start(), Finish()]]))
    random.seed(25)
    before = random.getstate()
    with drive.client(endpoint.url, max_retries=2) as client:
        assert client.thread().run("hi").outcome == "success"

    assert endpoint.agent.request_count == 3  # (two retries, each with its jitter)
    assert random.getstate() == before
