"""Where a nested object sits in the value being decoded, worked out only when a warning names it.

The converter's hook for a class sees the object it reads, not where that object is: an unknown key
inside ``RUN_FINISHED.outcome.interrupts[0]`` was warned of "at /key". Errors get their whole pointer
as they unwind (each container adds its step), but a warning is said on the spot and the read goes on.
Keeping a path while reading would cost every object of every checked read something, for the few
that warn; so the checked read only notes its root (:func:`enter`), and a warning about a nested
object asks :func:`at` for the object's place: the root is walked once then, each container noted with
its parent and its key, and the pointer is spelled from the object up.
"""

from __future__ import annotations

from contextvars import ContextVar, Token
from typing import Any

from .jsonio import escape

__all__ = ["enter", "leave", "at", "MOST_NOTED"]


class _Root:
    """The value a checked read started from, and (once asked) each container's parent and key in it."""

    __slots__ = ("value", "_parents")

    def __init__(self, value: Any) -> None:
        self.value = value
        self._parents: dict[int, tuple[int, str]] | None = None

    def pointer(self, obj: Any) -> str | None:
        """``obj``'s JSON pointer in the root (``""`` for the root), or ``None`` when it is not in it
        (a copy a check made)."""
        if obj is self.value:
            return ""
        if self._parents is None:
            self._parents = _parents(self.value)
        link = self._parents.get(id(obj))
        if link is None:
            return None
        steps = []
        while link is not None:
            parent, step = link
            steps.append(step)
            link = self._parents.get(parent)
        return "".join(reversed(steps))


#: The most containers :func:`_parents` notes of one root. The note costs some 200 bytes a container,
#: charged to no budget, and the agent chooses how many a value holds: a 16 MiB event of ``[[],…]``
#: (five million) with one unknown key elsewhere would have cost a gigabyte to place one warning. An
#: object past the bound is warned of at its own pointer, as before whole pointers were said.
MOST_NOTED = 65_536


def _parents(root: Any) -> dict[int, tuple[int, str]]:
    """Each object and array under ``root`` by ``id`` (at most :data:`MOST_NOTED` of them): its parent's
    ``id`` and its step from it (``/key``). A container noted has its parents noted too (each is noted
    from its parent, after it).

    A loop, not a recursion: the value's depth is bounded by its parser, not by Python's stack. The
    ids stay valid while the root is held (the read holds it).
    """
    parents: dict[int, tuple[int, str]] = {}
    pending = [root]
    while pending:
        node = pending.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, item in items:
            if isinstance(item, (dict, list)) and id(item) not in parents and item is not root:
                if len(parents) >= MOST_NOTED:
                    return parents
                parents[id(item)] = (id(node), "/" + (escape(key) if type(key) is str else str(key)))
                pending.append(item)
    return parents


_ROOT: ContextVar[_Root | None] = ContextVar("agui_client_decoded_root", default=None)


def enter(value: Any) -> Token[_Root | None]:
    """Note ``value`` as the root of the checked read starting now (give the token to :func:`leave`)."""
    return _ROOT.set(_Root(value))


def leave(token: Token[_Root | None]) -> None:
    """End the checked read :func:`enter` began."""
    _ROOT.reset(token)


def at(obj: Any, pointer: str) -> str:
    """``pointer`` (within ``obj``) from the root of the checked read under way: ``obj``'s place before
    it. Outside a read, or for an object not in its root, ``pointer`` as it is."""
    root = _ROOT.get()
    if root is None:
        return pointer
    place = root.pointer(obj)
    return pointer if place is None else place + pointer
