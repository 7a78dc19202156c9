"""Where the warnings found while reading the wire go.

Decoding and the resume rules find things to tolerate (an unknown field, a legacy null, an
unreadable ``expiresAt``). They report them with :func:`warn` to the active :class:`WarningSink`
(a run session collects them into ``RunResult.warnings``); outside any sink they are emitted through
:mod:`warnings` as :class:`~agui_client.errors.AguiWarning`.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from ..errors import AguiWarning, StreamWarning

__all__ = ["WarningSink", "collect_warnings", "warn", "DROP_WARNINGS", "WARNINGS_PER_CODE"]

#: How many times a warning about something dropped is given per response (``WarningSink.warn``).
DROP_WARNINGS = 100
#: How many warnings of one code a response keeps (``RunSession.warnings``, and the SSE decoder's own).
#: A stream can repeat one fault endlessly at a few bytes each (an unknown SSE field line is two), and
#: each warning costs a couple of hundred bytes: 4 MB of ``x\n`` lines held 2 million warnings, 450 MB.
WARNINGS_PER_CODE = 1000


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


def warn(code: str, message: str, *, pointer: str | None = None, event_type: str | None = None,
         once: tuple[str, ...] | None = None, repeat: int = 1) -> None:
    """Report a warning to the active sink (see :meth:`WarningSink.warn`), or through :mod:`warnings`."""
    sink = _SINK.get()
    if sink is not None:
        sink.warn(code, message, pointer=pointer, event_type=event_type, once=once, repeat=repeat)
    else:
        warnings.warn(str(StreamWarning(code=code, message=message, pointer=pointer, event_type=event_type)),
                      AguiWarning, stacklevel=4)
