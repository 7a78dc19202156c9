"""An agent's answer that is not a run, in the charset its ``Content-Type`` names (the sixteenth round's audit).

The redactor looks for the caller's credentials in the text of what the agent answered; that text was
read as UTF-8 whatever charset the answer named, so a page in UTF-16, UTF-32 or EBCDIC that echoed the
``Authorization`` header kept the token out of the redactor's sight, and the ``.response`` an
``HTTPStatusError`` hands out decoded it whole (httpx reads the charset). Each test answers from a real
server on 127.0.0.1, through both shells.
"""

from __future__ import annotations

import base64
import codecs
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

import agui_client as ag
from agui_client.testing import RecordingTransport

TOKEN = "sk-live-9c8b7a6d5e4f"
HEADERS = {"Authorization": f"Bearer {TOKEN}"}
ECHO = {"detail": f"bad token {TOKEN}"}


def _answer(status: int, content_type: str, body: bytes, piece: int | None = None) -> Any:
    """An ASGI agent answering every request with ``status``, ``content_type`` and ``body`` (in pieces of
    ``piece`` bytes when given, so that a token is cut across several reads)."""
    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", content_type.encode())]})
        if piece is None:
            await send({"type": "http.response.body", "body": body})
            return
        for at in range(0, len(body), piece):
            await send({"type": "http.response.body", "body": body[at:at + piece], "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})
    return app


def _refused_while_recording(tmp_path: Path, url: str, headers: dict[str, str] = HEADERS) -> ag.AuthenticationError:
    """The error of a run sent to ``url`` (an agent answering 401) through a recording into ``tmp_path``."""
    with httpx.Client(transport=RecordingTransport(tmp_path)) as http, \
            ag.AgentClient(url, http_client=http, headers=headers, telemetry=False) as client:
        with pytest.raises(ag.AuthenticationError) as caught:
            client.thread().run("hi")
    return caught.value


def _seen(error: BaseException) -> str:
    """Everything the error hands out as text, as a log line or a traceback would show it."""
    parts = [str(error), repr(error.args)]
    for name in ("body", "payload", "content_type"):
        parts.append(repr(getattr(error, name, None)))
    response = getattr(error, "response", None)
    if response is not None:
        parts += [response.text, repr(response.content)]
    return "\n".join(parts)


@pytest.mark.parametrize("charset", ["utf-16", "utf-32", "utf-16-be", "cp500"])
def test_an_error_body_in_the_charset_it_names_is_redacted_in_that_charset(drive: Any, served: Any,
                                                                          charset: str) -> None:
    endpoint = served(_answer(401, f"application/json; charset={charset}", json.dumps(ECHO).encode(charset)))
    with drive.client(endpoint.url, headers=HEADERS, telemetry=False) as client:
        with pytest.raises(ag.AuthenticationError) as caught:
            client.thread().run("hi")

    error = caught.value
    shown = _seen(error)
    assert TOKEN not in shown and TOKEN.encode(charset) not in shown.encode(charset, "replace")
    assert "s\\x00k" not in shown and "\\x00s\\x00k" not in shown  # (nor the token a NUL between letters)
    assert error.payload == {"detail": "bad token [redacted]"}
    assert error.body == '{"detail": "bad token [redacted]"}' == error.response.text
    assert error.response.encoding == "utf-8"  # (.content is the text in UTF-8, whatever the headers name)


@pytest.mark.parametrize(("content_type", "rule"), [("text/html", "TR-04"), ("application/json", "TR-09")])
def test_a_200_page_in_the_charset_it_names_is_quoted_redacted(drive: Any, served: Any, content_type: str,
                                                               rule: str) -> None:
    endpoint = served(_answer(200, f"{content_type}; charset=utf-16", json.dumps(ECHO).encode("utf-16")))
    with drive.client(endpoint.url, headers=HEADERS, telemetry=False) as client:
        with pytest.raises(ag.ProtocolError) as caught:
            client.thread().run("hi")

    assert caught.value.rule == rule
    assert "bad token [redacted]" in str(caught.value) and "\\x00" not in str(caught.value)


@pytest.mark.parametrize("charset", ["base64", "rot13", "hex", "idna", "undefined", "no-such-codec"])
def test_a_charset_that_is_no_text_codec_is_read_as_utf8(drive: Any, served: Any, charset: str) -> None:
    # httpx's .text of the response handed out raised AssertionError (base64, hex), TypeError (rot13) or
    # UnicodeError (idna, undefined): a caller logging it met an error of its own instead of the agent's words.
    body = b'{"detail":"quota exceeded \xc3\xa9"}'
    endpoint = served(_answer(429, f"application/json; charset={charset}", body))
    with drive.client(endpoint.url, telemetry=False) as client:
        with pytest.raises(ag.HTTPStatusError) as caught:
            client.thread().run("hi")

    error = caught.value
    assert error.response.text == body.decode() == error.body
    assert error.payload == {"detail": "quota exceeded é"}


@pytest.mark.parametrize("charset", ["utf-16", "utf-16-be", "utf-32", "cp500"])
def test_a_recording_keeps_no_credential_echoed_in_the_charset_the_answer_names(
        tmp_path: Path, served: Any, charset: str) -> None:
    # The recording scrubs the body's bytes read as latin-1, which finds an ASCII token in UTF-8 and
    # latin-1 alike; in UTF-16 (s\x00k\x00…), UTF-32 or EBCDIC it was written to NN.sse as it came.
    body = json.dumps(ECHO).encode(charset)
    endpoint = served(_answer(401, f"application/json; charset={charset}", body, piece=7))

    _refused_while_recording(tmp_path, endpoint.url)

    recorded = (tmp_path / "01.sse").read_bytes()
    written = b"".join(path.read_bytes() for path in tmp_path.iterdir())
    for coding in ("utf-8", "utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be", "cp500"):
        assert TOKEN.encode(coding) not in written, coding
    assert recorded.decode(charset) == '{"detail": "bad token [redacted]"}'  # (and still reads in its charset)


@pytest.mark.parametrize("charset", ["utf-7", "hz"])
def test_a_recording_keeps_no_credential_a_charset_writes_mostly_as_ascii(tmp_path: Path, served: Any,
                                                                        charset: str) -> None:
    # UTF-7 writes ASCII as it is but for a few characters (a token's "+" as "+-", "~" as "+AH4-"),
    # HZ "~" as "~~": judged by "-" alone, such a charset was taken to write the token as its bytes,
    # and the echoed token was written to NN.sse as it came.
    token = "sk-live+A1b2/C3d4~e5"
    body = json.dumps({"detail": f"bad token {token}"}).encode(charset)
    assert token.encode() not in body  # (the byte scrub alone cannot find it)
    endpoint = served(_answer(401, f"application/json; charset={charset}", body))

    _refused_while_recording(tmp_path, endpoint.url, {"Authorization": f"Bearer {token}"})

    recorded = (tmp_path / "01.sse").read_bytes()
    assert recorded.decode(charset) == '{"detail": "bad token [redacted]"}'
    assert token.encode(charset) not in b"".join(path.read_bytes() for path in tmp_path.iterdir())


# The eighteenth round: what the answer names is not what the redactor trusts. Each body is the ECHO
# page written in one encoding under a Content-Type naming another (or none); with or without a BOM.
_MISNAMED = [
    ("utf-16-le", "application/json; charset=utf-8", False),
    ("utf-16-be", "application/json", False),
    ("utf-16", "application/json", True),  # (Python writes the BOM)
    ("utf-32-le", "text/plain; charset=latin-1", False),
    ("utf-32", "application/json", True),
    ("utf-8", "application/json; charset=cp500", False),
    ("utf-8", "application/json; charset=utf-16", False),
    # (each byte order mark, read before the charset named: UTF-32's before UTF-16's, which starts it)
    ("utf-16-be+bom", "application/json", True),
    ("utf-32-be+bom", "application/json", True),
    ("utf-8+bom", "application/json; charset=latin-1", True),
]

#: The byte order marks, by the encoding they start.
_BOMS = {"utf-8": codecs.BOM_UTF8, "utf-16-be": codecs.BOM_UTF16_BE, "utf-32-be": codecs.BOM_UTF32_BE}


def _page(coding: str) -> tuple[str, bytes]:
    """The ECHO page in ``coding`` (``utf-8+bom``: with the byte order mark put before it), and the codec
    that reads it back."""
    coding, marked, _ = coding.partition("+bom")
    return coding, (_BOMS[coding] if marked else b"") + json.dumps(ECHO).encode(coding)


_CODINGS = ("utf-8", "utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be", "cp500", "latin-1")


def _written_everywhere(data: bytes) -> list[str]:
    """The encodings in which ``data`` holds TOKEN."""
    return [c for c in _CODINGS if TOKEN.encode(c) in data]


def _recoverable(text: str) -> list[tuple[str, str]]:
    """How TOKEN is got back from ``text`` (a page read in the wrong charset): the codec that turns the
    text back into the page's bytes, and the encoding those bytes hold the token in."""
    return [(back, c) for back in _CODINGS for c in _written_everywhere(text.encode(back, "replace"))]


@pytest.mark.parametrize(("coding", "content_type", "bom"), _MISNAMED)
def test_an_error_body_in_another_charset_than_it_names_is_redacted(drive: Any, served: Any, coding: str,
                                                                    content_type: str, bom: bool) -> None:
    # Read only as named (or as UTF-8 when naming none), the token stood in .body, str() and
    # .response.content a NUL between letters, or as cp500 mojibake.
    coding, body = _page(coding)
    assert body.startswith((b"\xff\xfe", b"\xfe\xff", codecs.BOM_UTF8, codecs.BOM_UTF32_BE)) == bom
    endpoint = served(_answer(401, content_type, body))
    with drive.client(endpoint.url, headers=HEADERS, telemetry=False) as client:
        with pytest.raises(ag.AuthenticationError) as caught:
            client.thread().run("hi")

    error = caught.value
    shown = _seen(error)
    assert TOKEN not in shown and not _recoverable(shown)
    assert not _written_everywhere(error.response.content)
    assert "s\\x00k" not in shown and "\\x00s\\x00k" not in shown
    if bom:  # (a byte order mark says the charset whatever the header names: the page reads as text)
        assert error.body == '{"detail": "bad token [redacted]"}' == error.response.text


@pytest.mark.parametrize("coding", ["utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"])
def test_a_token_ending_a_wide_page_that_names_no_charset_is_redacted(drive: Any, served: Any, coding: str) -> None:
    # The last character of the page: no byte of a next one follows it, so a form of the token in the
    # other byte order, found a byte along in a page of this one, does not reach past its end.
    endpoint = served(_answer(401, "text/plain", f"bad token {TOKEN}".encode(coding)))
    with drive.client(endpoint.url, headers=HEADERS, telemetry=False) as client:
        with pytest.raises(ag.AuthenticationError) as caught:
            client.thread().run("hi")

    shown = _seen(caught.value)
    assert not _recoverable(shown) and not _written_everywhere(caught.value.response.content)


@pytest.mark.parametrize("echo", [
    "".join(f"\\u{ord(c):04X}" for c in TOKEN),  # (JSON: every character escaped, upper-case hex)
    base64.b64encode(f"authorization: Bearer {TOKEN}".encode()).decode(),  # (inside a longer base64 text)
    base64.urlsafe_b64encode(b"x" + TOKEN.encode()).decode(),
])
def test_an_error_body_echoing_the_token_escaped_or_in_base64_is_redacted(drive: Any, served: Any,
                                                                         echo: str) -> None:
    endpoint = served(_answer(403, "application/json", f'{{"detail": "{echo}"}}'.encode()))
    with drive.client(endpoint.url, headers=HEADERS, telemetry=False) as client:
        with pytest.raises(ag.HTTPStatusError) as caught:
            client.thread().run("hi")

    shown = _seen(caught.value)
    assert "[redacted]" in caught.value.body and TOKEN not in shown
    for form in ("".join(f"\\u{ord(c):04X}" for c in TOKEN), base64.b64encode(TOKEN.encode()).decode()[:-4],
                 base64.b64encode(b"x" + TOKEN.encode()).decode()[4:-4]):
        assert form not in shown


@pytest.mark.parametrize("coding", ["utf-16-le", "utf-16-be"])
def test_a_secret_past_latin1_echoed_in_a_wide_page_with_no_ascii_is_redacted(drive: Any, served: Any,
                                                                              coding: str) -> None:
    # UTF-16 writes a letter past U+00FF with no NUL byte: a page wholly in such letters holds none, and
    # the forms of a secret in them were skipped in it, as if only an ASCII secret could be written wide
    # (the page's bytes kept the token, and .body the same bytes read as UTF-8).
    key = "\u043f\u0430\u0440\u043e\u043b\u044c" * 2  # (a Cyrillic query value, sent percent-encoded)
    page = f"\u043a\u043b\u044e\u0447{key}\u043e\u0442\u043a\u0430\u0437".encode(coding)
    assert b"\x00" not in page
    endpoint = served(_answer(403, "text/plain", page))
    with drive.client(f"{endpoint.url}?token={key}", telemetry=False) as client:
        with pytest.raises(ag.HTTPStatusError) as caught:
            client.thread().run("hi")

    content, body = caught.value.response.content, caught.value.body
    assert key.encode(coding) not in content and key.encode(coding) not in body.encode("utf-8", "surrogatepass")
    assert any("[redacted]".encode(wide) in content for wide in ("utf-16-le", "utf-16-be"))


#: A token whose base64 holds the letters the two alphabets write apart (``+`` and ``/``, ``-`` and ``_``).
_PUNCTUATED = "sk-live-???~~~>>>-9c8b"


@pytest.mark.parametrize(("prefix", "encode"), [(b"xy", base64.b64encode), (b"", base64.urlsafe_b64encode),
                                                (b"xy", base64.urlsafe_b64encode)])
def test_a_token_echoed_in_base64_at_each_alignment_and_in_each_alphabet_is_redacted(
    drive: Any, served: Any, prefix: bytes, encode: Any
) -> None:
    # Base64 writes a token's bytes as letters of their own only by where they start, modulo 3 (two
    # bytes before it here); the URL-safe alphabet writes ``-`` and ``_`` where the standard one writes
    # ``+`` and ``/``.
    echo = encode(prefix + _PUNCTUATED.encode()).decode()
    endpoint = served(_answer(403, "text/plain", f"you sent {echo}".encode()))
    with drive.client(endpoint.url, headers={"Authorization": f"Bearer {_PUNCTUATED}"}, telemetry=False) as client:
        with pytest.raises(ag.HTTPStatusError) as caught:
            client.thread().run("hi")

    own = echo[len(prefix) * 4 // 3 + 1:-4]  # (letters decided by the token's bytes alone)
    assert "[redacted]" in caught.value.body and own not in _seen(caught.value)


_ESCAPED_UPPER = "".join(f"\\u{ord(c):04X}" for c in TOKEN)  # (JSON: every character escaped, upper-case hex)


@pytest.mark.parametrize(("echo", "charset"), [
    (TOKEN.upper(), "cp500"),  # (folded, in EBCDIC: bytes no search of ASCII finds)
    (TOKEN.title(), "utf-16"),
    (TOKEN.swapcase(), "utf-32"),
    (_ESCAPED_UPPER, "utf-16"),
])
def test_a_recording_keeps_no_credential_in_another_case_and_still_reads(tmp_path: Path, served: Any, echo: str,
                                                                         charset: str) -> None:
    # A secret of 8 characters or more is replaced in any case. In the bytes of an EBCDIC page, or a
    # UTF-16 page holding JSON escapes, it was looked for in its own case only, and written to NN.sse as
    # it came; in UTF-16 and UTF-32 it was found, but replaced by a mark one byte a character, so the
    # rest of the page read as CJK.
    body = f"bad token {echo} (refused)".encode(charset)
    endpoint = served(_answer(401, f"text/plain; charset={charset}", body, piece=5))

    error = _refused_while_recording(tmp_path, endpoint.url)

    assert error.body == "bad token [redacted] (refused)"
    assert (tmp_path / "01.sse").read_bytes().decode(charset) == "bad token [redacted] (refused)"


@pytest.mark.parametrize(("coding", "content_type", "bom"), _MISNAMED)
def test_a_recording_keeps_no_credential_in_another_charset_than_the_answer_names(
        tmp_path: Path, served: Any, coding: str, content_type: str, bom: bool) -> None:
    coding, body = _page(coding)
    endpoint = served(_answer(401, content_type, body, piece=5))

    _refused_while_recording(tmp_path, endpoint.url)

    written = b"".join(path.read_bytes() for path in tmp_path.iterdir())
    assert not _written_everywhere(written)
    # (the mark is written as the encoding that wrote the token writes it: the page still reads)
    assert (tmp_path / "01.sse").read_bytes().removeprefix(_BOMS.get(coding, b"") if bom else b"").decode(
        coding) == '{"detail": "bad token [redacted]"}'


@pytest.mark.parametrize(("content_type", "rule"), [("text/html; charset=utf-8", "TR-04"),
                                                    ("application/json", "TR-09")])
def test_a_200_page_in_another_charset_than_it_names_is_quoted_redacted(drive: Any, served: Any, content_type: str,
                                                                      rule: str) -> None:
    endpoint = served(_answer(200, content_type, json.dumps(ECHO).encode("utf-16-le")))
    with drive.client(endpoint.url, headers=HEADERS, telemetry=False) as client:
        with pytest.raises(ag.ProtocolError) as caught:
            client.thread().run("hi")

    assert caught.value.rule == rule
    assert "s\\x00k\\x00" not in str(caught.value) and "[\\x00r\\x00e\\x00d" in str(caught.value)
