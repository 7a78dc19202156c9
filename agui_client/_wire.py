"""Temporary: the old module path, kept while branches in flight still import it (removed in this release)."""

from .wire.codec import encode_messages as encode_messages
from .wire.jsonio import plain_json as plain_json
