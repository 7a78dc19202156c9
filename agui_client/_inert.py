"""Text from an agent made inert: the one rule, shared by the CLI and the library's own messages.

Every string an agent supplies may carry characters a terminal obeys instead of showing (an escape
sequence, its 8-bit C1 form, a BEL, a bare carriage return) or that mislead a reader (bidi overrides,
zero-width and tag characters, line separators, letters that render as nothing). :func:`visible` writes
each as its escape, in ASCII (``\\x1b``, ``\\x9b``, ``\\u202e``), so the person sees that something
was there and what.

Which characters count (``docs/chat.md``, "Which characters are escaped"):

- by Unicode category, so the rule follows the interpreter's Unicode database: ``Cc`` (but tab and
  newline), ``Cf``, ``Cs``, ``Zl`` and ``Zp``;
- and every ``Default_Ignorable_Code_Point``: the characters Unicode says a renderer without support
  for them shows as nothing. Besides format characters, this holds letters and marks the categories
  call ordinary: the Hangul fillers (U+115F, U+1160, U+3164, U+FFA0, category ``Lo``), the combining
  grapheme joiner U+034F and the variation selectors (``Mn``), the reserved U+2065, U+FFF0–U+FFF8 and
  the rest of U+E0000–U+E0FFF. The property is not in ``unicodedata``; its list (below) is fixed
  text of Unicode's DerivedCoreProperties.txt, and has gained one character (U+180F) since 2012.

Two kinds of text are shown, with two strengths of the rule:

- prose (message text, reasoning, arguments, error messages; :func:`visible`): ZERO WIDTH JOINER and
  NON-JOINER and the variation selectors are kept where they do their work, right after a visible
  character (emoji ZWJ sequences such as a family, a heart's U+FE0F, an ideograph's variation, Persian
  and Indic joins), one each: a second one in a row, or one after a space or a line end, changes
  nothing a reader sees and could only carry hidden text, so it is shown as its escape. One at the
  very start of a text is kept: a streamed token (a text delta) may continue the character the one
  before it ended with, as an emoji sequence cut between two deltas does.
  Blank-looking characters (a no-break space, U+2800) stay: in prose they read as the blanks they are.
- names and ids (interrupt, call, run and thread ids, tool, step and subagent names; :func:`named`):
  two of them must never look the same when they differ, so also every joiner and selector, every
  space but U+0020 (category ``Zs``), a U+0020 at either end, the blank-rendering symbols U+2800
  BRAILLE PATTERN BLANK and U+1D159 MUSICAL SYMBOL NULL NOTEHEAD, and tab and newline are escaped, and a
  backslash is doubled (so a name cannot spell the escape of a character another name holds). A name
  longer than :data:`NAME_CHARS` is cut, and the cut form ends with a digest of the whole name.

``agui_client.cli.terminal`` applies it where the CLI's output leaves; the library applies it to the
agent's words it quotes in an exception's message (an HTTP error's excerpt, a ``RUN_ERROR`` message, the
interrupt ids a refused resume names), which a traceback prints to a terminal. The attributes holding
those words keep them as they came.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import unicodedata
from collections.abc import Callable

__all__ = ["visible", "visible_after", "prose_with", "one_line", "named", "quoted_name", "some_lines", "hidden",
           "escape", "escape_all", "quoted", "CANDIDATES", "QUOTED_CHARS", "NAME_CHARS"]

#: Unicode categories of the characters a terminal obeys or a reader cannot see.
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
#: Default_Ignorable_Code_Point, as Unicode 15.1's DerivedCoreProperties.txt lists it (inclusive ranges).
_DEFAULT_IGNORABLE = ((0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5),
                      (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164),
                      (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8),
                      (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF))
#: ZWNJ and ZWJ: kept in prose right after a visible character (emoji sequences, Persian, Indic scripts).
_JOINERS = ((0x200C, 0x200D),)
#: The variation selectors (Mongolian, standard, ideographic): kept in prose, one, after a visible character.
_SELECTORS = ((0x180B, 0x180D), (0x180F, 0x180F), (0xFE00, 0xFE0F), (0xE0100, 0xE01EF))
#: Symbols that render as a blank, which only a name needs told apart (spaces are found by category).
_BLANK_SYMBOLS = ((0x2800, 0x2800), (0x1D159, 0x1D159))
#: Where characters of those categories are, outside U+E0000–U+E0FFF (ignorable as a whole, above): planes
#: 0 and 1 (2 and 3 hold ideographs only, 4–13 nothing, 14 only that block, 15 and 16 private use; a test
#: reads them all to keep this true). The categories are read there once, the first time a text needs a
#: closer look.
_PLANES = ((0x0000, 0x1FFFF),)
#: Anything but printable ASCII, tab and newline: the only characters that need a closer look.
CANDIDATES = re.compile("[^\t\n\x20-\x7e]+")


def _codes(ranges: tuple[tuple[int, int], ...]) -> set[int]:
    return {code for low, high in ranges for code in range(low, high + 1)}


def _class(codes: set[int]) -> str:
    """A regular expression character class (without brackets) matching exactly ``codes``."""
    parts = []
    ordered = sorted(codes)
    start = previous = ordered[0]
    for code in [*ordered[1:], -1]:
        if code == previous + 1:
            previous = code
            continue
        parts.append(f"\\U{start:08x}" if start == previous else f"\\U{start:08x}-\\U{previous:08x}")
        start = previous = code
    return "".join(parts)


@functools.cache
def _patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """What :func:`visible` escapes, what :func:`named` escapes, and what :func:`quoted_name` escapes
    in a ``repr``; built once, the first time a text is not plain ASCII (reading the categories of two
    planes and compiling takes some 50 ms; one regular expression then does in C what a check of each
    character did in Python)."""
    category = unicodedata.category
    by_category: set[int] = set()
    spaces: set[int] = set()
    for low, high in _PLANES:
        for code in range(low, high + 1):
            found = category(chr(code))
            if found in _HIDDEN_CATEGORIES:
                by_category.add(code)
            elif found == "Zs" and code != 0x20:
                spaces.add(code)
    joiners, selectors = _codes(_JOINERS), _codes(_SELECTORS)
    always = (by_category | _codes(_DEFAULT_IGNORABLE)) - {0x09, 0x0A} - joiners - selectors
    hidden_, joins, selects = _class(always), _class(joiners), _class(selectors)
    # A selector is escaped when the character before it is not a visible one (a space, one escaped, a
    # joiner or another selector); a joiner when the one before is neither visible nor a selector. One
    # at the very start is kept: a token of a stream (a text delta) may continue the character the
    # token before it ended with, as an emoji sequence cut between two deltas does.
    prose = re.compile(f"[{hidden_}]+|(?<=[\\s{hidden_}{joins}{selects}])[{selects}]"
                       f"|(?<=[\\s{hidden_}{joins}])[{joins}]")
    unseen = always | joiners | selectors | spaces | _codes(_BLANK_SYMBOLS)
    # (and a U+0020 at either end, which a reader cannot see there; repr escapes tab, newline, backslash)
    named = re.compile(f"[{_class(unseen | {0x09, 0x0A, 0x5C})}]+|^ +| +$")
    return prose, named, re.compile(f"[{_class(unseen)}]+")


@functools.lru_cache(maxsize=4096)
def hidden(char: str) -> bool:
    """Whether :func:`visible` writes ``char`` as its escape when it stands alone."""
    return _patterns()[0].fullmatch(char) is not None


def escape(char: str) -> str:
    """``char`` as Python writes it in a string literal (``\\x1b``, ``\\u202e``); a CR as ``\\r``."""
    if char == "\r":
        return "\\r"  # (as Python writes it: the one control people meet in text, from CRLF line ends)
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def escape_all(found: re.Match[str]) -> str:
    """Every character of a match written as its escape (see :func:`escape`)."""
    return "".join(map(escape, found.group()))


def visible(text: str) -> str:
    """``text`` with every character a terminal would obey, or a reader could not see, written as
    its escape (``\\x1b``, ``\\x9b``, ``\\u202e``); newlines and tabs kept, CRLF made a newline.

    A bare carriage return is shown (``\\r``): on a terminal it would send the cursor back over
    the line already written.

    >>> print(visible("ok\\u3164 \\u202eevil\\x1b[2J"))
    ok\\u3164 \\u202eevil\\x1b[2J
    """
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")
    if CANDIDATES.search(text) is None:
        return text
    return _patterns()[0].sub(escape_all, text)


def visible_after(previous: str, text: str) -> str:
    """:func:`visible` for ``text``, a token written right after ``previous`` on the same terminal (a
    stream's deltas): a joiner or selector at its start is judged by the character before it, as it
    would be in the whole text. (:func:`visible` alone keeps one at the start of a text, since it may
    continue a token before it; so many deltas of one selector each, after an emoji, would otherwise
    all be kept, and carry hidden text.) ``previous`` empty is the start of a line.

    >>> visible_after("\U0001f468", "\u200d\U0001f469") == "\u200d\U0001f469"
    True
    >>> print(visible_after("\ufe0f", "\ufe0f"), visible_after(" ", "\u200dx"))
    \ufe0f \u200dx
    """
    if not text or CANDIDATES.match(text) is None:
        return visible(text)
    last = previous[-1:]
    if last in ("", "\r"):  # (a held carriage return is written with the next token, not before it)
        last = "\n"
    before = visible(last)
    shown = visible(last + text)
    return shown[len(before):] if shown.startswith(before) else visible(text)


def prose_with(text: str, replace: Callable[[re.Match[str]], str]) -> str:
    """``text`` with what :func:`visible` escapes replaced by ``replace`` (``--json`` writes JSON escapes)."""
    return _patterns()[0].sub(replace, text) if CANDIDATES.search(text) is not None else text


#: The most characters of words an error message or a log line quotes from httpx or the agent's head (a
#: reason phrase, an h11 complaint quoting a header line): a head may be 100 KB, and a line of a log as long.
QUOTED_CHARS = 500


def quoted(text: str) -> str:
    """``text`` cut at ``QUOTED_CHARS`` characters, with a count of the rest."""
    if len(text) <= QUOTED_CHARS:
        return text
    return f"{text[:QUOTED_CHARS]}... ({len(text) - QUOTED_CHARS} more characters)"


#: The longest name or id shown whole (:func:`named` cuts the rest and adds a digest; :func:`one_line` cuts
#: with ``...``).
NAME_CHARS = 120
#: The most lines of an agent's error message shown (the rest is counted, not shown).
MESSAGE_LINES = 40


def one_line(text: str, limit: int = NAME_CHARS) -> str:
    """A short piece of the agent's prose shown on one line (a schema's title, a field's description, a
    warning): its line ends written as ``\\n``, and at most ``limit`` characters. (Names and ids are shown
    with :func:`named`, which also tells apart two that differ.)

    A line end would otherwise start a line of the agent's choosing on the terminal, one that reads like
    the CLI's own (``assistant: approved``, ``run finished: success``); and a text of a megabyte would fill
    the screen. (What is left is made :func:`visible` where the output leaves.)
    """
    if "\n" in text or "\r" in text:
        text = text.replace("\r\n", "\\n").replace("\n", "\\n").replace("\r", "\\r")
    return text if len(text) <= limit else text[: limit - 3] + "..."


#: The key of the digest a cut name ends with: drawn when the process starts, so an agent, which
#: never sees it, cannot choose two names whose cut forms read the same.
_DIGEST_KEY = os.urandom(16)
#: A name shown as it is: printable ASCII but the backslash, no space at either end (or empty).
_PLAIN_NAME = re.compile("(?:[!-\\[\\]-~](?:[ !-\\[\\]-~]*[!-\\[\\]-~])?)?")
#: How a cut name ends: ``...#`` and eight hex digits of its digest.
_CUT = "...#"


def _digest(text: str) -> str:
    data = text.encode("utf-8", "surrogatepass")
    return hashlib.blake2b(data, digest_size=4, key=_DIGEST_KEY).hexdigest()


def _escape_named(found: re.Match[str]) -> str:
    return "".join("\\\\" if char == "\\" else "\\n" if char == "\n" else "\\t" if char == "\t"
                   else escape(char) for char in found.group())


def _cut(shown: str, whole: str, limit: int) -> str:
    # The cut form is longer than ``limit``, and every name shown whole is at most ``limit`` long, so a
    # short name cannot read as a long one cut; two long ones differ in their digests.
    return shown if len(shown) <= limit else f"{shown[:limit]}{_CUT}{_digest(whole)}"


def named(text: str, limit: int = NAME_CHARS) -> str:
    """A name or id the agent chose (an interrupt, call, run or thread id, a tool, step or subagent
    name), shown so that two that differ never read the same: on one line, every character
    :func:`visible` escapes, and also every joiner, variation selector, space but U+0020, U+0020 at
    either end and blank symbol written as its escape, a backslash doubled, and a name longer than
    ``limit`` cut to ``limit`` characters followed by ``...#`` and eight hex digits of a digest of the
    whole name (keyed per process: they tell names apart within one run of ``agui``).

    >>> print(named("approve\\u3164"), named("approve\\\\u3164"), named("a\\nb "))
    approve\\u3164 approve\\\\u3164 a\\nb\\x20
    >>> len(named("x" * 500)) == NAME_CHARS + 12
    True
    """
    if _PLAIN_NAME.fullmatch(text) is not None:
        return _cut(text, text, limit)
    return _cut(_patterns()[1].sub(_escape_named, text), text, limit)


def quoted_name(value: object, limit: int = 100) -> str:
    """``repr(value)`` for a message naming an id: what ``repr`` leaves a name could hide (a variation
    selector, a Hangul filler, U+2800) written as its escape, and cut as :func:`named` cuts."""
    text = repr(value)
    if CANDIDATES.search(text) is not None:
        text = _patterns()[2].sub(escape_all, text)
    return _cut(text, str(value), limit)


def some_lines(text: str, limit: int = MESSAGE_LINES) -> str:
    """An agent's free text that is not the conversation (an error message), cut after ``limit`` lines
    with a note of how many more there were: a RUN_ERROR of a hundred thousand lines is shown in
    forty, not scrolled past."""
    if text.count("\n") < limit:
        return text
    lines = text.split("\n")
    return "\n".join(lines[:limit]) + f"\n... ({len(lines) - limit} more lines)"
