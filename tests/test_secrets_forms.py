"""The forms of a credential the redactor missed until the twenty-first round, each through a real path out.

An agent (or a proxy in front of it) echoing the caller's credential may write it in hex, every byte
percent-encoded, escaped character by character as its own JSON encoder does (Go's ``\\u0026``, PHP's
``\\/``), quoted twice (JSON inside JSON); may echo a JWT's signature alone, or a part of a credential
(the access key id inside an AWS ``X-Amz-Credential``); and a URL's credential may stand in a parameter
whose name is no header's (``code``, ``access``, ``sig``). Each test sends the credential to a real
server on 127.0.0.1 that echoes it so, and looks where it would come out: the error (its message, body
and payload), a log record (DEBUG too), a recording, a span. The boundaries against hiding useful text
are pinned too: a hex id, a short secret's hex and a JWT's algorithm header stay readable.
"""

from __future__ import annotations

import base64
import html
import json
import logging
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from wirekit import request_json

import agui_client as ag
from agui_client.testing import RecordingTransport

MARK = "[redacted]"
TOKEN = 'sk-live-4f9a/Zq+8c&K2<x>"q7'  # (characters each escaping writes its own way)


def b64url(data: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


JWT_HEADER = b64url({"alg": "HS256", "typ": "JWT"})
JWT_CLAIMS = b64url({"sub": "user-8812", "tenant": "acme", "exp": 1893456000})
JWT_SIGNATURE = "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
JWT = f"{JWT_HEADER}.{JWT_CLAIMS}.{JWT_SIGNATURE}"


def answering(status: int, body: Callable[[dict[bytes, bytes]], str], content_type: str = "text/plain",
              headers: tuple[tuple[bytes, bytes], ...] = ()) -> Callable[..., Any]:
    """An agent answering every request with ``status`` and ``body(request headers)``."""
    async def app(scope: Any, receive: Any, send: Any) -> None:
        text = body(dict(scope["headers"]))
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", content_type.encode()), *headers]})
        await send({"type": "http.response.body", "body": text.encode()})
    return app


def refused(drive: Any, served: Any, app: Any, url_tail: str = "", **client: Any) -> ag.HTTPStatusError:
    endpoint = served(app)
    with drive.client(endpoint.url + url_tail, **client) as made:
        with pytest.raises(ag.HTTPStatusError) as caught:
            made.thread().run("hi")
    return caught.value


def said(error: BaseException) -> str:
    """Everything an error shows of the agent's answer."""
    shown = [str(error), repr(error), getattr(error, "body", ""), json.dumps(getattr(error, "payload", None))]
    response = getattr(error, "response", None)
    if response is not None:
        shown += [response.text, repr(response.headers.raw)]
    return "\n".join(shown)


@pytest.fixture
def debug_logs(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    """Every record of the client, httpx and httpcore, DEBUG and up."""
    with caplog.at_level(logging.DEBUG):
        yield caplog


def percent_all(text: str) -> str:
    return "".join(f"%{byte:02x}" for byte in text.encode())


#: The token as an echo writes it, by an escaping the redactor did not know, or by one it knew chosen
#: character by character.
ESCAPED = {
    "hex": TOKEN.encode().hex(),
    "hex-upper": TOKEN.encode().hex().upper(),
    "every-byte-percent-encoded": percent_all(TOKEN),
    "percent-encoded-twice": quote(quote(TOKEN, safe=""), safe=""),
    "go-json": json.dumps(TOKEN).strip('"').replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e"),
    "php-json": json.dumps(TOKEN).strip('"').replace("/", "\\/"),
    "json-in-json": json.dumps(json.dumps(TOKEN))[3:-3],
    "html-entities": "".join(f"&#{ord(c)};" for c in TOKEN),
    "mixed": "".join(c if i % 2 else f"%{ord(c):02X}" for i, c in enumerate(TOKEN)),
}


@pytest.mark.parametrize("echo", ESCAPED.values(), ids=ESCAPED.keys())
def test_a_token_echoed_in_an_escaping_of_its_own_is_redacted(drive: Any, served: Any, echo: str) -> None:
    # One rule: each character of a secret may be written as itself or escaped (percent, JSON, a repr,
    # HTML), chosen character by character, nested any number of times; and the whole as hex digits.
    error = refused(drive, served, answering(403, lambda headers: f"refused {echo} here"),
                    headers={"Authorization": f"Bearer {TOKEN}"})

    assert error.body == f"refused {MARK} here"
    assert echo not in said(error) and MARK in str(error)


def test_hex_ids_and_a_short_secrets_hex_stay_readable(drive: Any, served: Any) -> None:
    # The boundary: a secret's hex digits are looked for from 16 on (a secret of 8 bytes); an id is never
    # redacted for being hex, only for holding a secret. Here a 6-character key's hex (12 digits), a
    # 32-digit run id and a UUID stand beside the key itself, and the long token's hex.
    key = "abc123"
    page = (f"key {key}, hex {key.encode().hex()}, run 3f2a9c1e0b7d4e5fa1b2c3d4e5f60718, "
            f"interrupt 0f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a, token {TOKEN.encode().hex()}")
    error = refused(drive, served, answering(403, lambda headers: page),
                    headers={"X-Api-Key": key, "Authorization": f"Bearer {TOKEN}"})

    assert error.body == (f"key {MARK}, hex {key.encode().hex()}, run 3f2a9c1e0b7d4e5fa1b2c3d4e5f60718, "
                          f"interrupt 0f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a, token {MARK}")


def test_a_jwts_signature_and_claims_echoed_alone_are_redacted_its_algorithm_header_is_not(
    drive: Any, served: Any, debug_logs: pytest.LogCaptureFixture
) -> None:
    # Each run of 16 or more token characters inside a credential is a secret of its own; a JOSE header
    # (a JWT's first part) is not: it says how the token is signed, as every token of its issuer does.
    # The agent also echoes the signature in a response header, which httpcore logs at DEBUG.
    page = f"bad signature {JWT_SIGNATURE} for claims {JWT_CLAIMS} (header {JWT_HEADER})"
    error = refused(drive, served, answering(401, lambda headers: page,
                                             headers=((b"x-rejected", JWT_SIGNATURE.encode()),)),
                    headers={"Authorization": f"Bearer {JWT}"})

    assert error.body == f"bad signature {MARK} for claims {MARK} (header {JWT_HEADER})"
    logged = "\n".join(record.getMessage() for record in debug_logs.records)
    assert "x-rejected" in logged  # (the header was logged, redacted)
    for part in (JWT_SIGNATURE, JWT_CLAIMS):
        assert part not in said(error) and part not in logged


def test_a_jwt_split_across_two_cookies_is_redacted_rejoined_and_by_its_signature(drive: Any, served: Any) -> None:
    # A token too long for one cookie goes in two (``id_token.0``, ``id_token.1``), cut anywhere: each
    # half is a cookie's value, and the runs of token characters in each are secrets of their own.
    cut = len(JWT_HEADER) + 1 + len(JWT_CLAIMS) // 2
    first, second = JWT[:cut], JWT[cut:]

    error = refused(drive, served, answering(403, lambda headers: f"token {JWT} signature {JWT_SIGNATURE}"),
                    headers={"Cookie": f"id_token.0={first}; id_token.1={second}; theme=dark"})

    assert error.body == f"token {MARK}{MARK} signature {MARK}"


def test_credentials_in_parameters_named_as_no_header_is_are_hidden_from_the_url_the_log_and_the_echo(
    drive: Any, served: Any, debug_logs: pytest.LogCaptureFixture
) -> None:
    # A parameter is sensitive when a header of its name would be, or when one of its words is code,
    # access, sig, sid, pwd, pw, pass or otp (which in a header's name mean something else:
    # Access-Control-*, X-Error-Code). Values under 4 characters are hidden in the URL shown but not
    # looked for in text: "lang_code=en" would take every standalone "en" out of the agent's words.
    key_id = "AKIAIOSFODNN7EXAMPLE"
    values = {"code": "4/0AfJohXn-oauth-code-9d8c", "access": "acc-7f6e5d4c3b2a1908",
              "X-Amz-Credential": f"{key_id}/20240101/us-east-1/s3/aws4_request",
              "X-Amz-Signature": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
              "sig": "QmFzZTY0U2lnbmF0dXJlK3Zhcg==", "lang_code": "en", "sv": "2022-11-02", "v": "2"}
    query = "?" + "&".join(f"{name}={quote(value, safe='')}" for name, value in values.items())
    echoed = f"key {key_id}; code {values['code']}; access {values['access']}; sig {values['sig']}; lang en"
    error = refused(drive, served, answering(403, lambda headers: echoed), query)

    assert error.body == f"key {MARK}; code {MARK}; access {MARK}; sig {MARK}; lang en"
    hidden = ("code", "access", "X-Amz-Credential", "X-Amz-Signature", "sig", "lang_code")
    assert error.url is not None and error.url.endswith(
        "?" + "&".join(f"{name}={MARK}" if name in hidden else f"{name}={quote(value, safe='')}"
                       for name, value in values.items()))
    request_lines = [r.getMessage() for r in debug_logs.records if r.getMessage().startswith("HTTP Request:")]
    assert request_lines and all(f"code={MARK}" in line and f"access={MARK}" in line for line in request_lines)
    printed = said(error) + "\n".join(record.getMessage() for record in debug_logs.records)
    for name in hidden[:-1]:
        assert values[name] not in printed and quote(values[name], safe="") not in printed
    assert key_id not in printed


def test_a_short_session_cookie_is_redacted_by_its_name_and_a_short_other_one_is_not(
    drive: Any, served: Any, debug_logs: pytest.LogCaptureFixture
) -> None:
    # A cookie's value is a secret when it is long enough to stand alone (8 characters) or its name is
    # sensitive (as a parameter's is: sid, session, token ...), whatever its length; a cookie's name is
    # none, however long. The agent also sets the cookie back, which httpcore logs at DEBUG.
    page = "sid 4f2a9c unknown; theme dark; analytics_opt_in_version yes"
    error = refused(drive, served, answering(403, lambda headers: page,
                                             headers=((b"set-cookie", b"sid=4f2a9c; Path=/"),)),
                    headers={"Cookie": "sid=4f2a9c; theme=dark; analytics_opt_in_version=yes"})

    assert error.body == f"sid {MARK} unknown; theme dark; analytics_opt_in_version yes"
    logged = "\n".join(record.getMessage() for record in debug_logs.records)
    assert "set-cookie" in logged and "4f2a9c" not in logged


def test_a_url_password_with_percent_encoded_characters_is_redacted_however_the_echo_encodes_it(
    drive: Any, served: Any
) -> None:
    # The password is sent as httpx decodes it from the URL (Basic auth); the echo writes it back
    # decoded, encoded with lower-case hex, every byte encoded, JSON-escaped, or as HTML entities.
    password = "p@ss:w/rd%\u00e9-long"

    def page(headers: dict[bytes, bytes]) -> str:
        sent = base64.b64decode(headers[b"authorization"].split(b" ")[1]).decode().partition(":")[2]
        forms = [sent, quote(sent, safe="").lower(), percent_all(sent), json.dumps(sent)[1:-1],
                 html.escape(sent).replace("\u00e9", "&#233;")]
        return "\n".join(f"password {form}" for form in forms)

    endpoint = served(answering(401, page))
    url = endpoint.url.replace("http://", f"http://bob:{quote(password, safe='')}@")
    with drive.client(url) as client:
        with pytest.raises(ag.AuthenticationError) as caught:
            client.thread().run("hi")

    error = caught.value
    assert error.body == "\n".join([f"password {MARK}"] * 5)
    assert password not in said(error) and quote(password, safe="") not in said(error)


def test_a_bearer_token_in_a_json_error_body_quoting_json_is_redacted_in_the_error_and_the_span(
    drive: Any, served: Any
) -> None:
    # The agent's error body quotes the upstream's JSON answer, which quotes the request's headers:
    # the token is escaped twice, and the outer encoder writes "/" as "\/" (as PHP's does).
    upstream = json.dumps({"headers": {"Authorization": f"Bearer {TOKEN}"}})
    body = json.dumps({"error": {"message": f"upstream refused: {upstream}"}}).replace("/", "\\/")
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))

    error = refused(drive, served, answering(401, lambda headers: body, "application/json"),
                    headers={"Authorization": f"Bearer {TOKEN}"},
                    telemetry=ag.Telemetry(tracer_provider=provider, record_content=True))

    message = error.payload["error"]["message"]
    assert message.startswith("upstream refused: ") and json.loads(message.partition(": ")[2]) == {
        "headers": {"Authorization": MARK}}
    spans = [span for span in exporter.get_finished_spans() if span.name == "agui.run"]
    recorded = "\n".join(f"{span.status.description} {dict(span.attributes or {})} "
                         f"{[dict(event.attributes or {}) for event in span.events]}" for span in spans)
    assert spans and "HTTP 401" in recorded
    for text in (said(error), recorded):
        assert "sk-live" not in text and TOKEN not in text


def test_a_recording_keeps_no_escaped_form_of_the_token(tmp_path: Any, served: Any) -> None:
    # A recording is written as the answer streams: the run's error echoes the token in hex, and in a
    # JSON escape the writer chose character by character.
    echoes = [TOKEN.encode().hex(), ESCAPED["go-json"], ESCAPED["mixed"]]

    async def app(scope: Any, receive: Any, send: Any) -> None:
        request = await request_json(receive)
        ids = {"threadId": request["threadId"], "runId": request["runId"]}
        events = [{"type": "RUN_STARTED", **ids}]
        frames = [f"data: {json.dumps(events[0])}\n\n"]
        # (written as the agent's encoder wrote it: the escapes are in the bytes, not made by json.dumps)
        frames.append('data: {"type": "RUN_ERROR", "message": "refused ' + " and ".join(echoes) + '"}\n\n')
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
        await send({"type": "http.response.body", "body": "".join(frames).encode()})

    endpoint = served(app)
    with httpx.Client(transport=RecordingTransport(tmp_path)) as http, \
            ag.AgentClient(endpoint.url, http_client=http, headers={"Authorization": f"Bearer {TOKEN}"},
                           telemetry=False) as client:
        result = client.thread().run("hi")

    recorded = (tmp_path / "01.sse").read_text()
    assert result.error is not None and result.error.message == f"refused {MARK} and {MARK} and {MARK}"
    assert f"refused {MARK} and {MARK} and {MARK}" in recorded
    assert not any(echo in recorded for echo in echoes)


def test_a_text_full_of_escapes_is_read_escape_by_escape_only_when_it_may_hold_a_form_of_a_secret(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A recording of a chat whose deltas hold "\n", "&" and "%" ran the escape reader over every read,
    # a call an escape: nine times what recording cost before escapes were read. A text with no run of
    # the characters a form of the secret is made of, as long as the secret, cannot hold one.
    from agui_client.core import redact

    read: list[str] = []
    unescape = redact.unescape
    monkeypatch.setattr(redact, "unescape", lambda found: read.append(found[0]) or unescape(found))
    redactor = redact.Redactor([TOKEN])
    chat = "".join('data: {"delta": "Line one\\nwith & and 50% off, 100%\\n done &amp; more"}\n\n'
                   for _ in range(1_000))

    assert redactor.text(chat) == chat and read == []
    escaped = chat + html.escape(TOKEN) + json.dumps(quote(TOKEN, safe=""))
    assert TOKEN not in redactor.text(escaped) and quote(TOKEN, safe="") not in redactor.text(escaped)
    assert redactor.text(escaped).count(MARK) == 2


# --------------------------------------------------------------------------------------------------
# Twenty-second round: forms escaped twice, cut between two pieces of a recording; escapes mixed
# --------------------------------------------------------------------------------------------------

#: A token with characters past ASCII, one past U+FFFF (JSON writes it as a surrogate pair), sent as a URL's
#: parameter (a header holds ASCII only): percent-encoded there, a secret as written and decoded.
WIDE_TOKEN = "tök-ключ-🔑-4f9a/Zq+8c&K2"
WIDE_QUERY = f"?token={quote(WIDE_TOKEN, safe='')}"


def json_escape_all(text: str) -> str:
    """``text`` with every character a JSON ``\\u`` escape (a surrogate pair past U+FFFF)."""
    units = text.encode("utf-16-be", "surrogatepass")
    return "".join(f"\\u{int.from_bytes(units[i:i + 2], 'big'):04x}" for i in range(0, len(units), 2))


#: A form of a token escaped twice, as an echo writes it.
TWICE: dict[str, Callable[[str], str]] = {
    "json-in-json": lambda token: json.dumps(json.dumps(token))[3:-3],
    "json-escapes-in-json": lambda token: json.dumps(json_escape_all(token))[1:-1],
    "percent-encoded-twice": lambda token: quote(quote(token, safe=""), safe=""),
    "json-in-percent": lambda token: quote(json.dumps(token)[1:-1], safe=""),
    "json-escapes-in-percent": lambda token: quote(json_escape_all(token), safe=""),
    "json-in-percent-twice": lambda token: quote(quote(json_escape_all(token), safe=""), safe=""),
}


@pytest.mark.parametrize("token", [TOKEN, WIDE_TOKEN], ids=["ascii", "wide"])
@pytest.mark.parametrize("escape", TWICE.values(), ids=TWICE.keys())
def test_a_form_escaped_twice_cut_anywhere_between_two_pieces_of_a_recording_is_replaced(
        escape: Callable[[str], str], token: str) -> None:
    # A recording is redacted piece by piece as the answer streams, holding back the end of each piece
    # that may start a secret. JSON put in a URL (``%5Cu00f6``) was no form the redactor knew at all;
    # the length held back is read off the pattern, so every form it finds whole is found cut anywhere.
    from agui_client.core.redact import Redactor
    from agui_client.testing.recording import _Scrub

    redactor = Redactor.of(urls=[f"http://agent.example/run?token={quote(token, safe='')}"])
    form = escape(token)
    body = f'data: {{"type":"RUN_ERROR","message":"refused {form} here"}}\n\n'.encode()
    assert redactor.text(body.decode()) == body.decode().replace(form, MARK)
    start = body.index(form.encode())
    for at in range(start, start + len(form) + 1):
        scrub = _Scrub(redactor)
        written = scrub(body[:at]) + scrub(body[at:]) + scrub.rest()
        assert written == body.replace(form.encode(), MARK.encode()), at


def test_what_a_recording_holds_back_covers_the_widest_form_the_pattern_finds() -> None:
    # Held back less, a form as wide as the pattern allows (every character a \U escape behind 16
    # backslashes, the most it reads before an escape) is written out in two parts, neither holding it
    # whole. What was held back covered 24 characters a character (the secret's JSON escapes as UTF-32
    # writes them), by chance rather than by measure: one short of this form's 25.
    from agui_client.core.redact import BytesRedactor, Redactor
    from agui_client.testing.recording import _Scrub

    secret = "K7v9Qm2Xw4Lp8Rt6"
    redactor = Redactor([secret])
    form = "".join("\\" * 16 + f"U{ord(c):08x}" for c in secret)
    body = f"data: {form}\n\n".encode()
    assert redactor.text(body.decode()) == f"data: {MARK}\n\n"
    assert BytesRedactor(redactor).keep >= len(form) - 1
    for at in range(len(body) + 1):
        scrub = _Scrub(redactor)
        assert scrub(body[:at]) + scrub(body[at:]) + scrub.rest() == f"data: {MARK}\n\n".encode(), at


def mix(token: str, *writers: Callable[[str], str]) -> str:
    """``token`` with its characters written by each of ``writers`` in turn."""
    return "".join(writers[at % len(writers)](char) for at, char in enumerate(token))


def raw(char: str) -> str:
    return char


def percent(char: str) -> str:
    return quote(char, safe="")


#: A token past ASCII written with its characters escaped in different ways, character by character.
MIXED: dict[str, tuple[Callable[[str], str], ...]] = {
    "json-escapes-and-raw": (json_escape_all, raw),
    "percent-and-raw": (percent, raw),
    "percent-and-json-escapes": (percent, json_escape_all),
    "all-three": (raw, percent, json_escape_all),
}


@pytest.mark.parametrize("writers", MIXED.values(), ids=MIXED.keys())
def test_a_token_past_ascii_written_with_escapes_mixed_is_redacted_in_the_error_and_the_recording(
        drive: Any, served: Any, tmp_path: Any, writers: tuple[Callable[[str], str], ...]) -> None:
    # The escapes were read as bytes (percent-encoding) and as characters (JSON), never mixed: a token
    # with some characters percent-encoded and others raw or JSON-escaped stood in the error, its page
    # (read as bytes) and the recording.
    echoes = [mix(WIDE_TOKEN, *writers[shift:], *writers[:shift]) for shift in range(len(writers))]
    for echo in echoes:  # (each character written each way)
        error = refused(drive, served, answering(403, lambda headers, echo=echo: f"denied for {echo}!"), WIDE_QUERY)
        assert echo not in said(error) and f"denied for {MARK}!" in error.body

    async def app(scope: Any, receive: Any, send: Any) -> None:
        request = await request_json(receive)
        started = {"type": "RUN_STARTED", "threadId": request["threadId"], "runId": request["runId"]}
        # (written as the agent's encoder wrote it: the escapes are in the bytes, not made by json.dumps)
        failed = 'data: {"type": "RUN_ERROR", "message": "no ' + " or ".join(echoes) + '"}\n\n'
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
        await send({"type": "http.response.body", "body": f"data: {json.dumps(started)}\n\n{failed}".encode()})

    endpoint = served(app)
    with httpx.Client(transport=RecordingTransport(tmp_path)) as http, \
            ag.AgentClient(endpoint.url + WIDE_QUERY, http_client=http, telemetry=False) as client:
        result = client.thread().run("hi")
    recorded = (tmp_path / "01.sse").read_bytes()
    assert result.error is not None and result.error.message == "no " + " or ".join([MARK] * len(echoes))
    assert ("no " + " or ".join([MARK] * len(echoes))).encode() in recorded
    assert not any(echo.encode() in recorded for echo in echoes)
