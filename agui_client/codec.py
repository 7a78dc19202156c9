"""The one cattrs converter: camelCase wire JSON <-> frozen attrs types.

Decoding is strict where the schema is (no coercion: ``"timestamp": "123"`` is an error, a snake_case
key is not a field), tolerant where the protocol asks for tolerance (unknown event types become
``UnknownEvent``; unknown fields are ignored and reported once), and defensive against hostile JSON
(nesting depth, giant integers, ``NaN``/``Infinity``, numbers that overflow to infinity, invalid
UTF-8 and duplicated keys in an event object all give a ``DecodeError``, never a raw Python error).

Warnings found while decoding go to the active *sink* (a run session collects them into
``RunResult.warnings``); outside a session they are emitted through :mod:`warnings` as
``AguiWarning``.

Speed. Most payloads are the plain case, and the plain case is proved cheaply rather than checked
slowly: a flat object whose colons equal its keys has no duplicate and no nesting; text that orjson
writes back byte for byte has no duplicate, no inexact number and bounded depth. Past parsing,
generated per-shape builders construct the attrs instance directly, and anything not plain (a null,
an unknown key, a wrong type, a check that would refuse or warn) falls back to the checked cattrs
path, which alone decides errors and warnings. ``bench/bench_decode.py`` measures it.
"""

from __future__ import annotations

import itertools
import json
import re
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from types import UnionType
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

import attrs
import cattrs
from cattrs.errors import ClassValidationError, ForbiddenExtraKeysError, IterableValidationError
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from ._build import builder
from ._plain import PlainSnapshot
from .errors import AguiWarning, DecodeError, LimitExceeded, StreamWarning
from .types import events as ev
from .types import messages as msg
from .types import run as rn
from .types.events import EVENT_TYPES, Event, UnknownEvent

_orjson: Any
try:  # optional speed-up: the package works without it
    import orjson as _orjson
except ImportError:  # pragma: no cover - exercised in environments without orjson
    _orjson = None

__all__ = [
    "decode_event",
    "decode",
    "encode",
    "parse_json",
    "dump_json",
    "json_problem",
    "WarningSink",
    "collect_warnings",
    "DEFAULT_MAX_DEPTH",
    "camel",
]

T = TypeVar("T")

#: Default limit on JSON nesting (objects and arrays) in one payload.
DEFAULT_MAX_DEPTH = 512
_MAX_SAFE_INT = 2**53 - 1
#: The largest integer the schema allows in a field (timestamps, token counts): 2^53 - 1.
MAX_SAFE_INT = _MAX_SAFE_INT
_DATA_EXCERPT = 200


def camel(name: str) -> str:
    """``tool_call_id`` -> ``toolCallId``."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


# --------------------------------------------------------------------------------------------------
# Warnings sink
# --------------------------------------------------------------------------------------------------


class WarningSink:
    """Collects the warnings of one decoding context, repeated ones a bounded number of times."""

    __slots__ = ("items", "_seen")

    def __init__(self) -> None:
        self.items: list[StreamWarning] = []
        self._seen: dict[tuple[str, ...], int] = {}

    def warn(self, code: str, message: str, *, pointer: str | None = None, event_type: str | None = None,
             once: tuple[str, ...] | None = None, repeat: int = 1) -> None:
        """Record a warning; with ``once``, a warning with the same key is recorded ``repeat`` times at most.

        A key warned once (a producer's habit, such as an unknown field) is said once. A key warned for
        each thing dropped (an unknown event, a content part) is said up to ``repeat`` times, and then
        once more to say the rest go unreported: a hostile stream repeating it cannot fill the memory.
        """
        if once is not None:
            seen = self._seen.get(once, 0)
            if seen >= repeat:
                return
            self._seen[once] = seen + 1
            if seen + 1 == repeat and repeat > 1:
                message += f" (seen {repeat} times: further ones are not reported)"
        self.items.append(StreamWarning(code=code, message=message, pointer=pointer, event_type=event_type))


#: How many times a warning about something dropped is given per response (``WarningSink.warn``).
DROP_WARNINGS = 100


_SINK: ContextVar[WarningSink | None] = ContextVar("agui_client_warning_sink", default=None)


@contextmanager
def collect_warnings(sink: WarningSink | None = None) -> Iterator[WarningSink]:
    """Route decoding warnings into ``sink`` (a new one by default) for the ``with`` block."""
    sink = sink if sink is not None else WarningSink()
    token = _SINK.set(sink)
    try:
        yield sink
    finally:
        _SINK.reset(token)


def _warn(code: str, message: str, *, pointer: str | None = None, event_type: str | None = None,
          once: tuple[str, ...] | None = None, repeat: int = 1) -> None:
    sink = _SINK.get()
    if sink is not None:
        sink.warn(code, message, pointer=pointer, event_type=event_type, once=once, repeat=repeat)
    else:
        warnings.warn(str(StreamWarning(code=code, message=message, pointer=pointer, event_type=event_type)),
                      AguiWarning, stacklevel=4)


# --------------------------------------------------------------------------------------------------
# JSON text -> Python values, defensively
# --------------------------------------------------------------------------------------------------

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


def _pairs_no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return result


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(f"duplicated key {key!r}")
        self.key = key


_strict_decoder = json.JSONDecoder(parse_constant=_reject_constant, object_pairs_hook=_pairs_no_duplicates)
_plain_decoder = json.JSONDecoder(parse_constant=_reject_constant)
_finite_decoder = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float)
# Objects become their pair count (duplicates included): the top-level result is the number of keys
# the text gives the top-level object. ``list`` keeps the pairs themselves.
_pair_count_decoder = json.JSONDecoder(parse_constant=_reject_constant, object_pairs_hook=len)
_pair_list_decoder = json.JSONDecoder(parse_constant=_reject_constant, object_pairs_hook=list)


def _depth_exceeds(value: Any, limit: int) -> bool:
    """Whether ``value`` nests containers deeper than ``limit`` (breadth-first, one level at a time)."""
    if type(value) is not dict and type(value) is not list:
        return False
    level: list[Any] = [value]
    depth = 1
    while level:
        if depth > limit:
            return True
        deeper: list[Any] = []
        add = deeper.append
        for node in level:
            for child in node.values() if type(node) is dict else node:
                kind = type(child)
                if kind is dict or kind is list:
                    add(child)
        level = deeper
        depth += 1
    return False


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
            stack.extend((child, f"{where}/{_escape(str(key))}") for key, child in node.items())
        elif type(node) is list:
            stack.extend((child, f"{where}/{i}") for i, child in enumerate(node))
    return None  # pragma: no cover - _has_non_finite said there is one


def _escape(token: str) -> str:
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
                    if orjson.dumps(value) == data:
                        return value
                except (TypeError, ValueError):
                    pass
    return _parse_general(data, value, max_depth, check_duplicates)


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


def _parse_general(data: bytes | bytearray | memoryview | str, value: Any, max_depth: int,
                   check_duplicates: bool) -> Any:
    """``parse_json`` beyond its fast path; ``value`` is orjson's reading of ``data`` if it was read."""
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
            rewritten: bytes | None = None
            if type(value) is dict:
                if colons < 0:
                    colons = blob.count(b":")
                rewritten = _rewrite(value)
                if rewritten == blob and _ORJSON_WRITE_DEPTH is not None and max_depth >= _ORJSON_WRITE_DEPTH:
                    # orjson writes back exactly the text it read: no key was dropped as a duplicate, no
                    # integer became a float, and the value was shallow enough for orjson to write.
                    return value
            # orjson turns integers beyond 64 bits (19+ digits) into (inexact) floats: those go to the
            # stdlib parser.
            # A run of digits is mostly in a string (an id); a value without any float read none.
            if _LONG_DIGIT_RUN not in blob.translate(_DIGITS_ONLY) or not _has_float(value):
                return _check_parsed(blob, value, max_depth, check_duplicates, colons, rewritten)
    value = _parse_stdlib(raw, max_depth)
    return _check_parsed(raw, value, max_depth, check_duplicates, -1, None)


_NOT_PARSED: Any = object()
_UNREADABLE: Any = object()  # orjson refused the text (the stdlib parser says why, or reads it)


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
                  rewritten: bytes | None) -> Any:
    """The depth limit and the duplicate-key rule for a parsed payload (``colons``: -1 if not counted)."""
    # Nesting can only exceed the limit if there are more brackets (so more bytes) than the limit.
    if len(raw) > max_depth:
        # orjson refuses to write anything nested deeper than it can: when it writes the value, the
        # value is shallow enough and the walk is not needed (the rewrite also serves _no_duplicates).
        shortcut = _orjson is not None and _ORJSON_WRITE_DEPTH is not None and max_depth >= _ORJSON_WRITE_DEPTH
        if shortcut and (rewritten is not None or len(raw) > _LARGE):
            brackets = max_depth + 1  # counting costs more than the rewrite
        else:
            brackets = raw.count("[") + raw.count("{") if isinstance(raw, str) else raw.count(b"[") + raw.count(b"{")
        if brackets > max_depth:
            if shortcut and rewritten is None:
                rewritten = _rewrite(value)
            if not (shortcut and rewritten is not None) and _depth_exceeds(value, max_depth):
                raise LimitExceeded(f"JSON nested deeper than {max_depth} levels", limit=max_depth, pointer="",
                                    event_type=_type_of(value), rule=_NOT_AN_EVENT)
    if check_duplicates and type(value) is dict:
        if colons < 0:
            colons = raw.count(":") if isinstance(raw, str) else raw.count(b":")
        # As many colons as keys: a flat object with distinct keys (see _no_duplicates); else prove it.
        if colons != len(value) and not _no_duplicates(raw, value, rewritten, colons):
            _check_duplicates(raw, value)
    return value


def _rewrite(value: Any) -> bytes | None:
    """``value`` written back by orjson (compact, colons in strings literal), or ``None``."""
    if _orjson is None:
        return None
    try:
        return bytes(_orjson.dumps(value))
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


_ORJSON_WRITE_DEPTH = _orjson_write_depth()
#: The least ``max_depth`` for which "orjson writes it back" also proves the depth limit (no proof when
#: orjson has no write limit of its own).
_ORJSON_PROOF_DEPTH = _ORJSON_WRITE_DEPTH if _ORJSON_WRITE_DEPTH is not None else 2**62


def _parse_stdlib(raw: bytes | str, max_depth: int) -> Any:
    try:
        text = raw if isinstance(raw, str) else raw.decode("utf-8")
        if text.startswith("\ufeff"):
            raise ValueError("a byte order mark is not JSON")
        return _finite_decoder.decode(text)
    except RecursionError:
        raise LimitExceeded(f"JSON nested deeper than {max_depth} levels", limit=max_depth, pointer="",
                            rule=_NOT_AN_EVENT) from None
    except UnicodeDecodeError as exc:
        raise DecodeError(f"payload is not valid UTF-8 ({exc.reason} at byte {exc.start})",
                          data=_excerpt(raw), rule=_NOT_AN_EVENT) from None
    except json.JSONDecodeError as exc:
        raise DecodeError(f"payload is not JSON: {exc}", data=_excerpt(raw), rule=_NOT_AN_EVENT) from None
    except _Overflow:
        try:
            value = _plain_decoder.decode(text)
        except (ValueError, RecursionError):
            raise DecodeError("payload is not JSON: a number overflows to infinity", data=_excerpt(raw),
                              rule=_NOT_AN_EVENT) from None
        raise DecodeError("number overflows to infinity (not representable JSON)", pointer=_find_non_finite(value),
                          data=_excerpt(raw), event_type=_type_of(value), rule=_NOT_AN_EVENT) from None
    except ValueError as exc:
        # Python's int digit limit and NaN/Infinity land here
        reason = "an integer too long to read" if "digits" in str(exc) else str(exc)
        raise DecodeError(f"payload is not JSON: {reason}", data=_excerpt(raw), rule=_NOT_AN_EVENT) from None


#: The rule (and validator code) a decode error names: the payload is not one JSON object (TR-09,
#: AGUI502), the object has no non-empty string type (TR-09, AGUI504, as bad-inputs B086 says), or a
#: known event's field is malformed (UK-05, AGUI504).
_NOT_AN_EVENT = "TR-09/AGUI502"
_NO_TYPE = "TR-09/AGUI504"
_MALFORMED = "UK-05/AGUI504"


def _type_of(value: Any) -> str | None:
    """The ``type`` of a parsed event object, for errors found after parsing."""
    kind = value.get("type") if type(value) is dict else None
    return kind if type(kind) is str else None


def _no_duplicates(raw: bytes | str, value: dict[str, Any], rewritten: bytes | None = None,
                   colons: int = -1) -> bool:
    """A cheap proof that ``raw`` needs no exact duplicate check (``False``: no proof, check).

    Three proofs, cheapest first. (1) Every key in the text is followed by a colon: as many colons as
    top-level keys means a flat object with distinct keys. (2) Each top-level key written exactly
    once, and no backslash that could spell one differently: the top level repeats nothing and the
    nested check (``_check_duplicates``) would not be triggered. (3) Colons elsewhere are inside
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
            rewritten = _rewrite(value)
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


def _check_duplicates(raw: bytes | str, value: dict[str, Any]) -> None:
    text = raw if isinstance(raw, str) else raw.decode("utf-8")
    if _may_repeat_keys(raw, value):
        try:
            _strict_decoder.decode(text)
        except _DuplicateKey as exc:
            key: str | None = exc.key
        else:
            key = None
    elif _pair_count_decoder.decode(text) != len(value):
        # the top-level object repeats a key spelled differently (``"n\\u0061me"`` and ``"name"``)
        seen: set[str] = set()
        key = None
        for name, _ in _pair_list_decoder.decode(text):
            if name in seen:
                key = name
                break
            seen.add(name)
    else:
        key = None
    if key is not None:
        raise DecodeError(f"duplicated key {key!r} makes the event ambiguous", data=_excerpt(raw),
                          pointer="/" + _escape(key), event_type=None if key == "type" else _type_of(value),
                          rule=_NOT_AN_EVENT)


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


def _may_repeat_keys(raw: bytes | str, value: dict[str, Any]) -> bool:
    if isinstance(raw, bytes):
        return any(raw.count(_needle(key)[1]) > 1 for key in value)
    return any(raw.count(_needle(key)[0]) > 1 for key in value)


def _excerpt(raw: bytes | str) -> str:
    text = raw if isinstance(raw, str) else raw[: _DATA_EXCERPT * 4].decode("utf-8", "replace")
    return text if len(text) <= _DATA_EXCERPT else text[:_DATA_EXCERPT] + "…"


def dump_json(value: Any) -> bytes:
    """Serialise JSON-ready data to compact UTF-8 bytes (lone surrogates become U+FFFD)."""
    if _orjson is not None:
        try:
            return bytes(_orjson.dumps(value))
        except TypeError:
            pass  # lone surrogates and big ints: the stdlib path below handles them
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        pass
    # Lone UTF-16 halves (a producer that slices strings by code unit) cannot be written as UTF-8.
    # Halves that are next to each other are one character again; the others become U+FFFD (the
    # "replace" error handler would write "?", and could make two different ids or keys one).
    warnings.warn(AguiWarning("lone UTF-16 surrogates in data to send were written as U+FFFD"), stacklevel=2)
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace").encode("utf-8")


def _string_problem(text: str) -> str | None:
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        # UTF-8 cannot carry a lone surrogate: sent, it would become "?" (or make the body invalid).
        return f"a lone surrogate U+{ord(text[exc.start]):04X} at character {exc.start} is not text JSON can carry"
    return None


def json_problem(value: Any) -> tuple[str, str] | None:
    """Where ``value`` stops being JSON, and why; ``None`` when all of it is JSON.

    JSON is ``None``, ``bool``, ``int``, a finite ``float``, ``str`` without lone surrogates, ``list`` or
    ``tuple``, and ``dict`` with ``str`` keys, nested. Anything else (a set, bytes, a datetime, ``NaN``,
    a non-string key, a container holding itself) is a problem: the encoders would refuse it, write
    invalid JSON, or silently change it (orjson writes ``NaN`` as ``null`` and a datetime as text).

    Args:
        value: the value to check (user input: a payload, ``state``, ``forwarded_props`` …).

    Returns:
        ``(pointer, reason)``: the JSON pointer of the first offending value in document order
        (``""`` for ``value`` itself) and what is wrong with it; or ``None``.
    """
    # Iterative, so a deep value cannot exhaust the stack; containers on the current path are
    # tracked so a cycle is reported instead of walked forever.
    on_path: set[int] = set()
    stack: list[tuple[Any, str, bool]] = [(value, "", False)]
    while stack:
        item, pointer, leaving = stack.pop()
        if leaving:
            on_path.discard(id(item))
            continue
        if item is None or isinstance(item, int):  # bool is an int
            continue
        if isinstance(item, str):
            reason = _string_problem(item)
            if reason is not None:
                return pointer, reason
            continue
        if isinstance(item, float):
            if item != item or item in _INFINITIES:
                return pointer, f"{item!r} is not a JSON number"
            continue
        if not isinstance(item, (dict, list, tuple)):
            return pointer, f"a value of type {type(item).__name__} is not JSON"
        if id(item) in on_path:
            return pointer, "the value contains itself"
        on_path.add(id(item))
        stack.append((item, pointer, True))
        children: list[tuple[Any, str, bool]] = []
        if isinstance(item, dict):
            for key, child in item.items():
                if not isinstance(key, str):
                    return pointer, f"key {key!r} is not a string (type {type(key).__name__}); JSON keys are strings"
                reason = _string_problem(key)
                if reason is not None:
                    return pointer, f"key {key!r}: {reason}"
                children.append((child, f"{pointer}/{_escape(key)}", False))
        else:
            children = [(child, f"{pointer}/{n}", False) for n, child in enumerate(item)]
        stack.extend(reversed(children))
    return None


# --------------------------------------------------------------------------------------------------
# The converter
# --------------------------------------------------------------------------------------------------


class _FieldError(ValueError):
    """A value of the wrong shape; ``pointer`` is relative to the object being structured."""

    def __init__(self, message: str, pointer: str = "") -> None:
        super().__init__(message)
        self.pointer = pointer


_JSON_CLASSES = (str, int, float, list, dict)


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if type(value) not in _JSON_CLASSES and isinstance(value, _JSON_CLASSES):
        # (a subclass reads as what it derives from; the decoder takes the JSON types exactly)
        base = next(cls for cls in _JSON_CLASSES if isinstance(value, cls))
        return f"a {type(value).__name__}, not a plain {base.__name__}"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _structure_str(value: Any, _: Any) -> str:
    if type(value) is str:
        return value
    raise _FieldError(f"expected a string, got {_describe(value)}")


def _structure_int(value: Any, _: Any) -> int:
    if type(value) is int and -_MAX_SAFE_INT <= value <= _MAX_SAFE_INT:
        return value
    if type(value) is int:
        raise _FieldError("integer outside ±(2^53-1)")
    raise _FieldError(f"expected an integer, got {_describe(value)}")


def _structure_bool(value: Any, _: Any) -> bool:
    if type(value) is bool:
        return value
    raise _FieldError(f"expected a boolean, got {_describe(value)}")


def _structure_object(value: Any, _: Any) -> dict[str, Any]:
    if type(value) is dict:
        return value
    raise _FieldError(f"expected an object, got {_describe(value)}")


def _structure_any(value: Any, _: Any) -> Any:
    return value


# Fields a 1.0 producer may still send as null from before the omission rule (UK-06): read as absent.
_LEGACY_NULLS: dict[type, frozenset[str]] = {
    ev.RunFinishedEvent: frozenset({"outcome", "result", "rawEvent", "usage"}),
    ev.ToolCallStartEvent: frozenset({"parentMessageId", "rawEvent"}),
    ev.ToolCallChunkEvent: frozenset({"parentMessageId", "rawEvent"}),
    ev.SubagentFinishedEvent: frozenset({"result", "outcome", "rawEvent"}),
    rn.RunAgentInput: frozenset({"state", "tools", "context", "forwardedProps", "resume", "parentRunId",
                                 "protocolVersion"}),
}
_ALWAYS_LEGACY_NULL = frozenset({"rawEvent"})

# Fields with a Python default that the wire still requires.
_WIRE_REQUIRED: dict[type, frozenset[str]] = {
    ev.ReasoningMessageStartEvent: frozenset({"role"}),
    rn.RunAgentInput: frozenset({"messages"}),
    msg.FunctionCall: frozenset({"arguments"}),
}


def _wire_name(a: attrs.Attribute[Any]) -> str:
    return camel(a.name)


def _tag_of(cls: type) -> tuple[str, str] | None:
    if hasattr(cls, "TYPE"):
        return "type", cls.TYPE
    if hasattr(cls, "ROLE"):
        return "role", cls.ROLE
    return None


def _make_converter() -> cattrs.Converter:
    conv = cattrs.Converter(detailed_validation=True)
    conv.register_structure_hook(str, _structure_str)
    conv.register_structure_hook(int, _structure_int)
    conv.register_structure_hook(bool, _structure_bool)
    conv.register_structure_hook_func(lambda t: t == dict[str, Any], _structure_object)
    conv.register_structure_hook_func(lambda t: t is Any, _structure_any)
    conv.register_structure_hook_factory(_is_homogeneous_tuple, lambda t: _tuple_hook(conv, t))
    conv.register_structure_hook_factory(_is_content, lambda t: _content_hook(conv))
    conv.register_structure_hook_factory(lambda t: t == msg.ContentPart, lambda t: _part_hook(conv))
    conv.register_structure_hook_factory(lambda t: t == msg.PartSource, lambda t: _source_hook(conv))
    conv.register_structure_hook_factory(lambda t: t == msg.Message, lambda t: _message_hook(conv))
    conv.register_structure_hook_factory(
        lambda t: t == rn.RunFinishedOutcome, lambda t: _outcome_hook(conv, _RUN_OUTCOMES, "run"))
    conv.register_structure_hook_factory(
        lambda t: t == rn.SubagentFinishedOutcome, lambda t: _outcome_hook(conv, _SUBAGENT_OUTCOMES, "subagent"))
    conv.register_structure_hook_factory(_is_literal, _literal_hook)
    conv.register_structure_hook_factory(attrs.has, lambda cls: _class_structure_hook(conv, cls))
    conv.register_structure_hook_factory(_is_optional, lambda t: _optional_hook(conv, t))

    conv.register_unstructure_hook(tuple, lambda value: [conv.unstructure(item) for item in value])
    conv.register_unstructure_hook_factory(attrs.has, lambda cls: _class_unstructure_hook(conv, cls))
    return conv


def _is_optional(t: Any) -> bool:
    args = get_args(t)
    return get_origin(t) in (Union, UnionType) and type(None) in args


def _optional_hook(conv: cattrs.Converter, t: Any) -> Callable[[Any, Any], Any]:
    rest = tuple(a for a in get_args(t) if a is not type(None))
    inner: Any = rest[0] if len(rest) == 1 else Union[rest]
    hook = conv.get_structure_hook(inner)

    def structure_optional(value: Any, _: Any) -> Any:
        # Nulls were already dropped (legacy) or refused by the class hook, so None never reaches here
        # from the wire; a Python caller's None stays None.
        return None if value is None else hook(value, inner)
    return structure_optional


def _is_homogeneous_tuple(t: Any) -> bool:
    args = get_args(t)
    return get_origin(t) is tuple and len(args) == 2 and args[1] is Ellipsis


def _tuple_hook(conv: cattrs.Converter, t: Any) -> Callable[[Any, Any], tuple[Any, ...]]:
    item_type = get_args(t)[0]
    if item_type is Any:
        def structure_json_list(value: Any, _: Any) -> tuple[Any, ...]:
            if type(value) is list:
                return tuple(value)
            raise _FieldError(f"expected an array, got {_describe(value)}")
        return structure_json_list
    item_hook = conv.get_structure_hook(item_type)
    dropping = item_type in (msg.ContentPart, msg.Message)

    def structure_list(value: Any, _: Any) -> tuple[Any, ...]:
        if type(value) is not list:
            raise _FieldError(f"expected an array, got {_describe(value)}")
        out = []
        for i, item in enumerate(value):
            try:
                structured = item_hook(item, item_type)
            except _FieldError as exc:
                raise _FieldError(str(exc), f"/{i}{exc.pointer}") from None
            except ClassValidationError as exc:
                pointer, message = _first_error(exc)
                raise _FieldError(message, f"/{i}{pointer}") from None
            if dropping and structured is _DROP:
                continue
            out.append(structured)
        return tuple(out)
    return structure_list


def _is_content(t: Any) -> bool:
    return bool(t == (str | tuple[msg.ContentPart, ...]) or t == Union[str, tuple[msg.ContentPart, ...]])


def _content_hook(conv: cattrs.Converter) -> Callable[[Any, Any], Any]:
    parts = conv.get_structure_hook(tuple[msg.ContentPart, ...])

    def structure_content(value: Any, _: Any) -> Any:
        if type(value) is str:
            return value
        if type(value) is list:
            return parts(value, tuple[msg.ContentPart, ...])
        raise _FieldError(f"expected a string or an array of content parts, got {_describe(value)}")
    return structure_content


class _Drop:
    def __repr__(self) -> str:
        return "<dropped>"


#: Returned by union hooks for an unrecognised member that its container drops (UK-04).
_DROP: Any = _Drop()

_PARTS: dict[str, type] = {c.TYPE: c for c in (msg.TextPart, msg.ImagePart, msg.AudioPart, msg.VideoPart,
                                               msg.DocumentPart)}
_SOURCES: dict[str, type] = {c.TYPE: c for c in (msg.DataSource, msg.UrlSource, msg.FileSource)}
_MESSAGES: dict[str, type] = {c.ROLE: c for c in (msg.DeveloperMessage, msg.SystemMessage, msg.AssistantMessage,
                                                  msg.UserMessage, msg.ToolMessage, msg.ActivityMessage,
                                                  msg.ReasoningMessage)}
_RUN_OUTCOMES: dict[str, type] = {c.TYPE: c for c in (rn.RunFinishedSuccessOutcome, rn.RunFinishedInterruptOutcome,
                                                      rn.RunFinishedCancelledOutcome)}
_SUBAGENT_OUTCOMES: dict[str, type] = {c.TYPE: c for c in (rn.SubagentFinishedSuccessOutcome,
                                                           rn.SubagentFinishedSuspendedOutcome)}


def _tagged(conv: cattrs.Converter, table: dict[str, type], tag: str, what: str,
            on_unknown: Callable[[Any], Any]) -> Callable[[Any, Any], Any]:
    hooks = {name: conv.get_structure_hook(cls) for name, cls in table.items()}

    def structure_tagged(value: Any, _: Any) -> Any:
        if type(value) is not dict:
            raise _FieldError(f"expected {what} object, got {_describe(value)}")
        name = value.get(tag)
        if type(name) is not str:
            raise _FieldError(f"{what} needs a string {tag!r}", f"/{tag}")
        cls = table.get(name)
        if cls is None:
            return on_unknown(value)
        return hooks[name](value, cls)
    return structure_tagged


def _part_hook(conv: cattrs.Converter) -> Callable[[Any, Any], Any]:
    def unknown(value: dict[str, Any]) -> Any:
        _warn("UK-04", f"content part of unknown type {value['type']!r} dropped", once=("part", value["type"]),
              repeat=DROP_WARNINGS)
        return _DROP
    return _tagged(conv, _PARTS, "type", "a content part", unknown)


def _source_hook(conv: cattrs.Converter) -> Callable[[Any, Any], Any]:
    def unknown(value: dict[str, Any]) -> Any:
        raise _FieldError(f"unknown content source type {value['type']!r}", "/type")
    return _tagged(conv, _SOURCES, "type", "a content source", unknown)


def _message_hook(conv: cattrs.Converter) -> Callable[[Any, Any], Any]:
    def unknown(value: dict[str, Any]) -> Any:
        _warn("MS-05", f"message {value.get('id')!r} with unknown role {value['role']!r} dropped",
              once=("role", value["role"]), repeat=DROP_WARNINGS)
        return _DROP
    return _tagged(conv, _MESSAGES, "role", "a message", unknown)


def _outcome_hook(conv: cattrs.Converter, table: dict[str, type], kind: str) -> Callable[[Any, Any], Any]:
    success = table["success"]

    def unknown(value: dict[str, Any]) -> Any:
        # LC-10 / SA-07: a 1.0 consumer strips an outcome it does not recognise and reads success.
        _warn("LC-10" if kind == "run" else "SA-07",
              f"unknown {kind} outcome type {value['type']!r} read as success", pointer="/outcome",
              once=("outcome", kind, value["type"]), repeat=DROP_WARNINGS)
        return success()
    return _tagged(conv, table, "type", f"a {kind} outcome", unknown)


def _is_literal(t: Any) -> bool:
    return get_origin(t) is Literal


def _literal_hook(t: Any) -> Callable[[Any, Any], Any]:
    allowed = get_args(t)

    def structure_literal(value: Any, _: Any) -> Any:
        if type(value) is str and value in allowed:
            return value
        raise _FieldError(f"expected one of {', '.join(map(repr, allowed))}, got {value!r}")
    return structure_literal


def _class_structure_hook(conv: cattrs.Converter, cls: type) -> Callable[[Any, Any], Any]:
    fields = attrs.fields(cls)
    attrs.resolve_types(cls)
    overrides = {a.name: override(rename=_wire_name(a)) for a in fields}
    generated: Callable[[Any, Any], Any] = make_dict_structure_fn(
        cls, conv, _cattrs_forbid_extra_keys=False, **overrides)  # type: ignore[arg-type]
    known = frozenset(_wire_name(a) for a in fields) | ({"type", "role"} if _tag_of(cls) else set())
    tag = _tag_of(cls)
    legacy = _LEGACY_NULLS.get(cls, frozenset()) | _ALWAYS_LEGACY_NULL
    # A required free-form JSON field (STATE_SNAPSHOT.snapshot, CUSTOM.value, RAW.event) may be null:
    # null is a value there (SP-01, UK-12), not an absent optional field.
    nullable = frozenset(_wire_name(a) for a in fields if a.default is attrs.NOTHING and a.type is Any)
    wire_required = _WIRE_REQUIRED.get(cls, frozenset())
    cls_name = tag[1] if tag else cls.__name__
    # (an outcome, a content part is tagged by "type" too: its warnings take their event's type later)
    is_event = cls in ev.EVENT_TYPES.values()
    specific = _SPECIFIC_CHECKS.get(cls)

    def structure(value: Any, _: Any) -> Any:
        if type(value) is not dict:
            raise _FieldError(f"expected an object, got {_describe(value)}")
        if None in value.values():
            value = _drop_nulls(value, legacy, nullable, cls_name, known)
        if specific is not None:
            value = specific(value) or value
        if not value.keys() <= known:
            for key in value.keys() - known:
                _warn("UK-03", f"unknown field {key!r} on {cls_name} ignored", pointer="/" + _escape(key),
                      event_type=cls_name if is_event else None, once=("field", cls_name, key))
        for key in wire_required:
            if key not in value:
                raise _FieldError(f"required field {key!r} is missing", "/" + key)
        return generated(value, cls)
    return structure


def _drop_nulls(value: dict[str, Any], legacy: frozenset[str], nullable: frozenset[str],
                where: str, known: Any) -> dict[str, Any]:
    cleaned = {}
    for key, item in value.items():
        # (a field this release does not know is ignored with a warning whatever its value, null
        # included: UK-03 makes unknown members tolerated, never fatal)
        if item is None and key not in nullable and key in known:
            if key in legacy:
                _warn("UK-06", f"legacy null {key!r} on {where} read as absent", pointer="/" + _escape(key),
                      once=("null", where, key))
                continue
            raise _FieldError(f"{key!r} must be absent or a value, not null", "/" + _escape(key))
        cleaned[key] = item
    return cleaned


_POINTER = re.compile(r"^(/([^/~]|~[01])*)*$")
_PATCH_OPS = {"add": ("value",), "remove": (), "replace": ("value",), "move": ("from",), "copy": ("from",),
              "test": ("value",)}


def _check_patch(patch: Any, field_name: str) -> list[Any] | None:
    """Validate a JSON Patch's shape (``None``: the event keeps the patch as it came).

    An operation JSON Patch does not define (``merge``) is kept: the patch is then not applied at all
    (SP-07 / AGUI303, warned by the fold), rather than applied without it (the reference's UK-04 reading).
    """
    if type(patch) is not list:
        raise _FieldError(f"expected a JSON Patch array, got {_describe(patch)}", f"/{field_name}")
    for i, op in enumerate(patch):
        where = f"/{field_name}/{i}"
        if type(op) is not dict:
            raise _FieldError(f"expected a patch operation object, got {_describe(op)}", where)
        name = op.get("op")
        if type(name) is not str:  # before the membership test: a list or an object is unhashable
            raise _FieldError(f"a patch operation needs a string 'op', got {_describe(name)}", f"{where}/op")
        if name not in _PATCH_OPS:
            continue
        path = op.get("path")
        if type(path) is not str or not _POINTER.fullmatch(path):
            raise _FieldError(f"invalid JSON pointer {path!r}", f"{where}/path")
        for member in _PATCH_OPS[name]:
            if member not in op:
                raise _FieldError(f"{name!r} operation needs {member!r}", f"{where}/{member}")
            if member == "from" and (type(op["from"]) is not str or not _POINTER.fullmatch(op["from"])):
                raise _FieldError(f"invalid JSON pointer {op['from']!r}", f"{where}/from")
    return None


def _check_state_delta(value: dict[str, Any]) -> dict[str, Any] | None:
    if "delta" in value:
        kept = _check_patch(value["delta"], "delta")
        if kept is not None:
            return {**value, "delta": kept}
    return None


def _check_activity_delta(value: dict[str, Any]) -> dict[str, Any] | None:
    if "patch" in value:
        kept = _check_patch(value["patch"], "patch")
        if kept is not None:
            return {**value, "patch": kept}
    return None


def _check_success_outcome(value: dict[str, Any]) -> None:
    if "interrupts" in value:
        # IR-03: the success outcome is closed; carrying interrupts is a contradiction, never a success.
        raise _FieldError("a success outcome cannot carry interrupts", "/interrupts")


def _check_cancelled_outcome(value: dict[str, Any]) -> None:
    if "interrupts" in value:
        raise _FieldError("a cancelled outcome cannot carry interrupts", "/interrupts")


def _check_interrupt_outcome(value: dict[str, Any]) -> None:
    interrupts = value.get("interrupts")
    if type(interrupts) is list and not interrupts:
        raise _FieldError("an interrupt outcome needs at least one interrupt", "/interrupts")


def _check_suspended(value: dict[str, Any]) -> None:
    ids = value.get("interruptIds")
    if type(ids) is list:
        for i, item in enumerate(ids):
            if type(item) is not str:
                raise _FieldError(f"expected a string, got {_describe(item)}", f"/interruptIds/{i}")


def _check_usage(value: dict[str, Any]) -> None:
    for key, item in value.items():
        if key in ("provider", "model"):
            continue
        if type(item) is int and item < 0:
            raise _FieldError("token counts are never negative", "/" + key)


def _check_run_usage(value: dict[str, Any]) -> dict[str, Any] | None:
    """B282/B283/B285, a deliberate deviation from the reference (which fails the run): token usage is
    telemetry and must not cost a RUN_FINISHED its outcome and interrupts, nor a RUN_ERROR its failure.
    A ``usage`` that is not an array is dropped whole, an entry the schema refuses is dropped alone,
    each with a warning at its pointer; the rest of the event is read as usual.
    """
    if "usage" not in value:
        return None
    usage = value["usage"]
    kind = value.get("type")
    event_type = kind if type(kind) is str else None
    if type(usage) is not list:
        _warn("TU-01/B285", f"usage must be an array of entries, got {_describe(usage)}: dropped", pointer="/usage",
              event_type=event_type)
        return {key: item for key, item in value.items() if key != "usage"}
    kept: list[Any] = []
    for i, entry in enumerate(usage):
        fault = _usage_entry_fault(entry)
        if fault is not None:
            pointer, message = fault
            _warn("TU-04/B282", f"usage entry dropped: {message}", pointer=f"/usage/{i}{pointer}",
                  event_type=event_type)
            continue
        kept.append(entry)
        for field_name, message in _usage_parts_faults(entry):
            _warn("TU-02/B287", message, pointer=f"/usage/{i}/{field_name}", event_type=event_type)
    return None if len(kept) == len(usage) else {**value, "usage": kept}


def _usage_entry_fault(entry: Any) -> tuple[str, str] | None:
    """Why the schema refuses one usage entry (pointer within the entry, message), or ``None``."""
    # The entry's own warnings (an unknown key) are reported when it is read for real, not twice.
    token = _SINK.set(WarningSink())
    try:
        _converter.structure(entry, rn.TokenUsage)
    except _FieldError as exc:
        return exc.pointer, str(exc)
    except ClassValidationError as exc:
        return _first_error(exc)
    finally:
        _SINK.reset(token)
    return None


#: Each part of a total (TU-02): reasoning is part of output, cached input part of input.
_USAGE_PARTS = (("reasoningTokens", "outputTokens"), ("cachedInputTokens", "inputTokens"))


def _usage_parts_faults(entry: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Each part of a total that exceeds its total in a well-formed wire usage entry, as (its wire name,
    a message); empty for a consistent entry.

    Reasoning tokens are part of the output, cached and cache-write input tokens disjoint parts of the
    input (TU-02). A part larger than its total contradicts the entry; it is reported (B287), never
    added to anything: totals are summed from the totals alone.
    """
    faults = []
    for part, total in _USAGE_PARTS:
        counted, whole = entry.get(part), entry.get(total)
        if counted is not None and whole is not None and counted > whole:
            faults.append((part, f"{part} ({counted}) exceeds {total} ({whole}), of which it is a part"))
    written, cached, whole = (entry.get(key) for key in ("cacheWriteInputTokens", "cachedInputTokens", "inputTokens"))
    if written is not None and whole is not None and written + (cached or 0) > whole:
        faults.append(("cacheWriteInputTokens", f"cacheWriteInputTokens ({written}) and cachedInputTokens "
                       f"({cached or 0}) exceed inputTokens ({whole}), of which they are disjoint parts"))
    return faults


def _plain_run_usage(value: dict[str, Any]) -> bool:
    """``_check_run_usage`` passes silently: run after the fast path built every entry (so each is a
    well-formed object), it only has to rule out a part exceeding its total."""
    usage = value.get("usage")
    if usage is None:
        return True
    for entry in usage:
        if _usage_parts_faults(entry):
            return False
    return True


def _check_tool_call(value: dict[str, Any]) -> None:
    kind = value.get("type", "function")
    if kind != "function":
        raise _FieldError(f"a tool call's type must be 'function', got {kind!r}", "/type")


#: Checks beyond the field types, run before a class is structured. A check that can pass silently
#: needs a pure twin in ``_FAST_CHECKS``, or the class loses its fast path.
_SPECIFIC_CHECKS: dict[type, Callable[[dict[str, Any]], dict[str, Any] | None]] = {
    msg.ToolCall: _check_tool_call,
    ev.StateDeltaEvent: _check_state_delta,
    ev.ActivityDeltaEvent: _check_activity_delta,
    rn.RunFinishedSuccessOutcome: _check_success_outcome,
    rn.RunFinishedCancelledOutcome: _check_cancelled_outcome,
    rn.RunFinishedInterruptOutcome: _check_interrupt_outcome,
    rn.SubagentFinishedSuspendedOutcome: _check_suspended,
    rn.TokenUsage: _check_usage,
    ev.RunFinishedEvent: _check_run_usage,
    ev.RunErrorEvent: _check_run_usage,
}


def _class_unstructure_hook(conv: cattrs.Converter, cls: type) -> Callable[[Any], Any]:
    if cls is UnknownEvent:
        return lambda event: dict(event.raw)
    attrs.resolve_types(cls)
    overrides: dict[str, Any] = {}
    for a in attrs.fields(cls):
        kwargs: dict[str, Any] = {"rename": _wire_name(a)}
        if a.default is None:
            kwargs["omit_if_default"] = True
        if a.type is Any or a.type == dict[str, Any] or a.type == (dict[str, Any] | None):
            kwargs["unstruct_hook"] = _identity
        overrides[a.name] = override(**kwargs)
    generated: Callable[[Any], Any] = make_dict_unstructure_fn(cls, conv, **overrides)
    tag = _tag_of(cls)
    if tag is None:
        return generated
    key, name = tag

    def unstructure(obj: Any) -> dict[str, Any]:
        return {key: name, **generated(obj)}
    return unstructure


def _identity(value: Any) -> Any:
    return value


_converter = _make_converter()


# --------------------------------------------------------------------------------------------------
# Errors with JSON pointers
# --------------------------------------------------------------------------------------------------


def _first_error(exc: BaseException) -> tuple[str, str]:
    """The first leaf of a cattrs error tree as (JSON pointer, message)."""
    if isinstance(exc, (ClassValidationError, IterableValidationError)):
        for sub in exc.exceptions:
            segment = ""
            for note in getattr(sub, "__notes__", ()):
                name = getattr(note, "name", None)
                index = getattr(note, "index", None)
                if name is not None:
                    segment = "/" + camel(str(name))
                    break
                if index is not None:
                    segment = f"/{index}"
                    break
            pointer, message = _first_error(sub)
            if isinstance(sub, KeyError) and not isinstance(sub, _FieldError):
                return segment, f"required field {segment[1:]!r} is missing"
            return segment + pointer, message
        return "", str(exc)
    if isinstance(exc, _FieldError):
        return exc.pointer, str(exc)
    if isinstance(exc, ForbiddenExtraKeysError):
        return "", str(exc)
    return "", str(exc) or type(exc).__name__


def _structure(value: Any, cls: Any, *, event_type: str | None = None) -> Any:
    try:
        return _converter.structure(value, cls)
    except _FieldError as exc:
        raise DecodeError(str(exc), pointer=exc.pointer, event_type=event_type, rule=_MALFORMED) from None
    except ClassValidationError as exc:
        pointer, message = _first_error(exc)
        raise DecodeError(message, pointer=pointer, event_type=event_type, rule=_MALFORMED) from None


# --------------------------------------------------------------------------------------------------
# Fast paths: the plain shape, built directly
# --------------------------------------------------------------------------------------------------
#
# Most of a stream is small events of a known type in their plain shape: every key a field, every
# value of its JSON type, no null, no unknown union member. For each wire class a function generated
# once builds the attrs instance straight from that shape. On anything else (an unknown key, a null,
# a wrong type, an unknown tag, a value a check would refuse or warn about) it raises ``_Fallback``
# and the checked cattrs path above decides. So the fast path accepts only what the checked path
# accepts, builds the same instance, and never warns or refuses anything itself.


class _Fallback(Exception):
    """The value is not in the plain shape: take the checked path."""


def _fast_json_list(value: Any) -> tuple[Any, ...]:
    if type(value) is not list:
        raise _Fallback
    return tuple(value)


def _fast_str_list(value: Any) -> tuple[str, ...]:
    if type(value) is not list:
        raise _Fallback
    for item in value:
        if type(item) is not str:
            raise _Fallback
    return tuple(value)


def _fast_list(item: Callable[[Any], Any]) -> Callable[[Any], tuple[Any, ...]]:
    shapes = _SHAPES.get(item)
    if shapes is None:
        def fast_list(value: Any) -> tuple[Any, ...]:
            if type(value) is not list:
                raise _Fallback
            return tuple(map(item, value))
        return fast_list
    shape_of = shapes.get

    def fast_class_list(value: Any) -> tuple[Any, ...]:
        # A list of one class (an assistant's tool calls): a shape already compiled is built without
        # going through the class's own dispatch, which compiles new shapes within its budget.
        if type(value) is not list:
            raise _Fallback
        out: list[Any] = []
        append = out.append
        for element in value:
            if type(element) is not dict:
                raise _Fallback
            built = shape_of(tuple(element))
            append(item(element) if built is None else built(element))
        return tuple(out)
    return fast_class_list


def _fast_members(table: dict[str, type]) -> dict[str, Callable[[Any], Any]] | None:
    """Each tag's fast builder, or ``None`` when a member has none (the union then has none either)."""
    members: dict[str, Callable[[Any], Any]] = {}
    for name, cls in table.items():
        member = _fast_for(cls)
        if member is None:
            return None
        members[name] = member
    return members


def _fast_union(table: dict[str, type], tag: str) -> Callable[[Any], Any] | None:
    members = _fast_members(table)
    if members is None:
        return None
    get = members.get

    def fast_union(value: Any) -> Any:
        if type(value) is not dict:
            raise _Fallback
        name = value.get(tag)
        member = get(name) if type(name) is str else None
        if member is None:
            raise _Fallback
        return member(value)
    return fast_union


def _fast_union_list(table: dict[str, type], tag: str) -> Callable[[Any], Any] | None:
    """``_fast_list(_fast_union(...))`` in one loop: a snapshot holds thousands of messages."""
    members = _fast_members(table)
    if members is None:
        return None
    get = members.get
    # Each member's compiled shapes, looked up here: a shape already compiled is built without
    # going through the member's own dispatch (which compiles new shapes, within its budget).
    shapes_of = {name: _SHAPES.get(member, {}) for name, member in members.items()}.get
    empty: dict[tuple[str, ...], Callable[[Any], Any]] = {}

    def fast_union_list(value: Any) -> tuple[Any, ...]:
        if type(value) is not list:
            raise _Fallback
        out: list[Any] = []
        append = out.append
        for item in value:
            if type(item) is not dict:
                raise _Fallback
            name = item.get(tag)
            if type(name) is not str:
                raise _Fallback
            built = shapes_of(name, empty).get(tuple(item))
            if built is not None:
                append(built(item))
                continue
            member = get(name)
            if member is None:
                raise _Fallback
            append(member(item))
        return tuple(out)
    return fast_union_list


def _plain_pointer(path: Any) -> bool:
    """``_POINTER.fullmatch(path)`` without the regex: "" or "/…" where every "~" starts "~0" or "~1"."""
    return type(path) is str and (path == "" or (path[0] == "/" and (
        "~" not in path or path.count("~") == path.count("~0") + path.count("~1"))))


def plain_patch(patch: Any) -> bool:
    """``_check_patch`` would accept ``patch`` without dropping or warning about anything."""
    for op in patch:
        if type(op) is not dict:
            return False
        name = op.get("op")
        if name == "add" or name == "replace" or name == "test":
            if "value" not in op:
                return False
        elif name == "move" or name == "copy":
            if not _plain_pointer(op.get("from")):
                return False
        elif name != "remove":
            return False
        path = op.get("path")  # _plain_pointer, inlined: this runs for every op of every delta
        if type(path) is not str or (path and (path[0] != "/" or (
                "~" in path and path.count("~") != path.count("~0") + path.count("~1")))):
            return False
    return True


def _plain_state_delta(value: dict[str, Any]) -> bool:
    return plain_patch(value["delta"])


def _plain_activity_delta(value: dict[str, Any]) -> bool:
    return plain_patch(value["patch"])


def _passes(value: dict[str, Any]) -> bool:
    """The fast check of a class whose specific check the plain shape always passes (never called)."""
    return True


#: For each class with a ``_SPECIFIC_CHECKS`` entry, a predicate true when that check passes silently
#: (no error, no warning, no change). A class with a check but no predicate here has no fast path.
_FAST_CHECKS: dict[type, Callable[[dict[str, Any]], bool]] = {
    ev.StateDeltaEvent: _plain_state_delta,
    ev.ActivityDeltaEvent: _plain_activity_delta,
    rn.RunFinishedSuccessOutcome: lambda value: "interrupts" not in value,
    rn.RunFinishedCancelledOutcome: lambda value: "interrupts" not in value,
    rn.RunFinishedInterruptOutcome: lambda value: len(value["interrupts"]) > 0,
    rn.SubagentFinishedSuspendedOutcome: _passes,  # the ids are checked as tuple[str, ...]
    rn.TokenUsage: _passes,  # counts are checked against a lower bound of 0 (_FAST_INT_MIN)
    ev.RunFinishedEvent: _plain_run_usage,
    ev.RunErrorEvent: _plain_run_usage,
    msg.ToolCall: _passes,  # the "type" tag is checked like any tag
}
_FAST_INT_MIN: dict[type, int] = {rn.TokenUsage: 0}
#: Classes whose tag value the checked path verifies (``_check_tool_call``).
_CHECKED_TAGS: frozenset[type] = frozenset({msg.ToolCall})

_FAST: dict[Any, Callable[[Any], Any] | None] = {}


def _fast_for(t: Any) -> Callable[[Any], Any] | None:
    """The fast builder for a wire type (class, tagged union or tuple of them), or ``None``."""
    try:
        return _FAST[t]
    except KeyError:
        pass
    # Unions compare with ==: typing caches Union objects only so long, so an equal one may be a new object.
    if t == msg.ContentPart:
        fast = _fast_union(_PARTS, "type")
    elif t == msg.PartSource:
        fast = _fast_union(_SOURCES, "type")
    elif t == msg.Message:
        fast = _fast_union(_MESSAGES, "role")
    elif t == rn.RunFinishedOutcome:
        fast = _fast_union(_RUN_OUTCOMES, "type")
    elif t == rn.SubagentFinishedOutcome:
        fast = _fast_union(_SUBAGENT_OUTCOMES, "type")
    elif _is_homogeneous_tuple(t) and get_args(t)[0] == msg.Message:
        fast = _fast_union_list(_MESSAGES, "role")
    elif _is_homogeneous_tuple(t) and get_args(t)[0] == msg.ContentPart:
        fast = _fast_union_list(_PARTS, "type")
    elif _is_homogeneous_tuple(t):
        item = _fast_for(get_args(t)[0])
        fast = None if item is None else _fast_list(item)
    elif isinstance(t, type) and attrs.has(t):
        fast = _fast_class(t)
    else:
        fast = None
    _FAST[t] = fast
    return fast


def _fast_field(t: Any, int_min: int) -> tuple[str, Any] | None:
    """How the fast path reads a (non-None) field type: ``("any", None)``, ``("check", expression over
    {x})``, ``("literal", allowed strings)`` or ``("call", builder)``; ``None`` when it cannot."""
    if t is Any:
        return "any", None
    if t is str:
        return "check", "type({x}) is str"
    if t is bool:
        return "check", "type({x}) is bool"
    if t is int:
        return "check", f"type({{x}}) is int and {int_min} <= {{x}} <= {_MAX_SAFE_INT}"
    if t == dict[str, Any]:
        return "check", "type({x}) is dict"
    if _is_literal(t):
        allowed = get_args(t)
        if not all(type(a) is str for a in allowed):
            return None
        return "literal", frozenset(allowed)
    if _is_homogeneous_tuple(t) and get_args(t)[0] is Any:
        return "call", _fast_json_list
    if _is_homogeneous_tuple(t) and get_args(t)[0] is str:
        return "call", _fast_str_list
    if _is_content(t):
        parts = _fast_for(tuple[msg.ContentPart, ...])
        return None if parts is None else ("content", parts)
    builder = _fast_for(t)
    return None if builder is None else ("call", builder)


@attrs.frozen
class _FastField:
    """How the fast path reads one field of a class."""

    name: str  # the ``__init__`` keyword
    kind: str  # "any" | "check" | "call" | "content"
    check: str  # for "check": an expression over {x}
    helper: Any  # for "call": the builder; for a literal: the allowed strings
    required: bool


#: Shapes compiled per class; a producer sends a handful (optional fields present or not).
_MAX_SHAPES = 64


def _fast_class(cls: type) -> Callable[[Any], Any] | None:
    """A builder for ``cls`` specialised on the *shape* of the object (its keys, in order).

    Each shape seen gets its own generated function that reads exactly those keys and passes exactly
    those keywords (attrs fills the defaults), which is much cheaper than probing every field.
    """
    if cls is UnknownEvent or (cls in _SPECIFIC_CHECKS and cls not in _FAST_CHECKS):
        return None
    attrs.resolve_types(cls)
    wire_required = _WIRE_REQUIRED.get(cls, frozenset())
    int_min = _FAST_INT_MIN.get(cls, -_MAX_SAFE_INT)
    specs: dict[str, _FastField] = {}
    for a in attrs.fields(cls):
        if isinstance(a.default, attrs.Factory):  # type: ignore[arg-type]
            return None
        optional_type = _is_optional(a.type)
        inner: Any = a.type
        if optional_type:
            rest = tuple(arg for arg in get_args(a.type) if arg is not type(None))
            inner = rest[0] if len(rest) == 1 else Union[rest]  # noqa: UP007 - a runtime union object
        how = _fast_field(inner, int_min)
        required = a.default is attrs.NOTHING or _wire_name(a) in wire_required
        if how is None or (required and optional_type):
            return None
        kind, detail = how
        if kind == "literal":
            specs[_wire_name(a)] = _FastField(a.alias or a.name, "check", "type({x}) is str and {x} in {h}", detail,
                                              required)
        elif kind == "check":
            specs[_wire_name(a)] = _FastField(a.alias or a.name, "check", detail, None, required)
        else:
            specs[_wire_name(a)] = _FastField(a.alias or a.name, kind, "", detail, required)
    tag = _tag_of(cls)
    tags: dict[str, str | None] = {}  # tag keys that are not fields -> the value they must have (or any)
    if tag is not None:
        if tag[0] not in specs:
            # the checked path only refuses a wrong tag where a union did not already dispatch on it
            tags[tag[0]] = tag[1] if cls in _CHECKED_TAGS else None
        for other in ("type", "role"):
            if other not in specs and other not in tags:
                tags[other] = None
    required_keys = frozenset(key for key, spec in specs.items() if spec.required)
    check = _FAST_CHECKS.get(cls)
    shapes: dict[tuple[str, ...], Callable[[Any], Any]] = {}

    def for_shape(shape: tuple[str, ...]) -> Callable[[Any], Any]:
        if not required_keys <= set(shape) or not all(key in specs or key in tags for key in shape):
            return _always_fallback  # a required field is missing or a key is unknown: the checked path says so
        namespace: dict[str, Any] = {"FB": _Fallback, "cls": cls, "check": check}
        lines = ["def fast(v):"]
        arguments: list[tuple[str, str]] = []
        for i, key in enumerate(shape):
            x = f"x{i}"
            if key in tags:
                if tags[key] is not None:
                    lines.append(f"    if v[{key!r}] != {tags[key]!r}: raise FB")
                else:
                    lines.append(f"    if v[{key!r}] is None: raise FB")  # the checked path refuses a null tag
                continue
            spec = specs[key]
            lines.append(f"    {x} = v[{key!r}]")
            _emit_field(lines, namespace, spec, x, i, "    ")
            arguments.append((spec.name, x))
        if check is not None and check is not _passes:
            lines.append("    if not check(v): raise FB")
        if setters is None:
            lines.append(f"    return cls({', '.join(f'{name}={x}' for name, x in arguments)})")
        else:
            lines += _emit_construction(namespace, setters, dict(arguments))
        exec("\n".join(lines), namespace)  # noqa: S102 - generated from the class's own fields
        built: Callable[[Any], Any] = namespace["fast"]
        return built

    generic = _generic_builder(cls, specs, tags, check)
    setters = _slot_setters(cls)

    def fast(value: Any) -> Any:
        if type(value) is not dict:
            raise _Fallback
        shape = tuple(value)
        built = shapes.get(shape)
        if built is None:
            if len(shapes) >= _MAX_SHAPES:
                return generic(value)  # never compile per event: past the budget, one builder for all shapes
            built = shapes[shape] = for_shape(shape)
        return built(value)
    _SHAPES[fast] = shapes
    return fast


#: A class builder's compiled shapes (shape -> builder), for callers that look a shape up themselves.
_SHAPES: dict[Callable[[Any], Any], dict[tuple[str, ...], Callable[[Any], Any]]] = {}


def _slot_setters(cls: type) -> list[tuple[str, Any, Any]] | None:
    """Per field of ``cls``, in order: its ``__init__`` keyword, its slot's setter and its default.

    A frozen attrs ``__init__`` sets each field through ``object.__setattr__``; a generated builder
    that fills the slots directly makes the same instance for about half the cost. Only for a plain
    slotted class, whose ``__init__`` does nothing else (no validator, converter, factory or hook);
    ``None`` otherwise.
    """
    if not attrs.has(cls) or "__attrs_post_init__" in vars(cls) or "__attrs_pre_init__" in vars(cls):
        return None
    fields = attrs.fields(cls)
    slots = vars(cls).get("__slots__")
    if slots is None or set(slots) - {"__weakref__"} != {a.name for a in fields}:
        return None  # not slotted, or extra slots (a cached hash) that __init__ would fill
    setters = []
    for a in fields:
        if not a.init or a.validator is not None or a.converter is not None \
                or isinstance(a.default, attrs.Factory):  # type: ignore[arg-type]
            return None
        descriptor = vars(cls).get(a.name)
        if descriptor is None or type(descriptor).__name__ != "member_descriptor":
            return None
        setters.append((a.alias or a.name, descriptor.__set__, a.default))
    return setters


def _emit_construction(namespace: dict[str, Any], setters: list[tuple[str, Any, Any]],
                       given: dict[str, str]) -> list[str]:
    """Generated lines building the instance slot by slot: given keywords, else the defaults."""
    namespace["new"] = object.__new__
    lines = ["    o = new(cls)"]
    for j, (name, setter, default) in enumerate(setters):
        namespace[f"s{j}"] = setter
        if name in given:
            lines.append(f"    s{j}(o, {given[name]})")
        else:
            namespace[f"d{j}"] = default
            lines.append(f"    s{j}(o, d{j})")
    lines.append("    return o")
    return lines


def _emit_field(lines: list[str], namespace: dict[str, Any], spec: _FastField, x: str, i: int, pad: str) -> None:
    """The generated lines that check (or convert) field ``x``, the same in every fast builder."""
    if spec.kind == "any":
        if not spec.required:
            lines.append(f"{pad}if {x} is None: raise FB")
    elif spec.kind == "check":
        namespace[f"h{i}"] = spec.helper
        lines.append(f"{pad}if not ({spec.check.format(x=x, h=f'h{i}')}): raise FB")
    elif spec.kind == "content":  # a string as it is, else content parts (no call for the common string)
        namespace[f"c{i}"] = spec.helper
        lines.append(f"{pad}if type({x}) is not str: {x} = c{i}({x})")
    elif spec.helper in _SHAPES:
        # A nested object (a tool call's function): its shape, if compiled, is built without a call
        # through the class's dispatch; anything else goes through it (which decides, or compiles).
        namespace[f"c{i}"] = spec.helper
        namespace[f"k{i}"] = _SHAPES[spec.helper].get
        lines += [f"{pad}if type({x}) is not dict: raise FB",
                  f"{pad}b{i} = k{i}(tuple({x}))",
                  f"{pad}{x} = c{i}({x}) if b{i} is None else b{i}({x})"]
    else:
        namespace[f"c{i}"] = spec.helper
        lines.append(f"{pad}{x} = c{i}({x})")


def _generic_builder(cls: type, specs: dict[str, _FastField], tags: dict[str, str | None],
                     check: Callable[[dict[str, Any]], bool] | None) -> Callable[[Any], Any]:
    """The fast builder for any shape of ``cls``: probes every field (slower than a shape's own)."""
    namespace: dict[str, Any] = {"FB": _Fallback, "cls": builder(cls), "check": check, "M": _ABSENT}
    lines = ["def fast(v):", "    g = v.get", "    n = 0", "    kw = {}"]
    required = 0
    for i, (key, spec) in enumerate(specs.items()):
        x = f"x{i}"
        lines.append(f"    {x} = g({key!r}, M)")
        if spec.required:
            required += 1
            lines.append(f"    if {x} is M: raise FB")
        else:
            lines += [f"    if {x} is not M:", "        n += 1"]
        pad = "    " if spec.required else "        "
        _emit_field(lines, namespace, spec, x, i, pad)
        lines.append(f"{pad}kw[{spec.name!r}] = {x}")
    for i, (key, expected) in enumerate(tags.items()):
        lines += [f"    t{i} = g({key!r}, M)", f"    if t{i} is not M:", "        n += 1"]
        if expected is not None:
            lines.append(f"        if t{i} != {expected!r}: raise FB")
        else:
            lines.append(f"        if t{i} is None: raise FB")
    lines.append(f"    if len(v) != n + {required}: raise FB")  # an unknown key: the checked path warns
    if check is not None and check is not _passes:
        lines.append("    if not check(v): raise FB")
    lines.append("    return cls(**kw)")
    exec("\n".join(lines), namespace)  # noqa: S102 - generated from the class's own fields
    built: Callable[[Any], Any] = namespace["fast"]
    return built


_ABSENT: Any = _Drop()


def _always_fallback(value: Any) -> Any:
    raise _Fallback


# --------------------------------------------------------------------------------------------------
# A large MESSAGES_SNAPSHOT, read slice by slice
# --------------------------------------------------------------------------------------------------
#
# Parsed whole, a snapshot of thousands of messages exists three times over while it is decoded:
# orjson's working memory (about 15x the text), the tree of dicts, and the typed messages; and the
# tree's thousands of containers, all alive at once, make the cyclic GC walk them again and again.
# Read as slices of whole messages, each slice's dicts die as soon as its messages are built.
#
# Where a slice may end: ``},{"`` never occurs inside a JSON string (the quote would be escaped), so
# it always separates two objects; but they may be nested inside a message (two tool calls). The
# slice up to such a ``}`` is parsed as ``[`` + slice + ``]``: that is valid JSON exactly when the
# slice is a sequence of whole values, i.e. when the ``}`` closes a message; otherwise the next
# candidate is tried. Each slice, and the rest of the object with the head put back, must then prove
# what parse_json proves, more strictly: no long digit run, a depth orjson can write back, and the
# colon count of the written-back value (no duplicated key anywhere, so the general path's gate on
# nested duplicates can never matter). Any doubt (or any message not in the plain shape) returns
# ``None`` and the general path reads the whole payload and alone decides errors and warnings.

_SNAPSHOT_HEAD = b'{"type":"MESSAGES_SNAPSHOT","messages":['
#: Payloads below this size are read whole.
_SLICED_MIN = 256 * 1024
#: The messages of one slice span at least this many bytes (a slice ends at the next message end).
_SLICE = 64 * 1024
#: Candidate ends tried per slice before giving up on slicing (they were all inside messages).
_SLICE_MISSES = 16
_MESSAGE_BOUNDARY = b'},{"'


def _decode_large(raw: bytes | str, max_depth: int) -> Event | None:
    """A large ``MESSAGES_SNAPSHOT`` in the plain shape, decoded slice by slice; ``None`` otherwise."""
    build = _fast_for(tuple[msg.Message, ...])
    event_fast = _FAST_BY_KIND["MESSAGES_SNAPSHOT"]
    if build is None or event_fast is None:
        return None
    try:
        read = _read_large(raw, max_depth, build)
        if read is None:
            return None
        parts, value = read
        event = event_fast(value)
    except _Fallback:
        return None
    messages = parts[0] if len(parts) == 1 else tuple(itertools.chain.from_iterable(parts))
    return attrs.evolve(event, messages=messages)  # type: ignore[no-any-return]


def plain_large_snapshot(raw: bytes | str, max_depth: int) -> tuple[dict[str, Any], PlainSnapshot] | None:
    """A large ``MESSAGES_SNAPSHOT`` whose messages are all in the plain shape (``_plain``), parsed
    slice by slice: the event's JSON (its ``messages`` whole again) and what its messages hold, gathered
    a slice at a time (:class:`~agui_client._plain.PlainSnapshot`); else ``None``.

    The parsed messages are returned as they are, for a fold that holds them as JSON.
    """
    snapshot = PlainSnapshot()

    def keep(items: list[Any]) -> list[Any]:
        if not snapshot.add(items):
            raise _Fallback
        return items

    try:
        read = _read_large(raw, max_depth, keep)
    except _Fallback:
        return None
    if read is None:
        return None
    parts, value = read
    value["messages"] = parts[0] if len(parts) == 1 else list(itertools.chain.from_iterable(parts))
    return value, snapshot


def _read_large(raw: bytes | str, max_depth: int,
                build: Callable[[Any], Any]) -> tuple[list[Any], dict[str, Any]] | None:
    """The slices of a large ``MESSAGES_SNAPSHOT``, each passed through ``build`` (which may raise
    ``_Fallback``), and the rest of the event's JSON (its ``messages`` emptied); ``None`` if in doubt."""
    if (type(raw) is not bytes or len(raw) < _SLICED_MIN or not raw.startswith(_SNAPSHOT_HEAD)
            or _orjson is None or _ORJSON_WRITE_DEPTH is None or max_depth <= _ORJSON_WRITE_DEPTH):
        return None
    loads, failed, find = _orjson.loads, _orjson.JSONDecodeError, raw.find
    parts: list[Any] = []
    start = len(_SNAPSHOT_HEAD)  # each slice starts at a message's "{" (or at the array's end)
    search = start + _SLICE
    misses = 0
    while True:
        cut = find(_MESSAGE_BOUNDARY, search)
        if cut < 0:
            break
        piece = b"[" + raw[start:cut + 1] + b"]"
        try:
            items = loads(piece)
        except failed:
            misses += 1
            if misses > _SLICE_MISSES:
                return None
            search = cut + 1  # that "}" closed something inside a message: the next candidate
            continue
        if not _proved_plain(piece, items):
            return None
        parts.append(build(items))
        del items, piece
        start = cut + 2
        search = start + _SLICE
        misses = 0
    rest = _SNAPSHOT_HEAD + raw[start:]
    try:
        value = loads(rest)
    except failed:
        return None
    if type(value) is not dict or not _proved_plain(rest, value) or type(value.get("messages")) is not list:
        return None
    parts.append(build(value["messages"]))
    value["messages"] = []
    return parts, value


def _proved_plain(text: bytes, value: Any) -> bool:
    """``text`` (parsed by orjson as ``value``) has no integer orjson read inexactly, a depth orjson can
    write, and no duplicated key at any level (the colon proof of ``_no_duplicates``, nothing skipped)."""
    rewritten = _rewrite(value)
    if rewritten is None:
        return False
    if rewritten == text:
        return True  # orjson wrote back exactly what it read: no key dropped, no number changed
    if _LONG_DIGIT_RUN in text.translate(_DIGITS_ONLY) and _has_float(value):
        return False
    escaped = text.count(b"\\u003a") + text.count(b"\\u003A") if b"\\u003" in text else 0
    return text.count(b":") + escaped == rewritten.count(b":")


# --------------------------------------------------------------------------------------------------
# Public entry points
# --------------------------------------------------------------------------------------------------

# THINKING_* left the protocol in 1.0 (RS-09); a compatible reading maps them onto REASONING_*.
_LEGACY_TYPES = {
    "THINKING_START": "REASONING_START",
    "THINKING_END": "REASONING_END",
    "THINKING_TEXT_MESSAGE_START": "REASONING_MESSAGE_START",
    "THINKING_TEXT_MESSAGE_CONTENT": "REASONING_MESSAGE_CONTENT",
    "THINKING_TEXT_MESSAGE_END": "REASONING_MESSAGE_END",
}


def decode_event(data: bytes | bytearray | memoryview | str | Mapping[str, Any], *,
                 max_depth: int = DEFAULT_MAX_DEPTH) -> Event | UnknownEvent:
    """Decode one AG-UI event from JSON text/bytes or an already-parsed mapping.

    Unknown event types become :class:`UnknownEvent` with a warning; unknown fields on known events
    are ignored and reported once.

    Raises:
        DecodeError: the payload is not a JSON object with a string ``type``, or a known event is
            malformed; ``pointer`` names the field (``/outcome/interrupts/1/id``).
        LimitExceeded: nesting deeper than ``max_depth``.
    """
    if type(data) is bytes and len(data) >= _SLICED_MIN:
        large = _decode_large(data, max_depth)
        if large is not None:
            return large
    if type(data) is bytes or type(data) is str or not isinstance(data, Mapping):
        value: Any = parse_json(data, max_depth=max_depth)
    else:
        value = data if type(data) is dict else dict(data)
    if type(value) is dict:  # the fast path of decode_value, inlined: this is the hottest call
        kind = value.get("type")
        if type(kind) is str:
            fast = _FAST_BY_KIND[kind]
            if fast is not None:
                try:
                    return fast(value)  # type: ignore[no-any-return]
                except _Fallback:
                    pass
    return _decode_value_checked(value)


def decode_value(value: Any, sink: WarningSink | None = None) -> Event | UnknownEvent:
    """Decode an already-parsed JSON value as one event (see :func:`decode_event`).

    Args:
        value: the parsed payload.
        sink: where warnings go (instead of the active sink, or :mod:`warnings`).
    """
    if type(value) is dict:
        kind = value.get("type")
        if type(kind) is str:
            fast = _FAST_BY_KIND[kind]
            if fast is not None:
                try:
                    return fast(value)  # type: ignore[no-any-return]
                except _Fallback:
                    pass
    if sink is None:
        return _decode_value_checked(value)
    # Only the checked path can warn, so only it pays for routing the warnings.
    token = _SINK.set(sink)
    try:
        return _decode_value_checked(value)
    finally:
        _SINK.reset(token)


class _FastByKind(dict[str, Any]):
    """Event type -> the fast builder of its class (``None`` for no fast path or an unknown type)."""

    def __missing__(self, kind: str) -> Any:
        cls = EVENT_TYPES.get(kind)
        if cls is None:
            return None  # not cached: unknown types are unbounded
        fast = self[kind] = _fast_for(cls)
        return fast


_FAST_BY_KIND = _FastByKind()


def _decode_value_checked(value: Any) -> Event | UnknownEvent:
    if type(value) is not dict:
        raise DecodeError(f"an event must be a JSON object, got {_describe(value)}", pointer="", rule=_NOT_AN_EVENT)
    kind = value.get("type")
    if type(kind) is not str:
        raise DecodeError("an event needs a string 'type'" if kind is None else
                          f"'type' must be a string, got {_describe(kind)}", pointer="/type", rule=_NO_TYPE)
    cls = EVENT_TYPES.get(kind)
    if cls is None:
        if not kind:
            raise DecodeError("'type' must not be empty", pointer="/type", rule=_NO_TYPE)  # (a non-empty string)
        modern = _LEGACY_TYPES.get(kind)
        if modern is None:
            hint = _near_miss(kind)
            _warn("UK-02", f"unknown event type {kind!r} ignored" + (f" (did you mean {hint}?)" if hint else ""),
                  event_type=kind, once=("type", kind), repeat=DROP_WARNINGS)
            return UnknownEvent(type=kind, raw=value)
        if type(value.get("messageId")) is not str:
            # The old events carried no ids; a RunSession mints them (it knows the open span and message).
            return UnknownEvent(type=kind, raw=value)
        _warn("RS-09", f"deprecated {kind} read as {modern}", event_type=kind, once=("type", kind))
        value = {**value, "type": modern}
        if modern == "REASONING_MESSAGE_START":
            value.setdefault("role", "reasoning")
        cls = EVENT_TYPES[modern]
        kind = modern
        fast = _FAST_BY_KIND[kind]
        if fast is not None:
            try:
                return fast(value)  # type: ignore[no-any-return]
            except _Fallback:
                pass
    return _structure(value, cls, event_type=kind)  # type: ignore[no-any-return]


@lru_cache(maxsize=256)
def _near_miss(kind: str) -> str | None:
    # Spelling (textMessageContent, text-message-content), stray spaces, a cut or extended name
    # (RUN_FINISH): cheap string tests, as this runs for every unknown event a stream sends.
    squashed = kind.strip().replace("_", "").replace("-", "").replace(" ", "").lower()
    if len(squashed) < 6:
        return None
    found = None
    for known in EVENT_TYPES:
        plain = known.replace("_", "").lower()
        if plain == squashed:
            return known
        if found is None and (plain.startswith(squashed) or squashed.startswith(plain)):
            found = known
    return found


def decode(value: Any, cls: type[T]) -> T:
    """Structure already-parsed wire JSON into ``cls`` (``RunAgentInput``, ``Interrupt``, a message …).

    Raises:
        DecodeError: the value does not fit ``cls``; ``pointer`` names the field.
    """
    fast = _fast_for(cls)
    if fast is not None:
        try:
            return fast(value)  # type: ignore[no-any-return]
        except _Fallback:
            pass
    return _structure(value, cls)  # type: ignore[no-any-return]


def checked_usage(event: ev.RunFinishedEvent | ev.RunErrorEvent,
                  sink: WarningSink | None = None) -> ev.RunFinishedEvent | ev.RunErrorEvent:
    """``event`` with its usage checked as the decoder checks the wire's (for an event built in Python,
    which never met the decoder): entries the schema refuses dropped, a part exceeding its total
    reported. Warnings go to ``sink`` (else the active sink, or :mod:`warnings`).
    """
    if event.usage is None:
        return event
    token = _SINK.set(sink) if sink is not None else None
    try:
        kept = _check_run_usage({"type": event.TYPE, "usage": encode(event.usage)})
    finally:
        if token is not None:
            _SINK.reset(token)
    if kept is None:
        return event
    usage = kept.get("usage")
    return attrs.evolve(event, usage=None if usage is None else decode(usage, tuple[rn.TokenUsage, ...]))


def encode(obj: Any) -> Any:
    """Any wire type (or a sequence of them) -> JSON-ready data: camelCase keys, absent fields left out."""
    return _converter.unstructure(obj)
