"""The HTTP exchange: status errors, content types, compression, redirects, transport errors.

Every test body runs through both shells (``drive``: sync and async) against a real ``ScriptedAgent``
served by uvicorn on 127.0.0.1; the agent records what it received, so "nothing was sent" is a count of
requests.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import socket
import threading
import zlib
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import httpx
import pytest
from threadkit import UTC

import agui_client as ag
from agui_client._answers import ERROR_BODY_LIMIT
from agui_client._client_base import MAX_REDIRECTS
from agui_client.testing import (
    Finish,
    KeepAlive,
    Respond,
    ScriptedAgent,
    Start,
    Stream,
    serve,
    text_message,
)
from agui_client.types import TextMessageContentEvent

KiB = 2**10


MiB = 2**20


NDJSON = b'{"type":"RUN_STARTED","threadId":"t","runId":"r"}\n{"type":"RUN_FINISHED","threadId":"t","runId":"r"}\n'


def _redirecting(location: str | None) -> Callable[..., Any]:
    # (None: back to the path asked, a loop)
    async def app(scope: Any, receive: Any, send: Any) -> None:
        target = location if location is not None else scope["path"]
        await send({"type": "http.response.start", "status": 307,
                    "headers": [(b"location", target.encode()), (b"content-length", b"0")]})
        await send({"type": "http.response.body", "body": b""})
    return app


def test_a_non_2xx_answer_is_an_http_status_error_with_the_parsed_payload(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent([Respond(status=400, body={"detail": "invalid input"})]))

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        with pytest.raises(ag.HTTPStatusError) as caught:
            thread.run("hi")

    assert caught.value.status_code == 400
    assert caught.value.payload == {"detail": "invalid input"}
    assert caught.value.retry_after is None
    assert caught.value.url == endpoint.url
    assert thread.state.messages == ()


@pytest.mark.parametrize("content_type", ["application/json", "application/problem+json",
                                          "application/vnd.api+json"])
def test_a_long_json_error_body_is_still_parsed_and_its_excerpt_bounded(
    drive: Any, served: Any, content_type: str
) -> None:
    # B054: a validation report is often longer than the excerpt kept; JSON media types (any +json)
    # are parsed from up to ERROR_JSON_LIMIT bytes, while .body stays a bounded excerpt.
    detail = [{"loc": ["body", "messages", i], "msg": "field required"} for i in range(80)]
    endpoint = served(ScriptedAgent([Respond(status=422, body=json.dumps({"detail": detail}),
                                             content_type=content_type)]))

    with drive.client(endpoint.url) as client:
        with pytest.raises(ag.HTTPStatusError) as caught:
            client.thread().run("hi")

    assert caught.value.payload == {"detail": detail}
    assert len(caught.value.body) <= ERROR_BODY_LIMIT < len(json.dumps({"detail": detail}))


def test_a_json_error_body_nested_deeper_than_the_parser_goes_is_kept_as_text(drive: Any, served: Any) -> None:
    # 60,000 "[" in a JSON error body (within ERROR_JSON_LIMIT): the parser's recursion must not
    # escape as a crash; the error is the HTTPStatusError, with no payload.
    endpoint = served(ScriptedAgent([Respond(status=400, body="[" * 60_000, content_type="application/json")]))

    with drive.client(endpoint.url) as client:
        with pytest.raises(ag.HTTPStatusError) as caught:
            client.thread().run("hi")

    assert caught.value.status_code == 400 and caught.value.payload is None
    assert caught.value.body.startswith("[[[")


def test_a_401_is_an_authentication_error_that_never_repeats_the_credentials(drive: Any, served: Any) -> None:
    # B055: typed, not retried, and an agent echoing the token does not put it in our message or body.
    token = "sk-live-0123456789abcdef"
    endpoint = served(ScriptedAgent([Respond(status=401, body={"error": "unauthorized", "got": f"Bearer {token}"})]))

    with drive.client(endpoint.url, headers={"Authorization": f"Bearer {token}"}) as client:
        with pytest.raises(ag.AuthenticationError) as caught:
            client.thread().run("hi")

    assert caught.value.status_code == 401 and endpoint.agent.request_count == 1
    assert token not in str(caught.value) and token not in caught.value.body
    assert token not in json.dumps(caught.value.payload) and caught.value.payload["error"] == "unauthorized"


def test_retry_after_in_seconds_is_read_and_nothing_is_retried(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent([Respond(status=429, body={"detail": "slow down"}, headers={"Retry-After": "7"})]))

    with drive.client(endpoint.url) as client:
        with pytest.raises(ag.HTTPStatusError) as caught:
            client.thread().run("hi")

    assert caught.value.status_code == 429
    assert caught.value.retry_after == 7.0
    assert endpoint.agent.request_count == 1


def test_retry_after_as_an_http_date_is_read_as_seconds_from_now(drive: Any, served: Any) -> None:
    when = datetime.now(UTC) + timedelta(seconds=120)
    endpoint = served(ScriptedAgent([
        Respond(status=503, body="busy", headers={"Retry-After": email.utils.format_datetime(when, usegmt=True)})]))

    with drive.client(endpoint.url) as client:
        with pytest.raises(ag.HTTPStatusError) as caught:
            client.thread().run("hi")

    assert caught.value.retry_after is not None
    assert 60 < caught.value.retry_after <= 120


def test_the_body_of_an_error_is_kept_as_a_bounded_excerpt(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent([Respond(status=500, body="x" * (5 * MiB))]))

    with drive.client(endpoint.url) as client:
        with pytest.raises(ag.HTTPStatusError) as caught:
            client.thread().run("hi")

    assert caught.value.status_code == 500
    assert 0 < len(caught.value.body.encode()) <= 2 * KiB
    assert caught.value.payload is None


def test_a_refused_connection_is_a_transport_error_that_sent_nothing(drive: Any) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/agent"

    with drive.client(url) as client:
        with pytest.raises(ag.TransportError) as caught:
            client.thread().run("hi")

    assert type(caught.value) is ag.TransportError
    assert caught.value.request_sent is False


@pytest.mark.parametrize(("step", "arrived"), [
    pytest.param(Respond(status=200, body="<html><body>Please log in</body></html>",
                         content_type="text/html; charset=utf-8"), "text/html", id="B045-html"),
    pytest.param(Stream(items=[NDJSON], content_type="application/x-ndjson"), "application/x-ndjson",
                 id="B046-ndjson"),
    pytest.param(Respond(status=200, body={"detail": "queued"}), "application/json", id="json"),
])
def test_a_2xx_answer_that_is_not_an_event_stream_is_a_protocol_error_naming_what_arrived(
    drive: Any, served: Any, step: Any, arrived: str
) -> None:
    endpoint = served(ScriptedAgent([step]))

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        with pytest.raises(ag.ProtocolError) as caught:
            thread.run("hi")

    assert arrived in str(caught.value)
    assert caught.value.rule in ("TR-04", "TR-09")
    assert all(run.outcome is None for run in thread.state.runs)


@pytest.mark.parametrize("items", [
    pytest.param([], id="B050-empty"),
    pytest.param([KeepAlive(comment="ping"), KeepAlive(comment="ping")], id="B051-only-comments"),
])
def test_an_event_stream_without_events_ends_the_run_unfinished(drive: Any, served: Any, items: list[Any]) -> None:
    endpoint = served(ScriptedAgent([Stream(items=items)]))

    with drive.client(endpoint.url) as client:
        with pytest.raises(ag.StreamEnded) as caught:
            client.thread().run("hi")

    assert caught.value.result is not None
    assert caught.value.result.outcome is None
    assert caught.value.result.events == 0


@pytest.mark.parametrize("content_type", ["text/event-stream; charset=utf-8", "Text/Event-Stream"])
def test_event_stream_content_types_are_matched_loosely(drive: Any, served: Any, content_type: str) -> None:
    endpoint = served(ScriptedAgent([
        Stream(items=[Start(), *text_message("m1", "fine"), Finish()], content_type=content_type)]))

    with drive.client(endpoint.url) as client:
        result = client.thread().run("hi")

    assert result.outcome == "success"
    assert result.text == "fine"
    assert [w.code for w in result.warnings] == []


@pytest.mark.parametrize("coding", ["gzip", "deflate"])
def test_a_compressed_event_stream_is_decoded_before_it_is_framed(drive: Any, served: Any, coding: str) -> None:
    # A proxy that compresses the stream must still be read: the client undoes one gzip or deflate
    # coding itself, in bounded steps (tests/test_attack_audit.py has the bombs).
    frames = [b'data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\n',
              b'data: {"type":"TEXT_MESSAGE_START","messageId":"m1","role":"assistant"}\n\n',
              *(f'data: {{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"{word} "}}\n\n'.encode()
                for word in ("compressed", "but", "whole")),
              b'data: {"type":"TEXT_MESSAGE_END","messageId":"m1"}\n\n',
              b'data: {"type":"RUN_FINISHED","threadId":"t","runId":"r"}\n\n']

    async def compressing(scope: Any, receive: Any, send: Any) -> None:
        packer = zlib.compressobj(wbits=31 if coding == "gzip" else 15)
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream"), (b"content-encoding", coding.encode())]})
        for frame in frames:  # one flushed piece per event, so the client decodes piece by piece
            await send({"type": "http.response.body", "body": packer.compress(frame) + packer.flush(zlib.Z_SYNC_FLUSH),
                        "more_body": True})
        await send({"type": "http.response.body", "body": packer.flush(), "more_body": False})

    endpoint = served(compressing)

    with drive.client(endpoint.url) as client:
        result = client.thread("t").run("hi", run_id="r")

    assert result.outcome == "success"
    assert result.text == "compressed but whole "
    assert [w.code for w in result.warnings] == []


def test_a_compressed_event_stream_is_yielded_event_by_event_as_its_pieces_arrive(drive: Any, served: Any) -> None:
    # The client undoes the coding itself: each flushed piece must reach the caller when it comes, not
    # when the body ends. The agent holds the rest of the run until the caller has seen the first text.
    seen = threading.Event()
    held: list[bool] = []

    async def compressing(scope: Any, receive: Any, send: Any) -> None:
        packer = zlib.compressobj(wbits=31)
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream"), (b"content-encoding", b"gzip")]})
        await send({"type": "http.response.body", "more_body": True, "body": packer.compress(
            b'data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\n'
            b'data: {"type":"TEXT_MESSAGE_START","messageId":"m1","role":"assistant"}\n\n'
            b'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"first"}\n\n') +
            packer.flush(zlib.Z_SYNC_FLUSH)})
        # (a fail-safe bound: a client that buffered would see the first text only after it)
        held.append(await asyncio.get_running_loop().run_in_executor(None, seen.wait, 30))
        await send({"type": "http.response.body", "more_body": False, "body": packer.compress(
            b'data: {"type":"TEXT_MESSAGE_END","messageId":"m1"}\n\n'
            b'data: {"type":"RUN_FINISHED","threadId":"t","runId":"r"}\n\n') + packer.flush()})

    endpoint = served(compressing)

    try:
        with drive.client(endpoint.url) as client:
            with client.thread("t").stream("hi", run_id="r") as events:
                for event in events:
                    if isinstance(event, TextMessageContentEvent):
                        seen.set()
            result = events.result
    finally:
        seen.set()  # (an agent still holding is let go)

    assert held == [True]  # (the caller saw the first text while the agent held the rest)
    assert result.outcome == "success" and result.text == "first"


def test_a_body_that_stops_decoding_mid_run_is_a_transport_error_keeping_what_was_folded(
    drive: Any, served: Any
) -> None:
    # httpx's DecodingError is not one of its transport errors: it escaped untyped, without the state.
    packer = zlib.compressobj(wbits=31)
    head = packer.compress(b'data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\n'
                           b'data: {"type":"TEXT_MESSAGE_START","messageId":"m1","role":"assistant"}\n\n'
                           b'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"hello"}\n\n')
    head += packer.flush(zlib.Z_SYNC_FLUSH)

    async def corrupt(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream"), (b"content-encoding", b"gzip")]})
        await send({"type": "http.response.body", "body": head, "more_body": True})
        await send({"type": "http.response.body", "body": b"\xff\xff\xff\xff not gzip", "more_body": False})

    endpoint = served(corrupt)

    with drive.client(endpoint.url) as client:
        with pytest.raises(ag.TransportError) as caught:
            client.thread("t").run("hi", run_id="r")

    assert "gzip" in str(caught.value)
    assert caught.value.result is not None and caught.value.result.text == "hello"


def test_a_framing_warning_names_the_run_and_the_index_its_frame_would_have_had(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent([Stream(items=[Start(), b'{"type":"CUSTOM","name":"x","value":1}\n\n',
                                                   *text_message("m1", "hi"), Finish()])]))

    with drive.client(endpoint.url) as client:
        result = client.thread().run("hi")

    assert [(w.code, w.index, w.run_id) for w in result.warnings] == [("AGUI501", 1, result.run_id)]
    assert "byte " in result.warnings[0].message


def test_a_same_origin_redirect_is_followed_only_when_enabled_with_the_body_sent_again(
    drive: Any, served: Any
) -> None:
    agent = served(ScriptedAgent.chat("moved"))
    old = served(_redirecting(agent.url))

    with drive.client(old.url) as client:
        with pytest.raises(ag.HTTPStatusError) as caught:
            client.thread().run("hi")
    with drive.client(old.url, follow_redirects=True, headers={"X-Api-Key": "k"}) as client:
        result = client.thread().run("hi")

    assert caught.value.status_code == 307 and "follow_redirects" in str(caught.value)
    assert result.outcome == "success" and result.text == "moved"
    assert len(old.received) == 2 and len(agent.received) == 1
    assert agent.received[0].body["messages"][-1]["content"] == "hi"  # 307: the same POST, body and all
    assert agent.received[0].headers["x-api-key"] == "k"


def test_a_redirect_to_another_origin_is_not_followed_so_no_header_leaves(drive: Any, served: Any) -> None:
    # B065: httpx drops Authorization on a cross-origin hop, but not the caller's other headers (an API
    # key): the hop is refused instead, and the other origin never hears of the request.
    other = ScriptedAgent.chat("stolen")
    with serve(other) as elsewhere:
        old = served(_redirecting(elsewhere.url))
        with drive.client(old.url, follow_redirects=True, headers={"X-Api-Key": "k"}) as client:
            with pytest.raises(ag.HTTPStatusError) as caught:
                client.thread().run("hi")

    assert caught.value.status_code == 307
    assert other.request_count == 0


def test_a_redirect_loop_ends_after_a_bounded_number_of_hops(drive: Any, served: Any) -> None:
    # B066: a typed error, never httpx's own exception.
    loop = served(_redirecting(None))

    with drive.client(loop.url, follow_redirects=True) as client:
        with pytest.raises(ag.HTTPStatusError) as caught:
            client.thread().run("hi")

    assert caught.value.status_code == 307
    assert len(loop.received) == 1 + MAX_REDIRECTS


def test_a_transport_error_without_a_message_still_says_what_happened(drive: Any) -> None:
    # httpx raises some errors with no text (a client closed under a run): the type is named instead.
    def fail(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadError("")

    with drive.client("http://127.0.0.1:9/agent", http_client=drive.mock(fail)) as client:
        with pytest.raises(ag.TransportError) as caught:
            client.thread().run("hi")

    assert str(caught.value).endswith("failed: ReadError (no detail from httpx)")



#: The byte of a coded body's trailer each case spoils: gzip ends with its CRC-32 and the body's length
#: (4 bytes each), zlib's deflate with an Adler-32.
TRAILERS = [pytest.param("gzip", -5, id="gzip-crc"), pytest.param("gzip", -1, id="gzip-length"),
            pytest.param("deflate", -1, id="deflate-adler")]


def _spoiled_trailer(coding: str, spoiled: int, body: bytes) -> Any:
    """An agent sending ``body`` coded in one read, the byte ``spoiled`` of its trailer changed."""
    wire = bytearray(zlib.compress(body, 9, wbits=31 if coding == "gzip" else 15))
    wire[spoiled] ^= 0xFF

    async def corrupt(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream"), (b"content-encoding", coding.encode())]})
        await send({"type": "http.response.body", "body": bytes(wire), "more_body": False})
    return corrupt


TEXT_KEPT = (b'data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\n'
             b'data: {"type":"TEXT_MESSAGE_START","messageId":"m1","role":"assistant"}\n\n'
             b'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"kept"}\n\n')


@pytest.mark.parametrize(("coding", "spoiled"), TRAILERS)
def test_a_bad_check_at_the_end_of_a_coded_body_fails_the_run_after_the_events_of_its_read(
    drive: Any, served: Any, coding: str, spoiled: int
) -> None:
    # zlib hands back nothing of a call that fails: the events in the read carrying the body's trailer (a
    # CRC, length or Adler-32 that does not match) were lost with it, and the error named no run.
    endpoint = served(_spoiled_trailer(coding, spoiled, TEXT_KEPT))

    with drive.client(endpoint.url) as client:
        seen: list[str] = []
        with pytest.raises(ag.TransportError) as caught:
            with client.thread("t").stream("hi", run_id="r") as events:
                for event in events:
                    seen.append(event.TYPE)

    error = caught.value
    assert seen == ["RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT"]
    assert error.result is not None and error.result.text == "kept"
    assert type(error) is ag.TransportError and error.run_id == "r" and error.index == 3
    assert str(error).startswith(f"the response from {endpoint.url} to run 'r' could not be decoded ({coding}): ")


@pytest.mark.parametrize(("coding", "spoiled"), TRAILERS)
def test_a_bad_check_after_the_run_ended_in_the_same_read_leaves_the_run_standing(
    drive: Any, served: Any, coding: str, spoiled: int
) -> None:
    # (as any transport fault after the run's end: the run was folded whole, and saved)
    body = TEXT_KEPT + (b'data: {"type":"TEXT_MESSAGE_END","messageId":"m1"}\n\n'
                        b'data: {"type":"RUN_FINISHED","threadId":"t","runId":"r"}\n\n')
    endpoint = served(_spoiled_trailer(coding, spoiled, body))

    with drive.client(endpoint.url) as client:
        result = client.thread("t").run("hi", run_id="r")

    assert result.outcome == "success" and result.text == "kept"
    assert [(w.code, w.run_id) for w in result.warnings] == [("TR-13", "r")]
    assert "could not be decoded" in result.warnings[0].message


#: How long an agent below waits for the client to have read its first read (never reached when it works).
GATE_BOUND = 10.0


def _in_two_reads(coding: str, first: bytes, second: bytes, read: threading.Event) -> Any:
    """An agent sending a coded body in two reads, the second once the client has read the first."""
    async def two(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream"), (b"content-encoding", coding.encode())]})
        await send({"type": "http.response.body", "body": first, "more_body": True})
        await asyncio.to_thread(read.wait, GATE_BOUND)
        await send({"type": "http.response.body", "body": second, "more_body": False})
    return two


def _events_then_fault(drive: Any, url: str, read: threading.Event, after: str) -> tuple[list[str], Any]:
    """The events a run hands out before its body fails (``read`` set once ``after`` came), and the error."""
    with drive.client(url) as client:
        seen: list[str] = []
        with pytest.raises(ag.TransportError) as caught:
            with client.thread("t").stream("hi", run_id="r") as events:
                for event in events:
                    seen.append(event.TYPE)
                    if event.TYPE == after:
                        read.set()
    return seen, caught.value


@pytest.mark.parametrize(("coding", "spoiled"), TRAILERS)
def test_a_bad_check_in_a_trailer_split_over_two_reads_hands_each_event_out_once(
    drive: Any, served: Any, coding: str, spoiled: int
) -> None:
    # The first read ends three bytes before the body does: the events and most of the trailer in it, the
    # rest in the second. A spoiled gzip CRC is found in the first read (its four bytes are all there), a
    # spoiled length or Adler-32 in the second, after the first read's events were handed out: the body
    # is gone over again from before both, and those events must not be handed out a second time.
    wire = bytearray(zlib.compress(TEXT_KEPT, 9, wbits=31 if coding == "gzip" else 15))
    wire[spoiled] ^= 0xFF
    read = threading.Event()
    endpoint = served(_in_two_reads(coding, bytes(wire[:-3]), bytes(wire[-3:]), read))

    seen, error = _events_then_fault(drive, endpoint.url, read, "TEXT_MESSAGE_CONTENT")

    assert seen == ["RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT"]
    assert error.result is not None and error.result.text == "kept"
    assert type(error) is ag.TransportError and error.run_id == "r" and error.index == 3
    assert str(error).startswith(f"the response from {endpoint.url} to run 'r' could not be decoded ({coding}): ")


@pytest.mark.parametrize("coding", ["gzip", "deflate"])
def test_a_body_corrupt_mid_stream_hands_out_the_events_before_the_fault_of_a_later_read_once(
    drive: Any, served: Any, coding: str
) -> None:
    # Two reads, as a compressing proxy flushes them: the run's start, then its text and a deflate block
    # of a type that does not exist. The second read's event comes out before the fault, the first
    # read's events once.
    coder = zlib.compressobj(9, zlib.DEFLATED, 31 if coding == "gzip" else 15)
    cut = TEXT_KEPT.index(b'data: {"type":"TEXT_MESSAGE_CONTENT"')
    first = coder.compress(TEXT_KEPT[:cut]) + coder.flush(zlib.Z_SYNC_FLUSH)
    # (a block header's first three bits, from the low end: not the last block, then type 3, reserved)
    second = coder.compress(TEXT_KEPT[cut:]) + coder.flush(zlib.Z_SYNC_FLUSH) + b"\x06\x00"
    read = threading.Event()
    endpoint = served(_in_two_reads(coding, first, second, read))

    seen, error = _events_then_fault(drive, endpoint.url, read, "TEXT_MESSAGE_START")

    assert seen == ["RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT"]
    assert error.result is not None and error.result.text == "kept"
    assert type(error) is ag.TransportError and error.run_id == "r" and error.index == 3
    assert "invalid block type" in str(error)
