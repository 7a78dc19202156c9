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
  Combining marks (``Mn``, ``Me``) stack on the character before them: up to :data:`STACKED_MARKS` in a
  row are kept, the rest are escaped (in names too), so a pile of them cannot draw over other lines.
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

__all__ = ["visible", "visible_after", "prose_with", "one_line", "named", "ascii_named", "unmixed", "quoted_name",
           "some_lines", "hidden", "escape", "escape_all", "quoted", "shown_pointer", "CANDIDATES", "QUOTED_CHARS",
           "NAME_CHARS", "KEY_CHARS", "POINTER_STEPS", "STACKED_MARKS"]

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
#: The most combining marks in a row shown as marks: they stack on the character before them, and a
#: hundred ("Zalgo" text) draw over the lines above and below, the prompt among them. Vietnamese stacks two,
#: pointed Hebrew three or four; a fifth in a row and the rest are shown as their escapes.
STACKED_MARKS = 4
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
    marks: set[int] = set()
    for low, high in _PLANES:
        for code in range(low, high + 1):
            found = category(chr(code))
            if found in _HIDDEN_CATEGORIES:
                by_category.add(code)
            elif found == "Zs" and code != 0x20:
                spaces.add(code)
            elif found in ("Mn", "Me"):
                marks.add(code)
    joiners, selectors = _codes(_JOINERS), _codes(_SELECTORS)
    always = (by_category | _codes(_DEFAULT_IGNORABLE)) - {0x09, 0x0A} - joiners - selectors
    hidden_, joins, selects = _class(always), _class(joiners), _class(selectors)
    # A combining mark with STACKED_MARKS marks right before it (the selectors and the ignorable CGJ are
    # ruled above). Matched first by a class re reads from a table (the marks below U+10000, or any
    # character above), then looked back on with the whole class, whose ranges above U+FFFF re tries one
    # by one: tried on every character, they made 1 MB of mixed text take 220 ms instead of 47 (66 now).
    mark_codes = marks - always - selectors
    bmp, mark = _class({code for code in mark_codes if code < 0x10000}), _class(mark_codes)
    stacked = f"[{bmp}\\U00010000-\\U0010ffff](?<=[{mark}]{{{STACKED_MARKS + 1}}})"
    # A selector is escaped when the character before it is not a visible one (a space, one escaped, a
    # joiner or another selector); a joiner when the one before is neither visible nor a selector. One
    # at the very start is kept: a token of a stream (a text delta) may continue the character the
    # token before it ended with, as an emoji sequence cut between two deltas does.
    prose = re.compile(f"[{hidden_}]+|(?<=[\\s{hidden_}{joins}{selects}])[{selects}]"
                       f"|(?<=[\\s{hidden_}{joins}])[{joins}]|{stacked}")
    unseen = always | joiners | selectors | spaces | _codes(_BLANK_SYMBOLS)
    # (and a U+0020 at either end, which a reader cannot see there; repr escapes tab, newline, backslash)
    named = re.compile(f"[{_class(unseen | {0x09, 0x0A, 0x5C})}]+|^ +| +$|{stacked}")
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
    # The last characters shown: enough for every rule that looks back (the stacked marks' the furthest).
    last = previous[-STACKED_MARKS:]
    if last[-1:] in ("", "\r"):  # (a held carriage return is written with the next token, not before it)
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


#: The most characters of a key a message quotes (the wire's own keys are under 30): an agent's, or one
#: a pointer passes through (:func:`shown_pointer`).
KEY_CHARS = 100
#: The steps a message shows at either end of a JSON pointer of more than twice as many.
POINTER_STEPS = 16


def shown_pointer(pointer: str) -> str:
    """A JSON pointer into a value as a message quotes it (``/`` for the value itself).

    A pointer holds every key it passes through whole, and those keys are whoever built the value's: a
    state's keys the agent chose, a payload's the caller did. One key of a megabyte made an error of a
    megabyte, printed and logged whole, and a list nested 100,000 deep a pointer of 200,000 characters.
    So a step longer than :data:`KEY_CHARS` is cut there, followed by its length; a pointer of more
    than twice :data:`POINTER_STEPS` steps shows its first and last ones with the count of those left
    out between; and what a terminal would obey is written as its escape (:func:`visible`). What is left
    still says where (the steps around a cut one are whole); the error's ``pointer`` attribute keeps the
    pointer whole, to look the place up with.

    >>> shown_pointer("/rows/" + "k" * 1_000 + "/0")[-30:]
    'kkkkkkk...(1,000 characters)/0'
    >>> shown_pointer("/0" * 100)
    '/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/...(68 steps)/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0'
    """
    if not pointer:
        return "/"
    if len(pointer) <= KEY_CHARS and pointer.count("/") <= 2 * POINTER_STEPS:
        return visible(pointer)  # (nothing to cut: every step fits, and so do the steps)
    steps = pointer.split("/")[1:]
    if len(steps) > 2 * POINTER_STEPS:
        steps = [*steps[:POINTER_STEPS], f"...({len(steps) - 2 * POINTER_STEPS:,} steps)", *steps[-POINTER_STEPS:]]
    return visible("".join("/" + (step if len(step) <= KEY_CHARS
                                  else f"{step[:KEY_CHARS]}...({len(step):,} characters)") for step in steps))


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


#: Any character but printable ASCII.
_NOT_ASCII = re.compile("[^\x20-\x7e]+")


def ascii_named(text: str, limit: int = NAME_CHARS) -> str:
    """A name where the person approves an action (the tool a call runs, an interrupt's id and reason, a
    field of its answer): as :func:`named` shows it, and every character outside ASCII written as its
    escape too, so a letter of another script cannot pass for the ASCII one it looks like (a Cyrillic
    ``\u0430`` in ``re\u0430d_file``, a fullwidth ``\uff52``). Two names that differ never read the same, whichever
    letters they use; a name in another script reads as its code points, which is the price of that.

    >>> print(ascii_named("re\\u0430d_file"), ascii_named("read_file"), ascii_named("a\\\\u0430"))
    re\\u0430d_file read_file a\\\\u0430
    """
    if _PLAIN_NAME.fullmatch(text) is not None:
        return _cut(text, text, limit)
    return _cut(_NOT_ASCII.sub(escape_all, _patterns()[1].sub(_escape_named, text)), text, limit)


#: A word of prose: a run of anything but spaces. A URL, a path or a call is one word: split at its
#: punctuation, a part wholly in look-alikes (``\u0440\u0430\u0443`` in ``https://\u0440\u0430\u0443.example.com``)
#: held no ASCII letter and read as ``pay``.
_WORD = re.compile(r"\S+")
#: An ASCII letter or digit: a word holding one and something outside ASCII is the only kind :func:`unmixed`
#: reads. (Two searches, each once along the word: one pattern asking for both in either order tried every
#: start of a word with none and ran to its end from each, the square of the word's length.)
_ASCII_ALNUM = re.compile("[0-9A-Za-z]")
#: Scripts whose letters include look-alikes of ASCII letters (Unicode's confusables list is full of them):
#: by the first words of a character's name.
_ALIKE_SCRIPTS = ("CYRILLIC ", "GREEK ", "ARMENIAN ", "CHEROKEE ", "COPTIC ", "LISU ", "OLD ITALIC ", "GOTHIC ",
                  "DESERET ", "TIFINAGH ", "CANADIAN SYLLABICS ", "VAI ", "BAMUM ", "OSAGE ")
#: Latin letters that look like an ASCII letter with no mark to tell them apart (NFKD leaves them whole):
#: dotless i and j, the script a, g and iota, the small capitals and the dental click (a bar like ``l``).
_LATIN_ALIKES = frozenset("\u0131\u0237\u0251\u0261\u0269\u026a\u0274\u0280\u028f\u0299\u029c\u029f"
                          "\u0262\u01c0\ua731\ua730") | frozenset(map(chr, range(0x1D00, 0x1D23)))
#: Punctuation that looks like the ASCII punctuation inside a name or a path (a division slash for ``/``,
#: a one-dot leader for ``.``): by words of a character's name.
_ALIKE_MARKS = ("SOLIDUS", "SLASH", "HYPHEN", "DASH", "COLON", "FULL STOP", "DOT LEADER", "LOW LINE", "PERIOD")


@functools.lru_cache(maxsize=4096)
def _alike(char: str) -> bool:
    """Whether ``char`` (not ASCII) may pass for an ASCII character next to ASCII letters."""
    if char in _LATIN_ALIKES or unicodedata.normalize("NFKD", char).isascii():
        return True  # (fullwidth and mathematical letters, ligatures, superscripts decompose to ASCII)
    name = unicodedata.name(char, "")
    return name.startswith(_ALIKE_SCRIPTS) or any(word in name for word in _ALIKE_MARKS)


def _unmix(found: re.Match[str]) -> str:
    word = found.group()
    if word.isascii() or _ASCII_ALNUM.search(word) is None:
        return word
    return "".join(escape(char) if not char.isascii() and _alike(char) else char for char in word)


def unmixed(text: str) -> str:
    """Prose where the person approves an action (the question, a call's arguments): in every word that
    holds an ASCII letter or digit, each character that may pass for an ASCII one (a Cyrillic, Greek or
    Armenian letter, a fullwidth or mathematical letter, a dotless ``i``, a division slash) is written as
    its escape, so ``/etc/p\u0430sswd`` shows as ``/etc/p\\u0430sswd``. Other words stay as they are:
    a sentence in Russian, an accented or a Chinese word next to an English one (``caf\u00e9``,
    ``\u5220\u9664staging``) read as written. A word wholly in another script that spells an English
    one is not found (without Unicode's confusables table there is no telling ``\u0441\u043e\u0440``,
    a Russian word, from a disguised ``cop``).

    >>> print(unmixed("delete /etc/p\\u0430sswd, caf\\u00e9 \\u0441\\u043e\\u0440"))
    delete /etc/p\\u0430sswd, caf\u00e9 \u0441\u043e\u0440
    """
    return _WORD.sub(_unmix, text) if CANDIDATES.search(text) is not None else text


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
