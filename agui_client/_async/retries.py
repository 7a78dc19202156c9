"""The async client's retry loop, ``atried`` (the source of the sync client's ``tried``).

What is retried, how long to wait and what the final error says is ``_retries.retry_wait``'s; this
loop enters the try, waits and tries again. The wait ends at once when the task is cancelled
(``anyio.sleep``); nothing more is sent then.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from itertools import count
from typing import TypeVar

from .._retries import RetryDeadline, Retrying, note_retries_off, retry_wait
from ..core.exchange import StreamHandle
from ..errors import AguiError, TransportError
from .client_io import pause
from .thread_io import judged

# unasync: sync docstring
"""The sync client's retry loop, ``tried`` (generated from the async client's ``atried``).

What is retried, how long to wait and what the final error says is ``_retries.retry_wait``'s; this
loop enters the try, waits and tries again. The wait ends at once on Ctrl-C (``KeyboardInterrupt``
from ``time.sleep``); nothing more is sent then.
"""

__all__ = ["atried"]

T = TypeVar("T")


@asynccontextmanager
async def atried(client: Retrying, deadline: RetryDeadline | None, handle: StreamHandle,
                 attempt: Callable[[], AbstractAsyncContextManager[T]]) -> AsyncIterator[T]:
    """Enter ``attempt()`` (one request and the head of its answer), again after a failure the agent
    certainly did not act on, up to ``client.max_retries`` more times; then the caller's ``async with``
    block runs once, inside the successful one."""
    for tries in count(1):
        stack = AsyncExitStack()
        try:
            opened = await stack.enter_async_context(attempt())
        except TransportError as error:
            if client.max_retries == 0:
                note_retries_off(error)
                raise  # (no judgement, no log: only the hint that retries would have sent it again)
            wait = retry_wait(client, error, tries, deadline, handle)
            if wait is None:
                raise
            await pause(wait)
            if client.is_closed:
                # (closed meanwhile, by another task or thread: httpx's closed client would refuse the
                # resend with a RuntimeError naming neither the run nor the close. Nothing more is sent:
                # the last try's failure is the run's, and the thread's pump notes the close on it.)
                raise
            if handle.before_resend is not None:
                try:
                    # (a resume's answers, judged again, as the plan judged them: nothing more is sent)
                    await judged(handle.before_resend)
                except AguiError as refused:
                    raise refused from error
            continue
        async with stack:
            yield opened
        return
