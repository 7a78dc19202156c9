"""Per-run request headers (``thread.run(headers=...)``): checked before a run claims its thread.

A web backend relaying each of its users' runs to one agent forwards that user's own credential (an
``Authorization``, a tenant header) with the user's runs only. Those headers are checked here, while
the run is planned: a name or value HTTP cannot carry would otherwise fail inside httpx (or h11) once the
thread is claimed and the connection open, with a message quoting the value.

The rules (``RUN-HEADER`` in docs/codes.md):

* the headers are a mapping of ``str`` to ``str``;
* a name is an HTTP token (letters, digits and ``!#$%&'*+-.^_`|~``), given once whatever its case;
* a value is printable ASCII (httpx encodes a ``str`` value as ASCII), with spaces or tabs inside it
  but not at either end (h11 refuses those), and no control character: no CR or LF (a header
  injection), no NUL;
* ``Content-Length`` and ``Transfer-Encoding`` are refused: the body's framing is the client's.

Every refusal is an :class:`~agui_client.errors.InvalidHeader` naming the header, never its value.
Nothing here does I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import NoReturn

from .._inert import quoted_name
from ..errors import InvalidHeader

__all__ = ["RunHeaders", "checked_headers", "layered"]

#: A run's headers once checked: (name, value) pairs, in the order given.
RunHeaders = tuple[tuple[str, str], ...]

# RFC 9110's token, as h11 checks a name.
_TOKEN = re.compile(r"[-!#$%&'*+.^_`|~0-9A-Za-z]+")
# Visible ASCII, with spaces and tabs only between visible characters (h11 refuses them at either end).
_VALUE = re.compile(r"(?:[\x21-\x7e](?:[ \t]*[\x21-\x7e])*)?")
#: Names a run may not set: the request's framing is the client's (a wrong length corrupts the exchange).
FRAMING = frozenset({"content-length", "transfer-encoding"})


def checked_headers(headers: Mapping[str, str] | None) -> RunHeaders:
    """``headers`` as pairs, each name and value checked as the module's docstring says.

    Raises:
        InvalidHeader: a name or value that cannot be sent; the error names the header, never its value.
    """
    if not headers:
        return ()
    if not isinstance(headers, Mapping):
        raise InvalidHeader(f"nothing was sent: headers must be a mapping of names to values, not a "
                            f"{type(headers).__name__}", name="", reason="not a mapping", code="RUN-HEADER")
    pairs: list[tuple[str, str]] = []
    seen: dict[str, str] = {}
    for name, value in headers.items():
        if not isinstance(name, str):
            _refuse(type(name).__name__, f"the name is a {type(name).__name__}, not a str")
        if _TOKEN.fullmatch(name) is None:
            _refuse(name, "the name is not an HTTP token (letters, digits and !#$%&'*+-.^_`|~ only: no space, "
                          "colon, line break or other character)")
        lowered = name.lower()
        if lowered in FRAMING:
            _refuse(name, "the request's framing is the client's (it sets the body's length itself)")
        if lowered in seen:
            _refuse(name, f"the header is given twice (as {quoted_name(seen[lowered])} too); names are "
                          "case-insensitive")
        seen[lowered] = name
        if not isinstance(value, str):
            _refuse(name, f"the value is a {type(value).__name__}, not a str")
        if _VALUE.fullmatch(value) is None:
            _refuse(name, _what_is_wrong(value))
        pairs.append((name, value))
    return tuple(pairs)


def layered(under: RunHeaders, over: Mapping[str, str] | None) -> dict[str, str]:
    """``under`` with ``over``'s headers in place of the same-named ones (names compared case-insensitively)."""
    if not over:
        return dict(under)
    replaced = {name.lower() for name in over}
    return {**{name: value for name, value in under if name.lower() not in replaced}, **over}


def _what_is_wrong(value: str) -> str:
    # (said without the value: which kind of character, never which characters)
    if "\r" in value or "\n" in value:
        return "the value holds a line break (CR or LF), which would end the header (a header injection)"
    if "\x00" in value:
        return "the value holds a NUL character"
    if any(ord(char) > 0x7f for char in value):
        return "the value holds a character that is not ASCII (encode it first: percent-encoding, base64 …)"
    if value != value.strip(" \t"):
        return "the value starts or ends with a space or a tab, which HTTP does not keep"
    return "the value holds a control character"


def _refuse(name: str, reason: str) -> NoReturn:
    shown = _shown_name(name)
    raise InvalidHeader(f"nothing was sent: the header {quoted_name(shown)} cannot be sent: {reason}", name=shown,
                        reason=reason, code="RUN-HEADER")


def _shown_name(name: str) -> str:
    """The name to say in a refusal. One that is no HTTP token may be a whole header line given as a name
    (``"Authorization: Bearer ..."``), its credential with it: only what comes before its first blank or
    colon is said, with the length of the whole."""
    if _TOKEN.fullmatch(name) is not None:
        return name
    head = re.split(r"[\s:]", name, maxsplit=1)[0]
    return name if head == name else f"{head}... ({len(name)} characters)"
