"""How a secret's characters may be written escaped, and escapes read back: the pieces of
:mod:`agui_client.core.redact`'s pattern and of its cheaper search for an escaped secret.

A character may stand as itself or as percent-encoding, JSON, a Python ``repr`` or HTML write it, nested
(:func:`character`, the widest of them :func:`written_width`); a text's escapes are read back one at a
time (:data:`ESCAPE`, :func:`unescape`) before the pattern is run on it. What is a secret, and where it is
looked for, is the redactor's; this module knows only how one is spelled, so a new escape changes it alone.
"""

from __future__ import annotations

import functools
import html
import re
from collections.abc import Iterable

__all__ = ["ENCODED_BACKSLASHES", "ESCAPE", "UTF8", "character", "halves", "runs", "unescape", "utf8_character",
           "written_width"]

#: One escape of those ``character`` finds (a character's percent-encoded bytes one at a time): a text
#: holding one is searched for a secret with its escapes read, before the slower pattern is run on it.
ESCAPE = re.compile(r"\\+(?:u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|x([0-9a-fA-F]{2})|(.))"
                    r"|%(?:25)*([0-9a-fA-F]{2})"
                    r"|&#(?:[xX]0*([0-9a-fA-F]{1,8})|0*([0-9]{1,9}));|&(amp|lt|gt|quot|apos);",
                    re.DOTALL)
#: A character's UTF-8 bytes read one a character (as a percent-encoding is read, or a text that read
#: UTF-8 as latin-1 holds them).
UTF8 = re.compile("[\xc2-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}|[\xf0-\xf4][\x80-\xbf]{3}")

#: What an escape may be written with, besides the character it stands for: backslashes, the letters
#: after one (``\\u``, ``\\x``, ``\\n`` …), percent signs, HTML's ``&#…;`` and names, and hex digits.
_ESCAPE_CHARACTERS = frozenset(b"\\%&#;xXuUnrtbf0123456789abcdefABCDEFamplgtquotapos")


def runs(needles: Iterable[str]) -> tuple[tuple[bytes, bytes], ...]:
    """For each needle holding no other (finding it finds that one), a table marking, in a text's UTF-8
    bytes, those a written form of it may be made of, and the run of marks such a form makes at least.

    A form is the needle's characters, each as itself (in either case) or escaped, so its bytes are all
    of these; it is no shorter than the needle, as each character is written with one byte at least
    and lowering a character never gives more characters than its UTF-8 bytes. Every byte past ASCII is
    marked (a character that lowers to a needle's, ``K`` for ``k``, is one)."""
    needles = set(needles)
    kept = [n for n in needles if not any(other in n for other in needles if other != n)]
    tables: dict[bytes, int] = {}
    for needle in kept:
        allowed = set(_ESCAPE_CHARACTERS) | set(range(128, 256))
        allowed |= {ord(c) for char in needle for c in (char, char.upper(), char.lower()) if ord(c) < 128}
        table = bytes(1 if byte in allowed else 0 for byte in range(256))
        tables[table] = min(tables.get(table, len(needle)), len(needle))
    return tuple((table, b"\x01" * size) for table, size in tables.items())


def halves(text: str) -> str:
    """``text`` with each character past U+FFFF written as the two halves of its surrogate pair."""
    units = text.encode("utf-16-le", "surrogatepass")
    return "".join(chr(int.from_bytes(units[i:i + 2], "little")) for i in range(0, len(units), 2))


def utf8_character(found: re.Match[str]) -> str:
    """The character the UTF-8 bytes ``UTF8`` found write (the bytes as they are if they write none)."""
    return _utf8_read(found[0])


@functools.lru_cache(maxsize=1024)
def _utf8_read(data: str) -> str:
    # (remembered: a text has the same few characters past ASCII again and again)
    try:
        return data.encode("latin-1").decode("utf-8")
    except UnicodeDecodeError:  # (an overlong form or a surrogate's bytes: no character)
        return data


def unescape(found: re.Match[str]) -> str:
    """The character one escape ``ESCAPE`` found stands for (a percent-encoded byte as one character)."""
    escape = found[0]
    # (a text that has escapes has many, and the same few again and again: ``\n``, ``&amp;``, ``%20``;
    # reading each anew cost a recording ten times what it cost before escapes were read at all. Only a
    # short one is remembered: a run of a million backslashes is one escape too)
    return _unescaped(escape) if len(escape) <= _REMEMBERED else _read_escape(found)


#: The longest escape whose reading is remembered (a surrogate half's ``\\uHHHH`` quoted twice fits).
_REMEMBERED = 16


@functools.lru_cache(maxsize=1024)
def _unescaped(escape: str) -> str:
    found = ESCAPE.fullmatch(escape)
    assert found is not None  # (what ESCAPE found, alone)
    return _read_escape(found)


def _read_escape(found: re.Match[str]) -> str:
    code = next((int(digits, 16) for digits in found.group(1, 2, 3, 5, 6) if digits), None)
    if code is None and found[7]:
        code = int(found[7])
    if code is not None:
        return chr(code) if code <= 0x10FFFF else "\ufffd"
    if found[8]:
        return html.unescape(f"&{found[8]};")
    return _CONTROL_CHARACTERS.get(found[4], found[4])


#: A piece of a pattern and the most characters it matches: the pattern a secret is looked for with is
#: built from these, so what a stream must hold back (:attr:`Redactor.longest`) is read off the very
#: pattern, never restated beside it.
_Piece = tuple[str, int]


def _literal(text: str) -> _Piece:
    return re.escape(text), len(text)


def _either(*pieces: _Piece) -> _Piece:
    return "(?:" + "|".join(pattern for pattern, _width in pieces) + ")", max(width for _pattern, width in pieces)


def _then(*pieces: _Piece) -> _Piece:
    return "".join(pattern for pattern, _width in pieces), sum(width for _pattern, width in pieces)


def _times(piece: _Piece, least: int, most: int) -> _Piece:
    return f"(?:{piece[0]}){{{least},{most}}}", piece[1] * most


def _any_case(piece: _Piece) -> _Piece:
    return f"(?i:{piece[0]})", piece[1]


#: How many times a percent-encoded byte may be encoded again (``%41``, ``%2541``, ``%252541`` ...).
_REENCODED = 4
#: The backslashes before an escape: JSON quoted in JSON up to four times writes 1, 3, 7 or 15 of them
#: (bounded, so that a run of a million backslashes an agent sends is searched in linear time, not
#: quadratic); or, JSON put in a URL, once or twice, its 1 or 3 backslashes percent-encoded, once or twice.
ENCODED_BACKSLASHES = ("%5c", "%255c")
_BACKSLASHES = _either(_times(_literal("\\"), 1, 16), _times(_either(*map(_literal, ENCODED_BACKSLASHES)), 1, 3))
#: The names HTML gives the characters it must escape.
_HTML_NAMES = {"&": "amp", "<": "lt", ">": "gt", '"': "quot", "'": "apos"}
#: The letters JSON and Python write a control character's escape with.
_CONTROL_LETTERS = {"\n": "n", "\r": "r", "\t": "t", "\b": "b", "\f": "f"}
#: The control characters those letters stand for after a backslash.
_CONTROL_CHARACTERS = {letter: char for char, letter in _CONTROL_LETTERS.items()}


def _percent(byte: int) -> _Piece:
    """A byte percent-encoded, and encoded again up to ``_REENCODED`` times."""
    return _then(_literal("%"), _times(_literal("25"), 0, _REENCODED), _literal(f"{byte:02x}"))


@functools.lru_cache(maxsize=4096)
def _spelled(char: str) -> _Piece:
    """``char`` as a text quoting a secret may write it: as itself, or escaped as percent-encoding (each
    UTF-8 byte), JSON or a Python ``repr`` (a backslash before it, ``\\n``, ``\\xHH``, ``\\uHHHH``, a
    surrogate pair, ``\\UHHHHHHHH``) or HTML (``&#N;``, ``&#xH;``, its name) write it. Escapes nest: text
    quoted again doubles a backslash (and adds one), and percent-encodes a percent sign (``%2541``), up
    to ``_BACKSLASHES`` and ``_REENCODED`` allow; JSON in a URL percent-encodes a backslash (``%5Cu00e9``)
    and the character after one (``%5C%22``). A character past ASCII may also stand as its UTF-8 bytes,
    each as itself (a text that read UTF-8 one byte a character) or percent-encoded, mixed: a writer
    that escapes some characters and not others. Their hex digits come in either case."""
    code = ord(char)
    data = char.encode("utf-8", "surrogatepass")
    percent = _then(*map(_percent, data))
    after: list[_Piece] = [_literal(f"u{code:04x}") if code < 0x10000 else _then(
        _literal(f"u{0xD800 + ((code - 0x10000) >> 10):04x}"), _BACKSLASHES,
        _literal(f"u{0xDC00 + ((code - 0x10000) & 0x3FF):04x}"))]
    after.append(_literal(f"U{code:08x}"))
    if code < 0x100:
        after.append(_literal(f"x{code:02x}"))
    if char in _CONTROL_LETTERS:
        after.append(_literal(_CONTROL_LETTERS[char]))
    if not char.isalnum():  # (``\"``, ``\/``, ``\\``; a letter after a backslash is an escape of its own)
        after.append(_literal(char))
        if len(data) == 1:  # (``%5C%22``: JSON's ``\"`` in a URL)
            after.append(percent)
    escapes = [_then(_BACKSLASHES, _either(*after)),
               _then(_literal("&#"), _times(_literal("0"), 0, 8), _literal(f"{code};")),
               _then(_literal("&#x"), _times(_literal("0"), 0, 8), _literal(f"{code:x};"))]
    if char in _HTML_NAMES:
        escapes.append(_literal(f"&{_HTML_NAMES[char]};"))
    if char == " ":
        escapes.append(_literal("+"))  # (a form's space, as ``quote_plus`` writes it)
    if len(data) == 1:
        escapes.append(percent)
    written = [_literal(char), _any_case(_either(*escapes))]
    if len(data) > 1:  # (each byte as itself or percent-encoded: the form of every byte percent-encoded too)
        written.append(_then(*(_either(_literal(chr(byte)), _any_case(_percent(byte))) for byte in data)))
    return _either(*written)


def character(char: str) -> str:
    """The pattern of ``char`` as a text may write it (:func:`_spelled`)."""
    return _spelled(char)[0]


def written_width(secret: str) -> int:
    """The most characters a written form of ``secret`` its pattern finds may take."""
    return sum(_spelled(char)[1] for char in secret)
