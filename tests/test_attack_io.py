"""The second attack audit: a hostile agent against the clients' transport and I/O (issue 21).

Each test plays one attack from a real server on 127.0.0.1 (uvicorn, or a raw asyncio server where the
attack is below what an ASGI app can say) through both shells, and checks the typed error, what was
kept, and that the attack did not get what it aimed at: the client's memory or time, or a secret into
a log line, an error or a recording.
"""

from __future__ import annotations

import asyncio
import http.cookiejar
import json
import logging
import threading
import zlib
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import agui_client as ag
from agui_client.testing import AsyncRecordingTransport, RecordingTransport
from agui_client.types import RunAgentInput, UserMessage

START = b'data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\n'
FINISH = b'data: {"type":"RUN_FINISHED","threadId":"t","runId":"r"}\n\n'
SSE = [(b"content-type", b"text/event-stream")]


def _answer(status: int, headers: list[tuple[bytes, bytes]], *chunks: bytes) -> Any:
    """An ASGI agent answering every request with ``chunks``, each sent on its own."""
    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": status, "headers": headers})
        for chunk in chunks:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})
    return app


# --------------------------------------------------------------------------------------------------
# raw: a hostile HTTP/1.1 server speaking bytes, for what an ASGI app cannot say
# --------------------------------------------------------------------------------------------------

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


class Raw:
    """Raw asyncio servers on 127.0.0.1, each on a loop in a thread of its own; closed at teardown.

    A handler gets each connection; ``done`` is set when a handler returns (or fails), and ``notes``
    collects what handlers append (what they saw or sent)."""

    def __init__(self) -> None:
        self.notes: list[Any] = []
        self.done = threading.Event()
        self._stops: list[Callable[[], None]] = []

    def serve(self, handler: Handler) -> str:
        loop = asyncio.new_event_loop()
        ready = threading.Event()
        port: list[int] = []
        stop = asyncio.Event()

        tasks: set[asyncio.Task[None]] = set()

        async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.current_task()
            assert task is not None
            tasks.add(task)
            try:
                await handler(reader, writer)
            except (ConnectionError, asyncio.IncompleteReadError):
                self.notes.append("client left")
            finally:
                writer.close()
                self.done.set()
                tasks.discard(task)

        async def main() -> None:
            server = await asyncio.start_server(connection, "127.0.0.1", 0)
            port.append(server.sockets[0].getsockname()[1])
            ready.set()
            async with server:
                await stop.wait()
            for task in list(tasks):  # (a handler still waiting: ended here, not destroyed with the loop)
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        thread = threading.Thread(target=lambda: loop.run_until_complete(main()), daemon=True)
        thread.start()
        ready.wait(10)

        def close() -> None:
            loop.call_soon_threadsafe(stop.set)
            thread.join(10)
            loop.close()

        self._stops.append(close)
        return f"http://127.0.0.1:{port[0]}/agent"

    def close(self) -> None:
        for stop in self._stops:
            stop()


@pytest.fixture
def raw() -> Iterator[Raw]:
    servers = Raw()
    yield servers
    servers.close()


async def _request(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    """A request's head and body (by its Content-Length), as it came."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), 0)
    return head, await reader.readexactly(length)


# --------------------------------------------------------------------------------------------------
# 1. A run of small valid events that never ends
# --------------------------------------------------------------------------------------------------

DELTA = b'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"' + b"x" * 200 + b'"}\n\n'
#: What the endless agent sends at most (so a client without the bound still ends the test).
ENDLESS_CAP = 48 * 2**20



def _no_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    """No proxy variable of the machine's in the environment (a test sets the ones it needs)."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)

def test_a_run_of_small_events_without_end_stops_at_max_run_bytes(drive: Any, raw: Raw) -> None:
    # Each delta was well within max_event_bytes, and the run had no bound but run_timeout (None by
    # default): the message grew for as long as the agent went on.
    async def endless(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n" + START
                     + b'data: {"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant"}\n\n')
        sent = 0
        block = DELTA * 300
        while sent < ENDLESS_CAP:
            writer.write(block)
            await writer.drain()
            sent += len(block)
        raw.notes.append("all sent")

    url = raw.serve(endless)
    with drive.client(url, max_run_bytes=2**20) as client:
        thread = client.thread("t")
        with pytest.raises(ag.LimitExceeded) as caught:
            thread.run("hi", run_id="r")

    error = caught.value
    assert (error.rule, error.run_id, error.limit) == ("RUN-BYTES", "r", 2**20)
    assert "max_run_bytes" in str(error) and "'r'" in str(error)
    assert error.result is not None  # (what came before the limit is folded and kept)
    text = error.result.messages[-1].content
    assert 2**20 - 128 * 1024 < len(text) // 200 * len(DELTA) <= 2**20  # (the deltas folded: all but a read)
    assert raw.done.wait(30) and "all sent" not in raw.notes  # (the client hung up)


@pytest.mark.parametrize("coding", [None, b"gzip"])
def test_max_run_bytes_counts_the_decoded_body_to_the_byte(drive: Any, served: Any, coding: bytes | None) -> None:
    body = START + DELTA.replace(b"TEXT_MESSAGE_CONTENT", b"X_UNKNOWN") * 50 + FINISH
    wire = body if coding is None else zlib.compress(body, 9, wbits=31)
    headers = SSE + ([(b"content-encoding", coding)] if coding else [])
    endpoint = served(_answer(200, headers, *(wire[at:at + 997] for at in range(0, len(wire), 997))))

    with drive.client(endpoint.url, max_run_bytes=len(body)) as client:
        assert client.thread("t").run("hi", run_id="r").outcome == "success"
    with drive.client(endpoint.url, max_run_bytes=len(body) - 1) as client:
        with pytest.raises(ag.LimitExceeded) as caught:
            client.thread("t").run("hi", run_id="r")
    with drive.client(endpoint.url, max_run_bytes=None) as client:
        assert client.thread("t").run("hi", run_id="r").outcome == "success"

    assert caught.value.rule == "RUN-BYTES" and caught.value.limit == len(body) - 1


def test_max_run_bytes_has_a_generous_default_and_refuses_nonsense() -> None:
    from agui_client.client import DEFAULT_MAX_RUN_BYTES

    assert DEFAULT_MAX_RUN_BYTES == 256 * 2**20
    with ag.AgentClient("http://127.0.0.1:9/") as client:
        assert client.max_run_bytes == DEFAULT_MAX_RUN_BYTES
    for bad in (0, -1):
        with pytest.raises(ValueError) as refused:
            ag.AsyncAgentClient("http://127.0.0.1:9/", max_run_bytes=bad)
        assert "max_run_bytes" in str(refused.value)
    # Set between runs, it is checked as when the client is made (not at the next run's first read).
    with ag.AgentClient("http://127.0.0.1:9/") as client:
        for bad in (0, -5, 1.5, "1024", True):
            with pytest.raises(ValueError) as refused:
                client.max_run_bytes = bad  # type: ignore[assignment]
            assert "max_run_bytes" in str(refused.value)
        client.max_run_bytes = None
        client.max_run_bytes = 4096
        assert client.max_run_bytes == 4096


def test_open_names_the_run_when_its_response_outgrows_max_run_bytes(drive: Any, served: Any) -> None:
    endpoint = served(_answer(200, SSE, START, DELTA * 20, FINISH))
    run_input = RunAgentInput(thread_id="t", run_id="r-open", messages=(UserMessage(id="u", content="hi"),))

    got: list[Any] = []
    with drive.client(endpoint.url, max_run_bytes=len(START) + 100) as client:
        with pytest.raises(ag.LimitExceeded) as caught, client.open(run_input) as payloads:
            for payload in payloads:
                got.append(payload)

    assert caught.value.rule == "RUN-BYTES" and caught.value.run_id == "r-open"
    assert len(got) == 1 and "RUN_STARTED" in str(got[0])  # (the first read, within the budget, came through)


# --------------------------------------------------------------------------------------------------
# 2. httpcore's DEBUG trace of the answer's head
# --------------------------------------------------------------------------------------------------

TOKEN = "sk-live-9c8b7a6d5e4f"


def test_httpcore_debug_trace_shows_no_secret_of_the_answers_head(drive: Any, served: Any,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    # httpcore logs the response head as it came at DEBUG: a session cookie the agent set, and the
    # bearer token or a marked header the agent echoed back in headers of its own, reached the logs.
    async def echo(scope: Any, receive: Any, send: Any) -> None:
        got = dict(scope["headers"])
        await send({"type": "http.response.start", "status": 200, "headers": [
            *SSE, (b"set-cookie", b"sid=COOKIE-1a2b3c4d5e6f; HttpOnly"), (b"x-seen", got[b"authorization"]),
            (b"x-tenant", got[b"x-tenant"]), (b"x-plain", b"visible-value")]})
        await send({"type": "http.response.body", "body": START + FINISH})

    endpoint = served(echo)
    with caplog.at_level(logging.DEBUG, logger="httpcore"), \
            drive.client(endpoint.url, headers={"Authorization": f"Bearer {TOKEN}", "X-Tenant": "TENANT-77aa88bb"},
                         sensitive_headers=["X-Tenant"]) as client:
        assert client.thread("t").run("hi", run_id="r").outcome == "success"

    lines = [record.getMessage() for record in caplog.records if record.name.startswith("httpcore")]
    head = [line for line in lines if line.startswith("receive_response_headers.complete")]
    assert head and "visible-value" in head[0] and "[redacted]" in head[0], lines
    leaked = [line for line in lines if any(secret in line for secret in (TOKEN, "COOKIE-1a2b3c4d5e6f",
                                                                           "TENANT-77aa88bb"))]
    assert not leaked


# --------------------------------------------------------------------------------------------------
# 3. run_timeout while waiting for a connection of a full pool
# --------------------------------------------------------------------------------------------------


def test_run_timeout_bounds_the_wait_for_a_connection_of_a_full_pool(drive: Any, served: Any, gate: Any) -> None:
    # The pool timeout was the client's timeout whatever the run's deadline: with a caller's http_client
    # of one connection held by another run, a run with run_timeout=0.5 waited the pool's 300 s (the
    # test's own timeout fails it first).
    from agui_client.testing import ScriptedAgent, Start, Wait

    endpoint = served(ScriptedAgent([[Start(), Wait(gate)]]))
    http = drive.http_client(limits=httpx.Limits(max_connections=1))
    run_input = RunAgentInput(thread_id="held", run_id="held", messages=(UserMessage(id="u", content="hi"),))

    with drive.client(endpoint.url, http_client=http, timeout=300) as client:
        with client.open(run_input):  # (holds the pool's one connection)
            with pytest.raises(ag.RunTimeout) as caught:
                client.thread("t").run("hi", run_id="r", run_timeout=0.5)
        gate.open()

    assert caught.value.request_sent is False and caught.value.timeout == 0.5
    assert isinstance(caught.value.__cause__, httpx.PoolTimeout)
    assert len(endpoint.received) == 1  # (the second run never left)


# --------------------------------------------------------------------------------------------------
# 4. Recordings: names a client marked, secrets outside ASCII
# --------------------------------------------------------------------------------------------------


def _recorder(drive: Any, directory: Path, **options: Any) -> Any:
    return RecordingTransport(directory, **options) if drive.kind == "sync" else AsyncRecordingTransport(
        directory, **options)


def test_a_recording_redacts_the_names_a_client_marked_and_secrets_outside_ascii(
        drive: Any, served: Any, tmp_path: Path) -> None:
    # The recorder redacted the default sensitive names only, matching ASCII: a header the client marked
    # (``sensitive_headers``) and a key outside ASCII, echoed by the agent, were written to NN.sse.
    async def echo(scope: Any, receive: Any, send: Any) -> None:
        got = dict(scope["headers"])
        from urllib.parse import unquote
        key = unquote(scope["query_string"].decode()[4:])
        said = f"tenant {got[b'x-tenant'].decode()} key {key}"
        body = START + b"data: " + json.dumps({"type": "RUN_ERROR", "message": said}, ensure_ascii=False).encode()
        await send({"type": "http.response.start", "status": 200, "headers": SSE})
        await send({"type": "http.response.body", "body": body + b"\n\n"})

    endpoint = served(echo)
    http = drive.http_client(transport=_recorder(drive, tmp_path))
    with drive.client(f"{endpoint.url}?key=p%C3%A4ssw%C3%B6rt-5d6e7f", http_client=http,
                      headers={"X-Tenant": "TENANT-3c4d5e6f"}, sensitive_headers=["x-tenant"]) as client:
        result = client.thread("t").run("hi", run_id="r")

    assert result.error is not None and result.error.message == "tenant [redacted] key [redacted]"
    written = (tmp_path / "01.sse").read_bytes()
    assert b"TENANT-3c4d5e6f" not in written and "pässwört-5d6e7f".encode() not in written
    assert ag.replay(tmp_path / "01.sse").error.message == "tenant [redacted] key [redacted]"  # type: ignore[union-attr]


def test_a_recording_transport_takes_names_of_its_own(served: Any, tmp_path: Path) -> None:
    async def echo(scope: Any, receive: Any, send: Any) -> None:
        said = f"got {dict(scope['headers'])[b'x-tenant'].decode()}"
        await send({"type": "http.response.start", "status": 200, "headers": SSE})
        await send({"type": "http.response.body", "body": b"data: " + json.dumps({"message": said}).encode()
                    + b"\n\n"})

    endpoint = served(echo)
    with httpx.Client(transport=RecordingTransport(tmp_path, sensitive_headers=["X-Tenant"])) as http:
        http.post(endpoint.url, headers={"X-Tenant": "TENANT-0a1b2c3d"}, json={}).read()

    assert (tmp_path / "01.sse").read_bytes() == b'data: {"message": "got [redacted]"}\n\n'


# --------------------------------------------------------------------------------------------------
# 5. Raw deflate whose first read is one byte
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("wbits", [-15, 15], ids=["raw", "zlib"])
def test_deflate_whose_first_read_is_one_byte_is_read(drive: Any, served: Any, wbits: int) -> None:
    # zlib took the lone first byte of a raw deflate body as the start of a zlib header and refused the
    # second: the run failed as undecodable.
    packer = zlib.compressobj(9, zlib.DEFLATED, wbits)
    wire = packer.compress(START + FINISH) + packer.flush()
    endpoint = served(_answer(200, [*SSE, (b"content-encoding", b"deflate")], wire[:1], wire[1:2], wire[2:]))

    with drive.client(endpoint.url) as client:
        assert client.thread("t").run("hi", run_id="r").outcome == "success"


@pytest.mark.parametrize("body", [b"\x78", b"\x03"], ids=["zlib-first-byte", "raw-first-byte"])
def test_a_deflate_body_of_one_byte_ends_as_stream_ended(drive: Any, served: Any, body: bytes) -> None:
    # (review of the twelfth round) The first byte of a deflate body is held until the second tells
    # zlib from raw deflate; a body of one byte left it held at the end, and the flush that fed it went
    # round for ever: a RecursionError, no error of ours, out of the run.
    endpoint = served(_answer(200, [*SSE, (b"content-encoding", b"deflate")], body))

    with drive.client(endpoint.url) as client:
        with pytest.raises(ag.StreamEnded):
            client.thread("t").run("hi", run_id="r")


def test_a_recorded_deflate_body_of_one_byte_is_kept(served: Any, tmp_path: Path) -> None:
    # The recording transport inflates through the same decoder, at the body's close.
    endpoint = served(_answer(200, [*SSE, (b"content-encoding", b"deflate")], b"\x78"))
    with httpx.Client(transport=RecordingTransport(tmp_path)) as http:
        assert http.post(endpoint.url, json={}).status_code == 200

    assert (tmp_path / "01.sse").read_bytes() == b""


# --------------------------------------------------------------------------------------------------
# New attacks on the transport: the held ones (each a behaviour kept, checked through both shells)
# --------------------------------------------------------------------------------------------------


def _replies(*writes: bytes, close: bool = True) -> Handler:
    """A handler that reads the request and writes ``writes``, each on its own (then hangs up)."""
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        for data in writes:
            writer.write(data)
            await writer.drain()
        if not close:
            await reader.read()  # (until the client hangs up)
    return handler


def _head(*headers: bytes, status: bytes = b"200 OK") -> bytes:
    return b"HTTP/1.1 " + status + b"\r\n" + b"".join(h + b"\r\n" for h in headers) + b"\r\n"


def test_a_same_origin_redirect_loop_stops_after_max_redirects(drive: Any, raw: Raw) -> None:
    hops: list[int] = []

    async def loop(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        hops.append(1)
        writer.write(_head(b"location: /agent?hop=%d" % len(hops), b"content-length: 0", b"connection: close",
                           status=b"307 Temporary Redirect"))
        await writer.drain()

    url = raw.serve(loop)
    with drive.client(url, follow_redirects=True) as client:
        with pytest.raises(ag.HTTPStatusError) as caught:
            client.thread("t").run("hi", run_id="r")

    assert caught.value.status_code == 307 and "10 redirects were followed already" in str(caught.value)
    assert len(hops) == 11


@pytest.mark.parametrize("body", [
    # SSE fields an agent controls: a retry of 5,000 digits (past int()'s default), ids holding NUL or 100 KB
    START + b"retry: " + b"9" * 5000 + b"\nid: a\0b\nid: " + b"i" * 100_000 + b"\n\n" + FINISH,
    # a BOM and CR-only line ends in the middle of the stream, a byte a read
    START + b"\xef\xbb\xbf\n" + FINISH.replace(b"\n", b"\r"),
    # HTTP/1.1 chunk extensions
    b"chunked",
], ids=["retry-id", "bom-cr", "chunk-extensions"])
def test_hostile_but_bounded_framing_is_read(drive: Any, raw: Raw, body: bytes) -> None:
    if body == b"chunked":
        payload = START + FINISH
        url = raw.serve(_replies(_head(b"content-type: text/event-stream", b"transfer-encoding: chunked"),
                                 b"%x;ext=1;q=\"a b\"\r\n%s\r\n0;last\r\nx-trailer-token: T0K3N\r\n\r\n"
                                 % (len(payload), payload)))
    else:
        url = raw.serve(_replies(_head(b"content-type: text/event-stream", b"connection: close"),
                                 *(body[at:at + 1] for at in range(len(body)))))

    with drive.client(url) as client:
        result = client.thread("t").run("hi", run_id="r")

    assert result.outcome == "success"
    assert [w.code for w in result.warnings] == (["BOM"] if b"\xef\xbb\xbf" in body else [])


def test_content_length_shorter_than_the_body_reads_only_what_it_declares(drive: Any, raw: Raw) -> None:
    forged = b'data: {"type":"RUN_ERROR","message":"forged"}\n\n'
    url = raw.serve(_replies(_head(b"content-type: text/event-stream", b"content-length: %d" % len(START + FINISH)),
                             START + FINISH + forged))

    with drive.client(url) as client:
        result = client.thread("t").run("hi", run_id="r")

    assert result.outcome == "success" and result.error is None


@pytest.mark.parametrize("writes", [
    (_head(b"content-type: text/event-stream", b"content-length: 100000"), START),  # longer than sent
    (_head(b"content-type: text/event-stream"), START + b'data: {"type":"TEXT_MESSAGE_START","messageId":"m"'),
    (_head(b"content-type: text/event-stream", b"content-length: 5000"),),  # nothing after the head
    (_head(b"content-type: text/event-stream", b"transfer-encoding: chunked"),
     b"%x\r\n%s\r\n" % (len(START), START), b"5;" + b"e" * 300_000 + b"\r\n"),  # an endless chunk extension
], ids=["content-length-longer", "mid-event", "closed-after-head", "chunk-extension-without-end"])
def test_a_response_cut_short_is_stream_ended_with_what_came(drive: Any, raw: Raw, writes: tuple[bytes, ...]) -> None:
    url = raw.serve(_replies(*writes))

    with drive.client(url) as client:
        with pytest.raises(ag.StreamEnded) as caught:
            client.thread("t").run("hi", run_id="r")

    assert caught.value.result is not None
    assert isinstance(caught.value.result.messages[-1], UserMessage)  # (the cut event was not folded)


def test_a_huge_html_page_is_refused_after_its_excerpt(drive: Any, raw: Raw) -> None:
    async def page(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        writer.write(_head(b"content-type: text/html", b"content-length: %d" % (100 * 2**20)) + b"<html>")
        for _ in range(100):
            writer.write(b"<p>" + b"x" * (2**20 - 3))
            await writer.drain()
        raw.notes.append("all sent")

    url = raw.serve(page)
    with drive.client(url) as client:
        with pytest.raises(ag.ProtocolError) as caught:
            client.thread("t").run("hi", run_id="r")

    assert caught.value.rule == "TR-04" and "<html>" in str(caught.value)
    assert raw.done.wait(30) and "all sent" not in raw.notes


def test_an_endless_response_head_is_a_transport_error(drive: Any, raw: Raw) -> None:
    async def head(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\n")
        for n in range(100_000):
            writer.write(b"x-h%d: %s\r\n" % (n, b"v" * 100))
            await writer.drain()
        raw.notes.append("all sent")

    url = raw.serve(head)
    with drive.client(url) as client:
        with pytest.raises(ag.TransportError) as caught:
            client.thread("t").run("hi", run_id="r")

    assert caught.value.request_sent
    assert raw.done.wait(30) and "all sent" not in raw.notes


# --------------------------------------------------------------------------------------------------
# New attacks on the transport: the fixed ones
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [b"500 \x9b2J\x9b31mall fine", b"500 \x1b[2Jall fine"], ids=["c1", "esc"])
def test_a_reason_phrase_with_terminal_controls_stays_out_of_the_error_message(drive: Any, raw: Raw,
                                                                              status: bytes) -> None:
    # HTTP allows bytes 0x80-0xff in a reason phrase (0x9b is a terminal's CSI): httpx drops what is not
    # ASCII, h11 refuses a C0 control, and the client makes the phrase inert besides.
    url = raw.serve(_replies(_head(b"content-length: 0", status=status)))

    with drive.client(url) as client:
        with pytest.raises(ag.TransportError if b"\x1b" in status else ag.HTTPStatusError) as caught:
            client.thread("t").run("hi", run_id="r")

    shown = str(caught.value)
    assert "\x9b" not in shown and "\x1b" not in shown, shown


def test_an_agent_that_takes_none_of_a_large_request_is_a_write_timeout(drive: Any, raw: Raw) -> None:
    # The error said "no answer within idle_timeout (60s)", the wrong wait: it was the write timeout.
    release = threading.Event()

    async def deaf(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")  # (the head, and not a byte of the body)
        await asyncio.get_running_loop().run_in_executor(None, release.wait, 60)

    url = raw.serve(deaf)
    try:
        with drive.client(url, timeout=0.5) as client:
            with pytest.raises(ag.IdleTimeout) as caught:
                client.thread("t").run("hi", run_id="r", state={"blob": "x" * 64 * 2**20})
    finally:
        release.set()

    error = caught.value
    assert isinstance(error.__cause__, httpx.WriteTimeout)
    assert error.request_sent is False and error.timeout == 0.5
    assert "took none of the request for 0.5s (the client's timeout)" in str(error)  # (the setting: named)
    assert "never reached the agent" in str(error)


PROXY_PASSWORD = "pr0xy-Pa55-4e5f6a7b"


def test_a_proxy_from_the_environment_echoing_its_credential_gets_it_into_nothing(
        drive: Any, raw: Raw, monkeypatch: pytest.MonkeyPatch) -> None:
    # httpx sends Proxy-Authorization (from HTTP_PROXY's userinfo) to the proxy; it is no header of the
    # request, so the redactor did not know it: a proxy echoing it put it into the error and the result.
    import base64

    seen: list[bytes] = []

    async def proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head, _body = await _request(reader)
        seen.append(head)
        credential = next(line.split(b":", 1)[1].strip() for line in head.split(b"\r\n")
                          if line.lower().startswith(b"proxy-authorization:"))
        said = f"proxy got {credential.decode()} ({base64.b64decode(credential.split()[1]).decode()})"
        if b"/agent-502" in head.split(b"\r\n")[0]:
            writer.write(_head(b"content-type: text/plain", b"content-length: %d" % len(said),
                               status=b"502 Bad Gateway") + said.encode())
        else:
            body = START + b"data: " + json.dumps({"type": "RUN_ERROR", "message": said}).encode() + b"\n\n"
            writer.write(_head(b"content-type: text/event-stream", b"content-length: %d" % len(body)) + body)
        await writer.drain()

    port = raw.serve(proxy).split(":")[2].split("/")[0]
    _no_proxies(monkeypatch)
    monkeypatch.setenv("HTTP_PROXY", f"http://squid:{PROXY_PASSWORD}@127.0.0.1:{port}")

    with drive.client("http://agent.invalid/agent") as client:
        result = client.thread("t").run("hi", run_id="r")
    with drive.client("http://agent.invalid/agent-502") as client:
        with pytest.raises(ag.HTTPStatusError) as caught:
            client.thread("t").run("hi", run_id="r")

    assert len(seen) == 2 and all(b"proxy-authorization" in head.lower() for head in seen)  # (through the proxy)
    assert result.error is not None and result.error.message == "proxy got [redacted] ([redacted])"
    error = caught.value
    shown = [str(error), error.body, error.response.text, repr(error.response.headers)]
    assert not [text for text in shown if PROXY_PASSWORD in text or "cHIweHk" in text], shown
    assert error.body == "proxy got [redacted] ([redacted])"


def _flood(head: bytes, first: bytes, unit: bytes) -> Callable[[Raw], Handler]:
    """A handler sending ``head`` and ``first``, then ``unit`` until ``ENDLESS_CAP`` bytes or the client leaves."""
    def make(raw: Raw) -> Handler:
        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await _request(reader)
            writer.write(head + first)
            sent = 0
            while sent < ENDLESS_CAP:
                writer.write(unit)
                await writer.drain()
                sent += len(unit)
            raw.notes.append("all sent")
        return handler
    return make


GZIP_HEAD = _head(b"content-type: text/event-stream", b"content-encoding: gzip", b"connection: close")


def test_bytes_after_the_end_of_a_coded_body_are_not_read_at_all(drive: Any, raw: Raw) -> None:
    # They were not kept (the first round), but the client went on reading them for as long as the
    # agent sent them: a run that decodes nothing more, bounded by nothing (run_timeout is off by default).
    url = raw.serve(_flood(GZIP_HEAD, zlib.compress(START, 9, wbits=31), b"x" * 65536)(raw))

    with drive.client(url) as client:
        with pytest.raises(ag.StreamEnded) as caught:
            client.thread("t").run("hi", run_id="r")

    assert caught.value.result is not None and caught.value.result.run_id == "r"
    assert raw.done.wait(30) and "all sent" not in raw.notes


def test_a_coded_body_that_decodes_to_nothing_is_charged_to_max_run_bytes(drive: Any, raw: Raw) -> None:
    # A gzip header whose file name never ends decodes to nothing: max_run_bytes, counting the decoded
    # body, never saw it, and the client read it for as long as the agent sent it.
    header = b"\x1f\x8b\x08\x08\0\0\0\0\0\xff"  # (FLG.FNAME: a NUL-terminated name follows)
    url = raw.serve(_flood(GZIP_HEAD, header, b"n" * 65536)(raw))

    with drive.client(url, max_run_bytes=2**20) as client:
        with pytest.raises(ag.LimitExceeded) as caught:
            client.thread("t").run("hi", run_id="r")

    assert caught.value.rule == "RUN-BYTES" and caught.value.limit == 2**20
    assert raw.done.wait(30) and "all sent" not in raw.notes


def _one_byte_chunks(body: bytes) -> Handler:
    """An agent sending ``body`` as HTTP/1.1 chunks of one byte each (each read by the client on its own,
    however TCP packs them)."""
    return _replies(_head(b"content-type: text/event-stream", b"transfer-encoding: chunked"),
                    b"".join(b"1\r\n%s\r\n" % body[at:at + 1] for at in range(len(body))) + b"0\r\n\r\n")


def test_one_byte_reads_cost_work_in_proportion_to_the_bytes(drive: Any, raw: Raw) -> None:
    # A stream of one-byte reads: every read costs the same few calls, so twice the bytes cost about
    # twice the calls (a buffer scanned or copied whole at every read would make it four times).
    import sys

    def calls(size: int) -> int:
        body = (START + b'data: {"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant"}\n\n'
                + b'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"' + b"x" * size + b'"}\r\r'
                + b'data: {"type":"TEXT_MESSAGE_END","messageId":"m"}\n\n' + b": " + b"c" * size + b"\n" + FINISH)
        url = raw.serve(_one_byte_chunks(body))
        count = [0]

        def counter(frame: Any, event: str, arg: Any) -> None:
            count[0] += 1

        with drive.client(url) as client:
            thread = client.thread("t")
            on = (lambda f: drive._portal.call(sys.setprofile, f)) if drive.kind == "async" else sys.setprofile
            on(counter)
            try:
                result = thread.run("hi", run_id="r")
            finally:
                on(None)
        assert result.outcome == "success" and result.text == "x" * size
        return count[0]

    small, large = calls(3000), calls(6000)
    assert large < 2.5 * small, (small, large)


@pytest.mark.parametrize("head", [
    _head(b"content-length: 0", status=b"500 " + b"r" * 90_000),  # a reason phrase of 90 KB
    b"HTTP/1.1 200 OK\r\n" + b"x" * 90_000 + b"\r\n\r\n",  # a header line h11 refuses, and quotes whole
], ids=["reason-phrase", "bad-header-line"])
def test_an_error_quotes_at_most_a_bounded_part_of_a_huge_head(drive: Any, raw: Raw, head: bytes) -> None:
    # Each went whole into str(error) (90 KB on one line), and httpx's own message, kept as the cause
    # a traceback prints, as well.
    url = raw.serve(_replies(head))

    with drive.client(url) as client:
        with pytest.raises(ag.TransportError) as caught:
            client.thread("t").run("hi", run_id="r")

    error = caught.value
    assert len(str(error)) < 1000 and "more characters)" in str(error)
    assert error.__cause__ is None or len(str(error.__cause__)) < 1000


@pytest.mark.parametrize("head", [
    b"HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: upgrade\r\n\r\n" + b"junk" * 1000,
    b"data: " + START,  # no status line at all (HTTP/0.9 style)
    b"HTTP/1.1 2000 OK\r\n\r\n",
], ids=["unasked-upgrade", "no-status-line", "bad-status"])
def test_an_answer_that_is_no_http_response_is_a_transport_error(drive: Any, raw: Raw, head: bytes) -> None:
    url = raw.serve(_replies(head, close=False))

    with drive.client(url) as client:
        with pytest.raises(ag.TransportError) as caught:
            client.thread("t").run("hi", run_id="r")

    assert not isinstance(caught.value, ag.HTTPStatusError) and "RemoteProtocolError" in str(caught.value)


def test_httpx_request_log_line_shows_no_credential_the_reason_phrase_repeats(
        drive: Any, raw: Raw, caplog: pytest.LogCaptureFixture) -> None:
    # httpx's INFO line ends with the answer's reason phrase as the agent wrote it: "401 Bearer <token>
    # refused" wrote the token to the logs of any application logging at INFO.
    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head, _body = await _request(reader)
        token = next(line.split(b" ")[-1] for line in head.split(b"\r\n") if line.lower().startswith(b"authorization"))
        writer.write(_head(b"content-length: 0", status=b"401 Bearer " + token + b" refused " + b"r" * 5000))
        await writer.drain()

    url = raw.serve(echo)
    with caplog.at_level(logging.INFO, logger="httpx"), \
            drive.client(url, headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        with pytest.raises(ag.AuthenticationError) as caught:
            client.thread("t").run("hi", run_id="r")

    lines = [record.getMessage() for record in caplog.records if record.name == "httpx"]
    assert lines and all("401 [redacted] refused r" in line and len(line) < 1000 for line in lines), lines
    assert TOKEN not in str(caught.value)


def _sets_cookies(cookie_headers: list[bytes]) -> Handler:
    """An agent setting a session cookie and 60 more on every answer; what each request's ``Cookie``
    header held (``b""``: none) goes into ``cookie_headers``."""
    async def sets(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head, _body = await _request(reader)
        cookie_headers.append(next((line for line in head.split(b"\r\n") if line.lower().startswith(b"cookie:")), b""))
        run = len(cookie_headers)
        cookies = [b"set-cookie: c%d_%d=v; Path=/" % (run, n) for n in range(60)]
        writer.write(_head(b"content-type: text/event-stream", b"content-length: %d" % len(START + FINISH),
                           b"connection: close", b"set-cookie: session=user%d; Path=/" % run,
                           b'set-cookie2: old%d="v"; Version="1"; Path="/"' % run, *cookies)
                     + START + FINISH)
        await writer.drain()
    return sets


@pytest.mark.parametrize("proxied", [False, True])
def test_no_cookie_an_agent_sets_is_kept_or_sent(drive: Any, raw: Raw, monkeypatch: pytest.MonkeyPatch,
                                                 proxied: bool) -> None:
    # httpx kept every cookie an answer set and sent them all with every later request: 60 new cookies
    # a run grew a long-lived client's jar, and each request's Cookie header, without bound; and a
    # session cookie set on one user's run went out with the next user's. A jar that kept none held
    # only until the application assigned ``client.http.cookies``: httpx's own jar took its place and
    # kept them again. The client's own transport now drops every answer's Set-Cookie, so no jar sees
    # one; ``proxied``: through the proxy the environment names, as directly.
    cookie_headers: list[bytes] = []
    url = raw.serve(_sets_cookies(cookie_headers))
    _no_proxies(monkeypatch)
    host = "127.0.0.1"
    if proxied:  # (the loopback server is the proxy, and answers for the agent)
        monkeypatch.setenv("HTTP_PROXY", url.rsplit("/", 1)[0])
        url, host = "http://agent.invalid/agent", "agent.invalid"
    with drive.client(url) as client:
        thread = client.thread("t")
        for n in range(2):
            assert thread.run(f"turn {n}", headers={"Authorization": f"Bearer user{n + 1}"}).outcome == "success"
        client.http.cookies.set("mine", "kept", domain=host)  # (the application's own are sent)
        assert thread.run("turn 3").outcome == "success"
        client.http.cookies = {"assigned": "sent"}  # (httpx's own jar in place of the one the client made)
        for n in range(2):
            assert thread.run(f"turn {n + 4}", headers={"Authorization": f"Bearer user{n + 4}"}).outcome == "success"
        jar = client.http.cookies.jar

    assert cookie_headers[:2] == [b""] * 2
    assert cookie_headers[2].lower() == b"cookie: mine=kept"
    assert [line.lower() for line in cookie_headers[3:]] == [b"cookie: assigned=sent"] * 2
    assert [c.name for c in jar] == ["assigned"]


def test_an_assigned_jar_that_reads_set_cookie2_keeps_no_agent_cookie_either(drive: Any, raw: Raw,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # A jar with an RFC 2965 policy also keeps what the obsolete Set-Cookie2 header sets: the client's
    # own transport drops that header too.
    cookie_headers: list[bytes] = []
    url = raw.serve(_sets_cookies(cookie_headers))
    _no_proxies(monkeypatch)
    with drive.client(url) as client:
        client.http.cookies = http.cookiejar.CookieJar(http.cookiejar.DefaultCookiePolicy(rfc2965=True))
        for n in range(2):
            assert client.thread("t").run(f"turn {n}").outcome == "success"
        jar = client.http.cookies.jar

    assert cookie_headers == [b""] * 2 and list(jar) == []


def test_an_http_client_you_pass_keeps_cookies_as_httpx_does(drive: Any, raw: Raw) -> None:
    # Only the client's own transport drops the agent's cookies: one passed in is used as it is.
    cookie_headers: list[bytes] = []
    url = raw.serve(_sets_cookies(cookie_headers))
    with drive.client(url, http_client=drive.http_client()) as client:
        for n in range(2):
            assert client.thread("t").run(f"turn {n}").outcome == "success"

    assert cookie_headers[0] == b"" and b"session=user1" in cookie_headers[1] and b"c1_59=v" in cookie_headers[1]


def _endless_hints(raw: Raw) -> Handler:
    """An agent answering with ``103 Early Hints`` until ``ENDLESS_CAP`` bytes, then a whole run."""
    hint = b"HTTP/1.1 103 Early Hints\r\nlink: </" + b"s" * 4000 + b">\r\n\r\n"

    async def hints(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        sent = 0
        while sent < ENDLESS_CAP:
            writer.write(hint * 16)
            await writer.drain()
            sent += len(hint) * 16
        writer.write(_head(b"content-type: text/event-stream", b"content-length: %d" % len(START + FINISH))
                     + START + FINISH)
        await writer.drain()
        raw.notes.append("all sent")
    return hints


@pytest.mark.parametrize("proxied", [False, True])
def test_informational_answers_without_end_are_charged_to_max_run_bytes(drive: Any, raw: Raw, proxied: bool,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # httpcore reads past every 103 Early Hints to the head: with no run_timeout (the default) an agent
    # sending them as fast as it could kept the client reading for ever, none of it counted as body.
    # ``proxied``: the environment names a proxy, and NO_PROXY the agent's host. The client's own httpx
    # client left its pool, and the bound, whenever any proxy was named; it now does so only for a URL
    # the proxy serves.
    _no_proxies(monkeypatch)
    if proxied:
        monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    url = raw.serve(_endless_hints(raw))
    with drive.client(url, max_run_bytes=2**20) as client:
        with pytest.raises(ag.LimitExceeded) as caught:
            client.thread("t").run("hi", run_id="r")

    error = caught.value
    assert (error.rule, error.run_id, error.limit) == ("RUN-BYTES", "r", 2**20) and "head" in str(error)
    assert raw.done.wait(30) and "all sent" not in raw.notes


def test_comments_without_end_after_the_run_finished_end_at_max_run_bytes_and_the_run_stands(
        drive: Any, raw: Raw) -> None:
    # The client reads a response to its end (it may hold another run); an agent keeping it open with
    # comments after RUN_FINISHED, as fast as it can, is stopped by max_run_bytes, and the run stands.
    url = raw.serve(_flood(_head(b"content-type: text/event-stream", b"connection: close"), START + FINISH,
                           b":" + b"k" * 1000 + b"\n")(raw))

    with drive.client(url, max_run_bytes=2**20) as client:
        result = client.thread("t").run("hi", run_id="r")

    assert result.outcome == "success" and [w.code for w in result.warnings] == ["TR-13"]
    assert "RUN-BYTES" in result.warnings[0].message or "max_run_bytes" in result.warnings[0].message
    assert raw.done.wait(30) and "all sent" not in raw.notes


@pytest.mark.parametrize("writes", [
    (_head(b"location: /" + b"p" * 60_000, b"content-length: 0", status=b"307 Temporary Redirect"),),  # (httpx: <64K)
    (_head(b"content-type: text/x-" + b"t" * 90_000, b"content-length: 5", b"connection: close") + b"hello",),
    (_head(b"content-type: text/event-stream", b"content-encoding: gzip" + b", identity" * 9000,
           b"content-length: 9") + b"not gzip!",),
], ids=["location", "content-type", "content-encoding"])
def test_a_huge_header_is_quoted_cut_short(drive: Any, raw: Raw, writes: tuple[bytes, ...]) -> None:
    # The header's value went whole into the error's message (and a warning's): 90 KB on one line.
    url = raw.serve(_replies(*writes))

    with drive.client(url) as client:
        with pytest.raises(ag.AguiError) as caught:
            client.thread("t").run("hi", run_id="r")

    error = caught.value
    # (cut as a quotation, with a count of the rest, or as an id the agent chose, with a digest)
    said = str(error)
    assert len(said) < 1500 and ("more characters)" in said or "...#" in said), said[:300]
    kept = error.result.warnings if getattr(error, "result", None) is not None else []
    assert all(len(w.message) < 1500 for w in kept)


# --------------------------------------------------------------------------------------------------
# The CLI's recording client keeps the client's own transport
# --------------------------------------------------------------------------------------------------



@pytest.mark.parametrize("record", [False, True])
def test_agui_run_bounds_the_answers_head_with_or_without_record(raw: Raw, tmp_path: Path, record: bool) -> None:
    # `agui run --record` (and `agui chat`, always behind a recorder) sent through httpx's plain
    # transport: the head's byte budget, the run's deadline while the head is awaited and the bounded
    # cookie jar of the client's own transport were gone, and endless 103s were read to the end.
    import subprocess
    import sys

    url = raw.serve(_endless_hints(raw))
    extra = ["--record", str(tmp_path / "rec")] if record else []
    done = subprocess.run([sys.executable, "-m", "agui_client.cli", "run", url, "-m", "hi", "--max-run-bytes", "1M",
                           *extra], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
                          check=False)

    assert done.returncode == 1, done.stdout + done.stderr
    assert "RUN-BYTES" in done.stdout and "max_run_bytes (1048576 bytes)" in done.stdout
    assert raw.done.wait(30) and "all sent" not in raw.notes


def test_the_cli_client_keeps_no_agent_cookie_behind_a_recorder(raw: Raw, tmp_path: Path) -> None:
    import argparse
    import contextlib

    from agui_client.cli.options import add_connection_options, open_client

    async def sets(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        cookies = [b"set-cookie: c%d=v; Path=/" % n for n in range(80)]
        writer.write(_head(b"content-type: text/event-stream", b"content-length: %d" % len(START + FINISH),
                           b"connection: close", *cookies) + START + FINISH)
        await writer.drain()

    url = raw.serve(sets)
    parser = argparse.ArgumentParser()
    add_connection_options(parser)
    args = parser.parse_args(["--record", str(tmp_path / "rec")])
    with contextlib.ExitStack() as stack:
        client = open_client(stack, url, args)
        assert client.thread("t").run("hi").outcome == "success"
        assert len(client.http.cookies.jar) == 0
    assert sorted(p.name for p in (tmp_path / "rec").iterdir())[:2] == ["01.request.json", "01.response.json"]


@pytest.mark.parametrize(("given", "meant"), [("1048576", 2**20), ("64K", 64 * 2**10), ("512m", 512 * 2**20),
                                               ("2GiB", 2 * 2**30), ("none", None), ("None", None)])
def test_max_run_bytes_sizes(given: str, meant: int | None) -> None:
    from agui_client.cli.options import byte_count

    assert byte_count(given) == meant


@pytest.mark.parametrize("given", ["0", "-5", "1.5M", "12T", "K", "lots", ""])
def test_max_run_bytes_refuses_what_is_no_size(given: str) -> None:
    import argparse

    from agui_client.cli.options import byte_count

    with pytest.raises(argparse.ArgumentTypeError) as refused:
        byte_count(given)
    assert "positive number of bytes" in str(refused.value)


@pytest.mark.parametrize("bypass", [False, True])
def test_agui_run_record_goes_through_the_environments_proxy(raw: Raw, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             bypass: bool) -> None:
    # A client given a transport is not given the environment's proxies by httpx: the recording CLI
    # client went to the agent directly. Its transport is now given the proxy httpx would have used,
    # and none for a host NO_PROXY names.
    heads: list[bytes] = []

    async def proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head, _body = await _request(reader)
        heads.append(head.split(b"\r\n")[0])
        writer.write(_head(b"content-type: text/event-stream", b"content-length: %d" % len(START + FINISH))
                     + START + FINISH)
        await writer.drain()

    import argparse
    import contextlib

    from agui_client.cli.options import add_connection_options, open_client

    port = raw.serve(proxy).split(":")[2].split("/")[0]
    _no_proxies(monkeypatch)
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{port}")
    if bypass:
        monkeypatch.setenv("NO_PROXY", "agent.invalid")
    parser = argparse.ArgumentParser()
    add_connection_options(parser)
    with contextlib.ExitStack() as stack:  # (the CLI's own wiring: --record through recorder_for)
        client = open_client(stack, "http://agent.invalid/a", parser.parse_args(["--record", str(tmp_path / "rec")]))
        if bypass:
            with pytest.raises(ag.TransportError):
                client.thread("t").run("hi")
        else:
            assert client.thread("t").run("hi").outcome == "success"

    assert heads == ([] if bypass else [b"POST http://agent.invalid/a HTTP/1.1"])


@pytest.mark.parametrize("proxy", [False, True])
def test_a_recording_transport_keeps_the_bound_on_the_answers_head(
        drive: Any, raw: Raw, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, proxy: bool) -> None:
    # RecordingTransport sent through httpx's plain transport by default: a client recording its runs
    # (docs/recordings.md) lost the head's byte budget and read endless 103s to the end. It still did
    # whenever the environment named a proxy, which that transport does not use either (a proxy for
    # other hosts, NO_PROXY naming this one, as on many a developer's machine).
    _no_proxies(monkeypatch)
    if proxy:
        monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
        monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    url = raw.serve(_endless_hints(raw))
    http = drive.http_client(transport=_recorder(drive, tmp_path))
    with drive.client(url, http_client=http, max_run_bytes=2**20) as client:
        with pytest.raises(ag.LimitExceeded) as caught:
            client.thread("t").run("hi", run_id="r")

    assert (caught.value.rule, caught.value.run_id) == ("RUN-BYTES", "r") and "head" in str(caught.value)
    assert raw.done.wait(30) and "all sent" not in raw.notes
