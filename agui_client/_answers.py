"""An agent's answer that is not a run, as the error the caller gets.

An error status becomes an ``HTTPStatusError`` (``AuthenticationError`` for a 401) holding a bounded
excerpt of the body (decoded when it has one gzip or deflate coding), the JSON payload when there is
one, ``Retry-After`` read as seconds, and httpx's ``.request`` and ``.response`` as they may be shown:
everything the agent sent goes through the request's redactor first, as an agent may echo the
request's credentials, and its words are made inert where a message quotes them. Both clients read
the excerpt with one :class:`Excerpt`.
"""

from __future__ import annotations

import codecs
import email.utils
import html
import json
import re
import socket
import ssl
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from typing import Any, TypeVar

import httpx

from ._inert import quoted, quoted_name, visible
from ._inflate import Inflater
from .core.redact import MARK, BytesRedactor, Redactor, exception_chain, is_sensitive, redact_exception
from .errors import AuthenticationError, HTTPStatusError, ProtocolError, TransportError

__all__ = ["ERROR_BODY_LIMIT", "ERROR_JSON_LIMIT", "Excerpt", "about", "certificate_refused", "excerpt_text",
           "media_type", "read_excerpt", "redacted_cause", "redacted_excerpt", "status_error", "undecodable",
           "unreachable_hint"]

#: How much of an error response's body is kept (bytes).
ERROR_BODY_LIMIT = 2048
#: How much of a JSON error body is read to parse it (``HTTPStatusError.payload``); ``body`` keeps the excerpt.
ERROR_JSON_LIMIT = 64 * 1024
def media_type(value: str | None) -> str:
    return (value or "").split(";", 1)[0].strip().lower()


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        # delay-seconds are ASCII digits ("²" and "٣" are digits to Python); a number too long for a float is
        # no delay anyone meant
        return float(value) if value.isascii() and len(value) <= 300 else None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


def _is_json_media(media: str) -> bool:
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


def _excerpt_limit(response: httpx.Response) -> int:
    # (a JSON error body is read further than the excerpt kept, so a long validation report parses)
    return ERROR_JSON_LIMIT if _is_json_media(media_type(response.headers.get("content-type"))) else ERROR_BODY_LIMIT


#: Byte order marks, which say the charset whatever the ``Content-Type`` names (as browsers read them);
#: UTF-32's before UTF-16's, which starts it.
_MARKS = ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"),
          (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))


def read_excerpt(excerpt: bytes, charset: str | None) -> tuple[str, str]:
    """An excerpt of the agent's answer as text, and the codec it was read with: the charset its byte order
    mark says, else the ``charset`` the answer's ``Content-Type`` names when Python reads it as text, else
    UTF-8.

    Read as the agent said it was written, a UTF-16, UTF-32 or EBCDIC page reads as text (read as
    UTF-8, a NUL stood between its letters). A charset naming no codec, or one that is not text
    (``base64``, ``rot13``: httpx's ``.text`` failed on them with an ``AssertionError``), is read as
    UTF-8. The caller's credentials are taken out of the bytes before (:func:`redacted_excerpt`): an
    agent may write in another charset than it names.
    """
    for mark, name in _MARKS:
        if excerpt.startswith(mark):
            return excerpt.decode(name, "replace"), codecs.lookup(name).name
    if charset:
        try:
            return excerpt.decode(charset, "replace"), codecs.lookup(charset).name
        except (LookupError, ValueError):  # (no such codec, not a text codec, or one that refuses "replace")
            pass
    return excerpt.decode("utf-8", "replace"), "utf-8"


def redacted_excerpt(excerpt: bytes, limit: int, redactor: Redactor,
                     charset: str | None = None) -> tuple[bytes, tuple[str, str], str]:
    """An excerpt of the agent's answer without the caller's credentials: its bytes, the text
    :func:`read_excerpt` reads of them (with its codec), and that text redacted.

    The one place an excerpt is redacted: its bytes first, in every encoding a secret may be written in
    (:class:`~agui_client.core.redact.BytesRedactor`), then the text it reads as; cut off at ``limit``
    bytes when read, it may end with the start of a secret, replaced too.
    """
    cut = len(excerpt) >= limit
    data = BytesRedactor(redactor, charset)(excerpt, cut=cut) if redactor else excerpt
    read = read_excerpt(data, charset)
    return data, read, redactor.text(read[0], cut=cut)


def excerpt_text(excerpt: bytes, limit: int, redactor: Redactor, charset: str | None = None) -> str:
    """An excerpt of the agent's answer as text for a message, its secrets replaced (:func:`redacted_excerpt`)."""
    return redacted_excerpt(excerpt, limit, redactor, charset)[2]


#: Response headers that describe the body as it came off the wire, not the excerpt an error holds.
_WIRE_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding"})


def _shown_headers(items: Iterable[tuple[str, str]], redactor: Redactor, encoding: str) -> list[tuple[bytes, bytes]]:
    # A sensitive header's value is replaced whole; any other value loses the secrets it repeats, and so
    # does every name (an agent may echo a key as a header's name: ``x-sk-live-…: 1``). They go back as
    # bytes in the encoding httpx read them with: an agent may send bytes outside ASCII (latin-1
    # "obs-text", UTF-8), which httpx would refuse to encode again as ASCII.
    return [(redactor.text(name).encode(encoding, "replace"),
             (MARK if is_sensitive(name, redactor.marked) else redactor.text(value)).encode(encoding, "replace"))
            for name, value in items]


def _shown_request(request: httpx.Request, redactor: Redactor) -> httpx.Request:
    """``request`` as an error hands it out (httpx's ``.request``): the same method, body and headers, the
    value of every sensitive header and the URL's secrets replaced, so nothing reached through the error
    repeats a credential."""
    try:
        content = request.content
    except httpx.RequestNotRead:  # (a redirect's request, which httpx streams: its body is the first one's)
        content = b""
    return httpx.Request(request.method, redactor.url(str(request.url)),
                         headers=_shown_headers(request.headers.multi_items(), redactor, request.headers.encoding),
                         content=content)


def _shown_response(response: httpx.Response, excerpt: bytes, read: tuple[str, str], text: str,
                    redactor: Redactor) -> httpx.Response:
    """The answer as an ``HTTPStatusError`` hands it out (httpx's ``.response``): its status, its headers and
    the bounded excerpt of its body, already read, the secrets the agent echoed replaced (``read`` is the
    excerpt as :func:`read_excerpt` read it, ``text`` that text redacted); its ``.request`` is the request
    as :func:`_shown_request` shows it."""
    # (the excerpt's bytes as they came when they were UTF-8 and redacting changed nothing, else the text
    # in UTF-8; its ``.encoding`` says so whatever charset the headers name, so ``.text`` is that text.
    # httpx decoded the body already, so the headers that describe the wire form go)
    content = excerpt if read == (text, "utf-8") else text.encode("utf-8")
    headers = _shown_headers(((name, value) for name, value in response.headers.multi_items()
                              if name.lower() not in _WIRE_HEADERS), redactor, response.headers.encoding)
    shown = httpx.Response(response.status_code, headers=headers, content=content,
                           request=_shown_request(response.request, redactor))
    shown.encoding = "utf-8"
    return shown


def status_error(response: httpx.Response, excerpt: bytes, url: str, redactor: Redactor,
                  not_followed: str, first: httpx.Request) -> HTTPStatusError:
    """The error for the agent's answer ``response`` with an error (or unfollowed redirect) status.

    ``url`` is the agent's URL as shown (``.url``), ``first`` the request the run was sent with: the
    message names the request that got this answer, which after a followed redirect is another one (a
    303's ``GET`` to the URL it named), so that it says what failed rather than what was first sent.
    """
    # Everything here comes from the agent, which may echo the request: it all goes through the
    # request's redactor (whatever the status, not only a 401's), before any of it is cut shorter.
    content_type = response.headers.get("content-type")
    limit = _excerpt_limit(response)
    data, read, whole = redacted_excerpt(excerpt, limit, redactor, response.charset_encoding)
    payload: Any = None
    # (a JSON body is read further than the excerpt kept, so a long validation report still parses)
    if _is_json_media(media_type(content_type)) and len(excerpt) < ERROR_JSON_LIMIT:
        try:
            payload = redactor.json(json.loads(read[0]))
        except (ValueError, RecursionError):  # (not JSON, or nested deeper than the parser (or redactor) goes)
            payload = None
    text = whole[:ERROR_BODY_LIMIT]
    # A 401 is typed, as no retry helps.
    kind = AuthenticationError if response.status_code == 401 else HTTPStatusError
    # (the reason phrase may hold bytes 0x80-0x9f, which HTTP allows and a terminal obeys as C1 controls)
    reason = quoted(visible(redactor.text(response.reason_phrase or "")))
    location = None
    if response.is_redirect:
        target = response.next_request
        location = redactor.url(str(target.url) if target is not None else response.headers["location"])
        reason += f" to {quoted(location)} (not followed: {not_followed})"  # (``.location`` keeps it whole)
    # (one line of the agent's words, made inert: a traceback prints the message; ``.body`` keeps them as sent)
    # (an HTML page, read as its words, is read from the redacted excerpt: the redactor finds a secret
    # spelt in entities too)
    summary = visible(_page_text(text) if media_type(content_type) in _HTML
                      else text.strip().replace("\n", " ")[:200])
    answer = _shown_response(response, data, read, whole, redactor)
    asked = response.request
    # (credentials the client was given are among the redactor's secrets; those an http_client of the
    # caller's adds, its headers or its auth flow, are in the request's headers)
    credentials = bool(redactor.secrets) or any(is_sensitive(name, redactor.marked) for name in first.headers)
    hint = _status_hint(response.status_code, asked is first, sent_credentials=credentials)
    named = url if asked is first else redactor.url(str(asked.url))
    return kind(
        f"HTTP {response.status_code} {reason} from {asked.method} {named}" + (f": {summary}" if summary else "")
        + (f" ({hint})" if hint else ""), hint=hint,
        status_code=response.status_code, body=text, payload=payload,
        retry_after=_retry_after(response.headers.get("retry-after")),
        content_type=redactor.text(content_type) if content_type is not None else None, url=url, location=location,
        request=answer.request, response=answer)


_HTML = frozenset({"text/html", "application/xhtml+xml"})
_UNSHOWN = re.compile(r"<(script|style)\b.*?</\1\s*>|<!--.*?-->", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<[^>]*>")


def _page_text(page: str) -> str:
    """The words of an HTML error page (a web server's or a proxy's 404 or 502), as one line of at most
    200 characters: its markup, scripts and styles left out, its entities read, its blanks collapsed.
    (``page`` is the bounded excerpt, so the patterns run over a few kilobytes at most.)"""
    return " ".join(html.unescape(_TAG.sub(" ", _UNSHOWN.sub(" ", page))).split())[:200]


def _status_hint(status: int, first: bool, *, sent_credentials: bool) -> str | None:
    """What an error status from the agent (``first``: to the request the run was sent with) suggests the
    caller check, for the statuses a first attempt commonly meets, else ``None``."""
    if not first:
        return None
    if status in (404, 405):
        # (the commonest first mistake: the server's address, or a page of it, for the agent's endpoint)
        return "is this the agent's endpoint? AG-UI runs are POSTed to the URL the agent serves them on"
    if status in (401, 403):
        # (whether any were sent is what the two fixes differ by)
        if sent_credentials:
            return "the agent refused the credentials sent: are they right, and meant for this agent?"
        return ("the agent wants credentials and none were sent: send them in a header (headers= on the client, "
                "-H 'NAME: VALUE' on agui's command line)")
    return None


def undecodable(response: httpx.Response, exc: httpx.DecodingError, url: str, redactor: Redactor,
                run_id: str | None) -> TransportError:
    """The error for a body that stopped decoding (``exc``) during run ``run_id``: the run named in the
    message too, as a protocol error found in the same read names it (``.run_id`` is set by the thread)."""
    coding = quoted(response.headers.get("content-encoding", ""))  # ("gzip, identity, identity, …" is read as gzip)
    run = "" if run_id is None else f" to run {quoted_name(run_id)}"
    return about(TransportError(redactor.text(f"the response from {url}{run} could not be decoded ({coding}): {exc}"),
                                 url=url), response.request, redactor)


def certificate_refused(exc: BaseException, url: str) -> TransportError | None:
    """The error for a connection that failed because the agent's TLS certificate was refused (``exc`` is
    httpx's ``ConnectError``, which says only that and OpenSSL's words, or what caused it), else ``None``.

    A certificate no CA the client trusts has signed (a self-signed one, a company's own CA), an expired
    one, one for another name: the message says it is the certificate, with OpenSSL's reason, and how to
    trust the agent's CA. Nothing of the certificate's own is repeated, and the URL is ``url`` as shown.
    """
    seen = next((link for link in exception_chain(exc) if isinstance(link, ssl.SSLCertVerificationError)), None)
    if seen is None:
        return None
    # (OpenSSL's reason is there when ssl's own handshake refused it; an error raised by Python code, as a
    # context verifying through the system's store does, has only its message, which its str() shows as
    # a tuple)
    why = getattr(seen, "verify_message", None) or seen.strerror or " ".join(map(str, seen.args)) \
        or type(seen).__name__
    return TransportError(f"could not reach {url}: its TLS certificate was refused ({quoted(why)}); "
                          "an agent whose certificate no public CA signed is reached with "
                          "http_client=httpx.Client(verify=<an ssl.SSLContext trusting its CA>)", url=url,
                          request_sent=False)


#: OpenSSL's reasons for a handshake answered with something other than TLS: a plain-HTTP server's
#: answer read as a TLS record (the first by OpenSSL 1.1 and 3.0, the others by later versions).
_NOT_TLS = frozenset({"WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "PACKET_LENGTH_TOO_LONG"})


def unreachable_hint(exc: BaseException) -> str | None:
    """What to check when a connection could not be made (``exc`` is httpx's ``ConnectError``), for the
    three causes a URL's typo gives, else ``None``: nothing listens on the port, the host name does not
    resolve, or an https:// URL names a plain-HTTP agent. The operating system's words for each
    (``Connection refused``, ``Name or service not known``, OpenSSL's ``wrong version number``) say what
    failed but not what to change in the URL."""
    for link in exception_chain(exc):
        if isinstance(link, ConnectionRefusedError):
            return "is the agent running, and listening on this host and port?"
        if isinstance(link, socket.gaierror):
            return "the host name does not resolve: is it spelt right?"
        if isinstance(link, ssl.SSLError) and getattr(link, "reason", None) in _NOT_TLS:
            return "the agent answered without TLS: is its URL http://, not https://?"
    return None


def about(error: TransportError, request: httpx.Request, redactor: Redactor) -> TransportError:
    """``error`` with httpx's ``.request`` set: ``request`` as :func:`_shown_request` shows it."""
    error.request = _shown_request(request, redactor)
    return error


_E = TypeVar("_E", bound=BaseException)


def redacted_cause(exc: _E, redactor: Redactor, redact: Callable[[str], str] | None = None) -> _E:
    """httpx's error ``exc`` made fit to be kept as the cause of the client's own: what it and every exception
    in its chain say redacted (by ``redact``, the redactor's by default), and the request each httpx error in
    the chain holds replaced by the request as :func:`_shown_request` shows it. Returns ``exc``.

    The cause's ``.request`` is the request as sent: the URL's userinfo and secret query values, and every
    header, the credential too. The client's error hands out a redacted copy; the cause must not hand out the
    original to whoever walks the chain (an error reporter) or unpickles the error (a worker's parent).
    """
    redact_exception(exc, redact if redact is not None else redactor.text)
    shown: dict[int, httpx.Request] = {}
    for link in exception_chain(exc):
        if isinstance(link, httpx.HTTPError):
            try:
                request = link.request
            except RuntimeError:  # (an httpx error raised without a request)
                continue
            if id(request) not in shown:
                shown[id(request)] = _shown_request(request, redactor)
            link.request = shown[id(request)]
    return exc


class Excerpt:
    """The start of an error's body, as both clients read it: at most its limit (``_excerpt_limit``),
    decoded when it has one gzip or deflate coding, else as it came (a coding not undone is no reason to
    lose the error)."""

    __slots__ = ("_data", "_limit", "_inflater")

    def __init__(self, response: httpx.Response) -> None:
        self._data = bytearray()
        self._limit = _excerpt_limit(response)
        try:
            self._inflater = Inflater.of(response)
        except ProtocolError:
            self._inflater = None

    def add(self, chunk: bytes) -> bool:
        """Take one read of the body; ``True`` once the excerpt holds all it keeps."""
        for piece in (chunk,) if self._inflater is None else self._inflater.feed(chunk):
            self._data += piece
            if len(self._data) >= self._limit:
                return True
        return False

    def end(self) -> None:
        """The body ended: what the decoder still holds."""
        if self._inflater is not None:
            self._data += self._inflater.flush()

    def taken(self) -> bytes:
        return bytes(self._data[:self._limit])
