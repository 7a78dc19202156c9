"""Per-run request headers (``thread.run(headers=...)``, ``stream``, ``run_until_done``), in both shells.

Against a real ScriptedAgent on 127.0.0.1, which records each request's headers
(``ScriptedAgent.request_headers``): every request of a run carries them, tool loop and resume
included; they replace the client's same-named header whatever the case; the next run without them
sends the client's; their values stay out of errors, logs, stored records, spans and recordings; a
name or value HTTP cannot carry is refused before the thread is claimed or anything is sent.
"""

from __future__ import annotations

import contextlib
import io
import logging
import re
import socket
from collections.abc import Callable, Iterator
from http.cookiejar import CookieJar, DefaultCookiePolicy
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import agui_client as ag
from agui_client.stores import SqliteStore
from agui_client.testing import (
    Disconnect,
    Finish,
    RecordingTransport,
    Respond,
    ScriptedAgent,
    Start,
    Stream,
    serve,
    text_message,
)
from agui_client.types import RunErrorEvent

#: The user's credential a backend forwards: it must reach the agent and nowhere else.
TOKEN = "user-7f3a9c1e5b2d8406"
USER = {"Authorization": f"Bearer {TOKEN}"}
#: The backend's own credential, set on the client.
SERVICE = {"Authorization": "Bearer service-0a1b2c3d4e5f", "X-Client": "backend"}


@pytest.fixture
def http_logs(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    """Every line httpx, httpcore and agui_client write, at DEBUG."""
    for name in ("httpx", "httpcore", "agui_client"):
        caplog.set_level(logging.DEBUG, logger=name)
    yield caplog


def everything_in(*texts: Any, folder: Path | None = None) -> str:
    """All the text to search for a leaked secret: the texts given and every file under ``folder``."""
    found = [str(text) for text in texts]
    if folder is not None:
        found += [path.read_bytes().decode("latin-1") for path in sorted(folder.rglob("*")) if path.is_file()]
    return "\n".join(found)


def error_texts(error: BaseException) -> list[str]:
    """What an error shows: its str and repr, its arguments, its cause, and httpx's request and response."""
    texts: list[Any] = [str(error), repr(error), error.args, repr(error.__cause__), str(error.__cause__)]
    request = getattr(error, "_request", None)
    if request is not None:
        texts += [request.headers.multi_items(), request.url]
    response = getattr(error, "response", None)
    if response is not None:
        texts += [response.headers.multi_items(), response.text, response.request.headers.multi_items()]
    return [str(text) for text in texts]


# -- what is sent -----------------------------------------------------------------------------------


def test_run_and_stream_send_the_runs_headers_and_the_next_run_without_them_does_not(drive: Any) -> None:
    agent = ScriptedAgent.chat("noted")
    with serve(agent) as server, drive.client(server.url, headers=SERVICE) as client:
        thread = client.thread()
        thread.run("hello", headers=USER)
        with thread.stream("and again", headers={"X-Tenant": "acme"}) as stream:
            list(stream)
        thread.run("once more")

    ran, streamed, plain = agent.request_headers
    assert ran["authorization"] == f"Bearer {TOKEN}"  # (the client's replaced, not sent beside it)
    assert ran["x-client"] == "backend"  # (the client's other headers stay)
    assert streamed["x-tenant"] == "acme" and streamed["authorization"] == SERVICE["Authorization"]
    assert plain["authorization"] == SERVICE["Authorization"] and "x-tenant" not in plain


def test_a_runs_header_replaces_the_clients_whatever_the_case_and_protocol_headers_stay_the_clients(
        drive: Any, caplog: pytest.LogCaptureFixture) -> None:
    agent = ScriptedAgent.chat()
    per_run = {"authorization": f"Bearer {TOKEN}", "x-CLIENT": "user-app", "Accept": "application/json",
               "Content-Type": "text/plain", "Accept-Encoding": "identity"}
    with serve(agent) as server, drive.client(server.url, headers=SERVICE) as client:
        client.thread().run("hi", headers=per_run)

    [sent] = agent.request_headers
    assert sent["authorization"] == f"Bearer {TOKEN}"  # (one value: not "Bearer service…, Bearer user…")
    assert sent["x-client"] == "user-app"
    assert sent["accept"] == "text/event-stream, application/json"  # (ours first: the answer must be a stream)
    assert sent["content-type"] == "application/json"  # (the body is JSON, whatever was asked)
    assert sent["accept-encoding"] == "identity"  # (the caller's choice, as for the client's headers)
    assert "replaced by application/json" in caplog.text


def test_the_tool_loop_sends_the_headers_with_every_request_and_a_resume_carries_its_own(drive: Any) -> None:
    tools = ScriptedAgent.frontend_tool("confirm_choice")
    asks = ScriptedAgent.interrupts(1)
    with serve(tools) as tool_server, serve(asks) as ask_server:
        with drive.client(tool_server.url, headers=SERVICE) as client:
            thread = client.thread(tool_handlers={"confirm_choice": lambda question: "blue"})
            result = thread.run_until_done("pick one", headers=USER)
        assert result.outcome == "success"
        assert len(tools.request_headers) == 2  # (the call, then its answer)
        assert [sent["authorization"] for sent in tools.request_headers] == [f"Bearer {TOKEN}"] * 2

        with drive.client(ask_server.url, headers=SERVICE) as client:
            thread = client.thread()
            assert thread.run("ask me", headers=USER).outcome == "interrupt"
            builder = thread.resume_builder().answer("interrupt-1", {"answer": "yes"})
            assert thread.run(resume=builder, headers={"Authorization": "Bearer user-two"}).outcome == "success"
        assert [sent["authorization"] for sent in asks.request_headers] == [f"Bearer {TOKEN}", "Bearer user-two"]


def test_headers_are_not_part_of_the_thread_a_later_process_resumes_with_its_own(drive: Any, tmp_path: Path) -> None:
    agent = ScriptedAgent.interrupts(1)
    path = tmp_path / "threads.db"
    with serve(agent) as server:
        store = SqliteStore(path)
        with drive.client(server.url, store=store) as client:
            thread = client.thread()
            thread.run("ask me", headers=USER)
            thread_id = thread.id
        store.close()
        assert TOKEN not in everything_in(folder=tmp_path)  # (the record holds no header)

        store = SqliteStore(path)  # ("another process": a new client on the same store)
        with drive.client(server.url, store=store, headers={"Authorization": "Bearer other-process"}) as client:
            later = client.thread(thread_id)
            later.run(resume=later.resume_builder().answer("interrupt-1", {"answer": "yes"}))
        store.close()

    assert [sent["authorization"] for sent in agent.request_headers] == [f"Bearer {TOKEN}", "Bearer other-process"]


def test_telemetry_trace_context_goes_with_the_runs_headers_and_wins_over_a_same_named_one(drive: Any) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry = ag.Telemetry(tracer_provider=provider)
    agent = ScriptedAgent([[Start(), RunErrorEvent(message=f"denied for Bearer {TOKEN}")]])
    with serve(agent) as server, drive.client(server.url, telemetry=telemetry) as client:
        result = client.thread().run("hi", headers={**USER, "traceparent": "00-" + "1" * 32 + "-" + "2" * 16 + "-01"})

    [sent] = agent.request_headers
    [span] = [s for s in exporter.get_finished_spans() if s.name == "agui.run"]
    assert sent["authorization"] == f"Bearer {TOKEN}"
    # (the run's span is the agent's parent, not whatever the caller passed under the same name)
    assert sent["traceparent"].split("-")[2] == format(span.context.span_id, "016x")
    assert result.outcome == "error" and TOKEN not in result.error.message  # type: ignore[union-attr]
    recorded = everything_in(dict(span.attributes or {}), span.status.description,
                             *[f"{e.name} {dict(e.attributes or {})}" for e in span.events])
    assert TOKEN not in recorded


def test_the_span_of_a_run_refused_before_sending_is_redacted_with_the_runs_headers(drive: Any) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    # (an agent that put the user's credential, as it got it, into an interrupt id)
    echoed = ag.Interrupt(id=f"ask-{TOKEN}", reason="input", message="Sure?")
    agent = ScriptedAgent([[Start(), Finish(outcome=ag.RunFinishedInterruptOutcome(interrupts=(echoed,)))]])
    with serve(agent) as server, drive.client(server.url, telemetry=ag.Telemetry(tracer_provider=provider)) as client:
        thread = client.thread()
        thread.run("hi", headers=USER)
        with pytest.raises(ag.ResumeRefused):  # (the interrupt left uncovered: refused, naming it)
            thread.run(resume=[ag.ResumeEntry(interrupt_id="other", status="cancelled")], headers=USER)

    refused = [s for s in exporter.get_finished_spans() if s.name == "agui.run"][-1]
    shown = everything_in(dict(refused.attributes or {}), *[dict(e.attributes or {}) for e in refused.events])
    assert "agui.resume.refused" in [e.name for e in refused.events] and "[redacted]" in shown
    assert TOKEN not in shown and agent.request_count == 1


# -- secrets ----------------------------------------------------------------------------------------


FAILURES = {
    "401": Respond(status=401, body={"detail": f"token Bearer {TOKEN} is not valid"},
                   headers={"www-authenticate": f"Bearer realm=x, error={TOKEN}", "x-echo": TOKEN}),
    "500": Respond(status=500, body=f"upstream said: Authorization: Bearer {TOKEN}", headers={"x-echo": TOKEN}),
    "protocol": Respond(status=200, content_type="text/html", body=f"<html>your token: {TOKEN}</html>"),
    "cut": [Start(), *text_message("m1", "partial")[:2], Disconnect()],  # (a transport fault mid-stream)
}


@pytest.mark.parametrize("failure", list(FAILURES))
def test_a_failing_runs_error_logs_and_record_never_hold_the_runs_credential(
        drive: Any, tmp_path: Path, http_logs: pytest.LogCaptureFixture, failure: str) -> None:
    agent = ScriptedAgent([FAILURES[failure]])
    store = SqliteStore(tmp_path / "threads.db")
    with serve(agent) as server, drive.client(server.url, store=store, headers=SERVICE) as client:
        thread = client.thread()
        with pytest.raises(ag.AguiError) as caught:
            thread.run("hi", headers=USER)
        shown = [repr(thread), repr(client)]
    store.close()

    assert agent.request_headers[0]["authorization"] == f"Bearer {TOKEN}"  # (it was sent, and echoed back)
    assert isinstance(caught.value, ag.ProtocolError if failure in ("protocol", "cut") else ag.HTTPStatusError)
    if isinstance(caught.value, ag.HTTPStatusError):
        assert caught.value.request.headers["authorization"] == "[redacted]"
    texts = everything_in(*error_texts(caught.value), *shown, http_logs.text,
                          *[record.getMessage() for record in http_logs.records], folder=tmp_path)
    assert TOKEN not in texts
    if failure != "cut":
        assert "[redacted]" in texts  # (the echo was there, and was replaced)


def test_a_transport_error_never_holds_the_runs_credential(
        drive: Any, tmp_path: Path, http_logs: pytest.LogCaptureFixture) -> None:
    with socket.socket() as sock:  # (a port nothing listens on)
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/agent"
    store = SqliteStore(tmp_path / "threads.db")
    with drive.client(url, store=store) as client:
        with pytest.raises(ag.TransportError) as caught:
            client.thread().run("hi", headers=USER)
    store.close()

    assert caught.value.request.headers["authorization"] == "[redacted]"
    assert TOKEN not in everything_in(*error_texts(caught.value), http_logs.text, folder=tmp_path)


def test_a_run_error_echoing_the_credential_is_saved_redacted(drive: Any, tmp_path: Path) -> None:
    agent = ScriptedAgent([[Start(), RunErrorEvent(message=f"no access for Authorization: Bearer {TOKEN}")]])
    store = SqliteStore(tmp_path / "threads.db")
    with serve(agent) as server, drive.client(server.url, store=store) as client:
        result = client.thread().run("hi", headers=USER)
    store.close()

    assert result.outcome == "error"
    assert result.error is not None and "[redacted]" in result.error.message
    assert TOKEN not in everything_in(result.error.message, folder=tmp_path)


def test_a_header_the_sensitive_rules_do_not_name_is_redacted_once_the_client_marks_it(drive: Any) -> None:
    tenant = "tenant-acme-4242"
    agent = ScriptedAgent([[Start(), RunErrorEvent(message=f"unknown tenant {tenant}")]], cycle=True)
    with serve(agent) as server:
        with drive.client(server.url) as client:
            plain = client.thread().run("hi", headers={"X-Tenant": tenant})
        with drive.client(server.url, sensitive_headers=["X-Tenant"]) as client:
            marked = client.thread().run("hi", headers={"X-Tenant": tenant})

    assert plain.error is not None and tenant in plain.error.message  # (a tenant id is no secret by default)
    assert marked.error is not None and marked.error.message == "unknown tenant [redacted]"


def test_a_recording_never_holds_the_runs_credential(tmp_path: Path) -> None:
    agent = ScriptedAgent([[Start(), RunErrorEvent(message=f"bad Bearer {TOKEN}")]])
    folder = tmp_path / "recording"
    with serve(agent) as server, httpx.Client(transport=RecordingTransport(folder)) as http, \
            ag.AgentClient(server.url, http_client=http) as client:
        client.thread().run("hi", headers=USER)

    assert agent.request_headers[0]["authorization"] == f"Bearer {TOKEN}"
    recorded = everything_in(folder=folder)
    assert "RUN_ERROR" in recorded and "[redacted]" in recorded and TOKEN not in recorded


def test_a_redirect_to_another_origin_is_refused_with_the_runs_headers(
        drive: Any, http_logs: pytest.LogCaptureFixture) -> None:
    elsewhere = ScriptedAgent.chat()
    with serve(elsewhere) as other:
        moved = ScriptedAgent([Respond(status=307, headers={"location": other.url})])
        with serve(moved) as server, drive.client(server.url, follow_redirects=True) as client:
            with pytest.raises(ag.HTTPStatusError) as caught:
                client.thread().run("hi", headers=USER)

    assert elsewhere.request_count == 0  # (the credential never went to the other origin)
    assert "another origin" in str(caught.value)
    assert TOKEN not in everything_in(*error_texts(caught.value), http_logs.text)


def test_a_redirect_to_the_same_origin_carries_the_runs_headers(drive: Any) -> None:
    class Moved:
        """``/`` redirects to ``/moved``, which a chat agent answers."""

        def __init__(self) -> None:
            self.chat = ScriptedAgent.chat("moved")

        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] == "http" and scope["path"] != "/moved":
                await send({"type": "http.response.start", "status": 307, "headers": [(b"location", b"/moved")]})
                await send({"type": "http.response.body", "body": b""})
                return
            await self.chat(scope, receive, send)

    app = Moved()
    with serve(app) as server, drive.client(server.url, follow_redirects=True) as client:
        assert client.thread().run("hi", headers=USER).text == "moved"

    assert app.chat.request_headers[0]["authorization"] == f"Bearer {TOKEN}"


# -- refused before anything is sent -----------------------------------------------------------------


BAD = {
    "crlf-in-value": ({"Authorization": f"Bearer {TOKEN}\r\nX-Evil: 1"}, "Authorization", "line break"),
    "lf-in-value": ({"X-Trace": f"{TOKEN}\nx"}, "X-Trace", "line break"),
    "nul-in-value": ({"Authorization": f"Bearer {TOKEN}\x00"}, "Authorization", "NUL"),
    "not-ascii": ({"Authorization": f"Bearer {TOKEN}é"}, "Authorization", "not ASCII"),
    "outer-space": ({"Authorization": f"Bearer {TOKEN} "}, "Authorization", "starts or ends"),
    "control": ({"Authorization": f"Bearer\x01{TOKEN}"}, "Authorization", "control character"),
    "not-a-str": ({"X-Count": 5}, "X-Count", "not a str"),
    "crlf-in-name": ({"X-Evil\r\nInjected": TOKEN}, "X-Evil... (16 characters)", "not an HTTP token"),
    "space-in-name": ({"X Tenant": TOKEN}, "X... (8 characters)", "not an HTTP token"),
    "colon-in-name": ({"X-Tenant:": TOKEN}, "X-Tenant... (9 characters)", "not an HTTP token"),
    # (a whole header line given as a name: its credential is never quoted back)
    "line-as-name": ({f"Authorization: Bearer {TOKEN}": ""}, "Authorization... (43 characters)", "not an HTTP token"),
    "del-in-value": ({"X-Trace": "a\x7fb"}, "X-Trace", "control character"),
    "empty-name": ({"": TOKEN}, "''", "not an HTTP token"),
    "twice": ({"X-Tenant": TOKEN, "x-tenant": TOKEN}, "x-tenant", "given twice"),
    "framing": ({"Content-Length": "3"}, "Content-Length", "framing"),
}


@pytest.mark.parametrize("case", list(BAD))
@pytest.mark.parametrize("call", ["run", "stream", "run_until_done"])
def test_a_header_http_cannot_carry_is_refused_naming_it_before_the_thread_is_claimed(
        drive: Any, served: Callable[[Any], Any], case: str, call: str) -> None:
    headers, name, reason = BAD[case]
    agent = ScriptedAgent.chat()
    endpoint = served(agent)  # (mounted on the session's server: 90 cases, no server started for each)
    with drive.client(endpoint.url) as client:
        thread = client.thread()
        with pytest.raises(ag.InvalidHeader) as caught:
            if call == "stream":
                with thread.stream("hi", headers=headers):
                    pass
            else:
                getattr(thread, call)("hi", headers=headers)
        stored = client.store.load(thread.id)

    error = caught.value
    assert isinstance(error, ValueError) and error.code == "RUN-HEADER"
    assert str(error).startswith("nothing was sent: the header ") and name in str(error) and reason in error.reason
    assert TOKEN not in everything_in(str(error), repr(error), error.args)
    assert stored is None  # (not claimed: the thread is as it was)
    assert agent.request_count == 0 and agent.request_headers == [] and endpoint.received == []


def test_the_clients_own_headers_are_checked_when_it_is_made(drive: Any) -> None:
    # (they went unchecked to the first run, after its claim, with httpx's message quoting the value)
    with pytest.raises(ag.InvalidHeader) as caught:
        drive.client("http://127.0.0.1:9/agent", headers={"X-Tenant": f"{TOKEN}\n"})
    assert caught.value.name == "X-Tenant" and TOKEN not in str(caught.value)


def test_a_run_refused_before_sending_warns_about_no_header_it_never_sent(
        drive: Any, caplog: pytest.LogCaptureFixture) -> None:
    # (the span's redactor builds the request it would have sent; only a request that goes out warns)
    provider = TracerProvider()
    with serve(ScriptedAgent.chat()) as server, \
            drive.client(server.url, telemetry=ag.Telemetry(tracer_provider=provider)) as client, \
            caplog.at_level(logging.WARNING, logger="agui_client"), pytest.raises(ag.NothingToResume):
        client.thread().run(resume=[ag.ResumeEntry(interrupt_id="x", status="resolved", payload=1)],
                            headers={"Content-Type": "text/plain"})
    assert [r.getMessage() for r in caplog.records if "Content-Type" in r.getMessage()] == []


def test_the_tool_loop_refuses_a_bad_header_before_a_held_call_is_answered(drive: Any) -> None:
    agent = ScriptedAgent.frontend_tool("confirm_choice")
    answered: list[str] = []
    with serve(agent) as server, drive.client(server.url) as client:
        thread = client.thread(tool_handlers={"confirm_choice": lambda question: answered.append(question) or "blue"})
        thread.run("pick one")  # (the call is held, unanswered)
        version = thread.version
        with pytest.raises(ag.InvalidHeader) as refused:
            thread.run_until_done(headers={"Authorization": "Bearer x\r\ny"})
        assert (refused.value.name, refused.value.code) == ("Authorization", "RUN-HEADER")

        assert answered == [] and agent.request_count == 1
        assert client.store.load(thread.id).version == version  # (not claimed)


def test_the_low_level_open_follows_the_same_rules(drive: Any) -> None:
    agent = ScriptedAgent.chat()
    run_input = ag.RunAgentInput(thread_id="t-1", run_id="r-1", messages=(ag.UserMessage(id="m-1", content="hi"),))
    with serve(agent) as server, drive.client(server.url, headers=SERVICE) as client:
        with pytest.raises(ag.InvalidHeader) as refused:
            client.open(run_input, headers={"Authorization": f"Bearer {TOKEN}\r\nX-Evil: 1"})
        assert (refused.value.name, refused.value.code) == ("Authorization", "RUN-HEADER")
        assert agent.request_count == 0
        with client.open(run_input, headers={"authorization": f"Bearer {TOKEN}"}) as payloads:
            assert list(payloads)

    [sent] = agent.request_headers
    assert sent["authorization"] == f"Bearer {TOKEN}"  # (replacing the client's, not sent beside it)


def test_reprs_of_a_run_never_show_its_headers(drive: Any) -> None:
    agent = ScriptedAgent.chat()
    with serve(agent) as server, drive.client(server.url) as client:
        thread = client.thread()
        with thread.stream("hi", headers=USER) as stream:
            shown = [repr(stream), repr(thread), repr(client)]
            list(stream)
        shown.append(repr(stream))
    plan = thread._plan("hi", None, None, None, None, None, None, headers=USER)

    assert plan.headers == (("Authorization", f"Bearer {TOKEN}"),)
    assert TOKEN not in everything_in(*shown, repr(plan))


def test_a_jar_that_keeps_no_cookie_keeps_one_users_session_from_the_next_users_run(drive: Any) -> None:
    # (the web backend page's advice: the client's cookies are shared by every run it sends)
    agent = ScriptedAgent([Stream(items=[Start(), Finish()], headers={"set-cookie": "session=alice-1; Path=/"}),
                           [Start(), Finish()]])
    http = drive.http_client(cookies=CookieJar(policy=DefaultCookiePolicy(allowed_domains=[])))
    with serve(agent) as server, drive.client(server.url, http_client=http) as client:
        client.thread().run("a", headers={"Authorization": "Bearer alice"})
        client.thread().run("b", headers={"Authorization": "Bearer bob"})

    alice, bob = agent.request_headers
    assert bob["authorization"] == "Bearer bob" and "cookie" not in bob


# -- the test kit ------------------------------------------------------------------------------------


def test_the_scripted_agent_records_each_requests_headers_and_forgets_them_on_reset() -> None:
    agent = ScriptedAgent.chat()
    body = ag.encode(ag.RunAgentInput(thread_id="t", run_id="r", messages=()))
    with serve(agent) as server, httpx.Client(trust_env=False) as http:
        http.post(server.url, json=body, headers=[("X-Twice", "a"), ("x-twice", "b"), ("X-Once", "c")])
        http.post(server.url, content=b"not json")  # (not a RunAgentInput: not recorded, as in requests)
        recorded = agent.request_headers
        agent.reset()

    [headers] = recorded
    assert headers["x-twice"] == "a, b" and headers["x-once"] == "c"
    assert agent.request_headers == [] and agent.requests == []


# -- the docs ----------------------------------------------------------------------------------------


def test_the_web_backend_pages_forwarding_snippet_sends_each_users_credential() -> None:
    page = Path(__file__).parent.parent / "docs" / "start" / "web-backend.md"
    section = page.read_text(encoding="utf-8").split("## Forwarding each user's credential", 1)[1]
    (snippet,) = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    agent = ScriptedAgent.chat("noted")
    with serve(agent) as server:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(snippet.replace("http://agent:9000/", server.url), str(page), "exec"),
                 {"__name__": "__docs__"})

    assert [sent["authorization"] for sent in agent.request_headers] == ["Bearer alice-token", "Bearer bob-token"]
    assert all(sent["x-service"] == "web-backend" for sent in agent.request_headers)
    assert out.getvalue() == "alice: noted\nbob: noted\n"
