"""A hostile agent's answers the client survives, found by attacking it on loopback (the attack audit).

Each test plays one attack through a real server (uvicorn on 127.0.0.1) and both shells, and checks
the typed error, what was kept, and that the attack did not cost what it aimed at (memory, the
process's stack, the exception type a caller catches).
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import threading
import tracemalloc
import weakref
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import agui_client as ag
from agui_client.core.patch import MAX_DEPTH
from agui_client.stores import MemoryStore
from agui_client.testing import Finish, RecordingTransport, Respond, ScriptedAgent, Start
from agui_client.types import RunErrorEvent, StateDeltaEvent, StateSnapshotEvent
from agui_client.types.run import Interrupt, RunFinishedInterruptOutcome
from agui_client.wire.sink import WARNINGS_PER_CODE

START = b'data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\n'
FINISH = b'data: {"type":"RUN_FINISHED","threadId":"t","runId":"r"}\n\n'


def _gzip(data: bytes, wbits: int = 31) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, wbits)
    return packer.compress(data) + packer.flush()


def _answer(status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> Any:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})
    return app


# --------------------------------------------------------------------------------------------------
# Content codings: a few kilobytes on the wire, gigabytes once inflated
# --------------------------------------------------------------------------------------------------

def _bomb() -> bytes:
    """256 MiB of one comment line, gzip-coded a MiB at a time: about 250 KiB on the wire."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = b"x" * 2**20
    return b"".join([packer.compress(START + b":"), *(packer.compress(block) for _ in range(256)),
                     packer.compress(b"\n"), packer.flush()])


BOMB = _bomb()


def test_a_gzip_bomb_is_inflated_a_bounded_piece_at_a_time_and_refused_at_the_line_limit(
        drive: Any, served: Any) -> None:
    # httpx inflated each 64 KiB read whole (64 MiB at once), before the event-size limit could look.
    endpoint = served(_answer(200, [(b"content-type", b"text/event-stream"), (b"content-encoding", b"gzip")], BOMB))

    tracemalloc.start()
    try:
        with drive.client(endpoint.url, max_event_bytes=2**20) as client:
            thread = client.thread("t")
            with pytest.raises(ag.LimitExceeded) as caught:
                thread.run("hi", run_id="r")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert caught.value.rule == "TR-11" and caught.value.run_id == "r"
    assert peak < 16 * 2**20, f"{peak / 2**20:.0f} MiB held while reading a 1 MiB-limited stream"


@pytest.mark.parametrize("coding", [b"gzip, gzip", b"gzip,deflate", b"br", b"zstd", b"compress"])
def test_a_stacked_or_unknown_content_coding_is_refused_with_its_code(drive: Any, served: Any, coding: bytes) -> None:
    # Two layers of gzip turned 2 KB on the wire into a gigabyte in one read; an unknown coding was read
    # as if it were none (garbage framed as SSE).
    endpoint = served(_answer(200, [(b"content-type", b"text/event-stream"), (b"content-encoding", coding)],
                              _gzip(_gzip(START + FINISH))))

    with drive.client(endpoint.url) as client:
        with pytest.raises(ag.ProtocolError) as caught:
            client.thread().run("hi")

    assert caught.value.rule == "CONTENT-CODING"
    assert coding.decode() in str(caught.value)


def test_raw_deflate_and_identity_are_read(drive: Any, served: Any) -> None:
    raw = served(_answer(200, [(b"content-type", b"text/event-stream"), (b"content-encoding", b"deflate")],
                         _gzip(START + FINISH, wbits=-15)))
    identity = served(_answer(200, [(b"content-type", b"text/event-stream"), (b"content-encoding", b"identity")],
                              START + FINISH))

    for endpoint in (raw, identity):
        with drive.client(endpoint.url) as client:
            assert client.thread("t").run("hi", run_id="r").outcome == "success"


def test_only_the_codings_read_in_bounded_steps_are_offered(drive: Any, served: Any) -> None:
    endpoint = served(_answer(200, [(b"content-type", b"text/event-stream")], START + FINISH))
    offered = served(_answer(200, [(b"content-type", b"text/event-stream")], START + FINISH))

    with drive.client(endpoint.url) as client:
        client.thread("t").run("hi", run_id="r")
    with drive.client(offered.url, headers={"Accept-Encoding": "identity"}) as client:
        client.thread("t").run("hi", run_id="r")

    assert endpoint.received[0].headers["accept-encoding"] == "gzip, deflate"
    assert offered.received[0].headers["accept-encoding"] == "identity"  # (the caller's choice stands)


def test_an_error_body_bomb_is_read_only_to_its_excerpt(drive: Any, served: Any) -> None:
    endpoint = served(_answer(502, [(b"content-type", b"text/plain"), (b"content-encoding", b"gzip")], BOMB))

    tracemalloc.start()
    try:
        with drive.client(endpoint.url) as client:
            with pytest.raises(ag.HTTPStatusError) as caught:
                client.thread().run("hi")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert caught.value.status_code == 502 and caught.value.body.startswith("data: ")
    assert peak < 16 * 2**20, f"{peak / 2**20:.0f} MiB held to quote a 2 KiB excerpt"


# --------------------------------------------------------------------------------------------------
# Header values outside ASCII on an error status
# --------------------------------------------------------------------------------------------------


def test_an_error_status_with_header_bytes_outside_ascii_is_an_http_status_error(drive: Any, served: Any) -> None:
    # Building the error's response again encoded the headers as ASCII: UnicodeEncodeError escaped.
    endpoint = served(_answer(503, [(b"content-type", b"text/plain; charset=\x9b"), (b"x-note", b"caf\xe9"),
                                    (b"retry-after", b"\xb2")], b"busy"))

    with drive.client(endpoint.url) as client:
        with pytest.raises(ag.HTTPStatusError) as caught:
            client.thread().run("hi")

    error = caught.value
    assert error.status_code == 503 and error.body == "busy"
    raw = dict(error.response.headers.raw)
    assert (raw[b"x-note"], raw[b"retry-after"]) == (b"caf\xe9", b"\xb2")
    assert error.retry_after is None  # ("²" is a digit to Python, not a delay-seconds)


@pytest.mark.parametrize(("value", "seconds"), [("7", 7.0), ("\u0663", None), ("1" * 400, None)])
def test_retry_after_is_ascii_delay_seconds(drive: Any, served: Any, value: str, seconds: float | None) -> None:
    endpoint = served(_answer(429, [(b"retry-after", value.encode())], b"slow down"))

    with drive.client(endpoint.url) as client:
        with pytest.raises(httpx.HTTPStatusError) as caught:
            client.thread().run("hi")

    assert isinstance(caught.value, ag.HTTPStatusError) and caught.value.retry_after == seconds


# --------------------------------------------------------------------------------------------------
# State nested deeper, a few bytes at a time
# --------------------------------------------------------------------------------------------------


def _depth(value: Any) -> int:
    """Levels of containers (``{}`` is 1, ``{"a": []}`` 2), as the decoder's limit counts them."""
    depth, level = 0, [value]
    while level := [node for node in level if isinstance(node, (dict, list))]:
        depth += 1
        level = [child for node in level for child in (node.values() if isinstance(node, dict) else node)]
    return depth


#: Three operations that put the subtree at /a one level further down: 130 bytes an event.
SINK = StateDeltaEvent(delta=[{"op": "add", "path": "/t", "value": {}}, {"op": "move", "from": "/a", "path": "/t/a"},
                              {"op": "move", "from": "/t", "path": "/a"}])


def test_moves_that_sink_the_state_a_level_per_event_stop_at_the_depth_limit(drive: Any, served: Any) -> None:
    # Each event was accepted: 3,000 of them nested the state 3,000 deep, and the save after the run
    # raised RecursionError out of json (the run lost, the thread unable to save or send again).
    agent = ScriptedAgent([[Start(), StateSnapshotEvent(snapshot={"a": {"leaf": 1}}), *[SINK] * 600, Finish()],
                           [Start(), Finish()]])
    endpoint = served(agent)

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        result = thread.run("hi")
        again = thread.run("and again")

    assert result.outcome == "success" and again.outcome == "success"
    refused = [w for w in result.warnings if w.code == "SP-06/AGUI302"]
    assert len(refused) == 600 - (MAX_DEPTH - 2) and refused[0].pointer == "/delta/1"
    assert "nest deeper than" in refused[0].message
    assert _depth(result.state.state) == MAX_DEPTH  # (as deep as allowed, and no deeper)
    assert _depth(agent.requests[1].state) == MAX_DEPTH  # (saved, and sent again)


def test_a_deep_value_added_at_a_deep_path_is_refused_keeping_the_state(drive: Any, served: Any) -> None:
    def nested(levels: int) -> Any:
        value: Any = {}
        for _ in range(levels - 1):
            value = {"k": value}
        return value

    path = "/k" * 400
    agent = ScriptedAgent([[Start(), StateSnapshotEvent(snapshot=nested(450)),
                            StateDeltaEvent(delta=[{"op": "add", "path": f"{path}/x", "value": nested(300)}]),
                            StateDeltaEvent(delta=[{"op": "add", "path": f"{path}/y", "value": nested(100)}]),
                            Finish()]])
    endpoint = served(agent)

    with drive.client(endpoint.url) as client:
        result = client.thread().run("hi")

    assert [w.code for w in result.warnings if w.code.startswith("SP-")] == ["SP-06/AGUI302"]
    assert [w.index for w in result.warnings if w.code == "SP-06/AGUI302"] == [2]
    assert _depth(result.state.state) == 401 + 100  # (the second, within the limit, applied)


@pytest.mark.parametrize(("members", "named"), [
    (b'"type":"CUSTOM","name":"x","value":', "CUSTOM"),
    (b'"name":"x","value":', None),  # ("type" after the deep member: nothing reads that far)
])
def test_a_payload_nested_past_what_parsers_read_is_refused_naming_its_type(
        drive: Any, served: Any, members: bytes, named: str | None) -> None:
    # Past about 1,000 levels no parser here reads the payload: the refusal named the event's index
    # but not its type, which the members before the deep one give.
    deep = b"[" * 1100 + b"]" * 1100
    endpoint = served(_answer(200, [(b"content-type", b"text/event-stream")],
                              START + b"data: {" + members + deep + b',"type":"CUSTOM"}\n\n' + FINISH))

    with drive.client(endpoint.url) as client:
        with pytest.raises(ag.LimitExceeded) as caught:
            client.thread().run("hi")

    error = caught.value
    assert (error.run_id, error.index, error.event_type) == ("r", 1, named)
    assert ("type unknown" in str(error)) is (named is None)


# --------------------------------------------------------------------------------------------------
# httpx's own request log
# --------------------------------------------------------------------------------------------------


def test_httpx_request_log_line_carries_no_url_credentials(drive: Any, served: Any,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    # httpx logs "HTTP Request: POST <url>" at INFO, userinfo and query token included: an application
    # logging at INFO wrote them to its logs.
    endpoint = served(_answer(200, [(b"content-type", b"text/event-stream")], START + FINISH))
    url = endpoint.url.replace("http://", "http://bob:hunter2pw@") + "?token=QTOKEN123456&v=2"

    with caplog.at_level(logging.INFO, logger="httpx"), drive.client(url) as client:
        assert client.thread("t").run("hi", run_id="r").outcome == "success"

    lines = [record.getMessage() for record in caplog.records if record.name == "httpx"]
    assert any(line.startswith("HTTP Request: POST ") and "token=[redacted]&v=2" in line for line in lines), lines
    assert not [line for line in lines if "hunter2pw" in line or "QTOKEN123456" in line or "bob" in line]


def test_httpx_request_log_line_hides_the_query_values_a_client_marks_sensitive(
        drive: Any, served: Any, caplog: pytest.LogCaptureFixture) -> None:
    # The filter showed the URL with the default sensitive names only: a parameter the caller marked
    # (``sensitive_headers``), which the client's own errors and logs redact, reached httpx's log line.
    endpoint = served(_answer(200, [(b"content-type", b"text/event-stream")], START + FINISH))

    with caplog.at_level(logging.INFO, logger="httpx"), \
            drive.client(endpoint.url + "?tenant=TENANT7a6b5c4d&v=2", sensitive_headers=["Tenant"]) as client:
        assert client.thread("t").run("hi", run_id="r").outcome == "success"

    lines = [record.getMessage() for record in caplog.records if record.name == "httpx"]
    assert any(line.startswith("HTTP Request: POST ") and "tenant=[redacted]&v=2" in line for line in lines), lines
    assert not [line for line in lines if "TENANT7a6b5c4d" in line]


def test_a_name_marked_sensitive_is_shown_again_once_every_client_marking_it_closed(
        drive: Any, served: Any, caplog: pytest.LogCaptureFixture) -> None:
    # The names were kept for the life of the process: a closed client's marked name stayed hidden in
    # every later client's log lines (and made tests depend on the order they ran in).
    endpoint = served(_answer(200, [(b"content-type", b"text/event-stream")], START + FINISH))
    marking = ag.AgentClient("http://127.0.0.1:9/agent", sensitive_headers=["Shard"])
    with drive.client(endpoint.url, sensitive_headers=["shard"]):
        pass  # (made and closed: its mark is given back, the other client's stays)

    with caplog.at_level(logging.INFO, logger="httpx"), drive.client(endpoint.url + "?shard=7&v=2") as client:
        assert client.thread("t").run("hi", run_id="r").outcome == "success"
        marking.close()
        assert client.thread("t2").run("hi", run_id="r2").outcome == "success"

    lines = [record.getMessage() for record in caplog.records if record.name == "httpx"]
    assert len(lines) == 2, lines
    assert "shard=[redacted]&v=2" in lines[0], lines
    assert "shard=7&v=2" in lines[1], lines


@pytest.mark.parametrize("kind", [ag.AgentClient, ag.AsyncAgentClient], ids=["sync", "async"])
def test_a_name_marked_by_a_client_collected_unclosed_is_shown_again(
        served: Any, caplog: pytest.LogCaptureFixture, kind: type[Any]) -> None:
    # A client dropped without close() kept its names marked for the life of the process: hidden in
    # every later client's log lines, and a set that grew with each such client.
    endpoint = served(_answer(200, [(b"content-type", b"text/event-stream")], START + FINISH))
    marking = kind("http://127.0.0.1:9/agent", sensitive_headers=["Zone"])
    collected = weakref.ref(marking)
    with caplog.at_level(logging.INFO, logger="httpx"), ag.AgentClient(endpoint.url + "?zone=7&v=2") as client:
        assert client.thread("t").run("hi", run_id="r").outcome == "success"
        del marking
        gc.collect()
        assert collected() is None  # (the mark's finalizer keeps the client alive in no way)
        assert client.thread("t2").run("hi", run_id="r2").outcome == "success"

    lines = [record.getMessage() for record in caplog.records if record.name == "httpx"]
    assert len(lines) == 2, lines
    assert "zone=[redacted]&v=2" in lines[0], lines
    assert "zone=7&v=2" in lines[1], lines


@pytest.mark.parametrize("kind", [ag.AgentClient, ag.AsyncAgentClient], ids=["sync", "async"])
def test_a_client_collected_while_names_are_being_marked_does_not_hang_the_thread(kind: type[Any]) -> None:
    # The collector runs wherever an allocation finds it due, so also in the middle of another
    # client's marking (its set of names is made under the filter's lock). The finalizer then took
    # that same lock, not reentrant, in the same thread: the thread hung for good, and every client
    # made after it with it. (The lock is held here by hand: that is where the collector can come.)
    from agui_client._logs import _HTTPX_FILTER
    done = threading.Event()
    outcome: list[BaseException | None] = []

    def collect_while_marking() -> None:
        try:
            dropped = kind("http://127.0.0.1:9/agent", sensitive_headers=["Region"])
            collected = weakref.ref(dropped)
            with _HTTPX_FILTER._lock:
                del dropped
                gc.collect()
                assert collected() is None
            outcome.append(None)
        except BaseException as exc:  # (said by the test's thread below)
            outcome.append(exc)
        finally:
            done.set()

    threading.Thread(target=collect_while_marking, daemon=True).start()
    if not done.wait(10):
        _HTTPX_FILTER._lock.release()  # (lets the hung thread go on, so later tests' clients do not hang too)
        pytest.fail("the collector's finalizer waited for a lock its own thread held")
    assert outcome == [None], outcome
    # Given back all the same, at the next client's mark: its name is shown again.
    assert "region" in _HTTPX_FILTER.marked
    with ag.AgentClient("http://127.0.0.1:9/agent"):
        assert "region" not in _HTTPX_FILTER.marked


# --------------------------------------------------------------------------------------------------
# Warnings: a stream of two-byte faults
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("unit", "code"), [
    (lambda i: b"x\n", "AGUI501"),  # an unknown SSE field, two bytes a warning
    (lambda i: b"\xef\xbb\xbf\n", "BOM"),
    (lambda i: b'data: {"type":"X%d"}\n\n' % i, "UK-02"),  # a new unknown type each time
    (lambda i: b'data: {"type":"STATE_DELTA","delta":[{"op":"remove","path":"/m"}]}\n\n', "SP-06/AGUI302"),
], ids=["sse-field", "bom", "unknown-types", "patch"])
def test_a_flood_of_one_fault_keeps_a_bounded_number_of_warnings(drive: Any, served: Any, unit: Any,
                                                                 code: str) -> None:
    # Every one was kept: 4 MB of "x\n" lines held 2 million warnings (450 MB).
    repeats = WARNINGS_PER_CODE * 5
    endpoint = served(_answer(200, [(b"content-type", b"text/event-stream")],
                              START + b"".join(unit(i) for i in range(repeats)) + FINISH))

    with drive.client(endpoint.url) as client:
        result = client.thread("t").run("hi", run_id="r")

    assert result.outcome == "success"
    kept = [w for w in result.warnings if w.code == code]
    assert len(kept) == WARNINGS_PER_CODE
    assert kept[-1].message.endswith(f"({WARNINGS_PER_CODE} warnings with code {code}: further ones are not kept)")
    assert kept[-1].message.count("further ones are not kept") == 1  # (said once, though two bounds meet there)
    assert not kept[-2].message.endswith("not kept)")


# --------------------------------------------------------------------------------------------------
# Recordings: the agent repeating a credential
# --------------------------------------------------------------------------------------------------

TOKEN = "sk-live-7f3a9b2c1d0e"


@pytest.mark.parametrize("coding", [None, b"gzip"])
def test_a_credential_the_agent_echoes_is_not_written_to_the_recording(tmp_path: Path, served: Any,
                                                                       coding: bytes | None) -> None:
    # The errors and the result were redacted, but NN.sse kept the agent's answer as it came: the bearer
    # token and the URL's key in a RUN_ERROR, on disk in a folder made to be committed as a test fixture.
    async def echo(scope: Any, receive: Any, send: Any) -> None:
        headers = dict(scope["headers"])
        said = f"refused {headers[b'authorization'].decode()} for key={scope['query_string'].decode()[4:]}"
        body = START + b"data: " + json.dumps({"type": "RUN_ERROR", "message": said}).encode() + b"\n\n"
        if coding is not None:
            body = _gzip(body)
        await send({"type": "http.response.start", "status": 200, "headers": [
            (b"content-type", b"text/event-stream"), *([(b"content-encoding", coding)] if coding else [])]})
        for at in range(0, len(body), 7):  # (the token cut across several reads)
            await send({"type": "http.response.body", "body": body[at:at + 7], "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    endpoint = served(echo)
    recorder = RecordingTransport(tmp_path)
    with httpx.Client(transport=recorder) as http, \
            ag.AgentClient(f"{endpoint.url}?key=QKEY4d5e6f7a8b", http_client=http,
                           headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        result = client.thread("t").run("hi", run_id="r")

    assert result.error is not None and "[redacted]" in result.error.message
    written = b"".join(path.read_bytes() for path in tmp_path.iterdir())
    assert TOKEN.encode() not in written and b"QKEY4d5e6f7a8b" not in written
    replayed = ag.replay(tmp_path / "01.sse")
    assert replayed.error is not None
    assert replayed.error.message == "refused [redacted] for key=[redacted]"


def test_a_credential_cut_between_any_two_reads_is_still_replaced() -> None:
    from agui_client.core.redact import Redactor
    from agui_client.testing.recording import _Scrub

    redactor = Redactor.of([("Authorization", f"Bearer {TOKEN}")])
    body = f'data: {{"type":"RUN_ERROR","message":"bad {TOKEN}, {json.dumps(TOKEN)[1:-1]}!"}}\n\n'.encode()
    for size in (1, 2, 3, 5, len(TOKEN) - 1, len(TOKEN), 64):
        scrub = _Scrub(redactor)
        written = b"".join(scrub(body[at:at + size]) for at in range(0, len(body), size)) + scrub.rest()
        assert written == redactor.text(body.decode()).encode(), size
        assert TOKEN.encode() not in written


# --------------------------------------------------------------------------------------------------
# run_timeout while the answer's head is awaited
# --------------------------------------------------------------------------------------------------


@pytest.fixture
def early_hints() -> Iterator[tuple[str, list[str], threading.Event]]:
    """A raw HTTP server that answers with ``103 Early Hints`` ten times a second for twenty seconds, then
    a run. When the exchange is over it notes how (``"left"``: the client hung up first; ``"answered"``)
    and sets the event."""
    what: list[str] = []
    over = threading.Event()
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    port: list[int] = []

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        try:
            for _ in range(200):
                writer.write(b"HTTP/1.1 103 Early Hints\r\nlink: </style.css>\r\n\r\n")
                await writer.drain()
                try:
                    if await asyncio.wait_for(reader.read(1 << 16), 0.1) == b"":
                        what.append("left")
                        return
                except asyncio.TimeoutError:
                    pass
            body = START + FINISH
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: %d\r\n\r\n%s"
                         % (len(body), body))
            await writer.drain()
            what.append("answered")
        except ConnectionError:
            what.append("left")
        finally:
            writer.close()
            over.set()

    stop: list[asyncio.Event] = []

    async def main() -> None:
        stop.append(asyncio.Event())
        server = await asyncio.start_server(answer, "127.0.0.1", 0)
        port.append(server.sockets[0].getsockname()[1])
        ready.set()
        async with server:
            await stop[0].wait()

    thread = threading.Thread(target=lambda: loop.run_until_complete(main()), daemon=True)
    thread.start()
    ready.wait()
    yield f"http://127.0.0.1:{port[0]}/", what, over
    over.wait(30)  # (the exchange ends within its twenty seconds whatever the client did)
    loop.call_soon_threadsafe(stop[0].set)
    thread.join(10)
    loop.close()


def test_run_timeout_holds_while_informational_responses_keep_coming(
        drive: Any, early_hints: tuple[str, list[str], threading.Event]) -> None:
    # Each 103 reset httpx's read timeout, and the deadline was looked at only once the head came: the
    # client waited out the agent's twenty seconds (or for ever) past a run_timeout of one.
    url, what, over = early_hints

    with drive.client(url, run_timeout=1.0) as client:
        with pytest.raises(ag.RunTimeout):
            client.thread().run("hi")

    assert over.wait(30)
    assert what == ["left"]  # (the client hung up while 103s were still coming)


def test_a_record_nested_past_what_json_writes_is_a_store_error() -> None:
    # (state a caller set by hand: a server's patches stop at MAX_DEPTH) RecursionError escaped the save.
    deep: Any = {}
    for _ in range(5000):
        deep = {"a": deep}

    with pytest.raises(ag.StoreError) as refused:
        MemoryStore().save("t", {"state": deep}, expected_version=None)
    assert "not JSON-ready" in str(refused.value)


def test_an_error_about_what_is_left_open_names_ten_ids_and_counts_the_rest(drive: Any, served: Any) -> None:
    # It listed every one: 200,000 open steps made a 2 MB error message (one line on the terminal).
    steps = b"".join(b'data: {"type":"STEP_STARTED","stepName":"s%d%s"}\n\n' % (i, b"x" * 300) for i in range(20_000))
    endpoint = served(_answer(200, [(b"content-type", b"text/event-stream")], START + steps + FINISH))

    with drive.client(endpoint.url) as client:
        with pytest.raises(ag.SequenceError) as caught:
            client.thread("t").run("hi", run_id="r")

    assert caught.value.rule == "ST-02/AGUI007" and caught.value.index == 20_001
    assert str(caught.value).endswith(" and 19990 more") and len(str(caught.value)) < 2000


def test_an_unreadable_expires_at_is_quoted_cut_short_in_its_warning() -> None:
    # The whole value was quoted: an expiresAt of a megabyte made a warning line of a megabyte.
    from agui_client.core.expiry import is_expired
    from agui_client.types.run import Interrupt

    with pytest.warns(ag.AguiWarning) as caught:
        assert not is_expired(Interrupt(id="i" * 5000, reason="r", expires_at="9" * 100_000))

    assert len(caught) == 1
    message = str(caught[0].message)
    assert message.startswith("[IR-18] interrupt ")
    assert len(message) < 400 and "is not a date; it never expires" in message


def test_a_refused_resume_lists_ten_interrupts_and_counts_the_rest(drive: Any, served: Any) -> None:
    # Every id was listed: 5,000 open interrupts made refusals of hundreds of kilobytes.
    interrupts = tuple(Interrupt(id=f"i{n}", reason="approval", message="ok?") for n in range(5000))
    endpoint = served(ScriptedAgent([[Start(), Finish(outcome=RunFinishedInterruptOutcome(interrupts=interrupts))]]))

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        assert thread.run("hi").outcome == "interrupt"
        with pytest.raises(ag.AwaitingAnswers) as waiting:
            thread.run("next")
        builder = thread.resume_builder()
        builder.answer("i0", {"approved": True})
        with pytest.raises(ag.UncoveredInterrupts) as uncovered:
            thread.run(resume=builder)

    assert len(str(waiting.value)) < 2000 and " and 4990 more" in str(waiting.value)
    assert len(str(uncovered.value)) < 2000 and "'i10', ...] (4989 more)" in str(uncovered.value)
    assert len(uncovered.value.problems["uncovered"]) == 4999  # (the error still holds them all)
    assert len(endpoint.received) == 1  # (nothing sent)


# --------------------------------------------------------------------------------------------------
# The agent's words in an exception's message (a traceback prints it to a terminal)
# --------------------------------------------------------------------------------------------------

HOSTILE = "\x1b]0;PWNED\x07|\x9b2J|\u202eevil|\rover"


def test_the_agents_words_quoted_in_an_exception_message_are_inert(drive: Any, served: Any) -> None:
    # An HTTP error's excerpt and a RUN_ERROR's message went into str(exc) as they came: a script that
    # let the exception end it printed the agent's escape sequences to its terminal.
    endpoint = served(ScriptedAgent([Respond(status=500, body=HOSTILE),
                                     [Start(), RunErrorEvent(message=HOSTILE, code="E1")]]))

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        with pytest.raises(ag.HTTPStatusError) as status:
            thread.run("hi")
        result = thread.run("again")
    with pytest.raises(ag.RunFailed) as failed:
        result.raise_for_outcome()

    for error, kept in ((status.value, status.value.body), (failed.value, failed.value.message)):
        message = str(error)
        assert not [c for c in message if c in "\x1b\x07\x9b\u202e\r"], message
        assert "\\x1b]0;PWNED\\x07|\\x9b2J|\\u202eevil|\\rover" in message
        assert kept == HOSTILE  # (the attribute keeps the agent's words as they came)


# --------------------------------------------------------------------------------------------------
# Review: bytes after the end of a coded body
# --------------------------------------------------------------------------------------------------


def _coded_then_plain(coding: bytes, after: int) -> Any:
    """An agent answering a whole run gzip- or deflate-coded, then ``after`` bytes more, not coded."""
    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": [
            (b"content-type", b"text/event-stream"), (b"content-encoding", coding)]})
        await send({"type": "http.response.body", "body": _gzip(START + FINISH, 31 if coding == b"gzip" else 15),
                    "more_body": True})
        block = b":" * 2**16
        for _ in range(after // len(block)):
            await send({"type": "http.response.body", "body": block, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})
    return app


@pytest.mark.parametrize("coding", [b"gzip", b"deflate"])
def test_bytes_after_the_end_of_a_coded_body_are_not_kept(drive: Any, served: Any, coding: bytes) -> None:
    # zlib keeps what follows the end of its stream in ``unused_data``, copying it all again at every
    # read: 16 MiB sent uncoded after 60 bytes of gzip were all held (and copied some 256 times).
    endpoint = served(_coded_then_plain(coding, 16 * 2**20))

    tracemalloc.start()
    try:
        with drive.client(endpoint.url) as client:
            result = client.thread("t").run("hi", run_id="r")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert result.outcome == "success"
    assert peak < 4 * 2**20, f"{peak / 2**20:.0f} MiB held for bytes after the end of the body"


def test_a_recording_keeps_nothing_after_the_end_of_a_coded_body(tmp_path: Path, served: Any) -> None:
    endpoint = served(_coded_then_plain(b"gzip", 4 * 2**20))

    tracemalloc.start()
    try:
        with httpx.Client(transport=RecordingTransport(tmp_path)) as http, \
                ag.AgentClient(endpoint.url, http_client=http) as client:
            assert client.thread("t").run("hi", run_id="r").outcome == "success"
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert (tmp_path / "01.sse").read_bytes() == START + FINISH  # (the stream the client read)
    assert peak < 4 * 2**20, f"{peak / 2**20:.0f} MiB held for bytes after the end of the body"
