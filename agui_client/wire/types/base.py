"""Shared aliases for the wire types, and the short ``repr`` of the records that hold an agent's words."""

from __future__ import annotations

from typing import Any

import attrs

from ..._inert import quoted_name

__all__ = ["JSON", "Metadata", "brief_repr", "PREVIEW_CHARS"]

#: Free-form JSON carried verbatim (state, payloads, results, rawEvent …).
JSON = Any

#: Envelope metadata: a JSON object whose values are any JSON (``null`` included).
Metadata = dict[str, Any]

#: The most characters of a text field a ``repr`` shows (then ``…`` and the text's length).
PREVIEW_CHARS = 40
#: The most items of a tuple a ``repr`` names (then how many more).
_LISTED = 3


def brief_repr(record: Any) -> str:
    """A record's ``repr`` of bounded size, as httpx shows a response (``<Response [200 OK]>``).

    A message's text, an interrupt's schema or a tool's parameters may be a megabyte: printed whole in a
    REPL, a log line or a test's failure they flood the screen. Shown instead: the class, each set field
    (``None`` and empty ones left out) with ids and names quoted whole (:func:`quoted_name`, cut at 100
    characters with a digest: two ids never read the same), other text as its first
    :data:`PREVIEW_CHARS` characters and its length, an object as its number of keys, a tuple as the ids
    (or the count) of its items, a nested record as its own brief ``repr``. Every text is escaped as an
    id is, so what the agent wrote cannot act on the terminal. Equality and the fields are untouched:
    ``attrs.asdict(record)`` or the codec's ``encode`` give everything.

    Example: ``UserMessage(id="m1", content="x" * 100)`` shows as
    ``<UserMessage id='m1' content='xxxx…' (100 chars)>`` (with all 40 ``x``).
    """
    shown = [type(record).__name__]
    for field in attrs.fields(type(record)):
        value = getattr(record, field.name)
        if field.repr and value is not None and value != () and value != {}:
            shown.append(f"{field.name}={_brief(field.name, value)}")
    return "<" + " ".join(shown) + ">"


def _brief(name: str, value: Any) -> str:
    if isinstance(value, str):
        # (an event's names too: its step, tool and subagent names, and an unknown event's type)
        if name in ("id", "name", "reason", "role", "activity_type", "mime_type", "provider", "status", "type",
                    "subtype") or name.endswith(("_id", "_name")):
            return quoted_name(value)
        if len(value) <= PREVIEW_CHARS:
            return quoted_name(value)
        return f"{quoted_name(value[:PREVIEW_CHARS])}… ({len(value)} chars)"
    if value is True or value is False or isinstance(value, (int, float)):
        return repr(value)
    if attrs.has(type(value)):
        return brief_repr(value)
    if isinstance(value, dict):
        return f"{{{len(value)} key{'' if len(value) == 1 else 's'}}}"
    if isinstance(value, (tuple, list)):
        ids = [item if isinstance(item, str) else getattr(item, "id", getattr(item, "name", None)) for item in value]
        more = len(value) - _LISTED
        if all(isinstance(i, str) for i in ids):
            return ("[" + ", ".join(quoted_name(i) for i in ids[:_LISTED])
                    + (f", ...] ({more} more)" if more > 0 else "]"))
        return f"[{len(value)} items]"
    return f"<{type(value).__name__}>"
