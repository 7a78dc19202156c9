# generated from agui_client/_async/retries.py by python -m tools.unasync; do not edit (edit the source, run the script)
"""The sync client's retry loop, ``tried`` (generated from the async client's ``atried``).

What is retried, how long to wait and what the final error says is ``_retries.retry_wait``'s; this
loop enters the try, waits and tries again. The wait ends at once on Ctrl-C (``KeyboardInterrupt``
from ``time.sleep``); nothing more is sent then.
"""

from __future__ import annotations

from collections.abc import Iterator, Callable
from contextlib import AbstractContextManager, ExitStack, contextmanager
from itertools import count
from typing import TypeVar

from .._retries import RetryDeadline, Retrying, note_retries_off, retry_wait
from ..core.exchange import StreamHandle
from ..errors import AguiError, TransportError
from .client_io import pause
from .thread_io import judged

__all__ = ["tried"]

T = TypeVar("T")


@contextmanager
def tried(client: Retrying, deadline: RetryDeadline | None, handle: StreamHandle,
          attempt: Callable[[], AbstractContextManager[T]]) -> Iterator[T]:
    """Enter ``attempt()`` (one request and the head of its answer), again after a failure the agent
    certainly did not act on, up to ``client.max_retries`` more times; then the caller's ``with``
    block runs once, inside the successful one."""
    for tries in count(1):
        stack = ExitStack()
        try:
            opened = stack.enter_context(attempt())
        except TransportError as error:
            if client.max_retries == 0:
                note_retries_off(error)
                raise  # (no judgement, no log: only the hint that retries would have sent it again)
            wait = retry_wait(client, error, tries, deadline, handle)
            if wait is None:
                raise
            pause(wait)
            if client.is_closed:
                # (closed meanwhile, by another task or thread: httpx's closed client would refuse the
                # resend with a RuntimeError naming neither the run nor the close. Nothing more is sent:
                # the last try's failure is the run's, and the thread's pump notes the close on it.)
                raise
            if handle.before_resend is not None:
                try:
                    # (a resume's answers, judged again, as the plan judged them: nothing more is sent)
                    judged(handle.before_resend)
                except AguiError as refused:
                    raise refused from error
            continue
        with stack:
            yield opened
        return
