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

Lines the rewrite shortened before an open bracket have their continuation lines, when aligned with
that bracket, moved left with it, so the twin reads as hand-aligned code.
"""

from __future__ import annotations

import argparse
import io
import re
import sys
import tokenize
from pathlib import Path

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
    "atrace": "trace",
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

_MARK = re.compile(r"^(?P<indent>[ \t]*)# unasync: (?P<what>async only|sync only|end)[ \t]*$")
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
    return HEADER.format(source=name) + _pick_blocks(_rewrite(source, _sync_rows(source)))


def _sync_rows(source: str) -> set[int]:
    """The rows (from 1) of the markers and the sync-only lines: written as sync code already, they are
    left as they are."""
    return {number for number, line, side in _sides(source) if side == "sync only" or _MARK.match(line.rstrip("\n"))}


def _sides(source: str) -> list[tuple[int, str, str | None]]:
    """Each line of ``source`` (its number, from 1), and the side of the marked block it is in, if any."""
    found = []
    side = None
    for number, line in enumerate(source.splitlines(keepends=True), 1):
        mark = _MARK.match(line.rstrip("\n"))
        if mark:
            what = mark.group("what")
            expected = {"async only": (None,), "sync only": ("async only",), "end": ("async only", "sync only")}
            if side not in expected[what]:
                raise MarkError(f"line {number}: '# unasync: {what}' after {side or 'no marker'}")
            found.append((number, line, side))
            side = None if what == "end" else what
            continue
        found.append((number, line, side))
    if side is not None:
        raise MarkError(f"'# unasync: {side}' block never ends")
    return found


def _pick_blocks(source: str) -> str:
    """Keep the sync side of each marked block (uncommented), drop the async side and the markers."""
    kept = []
    for number, line, side in _sides(source):
        if side == "async only" or _MARK.match(line.rstrip("\n")):
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
