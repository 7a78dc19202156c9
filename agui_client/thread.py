"""``Thread`` and ``AsyncThread``: one conversation across runs.

A thread is a :class:`~agui_client.core.flow.Conversation` (its folded state and its standing in the
client's store) whose run protocol, claim, send, fold, save, release, is written once in
``core/flow.py`` as a generator of effects. The two classes are its pumps: they carry each effect out,
in the calling thread or on the event loop. ``AsyncThread`` (``_async/thread.py``) is their one source:
``python -m tools.unasync`` writes ``Thread`` (``_sync/thread.py``) from it. What they really do
differently, the store call in a worker thread, a write shielded from cancellation, a Ctrl-C held until
a write returned, is written by hand beside each (``thread_io.py``). This module is where both are
imported from.
"""

from __future__ import annotations

from ._async.thread import AsyncThread
from ._async.thread_io import in_worker
from ._streams import AsyncLoopStream, AsyncRunStream, LoopStream, RunStream
from ._sync.thread import Thread
from .core.flow import ResumeInput
from .core.plan import MessageInput

__all__ = ["Thread", "AsyncThread", "RunStream", "AsyncRunStream", "LoopStream", "AsyncLoopStream", "MessageInput",
           "ResumeInput", "in_worker"]
