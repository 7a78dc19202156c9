"""A parsed payload written back as orjson writes it, without the room orjson reserves per member.

``wire.jsonio`` proves a payload was read exactly by writing its value back and comparing the bytes.
orjson reserves about 170 bytes for each member of a list or object before writing it, so a dense
payload (``[1,1,1,…]``) written back whole would reserve about 83 times its length (address space:
only what is written becomes resident, but tracemalloc counts it all, and so does a limit on it). :func:`dense` says
when that could happen, and :func:`write_sliced` then writes the value a slice of members at a time,
to the very bytes ``orjson.dumps`` gives.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from itertools import islice
from typing import Any

__all__ = ["WRITE_WHOLE", "SLICED_DEPTH", "dense", "write_sliced"]

#: Texts up to this size are written back whole (orjson's room for their members is at most ~22 MiB;
#: a large payload is read in slices of about 64 KiB, each written back whole).
WRITE_WHOLE = 256 * 1024
#: What orjson reserves for each member it writes, in bytes (measured: ~166 for orjson 3.10-3.11).
_MEMBER_ROOM = 170
#: Texts longer than this are sampled before their commas are counted (``dense``): windows, bytes each.
_SAMPLED_FROM = WRITE_WHOLE
_SAMPLES = 256
_SAMPLE_WINDOW = 256
_sampler = random.Random()
#: Members written back at once by ``write_sliced``.
_WRITE_SLICE = 1024
_CONTAINERS = {list, dict}
#: How deep ``write_sliced`` goes when orjson has no depth limit of its own (deeper: no proof).
SLICED_DEPTH = 512


def dense(text: bytes | str) -> bool:
    """Whether writing ``text``'s value back whole could make orjson reserve more than 16 times its
    length: every member but a container's first follows a comma, so the commas bound the members.

    A long text is first sampled (:data:`_SAMPLES` windows at random places) and counted whole only
    when the sample is a quarter as dense as that: counting every comma of every large payload (a
    ``MESSAGES_SNAPSHOT`` of a long thread) cost 5 % of a replay. To reserve 16 times its length, a
    text needs a comma every 10 bytes on average: spread out, the sample sees it; packed as tightly as
    JSON allows (a comma every 2 bytes), at least a fifth of the text, which 256 random windows miss
    (hit fewer than 13 times) about once in 10⁸. A miss only writes the text back whole, as before this
    check existed: the same bytes, in more room.
    """
    comma: Any = b"," if type(text) is bytes else ","
    size = len(text)
    if size > _SAMPLED_FROM:
        window = _SAMPLE_WINDOW
        pick = _sampler.randrange
        seen = sum(text.count(comma, start, start + window) for start in
                   (pick(size - window) for _ in range(_SAMPLES)))
        if seen * _MEMBER_ROOM * 4 <= 16 * window * _SAMPLES:
            return False
    return int(text.count(comma)) * _MEMBER_ROOM > 16 * size


def write_sliced(value: Any, out: bytearray, dumps: Callable[[Any], bytes], room: int) -> None:
    """Append ``value`` written as orjson writes it (compact) to ``out``, at most ``_WRITE_SLICE``
    members of a list or object at a time (a member holding containers is written the same way).

    Written into one growing buffer, not gathered as pieces to join: ``bytes.join`` takes a buffer
    descriptor of 80 bytes for each piece, and a dense text is a few pieces a byte (``[``, ``]``,
    ``,`` for each empty array), so joining them took 93 MB for 1 MiB of ``[[],…]``, where the buffer
    takes the text's length. Each text orjson hands back is copied in and dropped at once (orjson
    returns even a short one in a buffer of some 4 KiB, which a kept piece would hold).

    Refused (``ValueError``) where orjson would refuse the whole: containers nested more than ``room``
    deep (so that a text written back still proves its depth, as in ``_check_parsed``).
    """
    kind = type(value)
    if (kind is list or kind is dict) and room < 1:
        raise ValueError("nested too deep to write back")
    if kind is list:
        out += b"["
        for start in range(0, len(value), _WRITE_SLICE):
            part = value[start:start + _WRITE_SLICE]
            if start:
                out += b","
            if _CONTAINERS.isdisjoint(map(type, part)):
                out += memoryview(dumps(part))[1:-1]
                continue
            for n, item in enumerate(part):
                if n:
                    out += b","
                write_sliced(item, out, dumps, room - 1)
        out += b"]"
    elif kind is dict:
        out += b"{"
        # (a slice of members at a time: a list of all of them is a tuple for each, all alive at once)
        members = iter(value.items())
        for start in range(0, len(value), _WRITE_SLICE):
            part = list(islice(members, _WRITE_SLICE))
            if start:
                out += b","
            if _CONTAINERS.isdisjoint(map(type, (member for _, member in part))):
                out += memoryview(dumps(dict(part)))[1:-1]
                continue
            for n, (key, member) in enumerate(part):
                if n:
                    out += b","
                out += dumps(key)
                out += b":"
                write_sliced(member, out, dumps, room - 1)
        out += b"}"
    else:
        out += dumps(value)
