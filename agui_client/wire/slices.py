"""A large JSON object's array read a slice at a time (:func:`read_slices`), with what each slice proves.

Parsed whole, a snapshot of thousands of messages exists three times over while it is decoded:
orjson's working memory (about 15x the text), the tree of dicts, and the typed messages; and the
tree's thousands of containers, all alive at once, make the cyclic GC walk them again and again.
Read as slices of whole items, each slice's dicts die as soon as the caller has used them.

Where a slice may end: ``},{"`` never occurs inside a JSON string (the quote would be escaped), so
it always separates two objects; but they may be nested inside an item (two tool calls). The slice
up to such a ``}`` is parsed as ``[`` + slice + ``]``: that is valid JSON exactly when the slice is
a sequence of whole values, i.e. when the ``}`` closes an item; otherwise the next candidate is
tried. Each slice, and the rest of the object with the head put back, must then prove what
:func:`~agui_client.wire.jsonio.parse_json` proves, more strictly
(:func:`~agui_client.wire.jsonio.proved_exact`: no long digit run, a depth orjson can write back, and
the colon count of the written-back value, so no duplicated key anywhere and the general path's gate
on nested duplicates can never matter). Any doubt returns ``None``: the caller reads the whole
payload, and ``parse_json`` alone decides errors and warnings.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .jsonio import ORJSON_WRITE_DEPTH, orjson_in_use, proved_exact

__all__ = ["SLICED_MIN", "read_slices"]

#: Payloads below this size are read whole (a call to :func:`read_slices` costs more than it saves).
SLICED_MIN = 256 * 1024
#: The items of one slice span at least this many bytes (a slice ends at the next item end).
_SLICE = 64 * 1024
#: Candidate ends tried per slice before giving up on slicing (they were all inside items).
_SLICE_MISSES = 16
_ITEM_BOUNDARY = b'},{"'


def read_slices(raw: bytes | str, head: bytes, key: str, max_depth: int,
                use: Callable[[list[Any]], Any]) -> tuple[list[Any], dict[str, Any]] | None:
    """A large JSON object that starts with ``head`` (which opens the array ``key``), read a slice of
    the array at a time; ``None`` when it is not read that way (orjson missing, a doubt). The caller
    decides what is large (:data:`SLICED_MIN` bytes and more).

    Args:
        raw: the payload.
        head: its exact first bytes, up to and including the array's ``[``.
        key: the array's key in the object.
        max_depth: the nesting limit, as for :func:`~agui_client.wire.jsonio.parse_json`.
        use: called with each slice (a list of parsed items) in order; may raise to abandon the read
            (the exception propagates).

    Returns:
        What ``use`` returned for each slice, and the object with its ``key`` emptied.
    """
    orjson = orjson_in_use()
    if (type(raw) is not bytes or not raw.startswith(head)
            or orjson is None or ORJSON_WRITE_DEPTH is None or max_depth <= ORJSON_WRITE_DEPTH):
        return None
    loads, failed, find = orjson.loads, orjson.JSONDecodeError, raw.find
    parts: list[Any] = []
    start = len(head)  # each slice starts at an item's "{" (or at the array's end)
    search = start + _SLICE
    misses = 0
    while True:
        cut = find(_ITEM_BOUNDARY, search)
        if cut < 0:
            break
        piece = b"[" + raw[start:cut + 1] + b"]"
        try:
            items = loads(piece)
        except failed:
            misses += 1
            if misses > _SLICE_MISSES:
                return None
            search = cut + 1  # that "}" closed something inside an item: the next candidate
            continue
        if not proved_exact(piece, items):
            return None
        parts.append(use(items))
        del items, piece
        start = cut + 2
        search = start + _SLICE
        misses = 0
    rest = head + raw[start:]
    try:
        value = loads(rest)
    except failed:
        return None
    if type(value) is not dict or not proved_exact(rest, value) or type(value.get(key)) is not list:
        return None
    parts.append(use(value[key]))
    value[key] = []
    return parts, value
