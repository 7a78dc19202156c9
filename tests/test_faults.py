"""Faults a real server cannot produce on demand, through both shells (STYLE §3.5).

A respx router plugged in with ``httpx.MockTransport(router.handler)`` (no patching) answers the
requests; bodies are generator streams (``drive.body``) so that limits and early closes are exercised
on the streaming path, never on a body httpx already read whole.
"""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import respx
from wirekit import sse as frames

import agui_client as ag

URL = "http://agent.test/run"
KiB = 2**10
MiB = 2**20
GiB = 2**30


@pytest.fixture
def router() -> Iterator[respx.Router]:
    """A respx router whose every route must have been called by the end of the test."""
    mock = respx.Router(assert_all_called=True, assert_all_mocked=True)
    yield mock
    mock.assert_all_called()


def ids(request: httpx.Request) -> dict[str, str]:
    body = json.loads(request.content)
    return {"threadId": body["threadId"], "runId": body["runId"]}


def sse(body: Any) -> httpx.Response:
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=body)


@pytest.mark.parametrize(("fault", "error"), [(httpx.ConnectError, ag.TransportError),
                                              (httpx.ConnectTimeout, ag.ConnectTimeout)])
def test_an_unreachable_agent_is_a_transport_error_that_sent_nothing(
    drive: Any, router: respx.Router, fault: type[Exception], error: type[Exception]
) -> None:
    # B081: a connect timeout is a typed timeout (a TransportError that never sent anything), with a
    # message that says so on both shells (httpx's async one is empty).
    router.post(URL).mock(side_effect=fault)

    with drive.client(URL, http_client=drive.mock(router.handler), timeout=2.5) as client:
        thread = client.thread()
        with pytest.raises(ag.TransportError) as caught:
            thread.run("hi")

    assert type(caught.value) is error
    if error is ag.ConnectTimeout:
        assert caught.value.timeout == 2.5 and "within 2.5s" in str(caught.value)  # type: ignore[attr-defined]
        assert str(caught.value).endswith("(the client's timeout): is the agent up, and reachable from here?")
    assert caught.value.request_sent is False
    assert caught.value.url == URL
    assert isinstance(caught.value.__cause__, fault)
    assert thread.state.messages == ()


def test_a_huge_error_body_is_read_only_up_to_a_bounded_excerpt(drive: Any, router: respx.Router) -> None:
    chunk = b"<p>" + b"x" * (64 * KiB - 7) + b"</p>\n"
    body = drive.body(lambda: (chunk for _ in range(5 * MiB // len(chunk) + 1)))
    router.post(URL).mock(return_value=httpx.Response(503, headers={"content-type": "text/html"}, stream=body))

    with drive.client(URL, http_client=drive.mock(router.handler)) as client:
        with pytest.raises(ag.HTTPStatusError) as caught:
            client.thread().run("hi")

    assert caught.value.status_code == 503
    assert 0 < len(caught.value.body.encode()) <= 2 * KiB
    assert caught.value.payload is None
    assert body.pulled_bytes <= 2 * KiB + len(chunk)
    assert body.closed


def test_breaking_out_of_the_events_closes_the_response_and_stops_folding(
    drive: Any, router: respx.Router
) -> None:
    def respond(request: httpx.Request) -> httpx.Response:
        run = ids(request)

        def chunks() -> Iterator[bytes]:
            yield frames({"type": "RUN_STARTED", **run})
            yield frames({"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"})
            for n in range(100):
                yield frames({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": f"w{n} "})
            yield frames({"type": "TEXT_MESSAGE_END", "messageId": "m1"})
            yield frames({"type": "RUN_FINISHED", **run})

        bodies.append(drive.body(chunks))
        return sse(bodies[-1])

    bodies: list[Any] = []
    router.post(URL).mock(side_effect=respond)

    with drive.client(URL, http_client=drive.mock(router.handler)) as client:
        thread = client.thread()
        with thread.stream("hi") as events:
            for event in events:
                if isinstance(event, ag.TextMessageStartEvent):
                    break

    [body] = bodies
    assert body.closed
    assert body.pulled_chunks < 10
    assert events.result is not None
    assert events.result.outcome is None
    assert [m.content for m in thread.state.messages if isinstance(m, ag.AssistantMessage)] == [""]


@pytest.mark.parametrize("shape", ["one endless line", "endless data lines"])
def test_a_gigabyte_event_is_refused_at_the_size_limit_in_bounded_memory(
    drive: Any, router: respx.Router, shape: str
) -> None:
    limit = 4 * MiB
    piece = b"a" * MiB if shape == "one endless line" else b"data: " + b"a" * (MiB - 7) + b"\n"

    def respond(request: httpx.Request) -> httpx.Response:
        run = ids(request)

        def chunks() -> Iterator[bytes]:
            yield frames({"type": "RUN_STARTED", **run})
            yield b'data: {"type":"CUSTOM","name":"big","value":"'
            for _ in range(GiB // len(piece)):
                yield piece

        bodies.append(drive.body(chunks))
        return sse(bodies[-1])

    bodies: list[Any] = []
    router.post(URL).mock(side_effect=respond)

    with drive.client(URL, http_client=drive.mock(router.handler), max_event_bytes=limit) as client:
        thread = client.thread()
        tracemalloc.start()
        try:
            with pytest.raises(ag.LimitExceeded) as caught:
                thread.run("hi")
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()

    [body] = bodies
    assert caught.value.limit == limit
    assert body.pulled_bytes < 2 * limit
    assert body.closed
    assert peak < 3 * limit
    assert caught.value.index == 1
    assert caught.value.run_id == thread.state.runs[-1].run_id
    assert caught.value.result is not None
    assert caught.value.result.run_id == caught.value.run_id


def test_a_read_error_mid_run_ends_the_stream_keeping_what_was_folded(drive: Any, router: respx.Router) -> None:
    def respond(request: httpx.Request) -> httpx.Response:
        run = ids(request)

        def chunks() -> Iterator[bytes]:
            yield frames({"type": "RUN_STARTED", **run})
            yield frames({"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"})
            yield frames({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "partial"})
            raise httpx.ReadError("connection reset by peer")

        return sse(drive.body(chunks))

    router.post(URL).mock(side_effect=respond)

    with drive.client(URL, http_client=drive.mock(router.handler)) as client:
        with pytest.raises(ag.StreamEnded) as caught:
            client.thread().run("hi")

    assert caught.value.result is not None
    assert caught.value.result.outcome is None
    assert caught.value.result.state.incomplete_ids == {"m1"}
    message = caught.value.result.state.message("m1")
    assert isinstance(message, ag.AssistantMessage)
    assert message.content == "partial"
