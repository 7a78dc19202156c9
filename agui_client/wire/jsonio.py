"""JSON text in and out, hardened against what a hostile server (or a damaged record) can send.

Everything that reads or writes JSON in the package goes through here, so the defences live once:

* :func:`parse_json` refuses what JSON does not allow and what would hurt the process: nesting deeper
  than a limit, ``NaN``/``Infinity``, numbers that overflow to infinity, integers too long for
  Python, invalid UTF-8, a byte order mark, and a duplicated key in an event object. orjson reads
  the common case when it is installed; a cheap *proof* (orjson writes the text back byte for byte,
  or the colons equal the keys of a flat object) shows the strict checks cannot find anything, so
  they run only on what the proof cannot vouch for. Integers beyond 64 bits, which orjson reads as
  inexact floats, go to the standard library's parser, which reads them exactly.
* :func:`parse_batch` does the same for many small payloads at once. Its proofs are this module's
  for every reader of JSON text: :func:`proved_exact` (the strict proof that orjson read a text
  exactly), :func:`read_inexactly` and :func:`first_duplicate`, which the stored records' reader
  (:mod:`~agui_client.wire.records`) and the slice-by-slice reader of a large object's array
  (:mod:`~agui_client.wire.slices`) build on.
* :func:`dump_json` writes exactly: lone UTF-16 halves are written as their escapes, ``NaN`` and
  non-JSON Python values are refused.
* :func:`json_problem` says whether a Python value is JSON at all, and where it is not (the
  values' other questions and their copies are :mod:`~agui_client.wire.values`').

Errors are :class:`~agui_client.errors.DecodeError` / :class:`~agui_client.errors.LimitExceeded`
naming the rule ``NOT_AN_EVENT`` (the payload is not one acceptable JSON object).
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Iterator
from typing import Any

from .._inert import QUOTED_CHARS, quoted
from ..errors import AguiWarning, DecodeError, LimitExceeded
from .depth import nests_deeper, opening_brackets
from .values import CONTAINS_ITSELF, ORJSON, WALKED_UNMARKED, costly_refused, shown_key, written_past
from .writeback import SLICED_DEPTH, WRITE_WHOLE, dense, write_sliced

# (bound here as well: the parsers read it on every call, and a test sets it to None to take the
# standard library's path, which the record and slice readers take too: see orjson_in_use)
_orjson: Any = ORJSON


def orjson_in_use() -> Any:
    """orjson as the JSON readers and writers use it, or ``None`` for the standard library's path.

    Read at call time from this module's binding, by :mod:`~agui_client.wire.records` and
    :mod:`~agui_client.wire.slices` as by the parsers here: a test (and the benchmark's stdlib case)
    sets that one binding to ``None``, and every reader then takes the standard library's path.
    """
    return _orjson


__all__ = [
    "HAVE_ORJSON",
    "DEFAULT_MAX_DEPTH",
    "MAX_SAFE_INT",
    "NOT_AN_EVENT",
    "parse_json",
    "parse_batch",
    "read_refused",
    "leading_type",
    "orjson_in_use",
    "ORJSON_WRITE_DEPTH",
    "SHALLOW_WRITE",
    "shallow_orjson",
    "stdlib_text",
    "proved_exact",
    "read_inexactly",
    "first_duplicate",
    "dump_json",
    "json_problem",
    "escape",
    "excerpt",
    "type_of",
]

#: Default limit on JSON nesting (objects and arrays) in one payload.
DEFAULT_MAX_DEPTH = 512
#: The largest integer the schema allows in a field (timestamps, token counts): 2^53 - 1.
MAX_SAFE_INT = 2**53 - 1
#: The rule a payload that is not one acceptable JSON object breaks (TR-09; the validator's AGUI502).
NOT_AN_EVENT = "TR-09/AGUI502"
_DATA_EXCERPT = 200
#: Whether orjson is installed (the faster parser and writer; everything works without it).
HAVE_ORJSON = _orjson is not None


# orjson refuses numbers that overflow a double, but silently reads an integer of 20+ digits as an
# inexact float; such a payload goes to the stdlib parser, which reads integers exactly. The check is
# a C-speed scan: digits become "0", everything else " ", and a run of twenty "0" is searched for.
_INFINITIES = (float("inf"), float("-inf"))
_DIGITS_ONLY = bytes(48 if 48 <= i <= 57 else 32 for i in range(256))
# 19: orjson reads a negative integer below -2**63 (19 digits, -9223372036854775809) as a float too.
_LONG_DIGIT_RUN = b"0" * 19


class _Overflow(ValueError):
    """A number in the text overflows a double (raised by the stdlib parser's ``parse_float``)."""


def _finite_float(text: str) -> float:
    number = float(text)
    if number in _INFINITIES:
        raise _Overflow(text)
    return number


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _pairs_kept(pairs: list[tuple[str, Any]]) -> list[tuple[str, Any]] | None:
    """An object as :func:`first_duplicate` reads it: its pairs, or ``None`` when nothing in it can
    repeat a key (its names distinct, no kept object or non-empty array among its values)."""
    if len(pairs) == len({name for name, _ in pairs}) and not any(type(item) is list and item for _, item in pairs):
        return None
    return pairs


_plain_decoder = json.JSONDecoder(parse_constant=_reject_constant)
_finite_decoder = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float)
# Objects become their pair count (duplicates included): the top-level result is the number of keys
# the text gives the top-level object. ``_pairs_kept`` keeps the pairs themselves, where they matter.
_pair_count_decoder = json.JSONDecoder(parse_constant=_reject_constant, object_pairs_hook=len)
_pair_list_decoder = json.JSONDecoder(parse_constant=_reject_constant, object_pairs_hook=_pairs_kept)


def _has_non_finite(value: Any) -> bool:
    stack: list[Any] = [value]
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is float:
            if node != node or node in _INFINITIES:
                return True
        elif kind is dict:
            stack.extend(node.values())
        elif kind is list:
            stack.extend(node)
    return False


def _find_non_finite(value: Any, path: str = "") -> str | None:
    if not _has_non_finite(value):
        return None
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        node, where = stack.pop()
        if type(node) is float and (node != node or node in _INFINITIES):
            return where
        if type(node) is dict:
            stack.extend((child, f"{where}/{escape(str(key))}") for key, child in node.items())
        elif type(node) is list:
            stack.extend((child, f"{where}/{i}") for i, child in enumerate(node))
    return None  # pragma: no cover - _has_non_finite said there is one


def escape(token: str) -> str:
    """A JSON pointer reference token for ``token`` (``~`` and ``/`` escaped)."""
    return token.replace("~", "~0").replace("/", "~1")


def parse_json(data: bytes | bytearray | memoryview | str, *, max_depth: int = DEFAULT_MAX_DEPTH,
               check_duplicates: bool = True) -> Any:
    """Parse one JSON document, refusing what JSON does not allow and what would hurt the process.

    Duplicated keys are checked in the top-level object always (whatever their spelling), and
    everywhere when the top-level object repeats a key name textually (a cheap gate; nested
    free-form JSON follows last-wins, as ``JSON.parse`` does).

    Raises:
        DecodeError: not JSON, ``NaN``/``Infinity``, a number that overflows, an integer too long for
            Python, invalid UTF-8, or a duplicated key in the event object.
        LimitExceeded: nesting deeper than ``max_depth``.
    """
    orjson = _orjson
    value: Any = _NOT_PARSED
    if orjson is not None and type(data) is bytes:
        # The common case (bytes from the wire, written compactly) in a few C calls: an object that
        # orjson writes back byte for byte (see below); anything else takes the general path.
        try:
            value = orjson.loads(data)
        except orjson.JSONDecodeError:
            value = _UNREADABLE
        else:
            if type(value) is dict and _ORJSON_PROOF_DEPTH <= max_depth:
                try:
                    if (orjson.dumps(value) if len(data) <= WRITE_WHOLE else _rewrite(value, data)) == data:
                        return value
                except (TypeError, ValueError):
                    pass
    # Handed on in a box, the name let go of: the general path may read the text again (an integer
    # orjson read inexactly, a key to find), and lets go of this reading first.
    read = [value]
    del value
    parsed = _parse_general(data, read, max_depth, check_duplicates)
    if type(parsed) is _KeyToFind:
        return _find_repeated_key(parsed, max_depth)
    return parsed


def parse_batch(payloads: list[Any], *, max_depth: int = DEFAULT_MAX_DEPTH) -> list[Any] | None:
    """Several payloads (bytes, each one event object) parsed and proved in one pass, or ``None``.

    The payloads are read as one JSON array, and the array that orjson writes back byte for byte is
    the proof :func:`parse_json` takes for each alone (no key dropped as a duplicate, no integer read
    inexactly, depth within the limit), in two C calls instead of two per payload. ``None`` (parse
    them one by one, which says what is wrong) when orjson is missing, a payload is not bytes, is large,
    is not exactly one JSON object, or the proof fails.
    """
    orjson = _orjson
    if orjson is None or len(payloads) < 2 or _ORJSON_PROOF_DEPTH > max_depth - 1 \
            or set(map(type, payloads)) != _BYTES_ONLY or max(map(len, payloads)) > _BATCH_PAYLOAD_MAX:
        return None
    joined = b"[" + b",".join(payloads) + b"]"
    if len(joined) > WRITE_WHOLE and dense(joined):
        return None  # (one by one, each small: orjson's writing of the whole would reserve far more)
    try:
        values = orjson.loads(joined)
        if len(values) != len(payloads) or set(map(type, values)) != _DICTS_ONLY or orjson.dumps(values) != joined:
            return None
    except (orjson.JSONDecodeError, TypeError, ValueError):
        return None
    return values  # type: ignore[no-any-return]


#: Larger payloads are parsed alone: a call's overhead is nothing beside them, and a batch would hold
#: extra copies of them (the joined text, the written-back text) at once.
_BATCH_PAYLOAD_MAX = 16 * 1024
_BYTES_ONLY = {bytes}
_DICTS_ONLY = {dict}


def _parse_general(data: bytes | bytearray | memoryview | str, read: list[Any], max_depth: int,
                   check_duplicates: bool) -> Any:
    """``parse_json`` beyond its fast path: the value, or a :class:`_KeyToFind` in its place. ``read``
    holds orjson's reading of ``data`` if it was read (taken out of it: this is its only holder)."""
    value = read.pop()
    raw: bytes | str = data if type(data) is bytes or isinstance(data, str) else bytes(data)
    if _orjson is not None:
        # The flat case first, on the text as given: orjson reads an ASCII str without copying it.
        if value is _UNREADABLE:
            value = _NOT_PARSED
        elif value is _NOT_PARSED:
            try:
                value = _orjson.loads(raw)
            except _orjson.JSONDecodeError:
                value = _NOT_PARSED
        # Colons counted once (a colon is one byte in UTF-8, so the text's count is the bytes' count),
        # and only when the object could be flat: a large payload is scanned as few times as possible.
        colons = -1
        if type(value) is dict and max_depth >= 1 and _scalars_only(value):
            colons = raw.count(":") if type(raw) is str else raw.count(b":")  # type: ignore[arg-type]
            if colons == len(value):
                return value  # flat: distinct keys (see _no_duplicates), depth 1, no float to doubt
        blob: bytes | None = raw  # type: ignore[assignment]
        if type(raw) is not bytes:
            try:
                blob = raw.encode("utf-8")  # type: ignore[union-attr]
            except UnicodeEncodeError:
                blob = None  # lone surrogates: only the stdlib parser reads them
        if blob is not None and value is not _NOT_PARSED:
            rewritten: bytes | bytearray | None = None
            if type(value) is dict:
                if colons < 0:
                    colons = blob.count(b":")
                rewritten = _rewrite(value, blob)
                if rewritten == blob and ORJSON_WRITE_DEPTH is not None and max_depth >= ORJSON_WRITE_DEPTH:
                    # orjson writes back exactly the text it read: no key was dropped as a duplicate, no
                    # integer became a float, and the value was shallow enough for orjson to write.
                    return value
            # orjson turns integers beyond 64 bits (19+ digits) into (inexact) floats: those go to the
            # stdlib parser.
            # A run of digits is mostly in a string (an id); a value without any float read none.
            if not read_inexactly(blob, value):
                return _check_parsed(blob, value, max_depth, check_duplicates, colons, rewritten, True)
    # (orjson's reading and its write-back let go of first: integers past 64 bits took the peak to 143
    # bytes a structural character, with the standard library's reading beside orjson's)
    value = rewritten = None
    value = _parse_stdlib(raw, max_depth)
    return _check_parsed(raw, value, max_depth, check_duplicates, -1, None, False)


_NOT_PARSED: Any = object()
_UNREADABLE: Any = object()  # orjson refused the text (the stdlib parser says why, or reads it)


def read_inexactly(raw: bytes, value: Any) -> bool:
    """Whether orjson, reading ``raw`` as ``value``, may have read an integer beyond 64 bits (19+
    digits) as an inexact float: a run of that many digits in the text (mostly in a string, an id)
    and a float in the value (which a value without one cannot have read)."""
    return _LONG_DIGIT_RUN in raw.translate(_DIGITS_ONLY) and _has_float(value)


def _has_float(value: Any) -> bool:
    """Whether a value orjson parsed holds a float: it reads an integer beyond 64 bits as one, and
    nothing else becomes a float but a number written with a fraction or an exponent."""
    if type(value) is float:
        return True
    stack: list[Any] = [value] if type(value) is dict or type(value) is list else []
    while stack:
        node = stack.pop()
        for child in node.values() if type(node) is dict else node:
            kind = type(child)
            if kind is float:
                return True
            if kind is dict or kind is list:
                stack.append(child)
    return False


def _scalars_only(value: dict[str, Any]) -> bool:
    """No float (orjson may have read an integer inexactly), no array or object (depth, nesting)."""
    for item in value.values():
        kind = type(item)
        if kind is float or kind is list or kind is dict:
            return False
    return True


def _check_parsed(raw: bytes | str, value: Any, max_depth: int, check_duplicates: bool, colons: int,
                  rewritten: bytes | bytearray | None, by_orjson: bool) -> Any:
    """The depth limit and the duplicate-key rule for a parsed payload (``colons``: -1 if not counted;
    ``by_orjson``: whether orjson read ``value``). ``value``, or a :class:`_KeyToFind` in its place."""
    # Nesting can only exceed the limit if there are more brackets (so more bytes) than the limit.
    if len(raw) > max_depth:
        # orjson refuses to write anything nested deeper than it can: when it writes the value, the
        # value is shallow enough and the walk is not needed (the rewrite also serves _no_duplicates).
        shortcut = _orjson is not None and ORJSON_WRITE_DEPTH is not None and max_depth >= ORJSON_WRITE_DEPTH
        counted: int | None = None
        if shortcut and (rewritten is not None or len(raw) > _LARGE):
            brackets = max_depth + 1  # counting costs more than the rewrite
        else:
            brackets = counted = opening_brackets(raw)
        if brackets > max_depth:
            if shortcut and rewritten is None:
                rewritten = _rewrite(value, raw)
            if not (shortcut and rewritten is not None) and nests_deeper(raw, value, max_depth, counted):
                raise LimitExceeded(f"JSON nested deeper than {max_depth} levels", limit=max_depth, pointer="",
                                    event_type=type_of(value), rule=NOT_AN_EVENT)
    if check_duplicates and type(value) is dict:
        if colons < 0:
            colons = raw.count(":") if isinstance(raw, str) else raw.count(b":")
        # As many colons as keys: a flat object with distinct keys (see _no_duplicates); else prove it.
        if colons != len(value) and not _no_duplicates(raw, value, rewritten, colons) \
                and _may_repeat_a_key(raw, value):
            return _KeyToFind(raw, type_of(value), by_orjson)
    return value


def _rewrite(value: Any, text: bytes | str) -> bytes | bytearray | None:
    """``value`` (read from ``text``) written back by orjson (compact, colons in strings literal), or ``None``.

    orjson reserves room for each member of a list or object before writing it, about 160 bytes a
    member whatever the member is: ``[1,1,1,…]`` written whole reserved 83 times its length (1.4 GB of
    address space for an event of 16 MiB, of which only the text written becomes resident, but which
    tracemalloc counts and a limit on address space refuses). A large text with members that close
    together is written a slice of members at a time (``wire.writeback``), into one buffer of its
    length: a walk of its containers, no more than a slice's room reserved.
    """
    if _orjson is None:
        return None
    try:
        if len(text) <= WRITE_WHOLE or not dense(text):
            return bytes(_orjson.dumps(value))
        written = bytearray()
        write_sliced(value, written, _orjson.dumps, ORJSON_WRITE_DEPTH or SLICED_DEPTH)
        return written
    except (TypeError, ValueError):
        return None  # lone surrogates, integers beyond 64 bits, or too deep


def _orjson_write_depth() -> int | None:
    """The deepest nesting orjson writes (it refuses deeper), if it has such a limit."""
    if _orjson is None:
        return None
    nested: list[Any] = []
    for _ in range(2048):
        nested = [nested]
    try:
        _orjson.dumps(nested)
    except (TypeError, ValueError):
        pass
    else:
        return None  # no limit below 2048: the shortcut does not apply
    for depth in (254, 255, 256, 511, 512, 1023, 1024):
        nested = []
        for _ in range(depth - 1):
            nested = [nested]
        try:
            _orjson.dumps(nested)
        except (TypeError, ValueError):
            return depth - 1 if depth > 1 else None
    return None


#: The deepest nesting orjson writes, measured at import (``None``: orjson missing, or no limit below
#: 2048 levels): where it refuses deeper, its writing a value back proves the value's depth too.
ORJSON_WRITE_DEPTH = _orjson_write_depth()
#: The least ``max_depth`` for which "orjson writes it back" also proves the depth limit (no proof when
#: orjson has no write limit of its own).
_ORJSON_PROOF_DEPTH = ORJSON_WRITE_DEPTH if ORJSON_WRITE_DEPTH is not None else 2**62


def proved_exact(text: bytes, value: Any) -> bool:
    """``text`` (parsed by orjson as ``value``) has no integer orjson read inexactly, a depth orjson can
    write, and no duplicated key at any level (the colon proof of ``_no_duplicates``, nothing skipped).

    Stricter than what :func:`parse_json` asks of an event: the proof a slice of a large array
    (:mod:`~agui_client.wire.slices`) and a stored record (:mod:`~agui_client.wire.records`) must give
    to be taken as orjson read it.
    """
    rewritten = _rewrite(value, text)
    if rewritten is None:
        return False
    if rewritten == text:
        return True  # orjson wrote back exactly what it read: no key dropped, no number changed
    if read_inexactly(text, value):
        return False
    escaped = text.count(b"\\u003a") + text.count(b"\\u003A") if b"\\u003" in text else 0
    return text.count(b":") + escaped == rewritten.count(b":")


def _parse_stdlib(raw: bytes | str, max_depth: int) -> Any:
    try:
        text = raw if isinstance(raw, str) else raw.decode("utf-8")
        if text.startswith("\ufeff"):
            raise ValueError("a byte order mark is not JSON")
        return _finite_decoder.decode(text)
    except RecursionError:
        # Too deep for any parser here (orjson and the stdlib both stop near 1,000 levels): the error
        # still names the event's type when a member before the deep one gives it.
        kind = leading_type(text)
        unknown = "" if kind is not None else " (the event's type unknown: no text \"type\" member before the deep one)"
        raise LimitExceeded(f"JSON nested deeper than {max_depth} levels{unknown}", limit=max_depth, pointer="",
                            event_type=kind, rule=NOT_AN_EVENT) from None
    except UnicodeDecodeError as exc:
        raise DecodeError(f"payload is not valid UTF-8 ({exc.reason} at byte {exc.start})",
                          data=excerpt(raw), rule=NOT_AN_EVENT) from None
    except json.JSONDecodeError as exc:
        raise DecodeError(f"payload is not JSON: {exc}", data=excerpt(raw), rule=NOT_AN_EVENT) from None
    except _Overflow:
        try:
            value = _plain_decoder.decode(text)
        except (ValueError, RecursionError):
            raise DecodeError("payload is not JSON: a number overflows to infinity", data=excerpt(raw),
                              rule=NOT_AN_EVENT) from None
        raise DecodeError("number overflows to infinity (not representable JSON)", pointer=_find_non_finite(value),
                          data=excerpt(raw), event_type=type_of(value), rule=NOT_AN_EVENT) from None
    except ValueError as exc:
        # Python's int digit limit and NaN/Infinity land here
        reason = "an integer too long to read" if "digits" in str(exc) else str(exc)
        raise DecodeError(f"payload is not JSON: {reason}", data=excerpt(raw), rule=NOT_AN_EVENT) from None


def leading_type(text: str) -> str | None:
    """The ``type`` of an event object too deep to parse, read from its members up to the first one
    that cannot be read alone (the deep one); ``None`` when they do not give it.

    Producers write ``type`` first, so this reads a member or two. A member's value is parsed by the
    same strict decoder, bounded by the payload's size, and only for an error.
    """
    def skip(at: int) -> int:
        space = _WHITESPACE.match(text, at)
        return space.end() if space is not None else at

    try:
        at = skip(0)
        if text[at] != "{":
            return None
        at = skip(at + 1)
        while text[at] == '"':
            key, at = _plain_decoder.raw_decode(text, at)  # (a string: it starts with a quote)
            at = skip(at)
            if text[at] != ":":
                return None
            value, at = _plain_decoder.raw_decode(text, skip(at + 1))
            if key == "type":
                return value if type(value) is str else None
            at = skip(at)
            if text[at] != ",":
                return None
            at = skip(at + 1)
    except (ValueError, IndexError, RecursionError):
        pass
    return None


_WHITESPACE = re.compile(r"[ \t\n\r]*")


def read_refused(data: bytes | bytearray | memoryview | str) -> Any:
    """What a payload :func:`parse_json` refused still says, when its text is JSON to a lenient reader.

    A number past a double's range is read as an infinity and a repeated key as its last value; text
    that is not UTF-8 or not JSON (or nests too deep to read) gives ``None``. Never folded: the value is
    what the payload names for a caller that must not lose it (the interrupts of a refused
    ``RUN_FINISHED``), and may hold what JSON cannot.
    """
    try:
        text = data if isinstance(data, str) else bytes(data).decode("utf-8")
        return _plain_decoder.decode(text)
    except (ValueError, RecursionError):
        return None


def type_of(value: Any) -> str | None:
    """The ``type`` of a parsed event object (``None`` when it has no string one), for errors."""
    kind = value.get("type") if type(value) is dict else None
    return kind if type(kind) is str else None


def _no_duplicates(raw: bytes | str, value: dict[str, Any], rewritten: bytes | bytearray | None = None,
                   colons: int = -1) -> bool:
    """A cheap proof that ``raw`` needs no exact duplicate check (``False``: no proof, check).

    Three proofs, cheapest first. (1) Every key in the text is followed by a colon: as many colons as
    top-level keys means a flat object with distinct keys. (2) Each top-level key written exactly
    once, and no backslash that could spell one differently: the top level repeats nothing and the
    nested check (``_may_repeat_a_key``) would not be triggered. (3) Colons elsewhere are inside
    strings; writing the parsed value back (keys deduplicated, colons in strings written literally)
    gives the colons of a text without duplicates, which the original matches, counting ``\\u003a``
    escapes, unless a key (and whatever its value held) was dropped as a duplicate. ``colons``: the
    text's colons when the caller already counted them (-1: not counted).
    """
    if isinstance(raw, str):
        colons = raw.count(":") if colons < 0 else colons
        if colons == len(value):
            return True  # a flat object: every colon is one of its (distinct) keys
        if (len(raw) > _LARGE or _orjson is None) and "\\" not in raw:
            for key in value:
                if raw.count(_needle(key)[0]) != 1:
                    break
            else:
                return True  # each key written once, and no escape could spell one differently
        escaped = raw.count("\\u003a") + raw.count("\\u003A") if "\\u003" in raw else 0
    else:
        colons = raw.count(b":") if colons < 0 else colons
        if colons == len(value):
            return True
        if (len(raw) > _LARGE or _orjson is None) and b"\\" not in raw:
            needles = _NEEDLE_BYTES
            for key in value:
                if raw.count(needles.get(key) or _needle(key)[1]) != 1:
                    break
            else:
                return True
        escaped = raw.count(b"\\u003a") + raw.count(b"\\u003A") if b"\\u003" in raw else 0
    if rewritten is None:
        if _orjson is not None:
            rewritten = _rewrite(value, raw)
        else:
            try:
                rewritten = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
            except (TypeError, ValueError, UnicodeEncodeError):
                rewritten = None
        if rewritten is None:
            return False  # lone surrogates or integers orjson cannot write: take the exact path
    return bool(colons + escaped == rewritten.count(b":"))


#: Above this size (or without orjson) the key-count proof (a few C scans) is cheaper than writing the
#: value back.
_LARGE = 2048


def _may_repeat_a_key(raw: bytes | str, value: dict[str, Any]) -> bool:
    """Whether ``value``, read from ``raw``, may have lost a repeated key: a key of its own written
    twice (then a member at any depth may repeat one, and is looked for), or spelled twice differently
    (``"n\\u0061me"`` and ``"name"``: its members, counted by a reading that holds no object, are more
    than its keys)."""
    if isinstance(raw, bytes):
        if any(raw.count(_needle(key)[1]) > 1 for key in value):
            return True
        text = raw.decode("utf-8")
    elif any(raw.count(_needle(key)[0]) > 1 for key in value):
        return True
    else:
        text = raw
    return bool(_pair_count_decoder.decode(text) != len(value))


class _KeyToFind:
    """What a parse hands back in place of a value that may have lost a repeated key (the text is read
    again, to find it, by :func:`_find_repeated_key`).

    The value is let go of first: the reading that finds the key holds the objects that could repeat
    one, and beside the value the parse's peak was that reading's and the value's at once (an object of
    ``[[]]`` members ending in a repeat: 182 bytes a structural character in all, orjson's reading 50).
    When no key repeats after all (a proof failed for another reason: a lone surrogate, an integer past
    64 bits), the text is read a third time by the reader that read it first; only such a text, with a
    key of the event written twice, pays for that.
    """

    __slots__ = ("raw", "event_type", "by_orjson")

    def __init__(self, raw: bytes | str, event_type: str | None, by_orjson: bool) -> None:
        self.raw = raw
        self.event_type = event_type
        self.by_orjson = by_orjson


def _find_repeated_key(unread: _KeyToFind, max_depth: int) -> Any:
    """Refuse the text whose value a parse let go of, naming the key it repeats; or, when it repeats
    none, read it again as it was read (its depth and numbers were judged already)."""
    raw = unread.raw
    found = first_duplicate(raw if isinstance(raw, str) else raw.decode("utf-8"))
    if found is None:
        if unread.by_orjson:
            return _orjson.loads(raw)
        return _parse_stdlib(raw, max_depth)
    pointer, key = found
    raise DecodeError(f"duplicated key {shown_key(key)} makes the event ambiguous", data=excerpt(raw),
                      pointer=pointer, event_type=None if pointer == "/type" else unread.event_type,
                      rule=NOT_AN_EVENT)


def first_duplicate(text: str) -> tuple[str, str] | None:
    """The pointer and name of the first repeated member, in the order the strict reader meets them
    (an object's members before the object: the order objects close), or ``None``.

    Read from the text's pairs, so a member is found where it is, however deep, and however its name
    was written (``"n\\u0061me"`` repeats ``"name"``). Iterative: the text may nest to the depth limit.
    Each container on the way is one frame, its place a link to its parent's: the pointer is written
    for the member found alone (one string per container, as long as its depth, made a refusal of a
    few megabytes cost gigabytes)."""
    # (objects read as lists of (name, value) tuples, arrays as lists of values: a list whose first
    # item is a tuple is an object; an empty one, either way, repeats nothing. An object that cannot
    # hold a repeat is read as None, so the reading holds little more than the objects that can and
    # the arrays: a refusal of 1 MiB of one-member objects took 136 bytes a structural character.)
    root = _pair_list_decoder.decode(text)
    if type(root) is not list or not root:
        return None
    stack: list[tuple[list[Any], Any, Iterator[tuple[str | int, list[Any]]]]] = [(root, None, _containers(root))]
    while stack:
        node, place, inside = stack[-1]
        child = next(inside, None)
        if child is not None:
            stack.append((child[1], (place, child[0]), _containers(child[1])))
            continue
        stack.pop()
        if type(node[0]) is tuple:
            seen: set[str] = set()
            for name, _ in node:
                if name in seen:
                    return _pointer_of((place, name)), name
                seen.add(name)
    return None


def _containers(node: list[Any]) -> Iterator[tuple[str | int, list[Any]]]:
    """The members or items of a pair-list reading that are non-empty containers, with their names or
    indexes (only those can repeat a key)."""
    pairs: Any = node if type(node[0]) is tuple else enumerate(node)
    return ((key, value) for key, value in pairs if type(value) is list and value)


def _pointer_of(place: Any) -> str:
    """The JSON pointer of a place (``(parent's place, name or index)``, the root ``None``)."""
    segments: list[str] = []
    while place is not None:
        place, key = place
        segments.append(escape(key) if type(key) is str else str(key))
    return "".join("/" + segment for segment in reversed(segments))


_NEEDLES: dict[str, tuple[str, bytes]] = {}
_NEEDLE_BYTES: dict[str, bytes] = {}


def _needle(key: str) -> tuple[str, bytes]:
    """How a producer writes ``key`` as a JSON string (text and UTF-8)."""
    needle = _NEEDLES.get(key)
    if needle is None:
        text = json.dumps(key, ensure_ascii=False)
        needle = (text, text.encode("utf-8", "surrogatepass"))
        if len(_NEEDLES) < 4096:
            _NEEDLES[key] = needle
            _NEEDLE_BYTES[key] = needle[1]
    return needle


def excerpt(raw: bytes | str) -> str:
    """A bounded excerpt of a payload, for an error."""
    text = raw if isinstance(raw, str) else raw[: _DATA_EXCERPT * 4].decode("utf-8", "replace")
    return text if len(text) <= _DATA_EXCERPT else text[:_DATA_EXCERPT] + "…"


def dump_json(value: Any, *, shallow: bool = False) -> bytes:
    """Serialise JSON-ready data to compact UTF-8 bytes (lone surrogates written as ``\\uXXXX`` escapes).

    ``shallow``: orjson writes at most :data:`SHALLOW_WRITE` levels (:func:`shallow_orjson`), for data a
    caller handed over, which may hold a cycle (a request's body). Its wrapping costs some 20-30 us a
    call, a hundred times orjson's own writing of an event (0.1-0.2 us): the testing kit's agents write
    every event they send with this function.

    Raises:
        UnencodableValue: ``value`` holds itself (``pointer``: where; a ``ValueError``).
        TypeError, ValueError: ``value`` holds what JSON cannot (``NaN``, a set …).
    """
    if _orjson is not None:
        try:
            return shallow_orjson(value) if shallow else bytes(_orjson.dumps(value))
        except TypeError:
            pass  # lone surrogates, big ints, nesting past orjson's depth (or SHALLOW_WRITE), a cycle: below
    # With the check for cycles (see ``records.dump_record``: without it a hand-built request's cycle was
    # written round and round to the recursion limit before it was named).
    text = stdlib_text(value, ensure_ascii=False)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        pass
    # Lone UTF-16 halves (a producer that slices strings by code unit) cannot be written as UTF-8.
    # Halves that are next to each other are one character again; the others are written as the JSON
    # escape of the code unit, as the reference client's JSON.stringify writes them, so what is sent is
    # the string the producer wrote. A stand-in character ("?", U+FFFD) would make two different ids or
    # keys one: an object repeating a key, a resume naming an interrupt nobody raised. (A raw character
    # of the text json.dumps wrote is inside a string literal, where its escape means the same.)
    warnings.warn(AguiWarning("[UTF16-SURROGATE] lone UTF-16 surrogates in data to send were written as \\uXXXX "
                              "escapes"), stacklevel=2)
    joined = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return _LONE_HALF.sub(lambda half: f"\\u{ord(half[0]):04x}", joined).encode("utf-8")


#: How deep orjson writes data to send before it is handed to the standard library (which looks for
#: cycles). orjson has no check for cycles: it goes round one to its depth limit (254 levels), writing
#: what sits beside the cycle again at every turn, 1.1 MB of state 250 times (0.43 s and 280 MB) before
#: it gives up. Written inside ``254 - SHALLOW_WRITE`` lists, it gives up after this many levels. Deeper
#: state is rare (a request's messages are 6 levels deep; its state starts at the second) and is
#: written by the standard library: slower (some 5 times), never round a cycle.
SHALLOW_WRITE = 32


def shallow_orjson(value: Any) -> bytes:
    """``value`` as orjson writes it, refused (``TypeError``) past :data:`SHALLOW_WRITE` levels of
    nesting, as orjson refuses what it cannot write; orjson's own writing when it has no depth limit.

    The wrapping lists cost their brackets, cut from the text written (a copy of it: 0.1 ms a MB).
    """
    pad = ORJSON_WRITE_DEPTH - SHALLOW_WRITE if ORJSON_WRITE_DEPTH is not None else 0
    if pad <= 0:
        return bytes(_orjson.dumps(value))
    wrapped = value
    for _ in range(pad):
        wrapped = [wrapped]
    return _orjson.dumps(wrapped)[pad:-pad]  # type: ignore[no-any-return]


def stdlib_text(value: Any, *, ensure_ascii: bool) -> str:
    """``value`` written compact by the standard library's encoder, refusing ``NaN`` and a cycle.

    Written with its check for cycles, which names none: the cycle it refuses is found again
    (:func:`~agui_client.wire.values.costly_refused`) and refused as an :class:`UnencodableValue`
    naming where.
    """
    try:
        return json.dumps(value, ensure_ascii=ensure_ascii, separators=(",", ":"), allow_nan=False)
    except ValueError:
        refused = costly_refused(value)  # (on the way to an error only: its message names no place)
        if refused is None:
            raise
        raise refused from None


_LONE_HALF = re.compile("[\ud800-\udfff]")


def _string_problem(text: str) -> str | None:
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        # UTF-8 cannot carry a lone surrogate: sent, it would become "?" (or make the body invalid).
        return f"a lone surrogate U+{ord(text[exc.start]):04X} at character {exc.start} is not text JSON can carry"
    return None


def _key_shown(key: Any) -> str:
    """A key that is not JSON as a problem's reason quotes it: its ``repr``, cut at ``QUOTED_CHARS``.

    The reason is in the error's text and its ``reason``, which logs keep: a state may hold a key of
    16 MiB (one an agent set, sent back), and the reason showed all of it.
    """
    if isinstance(key, str):
        # (cut before it is written out: the repr of 16 MiB would be made whole only to be cut)
        rest = len(key) - QUOTED_CHARS
        return repr(key[:QUOTED_CHARS]) + (f"... ({rest} more characters)" if rest > 0 else "")
    try:
        return quoted(repr(key))
    except ValueError:  # (an int past the interpreter's digits limit has no repr)
        return f"<a {type(key).__name__} too long to show>"


def json_problem(value: Any, *, lone_surrogates: bool = False) -> tuple[str, str] | None:
    """Where ``value`` stops being JSON, and why; ``None`` when all of it is JSON.

    JSON is ``None``, ``bool``, ``int``, a finite ``float``, ``str`` without lone surrogates, ``list`` or
    ``tuple``, and ``dict`` with ``str`` keys, nested. Anything else (a set, bytes, a datetime, ``NaN``,
    a non-string key, a container holding itself) is a problem: the encoders would refuse it, write
    invalid JSON, or silently change it (orjson writes ``NaN`` as ``null`` and a datetime as text).

    Args:
        value: the value to check (user input: a payload, ``state``, ``forwarded_props`` …).
        lone_surrogates: let strings hold lone surrogates, which :func:`dump_json` writes as their
            ``\\uXXXX`` escapes (the testing kit's agent sends them so, as a producer may).

    Returns:
        ``(pointer, reason)``: the JSON pointer of the first offending value in document order
        (``""`` for ``value`` itself) and what is wrong with it; or ``None``.
    """
    # Iterative, so a deep value cannot exhaust the stack; containers on the current path are
    # tracked so a cycle is reported instead of walked forever. The path is kept as segments and a
    # pointer joined only for the value reported: building each value's pointer as the walk goes
    # would cost the square of the depth (a 100,000-deep list took half a minute). A container held
    # twice is walked twice: past WALKED_UNMARKED members, the containers walked whole are marked and
    # not walked again, and at the first one met again what is held twice is judged once (written_past):
    # a list doubled 40 times was walked a trillion members long. Judged only then, as plain_json does:
    # a value past the count holding nothing twice pays no second walk (600,000 members: 0.5 s of the
    # walk's 1.0), and a problem before the first container met again is found first, in document order.
    on_path: set[int] = set()
    left = WALKED_UNMARKED
    walked: set[int] | None = None  # the containers walked whole since the count ran out
    judged = False  # whether written_past was asked (at the first container met again past the count)
    path: list[str] = []  # the escaped segments of the container being walked (the root has none)
    stack: list[tuple[Any, str | None, bool]] = [(value, None, False)]

    def at(segment: str | None) -> str:
        return "".join("/" + part for part in (path if segment is None else [*path, segment]))

    while stack:
        item, segment, leaving = stack.pop()
        if leaving:
            on_path.discard(id(item))
            if walked is not None:
                walked.add(id(item))
            if segment is not None:
                path.pop()
            continue
        if item is None or isinstance(item, int):  # bool is an int
            continue
        if isinstance(item, str):
            reason = None if lone_surrogates else _string_problem(item)
            if reason is not None:
                return at(segment), reason
            continue
        if isinstance(item, float):
            if item != item or item in _INFINITIES:
                return at(segment), f"{item!r} is not a JSON number"
            continue
        if not isinstance(item, (dict, list, tuple)):
            return at(segment), f"a value of type {type(item).__name__} is not JSON"
        if id(item) in on_path:
            return at(segment), CONTAINS_ITSELF
        if walked is None:
            left -= len(item)
            if left < 0:
                walked = set()
        elif id(item) in walked:
            if not judged:
                found = written_past(value)
                if found is not None:
                    return found
                judged = True
            continue  # (walked whole already, and found JSON)
        if isinstance(item, dict):
            for key in item:
                if not isinstance(key, str):
                    return at(segment), (f"key {_key_shown(key)} is not a string (type {type(key).__name__}); "
                                         "JSON keys are strings")
                reason = None if lone_surrogates else _string_problem(key)
                if reason is not None:
                    return at(segment), f"key {_key_shown(key)}: {reason}"
        on_path.add(id(item))
        stack.append((item, segment, True))
        if segment is not None:
            path.append(segment)
        if isinstance(item, dict):
            stack.extend(reversed([(child, escape(key), False) for key, child in item.items()]))
        else:
            stack.extend(reversed([(child, str(n), False) for n, child in enumerate(item)]))
    return None
