"""What one run's response may make the thread hold: an estimate charged as the body is read.

``max_run_bytes`` bounds the bytes a response brings, not what folding them builds, and the two part
ways: Python holds a small entity or a container in many times the bytes that name it. Measured on
the fold (tracemalloc, what the thread held after the run, per byte of body): 20,000
``TOOL_CALL_START`` 12x, as many runs in one response 12x, ``MESSAGES_SNAPSHOT`` messages 10x,
tool results, activities and interrupts 7-8x; state dense with small containers 21-32x (``[[],[],…]``
21x, ``{"a":0}`` objects 24x, arrays nested a hundred deep 32x), arrays of one-letter strings 14x,
of floats 8x. A body of 256 MiB could so make the thread hold 3-8 GiB, every event within its limits.

One estimate covers every mix of events, from two things that can be read without a step per event:

* **the body's structure**, counted as each read arrives: every ``[``, ``{``, ``,`` and ``:`` may
  make a Python object the thread keeps (a container, an element, a member), each charged
  :data:`STRUCTURE_COST`, beside the read's bytes (text is held as about what it costs on the wire).
  Each event's own object is not kept: :data:`ENVELOPE` structural characters an event (its ``{``,
  the ``:`` of its ``type`` and of its SSE ``data:`` line) go uncharged, so a stream of text deltas
  is charged some 5 times its bytes, not 8;
* **the entities the thread gained** (messages, tool calls, runs, subagents, steps: the fold's own
  counts), each charged :data:`ENTITY_COST`, which covers what the largest of them (a run's record)
  costs. A step is one because its record and, while it is open, its place among the open steps held
  some 340 bytes for the 180 its ``STEP_STARTED`` was charged: 60,000 steps left open made the thread
  hold twice a 4 MiB budget;
* **what the patches' ``copy`` operations cost** (the copy allowance's units spent, a count the state
  document keeps), each unit charged :data:`COPY_COST`: a copy of a few bytes of patch makes the
  thread hold a subtree again, which the body's structure does not show (a 4 MiB budget let 30,000
  empty arrays copied 33 times make the thread hold 138 MB). Between checks the copies are bounded
  by the budget's room (the session lowers the allowance to it), as one read holds hundreds of them.

**The width text is held at.** CPython holds a string at the width of its widest character: 1 byte a
character while all are Latin-1, 2 once one is in the BMP above U+00FF, 4 once one is beyond (an
emoji), for every character of it, and once a string that is not ASCII is saved, its UTF-8 beside it.
So one emoji at the end of 1 MiB of ASCII deltas made the thread hold the joined text at 4 MiB (beside
its parts, for a moment) for the 1.1 MB it was charged, and one in a long state value, snapshot message
or tool result likewise: the thread held up to some 5 times the budget. Which text a character widens
is not known without a look at every event, so the whole response pays, by the widest character a read
may spell: from that read on, every byte of the response, those before included, is charged that many
bytes more (a read that may spell a wider one later charges the difference on every byte). A character
is at least one byte on the wire and at most four in UTF-8, so per byte of a string, a character of it
ASCII on the wire being the worst:

* :data:`WIDE` (4) when a read holds a byte of a four-byte UTF-8 character (``F0``-``FF``), a ``\\u``
  escape past Latin-1 (it may be half of an emoji), or malformed UTF-8 the decoder replaced by U+FFFD
  (one byte, three in the UTF-8 beside it): 4 bytes a character and 1 of UTF-8;
* :data:`WIDE_BMP` (2) when its bytes are not ASCII but none of those (raw UTF-8 text of the BMP: a
  CJK chat): 2 bytes a character and 1 of UTF-8, a raw Latin-1 character too (its lead byte alone is
  not told apart from a replaced one's without decoding);
* :data:`WIDE_LATIN1` (1) for a ``\\u00XX`` escape of a Latin-1 character past ASCII: the string stays
  1 byte a character, and its UTF-8 is kept beside it.

Measured (what the thread held after the run, every string's UTF-8 asked for, against the estimate): a
CJK chat streamed raw in deltas of 3 characters was charged 8.4 times its bytes where it held 0.21, now
6.4; one in deltas of 32, 6.6 now 4.6. A response that stays ASCII pays one ``isascii`` a read and, if
it holds a backslash, one search for an escape (some 0.4 ns a byte), nothing an event; one of raw BMP
text, a look for each byte that leads a four-byte character a read (sixteen ``in``, each a ``memchr``:
the read's charge some 36 µs a 64 KiB read where it was 24, of the 1.5-2.9 ms folding it takes; a read
holding an emoji early is done at its first); one that may hold a wider character,
one addition a read. (An escaped CJK chat still widens to :data:`WIDE` at its first escape: telling a
surrogate's escape from a CJK one took a regular expression 0.4 ms a read.)

It counts what the response built, less one thing it let go of: a state document that a snapshot of
the same response brought, and another replaces, is credited its structure (the document counts it,
walking it, only while a budget runs). Without that, an agent sending its whole state at every step
was charged for every step's: a 200 KB state sent at 540 steps passed 1 GiB, the thread holding one
of them. Nothing else is told apart, since that would cost a look at every event.

The estimate is above what the fold holds for each kind measured above, so the thread holds less than
the budget. It is checked before each read is folded, so a read that would pass it is refused whole:
the fold never parses it.

**One large event's parse.** An event is parsed whole before it is folded, and parsing takes more than
the value it leaves: orjson's reading (its own document beside the value), and, where the text's proofs
fail, a second reading that finds a repeated key (the first let go of before it: ``python -m
bench.parsepeak``). Measured (peak resident memory of the parse, in a child process, per structural
character, at 1, 4 and 16 MiB, both paths), above the :data:`STRUCTURE_COST` the event is charged
anyway: 61 bytes for ``[{"type":"\\ud800"},…]`` (the standard library's path), 58 for an object of
one-letter strings (orjson's reading), 51 for an object of ``[[]]`` members that ends in a repeated key
(refused; 119 while the first reading was held), ``[[],[],…]`` none (46 in all, its value and orjson's
document: a 16 MiB event of it peaked at 0.51 GB). Per byte, one long string takes up to 8 times its
length (one emoji makes Python hold its every character in 4 bytes; the standard library's path holds
the text and the value), which the structure does not show. So before a read is folded, an event of at
least :data:`PARSED_LARGE` bytes is also charged :data:`PARSE_COST` for each structural character and
:data:`PARSE_BYTE_COST` for each byte, for as long as it is parsed: the read is refused (``RUN-MEMORY``)
if that passes the budget, and the charge is not kept. Smaller events are not looked at (a read's other
events are smaller than a read), so they pay nothing; what their parse takes beyond the estimate is at
most some 2 MB.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..errors import LimitExceeded
from ..wire.jsonio import leading_type

__all__ = ["MemoryBudget", "DEFAULT_MAX_RUN_MEMORY", "STRUCTURE_COST", "ENTITY_COST", "COPY_COST", "ENVELOPE",
           "PARSE_COST", "PARSE_BYTE_COST", "PARSED_LARGE", "WIDE", "WIDE_BMP", "WIDE_LATIN1"]

#: The default budget of what one run's response may make the thread hold (``max_run_memory``).
DEFAULT_MAX_RUN_MEMORY = 2**30
#: Charged for each ``[``, ``{``, ``,`` and ``:`` of the body: what the object it may make costs at
#: most (an empty list 56 bytes and the pointer to it 8; a one-letter string 50; a one-member object,
#: charged for its ``{`` and ``:``, 184-232).
STRUCTURE_COST = 64
#: Charged for each entity the thread gains (a message, a tool call, a run, a subagent, a step): a run's
#: record and what it indexes held some 1,500 bytes, a message or a tool call 450-900, an open step 340
#: (its structure charged too).
ENTITY_COST = 1024
#: Charged for each unit of the copy allowance spent (a member copied is 16 units and its key's
#: characters one each): a copied one-member object holds 192 bytes for its 32 units, an empty array
#: 64 bytes for 16.
COPY_COST = 8
#: Structural characters of each event that are not kept (its ``{``, the ``:`` of its ``type``, the
#: ``:`` of its ``data:`` line). Every event has them, so none can stand for another event's values.
ENVELOPE = 3

#: Charged, while an event of at least :data:`PARSED_LARGE` bytes is parsed, for each of its ``[``,
#: ``{``, ``,`` and ``:``: what parsing it takes at its peak beyond its charge (measured at most 61
#: bytes, for ``[{"type":"\\ud800"},…]`` on the standard library's path; the rest, a fifth, is margin
#: for the allocator and other orjson and Python versions).
PARSE_COST = 74
#: Charged, while such an event is parsed, for each of its bytes: a long string's parse takes up to 8
#: times its length (an emoji in it: 7 beyond the byte it is charged), and a fifth more.
PARSE_BYTE_COST = 9
#: Events this large have their parse charged (:data:`PARSE_COST`); a smaller one is parsed unlooked at,
#: its parse taking at most some 17 bytes a byte beyond its charge (2 MB: arrays nested deep). Above a
#: network read (64 KiB), so that such an event began in an earlier read and is the first its read
#: completes.
PARSED_LARGE = 128 * 1024

#: Charged for each byte of a response, beyond the byte, once a read of it may spell a character beyond
#: the BMP (an emoji): CPython may then hold a text's every character in 4 bytes (one emoji widens all of
#: it), and its UTF-8 beside it, and a character is at least one byte on the wire.
WIDE = 4
#: As :data:`WIDE`, once a read's raw UTF-8 may spell a character of the BMP past Latin-1 but none beyond:
#: 2 bytes a character, and the UTF-8 beside them.
WIDE_BMP = 2
#: As :data:`WIDE`, once a read escapes a Latin-1 character past ASCII (``\\u00e9``): 1 byte a character,
#: and the UTF-8 beside them (a string that is not ASCII keeps it apart once saved).
WIDE_LATIN1 = 1

# A ``\\u`` escape of a character past ASCII, its four digits whole: ``\\u00`` then 0-7 is ASCII. (A
# regular expression: ``in`` searches for a two-byte needle a step or two at a time, some three times as
# long on a read full of escaped newlines.) An escaped backslash before a ``u`` reads as one too, which
# only charges more.
_ESCAPE = re.compile(rb"\\u(?!00[0-7])[0-9A-Fa-f]{4}")
# The same, past Latin-1 (searched for past a Latin-1 one).
_ESCAPE_WIDER = re.compile(rb"\\u(?!00)[0-9A-Fa-f]{4}")
# The leads of four-byte UTF-8 characters and the bytes no UTF-8 holds (F0-FF), each looked for alone: a
# ``memchr`` each, where one ``bytes.translate`` deleting every other byte took twice as long on a read
# of CJK text and thirty times as long on one with an emoji early (the first found ends the look).
_ASTRAL = tuple(bytes((byte,)) for byte in range(0xF0, 0x100))
# The bytes an escape split between two reads may have left at the end of the first (its backslash and
# up to four more).
_SEAM = 5

# How far into a refused event its type is looked for (producers write it first).
_TYPE_WITHIN = 4096
# Everything but the structural characters: a read translated with these deleted is its structure.
_NOT_STRUCTURE = bytes(i for i in range(256) if i not in b"[{,:")


class MemoryBudget:
    """One run's budget of what its response may make the thread hold (see the module docstring).

    The framer charges each read of the body (:meth:`read`); the session asks, before folding a read's
    events, whether the estimate with the entities the thread gained is still within it (:meth:`check`).

    Args:
        limit: the budget in bytes (the client's ``max_run_memory``).
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        #: The body's bytes and structure charged so far.
        self.charged = 0
        #: The thread's entity count when the response began (``None``: not yet asked).
        self.entities_at: int | None = None
        #: What the document's copies had cost (its units) when the response began.
        self.copied_at = 0
        #: The structure of the documents the document had let go of when the response began.
        self.released_at = 0
        #: The budget left at the last check (what the read it let through may still make).
        self.room = limit
        #: Whether the last read was as large as :data:`PARSED_LARGE` (any of its events may be).
        self.wide = False
        #: What each byte of the response is charged beyond itself for the width its text may be held
        #: at: 0 while it is ASCII, else :data:`WIDE_LATIN1`, :data:`WIDE_BMP` or :data:`WIDE` (see the
        #: module docstring); it only grows.
        self.width = 0
        # The response's bytes read, and the end of the last read when it may hold the start of an escape
        # the next one ends (a ``\u`` escape split between two reads).
        self._bytes = 0
        self._seam = b""

    @property
    def widened(self) -> bool:
        """Whether a read showed text that may not be ASCII (:attr:`width` above 0)."""
        return self.width > 0

    def read(self, chunk: bytes, frames: int, replaced: bool = False) -> None:
        """Charge a read of the body (decoded), which completed ``frames`` events; ``replaced``: whether
        the decoder has replaced malformed UTF-8 by U+FFFD in the response (one byte made a character
        Python may hold at 2 bytes, and its UTF-8 at 3)."""
        structure = len(chunk.translate(None, _NOT_STRUCTURE)) - ENVELOPE * frames
        size = len(chunk)
        self.wide = size >= PARSED_LARGE
        # (floored per read: an event's allowance never pays for another read's structure)
        self.charged += size + STRUCTURE_COST * structure if structure > 0 else size
        width = self.width
        if width < WIDE:
            width = max(width, WIDE if replaced else self._width_of(chunk))
            if width > self.width:
                # The text it holds may widen any text of the response, read before it or after.
                self.charged += (width - self.width) * self._bytes
                self.width = width
        self.charged += width * size
        self._bytes += size

    def _width_of(self, chunk: bytes) -> int:
        """The most a character the read may spell (its raw UTF-8, its escapes) widens text by, a byte."""
        seam = self._seam
        if chunk.isascii():
            width = 0
            if b"\\" not in chunk and not seam:
                return 0
        else:
            # (malformed bytes the decoder replaced are told by it: a byte past ASCII but none of those
            # nor of a four-byte character's is raw UTF-8 of the BMP)
            width = WIDE if any(lead in chunk for lead in _ASTRAL) else WIDE_BMP
            if width == WIDE or (b"\\" not in chunk and not seam):
                return width
        # Escapes, one split from the read before included (what may start one is kept for the next read).
        text = seam + chunk if seam else chunk
        backslash = text.rfind(b"\\", -_SEAM)
        self._seam = text[backslash:] if backslash >= 0 else b""
        found = _ESCAPE.search(text)
        if found is not None:
            wider = found[0][2:4] != b"00" or _ESCAPE_WIDER.search(text, found.end()) is not None
            width = max(width, WIDE if wider else WIDE_LATIN1)
        return width

    def estimate(self, entities: int, copied: int = 0, released: int = 0) -> int:
        """What the response may have made the thread hold, the thread now holding ``entities``, its
        patches' copies having cost ``copied`` units in all and the state documents snapshots replaced
        ``released`` structural characters in all."""
        if self.entities_at is None:
            self.entities_at, self.copied_at, self.released_at = entities, copied, released
        gained = entities - self.entities_at
        estimate = (self.charged + COPY_COST * (copied - self.copied_at)
                    - STRUCTURE_COST * (released - self.released_at))
        return estimate + ENTITY_COST * gained if gained > 0 else estimate

    def check(self, payloads: Sequence[str | bytes], entities: int, copied: int = 0,
              released: int = 0) -> LimitExceeded | None:
        """The refusal of a read whose events would take the thread past the budget, else ``None``
        (and :attr:`room` is what is left).

        ``payloads`` are the read's events (charged already by :meth:`read`); the refusal names the
        first of them, the one the fold stops before (the session locates it: run and index).
        """
        estimate = self.estimate(entities, copied, released)
        self.room = self.limit - estimate
        parse = 0
        if estimate <= self.limit:
            parse = self._parse_cost(payloads)
            if estimate + parse <= self.limit:
                return None
        kind = None
        if payloads:
            # (read from the event's start only: the members before its type, if any, are not parsed whole,
            # which is what the refusal spares)
            head = payloads[0][:_TYPE_WITHIN]
            kind = leading_type(head if isinstance(head, str) else head.decode("utf-8", "replace"))
        if parse:
            return LimitExceeded(
                f"the run's response went past max_run_memory ({self.limit} bytes): a large event, parsed, "
                f"would take the client past it (estimated at {estimate + parse} bytes while it is parsed: "
                f"{PARSE_COST} bytes for each of its structural characters and {PARSE_BYTE_COST} for each byte, "
                f"beside the {estimate} bytes "
                "charged); what came before is kept, the event is not parsed", limit=self.limit,
                event_type=kind, rule="RUN-MEMORY")
        held = {WIDE: "4 bytes a character", WIDE_BMP: "2 bytes a character"}.get(self.width, "1 byte a character")
        width = (f", and {self.width} bytes more for each of its bytes, as its text may not be ASCII (Python may "
                 f"hold it at {held}, and its UTF-8 beside it)") if self.width else ""
        return LimitExceeded(
            f"the run's response went past max_run_memory ({self.limit} bytes): what it would make the "
            f"thread hold is estimated at {estimate} bytes (its events' structure, and {ENTITY_COST} bytes "
            f"for each message, tool call, run, subagent and step it added{width}); what came before is kept, "
            "the rest is not read", limit=self.limit, event_type=kind, rule="RUN-MEMORY")

    def _parse_cost(self, payloads: Sequence[str | bytes]) -> int:
        """What parsing the largest of ``payloads`` takes beyond its charge, if it is large enough to
        be looked at (see the module docstring); else 0.

        Only the first can have begun before this read, so unless the read itself was large, only the
        first can be large: an ordinary read costs one ``len``.
        """
        if not payloads:
            return 0
        large = payloads if self.wide else payloads[:1]
        cost = 0
        for payload in large:
            if len(payload) >= PARSED_LARGE:
                text = payload if isinstance(payload, bytes) else payload.encode("utf-8", "surrogatepass")
                cost = max(cost, PARSE_COST * len(text.translate(None, _NOT_STRUCTURE)) + PARSE_BYTE_COST * len(text))
        return cost
