"""What a thread store's methods can take, read from their signatures (for ``core/standing.py``).

The store protocol grew: ``append`` (a run's changes instead of the whole record), ``claim(data=...)``
(a new thread created claimed), ``record_id`` on the writes. A store written for an earlier protocol,
or a subclass that overrides one method, is still driven correctly: what each store can take is read
here, once per class, from its methods.
"""

from __future__ import annotations

import inspect
import weakref
from typing import Any

import attrs

__all__ = ["Traits", "traits"]


@attrs.frozen(slots=True)
class Traits:
    """What a store's methods can take, read from their signatures."""

    appends: bool
    creates_claimed: bool
    names_records: frozenset[str]


_STORE_METHODS = ("load", "save", "claim", "release", "append")  # (the first four every store has)
#: Traits per store class, with the methods they were read from: reading four signatures costs tens
#: of microseconds, and a web backend makes a thread object per request. Read again when a method of
#: the class was replaced since (a patched class), and never cached for a store whose methods are
#: attributes of the object itself.
_TRAITS: weakref.WeakKeyDictionary[type, tuple[tuple[Any, ...], Traits]] = weakref.WeakKeyDictionary()


def traits(store: Any) -> Traits:
    kind = type(store)
    methods = tuple(getattr(kind, name, None) for name in _STORE_METHODS)
    # (a proxy that forwards through __getattr__ has its methods on no class: each object its own)
    per_class = (None not in methods[:4] and getattr(kind, "__getattr__", None) is None
                 and not any(name in getattr(store, "__dict__", {}) for name in _STORE_METHODS))
    cached = _TRAITS.get(kind) if per_class else None
    if cached is not None and cached[0] == methods:
        return cached[1]
    read = Traits(appends=_appends(store), creates_claimed=_creates_claimed(store),
                  names_records=_takes_record_id(store))
    if per_class:
        try:
            _TRAITS[kind] = (methods, read)
        except TypeError:  # (a class that takes no weak reference: read every time)
            pass
    return read


def _appends(store: Any) -> bool:
    """Whether a run's save may go to the store's ``append``: it has one, of the store object itself or
    of a class at least as derived as the one whose ``save`` it has.

    A subclass that overrides ``save`` alone (to audit or mirror every save) inherited ``append`` from
    a store that knew nothing of that ``save``: it keeps getting every save, whole, as before ``append``
    existed. So does a proxy that forwards calls through ``__getattr__`` (no ``append`` of its own).
    """
    if not callable(getattr(store, "append", None)):
        return False
    if "append" in getattr(store, "__dict__", {}):
        return True
    owners = {name: next((c for c in type(store).__mro__ if name in c.__dict__), None) for name in ("append", "save")}
    append_owner, save_owner = owners["append"], owners["save"]
    return append_owner is not None and (save_owner is None or issubclass(append_owner, save_owner))


def _takes_record_id(store: Any) -> frozenset[str]:
    """The write methods of ``store`` that take ``record_id`` (the stores here: all four). A store written
    for the earlier protocol, or a subclass whose override leaves the parameter out, gets none there."""
    names = set()
    for name in ("save", "claim", "append", "release"):
        try:
            parameters = inspect.signature(getattr(store, name)).parameters.values()
        except (AttributeError, TypeError, ValueError):
            continue
        # (only a parameter of that name: a method that takes **options may well drop it, and the
        # object would then take a record's random id for the one it named)
        if any(p.name == "record_id" and p.kind is not p.VAR_KEYWORD for p in parameters):
            names.add(name)
    return frozenset(names)


def _creates_claimed(store: Any) -> bool:
    """Whether the store's ``claim`` can create a thread it does not hold (it takes ``data``).

    The stores here can. A third-party store written for the earlier protocol (``claim`` without
    ``data``) cannot: a new thread is then created by a save and claimed next (two writes; still one
    sender, since only a claim lets a run send).
    """
    try:
        parameters = inspect.signature(store.claim).parameters.values()
    except (TypeError, ValueError):  # (no signature to read: take it for the current protocol)
        return True
    return any(p.name == "data" or p.kind is p.VAR_KEYWORD for p in parameters)
