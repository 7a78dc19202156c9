"""Pre-1.0 content parts in a message, read as their 1.0 forms.

Before 1.0 a message carried a file as one ``binary`` part (``mimeType`` with ``data``, a ``url`` or an
``id``, and a ``filename``), and producers wrote an unset ``metadata`` of a media part as null. 1.0 has
typed media parts (``image``, ``audio``, ``video``, ``document``) with a ``source``, and omits what is
unset. The reference client reads both old forms in a message it receives (a ``MESSAGES_SNAPSHOT``, the
``RUN_STARTED.input`` echo) as the new ones; read otherwise, a user's picture sent by an older client
would vanish from the thread (dropped as an unknown part, UK-04), or the snapshot carrying it would fail
the run. The reading is the reference's, choice for choice:

- the part's kind is its ``mimeType``'s top-level type (``image/``, ``audio/``, ``video/``), any other is a
  ``document``; its source is ``data`` when the part has a (JavaScript-truthy) ``data``, else ``url``;
  a ``filename`` becomes ``metadata.filename``; the part's other members are not carried over;
- a part with neither (only an ``id``, a provider's handle) cannot be read so: it stays ``binary`` and is
  dropped as an unknown part, with UK-04's warning;
- a converted part that repeats a 1.0 part of the same message (same kind and source, and the same
  filename when it names one) is dropped: a producer that wrote both forms meant one file;
- a media part's ``metadata: null`` is read as absent (UK-06).

Only messages are read so: a tool result's content parts (``TOOL_CALL_RESULT.content``) never had the
old forms, and the reference refuses them there as we do.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["upgrade_parts"]

_MEDIA = ("image", "audio", "video", "document")


def _truthy(value: Any) -> bool:
    # JavaScript's truthiness, which the reference's reading uses: an empty object or array is true.
    return not (value is None or value is False or value == "" or (type(value) in (int, float) and value == 0))


def _kind(mime_type: str) -> str:
    top = mime_type.split("/", 1)[0] if "/" in mime_type else ""
    return top if top in ("image", "audio", "video") else "document"


def _modern(part: dict[str, Any]) -> dict[str, Any] | None:
    """The 1.0 part a ``binary`` part stands for, or ``None`` (it names only an id: nothing to read)."""
    mime_type = part["mimeType"]
    if _truthy(part.get("data")):
        source = {"type": "data", "value": part["data"], "mimeType": mime_type}
    elif _truthy(part.get("url")):
        source = {"type": "url", "value": part["url"], "mimeType": mime_type}
    else:
        return None
    modern: dict[str, Any] = {"type": _kind(mime_type), "source": source}
    if _truthy(part.get("filename")):
        modern["metadata"] = {"filename": part["filename"]}
    return modern


def _repeats(other: Any, modern: dict[str, Any], filename: Any) -> bool:
    """Whether ``other``, a part of the same message, is the 1.0 part ``modern`` (and names ``filename``)."""
    if type(other) is not dict or other.get("type") != modern["type"] or type(other.get("source")) is not dict:
        return False
    source, wanted = other["source"], modern["source"]
    if any(key not in source or source[key] != wanted[key] for key in ("type", "value", "mimeType")):
        return False
    if not _truthy(filename):
        return True
    metadata = other.get("metadata")
    return type(metadata) is dict and "filename" in metadata and metadata["filename"] == filename


def upgrade_parts(value: dict[str, Any], warn: Callable[..., None]) -> dict[str, Any] | None:
    """A message's content with its pre-1.0 parts read as 1.0 parts (``None``: nothing to read so).

    A check of the policy (:func:`~agui_client.wire.policy.checks`) for the messages whose content may be parts.
    """
    content = value.get("content")
    if type(content) is not list:
        return None
    if any(type(p) is dict and p.get("type") in _MEDIA and "metadata" in p and p["metadata"] is None
           for p in content):
        content = [{k: v for k, v in p.items() if k != "metadata"}
                   if type(p) is dict and p.get("type") in _MEDIA and "metadata" in p and p["metadata"] is None
                   else p for p in content]
        warn("UK-06", "legacy null 'metadata' on a media content part read as absent", pointer="/content",
             once=("null", "content part", "metadata"))
    if not any(type(p) is dict and p.get("type") == "binary" and type(p.get("mimeType")) is str for p in content):
        return {**value, "content": content} if content is not value["content"] else None
    parts, read = [], False
    for part in content:
        if type(part) is dict and part.get("type") == "binary" and type(part.get("mimeType")) is str:
            modern = _modern(part)
            if modern is not None:
                read = True
                if any(_repeats(other, modern, part.get("filename")) for other in content):
                    continue
                part = modern
        parts.append(part)
    if read:
        warn("UK-04", "deprecated 'binary' content part read as the 1.0 media part its mimeType names",
             pointer="/content", once=("binary part",))
    return {**value, "content": parts}
