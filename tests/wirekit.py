"""What the tests of many files write or read on the wire, kept once here: events framed as an agent's
Server-Sent Events body, a whole run saying a text, and an ASGI agent's request body read whole.

Each file had its own copy (eight ``_sse``, two ``_frames``, two ``_events``, one ``frame``, the
body-reading loop in eight agents, and eight agents that read only the body's first message), alike
but for the JSON's spacing and escapes. The framing is the body's bytes, which tests count and cut at
(a memory budget, a byte offset, a limit just crossed), so each spelling a test relied on is kept as
an argument, with ``json.dumps``'s defaults as the default. (``test_quoted_ids``' ``_sse`` frames JSON
text written by hand, a lone UTF-16 half's escape among it, not events: it stays there.)

(Importable from every test folder: pytest puts this folder on ``sys.path`` for its ``conftest.py``.)
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["content_cache", "request_body", "request_json", "sse", "sse_text", "whole_run"]


def sse(*events: Any, compact: bool = False, ensure_ascii: bool = True) -> bytes:
    """``events`` (JSON values) as an SSE body: one ``data:`` line and a blank line each.

    Args:
        events: the events, each written by ``json.dumps``.
        compact: no space after ``,`` and ``:`` (as most producers write JSON), where the byte count matters.
        ensure_ascii: ``json.dumps``'s own: ``False`` writes non-ASCII text as UTF-8, not as escapes.
    """
    separators = (",", ":") if compact else None
    return b"".join(b"data: " + json.dumps(e, separators=separators, ensure_ascii=ensure_ascii).encode() + b"\n\n"
                    for e in events)


def sse_text(*events: Any) -> str:
    """:func:`sse`'s body as text, for a capture file or a ``replay`` of ``str``."""
    return sse(*events).decode()


def whole_run(run_id: str, text: str) -> bytes:
    """A whole run of thread ``t`` saying ``text`` in message ``m-<run_id>``, as an SSE body."""
    return sse({"type": "RUN_STARTED", "threadId": "t", "runId": run_id},
               {"type": "TEXT_MESSAGE_START", "messageId": f"m-{run_id}", "role": "assistant"},
               {"type": "TEXT_MESSAGE_CONTENT", "messageId": f"m-{run_id}", "delta": text},
               {"type": "TEXT_MESSAGE_END", "messageId": f"m-{run_id}"},
               {"type": "RUN_FINISHED", "threadId": "t", "runId": run_id})


async def request_body(receive: Callable[[], Awaitable[Any]]) -> bytes:
    """The whole body of the request an ASGI app is answering, however many messages it came in."""
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            return body


async def request_json(receive: Callable[[], Awaitable[Any]]) -> Any:
    """The JSON of the request an ASGI agent is answering (its :func:`request_body`)."""
    return json.loads(await request_body(receive))


def content_cache(decoded: bool) -> Any:
    """The cache ``TEXT_MESSAGE_CONTENT``'s shapes are compiled into: the decoder's when the events are
    made (``stream()``, a session handing events back), else the front-end's (``run()``, a quiet session).
    """
    from agui_client.core import front
    from agui_client.wire import codec

    if not decoded:
        return front.FRONT["TEXT_MESSAGE_CONTENT"].cache
    cache = codec._derived.cache_of(codec._READERS["TEXT_MESSAGE_CONTENT"])
    assert cache is not None
    return cache
