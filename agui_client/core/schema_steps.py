"""One running schema check: the steps it has spent and may spend, where each schema object sits, the
patterns compiled so far, and what stops it.

:mod:`.schema` starts a check (:func:`~agui_client.core.schema.check`) and makes it the running one
(:data:`RUNNING`); the guarded keywords (:mod:`.schema_keywords`) and the dialects
(:mod:`.schema_dialects`) charge what they do to it, and raise :class:`CheckStopped` when it cannot go on.
Nothing here reads a clock: the budget counts work.
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from collections.abc import Iterable
from contextvars import ContextVar
from types import FrameType
from typing import Any, Final

import jsonschema

from ..wire.jsonio import escape as _escape
from .regex import Regex, compile_pattern

__all__ = ["CheckStopped", "RunningCheck", "RUNNING", "running_check", "JUDGING_FORMATS", "json_pointer"]

# Compiled patterns kept per check (each may hold up to RE2's memory limit, in .regex).
_REGEX_CACHE: Final = 16
# Applying a subschema inside another takes up to six Python frames (keyword, descend, reference …):
# checking stops at the nesting that fits under the interpreter's recursion limit, with room to spare,
# rather than meet RecursionError in whatever code happens to be running (the Rust maps under
# referencing turn it into a panic that is not even an Exception).
_FRAMES_PER_NESTING: Final = 6
_STACK_MARGIN: Final = 100
# What compiling a pattern costs, in steps (RE2, and Python's re asked whether what RE2 refuses is a
# regex at all: some 50 µs; see .schema_keywords for the other costs).
_COMPILE_COST: Final = 100


class CheckStopped(Exception):
    """Checking cannot go on: the budget ran out, or the schema does something refused."""

    def __init__(self, code: str, reason: str, pointer: str | None = None) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason
        self.pointer = pointer


class RunningCheck:
    """One check's state: the budget, where each schema object sits, the patterns compiled so far."""

    __slots__ = ("steps", "limit", "shared", "judging", "pointers", "dialects", "weights", "unchecked", "regexes",
                 "where", "node", "depth", "max_depth")

    def __init__(self, pointers: dict[int, str], dialects: dict[int, str], limit: int) -> None:
        self.steps = 0
        self.limit = limit
        # Whether ``limit`` is what a group of checks had left (see shared_allowance), not this check's own.
        self.shared = False
        # True while the schema itself is judged: it is then the value, and pointers name its parts.
        self.judging = False
        self.pointers = pointers
        # The objects below the root that name a draft jsonschema knows (by id), with their pointers.
        self.dialects = dialects
        self.weights: dict[int, int] = {}
        self.unchecked: dict[str, str] = {}
        self.regexes: OrderedDict[str, Regex | str | None] = OrderedDict()
        # The schema pointer of the innermost keyword being evaluated when checking stopped.
        self.where: str | None = None
        # The subschema object the keyword table's walk was in when it ended (see Dialect.first_flaw).
        self.node: Any = None
        # Schema applications in progress, one inside the other, and how many fit on the stack.
        self.depth = 0
        self.max_depth = max(8, (sys.getrecursionlimit() - _stack_depth() - _STACK_MARGIN) // _FRAMES_PER_NESTING)

    def enter(self) -> None:
        """One more schema application inside the others; call ``self.depth -= 1`` when it ends."""
        self.depth += 1
        if self.depth > self.max_depth:
            raise CheckStopped("too-deep", f"checking nests schemas more than {self.max_depth} deep (a reference "
                                           "that loops back on itself without consuming the answer, or an answer "
                                           "nested too deeply)")

    def charge(self, steps: int) -> None:
        """Spend ``steps``; past the limit, stop the check ``over-budget``."""
        self.steps += steps
        if self.steps > self.limit:
            if self.shared:
                raise CheckStopped("over-budget", f"the answers checked together (one resume's) had {self.limit:,} "
                                                  "steps left, and this check needs more")
            if self.judging:
                raise CheckStopped("over-budget", f"judging the schema itself needs more than {self.limit:,} steps "
                                                  "(it holds too many subschemas)")
            raise CheckStopped("over-budget", f"checking needs more than {self.limit:,} steps (a schema that "
                                              "multiplies its own work, or an answer too large for it)")

    def at(self, node: object) -> None:
        """Note the subschema object the keyword table's walk ended in."""
        self.node = node

    def pointer(self, node: object, *keys: str) -> str:
        """The JSON pointer of ``node`` (a schema object), and of ``keys`` below it."""
        base = self.pointers.get(id(node), "")
        return base + "".join("/" + _escape(key) for key in keys)

    def regex(self, pattern: str) -> Regex | str | None:
        """The compiled pattern; a reason it cannot run (str); ``None`` when it is not a regex at all."""
        if pattern in self.regexes:
            self.regexes.move_to_end(pattern)
            return self.regexes[pattern]
        self.charge(_COMPILE_COST + len(pattern) // 4)
        compiled = compile_pattern(pattern)
        self.regexes[pattern] = compiled
        if len(self.regexes) > _REGEX_CACHE:
            self.regexes.popitem(last=False)
        return compiled

    def matches(self, pattern: str, text: str, pointer: str) -> bool | None:
        """Whether ``pattern`` matches ``text``; ``None`` (and a note) when it cannot be run."""
        compiled = self.regex(pattern)
        if isinstance(compiled, Regex):
            found = compiled.search(text, self.charge)
            if found is not None:
                return found
            compiled = "the text holds a lone surrogate, which RE2 cannot read"
        self.unchecked.setdefault(pointer, compiled or "it is not a valid regular expression")
        return None


#: The check running in this context (set by :func:`~agui_client.core.schema.check` while it runs).
RUNNING: ContextVar[RunningCheck | None] = ContextVar("agui_schema_check", default=None)


def running_check() -> RunningCheck:
    """The check running in this context, which the guarded validators charge."""
    check = RUNNING.get()
    if check is None:  # (the guarded validators are private to the schema modules and always run inside check())
        raise RuntimeError("a guarded validator ran outside a check")
    return check


def _stack_depth() -> int:
    frame: FrameType | None = sys._getframe()
    depth = 0
    while frame is not None:
        frame, depth = frame.f_back, depth + 1
    return depth


def _is_regex(instance: object) -> bool:
    """The ``regex`` format, while a schema is judged: a pattern that is no regex makes it invalid."""
    if not isinstance(instance, str):
        return True
    return running_check().regex(instance) is not None


#: The formats asserted while a schema is judged: ``regex`` alone (none when an answer is checked).
JUDGING_FORMATS: Final = jsonschema.FormatChecker(formats=())
JUDGING_FORMATS.checks("regex")(_is_regex)


def json_pointer(path: Iterable[object]) -> str:
    """The JSON pointer of a jsonschema error path."""
    return "".join("/" + _escape(str(part)) for part in path)

