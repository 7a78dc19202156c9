"""The HTTP shells: ``AgentClient`` and ``AsyncAgentClient``.

They move bytes and nothing else: POST the encoded ``RunAgentInput``, check the response is an event
stream, and hand every SSE payload on the moment its bytes arrive. Framing, decoding, the sequence
rules and the fold live in the sans-IO core; ``Thread``/``AsyncThread`` loop the payloads into it.

Safe by default: a connect timeout, an idle timeout between bytes (keep-alive comments count as
bytes), a per-event size limit enforced while buffering, a bounded excerpt of error bodies, no
redirects followed, and the response closed whatever way the caller leaves the stream.

``AsyncAgentClient`` (``_async/client.py``) is the one source of both: ``python -m tools.unasync``
writes ``AgentClient`` (``_sync/client.py``) from it; what they really do differently is written by
hand beside each (``client_io.py``). This module is where both are imported from.
"""

from __future__ import annotations

from ._async.client import AsyncAgentClient
from ._client_base import (
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_RUN_BYTES,
    DEFAULT_MAX_RUN_MEMORY,
    check_url,
)
from ._sync.client import AgentClient
from .core.exchange import StreamHandle

__all__ = ["AgentClient", "AsyncAgentClient", "StreamHandle", "DEFAULT_IDLE_TIMEOUT", "DEFAULT_CONNECT_TIMEOUT",
           "DEFAULT_MAX_RUN_BYTES", "DEFAULT_MAX_RUN_MEMORY", "check_url"]
