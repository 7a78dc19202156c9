"""RFC 6902 JSON Patch, applied in place and atomically, in time proportional to the patch.

Why not a general library: STATE_DELTA events are a large share of real streams, and the fold must
cost time linear in the stream, not in the state's size per event. Copying the document before each
patch (the reference client's way) makes a long run quadratic; a generic applier built on abstract
base classes spends most of its time in ``isinstance`` checks. This one works on the plain ``dict``
and ``list`` trees a JSON parser produces, records an undo entry for every change, and on failure
replays the undo log backwards, so a failing patch leaves the document exactly as it was (SP-05)
without ever copying it.

``jsonpatch`` (the library) remains the yardstick: a property test checks that both agree on random
documents and patches.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .._inert import quoted_name
from ..wire.jsonio import DEFAULT_MAX_DEPTH

__all__ = ["apply_patch", "PatchFailed", "DEFAULT_COPY_BUDGET", "DEFAULT_RUN_COPY_ALLOWANCE",
           "DEFAULT_RESPONSE_COPY_ALLOWANCE", "SHIFTS_PER_UNIT", "MAX_PATCH_OPS", "MAX_DEPTH", "parse_pointer"]

#: JSON nodes a single patch may copy (``copy`` ops, and values added); past it the patch is refused (SP-06).
DEFAULT_COPY_BUDGET = 1_000_000
#: What the ``copy`` operations of one run's patches may cost in all (see ``apply_patch``'s ``copy_allowance``).
DEFAULT_RUN_COPY_ALLOWANCE = 16 * 1024 * 1024
#: Operations one patch may hold by default (the client's ``max_patch_ops``); a longer patch is refused
#: whole (SP-06), before any is applied. An operation costs the fold a microsecond or two whatever its
#: size: a ``STATE_DELTA`` of 16 MiB holds some 480,000, which held the event loop 0.7 s (a
#: ``STATE_SNAPSHOT`` as large holds it 0.1-0.2 s). 20,000 apply in some 30 ms, and are more than a diff
#: of a table of thousands of rows needs; an agent that diffs larger tables needs the setting raised.
MAX_PATCH_OPS = 20_000
#: What the ``copy`` operations of all the runs of one response may cost in all: a response that holds
#: many runs gets no fresh allowance per run beyond this (four runs' worth, about four million members).
DEFAULT_RESPONSE_COPY_ALLOWANCE = 4 * DEFAULT_RUN_COPY_ALLOWANCE


class PatchFailed(Exception):
    """A JSON Patch did not apply; the document is unchanged.

    Attributes:
        op_index: the index of the failing operation in the patch.
        rule: ``"SP-06"`` when a well-formed operation did not apply (a missing path, a failed test
            …), ``"SP-07"`` when the patch holds an operation JSON Patch does not define.
    """

    def __init__(self, message: str, op_index: int, rule: str = "SP-06") -> None:
        super().__init__(message)
        self.op_index = op_index
        self.rule = rule


class _Fail(Exception):
    def __init__(self, message: str, rule: str = "SP-06") -> None:
        super().__init__(message)
        self.rule = rule


# An undo entry: (action, container, key, old); see _SET and the others below.
_Undo = tuple[int, Any, Any, Any]
_MISSING: Any = object()


def parse_pointer(pointer: str) -> list[str]:
    """Split an RFC 6901 pointer into unescaped reference tokens (``""`` is the whole document)."""
    if pointer == "":
        return []
    if pointer[0] != "/":
        raise _Fail(f"JSON pointer {quoted_name(pointer)} must start with '/'")
    tokens = pointer[1:].split("/")
    if "~" in pointer:
        out = []
        for token in tokens:
            if "~" in token:
                check = token.replace("~0", "").replace("~1", "")
                if "~" in check:
                    raise _Fail(f"invalid escape in JSON pointer {quoted_name(pointer)}")
                token = token.replace("~1", "/").replace("~0", "~")
            out.append(token)
        return out
    return tokens


def _index(token: str, length: int, *, allow_end: bool) -> int:
    if token == "-":
        if allow_end:
            return length
        raise _Fail("'-' names no existing array element")
    if not token.isdigit() or not token.isascii() or (len(token) > 1 and token[0] == "0"):
        raise _Fail(f"{quoted_name(token)} is not an array index")
    if len(token) > 18:
        raise _Fail(f"array index {token} out of range")
    index = int(token)
    if index > length or (index == length and not allow_end):
        raise _Fail(f"array index {index} out of range (length {length})")
    return index


def _walk(document: Any, tokens: list[str]) -> Any:
    node = document
    for token in tokens:
        kind = type(node)
        if kind is dict:
            if token not in node:
                raise _Fail(f"path segment {quoted_name(token)} not found")
            node = node[token]
        elif kind is list:
            node = node[_index(token, len(node), allow_end=False)]
        else:
            raise _Fail(f"path segment {quoted_name(token)} goes through a {type(node).__name__}")
    return node


def _copy(value: Any, budget: list[int], allowance: list[int] | None = None, room: int = DEFAULT_MAX_DEPTH) -> Any:
    """A copy of ``value``, charging each container's members to ``budget`` (this patch's nodes) and, when
    given, to ``allowance`` (what copies may still cost: see ``apply_patch``) as the walk goes; refused
    when it nests deeper than ``room`` levels (what is left under the place it goes: see ``MAX_DEPTH``).

    Each container is charged before its members are copied, so a walk stops as soon as what it would
    cost passes either bound: refusing a copy costs no more than what was left to spend, however large
    the value.
    """
    # Level by level, not recursively: a value may be nested as deep as the decoder admits (512),
    # and the verdict must not depend on how deep the caller's stack already is.
    kind = type(value)
    if kind is not dict and kind is not list:
        if allowance is not None:
            _spend(allowance, _MEMBER_UNITS + (len(value) if kind is str else 0))
        return value
    if allowance is not None:
        _spend(allowance, _MEMBER_UNITS)
    root: Any = {} if kind is dict else []
    stack = [(value, root, 1)]
    while stack:
        source, target, depth = stack.pop()
        budget[0] -= len(source)
        if budget[0] < 0:
            raise _Fail("patch exceeds its copy budget")
        if allowance is not None:
            # its members first, in constant time, so a huge container is refused before anything reads it
            _spend(allowance, _MEMBER_UNITS * len(source))
            _spend(allowance, _text(source))
        if depth > room:
            # a state this deep could not be written to a store or sent again
            raise _Fail(_too_deep(room))
        if type(source) is dict:
            for key, item in source.items():
                if type(item) is dict or type(item) is list:
                    made: Any = {} if type(item) is dict else []
                    stack.append((item, made, depth + 1))
                    item = made
                target[key] = item
        else:
            for item in source:
                if type(item) is dict or type(item) is list:
                    made = {} if type(item) is dict else []
                    stack.append((item, made, depth + 1))
                    item = made
                target.append(item)
    return root


def _text(container: dict[str, Any] | list[Any]) -> int:
    """The characters of a container's keys and of the strings among its members: what a store and the
    next request write out once per copy."""
    if type(container) is dict:
        members: Any = container.values()
        keys = sum(map(len, container))
    else:
        members, keys = container, 0
    return keys + sum([len(item) for item in members if type(item) is str])


def _spend(allowance: list[int], cost: int, what: str = "copying this value") -> None:
    """Charge ``cost`` to the copy allowance; past it the copy is refused, having spent what it walked."""
    allowance[0] -= cost
    if allowance[0] < 0:
        raise _Fail(f"{what} would pass what copies may still cost ({max(0, allowance[0] + cost)} units "
                    "were left): copy amplification")


#: Array elements a list insertion or removal may shift for one unit of the copy allowance. Python
#: moves every element after the place (a ``memmove``, 1-3 billion elements a second), so an ``add``
#: at ``/list/0`` of a few bytes costs the whole list: behind a snapshot of 7 million elements, one
#: read's thousand such deltas held the event loop 1.9 s, and a single delta of 5,000 of them 10 s.
#: Charged to the run's allowance, a run's shifting stops at some 64 million elements (20-60 ms; undoing the
#: patch that passed it shifts the list once, see ``_rollback``); an insertion near a list's end shifts little.
SHIFTS_PER_UNIT = 4


def _shift(allowance: list[int] | None, shifted: int) -> None:
    """Charge a list insertion or removal that moves ``shifted`` elements, before it moves them."""
    if allowance is not None and shifted >= SHIFTS_PER_UNIT:
        _spend(allowance, shifted // SHIFTS_PER_UNIT, f"shifting {shifted} array elements")


#: The deepest a patched document may become: as deep as a STATE_SNAPSHOT can carry it (the decoder's
#: nesting limit, less the event around it). A patch that would nest it deeper is refused (SP-06), as
#: the state would then fail every later save and request: ``json`` recurses once per level, and
#: ``move`` operations of a few bytes each can sink a subtree one level per event without end.
MAX_DEPTH = DEFAULT_MAX_DEPTH - 1
#: How deep a value that came parsed with its patch operation can be (event, ``delta``, operation:
#: three levels of the decoder's limit). A value put at most this many levels down needs no look.
_SHALLOW = MAX_DEPTH - (DEFAULT_MAX_DEPTH - 3)


def _too_deep(room: int) -> str:
    return f"the document would nest deeper than {MAX_DEPTH} levels (this place leaves {max(room, 0)})"


def _check_depth(value: Any, room: int, allowance: list[int] | None = None) -> None:
    """Refuse ``value`` when it nests containers deeper than ``room`` levels; when given, the walk's
    members are charged to ``allowance`` (a ``move`` of a large subtree, level after level, must not make
    the client walk it again and again for free)."""
    if type(value) is not dict and type(value) is not list:
        return
    level: list[Any] = [value]
    depth = 1
    while level:
        if depth > room:
            raise _Fail(_too_deep(room))
        deeper: list[Any] = []
        add = deeper.append
        for node in level:
            if allowance is not None:
                _spend(allowance, _MEMBER_UNITS * len(node))
            for child in node.values() if type(node) is dict else node:
                if type(child) is dict or type(child) is list:
                    add(child)
        level = deeper
        depth += 1


#: A member's cost in copy-allowance units: a small dict entry or list item holds tens of bytes in
#: Python however short its JSON, so 16 MiB of allowance is about a million members, or 16 MiB of text.
_MEMBER_UNITS = 16


def _json_equal(a: Any, b: Any) -> bool:
    # JSON equality: true is not 1, and 1 equals 1.0.
    if type(a) is bool or type(b) is bool:
        return type(a) is type(b) and a == b
    if type(a) in (int, float) and type(b) in (int, float):
        return bool(a == b)
    if type(a) is not type(b):
        return False
    if type(a) is dict:
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if type(a) is list:
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


class _Doc:
    """The document being patched, with its undo log."""

    __slots__ = ("root", "undo", "budget", "allowance", "record")

    def __init__(self, root: Any, budget: list[int], undo: list[_Undo], allowance: list[int] | None) -> None:
        self.root = root
        self.undo = undo
        self.budget = budget
        self.allowance = allowance
        # A failing operation changes nothing itself, so the last one needs no undo entries
        # (most patches have a single operation): only a move, which removes before it adds, does.
        self.record = True

    def add(self, tokens: list[str], value: Any) -> None:
        self._at(tokens, "add", value)

    def remove(self, tokens: list[str]) -> Any:
        if not tokens:
            raise _Fail("cannot remove the whole document")
        return self._at(tokens, "remove", None)

    def replace(self, tokens: list[str], value: Any) -> None:
        self._at(tokens, "replace", value)

    def _at(self, tokens: list[str], name: str, value: Any) -> Any:
        undo = self.undo if self.record else None
        if not tokens:  # add or replace the whole document
            if undo is not None:
                undo.append((_ROOT, None, None, self.root))
            self.root = value
            return None
        return _change(_walk(self.root, tokens[:-1]), tokens[-1], name, value, undo, self.allowance)

    def rollback(self) -> Any:
        self.root = _rollback(self.root, self.undo)
        return self.root


def _rollback(root: Any, undo: list[_Undo]) -> Any:
    """Undo the changes ``undo`` records, newest first; returns the document as it was.

    Insertions into one list that left their elements side by side are taken out in one slice, and
    removals from one place put back in one: undone one at a time, each would shift the rest of the
    list again, so a refused patch of 20,000 ``add`` operations at ``/list/0`` of a list of 100,000
    cost 0.23 s to undo (0.5 s for as many removals), as much again as applying it. In one slice the
    list shifts once.
    """
    entries = len(undo)
    at = entries - 1
    while at >= 0:
        action, container, key, old = undo[at]
        if action == _DELETE or action == _INSERT:
            at = _undo_shifts(undo, at)
            continue
        if action == _SET:
            if old is _MISSING:
                del container[key]
            else:
                container[key] = old
        else:
            root = old
        at -= 1
    return root


def _undo_shifts(undo: list[_Undo], at: int) -> int:
    """Undo the list insertions (or removals) ``undo`` records from entry ``at`` back, as many as make one
    slice of one list; returns the entry before them."""
    action, container, key, old = undo[at]
    # The slice [low, high) holds what the entries taken so far inserted (in the list as it is) or
    # will put back (in the list as it will be). Undone one by one, an older insertion at ``low``
    # would take out the element just after the slice, one at ``low - 1`` the one just before it; an
    # older removal at ``low`` or ``high`` puts its element back just before or just after it.
    low, high = key, key + 1
    before: list[Any] = [old]
    after: list[Any] = []
    at -= 1
    while at >= 0:
        older, place, index, value = undo[at]
        if older != action or place is not container:
            break
        if action == _DELETE and index == low - 1:
            low -= 1
        elif action == _DELETE and index == low:
            high += 1
        elif action == _INSERT and index == low:
            before.append(value)
            high += 1
        elif action == _INSERT and index == high:
            after.append(value)
            high += 1
        else:
            break
        at -= 1
    if action == _DELETE:
        del container[low:high]
    else:
        container[low:low] = before[::-1] + after
    return at


def _value(op: dict[str, Any], budget: list[int] | None, depth: int) -> Any:
    """``op``'s value, to be put ``depth`` levels down (a copy unless ``budget`` is ``None``)."""
    if "value" not in op:
        raise _Fail(f"{quoted_name(op.get('op'))} operation needs a 'value'")
    value = op["value"]
    if type(value) is not dict and type(value) is not list:
        return value
    # The patch's values are the event's: copy containers so the state never shares them.
    if budget is not None:
        return _copy(value, budget, None, MAX_DEPTH - depth)
    if depth > _SHALLOW:
        _check_depth(value, MAX_DEPTH - depth)
    return value


# Undo entries, as tuples (no closure per change): (action, container, key, old).
_SET = 0  # container[key] = old, or delete the key when old is _MISSING
_DELETE = 1  # del container[key] (a list insertion)
_INSERT = 2  # container.insert(key, old) (a list removal)
_ROOT = 3  # the document itself was old


def _simple_op(document: Any, name: str, path: str, op: dict[str, Any], budget: list[int] | None,
               undo: list[_Undo] | None, allowance: list[int] | None) -> None:
    """Apply an add/replace/remove whose ``path`` is below the root and has no escapes.

    Records how to undo it in ``undo`` when given; ``budget`` is ``None`` to adopt the value uncopied;
    a list's shifted elements are charged to ``allowance`` when given.
    """
    tokens = path[1:].split("/")
    key = tokens.pop()
    parent = document
    for token in tokens:  # _walk, inlined: this runs for nearly every operation of every delta
        if type(parent) is dict:
            if token not in parent:
                raise _Fail(f"path segment {quoted_name(token)} not found")
            parent = parent[token]
        elif type(parent) is list:
            parent = parent[_index(token, len(parent), allow_end=False)]
        else:
            raise _Fail(f"path segment {quoted_name(token)} goes through a {type(parent).__name__}")
    value: Any = None
    if name != "remove":
        if "value" not in op:
            raise _Fail(f"{quoted_name(name)} operation needs a 'value'")
        value = op["value"]
        if type(value) is dict or type(value) is list:
            if budget is not None:
                value = _copy(value, budget, None, MAX_DEPTH - len(tokens) - 1)
            elif len(tokens) >= _SHALLOW:  # (put len(tokens) + 1 levels down)
                _check_depth(value, MAX_DEPTH - len(tokens) - 1)
        if type(parent) is dict and (name == "add" or key in parent):
            # _change's commonest case (set a member), inlined: this runs for nearly every operation
            if undo is not None:
                undo.append((_SET, parent, key, parent.get(key, _MISSING)))
            parent[key] = value
            return
    _change(parent, key, name, value, undo, allowance)


def _change(parent: Any, key: str, name: str, value: Any, undo: list[_Undo] | None,
            allowance: list[int] | None) -> Any:
    """``add``, ``replace`` or ``remove`` member ``key`` of ``parent``; returns what ``remove`` took out.

    Records how to undo it in ``undo`` when given (a failing change changes nothing); the elements an
    insertion or removal shifts in a list are charged to ``allowance`` when given (see ``_shift``).
    """
    kind = type(parent)
    if kind is dict:
        if name == "add":
            if undo is not None:
                undo.append((_SET, parent, key, parent.get(key, _MISSING)))
            parent[key] = value
        elif key not in parent:
            raise _Fail(f"cannot {name} missing member {quoted_name(key)}")
        elif name == "replace":
            if undo is not None:
                undo.append((_SET, parent, key, parent[key]))
            parent[key] = value
        else:
            old = parent.pop(key)
            if undo is not None:
                undo.append((_SET, parent, key, old))
            return old
    elif kind is list:
        index = _index(key, len(parent), allow_end=name == "add")
        if name != "replace":
            _shift(allowance, len(parent) - index - (name == "remove"))
        if name == "add":
            parent.insert(index, value)
            if undo is not None:
                undo.append((_DELETE, parent, index, None))
        elif name == "replace":
            if undo is not None:
                undo.append((_SET, parent, index, parent[index]))
            parent[index] = value
        else:
            old = parent.pop(index)
            if undo is not None:
                undo.append((_INSERT, parent, index, old))
            return old
    else:
        where = "into" if name == "add" else "from" if name == "remove" else "inside"
        raise _Fail(f"cannot {name} {where} a {type(parent).__name__}")
    return None


def apply_patch(document: Any, patch: Sequence[Any], *, copy_budget: int = DEFAULT_COPY_BUDGET,
                adopt_values: bool = False, copy_allowance: list[int] | None = None,
                vet: Callable[[Sequence[Any]], None] | None = None, max_ops: int | None = MAX_PATCH_OPS) -> Any:
    """Apply an RFC 6902 patch to ``document`` in place, all or nothing; returns the new document.

    Use the returned value: an operation on the root (``""``) returns a new document. On failure
    every change already made is undone, so the document is exactly as it was.

    ``adopt_values=True`` inserts the patch's ``value`` members themselves instead of copies: for a
    patch nobody else holds (parsed for this call alone), so the document may own its values.

    ``copy_allowance`` (a one-item list, spent in place) bounds what ``copy`` operations may cost over
    several patches (SP-06): each copy costs its size (its members, and the characters of its keys and
    strings, which a store and the next request write out again), charged a container at a time as it
    is copied. A few bytes of patch must not grow a state without end, a subtree at a time, nor make
    the client walk one again and again: a copy that would pass the allowance is refused as soon as
    its walk reaches it, and what it walked stays spent, as do the copies of a patch undone for any
    other reason (the work was done). An insertion into a list or a removal from it is charged there
    too, for the elements it shifts (one unit per ``SHIFTS_PER_UNIT``), before it shifts them: a
    delta of a few bytes at the front of a huge list costs the whole list.

    A patch of more than ``max_ops`` operations is refused whole before anything else is looked at
    (``op_index`` is ``max_ops``, the first operation past the bound), its shape unchecked by ``vet``;
    ``None``: no bound.

    ``vet`` is a check of the patch's shape that its caller has not run yet (the decoder's, for a patch
    folded straight from its JSON). It runs once, before any operation but a plain add, replace or
    remove below the root, and before a failure is reported: a patch applied wholly by those, which no
    shape check refuses (each is an object naming a known operation on a valid pointer, with its
    ``value``), never pays for it. What it raises propagates, the document unchanged.

    Raises:
        PatchFailed: an operation did not apply (``op_index`` says which); the document is unchanged.
    """
    if max_ops is not None and len(patch) > max_ops:
        raise PatchFailed(f"the patch holds {len(patch)} operations, more than the {max_ops} one patch may hold",
                          max_ops)
    if len(patch) == 1:
        # The commonest patch: one simple operation (as below), which needs no undo log at all.
        op = patch[0]
        if type(op) is dict:
            name = op.get("op")
            path = op.get("path")
            if (name == "replace" or name == "add" or name == "remove") and type(path) is str and len(path) > 1 \
                    and path[0] == "/" and "~" not in path:
                try:
                    _simple_op(document, name, path, op, None if adopt_values else [copy_budget], None,
                               copy_allowance)
                except _Fail as exc:
                    failed = PatchFailed(str(exc), 0, exc.rule)
                except RecursionError:
                    failed = PatchFailed("value nested too deeply to copy", 0)
                else:
                    return document
                if vet is not None:  # (a failing operation changed nothing: the shape is judged first)
                    vet(patch)
                raise failed from None
    budget = None if adopt_values else [copy_budget]
    # The commonest operations (add, replace, remove below the root, no escapes) are applied here,
    # recording their undo entries (the last needs none: a failing operation changes nothing itself);
    # the first other operation hands the rest of the patch, and the log, to _apply_general.
    undo: list[_Undo] = []
    last = len(patch) - 1
    i = 0
    try:
        for i, op in enumerate(patch):  # noqa: B007 - i names the failing op in the error
            if type(op) is dict:
                name = op.get("op")
                path = op.get("path")
                if (name == "replace" or name == "add" or name == "remove") and type(path) is str \
                        and len(path) > 1 and path[0] == "/" and "~" not in path:
                    _simple_op(document, name, path, op, budget, undo if i < last else None, copy_allowance)
                    continue
            if vet is not None:
                _vetted(vet, patch, document, undo)
                vet = None
            return _apply_general(document, patch, i, undo, budget, copy_budget, copy_allowance)
    except _Fail as exc:
        _rollback(document, undo)
        failed = PatchFailed(str(exc), i, exc.rule)
    except RecursionError:
        _rollback(document, undo)
        failed = PatchFailed("value nested too deeply to copy", i)
    else:
        return document
    if vet is not None:
        vet(patch)
    raise failed from None


def _vetted(vet: Callable[[Sequence[Any]], None], patch: Sequence[Any], document: Any, undo: list[_Undo]) -> None:
    """``vet(patch)``, with the operations applied so far undone when it refuses the patch."""
    try:
        vet(patch)
    except BaseException:
        _rollback(document, undo)
        raise


def _apply_general(document: Any, patch: Sequence[Any], first: int, undo: list[_Undo], budget: list[int] | None,
                   copy_budget: int, allowance: list[int] | None = None) -> Any:
    """``apply_patch`` from operation ``first`` on, every kind of operation; ``undo`` holds the earlier ones'."""
    doc = _Doc(document, budget if budget is not None else [copy_budget], undo, allowance)
    values_budget = budget
    last = len(patch) - 1
    i = first
    try:
        for i in range(first, len(patch)):
            op = patch[i]
            if type(op) is not dict:
                raise _Fail("a patch operation must be an object")
            name = op.get("op")
            record = i < last or name == "move"
            path = op.get("path")
            if type(path) is not str:
                raise _Fail("a patch operation needs a string 'path'")
            if (name == "replace" or name == "add" or name == "remove") and len(path) > 1 and path[0] == "/" \
                    and "~" not in path:
                _simple_op(doc.root, name, path, op, values_budget, doc.undo if record else None, allowance)
                continue
            doc.record = record
            tokens = parse_pointer(path)
            if name == "add":
                doc.add(tokens, _value(op, values_budget, len(tokens)))
            elif name == "replace":
                doc.replace(tokens, _value(op, values_budget, len(tokens)))
            elif name == "remove":
                doc.remove(tokens)
            elif name == "test":
                if "value" not in op:
                    raise _Fail("'test' operation needs a 'value'")
                if not _json_equal(_walk(doc.root, tokens), op["value"]):
                    raise _Fail(f"test failed at {quoted_name(path)}")
            elif name in ("move", "copy"):
                source = op.get("from")
                if type(source) is not str:
                    raise _Fail(f"{quoted_name(name)} operation needs a string 'from'")
                from_tokens = parse_pointer(source)
                if name == "move":
                    if from_tokens == tokens:
                        _walk(doc.root, from_tokens)
                        continue
                    if tokens[: len(from_tokens)] == from_tokens:
                        raise _Fail("cannot move a value into its own child")
                    if not from_tokens:
                        raise _Fail("cannot move the whole document")
                    moved = doc.remove(from_tokens)
                    if len(tokens) > len(from_tokens):  # (only a move down can nest the document deeper)
                        _check_depth(moved, MAX_DEPTH - len(tokens), allowance)
                    doc.add(tokens, moved)
                else:
                    copied = _copy(_walk(doc.root, from_tokens), doc.budget, allowance, MAX_DEPTH - len(tokens))
                    doc.add(tokens, copied)
            else:
                # SP-07 / AGUI303: a patch is applied whole or not at all, and an operation nobody
                # defined cannot be applied, so nothing of this patch is (the reference drops it and
                # applies the rest, which the producer never asked for).
                what = (f"unknown patch op {quoted_name(name)}" if type(name) is str
                        else "a patch operation without a string 'op'")
                raise _Fail(f"{what}: the whole patch is skipped", "SP-07")
    except _Fail as exc:
        doc.rollback()
        raise PatchFailed(str(exc), i, exc.rule) from None
    except RecursionError:
        doc.rollback()
        raise PatchFailed("value nested too deeply to copy", i) from None
    return doc.root
