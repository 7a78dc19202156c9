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
emoji), for every character of it. So one emoji at the end of 1 MiB of ASCII deltas made the thread
hold the joined text at 4 MiB (beside its parts, for a moment) for the 1.1 MB it was charged, and one
in a long state value, snapshot message or tool result likewise: the thread held up to some 5 times
the budget. Which text a character widens is not known without a look at every event, so the whole
response pays: from the first read whose bytes are not all ASCII or hold a ``\\u`` escape of a
character past Latin-1, every byte of the response, those before included, is charged :data:`WIDE`
bytes more. A character is at least one byte on the wire, so that bounds the widest string (and the
UTF-8 copy CPython keeps beside a wide one once it is saved). A response that stays ASCII pays one
``isascii`` a read and, if it holds a backslash, one search for such an escape (some 0.4 ns a byte),
nothing an event; one that does not, one addition a read.

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
           "PARSE_COST", "PARSE_BYTE_COST", "PARSED_LARGE", "WIDE"]

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

#: Charged for each byte of a response, beyond the byte, once a read of it showed text that may not be
#: ASCII: CPython may then hold a text's every character in 4 bytes (one emoji widens all of it), and a
#: character is at least one byte on the wire.
WIDE = 4

# A ``\\u`` escape of a character past Latin-1 (one Python may hold wider than a byte): ``\\u00XX`` is not
# one. (A regular expression: ``in`` searches for a two-byte needle a step or two at a time, some three
# times as long on a read full of escaped newlines.) An escaped backslash before a ``u`` reads as one
# too, which only charges more.
_ESCAPE_WIDER = re.compile(rb"\\u(?!00)")

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
        #: Whether a read showed text that may not be ASCII: every byte of the response is then charged
        #: :data:`WIDE` more (see the module docstring).
        self.widened = False
        # The response's bytes before it widened, and whether the last read ended in a backslash (a
        # ``\u`` escape split between two reads).
        self._ascii_bytes = 0
        self._backslash = False

    def read(self, chunk: bytes, frames: int) -> None:
        """Charge a read of the body (decoded), which completed ``frames`` events."""
        structure = len(chunk.translate(None, _NOT_STRUCTURE)) - ENVELOPE * frames
        size = len(chunk)
        self.wide = size >= PARSED_LARGE
        # (floored per read: an event's allowance never pays for another read's structure)
        self.charged += size + STRUCTURE_COST * structure if structure > 0 else size
        if self.widened:
            self.charged += WIDE * size
        elif chunk.isascii() and (b"\\" not in chunk or _ESCAPE_WIDER.search(chunk) is None) \
                and not (self._backslash and _ESCAPE_WIDER.match(b"\\" + chunk[:5]) is not None):
            self._ascii_bytes += size
            self._backslash = chunk.endswith(b"\\")
        else:
            # The text it holds may widen any text of the response, read before it or after.
            self.widened = True
            self.charged += WIDE * (self._ascii_bytes + size)

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
        width = (f", and {WIDE} bytes more for each of its bytes, as its text may not be ASCII (Python may hold "
                 "it at 4 bytes a character)") if self.widened else ""
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
