"""Shared aliases for the wire types."""

from __future__ import annotations

from typing import Any

__all__ = ["JSON", "Metadata"]

#: Free-form JSON carried verbatim (state, payloads, results, rawEvent …).
JSON = Any

#: Envelope metadata: a JSON object whose values are any JSON (``null`` included).
Metadata = dict[str, Any]
