"""Stored records' JSON, written and read exactly: the one record reader every store shares.

:func:`dump_record` writes a record as orjson's UTF-8 bytes when it can write the data exactly, else
as ASCII text; :func:`load_record` reads either back exactly (integers of any length, escaped lone
surrogates) and refuses a record repeating a key (:class:`RepeatedKey`), as an event repeating one
is refused. The proofs it leans on (a text written back, the first repeated member) are
:mod:`~agui_client.wire.jsonio`'s, where the events' reader uses them too.
"""

from __future__ import annotations

import json
from typing import Any

from .._inert import named, quoted_name
from .jsonio import first_duplicate, orjson_in_use, proved_exact, read_inexactly, stdlib_text
from .values import plain_json

__all__ = ["dump_record", "load_record", "RepeatedKey"]


def dump_record(record: dict[str, Any]) -> str | bytes:
    """JSON for a stored record: UTF-8 ``bytes`` from orjson when it can write the data exactly, else text.

    Both forms hold no lone surrogate, so UTF-8 backends can store them: orjson refuses to write one,
    and the stdlib fallback escapes everything outside ASCII.

    Raises:
        UnencodableValue: the record holds itself (``pointer``: where; a ``ValueError``).
        TypeError, ValueError: the record is not JSON (``NaN``/``Infinity`` included: another reader
            could not parse them).
    """
    # The walk first, as it sees a cycle (which data handed to a store directly can hold) and orjson does
    # not: orjson went round it to its depth limit, writing what sat beside it again at every turn (1.1
    # MB of state: 0.55 s and 280 MB) before it refused it. The walk skips what dump(share_state=True)
    # marked as checked (a thread's state and messages), so a thread's save does not walk its state.
    orjson = orjson_in_use()
    if orjson is not None and plain_json(record):
        # Five to nine times faster than the stdlib encoder, with one output buffer instead of its
        # chunk list plus the joined text. orjson also writes what json.dumps refuses (NaN as null,
        # datetimes, dataclasses …): those are not plain, and go to the stdlib path, which decides.
        try:
            blob: bytes = orjson.dumps(record)
        except TypeError:  # orjson.JSONEncodeError: lone surrogates, non-str keys, big integers, depth
            pass
        else:
            return blob
    # Here with state nested past the 254 levels orjson writes (the decoder admits 511), or data orjson
    # refuses. Written with the check for cycles, which keeps a marker for every container it enters
    # (a MiB of arrays 500 deep: 47 ms of CPU, 20 without): without it a cycle the walk was not asked
    # about (in what a save marked as checked) went round to Python's recursion limit, writing what sat
    # beside it again at every turn (0.6 MB of state: 8.5 s and 600 MB) before it could be named.
    return stdlib_text(record, ensure_ascii=True)


def _text_record(record: Any, check_circular: bool) -> str:
    """``record`` as ASCII JSON text (the standard library's encoder, each character past ASCII escaped)."""
    return json.dumps(record, ensure_ascii=True, allow_nan=False, separators=(",", ":"), check_circular=check_circular)


class RepeatedKey(ValueError):
    """A stored record's JSON names one member twice in an object (:func:`load_record` refuses it).

    Attributes:
        key: the repeated member's name.
        pointer: the JSON pointer of its second occurrence (as a repeated key in an event is named).
    """

    def __init__(self, key: str, pointer: str) -> None:
        super().__init__(f"repeated key {quoted_name(key)} at {named(pointer)}")
        self.key = key
        self.pointer = pointer


def load_record(text: str | bytes) -> Any:
    """A stored record's JSON, read exactly (integers of any length, escaped lone surrogates).

    A record repeating a key in one object is refused, as an event that does is (TR-09): no writer of
    ours makes one, and which of the two values is the record's is not for the reader to guess.

    Raises:
        RepeatedKey: an object names a member twice (a ``ValueError``, naming it and where).
        ValueError, RecursionError: the text is not JSON.
    """
    orjson = orjson_in_use()
    # orjson refuses escaped lone surrogates, which the stdlib encoder writes.
    escaped = (b"\\u" in text) if isinstance(text, bytes) else ("\\u" in text)
    if orjson is None or escaped:
        data = json.loads(text)
    else:
        try:
            data = orjson.loads(text)
        except ValueError:
            # orjson refuses an integer too large for a double (309+ digits), which the stdlib reads
            # exactly; the stdlib's own refusal says what is wrong.
            data = json.loads(text)
        else:
            if read_inexactly(_utf8(text), data):  # (an integer beyond 64 bits read as a float)
                data = json.loads(text)
    if not _written_back(text, data):
        found = first_duplicate(text if isinstance(text, str) else text.decode("utf-8", "surrogatepass"))
        if found is not None:
            raise RepeatedKey(found[1], found[0])
    return data


def _written_back(text: str | bytes, data: Any) -> bool:
    """A cheap proof that ``text`` (read as ``data``) repeats no key: the writer that made it writes
    ``data`` back as exactly ``text`` (``dump_record``'s two forms), or the colons of the text are
    those of the value written back (a key dropped as repeated takes its colon along)."""
    if type(data) is not dict and type(data) is not list:
        return True  # (a scalar holds no object)
    if orjson_in_use() is not None and proved_exact(_utf8(text), data):
        return True
    try:
        written = _text_record(data, False)  # (parsed from text: no cycle)
    except (TypeError, ValueError, RecursionError):
        return False
    if isinstance(text, bytes):
        return written.encode("ascii") == text
    return written == text


def _utf8(text: str | bytes) -> bytes:
    """A record's text as the bytes the proofs read (a lone surrogate kept, not refused)."""
    return text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
