"""Write the sync shells from their async source: ``python -m tools.unasync`` (``--check`` only compares).

The async shells (``agui_client/_async/``) are the one source; each sync twin in ``agui_client/_sync/``
is what this script makes of its source, checked in with a header saying so, and
``tests/test_unasync.py`` fails when a checked-in twin is not what the script makes now (a hand edit,
or a source changed without running the script). To change a shell, edit its async source and run
``python -m tools.unasync``.

The rewrite works on Python's tokens, so a word inside a name (``awaited``, ``AsyncThreadIO`` as part
of a longer name) is never touched by accident:

- the keyword ``async`` before ``def``, ``for`` or ``with`` is dropped, and so is every ``await``;
- a name in ``NAMES`` becomes its sync twin (``AsyncThread`` -> ``Thread``, ``aclose`` ->
  ``close`` …); ``AsyncGenerator[Y, S]`` becomes ``Generator[Y, S, None]`` (a generator also has a
  return type);
- in strings and comments (docstrings read as sync code in the sync twin) the same names are
  rewritten as whole words, ``await `` is dropped, and ``async with``/``async for`` lose ``async``;
- where the two shells really differ, the source holds both, marked (the sync lines commented out, so
  the source stays the async module it is)::

      # unasync: async only
      flow = self._turn(plan, interrupted=asyncio.CancelledError)
      # unasync: sync only
      # flow = self._turn(plan, interrupted=KeyboardInterrupt)
      # unasync: end

  The twin keeps the sync lines, uncommented, and drops the async ones and the markers. Larger
  differences live in hand-written modules beside each shell (``thread_io.py``, ``client_io.py``),
  not generated.
- a docstring the twin words differently is written out, as a string, right after a marker, in the
  scope (module, class or function) whose docstring it replaces::

      class AsyncThread(AsyncThreadIO):
          '''A conversation with an agent across runs, on an event loop.'''
          # unasync: sync docstring
          '''A conversation with an agent across runs (synchronous).'''

  The twin has the marked string, as written, in place of the scope's docstring, and neither the
  marker nor the string where they stood (a blank line around them goes too, when one stood on each
  side). A module's sync docstring stands after its imports, where a string statement is allowed.
  Found with ``ast``, which reads a string's extent the same way on every Python version.

A marker is a comment alone on its line; a line inside a string that reads like one (a docstring
quoting the markers) is refused, as it would otherwise be read as a marker.

Lines the rewrite shortened before an open bracket have their continuation lines, when aligned with
that bracket, moved left with it, so the twin reads as hand-aligned code.
"""

from __future__ import annotations

import argparse
import ast
import io
import re
import sys
import tokenize
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent

#: Each async source and the sync twin made of it, from the repository's root.
FILES = [
    ("agui_client/_async/thread.py", "agui_client/_sync/thread.py"),
    ("agui_client/_async/retries.py", "agui_client/_sync/retries.py"),
    ("agui_client/_async/client.py", "agui_client/_sync/client.py"),
]

#: The reviewed mapping: every name the rewrite changes, and what it becomes in the sync twin.
NAMES = {
    # the package's async classes and their sync twins
    "AsyncThread": "Thread",
    "AsyncAgentClient": "AgentClient",
    "AsyncRunStream": "RunStream",
    "AsyncLoopStream": "LoopStream",
    "AsyncThreadIO": "ThreadIO",
    "atried": "tried",
    "_AsyncExchange": "_Exchange",
    # the standard library's async protocols and their sync counterparts
    "AbstractAsyncContextManager": "AbstractContextManager",
    "AsyncExitStack": "ExitStack",
    "AsyncClient": "Client",
    "aclosing": "closing",
    "AsyncIterator": "Iterator",
    "AsyncIterable": "Iterable",
    "AsyncGenerator": "Generator",
    "asynccontextmanager": "contextmanager",
    "async_entered_once": "entered_once",
    "enter_async_context": "enter_context",
    "StopAsyncIteration": "StopIteration",
    "__aenter__": "__enter__",
    "__aexit__": "__exit__",
    "__aiter__": "__iter__",
    "__anext__": "__next__",
    "aclose": "close",
    "anext": "next",
}

HEADER = "# generated from {source} by python -m tools.unasync; do not edit (edit the source, run the script)\n"

_MARK = re.compile(r"^(?P<indent>[ \t]*)# unasync: (?P<what>async only|sync only|end|sync docstring)[ \t]*$")
_WORDS = re.compile(r"\b(" + "|".join(sorted(map(re.escape, NAMES), key=len, reverse=True)) + r")\b")
_PROSE = re.compile(r"\bawait (?=\S)|\basync (?=(?:with|for)\b)")
_BRACKETS = {"(": ")", "[": "]", "{": "}"}
#: An f-string's first and last token, Python 3.12 on (``-1``: no such token before).
_FSTRING_START = getattr(tokenize, "FSTRING_START", -1)
_FSTRING_END = getattr(tokenize, "FSTRING_END", -1)


#: An edit of the text: from where, to where (row from 1, column), and what goes there instead.
Edit = tuple[tuple[int, int], tuple[int, int], str]


class MarkError(ValueError):
    """A source's ``# unasync:`` markers do not pair up (the line number says where)."""


def unasync(source: str, name: str) -> str:
    """The sync twin of the async module text ``source`` (``name``: its path, for the header)."""
    marks = _markers(source)
    sides = _sides(marks, len(source.splitlines()))
    swaps = _sync_docstrings(source, marks, sides)
    # The markers and the sync side, written as sync code already, are left as they are.
    kept = {number for number, side in enumerate(sides, 1) if side == "sync only"} | set(marks)
    kept |= {number for swap in swaps for number in range(swap.text[0], swap.text[1] + 1)}
    return HEADER.format(source=name) + _pick_blocks(_rewrite(source, kept), sides, marks, swaps)


def _markers(source: str) -> dict[int, str]:
    """The rows (from 1) of ``source``'s markers, and what each says.

    A marker is a comment alone on its line: a line inside a string that reads like one is refused, so
    that a docstring quoting the markers is never taken for them.
    """
    lines = source.splitlines(keepends=True)
    comments = {token.start[0] for token in _tokens(source, lines) if token.type == tokenize.COMMENT}
    found = {}
    for number, line in enumerate(lines, 1):
        mark = _MARK.match(line.rstrip("\n"))
        if mark is None:
            continue
        if number not in comments:
            raise MarkError(f"line {number}: '# unasync: {mark.group('what')}' inside a string would read as a "
                            "marker; word it otherwise")
        found[number] = mark.group("what")
    return found


def _sides(marks: dict[int, str], rows: int) -> list[str | None]:
    """The side of the marked block each of ``rows`` rows is in (``None``: outside every block)."""
    found: list[str | None] = []
    side = None
    expected = {"async only": (None,), "sync only": ("async only",), "end": ("async only", "sync only"),
                "sync docstring": (None,)}
    for number in range(1, rows + 1):
        what = marks.get(number)
        if what is not None:
            if side not in expected[what]:
                raise MarkError(f"line {number}: '# unasync: {what}' after {side or 'no marker'}")
            found.append(side)
            side = side if what == "sync docstring" else None if what == "end" else what
            continue
        found.append(side)
    if side is not None:
        raise MarkError(f"'# unasync: {side}' block never ends")
    return found


class _Swap(NamedTuple):
    """A scope's docstring replaced in the twin: its rows, the marker's row, and the marked string's rows."""

    docstring: tuple[int, int]
    mark: int
    text: tuple[int, int]


def _sync_docstrings(source: str, marks: dict[int, str], sides: list[str | None]) -> list[_Swap]:
    """Each ``# unasync: sync docstring`` of ``source``: the docstring its string replaces in the twin."""
    rows = [number for number, what in marks.items() if what == "sync docstring"]
    if not rows:
        return []
    lines = source.splitlines(keepends=True)
    strings: dict[int, tuple[ast.stmt, ast.stmt | None]] = {}  # first row -> (a string statement, its docstring)
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            docstring = node.body[0] if _is_text(node.body[0]) else None
            for statement in node.body[1:]:
                if _is_text(statement):
                    strings[statement.lineno] = (statement, docstring)
    swaps = []
    replaced: set[int] = set()
    for mark in rows:
        found = strings.get(mark + 1)
        if found is None:
            raise MarkError(f"line {mark}: '# unasync: sync docstring' is not followed by a string statement")
        statement, docstring = found
        if docstring is None or docstring.lineno in replaced:
            said = "has no docstring" if docstring is None else "has its sync docstring already"
            raise MarkError(f"line {mark}: the scope of '# unasync: sync docstring' {said}")
        for node in (docstring, statement):
            assert node.end_lineno is not None and node.end_col_offset is not None
            alone = (not lines[node.lineno - 1][:node.col_offset].strip()
                     and not lines[node.end_lineno - 1][node.end_col_offset:].strip())
            if not alone or any(sides[n - 1] for n in range(node.lineno, node.end_lineno + 1)):
                raise MarkError(f"line {node.lineno}: a docstring swapped by '# unasync: sync docstring' stands "
                                "alone on its lines, outside marked blocks")
        replaced.add(docstring.lineno)
        swaps.append(_Swap(docstring=(docstring.lineno, _last_row(docstring)), mark=mark,
                           text=(statement.lineno, _last_row(statement))))
    return swaps


def _is_text(statement: ast.stmt) -> bool:
    return (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
            and isinstance(statement.value.value, str))


def _last_row(statement: ast.stmt) -> int:
    assert statement.end_lineno is not None
    return statement.end_lineno


def _pick_blocks(text: str, sides: list[str | None], marks: dict[int, str], swaps: list[_Swap]) -> str:
    """Keep the sync side of each marked block (uncommented), drop the async side and the markers, and put
    each sync docstring in place of the one it replaces."""
    lines = text.splitlines(keepends=True)
    put: dict[int, list[str]] = {}
    dropped: set[int] = set()
    for swap in swaps:
        put[swap.docstring[0]] = lines[swap.text[0] - 1:swap.text[1]]
        dropped.update(range(swap.docstring[0] + 1, swap.docstring[1] + 1), range(swap.mark, swap.text[1] + 1))
        # (a string set apart by blank lines leaves one blank line, not two)
        before, after = swap.mark - 1, swap.text[1] + 1
        if before >= 1 and not lines[before - 1].strip() and after <= len(lines) and not lines[after - 1].strip():
            dropped.add(after)
    kept = []
    for number, (line, side) in enumerate(zip(lines, sides, strict=True), 1):
        if number in put:
            kept += put[number]
            continue
        if number in dropped or side == "async only" or number in marks:
            continue
        if side == "sync only":
            stripped = line.lstrip(" \t")
            indent = line[:len(line) - len(stripped)]
            if stripped.strip() == "#":
                line = "\n"
            elif stripped.startswith("# "):
                line = indent + stripped[2:]
            else:
                raise MarkError(f"line {number}: a sync-only line is not commented out with '# '")
        kept.append(line)
    return "".join(kept)


def _rewrite(source: str, kept: set[int]) -> str:
    """The token-level rewrite of ``source`` (see the module's docstring), the rows in ``kept`` left alone."""
    lines = source.splitlines(keepends=True)
    tokens = _tokens(source, lines)
    edits: list[Edit] = []
    significant = [t for t in tokens if t.type not in (tokenize.NL, tokenize.COMMENT)]
    after = {id(t): significant[i + 1] if i + 1 < len(significant) else None for i, t in enumerate(significant)}
    for index, token in enumerate(tokens):
        if token.start[0] in kept:
            continue
        if token.type == tokenize.NAME:
            following = after.get(id(token))
            if (token.string == "await" or (token.string == "async" and following is not None
                                             and following.string in ("def", "for", "with"))):
                assert following is not None
                edits.append((token.start, following.start, ""))
            elif token.string in NAMES:
                edits.append((token.start, token.end, NAMES[token.string]))
                if token.string == "AsyncGenerator" and following is not None and following.string == "[":
                    closing = _closing(tokens, tokens.index(following, index))
                    edits.append((closing.start, closing.start, ", None"))
        elif token.type in (tokenize.STRING, tokenize.COMMENT):
            text = _PROSE.sub("", _WORDS.sub(lambda m: NAMES[m.group(1)], token.string))
            if text != token.string:
                edits.append((token.start, token.end, text))
    edits += _realigned(tokens, lines, edits)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    text = source
    for start, end, replacement in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        text = text[:offsets[start[0] - 1] + start[1]] + replacement + text[offsets[end[0] - 1] + end[1]:]
    return text


def _tokens(source: str, lines: list[str]) -> list[tokenize.TokenInfo]:
    """The tokens of ``source`` (its ``lines``), each f-string one ``STRING`` token spelled as written.

    Python 3.12 tokenizes an f-string in parts (its text, and the names and operators of each
    replacement field); 3.10 and 3.11 give it as one ``STRING``. Each is taken whole here, as the older
    versions take it: the twin is then the same whichever version runs the script (3.12 gave the text of
    an f-string over several lines as written, 3.11 rewrote it; 3.12 would realign a line inside it).
    """
    found: list[tokenize.TokenInfo] = []
    opened: list[tokenize.TokenInfo] = []  # (the f-strings that enclose the token: one within another's field)
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == _FSTRING_START:
            opened.append(token)
        elif token.type == _FSTRING_END:
            first = opened.pop()
            if not opened:
                text = _span(lines, first.start, token.end)
                found.append(tokenize.TokenInfo(tokenize.STRING, text, first.start, token.end, first.line))
        elif not opened:
            found.append(token)
    return found


def _span(lines: list[str], start: tuple[int, int], end: tuple[int, int]) -> str:
    """The text of ``lines`` from ``start`` to ``end`` (row from 1, column)."""
    if start[0] == end[0]:
        return lines[start[0] - 1][start[1]:end[1]]
    return lines[start[0] - 1][start[1]:] + "".join(lines[start[0]:end[0] - 1]) + lines[end[0] - 1][:end[1]]


def _closing(tokens: list[tokenize.TokenInfo], opening: int) -> tokenize.TokenInfo:
    depth = 0
    for token in tokens[opening:]:
        if token.type == tokenize.OP and token.string in "([{":
            depth += 1
        elif token.type == tokenize.OP and token.string in ")]}":
            depth -= 1
            if depth == 0:
                return token
    raise ValueError("unbalanced brackets")


def _realigned(tokens: list[tokenize.TokenInfo], lines: list[str], edits: list[Edit]) -> list[Edit]:
    """The indentation edits that keep continuation lines aligned with their bracket once the rewrite
    moved that bracket left (or right)."""
    moved: dict[int, list[tuple[int, int]]] = {}  # row -> (column, how far what follows it moves)
    for start, end, replacement in edits:
        if start[0] == end[0]:
            moved.setdefault(start[0], []).append((start[1], len(replacement) - (end[1] - start[1])))
    shift: dict[int, int] = {}  # row -> how far the whole row moved (its indentation changed)

    def new_column(row: int, column: int) -> int:
        return column + shift.get(row, 0) + sum(d for c, d in moved.get(row, ()) if c < column)

    opened: list[tokenize.TokenInfo] = []
    row_seen = 0
    for token in tokens:
        row = token.start[0]
        if row > row_seen:
            if opened and token.type not in (tokenize.NL, tokenize.NEWLINE) and opened[-1].start[0] < row \
                    and token.start[1] == opened[-1].end[1]:
                bracket = opened[-1]
                shift[row] = new_column(bracket.start[0], bracket.end[1]) - token.start[1]
            row_seen = token.end[0]
        if token.type == tokenize.OP and token.string in _BRACKETS:
            opened.append(token)
        elif token.type == tokenize.OP and token.string in _BRACKETS.values():
            opened.pop()
    found = []
    for row, by in shift.items():
        if by:
            indent = len(lines[row - 1]) - len(lines[row - 1].lstrip(" "))
            found.append(((row, 0), (row, indent), " " * (indent + by)))
    return found


def main(argv: list[str] | None = None) -> int:
    """Write every sync twin (or, with ``--check``, say which differ from what the script makes)."""
    parser = argparse.ArgumentParser(prog="python -m tools.unasync", description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when a twin is out of date")
    arguments = parser.parse_args(argv)
    stale = []
    for source, target in FILES:
        made = unasync((ROOT / source).read_text(encoding="utf-8"), source)
        path = ROOT / target
        if path.exists() and path.read_text(encoding="utf-8") == made:
            continue
        stale.append(target)
        if not arguments.check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(made, encoding="utf-8")
    for target in stale:
        print(f"{target}: {'out of date' if arguments.check else 'written'}", file=sys.stderr)
    return 1 if stale and arguments.check else 0


if __name__ == "__main__":
    sys.exit(main())
