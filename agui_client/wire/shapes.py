"""The compiled shapes a reader keeps, and who pays for compiling them.

A reader :mod:`~agui_client.wire.derive` generates compiles a function per *shape* (the keys an object
holds, in order). Compiling one costs some 0.5 ms, as much as reading a few hundred events, and the
agent chooses the shapes: a key order, an optional field present or not, all of them new in every
event if it likes. Until this module the readers shared one budget for the life of the process (64
shapes a class, then the one function for all shapes, for good): a hostile agent that spent it made
every later new shape, from every other agent, take the slow path. Now:

* **Who pays.** A new shape is compiled on the :class:`Allowance` of the response that brought it
  (:data:`SHAPES_PER_RESPONSE` compiles, every class together). Past it, that response's further new
  shapes are read by the reader's one function for all shapes (the same values, some 2.5 times the cost
  of a shape's own) and nothing is kept: a response spends its own allowance and no one else's. A read
  outside any response (``decode_event``, ``decode`` called directly) has an allowance of its own.
* **What is kept.** Each reader keeps at most :data:`MAX_LIVE_SHAPES` functions *live* (where its
  readers look a shape up) and :data:`MAX_RESTING_SHAPES` *resting*. A shape compiled when the live ones
  are full sends the oldest live one to rest; a resting shape met again comes back live at no charge
  (nothing is compiled); a shape still resting when :data:`MAX_RESTING_SHAPES` more were sent to rest
  after it is dropped, and compiled again, charged, if it ever comes back. So a shape in use is never
  dropped while new shapes churn: sent to rest, its next object brings it back for one lookup more. A
  shape used less than once in :data:`MAX_LIVE_SHAPES` + :data:`MAX_RESTING_SHAPES` compiles of its
  class may be dropped.
* **Nothing on the hit path.** An object whose shape is live is read as before: one lookup, one call.
  Only a miss (a shape not live) reaches this module: the allowance in force is read from a context
  variable then, and a miss with none in force raises :class:`NewShape` (a :class:`Fallback`), for the
  caller that has one to read again with it (:func:`charged`); a caller with none reads the checked way.
  The decoder reads a response's events under its allowance from the start once it is spent (then every
  new shape is declined, and a second read would only be declined again): that response's cost alone. The
  session's front-end does the same for an event whose type came in another shape last (where a miss can
  be); an event of its type's last shape is read with no look at the allowance.

The bound: per reader, :data:`MAX_LIVE_SHAPES` + :data:`MAX_RESTING_SHAPES` = 64 functions (the number
the one budget kept before), each with its keys (at most :data:`MAX_SHAPE_TEXT` characters together). A function
for an event of six keys holds some 3 KiB (``tracemalloc``), so some 190 KiB a reader; the readers are
fixed in number (one per wire class and use: 93 once every event type was read). Threads that miss at
once may each add one function before the oldest is sent to rest.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, TypeVar

from .policy import Fallback

__all__ = ["MAX_LIVE_SHAPES", "MAX_RESTING_SHAPES", "MAX_SHAPE_TEXT", "SHAPES_PER_RESPONSE", "Allowance", "NewShape",
           "ShapeCache", "charged", "refused"]

#: Live compiled shapes per reader: a producer sends a handful (optional fields present or not), a
#: process talking to many producers some tens.
MAX_LIVE_SHAPES = 48
#: Resting compiled shapes per reader: sent to rest by newer ones, brought back when met again. With
#: the live ones, 64 a reader: what the one budget kept before, so memory is bounded as it was.
MAX_RESTING_SHAPES = 16
#: The most characters a shape's keys may hold together for it to be compiled. A compiled shape is
#: kept with its keys: an unknown key of a megabyte (within ``max_event_bytes``) would stay held long
#: after its run ended. The wire's own keys are short (a whole event's, at most some 150 characters); a
#: longer shape is read by the one function for all shapes.
MAX_SHAPE_TEXT = 1024
#: Compiles one response may be charged (every class together). The bench's chat, tools and snapshot
#: streams met first compile 12 together (each event kind, message role and part they bring).
SHAPES_PER_RESPONSE = 32

T = TypeVar("T")


class Allowance:
    """The compiles left to one response (or to one read outside any response)."""

    __slots__ = ("left",)

    def __init__(self, left: int = SHAPES_PER_RESPONSE) -> None:
        self.left = left

    def __repr__(self) -> str:
        return f"Allowance(left={self.left})"


class NewShape(Fallback):
    """A shape not compiled, met where no :class:`Allowance` is in force: the caller that has one reads
    again under it (:func:`charged`); any other takes it as the :class:`Fallback` it is."""


_CHARGED: ContextVar[Allowance | None] = ContextVar("agui_client_shape_allowance", default=None)


def charged(allowance: Allowance, read: Callable[..., T], *args: Any) -> T:
    """``read(*args)`` with ``allowance`` paying for the shapes it compiles (a caller that met
    :class:`NewShape` reads again so: a reader calls nothing with effects before it has every value)."""
    token = _CHARGED.set(allowance)
    try:
        return read(*args)
    finally:
        _CHARGED.reset(token)


def refused(value: Any, *rest: Any) -> Any:
    """The function of a shape no reader takes (an unknown key, a required one absent): the checked
    path says what is wrong. Never kept: it is known again from the keys, at no compile."""
    raise Fallback


class ShapeCache:
    """One reader's compiled shapes: ``live`` (shape -> function), the dict its readers look up, and
    ``resting``; and what its misses did, for a caller that watches (``compiled``, ``restored``,
    ``rested``, ``dropped``, ``declined``: a new shape read by the one function for all shapes because the
    allowance in force was spent)."""

    __slots__ = ("live", "resting", "_compile", "_plain", "compiled", "restored", "rested", "dropped", "declined")

    def __init__(self, compile: Callable[[tuple[str, ...]], Callable[..., Any]],
                 plain: Callable[[tuple[str, ...]], bool]) -> None:
        self.live: dict[tuple[str, ...], Callable[..., Any]] = {}
        self.resting: dict[tuple[str, ...], Callable[..., Any]] = {}
        self._compile = compile
        self._plain = plain
        self.compiled = self.restored = self.rested = self.dropped = self.declined = 0

    def miss(self, shape: tuple[str, ...]) -> Callable[..., Any] | None:
        """The function for a shape not live: brought back from rest, :func:`refused`, or compiled on the
        allowance in force; ``None`` when the one function for all shapes reads it.

        Raises:
            NewShape: the shape would be compiled and no allowance is in force.
        """
        built = self.resting.pop(shape, None)
        if built is not None:
            self.restored += 1
            self._keep(shape, built)
            return built
        if not self._plain(shape):
            return refused
        if MAX_LIVE_SHAPES <= 0 or sum(map(len, shape)) > MAX_SHAPE_TEXT:
            return None
        allowance = _CHARGED.get()
        if allowance is None:
            raise NewShape
        if allowance.left <= 0:
            self.declined += 1
            return None
        allowance.left -= 1
        built = self._compile(shape)
        self.compiled += 1
        self._keep(shape, built)
        return built

    def _keep(self, shape: tuple[str, ...], built: Callable[..., Any]) -> None:
        live, resting = self.live, self.resting
        # The oldest live shape (dicts keep their order; one brought back goes last) rests. Another thread
        # moving the same one first is no harm: this one adds its shape past the bound, by one.
        while len(live) >= MAX_LIVE_SHAPES:
            try:
                oldest = next(iter(live))
                resting[oldest] = live.pop(oldest)
            except (RuntimeError, KeyError, StopIteration):
                break
            self.rested += 1
        while len(resting) > MAX_RESTING_SHAPES:
            try:
                del resting[next(iter(resting))]
            except (RuntimeError, KeyError, StopIteration):
                break
            self.dropped += 1
        live[shape] = built

    def clear(self) -> None:
        """Forget every compiled shape and count (for a test that must not depend on what ran before)."""
        self.live.clear()
        self.resting.clear()
        self.compiled = self.restored = self.rested = self.dropped = self.declined = 0
