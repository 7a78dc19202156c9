"""How deep a JSON text nests, judged without walking Python's time over every member of a dense one.

:mod:`~agui_client.wire.jsonio`'s parsers refuse a payload nested past their limit: :func:`nests_deeper`
walks the parsed value, or, when its containers are too dense to walk, counts the text's brackets outside
its strings at C speed (:func:`opening_brackets` counts them strings included, the cheap first look).
The fold's bound on the tool-call arguments it parses counts the containers the same way
(:func:`containers_outside_strings`). What the limit is, and what refusing looks like, is the parsers'.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import accumulate
from typing import Any

__all__ = ["containers_outside_strings", "nests_deeper", "opening_brackets"]


def nests_deeper(text: bytes | str, value: Any, limit: int, opened: int | None) -> bool:
    """Whether ``value``, parsed from ``text``, nests containers deeper than ``limit``.

    Walking the value costs Python's time per member of every container, and a payload of 16 MiB holds
    8 million of them (``[[[…]]],[[[…]]]``, or one flat list ``[1,1,…]``): four seconds of the event
    loop, with every other run on it waiting. When members are that dense, the text's brackets are
    counted instead, at C speed (a tenth of that, more where strings are many: see
    :func:`_walk_is_cheaper`). The text's nesting is the value's, but for a member a duplicated key
    replaced, which counts too here: a dense text nested past the limit is refused whatever its parser
    kept. Only here: a sparse one is judged by its value, as is one orjson writes back
    (``_check_parsed``), so an event whose only deep member was replaced passes or not by how dense
    the rest of it is. ``opened``: the text's ``[`` and ``{``, where the caller counted them already.
    """
    if opened is None:
        opened = opening_brackets(text)
    if _walk_is_cheaper(text, opened):
        return _depth_exceeds(value, limit)
    return _text_depth(text) > limit


def _walk_is_cheaper(text: bytes | str, opened: int) -> bool:
    """Whether walking the value parsed from ``text`` costs less than counting the text's brackets.

    The walk looks at every member of every container (40-70 ns each, measured); the count reads the
    text at C speed (under a nanosecond a byte) but splits it at every quote, each piece some 50 ns. A
    member is a comma, or a container's first: counted, as the quotes are, at C speed. Counting
    containers alone, as this did, sent a flat list of 7 million numbers (two containers in 13 MiB)
    to the walk: 0.2-0.5 s of CPU, where this choice and the bracket count take 30 ms.
    """
    if isinstance(text, str):
        members, quotes = text.count(",") + opened, text.count('"')
    else:
        members, quotes = text.count(b",") + opened, text.count(b'"')
    return (members - quotes) * _BYTES_PER_WALKED_MEMBER <= len(text)


def _text_depth(text: bytes | str) -> int:
    """How deep the containers of ``text``, a JSON text a parser read, nest (its brackets outside strings)."""
    depth = deepest = 0
    for outside in _outside_strings(text):
        blob = outside if type(outside) is bytes else str(outside).encode("utf-8", "surrogatepass")
        brackets = blob.translate(None, _NOT_BRACKETS)
        deepest = max(deepest, max(accumulate(map(_BRACKET_STEP.__getitem__, brackets), initial=depth)))
        depth += brackets.count(b"[") + brackets.count(b"{") - brackets.count(b"]") - brackets.count(b"}")
    return deepest


def containers_outside_strings(text: bytes | str) -> int:
    """How many ``[`` and ``{`` the JSON text ``text`` holds outside its strings: the containers a parser
    makes of it.

    A string runs from a quote to the next quote no backslash escapes; in a text that is not JSON this
    holds up to its first fault, past which no parser reads anyway. Read as the depth of a dense event
    is (``_text_depth``), for the fold's bound on the tool-call arguments it parses.
    """
    opening: Any = (b"[", b"{") if type(text) is bytes else ("[", "{")
    array, obj = opening
    outsides: Iterator[Any] = _outside_strings(text)
    return sum(outside.count(array) + outside.count(obj) for outside in outsides)


def _outside_strings(text: bytes | str) -> Iterator[bytes | str]:
    """``text`` with its JSON strings (quotes included) taken out, a step of the text at a time.

    Not by a pattern of a string taken out of the whole text (``re.sub``): that gathers the text
    between the strings as a piece a string and joins them, 80 bytes a piece for the join, so a dense
    text of keys took 73 bytes a structural character to check, more than its parse, and 200,000 short
    strings 14 MB. In each step its escaped backslashes and quotes go first (a valid text has no other
    backslash before a quote), then it is split at its quotes, each turning a string on or off: a step's
    pieces are all there is to hold. A step ends at an escape's end (one ending in an odd run of
    backslashes leaves the last to the next). Checking 200,000 short strings in 8 MiB of tool-call
    arguments took 22 ms, was 62.
    """
    marks: Any = (b"\\", b'"', b"") if type(text) is bytes else ("\\", '"', "")
    backslash, quote, empty = marks
    escaped = backslash in text  # (most texts have no escape: their steps are split as they are)
    inside = False
    start = 0
    while start < len(text):
        step: Any = text[start:start + _TEXT_STEP]
        if escaped:
            if step.endswith(backslash) and start + len(step) < len(text) \
                    and (len(step) - len(step.rstrip(backslash))) % 2:
                step = step[:-1]
            start += len(step)
            step = step.replace(backslash * 2, empty).replace(backslash + quote, empty)
        else:
            start += len(step)
        pieces = step.split(quote)
        yield empty.join(pieces[1::2] if inside else pieces[::2])
        inside ^= len(pieces) % 2 == 0  # (an odd count of quotes: the step ends inside a string)


def opening_brackets(text: bytes | str) -> int:
    """How many ``[`` and ``{`` ``text`` holds, strings included (at C speed)."""
    return text.count("[") + text.count("{") if isinstance(text, str) else text.count(b"[") + text.count(b"{")


#: Walking a member costs about what counting the brackets of 64 bytes of text without strings does
#: (and about what one quote does): denser text is counted.
_BYTES_PER_WALKED_MEMBER = 64
_NOT_BRACKETS = bytes(i for i in range(256) if i not in b"[]{}")
#: The text read at once by ``_outside_strings`` (its quotes split it into at most as many pieces).
_TEXT_STEP = 64 * 1024
_BRACKET_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}


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
