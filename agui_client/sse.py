"""Temporary: the old module path, kept while branches in flight still import it (removed in this release)."""

from .wire.sse import SSEDecoder as SSEDecoder
