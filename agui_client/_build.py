"""Cheaper construction of the frozen wire types, for the decoder and the fold.

A frozen slotted attrs class sets each field in ``__init__`` through ``object.__setattr__`` (a frozen
class forbids plain assignment), about 70 ns a field. The fold and the decoder build a typed object
per event and per message, so that cost is a visible part of reading a stream. ``builder(cls)``
returns a function with the same keyword-only signature that writes each slot through its member
descriptor instead (half the time), for the classes where that is exactly what ``__init__`` would do:
no validators, converters, factories, ``__attrs_post_init__`` or cached hash. Any other class gets
itself back, so callers need not care which they hold.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

__all__ = ["builder"]

_BUILDERS: dict[type, Callable[..., Any]] = {}
_FACTORY: type = type(attrs.Factory(list))


def builder(cls: type) -> Callable[..., Any]:
    """A constructor equivalent to ``cls(**kwargs)`` for a frozen slotted attrs class, or ``cls`` itself."""
    found = _BUILDERS.get(cls)
    if found is None:
        found = _BUILDERS[cls] = _compile(cls)
    return found


def _compile(cls: type) -> Callable[..., Any]:
    if not attrs.has(cls) or "__slots__" not in cls.__dict__ or hasattr(cls, "__attrs_post_init__") \
            or hasattr(cls, "__attrs_pre_init__"):
        return cls
    fields = attrs.fields(cls)
    namespace: dict[str, Any] = {"new": object.__new__, "cls": cls}
    parameters: list[str] = []
    body: list[str] = []
    for i, a in enumerate(fields):
        if a.validator is not None or a.converter is not None or isinstance(a.default, _FACTORY) \
                or not a.init or a.alias is None:
            return cls
        slot = cls.__dict__.get(a.name)
        if slot is None or not hasattr(slot, "__set__"):
            return cls
        namespace[f"set{i}"] = slot.__set__
        if a.default is attrs.NOTHING:
            parameters.append(a.alias)
        else:
            namespace[f"default{i}"] = a.default
            parameters.append(f"{a.alias}=default{i}")
        body.append(f"    set{i}(self, {a.alias})")
    if any(name.startswith("__attrs_cached_hash") or name == "_attrs_cached_hash" for name in cls.__dict__):
        return cls
    signature = f"*, {', '.join(parameters)}" if parameters else ""
    source = "\n".join([f"def build({signature}):", "    self = new(cls)", *body, "    return self"])
    exec(source, namespace)  # noqa: S102 - generated from the class's own fields
    built: Callable[..., Any] = namespace["build"]
    built.__name__ = built.__qualname__ = f"build_{cls.__name__}"
    built.__doc__ = f"Build a {cls.__name__} (as its constructor would, through the slots)."
    return built
