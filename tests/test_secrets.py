"""The caller's credentials never come back out of the client, however an agent echoes them.

An agent (or a proxy in front of it) that lists the request's headers and URL in its answer — a 403
JSON body, a 500 text, a 502 HTML page, a 200 page that is not an event stream, a ``RUN_ERROR`` or a
``SUBAGENT_ERROR`` in a good stream — must not put them into what the client reports: an error's
message, ``repr`` and attributes, its notes, the run's result and warnings, the log, or the record the
store keeps. A real loopback server echoes the request here, through both shells.
"""

from __future__ import annotations

import base64
import contextlib
import html
import json
import logging
import re
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import parse_qsl, quote, quote_plus

import attrs
import httpx
import pytest
from wirekit import request_json, sse

import agui_client as ag
from agui_client._answers import ERROR_BODY_LIMIT
from agui_client._client_base import MAX_REDIRECTS
from agui_client.testing import serve

MARK = "[redacted]"

TOKEN = 'sk-live/4f9a+Zq="8c"&K2<x>'  # (characters each encoding writes differently)
API_KEY = "ak_9c1d/2e+7f=0a"
SESSION = "s3ss10n-7b6a/51f0+cd"
QUERY_KEY = "qk-1f2e3d4c5b6a"
USER = "alice"
PASSWORD = "pa55/w0rd+&long"
TENANT = "tenant-secret-77aa01"
AUTH_FLOW_PASSWORD = "fl0w-pass/9876+x"


@attrs.frozen
class Case:
    """How the caller sends its secrets, and which ones must not come back."""

    secrets: tuple[str, ...]
    headers: dict[str, str] = attrs.field(factory=dict)
    query: str = ""
    userinfo: str = ""
    client: dict[str, Any] = attrs.field(factory=dict)
    auth: tuple[str, str] | None = None


CASES = {
    "headers-and-query": Case(
        secrets=(f"Bearer {TOKEN}", TOKEN, API_KEY, SESSION, QUERY_KEY),
        headers={"Authorization": f"Bearer {TOKEN}", "X-Api-Key": API_KEY, "Cookie": f"theme=dark; session={SESSION}"},
        query=f"?api_key={quote(QUERY_KEY)}&lang=en"),
    "userinfo": Case(  # (httpx sends the URL's user and password as Basic auth)
        secrets=(PASSWORD, f"{USER}:{PASSWORD}", base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()),
        userinfo=f"{USER}:{quote(PASSWORD, safe='')}@"),
    "marked-header": Case(secrets=(TENANT,), headers={"X-Tenant": TENANT},
                          client={"sensitive_headers": ["x-tenant"]}),
    "auth-flow": Case(  # (an httpx auth flow adds its header while sending)
        secrets=(AUTH_FLOW_PASSWORD, base64.b64encode(f"{USER}:{AUTH_FLOW_PASSWORD}".encode()).decode()),
        auth=(USER, AUTH_FLOW_PASSWORD)),
}


def forms(secret: str) -> set[str]:
    """``secret`` as an echo may write it: as it is, percent-encoded, JSON- and HTML-escaped."""
    return {secret, quote(secret, safe=""), quote_plus(secret), json.dumps(secret)[1:-1], html.escape(secret)}


def echo_text(scope: dict[str, Any]) -> str:
    """The request as a chatty proxy echoes it: every header and the URL, in every encoding."""
    headers = [(n.decode("latin-1"), v.decode("latin-1")) for n, v in scope["headers"]]
    # (first the credentials it refused, so that the message's short summary holds one too)
    lines = ["refused: " + " ".join(v for n, v in headers if n in ("authorization", "x-api-key", "x-tenant"))]
    for name, value in headers:
        scheme, _, credential = value.partition(" ")
        lines += [f"{name}: {value}", json.dumps({name: value}), quote(value, safe=""), quote_plus(value),
                  html.escape(value), f"credential={credential}"]
        if scheme.lower() == "basic":
            decoded = base64.b64decode(credential).decode()
            lines += [f"basic user:password={decoded}", f"password={decoded.partition(':')[2]}"]
    query = scope["query_string"].decode("latin-1")
    lines += [f"url: {scope['path']}?{query}", *(f"{k}={v}" for k, v in parse_qsl(query))]
    return "\n".join(lines)


def echoing(status: int, content_type: str, *, as_json: bool = False) -> Callable[..., Any]:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        echoed = echo_text(scope)
        body = json.dumps({"detail": "forbidden", "request": echoed}) if as_json else echoed
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", content_type.encode())]})
        await send({"type": "http.response.body", "body": body.encode()})
    return app


def echoing_stream() -> Callable[..., Any]:
    """A good event stream whose warnings, subagent error and run error repeat the request."""
    async def app(scope: Any, receive: Any, send: Any) -> None:
        request = await request_json(receive)
        echoed = echo_text(scope)
        ids = {"threadId": request["threadId"], "runId": request["runId"]}
        events: list[dict[str, Any]] = [
            {"type": "RUN_STARTED", **ids, echoed: 1},  # (an unknown field named by the echo: a warning)
            {"type": "SUBAGENT_STARTED", "subagentRunId": "sub-1", "name": "helper"},
            {"type": "SUBAGENT_ERROR", "subagentRunId": "sub-1", "message": echoed, "code": echoed},
            {"type": "RUN_ERROR", "message": echoed, "code": "denied", "rawEvent": {"request": echoed}},
        ]
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
        await send({"type": "http.response.body",
                    "body": sse(*events)})
    return app


def strings(value: Any, depth: int = 0) -> Iterator[str]:
    """Every text reachable in ``value``: an exception's message, repr, notes and attributes, records' fields
    (a thread's state aside: it holds the conversation)."""
    if depth > 6:
        return
    if isinstance(value, str):
        yield value
    elif isinstance(value, BaseException):
        yield str(value)
        yield repr(value)
        yield from getattr(value, "__notes__", [])
        for item in vars(value).values():
            yield from strings(item, depth + 1)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from strings(key, depth + 1)
            yield from strings(item, depth + 1)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from strings(item, depth + 1)
    elif attrs.has(type(value)):
        yield repr(value)
        for field in attrs.fields(type(value)):
            if field.name != "state":
                yield from strings(getattr(value, field.name), depth + 1)


def leaks(case: Case, *sources: Any) -> list[str]:
    found = []
    for text in (t for source in sources for t in strings(source)):
        found += [form for secret in case.secrets for form in forms(secret) if form in text]
    return found


def client_for(drive: Any, url: str, case: Case) -> Any:
    kwargs = dict(case.client)
    if case.auth is not None:
        kwargs["http_client"] = drive.http_client(auth=case.auth)
    return drive.client(url.replace("http://", f"http://{case.userinfo}") + case.query,
                        headers=case.headers, **kwargs)


def stored(client: Any, thread_id: str) -> Any:
    record = client.store.load(thread_id)
    return None if record is None else json.loads(json.dumps(record.data))


@pytest.fixture
def logs(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    with caplog.at_level(logging.DEBUG, logger="agui_client"):
        yield caplog


def logged(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records] + [caplog.text]


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
@pytest.mark.parametrize(("status", "content_type", "as_json"), [
    (403, "application/json", True), (500, "text/plain", False), (502, "text/html; charset=utf-8", False)],
    ids=["403-json", "500-text", "502-html"])
def test_an_error_status_that_echoes_the_request_never_repeats_its_credentials(
    drive: Any, served: Any, logs: pytest.LogCaptureFixture, case: Case, status: int, content_type: str, as_json: bool
) -> None:
    endpoint = served(echoing(status, content_type, as_json=as_json))

    with client_for(drive, endpoint.url, case) as client:
        thread = client.thread()
        with pytest.raises(ag.HTTPStatusError) as caught:
            thread.run("hi")
        record = stored(client, thread.id)

    error = caught.value
    assert error.status_code == status
    assert leaks(case, error, record, logged(logs)) == []
    # (the echo did arrive, and was redacted: the test cannot pass because nothing was echoed)
    assert MARK in error.body and MARK in str(error)
    if as_json:
        assert error.payload["detail"] == "forbidden" and MARK in error.payload["request"]
    assert error.url is not None and "@" not in error.url
    if case.query:
        assert error.url.endswith("?api_key=[redacted]&lang=en")


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
@pytest.mark.parametrize("content_type", ["text/html", "text/plain"])
def test_a_200_page_that_is_not_an_event_stream_never_repeats_the_credentials(
    drive: Any, served: Any, logs: pytest.LogCaptureFixture, case: Case, content_type: str
) -> None:
    # text/html is refused as it arrives (TR-04); text/plain is read as SSE, and refused at its end (TR-09).
    endpoint = served(echoing(200, content_type))

    with client_for(drive, endpoint.url, case) as client:
        thread = client.thread()
        with pytest.raises(ag.ProtocolError) as caught:
            thread.run("hi")
        record = stored(client, thread.id)

    assert caught.value.rule == ("TR-04" if content_type == "text/html" else "TR-09")
    assert leaks(case, caught.value, record, logged(logs)) == []
    assert MARK in str(caught.value)


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_a_run_error_that_echoes_the_request_never_repeats_the_credentials(
    drive: Any, served: Any, logs: pytest.LogCaptureFixture, case: Case
) -> None:
    endpoint = served(echoing_stream())

    with client_for(drive, endpoint.url, case) as client:
        thread = client.thread()
        result = thread.run("hi")
        with pytest.raises(ag.RunFailed) as caught:
            result.raise_for_outcome()
        record = stored(client, thread.id)
        with thread.stream("again") as stream:
            events = list(stream)
        streamed = stream.result

    assert result.outcome == "error" and result.error is not None
    subagent = thread.state.subagents["sub-1"]
    assert leaks(case, result, caught.value, record, subagent, events, streamed, logged(logs)) == []
    # (each place was reached by the echo, and redacted)
    assert MARK in result.error.message and MARK in str(caught.value)
    assert subagent.error is not None and MARK in subagent.error.message
    assert MARK in record["subagents"]["sub-1"]["error"]["message"]
    assert any(w.code == "UK-03" and MARK in w.message for w in result.warnings)
    assert [MARK in e.message for e in events if isinstance(e, (ag.RunErrorEvent, ag.SubagentErrorEvent))] == [
        True, True]


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_a_malformed_event_that_echoes_the_request_is_a_protocol_error_without_the_credentials(
    drive: Any, served: Any, case: Case
) -> None:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        request = await request_json(receive)
        started = {"type": "RUN_STARTED", "threadId": request["threadId"], "runId": request["runId"]}
        key = json.dumps(echo_text(scope))
        bad = f'{{"type": "CUSTOM", "name": "x", "value": 1, {key}: 1, {key}: 2}}'  # (a key given twice)
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
        await send({"type": "http.response.body",
                    "body": b"data: " + json.dumps(started).encode() + b"\n\ndata: " + bad.encode() + b"\n\n"})

    endpoint = served(app)

    with client_for(drive, endpoint.url, case) as client:
        with pytest.raises(ag.DecodeError) as caught:
            client.thread().run("hi")

    assert caught.value.index == 1 and caught.value.result is not None
    assert leaks(case, caught.value) == []
    assert MARK in str(caught.value) and MARK in (caught.value.data or "")


def test_a_short_secret_is_redacted_only_where_it_stands_alone(drive: Any, served: Any) -> None:
    # A secret under eight characters would, replaced everywhere, eat ordinary words and numbers.
    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 403, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": b"key abc123 refused; see abc1234, xabc123, abc123."})

    endpoint = served(app)

    with drive.client(endpoint.url, headers={"X-Api-Key": "abc123"}) as client:
        with pytest.raises(ag.HTTPStatusError) as caught:
            client.thread().run("hi")

    assert caught.value.body == "key [redacted] refused; see abc1234, xabc123, [redacted]."


@pytest.mark.parametrize(("key", "anywhere"), [("abc1234", False), ("abcd1234", True)])
def test_a_secret_of_eight_characters_is_redacted_in_any_case_and_inside_a_word_and_one_of_seven_is_not(
    drive: Any, served: Any, key: str, anywhere: bool
) -> None:
    # Eight characters is where a secret is long enough to be replaced wherever it appears, in any case
    # (docs/errors-httpx.md); one shorter is replaced only standing alone, as written.
    page = f"x{key}y {key.upper()} {key}"

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 403, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": page.encode()})

    endpoint = served(app)

    with drive.client(endpoint.url, headers={"X-Api-Key": key}) as client:
        with pytest.raises(ag.HTTPStatusError) as caught:
            client.thread().run("hi")

    shown = f"x{MARK}y {MARK} {MARK}" if anywhere else f"x{key}y {key.upper()} {MARK}"
    assert caught.value.body == shown


@pytest.mark.parametrize(("content_type", "coding"), [("text/plain; charset=utf-8", "utf-8"),
                                                    ("text/plain", "utf-16-le")])
def test_a_short_secret_echoed_as_json_escapes_in_upper_case_hex_is_redacted(drive: Any, served: Any,
                                                                             content_type: str, coding: str) -> None:
    # JSON writes an escape's hex digits in either case; a short secret is matched as written but for them,
    # in the text and in the bytes of a UTF-16 page naming no charset (read as UTF-8, which only its
    # bytes' search sees through).
    key = "kz-key"
    echo = "".join(f"\\u{ord(c):04X}" for c in key)  # (\u006B\u007A\u002D...: hex letters upper-cased)

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 403,
                    "headers": [(b"content-type", content_type.encode())]})
        await send({"type": "http.response.body", "body": f"key {echo} refused".encode(coding)})

    endpoint = served(app)

    with drive.client(endpoint.url, headers={"X-Api-Key": key}) as client:
        with pytest.raises(ag.HTTPStatusError) as caught:
            client.thread().run("hi")

    assert caught.value.response.content.decode("utf-8").encode("latin-1", "replace").decode(coding) == (
        f"key {MARK} refused")


@pytest.mark.parametrize("coding", ["utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"])
def test_a_run_error_holding_the_token_as_wide_bytes_read_one_a_character_is_redacted(
    drive: Any, served: Any, coding: str
) -> None:
    # An agent that read the request's UTF-16 or UTF-32 bytes as one byte a character and quotes them: the
    # message holds the token with NULs between its letters.
    wide = TOKEN.encode(coding).decode("latin-1")

    async def app(scope: Any, receive: Any, send: Any) -> None:
        request = await request_json(receive)
        ids = {"threadId": request["threadId"], "runId": request["runId"]}
        events = [{"type": "RUN_STARTED", **ids}, {"type": "RUN_ERROR", "message": f"refused {wide}"}]
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
        await send({"type": "http.response.body", "body": b"".join(b"data: " + json.dumps(e).encode() + b"\n\n"
                                                                     for e in events)})

    endpoint = served(app)

    with drive.client(endpoint.url, headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        result = client.thread().run("hi")

    assert result.error is not None and result.error.message == f"refused {MARK}"


def test_a_secret_cut_by_the_excerpt_leaves_no_start_of_itself(drive: Any, served: Any) -> None:
    # The body is kept as a bounded excerpt: a secret that straddles its end must not leave its first half.
    filler = "x" * (ERROR_BODY_LIMIT - 20) + " "
    body = (filler + TOKEN).encode()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 500, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": body})

    endpoint = served(app)

    with drive.client(endpoint.url, headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        with pytest.raises(ag.HTTPStatusError) as caught:
            client.thread().run("hi")

    assert caught.value.body.endswith(" " + MARK)
    assert TOKEN[:5] not in caught.value.body


@pytest.mark.parametrize("key", ["\u043f\u0430\u0440\u043e\u043b\u044c" * 2, "p\u00e4ssw\u00f6rter-1"],
                         ids=["cyrillic", "latin-1"])
def test_a_secret_cut_by_the_excerpt_of_a_wide_page_naming_no_charset_leaves_no_start_of_itself(
    drive: Any, served: Any, key: str
) -> None:
    # A UTF-16 page naming no charset reads as UTF-8, where the text's search for a cut secret finds no
    # secret outside ASCII (a query value, sent percent-encoded), with NULs in its UTF-16 form or none:
    # the start of one at the end of the excerpt is for its bytes' search.
    filler = "x" * (ERROR_BODY_LIMIT // 2 - 8) + " "
    body = (filler + key + " and more").encode("utf-16-le")

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 500, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": body})

    endpoint = served(app)

    with drive.client(f"{endpoint.url}?token={key}") as client:
        with pytest.raises(ag.HTTPStatusError) as caught:
            client.thread().run("hi")

    content = caught.value.response.content
    assert key[:2].encode("utf-16-le") not in content and content.endswith(MARK.encode("utf-16-le"))


def test_the_conversation_is_left_as_the_agent_wrote_it(drive: Any, served: Any) -> None:
    # Redaction reaches what the client reports, not the conversation: a message is the agent's words,
    # kept and sent back on the next run as they were.
    async def app(scope: Any, receive: Any, send: Any) -> None:
        request = await request_json(receive)
        ids = {"threadId": request["threadId"], "runId": request["runId"]}
        events = [{"type": "RUN_STARTED", **ids},
                  {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
                  {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": f"your key is {API_KEY}"},
                  {"type": "TEXT_MESSAGE_END", "messageId": "m1"}, {"type": "RUN_FINISHED", **ids}]
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
        await send({"type": "http.response.body",
                    "body": sse(*events)})

    endpoint = served(app)

    with drive.client(endpoint.url, headers={"X-Api-Key": API_KEY}) as client:
        result = client.thread().run("hi")

    assert result.text == f"your key is {API_KEY}"


def test_a_connect_failure_names_the_url_without_its_userinfo_or_secret_query(drive: Any) -> None:
    with serve(echoing(200, "text/plain")) as server:
        dead = server.url  # (stopped at the end of the block: nothing listens on its port afterwards)
    url = dead.replace("http://", f"http://{USER}:{quote(PASSWORD, safe='')}@") + f"agent?token={QUERY_KEY}&v=2"

    with drive.client(url) as client:
        with pytest.raises(ag.TransportError) as caught:
            client.thread().run("hi")

    assert caught.value.request_sent is False
    assert caught.value.url == dead + "agent?token=[redacted]&v=2"
    case = Case(secrets=(PASSWORD, quote(PASSWORD, safe=""), QUERY_KEY))
    assert leaks(case, caught.value, caught.value.__cause__) == []


@contextlib.contextmanager
def garbling_server() -> Iterator[str]:
    """A raw server answering one request with an illegal status line that quotes its Authorization
    header: the HTTP parser's own error message then holds the credential."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()

        def answer() -> None:
            connection, _ = listener.accept()
            with connection:
                data = b""
                while b"\r\n\r\n" not in data:
                    data += connection.recv(65536)
                lines = data.split(b"\r\n\r\n", 1)[0].split(b"\r\n")[1:]
                auth = next(line.split(b": ", 1)[1] for line in lines if line.lower().startswith(b"authorization:"))
                connection.sendall(b"HTTP/1.1 2xx " + auth + b"\r\n\r\n")

        worker = threading.Thread(target=answer, daemon=True)
        worker.start()
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/agent"
        worker.join(10)


def test_an_http_parser_error_quoting_the_request_keeps_the_credentials_out_cause_included(drive: Any) -> None:
    with garbling_server() as url:
        with drive.client(url, headers={"Authorization": f"Bearer {TOKEN}"}) as client:
            with pytest.raises(ag.TransportError) as caught:
                client.thread().run("hi")

    cause = caught.value.__cause__
    assert isinstance(cause, httpx.RemoteProtocolError)
    assert leaks(Case(secrets=(TOKEN,)), caught.value, cause) == []
    assert MARK in str(caught.value) and MARK in str(cause)


# --------------------------------------------------------------------------------------------------
# A redirect that is not followed says where it pointed
# --------------------------------------------------------------------------------------------------


def redirecting(status: int, location: Callable[[Any], str]) -> Callable[..., Any]:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"location", location(scope).encode()), (b"content-length", b"0")]})
        await send({"type": "http.response.body", "body": b""})
    return app


def test_a_redirect_not_followed_carries_its_location(drive: Any, served: Any) -> None:
    endpoint = served(redirecting(302, lambda scope: "/login?next=%2Fagent"))

    with drive.client(endpoint.url) as client:
        with pytest.raises(ag.HTTPStatusError) as caught:
            client.thread().run("hi")

    origin = endpoint.url.split("/agent-")[0]
    assert caught.value.status_code == 302
    assert caught.value.location == f"{origin}/login?next=%2Fagent"
    assert caught.value.location in str(caught.value) and "follow_redirects" in str(caught.value)


def test_a_redirect_location_that_echoes_a_secret_is_redacted(drive: Any, served: Any) -> None:
    # The agent hands the caller's key back in the URL it redirects to, and a credential of its own.
    endpoint = served(redirecting(307, lambda scope: f"http://bob:hunter2-hunter2@127.0.0.1:1/next?sig={API_KEY}"
                                                     f"&from={dict(scope['headers'])[b'x-api-key'].decode()}&page=2"))

    with drive.client(endpoint.url, headers={"X-Api-Key": API_KEY}) as client:
        with pytest.raises(ag.HTTPStatusError) as caught:
            client.thread().run("hi")

    location = caught.value.location
    assert location == f"http://127.0.0.1:1/next?sig={MARK}&from={MARK}&page=2"
    assert location in str(caught.value)
    assert leaks(Case(secrets=(API_KEY, "hunter2-hunter2")), caught.value) == []


def test_a_redirect_to_another_origin_says_where_and_why_it_was_not_followed(drive: Any, served: Any) -> None:
    with serve(echoing(200, "text/plain")) as elsewhere:
        endpoint = served(redirecting(307, lambda scope: f"{elsewhere}moved"))
        with drive.client(endpoint.url, follow_redirects=True) as client:
            with pytest.raises(ag.HTTPStatusError) as caught:
                client.thread().run("hi")

    assert caught.value.location == f"{elsewhere}moved"
    assert "another origin" in str(caught.value) and caught.value.location in str(caught.value)


def test_a_redirect_loop_says_where_its_last_hop_pointed(drive: Any, served: Any) -> None:
    endpoint = served(redirecting(308, lambda scope: scope["path"]))

    with drive.client(endpoint.url, follow_redirects=True) as client:
        with pytest.raises(ag.HTTPStatusError) as caught:
            client.thread().run("hi")

    assert caught.value.location == endpoint.url
    assert f"{MAX_REDIRECTS} redirects" in str(caught.value)


def test_a_redirect_followed_to_an_error_has_no_location(drive: Any, served: Any) -> None:
    target = served(echoing(500, "text/plain"))
    endpoint = served(redirecting(307, lambda scope: target.url))

    with drive.client(endpoint.url, follow_redirects=True) as client:
        with pytest.raises(ag.HTTPStatusError) as caught:
            client.thread().run("hi")

    assert caught.value.status_code == 500 and caught.value.location is None


def test_an_http_status_error_can_be_built_without_a_location() -> None:
    # (the attribute is new: code that builds the error itself keeps working)
    error = ag.HTTPStatusError("HTTP 500", status_code=500)

    assert error.location is None and isinstance(error, ag.TransportError)


def test_the_redactor_is_what_the_stream_handle_reports_with(drive: Any, served: Any) -> None:
    endpoint = served(echoing_stream())

    with drive.client(endpoint.url, headers={"X-Api-Key": API_KEY}) as client:
        handle = ag.client.StreamHandle()
        run_input = ag.RunAgentInput(thread_id="t", run_id="r", messages=(), state={}, tools=(), context=(),
                                     forwarded_props={})
        with client.open(run_input, handle=handle) as payloads:
            list(payloads)

    assert handle.redactor.text(f"echo {API_KEY}") == f"echo {MARK}"


class _RotatingToken(httpx.Auth):
    """An auth flow that sends a new token with every request, as one that refreshes it might."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    def auth_flow(self, request: httpx.Request) -> Iterator[httpx.Request]:
        token = f"rot-{len(self.sent) + 1}-{'9f8e7d6c' * 2}"
        self.sent.append(token)
        request.headers["Authorization"] = f"Bearer {token}"
        yield request


def test_each_run_redacts_the_credentials_it_sent_when_they_change_from_run_to_run(
    drive: Any, served: Any, logs: pytest.LogCaptureFixture
) -> None:
    # A client keeps the redactors it built (one per set of headers and URLs): a run whose headers
    # differ from the last run's must get its own, never the last run's.
    endpoint = served(echoing_stream())
    auth = _RotatingToken()

    with drive.client(endpoint.url, http_client=drive.http_client(auth=auth)) as client:
        thread = client.thread()
        results = [thread.run("hi"), thread.run("again"), thread.run("and again")]

    assert len(set(auth.sent)) == 3
    for result, token in zip(results, auth.sent, strict=True):
        assert result.error is not None and MARK in result.error.message
        assert leaks(Case(secrets=(token,)), result, logged(logs)) == []


def test_a_threads_runs_share_one_redactor_though_each_sends_a_longer_body(
    drive: Any, served: Any, monkeypatch: pytest.MonkeyPatch, logs: pytest.LogCaptureFixture
) -> None:
    # A client keeps the redactors it built, keyed on what they are made of. Every run of a thread
    # sends the whole thread, so its Content-Length grows from run to run: keyed on every header, the
    # kept redactor was never found again and each run built its two anew.
    from agui_client.core.redact import Redactor

    built: list[Any] = []
    of = Redactor.of

    def counted(*args: Any, **kwargs: Any) -> Any:
        built.append(args)
        return of(*args, **kwargs)

    monkeypatch.setattr(Redactor, "of", counted)
    endpoint = served(echoing_stream())

    with drive.client(endpoint.url, headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        thread = client.thread()
        results = [thread.run("hi"), thread.run("again, longer"), thread.run("and again, longer still")]

    assert len({request.headers["content-length"] for request in endpoint.received}) == 3
    assert len(built) == 2  # (the first run's: before sending, and from the exchange as sent)
    for result in results:
        assert result.error is not None and MARK in result.error.message
        assert leaks(Case(secrets=(TOKEN,)), result, logged(logs)) == []


def test_displayed_url_drops_the_userinfo_and_masks_secret_query_values() -> None:
    from agui_client.core.redact import displayed_url

    shown = displayed_url("https://bob:hunter2-pw@agent.test:8443/run?api_key=k-1234567&v=2&sig=abc#t")
    assert shown == "https://agent.test:8443/run?api_key=[redacted]&v=2&sig=[redacted]#t"
    # (a short name is a secret's only as the whole name: "sid" is, "side" is not)
    assert displayed_url("https://agent.test/run?sid=5e55-10n&side=left") == "https://agent.test/run?sid=[redacted]&side=left"
    assert displayed_url("https://agent.test/run?team=blue", marked=["team"]) == "https://agent.test/run?team=[redacted]"


def test_an_echo_in_forms_the_chatty_proxy_does_not_write_is_redacted_too(drive: Any, served: Any) -> None:
    # A secret as a JSON key, percent-encoded with lowercase hex digits, in a response header the error
    # keeps, and a secret that starts with another one (the longer is replaced whole, no tail of it shown).
    key, longer = "pk-0123456789", "pk-0123456789-tail"
    lower_hex = re.sub("%[0-9A-F]{2}", lambda found: found.group().lower(), quote(TOKEN, safe=""))
    assert lower_hex != quote(TOKEN, safe="")

    async def app(scope: Any, receive: Any, send: Any) -> None:
        body = json.dumps({TOKEN: "as a key", "lower": lower_hex, "both": longer})
        await send({"type": "http.response.start", "status": 403,
                    "headers": [(b"content-type", f"application/json; echo={key}".encode())]})
        await send({"type": "http.response.body", "body": body.encode()})

    endpoint = served(app)
    headers = {"Authorization": f"Bearer {TOKEN}", "X-Api-Key": key, "X-Session-Key": longer}
    with drive.client(endpoint.url, headers=headers) as client:
        with pytest.raises(ag.HTTPStatusError) as caught:
            client.thread().run("hi")

    error = caught.value
    assert error.payload == {MARK: "as a key", "lower": MARK, "both": MARK}
    assert error.content_type == f"application/json; echo={MARK}"
    assert leaks(Case(secrets=(TOKEN, key, longer, lower_hex)), error) == []


def test_a_note_on_the_http_error_kept_as_the_cause_is_redacted(drive: Any) -> None:
    # (httpx's own errors are kept as the cause, which a traceback prints, notes and all)
    def refuse(request: httpx.Request) -> httpx.Response:
        error = httpx.ConnectError("refused", request=request)
        error.add_note(f"while sending {request.headers['authorization']}")
        raise error

    with drive.client("http://127.0.0.1:9/run", headers={"Authorization": f"Bearer {TOKEN}"},
                      http_client=drive.mock(refuse)) as client:
        with pytest.raises(ag.TransportError) as caught:
            client.thread().run("hi")

    cause = caught.value.__cause__
    assert isinstance(cause, httpx.ConnectError)
    assert cause.__notes__ == [f"while sending {MARK}"]


def test_an_api_key_sent_as_the_basic_user_name_is_redacted_on_its_own(drive: Any, served: Any) -> None:
    # Some APIs take their key as the Basic user name, with no password: the name alone is then the secret.
    api_user = "ak_live_51H8cX2eZvKYlo2C"

    async def app(scope: Any, receive: Any, send: Any) -> None:
        credential = dict(scope["headers"])[b"authorization"].split(b" ")[1]
        user = base64.b64decode(credential).decode().partition(":")[0]
        await send({"type": "http.response.start", "status": 401, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": f"unknown key {user}".encode()})

    endpoint = served(app)
    with drive.client(endpoint.url, http_client=drive.http_client(auth=(api_user, ""))) as client:
        with pytest.raises(ag.AuthenticationError) as caught:
            client.thread().run("hi")

    assert caught.value.body == f"unknown key {MARK}"
    assert leaks(Case(secrets=(api_user,)), caught.value) == []
