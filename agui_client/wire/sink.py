"""Where the warnings found while reading the wire go.

Decoding and the resume rules find things to tolerate (an unknown field, a legacy null, an
unreadable ``expiresAt``). They report them with :func:`warn` to the active :class:`WarningSink`
(a run session collects them into ``RunResult.warnings``); outside any sink they are emitted through
:mod:`warnings` as :class:`~agui_client.errors.AguiWarning`, up to :data:`WARNINGS_PER_CODE` distinct ones
of a code in the life of the process.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import Context, ContextVar, copy_context
from types import FrameType
from typing import Any

import attrs
import cattrs

from ..errors import AguiWarning, StreamWarning

__all__ = ["WarningSink", "WarningList", "collect_warnings", "warn", "worker_context", "DROP_WARNINGS",
           "WARNINGS_PER_CODE"]

#: How many times a warning about something dropped is given per response (``WarningSink.warn``).
DROP_WARNINGS = 100
#: How many warnings of one code a response keeps (``RunSession.warnings``, and the SSE decoder's own).
#: A stream can repeat one fault endlessly at a few bytes each (an unknown SSE field line is two), and
#: each warning costs a couple of hundred bytes: 4 MB of ``x\n`` lines held 2 million warnings, 450 MB.
WARNINGS_PER_CODE = 1000


class WarningList(list[StreamWarning]):
    """A response's warnings: at most :data:`WARNINGS_PER_CODE` of each code are kept, the last of them
    saying so; the others are counted (:attr:`dropped`), not kept.

    (``RunSession.warnings``, and a thread's repairs, ``ThreadState.warnings``.)"""

    def __init__(self, items: Iterable[StreamWarning] = ()) -> None:
        super().__init__()
        self._counts: dict[str, int] = {}
        #: Warnings not kept, past the bound of their code.
        self.dropped = 0
        self.extend(items)

    def append(self, warning: StreamWarning, /) -> None:
        """Keep ``warning``, unless its code already has its share."""
        count = self._counts.get(warning.code, 0) + 1
        self._counts[warning.code] = count
        if count < WARNINGS_PER_CODE:
            super().append(warning)
        elif count == WARNINGS_PER_CODE:
            note = f" ({WARNINGS_PER_CODE} warnings with code {warning.code}: further ones are not kept)"
            super().append(attrs.evolve(warning, message=warning.message + note))
        else:
            self.dropped += 1

    def extend(self, warnings: Iterable[StreamWarning], /) -> None:
        """:meth:`append` each of ``warnings``."""
        for warning in warnings:
            self.append(warning)

    def clear(self) -> None:
        """Forget every warning, and the counts: the bound holds again from nothing."""
        super().clear()
        self._counts.clear()
        self.dropped = 0

    def __iadd__(self, warnings: Iterable[StreamWarning], /) -> WarningList:  # type: ignore[override,misc]
        self.extend(warnings)
        return self


class WarningSink:
    """Collects the warnings of one decoding context, repeated ones a bounded number of times."""

    __slots__ = ("items", "_seen", "_keys")

    def __init__(self) -> None:
        self.items: list[StreamWarning] = []
        self._seen: dict[tuple[str, ...], int] = {}
        self._keys: dict[str, int] = {}  # code -> how many of its keys ``_seen`` holds

    def warn(self, code: str, message: str, *, pointer: str | None = None, event_type: str | None = None,
             once: tuple[str, ...] | None = None, repeat: int = 1) -> None:
        """Record a warning; with ``once``, a warning with the same key is recorded ``repeat`` times at most.

        A key warned once (a producer's habit, such as an unknown field) is said once. A key warned for
        each thing dropped (an unknown event, a content part) is said up to ``repeat`` times, and then
        once more to say the rest go unreported: a hostile stream repeating it cannot fill the memory.

        Keys are remembered up to :data:`WARNINGS_PER_CODE` of a code; a key past them is warned of
        without being remembered. A stream can name a new key at every event (an unknown type of its own
        each time, a few bytes the memory budget sees no structure in), and remembering each cost some
        160 bytes; past that many warnings of one code, a response's :class:`WarningList` keeps no more
        of them anyway, and counts them.
        """
        if once is not None:
            seen = self._seen.get(once, 0)
            if seen >= repeat:
                return
            if seen or self._remember(code):
                self._seen[once] = seen + 1
            if seen + 1 == repeat and repeat > 1:
                message += f" (seen {repeat} times: further ones are not reported)"
        self.items.append(StreamWarning(code=code, message=message, pointer=pointer, event_type=event_type))

    def _remember(self, code: str) -> bool:
        """Whether a new key of ``code`` is remembered (counting it), or ``code`` has its share of keys."""
        keys = self._keys.get(code, 0)
        if keys >= WARNINGS_PER_CODE:
            return False
        self._keys[code] = keys + 1
        return True


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


class _Outside:
    """Which warnings of each code were said through :mod:`warnings` (outside any sink), for the process.

    Python remembers each distinct text it shows, in the registry of the module that warned, for as long
    as the process lives; and a warning's text names what the input chose (an unknown field's key). A web
    backend crossing each browser's request with ``from_ag_ui``, or a service loading other writers'
    records, so remembered every key any of them sent, and wrote each to stderr: 20,000 requests holding
    a key of their own kept 16 MB. Past :data:`WARNINGS_PER_CODE` distinct texts of a code, one more says
    so and the code is quiet outside a run from then on; a text already said passes, for Python to judge.
    The count starts again when the warning filters are replaced (``warnings.catch_warnings``, as pytest
    does around each test), as Python's own memory of what it showed is dropped then.
    """

    def __init__(self) -> None:
        # (no lock: the sans-IO layers take none. Threads warning at once may each add a text past the
        # bound, or each say the note: a few more, never a growth without end.)
        self._said: dict[str, set[int]] = {}  # code -> hashes of the texts said (a text may be long)
        self._quiet: set[str] = set()
        self._filters: object = warnings.filters

    def admit(self, code: str, text: str) -> str | None:
        """``text`` to say, with the note that ends a code's share, or ``None`` past it."""
        if warnings.filters is not self._filters:
            self._said, self._quiet, self._filters = {}, set(), warnings.filters
        said = self._said.setdefault(code, set())
        if hash(text) in said:
            return text
        if len(said) < WARNINGS_PER_CODE:
            said.add(hash(text))
            return text
        if code in self._quiet:
            return None
        self._quiet.add(code)
        return (f"{text} ({WARNINGS_PER_CODE} distinct warnings with code {code} outside a run: further new "
                "ones are not shown)")


_OUTSIDE = _Outside()


def warn(code: str, message: str, *, pointer: str | None = None, event_type: str | None = None,
         once: tuple[str, ...] | None = None, repeat: int = 1) -> None:
    """Report a warning to the active sink (see :meth:`WarningSink.warn`), or through :mod:`warnings`
    (at most :data:`WARNINGS_PER_CODE` distinct ones of a code in the life of the process)."""
    sink = _SINK.get()
    if sink is not None:
        sink.warn(code, message, pointer=pointer, event_type=event_type, once=once, repeat=repeat)
        return
    text = _OUTSIDE.admit(code, str(StreamWarning(code=code, message=message, pointer=pointer,
                                                  event_type=event_type)))
    if text is None:
        return
    place = _PLACE.get()
    if place is None:
        warnings.warn(text, AguiWarning, stacklevel=_callers_level())
        return
    # (as warnings.warn does for the frame it names: that module's name and its registry of texts shown)
    filename, lineno, module_globals = place
    warnings.warn_explicit(text, AguiWarning, filename, lineno, module=module_globals.get("__name__"),
                           registry=module_globals.setdefault("__warningregistry__", {}),
                           module_globals=module_globals)


#: Where the package's own code runs, and the converter's it drives (its modules and the hooks it writes
#: out): frames a warning said through :mod:`warnings` is not placed in.
_INSIDE = (os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep,
           os.path.dirname(os.path.abspath(cattrs.__file__)) + os.sep, "<cattrs generated ", "<attrs generated ")


#: Where a warning said in a worker thread is placed (its file, line and module globals): the line that
#: asked for the call, set by :func:`worker_context`; ``None`` on the caller's own thread.
_PLACE: ContextVar[tuple[str, int, dict[str, Any]] | None] = ContextVar("agui_warning_place", default=None)


def worker_context() -> Context:
    """A copy of the current context (as ``asyncio.to_thread`` makes) for a call run in a worker thread,
    in which a warning said through :mod:`warnings` is placed at the line outside the package that asked
    for the call. In the worker its stack starts in ``concurrent/futures``: the walk of
    :func:`_callers_level` found that frame first, and an async store load's warning named the executor's
    line rather than the application's ``await``. The caller's stack (its coroutines' frames included)
    is walked here, on the caller's thread, once per call handed to a worker: a few frames."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_INSIDE):
        frame = frame.f_back
    context = copy_context()
    if frame is not None:
        context.run(_PLACE.set, (frame.f_code.co_filename, frame.f_lineno, frame.f_globals))
    return context


def _callers_level() -> int:
    """The ``stacklevel`` for :func:`warn`'s ``warnings.warn`` that places the warning at the caller's line:
    the first frame outside the package. A fixed level placed a warning about an event's own field inside
    the codec, and one about a nested object a frame further in still (the converter's hook for it, a
    frame of generated code): how deep the warning is found depends on what is read, not on the caller.
    Asked only for a warning that is shown, never per event."""
    frame: FrameType | None = sys._getframe(2)  # (warn's caller: level 2 of the warnings.warn in warn)
    level = 2
    while frame is not None and frame.f_code.co_filename.startswith(_INSIDE):
        frame, level = frame.f_back, level + 1
    return level
