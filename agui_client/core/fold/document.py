"""The thread's shared state: one JSON document, snapshots and patches applied in place.

A ``STATE_DELTA`` patches the document in place through :func:`~agui_client.core.patch.apply_patch`
(atomic, through an undo log, never a copy of the document per event). What is handed out
(:attr:`StateDocument.view`) is a copy made for each read, so a caller's state never changes under it, and
what one caller changes in it no other caller sees. The copies are made from bytes kept once a change
(:func:`~agui_client.wire.values.frozen_json`), so reads between two changes cost a parse each, not a
walk and a write.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from ..._inert import shown_pointer
from ...errors import StreamWarning, UnencodableValue
from ...wire.jsonio import json_problem
from ...wire.types.base import JSON
from ...wire.values import (
    PlainDict,
    PlainList,
    copy_json,
    deep_copy,
    foreign_copy,
    frozen_json,
    plain_json,
    thawed_json,
)
from ..patch import (
    DEFAULT_RESPONSE_COPY_ALLOWANCE,
    DEFAULT_RUN_COPY_ALLOWANCE,
    MAX_PATCH_OPS,
    PatchFailed,
    apply_patch,
)

__all__ = ["StateDocument", "own_json", "foreign_copy", "json_structure", "EMPTY_STATE"]

#: The default of ``ThreadState(state=...)``: the reference starts every thread from ``{}`` (SP-04).
EMPTY_STATE: Any = object()
_NO_WARNINGS: tuple[StreamWarning, ...] = ()


def own_json(value: Any) -> Any:
    """A copy of state the application supplies, refusing what JSON cannot hold.

    The fast copy goes through orjson, which would quietly write ``NaN`` as ``null`` and a ``datetime``
    as a string: the thread would then send something other than what it was given.

    Raises:
        UnencodableValue: ``value`` is not JSON (a ``ValueError``; ``pointer`` and ``reason`` say
            where and why: a value holding itself, ``NaN``, a set …).
    """
    _refuse_unless_plain(value)
    try:
        return copy_json(value)
    except UnencodableValue as exc:  # (inside a save's marked state, which no walk judged: see tree_copy)
        _refuse(exc.pointer, exc.reason)


def adopted_json(value: Any) -> Any:
    """State from a store's fresh record, held as it is once known to be JSON (see :func:`own_json`)."""
    _refuse_unless_plain(value)
    return value


def _refuse_unless_plain(value: Any) -> None:
    if not plain_json(value):
        found = json_problem(value)
        _refuse(*(found if found is not None else ("", "not JSON")))


def _refuse(pointer: str, reason: str) -> NoReturn:
    raise UnencodableValue(f"state must be JSON: dicts, lists, strings, finite numbers, booleans and None "
                           f"({reason} at {shown_pointer(pointer)})", field="state", pointer=pointer, reason=reason)


def json_structure(value: Any) -> int:
    """The structural characters JSON cannot write ``value`` without, outside its strings: each
    container's opening bracket, each member's ``,`` but one and each key's ``:`` (what a memory budget
    charged at least for the text that brought it)."""
    count = 0
    stack = [value]
    while stack:
        node = stack.pop()
        if type(node) is dict:
            count += 2 * len(node) or 1
            stack += [item for item in node.values() if type(item) is dict or type(item) is list]
        elif type(node) is list:
            count += len(node) or 1
            stack += [item for item in node if type(item) is dict or type(item) is list]
    return count


class StateDocument:
    """The shared state document, and the allowance for what patches may copy (SP-06).

    A run's patches (state and activities) share one allowance, given afresh when the run starts. A
    response (a :class:`~agui_client.core.session.RunSession`) bounds its runs together as well: each
    run is given the run's allowance or what the response has left, whichever is less, so a response
    of many runs cannot copy a fresh allowance's worth per run.

    Args:
        state: the state to start with (a copy is kept); ``{}`` by default, as the reference.
    """

    def __init__(self, state: JSON = EMPTY_STATE) -> None:
        # The reference starts every thread from {} and sends it; a delta before any snapshot patches it (SP-04).
        self.value: Any = {} if state is EMPTY_STATE else own_json(state)
        # Whether the document is known to hold plain JSON only (what a save may skip checking): true for
        # state the thread validated or parsed itself, false after an event object built elsewhere.
        self.plain = True
        # The document as bytes each copy is made from (frozen_json), made at the first copy after a
        # change, with the count of changes it was made at (``changes``): kept bytes of another count are
        # of a state since changed. None: not made since the document last changed; bytes None: the
        # document cannot be kept so.
        self._frozen: tuple[int, bytes | None] | None = None
        self.in_sync = True
        self.changes = 0
        #: What the ``copy`` operations of a run's patches (state and activities) may still cost in all.
        self.allowance = [DEFAULT_RUN_COPY_ALLOWANCE]
        #: Operations one patch (state or activity) may hold (``None``: no bound); a session sets the
        #: client's ``max_patch_ops`` for the response it folds.
        self.max_ops: int | None = MAX_PATCH_OPS
        self._granted = DEFAULT_RUN_COPY_ALLOWANCE  # what the running run was given
        self._response_left: int | None = None  # what the response's runs may still copy; None: no response
        self._spent = 0  # what the runs before the running one spent of their allowances
        # What copies may have cost in all (``copied``) before they are refused, set from a run's memory
        # budget; None: bounded by the allowances alone.
        self._ceiling: int | None = None
        #: The structural characters of the documents snapshots replaced while a memory budget ran
        #: (:func:`json_structure`; the budget credits them: see ``core/budget.py``); it only grows.
        self.released = 0
        self._charged = False  # whether the document came with a snapshot of the running response

    @property
    def view(self) -> JSON:
        """The state, as a copy of the reader's own, made at each read.

        One copy handed to every read until the state next changed made what one caller changed in it
        (a view that trims the rows it draws) what every other caller read (a handler deciding on them).
        What a caller changes reaches no other read, nor the thread's state, nor what it sends or saves.
        Every dict and list of a read is new, and so is every string and number (``marshal`` makes its
        own, as a parser does: a read holds the state's text again). The first read after a change keeps
        the state as bytes, and each read until the next change is made from them
        (:func:`~agui_client.wire.values.thawed_json`, at C speed): a quarter fewer instructions a read
        than orjson's copy (1.2 MB of rows). Each read still builds every container: reading after the
        events that change it, not after every event, costs least. Most of a large read's time on
        Python 3.11 is the cyclic collector scanning the containers it builds as it builds them (1.2 MB
        of rows: 20-27 ms a read, 7 with the collector paused); it is not paused here, as pausing it is
        process-wide and another thread may run between the pause and the build (from 3.12 the
        collector waits for the build to end, and scans what it built once).
        """
        return self.copy()

    def copy(self) -> JSON:
        """A copy of the state of its own: made from the bytes the document keeps until it changes when
        it is plain JSON, else level by level (``deep_copy``: a value built elsewhere is copied as it is)."""
        if not self.plain:
            return deep_copy(self.value)
        # (the count is read before the bytes are made, and kept with them: a read in another OS thread
        # that made them as a change landed would otherwise keep the state before it for every later read,
        # the change having let go of the bytes before they were kept)
        frozen = self._frozen
        changes = self.changes
        if frozen is None or frozen[0] != changes:
            frozen = self._frozen = (changes, frozen_json(self.value))
        kept = frozen[1]
        return thawed_json(kept) if kept is not None else copy_json(self.value)

    def changed(self) -> None:
        """The document changed (counted: ``ThreadState.version``; the bytes copies are made from let go)."""
        self.changes += 1
        self._frozen = None

    @property
    def copied(self) -> int:
        """What ``copy`` operations (and list shifts) have cost the document's patches in all, in the
        allowance's units (see :func:`~agui_client.core.patch.apply_patch`); it only grows."""
        return self._spent + self._granted - self.allowance[0]

    def bound_copies(self, more: int) -> None:
        """Copies may cost at most ``more`` units beyond :attr:`copied` until the response ends, whatever
        the allowances would still give: a run's memory budget (``max_run_memory``) has that much room.

        A copy of a few bytes of patch can make the document hold a subtree again, and one read holds
        hundreds of them: the budget, checked between reads, must bound what the read's copies make
        before they are made, which the allowance does (a copy past it is refused, SP-06)."""
        self._ceiling = self.copied + max(0, more)
        self._lower()

    def _lower(self) -> None:
        # (the allowance and what was granted lowered together: what was spent stays what it was)
        if self._ceiling is not None:
            over = self._spent + self._granted - self._ceiling
            if over > 0:
                self.allowance[0] -= over
                self._granted -= over

    def new_response(self, allowance: int = DEFAULT_RESPONSE_COPY_ALLOWANCE) -> None:
        """A response starts: what its runs may copy in all is ``allowance``."""
        self._spent += self._granted - self.allowance[0]
        self._response_left = allowance
        self._ceiling = None
        self._charged = False
        self._granted = self.allowance[0] = min(DEFAULT_RUN_COPY_ALLOWANCE, allowance)

    def end_response(self) -> None:
        """The response ended: runs folded without one are bounded each on its own again."""
        self._response_left = None
        self._ceiling = None
        self._charged = False

    def new_run(self) -> None:
        """A run starts: its patches get a fresh copy allowance, within what the response has left."""
        left = self._response_left
        spent = self._granted - self.allowance[0]
        self._spent += spent
        if left is not None:
            # what the run before spent (a refused copy may overdraw: it spent what it walked)
            left -= spent
            self._response_left = left
        self._granted = self.allowance[0] = (DEFAULT_RUN_COPY_ALLOWANCE if left is None
                                             else max(0, min(DEFAULT_RUN_COPY_ALLOWANCE, left)))
        self._lower()

    def set(self, state: JSON) -> None:
        """Replace the document with a copy of ``state`` (``ValueError`` when it is not JSON)."""
        self.value = own_json(state)
        self.plain = True
        self.in_sync = True
        self.changed()

    def hold_copy(self, other: StateDocument) -> None:
        """Hold a copy of ``other``'s state, as it stands (a thread's copy, ``ThreadState.copy``): made as
        :func:`own_json` makes one, without walking what ``other`` knows to be plain JSON again. Not a
        change: the copy stands where the document it replaces stood."""
        self.value = copy_json(other.value) if other.plain else own_json(other.value)
        self.plain = True
        self._frozen = None

    def adopt(self, state: JSON) -> None:
        """Hold a store's freshly parsed state as it is (``ValueError`` when it is not JSON)."""
        self.value = adopted_json(state)
        self.plain = True
        self._frozen = None

    def snapshot(self, snapshot: JSON, adopt: bool) -> Sequence[StreamWarning]:
        """STATE_SNAPSHOT: the document is replaced (its JSON held as it is when the fold owns it)."""
        if self._ceiling is not None:  # (a memory budget runs: see bound_copies)
            # A document a snapshot of this response brought is let go of: the budget charged its
            # structure (with what deltas and copies added), and credits it, so an agent sending its
            # whole state at every step is charged for one state, not for every step's.
            if self._charged:
                self.released += json_structure(self.value)
            self._charged = True
        if adopt:  # parsed for this fold alone, held by nobody else
            self.value, self.plain = snapshot, True
        else:  # an event object from anywhere: copied as it is, and vouched for only if plain
            self.plain = plain_json(snapshot)
            self.value = foreign_copy(snapshot, self.plain)
        self.in_sync = True
        self.changed()
        return _NO_WARNINGS

    def delta(self, ops: Sequence[Any], adopt: bool,
              vet: Callable[[Sequence[Any]], None] | None = None) -> Sequence[StreamWarning]:
        """STATE_DELTA: the patch applied in place and atomically; one that does not apply changes
        nothing and leaves the document out of sync with the producer's. ``vet``: the decoder's check of
        the patch's shape, when it was not run (see :func:`~agui_client.core.patch.apply_patch`); what
        it raises propagates, the document unchanged."""
        try:
            self.value = apply_patch(self.value, ops, adopt_values=adopt, copy_allowance=self.allowance, vet=vet,
                                     max_ops=self.max_ops)
        except PatchFailed as exc:
            self.in_sync = False
            return (StreamWarning(code="SP-06/AGUI302" if exc.rule == "SP-06" else f"{exc.rule}/AGUI303",
                                  message=f"state patch did not apply (state unchanged): {exc}",
                                  pointer=f"/delta/{exc.op_index}"),)
        if not adopt and self.plain:
            # The patch's values came with an event object from anywhere, copied as they are: the
            # document stays plain when they are as a parser makes them (a stream's events are), so its
            # copies stay the fast ones; a tuple would be copied as one.
            self.plain = plain_json(ops, tuples=False)
        self.changes += 1  # (counted as changed() counts)
        self._frozen = None
        return _NO_WARNINGS

    def shared(self) -> Any:
        """The document itself for a save that writes it at once; a document known to be plain JSON comes
        marked as checked (a shallow copy of its top level), so a store does not walk it again."""
        value = self.value
        if self.plain:
            if type(value) is dict:
                return PlainDict(value)
            if type(value) is list:
                return PlainList(value)
        return value
