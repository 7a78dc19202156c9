"""The last places a credential or an agent's whole text reached: a span, hpack's log lines, an error's
text, an event's ``repr``.

* With ``record_content``, the caller's own message went on the span (``agui.run.input``) as written: an
  API key pasted into it, or the value of a header the client sends as sensitive, with it.
* hpack (h2's header coder, under httpx's HTTP/2) writes every header it codes at DEBUG, the request's
  ``Authorization`` among them; none of the client's log filters was on its loggers.
* ``str(RunFailed)`` held the agent's whole ``RUN_ERROR`` message, and an event's ``repr`` its whole text.
* Two log lines, redacted, quoted the agent's words whole: httpx's error for a broken chunk header, and a
  tool handler's error quoting the call's arguments.

Runs go to a ScriptedAgent on 127.0.0.1 (a raw server where the bytes must be broken), through both
shells (``drive``). h2 is not among the package's extras: hpack's lines are made on the loggers it writes
to, by their names, in the forms it writes.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from test_attack_io import Raw

import agui_client as ag
from agui_client._inert import QUOTED_CHARS
from agui_client.telemetry import unsent_redact
from agui_client.testing import Finish, ScriptedAgent, Start, text_message, tool_call

#: The client's credential, as an API key header's value.
API_KEY = "ak-9f8e7d6c5b4a3928"
#: A password the caller's own http_client sends with its auth flow (Basic).
PASSWORD = "pw-31415926535897"
#: The value of a header the client was told is sensitive, though its name says nothing of it.
TENANT = "tenant-2718281828"


@pytest.fixture
def raw() -> Iterator[Raw]:
    servers = Raw()
    yield servers
    servers.close()


def _spans(telemetry_exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    return [span for span in telemetry_exporter.get_finished_spans() if span.name == "agui.run"]


def _recording() -> tuple[ag.Telemetry, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return ag.Telemetry(tracer_provider=provider, record_content=True), exporter


def _inputs(span: ReadableSpan) -> list[str]:
    return [str((event.attributes or {})["agui.message.content"]) for event in span.events
            if event.name == "agui.run.input"]


def _chat() -> ScriptedAgent:
    return ScriptedAgent([[Start(), *text_message("m1", "noted"), Finish()]])


def test_the_callers_message_on_the_span_has_the_clients_credentials_redacted(drive: Any, served: Any) -> None:
    telemetry, exporter = _recording()
    endpoint = served(_chat())
    message = f"my key is {API_KEY} and my tenant {TENANT}"

    with drive.client(endpoint.url, telemetry=telemetry, headers={"X-Api-Key": API_KEY, "X-Tenant": TENANT},
                      sensitive_headers=["X-Tenant"]) as client:
        thread = client.thread()
        thread.run(message)

    [span] = _spans(exporter)
    assert _inputs(span) == ["my key is [redacted] and my tenant [redacted]"]
    # (the conversation itself keeps the caller's words; only what leaves for the collector is redacted)
    assert thread.state.messages[0].content == message


def test_a_run_headers_credential_and_an_auth_flows_are_redacted_on_the_span(drive: Any, served: Any) -> None:
    # The password is added by the caller's own http_client while sending (an httpx auth flow), and the
    # token by the run's headers: the span's input is redacted by the request as it was sent.
    telemetry, exporter = _recording()
    endpoint = served(_chat())
    http = drive.http_client(auth=("alice", PASSWORD))

    with drive.client(endpoint.url, telemetry=telemetry, http_client=http) as client:
        client.thread().run(f"password {PASSWORD}, token {API_KEY}", headers={"X-Run-Token": API_KEY})

    [span] = _spans(exporter)
    [request] = endpoint.received
    assert request.headers["authorization"].startswith("Basic ") and request.headers["x-run-token"] == API_KEY
    assert _inputs(span) == ["password [redacted], token [redacted]"]
    # (stamped when the run was planned, not when the span ended)
    [event] = [event for event in span.events if event.name == "agui.run.input"]
    assert span.start_time is not None and span.end_time is not None
    assert span.start_time <= event.timestamp < span.end_time


def test_hpack_lines_never_carry_a_sensitive_headers_value(drive: Any, caplog: pytest.LogCaptureFixture) -> None:
    # What hpack writes, at DEBUG, when an http_client made with http2=True sends a run: each header it
    # adds to its table or decodes, as a tuple; a header evicted, as its name and value; a block whole.
    coder, table = logging.getLogger("hpack.hpack"), logging.getLogger("hpack.table")
    caplog.set_level(logging.DEBUG, logger="hpack")
    # (a name the client marks is hidden while a client that marked it is open)
    with drive.client("http://127.0.0.1:9/", headers={"Authorization": f"Bearer {API_KEY}"},
                      sensitive_headers=["X-Tenant"]):
        assert coder.filters and table.filters  # (the client put its filter on both)
        coder.debug("Adding %s to the header table, sensitive:%s, huffman:%s",
                    (b"authorization", f"Bearer {API_KEY}".encode()), False, True)
        coder.debug("Decoded %s, total consumed %d bytes, indexed %s", (b"x-tenant", TENANT.encode()), 30, True)
        coder.debug("Encoded header block to %s", b"\x82\x86\x84A\x8a" + API_KEY.encode())
        table.debug("Evicting %s: %s from the header table", b"authorization", f"Bearer {API_KEY}".encode())
        table.debug("Evicting %s: %s from the header table", b"content-type", b"application/json")

    lines = [record.getMessage() for record in caplog.records if record.name.startswith("hpack")]
    assert lines == [
        "Adding (b'authorization', b'[redacted]') to the header table, sensitive:False, huffman:True",
        "Decoded (b'x-tenant', b'[redacted]'), total consumed 30 bytes, indexed True",
        f"Encoded header block to <a header block of {5 + len(API_KEY)} bytes>",
        "Evicting b'authorization': b'[redacted]' from the header table",
        "Evicting b'content-type': b'application/json' from the header table",
    ]


def test_hpack_lines_are_known_by_their_template_and_an_unknown_one_keeps_only_its_numbers(
        drive: Any, caplog: pytest.LogCaptureFixture) -> None:
    # hpack 4 writes a header it adds as its name and value apart, with two flags after them (four
    # arguments), and a decoded header as a tuple whose parts may be memoryviews. A line of a template
    # the filter does not know (a later hpack's) shows each argument but its numbers as its type and size.
    coder, table = logging.getLogger("hpack.hpack"), logging.getLogger("hpack.table")
    caplog.set_level(logging.DEBUG, logger="hpack")
    with drive.client("http://127.0.0.1:9/", headers={"Authorization": f"Bearer {API_KEY}"}):
        coder.debug("Adding %s=%s to the header table, sensitive:%s, huffman:%s",
                    b"authorization", f"Bearer {API_KEY}".encode(), False, True)
        coder.debug("Adding %s=%s to the header table, sensitive:%s, huffman:%s",
                    b"content-type", b"application/json", False, True)
        coder.debug("Decoding %s", memoryview(b"\x88\x5f" + API_KEY.encode()))
        coder.debug("Decoded %s, consumed %d", (b"x-api-key", API_KEY.encode()), 1)
        coder.debug("Decoded %s, consumed %d", (None, API_KEY.encode()), 1)  # (a name of no known type)
        coder.debug("Encoding %d with %d bits", 300, 7)
        coder.debug("Header %s was %s (%d)", b"x-note", API_KEY.encode(), 3)
        coder.debug("Headers: %s", [(b"x-note", API_KEY.encode())])
        coder.debug("Decoded %s, consumed %d", f"authorization: Bearer {API_KEY}".encode(), 1)
        table.debug("Evicting %s: %s from the header table", (b"authorization",), f"Bearer {API_KEY}".encode())

    lines = [record.getMessage() for record in caplog.records if record.name.startswith("hpack")]
    assert lines == [
        "Adding b'authorization'=b'[redacted]' to the header table, sensitive:False, huffman:True",
        "Adding b'content-type'=b'application/json' to the header table, sensitive:False, huffman:True",
        f"Decoding <a header block of {2 + len(API_KEY)} bytes>",
        "Decoded (b'x-api-key', b'[redacted]'), consumed 1",
        "Decoded (None, b'[redacted]'), consumed 1",
        "Encoding 300 with 7 bits",
        f"Header <bytes of 6 withheld> was <bytes of {len(API_KEY)} withheld> (3)",
        "Headers: <list of 1 withheld>",
        # (arguments that do not fit their template: as an unknown line's)
        f"Decoded <bytes of {len(f'authorization: Bearer {API_KEY}')} withheld>, consumed 1",
        f"Evicting <tuple of 1 withheld>: <bytes of {len(f'Bearer {API_KEY}')} withheld> from the header table",
    ]
    assert not any(API_KEY in line for line in lines)


def test_a_run_errors_text_quotes_a_bounded_part_of_the_agents_message(drive: Any, served: Any) -> None:
    message = "\x1b[2J" + "e" * 2**20  # (one line of a megabyte, opening with a terminal's clear-screen)
    endpoint = served(ScriptedAgent([[Start(), ag.RunErrorEvent(message=message, code="E1")]]))

    with drive.client(endpoint.url) as client:
        result = client.thread().run("hi", run_id="run-1")
    with pytest.raises(ag.RunFailed) as caught:
        result.raise_for_outcome()

    error = caught.value
    text = str(error)
    assert error.message == message and error.code == "E1"
    assert len(text) < QUOTED_CHARS + 100, len(text)
    assert text.startswith("run 'run-1' failed: \\x1b[2Jeee") and "\x1b" not in text
    assert f"... ({len(message) - QUOTED_CHARS} more characters) (code 'E1')" in text


def test_a_streamed_events_repr_is_bounded_and_inert(drive: Any, served: Any) -> None:
    delta = "\u202e" + "d" * 2**20
    endpoint = served(ScriptedAgent([[Start(), *text_message("m-big", delta),
                                      ag.RunErrorEvent(message="\x1b]0;owned\x07" + "e" * 2**20)]]))

    with drive.client(endpoint.url) as client, client.thread().stream("hi") as stream:
        shown = [repr(event) for event in stream]

    assert len(shown) >= 4 and all(len(text) < 300 for text in shown), [text[:300] for text in shown]
    assert not any("\x1b" in text or "\u202e" in text or "\x07" in text for text in shown)
    content = next(text for text in shown if text.startswith("<TextMessageContentEvent"))
    assert content.startswith("<TextMessageContentEvent message_id='m-big' delta='\\u202eddd")
    assert f"({len(delta)} chars)" in content
    assert any(text.startswith("<RunErrorEvent message='\\x1b]0;owned\\x07eee") for text in shown)


def test_a_body_cut_by_the_agents_framing_is_logged_bounded_and_redacted(
        drive: Any, raw: Raw, caplog: pytest.LogCaptureFixture) -> None:
    # The agent breaks its chunked framing with a chunk header of 12,000 characters that echoes the
    # request's token: httpx's error quotes the whole line, and the client's debug line quoted httpx's error.
    line = ("z" * 100 + API_KEY + "z" * 12_000).encode()

    async def agent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(int(h.split(b":", 1)[1]) for h in head.split(b"\r\n") if h.lower().startswith(b"content-length"))
        await reader.readexactly(length)
        started = b'data: {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}\n\n'
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
                     + b"%x\r\n" % len(started) + started + b"\r\n" + line + b"\r\n")
        await writer.drain()

    url = raw.serve(agent)
    caplog.set_level(logging.DEBUG, logger="agui_client")
    with drive.client(url, headers={"Authorization": f"Bearer {API_KEY}"}) as client:
        with pytest.raises(ag.StreamEnded):
            client.thread("t").run("hi", run_id="r")

    [logged] = [record.getMessage() for record in caplog.records if "ended by" in record.getMessage()]
    assert API_KEY not in logged and "[redacted]" in logged
    assert len(logged) < QUOTED_CHARS + 200 and "more characters)" in logged, len(logged)


def test_a_failed_tool_handlers_log_line_quotes_a_bounded_part_of_its_error(
        drive: Any, served: Any, caplog: pytest.LogCaptureFixture) -> None:
    # A handler's error quoting the agent's arguments (a megabyte) made a log line of a megabyte.
    endpoint = served(ScriptedAgent([[Start(), *tool_call("c1", "lookup", {"q": "q" * 2**20}), Finish()],
                                     [Start(), *text_message("m1", "sorry"), Finish()]]))

    def lookup(q: str) -> str:
        raise RuntimeError(f"no record for {q}")

    with caplog.at_level(logging.WARNING, logger="agui_client"), \
            drive.client(endpoint.url, telemetry=False) as client:
        result = client.thread(tool_handlers={"lookup": lookup}).run_until_done("hi")

    assert result.outcome == "success"
    [line] = [record.getMessage() for record in caplog.records if "tool handler" in record.getMessage()]
    assert line.startswith("tool handler 'lookup' raised RuntimeError('no record for qqq")
    assert len(line) < QUOTED_CHARS + 200 and "more characters)" in line, len(line)
    assert line.endswith("for call 'c1'; the agent is told the call failed")


def test_the_redactor_of_a_run_not_yet_sent_is_one_lookup_for_the_spans_and_the_threads_lines() -> None:
    # A refused run's span and a thread's store lines ask the same function: the run's headers count
    # when a run could send them (a mapping, or the pairs a plan holds), the client's own always.
    class Broken:
        def unsent_redactor(self, headers: Any) -> Any:
            raise ValueError("no request can be built")

    text = f"key {API_KEY}, token {TENANT}"
    with ag.AgentClient("http://127.0.0.1:9/", headers={"X-Api-Key": API_KEY}) as client:
        as_mapping = unsent_redact(client, {"X-Run-Token": TENANT})
        as_pairs = unsent_redact(client, (("X-Run-Token", TENANT),))
        unsendable = unsent_redact(client, {"X-Run-Token": f"{TENANT}\r\nX-Injected: 1"})
        without = unsent_redact(client, None)

    assert as_mapping is not None and as_pairs is not None and unsendable is not None and without is not None
    assert as_mapping(text) == as_pairs(text) == "key [redacted], token [redacted]"
    # (a header a run would refuse counts for nothing; the refusal is reported with the client's redacted)
    assert unsendable(text) == without(text) == f"key [redacted], token {TENANT}"
    assert unsent_redact(Broken(), {}) is None and unsent_redact(object(), {}) is None
