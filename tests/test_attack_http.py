"""Hostile HTTP below the event stream (eighteenth round): framing that runs past an answer's end on a
kept-alive connection, redirects that would drop the run, and refusals that must still name the run.

Each attack comes from a real server on 127.0.0.1 (a raw asyncio server writing exact bytes where an
ASGI app cannot say them), through both shells.
"""

from __future__ import annotations

import asyncio
import json
import socket
import struct
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from test_attack_io import Raw
from wirekit import whole_run

import agui_client as ag
from agui_client._connections import _TO_THE_PARSER, check_end
from agui_client._pool import ShardedSyncTransport
from agui_client.testing import ScriptedAgent, serve

SSE_HEAD = b"content-type: text/event-stream"


@pytest.fixture
def raw() -> Iterator[Raw]:
    servers = Raw()
    yield servers
    servers.close()


def _head(*headers: bytes, status: bytes = b"200 OK") -> bytes:
    return b"HTTP/1.1 " + status + b"\r\n" + b"".join(h + b"\r\n" for h in headers) + b"\r\n"


async def _request(reader: asyncio.StreamReader) -> tuple[bytes, bytes] | None:
    """The next request on the connection, read whole, as (head, body) (``None``: the client hung up)."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), 0)
    return head, await reader.readexactly(length)


async def _run_id(reader: asyncio.StreamReader) -> str | None:
    """The run id of the next request on the connection (``None``: the client hung up)."""
    request = await _request(reader)
    if request is None:
        return None
    run_id = json.loads(request[1])["runId"]
    assert isinstance(run_id, str)
    return run_id


#: What the agent writes after its answer's end, in the same write: a whole forged answer to the next
#: request, or bytes that are no answer at all.
FORGED = _head(SSE_HEAD, b"content-length: %d" % len(whole_run("r2", "FORGED"))) + whole_run("r2", "FORGED")
GARBAGE = b"data: the rest of an event\n\n"


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
@pytest.mark.parametrize("tail", [FORGED, GARBAGE], ids=["forged-answer", "garbage"])
def test_bytes_past_an_answers_end_never_reach_the_next_run(drive: Any, raw: Raw, framing: str, tail: bytes) -> None:
    # The agent's answer to each run ends (by its Content-Length, or its last chunk) before all it
    # writes: the rest stays on the kept-alive connection. httpcore handed that connection to the next
    # run, which read the rest as its own answer: the forged run's text, or a TransportError after its
    # request was sent (a resume spent).
    async def agent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while (run_id := await _run_id(reader)) is not None:
            raw.notes.append(run_id)
            body = whole_run(run_id, f"answer to {run_id}")
            if framing == "chunked":
                answer = _head(SSE_HEAD, b"transfer-encoding: chunked") + b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
            else:
                answer = _head(SSE_HEAD, b"content-length: %d" % len(body)) + body
            writer.write(answer + tail)
            await writer.drain()

    url = raw.serve(agent)
    with drive.client(url) as client:
        thread = client.thread("t")
        first = thread.run("hi", run_id="r1")
        second = thread.run("again", run_id="r2")

    assert first.text == "answer to r1"
    assert second.outcome == "success" and second.text == "answer to r2"
    assert raw.notes == ["r1", "r2"]  # (each request sent once, the second on a new connection)


@pytest.mark.parametrize("missing", _TO_THE_PARSER)
def test_an_httpx_without_the_parser_where_it_was_leaves_the_connection_unchecked(raw: Raw, missing: str) -> None:
    # The check of an answer's end reads httpx's and httpcore's private attributes: a release that moved
    # one must find the connection not checked (kept, as httpx keeps it), never fail the run's close.
    async def agent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while await _request(reader) is not None:
            body = whole_run("r1", "hi")
            writer.write(_head(SSE_HEAD, b"content-length: %d" % len(body)) + body + GARBAGE)
            await writer.drain()

    url = raw.serve(agent)
    with httpx.Client(transport=ShardedSyncTransport()) as client, client.stream("POST", url, json={}) as answer:
        answer.read()
        counted = answer.stream._stream  # type: ignore[attr-defined]  # (httpx's wrapper around the transport's)
        body, network = counted._stream, counted._network
        holders = [body]
        for name in _TO_THE_PARSER[:-1]:
            holders.append(getattr(holders[-1], name))
        holder = holders[_TO_THE_PARSER.index(missing)]
        network.overran = False  # (the read to the end closed the answer: checked once already)
        kept = holder.__dict__.pop(missing)  # (deleted on the instance)
        try:
            check_end(body, network)
            assert network.overran is False  # (not checked)
        finally:
            setattr(holder, missing, kept)
        check_end(body, network)
        assert network.overran is True  # (with it there, the bytes past the end are found)


@pytest.mark.parametrize("status", [301, 302])
def test_a_redirect_that_would_drop_the_run_is_not_followed(drive: Any, served: Any, status: int) -> None:
    # httpx follows a redirected POST's 301 or 302 as a GET without the body: the agent it points to
    # would never see the run (an endpoint serving GET too answered it, read as the run's answer).
    agent = ScriptedAgent.chat("moved")
    target = served(agent)

    async def moved(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"location", target.url.encode()), (b"content-length", b"0")]})
        await send({"type": "http.response.body", "body": b""})

    old = served(moved)
    with drive.client(old.url, follow_redirects=True) as client:
        with pytest.raises(ag.HTTPStatusError) as caught:
            client.thread("t").run("hi", run_id="r")

    assert caught.value.status_code == status and caught.value.location == target.url
    assert f"a {status} would send it on as a GET without the run" in str(caught.value)
    assert "307 and 308 keep the POST" in str(caught.value)
    assert agent.request_count == 0 and len(old.received) == 1


def _seeing_other(raw: Raw, hop: bytes | None = None) -> Any:
    """An agent that takes the run's POST and sends the client on (303) to ``GET /runs/r``, which answers
    with the run (after, when ``hop`` is given, redirecting with that status to ``/runs/r/events``);
    each request line is noted in ``raw.notes``."""
    async def agent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while (request := await _request(reader)) is not None:
            line = request[0].split(b"\r\n")[0]
            raw.notes.append(line)
            if line.startswith(b"POST"):
                writer.write(_head(b"location: /runs/r", b"content-length: 0", status=b"303 See Other"))
            elif hop is not None and line.startswith(b"GET /runs/r "):
                writer.write(_head(b"location: /runs/r/events", b"content-length: 0", status=hop))
            else:
                body = whole_run("r", "over here")
                writer.write(_head(SSE_HEAD, b"content-length: %d" % len(body)) + body)
            await writer.drain()
    return agent


def test_a_see_other_is_followed_as_the_get_it_asks_for(drive: Any, raw: Raw) -> None:
    # 303: the agent took the POST and says its answer is elsewhere (the one redirect meant to change
    # the method): followed, once, on the same origin, without the run sent again.
    url = raw.serve(_seeing_other(raw))
    with drive.client(url, follow_redirects=True) as client:
        result = client.thread("t").run("hi", run_id="r")

    assert result.text == "over here"
    assert raw.notes == [b"POST /agent HTTP/1.1", b"GET /runs/r HTTP/1.1"]


@pytest.mark.parametrize("status", [404, 500])
def test_a_failing_answer_after_a_see_other_names_the_get_that_got_it(drive: Any, raw: Raw, status: int) -> None:
    # The agent takes the POST and sends the client on (303) to a GET that fails: the error said
    # "from POST <the agent's URL>", a request that had succeeded, and hid the one that failed.
    async def agent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while (request := await _request(reader)) is not None:
            if request[0].startswith(b"POST"):
                writer.write(_head(b"location: /runs/r?token=s3cret&page=2", b"content-length: 0",
                                   status=b"303 See Other"))
            else:
                writer.write(_head(b"content-type: text/plain", b"content-length: 4", status=b"%d Nope" % status)
                             + b"gone")
            await writer.drain()

    url = raw.serve(agent)
    with drive.client(url, follow_redirects=True) as client:
        with pytest.raises(ag.HTTPStatusError) as caught:
            client.thread("t").run("hi", run_id="r")

    failed = url.removesuffix("/agent") + "/runs/r?token=[redacted]&page=2"
    assert caught.value.status_code == status and caught.value.request.method == "GET"
    assert f"HTTP {status} Nope from GET {failed}: gone" == str(caught.value)
    assert "s3cret" not in str(caught.value) and caught.value.url == url


@pytest.mark.parametrize("hop", [b"301 Moved Permanently", b"302 Found", b"307 Temporary Redirect"])
def test_a_redirect_of_the_get_a_see_other_asked_for_is_followed(drive: Any, raw: Raw, hop: bytes) -> None:
    # After a 303 the request is a GET with no run to drop: its own redirect keeps it a GET, and is
    # followed as any redirect is. Judged against the POST sent first, it was refused with a message
    # saying the 307 "would send it on as a GET without the run".
    url = raw.serve(_seeing_other(raw, hop))
    with drive.client(url, follow_redirects=True) as client:
        result = client.thread("t").run("hi", run_id="r")

    assert result.text == "over here"
    assert raw.notes == [b"POST /agent HTTP/1.1", b"GET /runs/r HTTP/1.1", b"GET /runs/r/events HTTP/1.1"]


def test_a_redirect_to_another_scheme_on_the_same_host_and_port_is_not_followed(drive: Any, served: Any) -> None:
    # http:// to https:// at the same host and port is another origin (RFC 6454: the scheme is a part
    # of it): the caller's headers are not sent on, whatever the host and port say.
    async def moved(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 307,
                    "headers": [(b"location", moved_to.encode()), (b"content-length", b"0")]})
        await send({"type": "http.response.body", "body": b""})

    old = served(moved)
    moved_to = old.url.replace("http://", "https://")  # (the same host and port, another scheme)
    with drive.client(old.url, follow_redirects=True) as client:
        with pytest.raises(ag.HTTPStatusError) as caught:
            client.thread("t").run("hi", run_id="r")

    assert caught.value.status_code == 307 and caught.value.location == moved_to
    assert "it leads to another origin" in str(caught.value)
    assert len(old.received) == 1


@pytest.mark.parametrize(("status", "where"), [(301, "same origin"), (302, "same origin"), (307, "another port")])
def test_a_redirected_resume_is_sent_nowhere_else_and_never_again(drive: Any, served: Any, status: int,
                                                                  where: str) -> None:
    # The run goes to the agent; its resume is redirected: as a GET without the answers (301, 302) or
    # to another origin (the port differs), with the caller's key. Neither is followed: the answers are
    # sent once, to the agent's URL, and the interrupt stays open for a resume sent again.
    agent = ScriptedAgent.interrupts(1)
    with serve(agent) as elsewhere:
        target = served(agent).url if where == "same origin" else elsewhere.url
        methods: list[str] = []

        async def front(scope: Any, receive: Any, send: Any) -> None:
            methods.append(scope["method"])
            if len(methods) == 1:
                await agent(scope, receive, send)
                return
            await send({"type": "http.response.start", "status": status,
                        "headers": [(b"location", target.encode()), (b"content-length", b"0")]})
            await send({"type": "http.response.body", "body": b""})

        endpoint = served(front)
        with drive.client(endpoint.url, follow_redirects=True, headers={"X-Api-Key": "k"}) as client:
            thread = client.thread("t")
            assert thread.run("hi").outcome == "interrupt"
            with pytest.raises(ag.HTTPStatusError) as caught:
                thread.run(resume=thread.resume_builder().answer("interrupt-1", {"answer": "yes"}))
            still_open = [i.id for i in thread.open_interrupts]

    assert caught.value.status_code == status and caught.value.location == target
    assert methods == ["POST", "POST"] and agent.request_count == 1  # (the run; the resume never reached it)
    assert still_open == ["interrupt-1"]


@pytest.mark.parametrize("coding", [b"gzip, gzip", b"br", b"zstd", b"x-unknown"])
def test_a_content_coding_refused_names_the_run(drive: Any, raw: Raw, coding: bytes) -> None:
    body = whole_run("r", "hi")

    async def agent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _run_id(reader)
        writer.write(_head(SSE_HEAD, b"content-encoding: " + coding, b"content-length: %d" % len(body)) + body)
        await writer.drain()
        await reader.read()

    url = raw.serve(agent)
    with drive.client(url) as client:
        with pytest.raises(ag.ProtocolError) as caught:
            client.thread("t").run("hi", run_id="r")

    assert caught.value.rule == "CONTENT-CODING" and caught.value.run_id == "r"
    assert str(caught.value).startswith("run 'r'")


@pytest.mark.parametrize("charset", ["utf-16", "latin-1", "no-such-charset"])
def test_an_event_stream_naming_another_charset_is_read_as_utf8_and_says_so(drive: Any, raw: Raw,
                                                                              charset: str) -> None:
    # An event stream is UTF-8 whatever it names: one written in UTF-16 reads as no events, and the run
    # ended as StreamEnded ("no run started") with nothing to say why.
    encoding = "utf-16-le" if charset == "utf-16" else "utf-8"
    body = whole_run("r", "hi").decode().encode(encoding)

    async def agent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _run_id(reader)
        writer.write(_head(SSE_HEAD + b"; charset=" + charset.encode(), b"content-length: %d" % len(body)) + body)
        await writer.drain()
        await reader.read()

    url = raw.serve(agent)
    with drive.client(url) as client:
        if charset == "utf-16":
            with pytest.raises(ag.StreamEnded) as caught:
                client.thread("t").run("hi", run_id="r")
            assert caught.value.result is not None
            warnings = caught.value.result.warnings
        else:
            warnings = client.thread("t").run("hi", run_id="r").warnings

    assert [w.code for w in warnings][:1] == ["SSE-CHARSET"]
    assert f"names charset '{charset}'" in warnings[0].message


@pytest.mark.parametrize("charset", [b"", b"; charset=utf-8", b"; charset=UTF8", b"; charset=us-ascii",
                                     b'; charset="utf-8"',  # (and UTF-8 labels only the WHATWG standard knows)
                                     b"; charset=unicode-1-1-utf-8", b"; charset=x-unicode20utf8",
                                     b"; charset=unicode11utf8", b"; charset=unicode20utf8",
                                     # (a label is read as WHATWG reads one: spaces around it, any case)
                                     b'; charset=" Unicode-1-1-UTF-8 "', b"; charset=utf-8-sig"])
def test_an_event_stream_in_utf8_or_naming_none_has_no_charset_warning(drive: Any, raw: Raw, charset: bytes) -> None:
    body = whole_run("r", "hi")

    async def agent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _run_id(reader)
        writer.write(_head(SSE_HEAD + charset, b"content-length: %d" % len(body)) + body)
        await writer.drain()
        await reader.read()

    url = raw.serve(agent)
    with drive.client(url) as client:
        result = client.thread("t").run("hi", run_id="r")

    assert result.text == "hi" and result.warnings == ()


#: A run cut inside its second event (a text message started, its delta half written).
CUT = whole_run("r", "hello")[: whole_run("r", "hello").index(b"hello") + 2]


def _then_reset(*writes: bytes) -> Any:
    """An agent writing ``writes`` and then resetting the connection (RST, not an orderly end)."""
    async def agent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _run_id(reader)
        for data in writes:
            writer.write(data)
            await writer.drain()
        writer.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()
    return agent


@pytest.mark.parametrize("writes", [
    (_head(SSE_HEAD, b"transfer-encoding: chunked"), b"%x\r\n%s\r\n" % (len(CUT), CUT)),  # between chunks
    (_head(SSE_HEAD, b"transfer-encoding: chunked"), b"%x\r\n%s" % (len(CUT) + 99, CUT)),  # inside a chunk
    (_head(SSE_HEAD, b"content-length: 100000"), CUT),
], ids=["reset-mid-event", "reset-mid-chunk", "reset-within-content-length"])
def test_a_reset_mid_stream_is_stream_ended_with_what_was_folded(drive: Any, raw: Raw, writes: tuple[bytes, ...]
                                                                  ) -> None:
    url = raw.serve(_then_reset(*writes))

    with drive.client(url) as client:
        with pytest.raises(ag.StreamEnded) as caught:
            client.thread("t").run("hi", run_id="r")

    assert caught.value.run_id == "r" and caught.value.result is not None
    assert [type(m).__name__ for m in caught.value.result.messages] == ["UserMessage", "AssistantMessage"]


@pytest.mark.parametrize("before", [
    b"HTTP/1.1 100 Continue\r\n\r\n",
    b"HTTP/1.1 103 Early Hints\r\nlink: <http://elsewhere.invalid/x>; rel=preload\r\n\r\n" * 3,
    b"HTTP/1.0",  # (marks an HTTP/1.0 answer whose body ends when the agent closes)
], ids=["100-continue", "103-early-hints-with-links", "http-1.0-close-delimited"])
def test_informational_answers_and_close_delimited_bodies_are_read(drive: Any, raw: Raw, before: bytes) -> None:
    body = whole_run("r", "hi")
    if before == b"HTTP/1.0":
        answer = b"HTTP/1.0 200 OK\r\n" + SSE_HEAD + b"\r\n\r\n" + body
    else:
        answer = before + _head(SSE_HEAD, b"content-length: %d" % len(body)) + body

    async def agent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _run_id(reader)
        writer.write(answer)
        await writer.drain()

    url = raw.serve(agent)
    with drive.client(url) as client:
        result = client.thread("t").run("hi", run_id="r")

    assert result.outcome == "success" and result.text == "hi"
