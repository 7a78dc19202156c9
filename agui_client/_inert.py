"""Text from an agent made inert: the one rule, shared by the CLI and the library's own messages.

Every string an agent supplies may carry characters a terminal obeys instead of showing (an escape
sequence, its 8-bit C1 form, a BEL, a bare carriage return) or that mislead a reader (bidi overrides,
zero-width and tag characters, line separators). :func:`visible` writes each as its escape, in ASCII
(``\\x1b``, ``\\x9b``, ``\\u202e``), so the person sees that something was there and what. Which characters
count is decided by their Unicode category: ``Cc`` (but tab and newline), ``Cf`` (but ZWNJ and ZWJ,
which emoji and several scripts need), ``Cs``, ``Zl`` and ``Zp``.

``agui_client.cli.terminal`` applies it where the CLI's output leaves; the library applies it to the
agent's words it quotes in an exception's message (an HTTP error's excerpt, a ``RUN_ERROR`` message),
which a traceback prints to a terminal. The attributes holding those words keep them as they came.
"""

from __future__ import annotations

import functools
import re
import unicodedata

__all__ = ["visible", "one_line", "some_lines", "hidden", "escape", "quoted", "CANDIDATES", "QUOTED_CHARS"]

#: Unicode categories of the characters a terminal obeys or a reader cannot see.
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
#: Format characters kept: ZWNJ and ZWJ join emoji sequences and letters of Persian, Indic scripts ….
_KEPT = frozenset("\u200c\u200d")
#: Anything but printable ASCII, tab and newline: the only characters that need a closer look.
CANDIDATES = re.compile("[^\t\n\x20-\x7e]+")


@functools.lru_cache(maxsize=4096)
def hidden(char: str) -> bool:
    """Whether ``char`` is one a terminal obeys or a reader cannot see."""
    return unicodedata.category(char) in _HIDDEN_CATEGORIES and char not in _KEPT


def escape(char: str) -> str:
    """``char`` as Python writes it in a string literal (``\\x1b``, ``\\u202e``); a CR as ``\\r``."""
    if char == "\r":
        return "\\r"  # (as Python writes it: the one control people meet in text, from CRLF line ends)
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _shown(run: re.Match[str]) -> str:
    return "".join(escape(c) if hidden(c) else c for c in run.group())


def visible(text: str) -> str:
    """``text`` with every character a terminal would obey, or a reader could not see, written as
    its escape (``\\x1b``, ``\\x9b``, ``\\u202e``); newlines and tabs kept, CRLF made a newline.

    A bare carriage return is shown (``\\r``): on a terminal it would send the cursor back over
    the line already written.
    """
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")
    if CANDIDATES.search(text) is None:
        return text
    return CANDIDATES.sub(_shown, text)


#: The most characters of words an error message or a log line quotes from httpx or the agent's head (a
#: reason phrase, an h11 complaint quoting a header line): a head may be 100 KB, and a line of a log as long.
QUOTED_CHARS = 500


def quoted(text: str) -> str:
    """``text`` cut at ``QUOTED_CHARS`` characters, with a count of the rest."""
    if len(text) <= QUOTED_CHARS:
        return text
    return f"{text[:QUOTED_CHARS]}... ({len(text) - QUOTED_CHARS} more characters)"


#: The longest name, id or type shown whole (the rest is cut, with ``...``).
NAME_CHARS = 120
#: The most lines of an agent's error message shown (the rest is counted, not shown).
MESSAGE_LINES = 40


def one_line(text: str, limit: int = NAME_CHARS) -> str:
    """A name, id or type the agent chose (a tool name, a run id, an activity type, an interrupt's
    reason …), as it is shown: on one line, its line ends written as ``\\n``, and at most ``limit``
    characters.

    A name with a line end in it would otherwise start a line of the agent's choosing on the terminal,
    one that reads like the CLI's own (``assistant: approved``, ``run finished: success``); and a name of
    a megabyte would fill the screen. (What is left is made :func:`visible` where the output leaves.)
    """
    if "\n" in text or "\r" in text:
        text = text.replace("\r\n", "\\n").replace("\n", "\\n").replace("\r", "\\r")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def some_lines(text: str, limit: int = MESSAGE_LINES) -> str:
    """An agent's free text that is not the conversation (an error message), cut after ``limit`` lines
    with a note of how many more there were: a RUN_ERROR of a hundred thousand lines is shown in
    forty, not scrolled past."""
    if text.count("\n") < limit:
        return text
    lines = text.split("\n")
    return "\n".join(lines[:limit]) + f"\n... ({len(lines) - limit} more lines)"
