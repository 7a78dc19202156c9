"""Python values that are JSON: what kind a value is, whether it is plain JSON, and its copies.

* :func:`describe` names a value's JSON kind for a message; :func:`plain_json` says whether a value
  holds only JSON's types (:class:`PlainList` / :class:`PlainDict` mark what was checked already);
  :func:`has_surrogate` finds half a character that UTF-8 cannot write; :func:`is_json` judges a text;
  :func:`cycle_at` names where a value holds itself, :func:`written_past` where one holding a
  container through many paths writes out more than :data:`WRITTEN_MEMBERS` members.
* :func:`copy_json`, :func:`tree_copy` and :func:`deep_copy` copy JSON trees without recursion;
  :func:`frozen_json` and :func:`thawed_json` keep a tree as bytes that a fresh copy is made from.

Reading and writing JSON text, with its defences, is :mod:`~agui_client.wire.jsonio`'s (stored
records :mod:`~agui_client.wire.records`', a large array slice by slice :mod:`~agui_client.wire.slices`').
"""

from __future__ import annotations

import copy
import json
import marshal
import math
import re
from typing import Any

from .._inert import KEY_CHARS, quoted_name, shown_pointer
from ..errors import UnencodableValue

#: orjson, the optional faster parser and writer, or ``None`` when it is not installed: imported here
#: only, for this module and :mod:`~agui_client.wire.jsonio` (the package works without it; the
#: record and slice readers take it from jsonio, where a test can set it to ``None``).
ORJSON: Any
try:
    import orjson as ORJSON
except ImportError:  # pragma: no cover - exercised in environments without orjson
    ORJSON = None

__all__ = [
    "ORJSON",
    "describe",
    "shown_key",
    "plain_json",
    "has_surrogate",
    "PlainList",
    "PlainDict",
    "copy_json",
    "deep_copy",
    "tree_copy",
    "foreign_copy",
    "frozen_json",
    "thawed_json",
    "cycle_at",
    "written_past",
    "costly_refused",
    "WALKED_UNMARKED",
    "WRITTEN_MEMBERS",
    "CONTAINS_ITSELF",
    "is_json",
]

_JSON_CLASSES = (str, int, float, list, dict)

def shown_key(key: str) -> str:
    """An object's key as a message quotes it: as every id the agent chose (``_inert.quoted_name``: its
    ``repr``, what ``repr`` leaves invisible escaped, cut past :data:`KEY_CHARS` characters with a digest
    of the whole). A key may be as long as an event (a megabyte), and a warning naming it is kept with the
    run's result and printed whole; two keys that differ past the cut still read differently. The pointer
    beside it keeps the key as it came."""
    return quoted_name(key, KEY_CHARS + 2)  # (+2: the quotes, so a key of KEY_CHARS is shown whole)


def describe(value: Any) -> str:
    """What kind of JSON value ``value`` is, for a message (``"a string"``, ``"null"`` …)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if type(value) not in _JSON_CLASSES and isinstance(value, _JSON_CLASSES):
        # (a subclass reads as what it derives from; the decoder takes the JSON types exactly)
        base = next(cls for cls in _JSON_CLASSES if isinstance(value, cls))
        return f"a {type(value).__name__}, not a plain {base.__name__}"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


class PlainList(list):  # type: ignore[type-arg]
    """A list of wire values already checked with :func:`plain_json` (so nobody walks it again).

    Only for data serialised at once and never changed (``ThreadState.dump(share_state=True)``).
    """


class PlainDict(dict):  # type: ignore[type-arg]
    """A dict of wire values already known to be plain JSON (a shallow copy; see :class:`PlainList`)."""


_SURROGATE = re.compile("[\ud800-\udfff]")


def has_surrogate(text: str) -> bool:
    """Whether ``text`` holds a UTF-16 surrogate (half of a character, which UTF-8 cannot encode).

    An ASCII string cannot (``isascii`` reads a flag the string keeps). Otherwise orjson, which refuses
    to write a surrogate and scans with SIMD, answers ten to thirty times faster than a regular
    expression reading every character (1 ms against 13 for 2.4 MB); without orjson, the expression.

    Example::

        >>> has_surrogate("caf\u00e9"), has_surrogate("half \ud83d")
        (False, True)
    """
    if text.isascii():
        return False
    if ORJSON is None:
        return _SURROGATE.search(text) is not None
    try:
        ORJSON.dumps(text)
    except TypeError:  # (orjson.JSONEncodeError: "surrogates not allowed")
        return True
    return False


def plain_json(value: Any, tuples: bool = True) -> bool:
    """Whether ``value`` holds only dicts, lists, tuples, str, int, bool, None and finite floats, and no
    cycle (a container inside itself: JSON cannot write one). ``tuples=False``: a tuple inside ``value``
    is not plain (``value`` itself may be one), for a caller keeping the members as a parser makes them.

    Exact types: a subclass (an enum, say) is not plain. A :class:`PlainList` or :class:`PlainDict`
    inside counts as checked. A value holding itself (``state["self"] = state``, handed to
    ``set_state`` or a save) was walked without end. The walk now counts the members it reads; past
    :data:`WALKED_UNMARKED` of them it marks each container it meets, and the first met again (held
    twice, or inside itself) has :func:`cycle_at` say which, and :func:`written_past` whether what
    is held twice writes out more than :data:`WRITTEN_MEMBERS` members (not plain either: a list
    doubled 40 times over is 40 lists, and a trillion members to write). A value of fewer members pays the count
    alone: marking every container made the walk half as slow again (1.3 MB of state, 7.8 ms, 11.9
    marked); past it, 0.3 µs a container.
    """
    stack = [value]
    pop = stack.pop
    push = stack.append
    finite = math.isfinite
    left = WALKED_UNMARKED
    seen: set[int] | None = None  # the containers entered since the count ran out
    shared = False  # whether cycle_at found the container met again held twice, not inside itself
    while stack:
        node = pop()
        kind = type(node)
        if kind is dict:
            items: Any = node.values()
        elif kind is list or kind is tuple:
            items = node
        else:
            items = (node,)
        if seen is None:
            left -= len(items)
            if left < 0:
                seen = set()
        for item in items:
            kind = type(item)
            if kind is str or kind is int or item is None or kind is bool or kind is PlainList or kind is PlainDict:
                continue
            if kind is float:
                if not finite(item):
                    return False
            elif kind is dict or kind is list or kind is tuple and tuples:
                if seen is None:
                    pass
                elif id(item) in seen:
                    if not shared:
                        # held twice, or inside itself: a cycle, or a list held through so many paths
                        # that writing it out (as JSON must, once a path) costs more than its size
                        if cycle_at(value) is not None or written_past(value) is not None:
                            return False
                        shared = True
                    continue  # (walked already)
                else:
                    seen.add(id(item))
                push(item)
            else:
                return False
    return True


#: The members :func:`plain_json` reads before it marks the containers it meets, to find a cycle. A cycle
#: is walked round until then: some this many members more, a few milliseconds.
WALKED_UNMARKED = 1 << 18


def cycle_at(value: Any) -> str | None:
    """The JSON pointer of the first place, in document order, where ``value`` holds a container it is
    inside of; ``None`` when it holds none (a container held twice side by side is no cycle).

    Dicts, lists and tuples are followed, subclasses included (the encoders write those too). A depth-first
    walk without recursion; a container finished once is not entered again, so a value that holds one
    list many times costs its size, not the number of ways to reach it. A message names the pointer: the
    encoders' own refusal ("Circular reference detected") does not say where.

    Example::

        >>> state = {"rows": [1, 2]}
        >>> state["rows"].append(state)
        >>> cycle_at(state), cycle_at({"a": [1], "b": [1]})
        ('/rows/2', None)
    """
    if not isinstance(value, _CONTAINERS):
        return None
    path = [value]  # the containers entered and not yet finished, outermost first
    inside = {id(value)}
    finished: set[int] = set()
    pending = [_members(value)]
    while pending:
        for key, item in pending[-1]:
            if isinstance(item, _CONTAINERS):
                ident = id(item)
                if ident in inside:
                    return _pointer_of(path, key)
                if ident not in finished:
                    inside.add(ident)
                    path.append(item)
                    pending.append(_members(item))
                    break
        else:
            pending.pop()
            ident = id(path.pop())
            inside.discard(ident)
            finished.add(ident)
    return None


_CONTAINERS = (dict, list, tuple)


#: The most members a value holding a container more than once may write out (each path to it writes
#: it again, as JSON must): 16,777,216, some 0.15 s of orjson's writing and 33 MB of text (12.6
#: million members of a doubled list: 0.11 s, 25 MB). A chain of lists each holding the one before
#: twice (``b = [a, a]``, ``c = [b, b]`` …) is 41 lists at 40 levels and a trillion members written:
#: no encoder finishes it, and each went on until memory ran out. A value holding no container twice
#: writes out its own size, and is not counted.
WRITTEN_MEMBERS = 1 << 24

#: Why a value holding itself is not JSON (as :func:`~agui_client.wire.jsonio.json_problem` says it).
CONTAINS_ITSELF = "the value contains itself"


def written_past(value: Any, limit: int = WRITTEN_MEMBERS) -> tuple[str, str] | None:
    """``(pointer, reason)`` when ``value`` writes out more than ``limit`` members (each container's,
    once a path to it), else ``None``; the pointer names the deepest container past the limit, first in
    document order (where the doubling passes it). In time proportionate to the containers held, not to
    the paths to them: each container's count is added up once. A cycle adds nothing (:func:`cycle_at`
    names it).

    Example::

        >>> chain = [0]
        >>> for _ in range(30):
        ...     chain = [chain, chain]
        >>> written_past({"chain": chain}, limit=1_000_000)[0]
        '/chain/0/0/0/0/0/0/0/0/0/0/0'
    """
    if not isinstance(value, _CONTAINERS):
        return None
    written: dict[int, int] = {}  # a container's members written out, its own and its containers'
    stack: list[tuple[Any, bool]] = [(value, False)]
    while stack:
        node, done = stack.pop()
        if done:
            written[id(node)] = len(node) + sum([written[id(item)] for _, item in _members(node)
                                                 if isinstance(item, _CONTAINERS)])
        elif id(node) not in written:
            written[id(node)] = 0  # (entered: met again inside itself, a cycle, it adds nothing)
            stack.append((node, True))
            stack += [(item, False) for _, item in _members(node) if isinstance(item, _CONTAINERS)]
    if written[id(value)] <= limit:
        return None
    keys: list[Any] = []
    node = value
    # (the containers the pointer passes through: inside a cycle, a container's count includes the ones
    # it is inside of, and a descent following the counts alone went round the cycle without end)
    passed = {id(value)}
    while True:
        inner = next(((key, item) for key, item in _members(node) if isinstance(item, _CONTAINERS)
                      and id(item) not in passed and written[id(item)] > limit), None)
        if inner is None:
            break
        keys.append(inner[0])
        node = inner[1]
        passed.add(id(node))
    pointer = "".join("/" + str(k).replace("~", "~0").replace("/", "~1") for k in keys)
    return pointer, (f"written out it holds {written[id(node)]:,} members, more than {limit:,}: a container "
                     "in it is held through that many paths, and JSON writes it once for each")


def costly_refused(value: Any) -> UnencodableValue | None:
    """The refusal of a value nothing can write at a cost bounded by its size: one holding itself, or one
    :func:`written_past` the limit; ``None`` for any other. Looked for only when a walk has met a
    container again (each walk counts first: see :data:`WALKED_UNMARKED`)."""
    pointer = cycle_at(value)
    if pointer is not None:
        return UnencodableValue(f"the value holds itself at {shown_pointer(pointer)}: JSON cannot hold a cycle",
                                pointer=pointer, reason=CONTAINS_ITSELF)
    found = written_past(value)
    if found is not None:
        return UnencodableValue(f"the value cannot be written out at {shown_pointer(found[0])}: {found[1]}",
                                pointer=found[0], reason=found[1])
    return None


def _members(node: Any) -> Any:
    """``(key, member)`` for each member of a dict, list or tuple."""
    return iter(node.items()) if isinstance(node, dict) else enumerate(node)


def _pointer_of(path: list[Any], key: Any) -> str:
    """The pointer from ``path[0]`` through each container of ``path`` to member ``key`` of ``path[-1]``.

    Only the keys found are kept while walking: each step's key is looked up here, in its parent, by
    identity (once, for the message)."""
    keys = []
    for parent, child in zip(path, path[1:], strict=False):
        keys.append(next(k for k, member in _members(parent) if member is child))
    keys.append(key)
    return "".join("/" + str(k).replace("~", "~0").replace("/", "~1") for k in keys)


def copy_json(value: Any) -> Any:
    """A deep copy of plain JSON data (:func:`plain_json` said so, or a parser made it: no cycle), through
    orjson when installed, else copied level by level (:func:`tree_copy`)."""
    if value is None or type(value) in (str, int, float, bool):
        return value
    if ORJSON is not None:
        try:
            return ORJSON.loads(ORJSON.dumps(value))
        except (TypeError, ValueError):
            pass  # lone surrogates, integers beyond 64 bits, very deep values: the generic copy is right
    return tree_copy(value)


def tree_copy(value: Any) -> Any:
    """A copy of plain JSON data (no cycle) without recursion: each dict or list copied whole at C speed,
    then its containers put in, as orjson's copy makes them (a tuple or a :class:`PlainList` a list, a
    :class:`PlainDict` a dict, a list held twice copied twice).

    The copy of state deeper than orjson writes: :func:`deep_copy`'s table of every container copied
    (for cycles, which plain JSON has none of) made it twice as slow (a MiB of arrays 500 deep, some
    0.45 s against 0.25; orjson copies 200 deep in 0.13).

    A value held unchecked (``dump(share_state=True)`` shares the thread's state, which its caller may
    change) can hold itself, or a list through so many paths that its copy never ends: past
    :data:`WALKED_UNMARKED` containers copied, each copied is marked, and at the first met again the
    value is judged once (:func:`costly_refused`).

    Raises:
        UnencodableValue: ``value`` holds itself, or is :func:`written_past` the limit (``.pointer``).
    """
    kind = type(value)
    if kind not in _COPIED:
        return value
    root = _shallow(value, kind)
    level = [root]
    left = WALKED_UNMARKED  # (containers, counted a level at a time: nothing more per container)
    while level and left >= 0:
        below: list[Any] = []
        push = below.append
        for target in level:
            for key, item in (target.items() if type(target) is dict else enumerate(target)):
                kind = type(item)
                if kind in _COPIED:  # (the shallow copy made here, not by _shallow: a call a container is a fifth)
                    target[key] = copied = dict(item) if kind is dict or kind is PlainDict else list(item)
                    push(copied)
        level = below
        left -= len(level)
    if level:
        _copied_marked(value, level)
    return root


def _copied_marked(value: Any, level: list[Any]) -> None:
    """:func:`tree_copy`'s levels past its count: each container copied is marked (``id`` of the one it
    copies), and the first met again has the value judged once (:func:`costly_refused`). Judging the
    whole value as the count ran out walked it twice more, a cycle and the paths counted, whatever it
    held: 150,000 rows copied in 0.37 s took 1.3-1.5."""
    seen: set[int] = set()
    judged = False
    while level:
        below: list[Any] = []
        push = below.append
        for target in level:
            for key, item in (target.items() if type(target) is dict else enumerate(target)):
                kind = type(item)
                if kind in _COPIED:
                    if not judged:
                        if id(item) in seen:
                            refused = costly_refused(value)
                            if refused is not None:
                                raise refused
                            judged = True  # (held twice within the limit: copied once a path, as JSON writes it)
                        else:
                            seen.add(id(item))
                    target[key] = copied = dict(item) if kind is dict or kind is PlainDict else list(item)
                    push(copied)
        level = below


def frozen_json(value: Any) -> bytes | None:
    """``value`` (a JSON tree: dicts, lists, str, int, float, bool, None, each container held once) as
    bytes that :func:`thawed_json` makes a fresh copy from, or ``None`` when it cannot be kept so
    (nested deeper than ``marshal`` writes, some 2,000 levels, or holding a subclass such as a
    :class:`PlainDict`). A tuple would come back a tuple: the caller hands lists.

    The bytes are ``marshal``'s, made and read in this process only (never stored or sent: the format
    is the interpreter's own). A copy made from them builds each container at C speed, and each string and number
    anew, as a parser does: the cheapest copy of its own a reader can be handed.
    Measured (CPU time, best of 20) on a MB of rows of small objects: 7.0 ms, where orjson's copy
    (write, then parse) took 11.8 and parsing the text alone 11.3; 1.3 MB of long strings 0.13 against
    0.47. Writing the bytes costs more than orjson's writing (3.7 ms against 1.2), paid once a change.

    A container held twice in ``value`` would come back held twice in each copy (``marshal`` keeps
    what it sees shared): a tree holds none.
    """
    try:
        return marshal.dumps(value)
    except ValueError:  # (too deep, or a type marshal does not write)
        return None


def thawed_json(frozen: bytes) -> Any:
    """A fresh copy of the value :func:`frozen_json` kept as ``frozen``: every dict and list new."""
    return marshal.loads(frozen)


def foreign_copy(value: Any, plain: bool | None = None) -> Any:
    """A copy of JSON data that came with an object built elsewhere (an event, an interrupt), exactly as it is.

    The fast copy goes through orjson, which would quietly write ``NaN`` as ``null`` and a ``datetime``
    as a string; what is not plain JSON is deep-copied instead (a save then refuses it, as it must).
    ``plain``: whether ``value`` is plain JSON, if the caller knows already.
    """
    if plain if plain is not None else plain_json(value):
        return copy_json(value)
    return deep_copy(value)


def deep_copy(value: Any) -> Any:
    """``copy.deepcopy`` of a JSON-shaped tree without recursion, in time proportionate to its size.

    The decoder admits nesting to 512 levels, and ``copy.deepcopy`` recurses twice per level: a deep
    but valid state would end in a ``RecursionError`` (earlier still when the caller is deep). Dicts,
    lists and tuples are copied here level by level (each container copied whole at C speed, then its
    containers put in), a container met twice is copied once (as ``deepcopy`` does, so a cycle ends);
    anything else is a leaf, deep-copied alone. A :class:`PlainDict` or :class:`PlainList` (a save's
    marks) comes back a plain ``dict`` or ``list``, and a tuple a ``list``, as :func:`copy_json` makes
    them: both were leaves here, handed whole to ``copy.deepcopy``, so a thread's copy of a state deeper
    than orjson writes (``ThreadState.copy()``) went through its recursion (a MiB: 0.4-0.7 s).
    """
    kind = type(value)
    if kind not in _COPIED:
        return value if value is None or kind in (str, int, float, bool) else copy.deepcopy(value)
    root = _shallow(value, kind)
    made: dict[int, Any] = {id(value): root}
    stack = [root]
    while stack:
        target = stack.pop()
        for key, item in (target.items() if type(target) is dict else enumerate(target)):
            kind = type(item)
            if kind in _COPIED:
                copied = made.get(id(item))
                if copied is None:
                    copied = made[id(item)] = _shallow(item, kind)
                    stack.append(copied)
            elif item is None or kind in (str, int, float, bool):
                continue  # (the shallow copy holds it already)
            else:
                copied = copy.deepcopy(item)
            target[key] = copied
    return root


#: The containers :func:`deep_copy` copies itself (the others are leaves, for ``copy.deepcopy``).
_COPIED = frozenset({dict, list, tuple, PlainDict, PlainList})


def _shallow(value: Any, kind: type) -> Any:
    """A plain ``dict`` or ``list`` holding ``value``'s members (its containers put in by the caller)."""
    return dict(value) if kind is dict or kind is PlainDict else list(value)


def is_json(text: str) -> bool:
    """Whether ``text`` parses as JSON (any value; tool-call arguments are judged by this)."""
    try:
        if ORJSON is not None:
            ORJSON.loads(text)
        else:
            json.loads(text)
    except ValueError:
        try:
            json.loads(text)  # orjson refuses lone surrogates that JSON allows
        except (ValueError, RecursionError):  # (arguments nested deeper than a parser goes: not usable JSON)
            return False
    return True
