r"""An agent's text made safe to show: the rule the ``agui`` CLI applies, for your own chat app.

Everything in a thread is the agent's text, and text can carry characters a terminal obeys instead of
showing (an escape sequence that clears the screen, retitles the window or writes the clipboard, its
8-bit C1 form, a BEL, a bare carriage return that writes over the line) or that mislead the reader
(bidi overrides that reorder what is shown, zero-width and tag characters that hide text, a Hangul
filler that renders as nothing). The functions here write each such character as its escape, in
ASCII (``\x1b``, ``\x9b``, ``\u202e``), so the person sees that something was there and what, and
nothing reaches the screen able to act on it. They take and return plain ``str``: use them with
``print``, curses, prompt_toolkit, Textual or any other toolkit.

- :func:`inert_text` for prose: a message's text, reasoning, an interrupt's message, an error message.
  Newlines, tabs, emoji sequences and every script read as they should.
- :func:`inert_name` for names and ids: tool names, interrupt, call and thread ids, an interrupt's
  reason. On one line and bounded, and two that differ never read the same.
- :class:`InertDeltas` for text that arrives in pieces (``TEXT_MESSAGE_CONTENT`` deltas,
  ``stream.text_stream``): an emoji sequence or a CRLF cut between two deltas reads as it would whole.

Which characters count is listed in the documentation (``agui chat``, "Which characters are
escaped"); in short, the Unicode categories ``Cc`` (but tab and newline), ``Cf``, ``Cs``, ``Zl`` and
``Zp``, and every ``Default_Ignorable_Code_Point``, with ZERO WIDTH JOINER, NON-JOINER and the
variation selectors kept in prose where they join.

Examples:
    >>> from agui_client.terminal import inert_text, inert_name
    >>> print(inert_text("done\x1b]0;pwned\x07 \u202eexe.txt"))
    done\x1b]0;pwned\x07 \u202eexe.txt
    >>> print(inert_name("approve\u3164"), inert_name("approve"))
    approve\u3164 approve
"""

from __future__ import annotations

from . import _inert
from ._inert import ascii_named, named, unmixed, visible, visible_after

__all__ = ["inert_text", "inert_name", "InertDeltas", "NAME_CHARS"]

NAME_CHARS = _inert.NAME_CHARS
"""The longest name :func:`inert_name` shows whole, its default ``limit`` (120): a longer one is cut and
ends with a digest of the whole."""


def inert_text(text: str, *, look_alikes: bool = False) -> str:
    r"""``text`` (prose: a message, reasoning, an error message) with every character a terminal would
    obey, or a reader could not see, written as its escape.

    Escaped: the control characters but tab and newline (a bare carriage return shows as ``\r``; a
    CRLF becomes a newline), a lone surrogate, the format characters (bidi overrides and isolates,
    zero-width space, word joiner, BOM, soft hyphen, tag characters), the line and paragraph
    separators, and the characters Unicode says to render as nothing (the Hangul fillers, the
    combining grapheme joiner). Kept: ZERO WIDTH JOINER and NON-JOINER and a variation selector right
    after a visible character, one each, so emoji sequences, Persian and Indic text read right; a
    second one in a row, or one after a blank, a line end or at the very start of the text, is
    escaped (it joins nothing, and could only carry hidden text). Combining marks stack on the
    character before them: four in a row are kept (Vietnamese needs two, pointed Hebrew three or four),
    a fifth and the rest are escaped, so a pile of them cannot draw over the lines around it. Spaces
    and blank-looking characters (a no-break space, U+2800 BRAILLE PATTERN BLANK) stay: in prose they
    read as blanks.

    The text is not cut: bound a long one yourself before you show it. For a text that arrives in
    pieces, use :class:`InertDeltas`, which judges each piece by the one before it (each delta on its
    own through this function would show the joiner of an emoji cut between two deltas as an escape).

    Where the person approves an action on the strength of the text (the interrupt's question, the
    arguments of the call it approves), pass ``look_alikes=True``: then in each word that holds an ASCII
    letter or digit, every character that may pass for an ASCII one (a Cyrillic, Greek or Armenian
    letter, a fullwidth or mathematical letter, a dotless ``i``, a division slash) is escaped too, so
    ``/etc/p\u0430sswd`` (a Cyrillic ``a``) cannot read as ``/etc/passwd``. Words in other scripts,
    accented Latin words and words in one script only stay as written (the ``agui`` CLI does this in
    its interrupt panel).

    Args:
        text: the agent's text.
        look_alikes: also escape, in words that mix them with ASCII, the characters that look like ASCII.

    Returns:
        The text to show: what was plain stays as it is (the same string when nothing needs escaping).

    Examples:
        >>> print(inert_text("clear\x1b[2J\rgone \x9b31m"))
        clear\x1b[2J\rgone \x9b31m
        >>> inert_text("line one\r\nline two\tend")
        'line one\nline two\tend'
        >>> print(inert_text("secret\u200b\U000e0041\ufeff"))
        secret\u200b\U000e0041\ufeff
        >>> family = "\U0001f468\u200d\U0001f469\u200d\U0001f467"      # one emoji, joined by ZWJs
        >>> inert_text(family) == family and inert_text("\u2764\ufe0f") == "\u2764\ufe0f"
        True
        >>> inert_text("\u2764\ufe0f\ufe0f") == "\u2764\ufe0f\\ufe0f"     # a second selector hides something
        True
        >>> print(inert_text("\u200d\ufe0fstart"))                  # nothing before them to join
        \u200d\ufe0fstart
        >>> print(inert_text("rm /etc/p\u0430sswd", look_alikes=True))   # a Cyrillic a in a Latin word
        rm /etc/p\u0430sswd
        >>> inert_text("caf\u00e9 \u0434\u043e\u043c", look_alikes=True) == "caf\u00e9 \u0434\u043e\u043c"
        True
    """
    return visible_after("", unmixed(text) if look_alikes else text)


def inert_name(name: str, limit: int = NAME_CHARS, *, ascii_only: bool = False) -> str:
    r"""A name or id the agent chose (a tool name, an interrupt, call, run or thread id, an interrupt's
    reason), shown on one line so that two that differ never read the same.

    On top of what :func:`inert_text` escapes, every joiner and variation selector, every space but
    U+0020, a U+0020 at either end, the blank symbols U+2800 and U+1D159, and tab and newline are
    written as escapes (``\t``, ``\n``), and a backslash is doubled, so a name cannot spell out the
    escape of a character another name holds. A name longer than ``limit`` characters is cut to
    ``limit`` and followed by ``...#`` and eight hex digits of a digest of the whole name: two long
    names that share their first ``limit`` characters still read apart, and a cut name is always
    longer than one shown whole. The digest is keyed with a key drawn when the process starts, so an
    agent (which never sees it) cannot choose two names with the same digest; the same name shows the
    same digest throughout one process.

    Where the person approves an action by it (the tool an interrupt's call runs, the interrupt's id and
    reason, a field of the answer), pass ``ascii_only=True``: every character outside ASCII is escaped
    too, so ``re\u0430d_file`` with a Cyrillic ``a`` cannot read as ``read_file`` (a name in another
    script then reads as its code points; the ``agui`` CLI does this in its interrupt panel).

    Show a name with this, and answer or look up with the name itself, as the agent wrote it.

    Args:
        name: the agent's name or id.
        limit: the most characters shown whole (120 by default).
        ascii_only: also escape every character outside ASCII.

    Returns:
        The name to show, on one line, at most ``limit + 12`` characters.

    Examples:
        >>> print(inert_name("delete_env"), inert_name("delete\u3164env"), inert_name("delete\\u3164env"))
        delete_env delete\u3164env delete\\u3164env
        >>> print(inert_name("a\nb "), inert_name("\u2800"), inert_name("ok\ufe0f"))
        a\nb\x20 \u2800 ok\ufe0f
        >>> cut = inert_name("x" * 10_000)
        >>> cut.startswith("x" * 120 + "...#"), len(cut)
        (True, 132)
        >>> inert_name("x" * 200 + "1") != inert_name("x" * 200 + "2")
        True
        >>> inert_name("re\u0430d_file") == "re\u0430d_file", inert_name("re\u0430d_file", ascii_only=True)
        (True, 're\\u0430d_file')
    """
    if type(limit) is not int or limit < 1:
        raise ValueError(f"limit is the most characters shown whole, 1 or more, not {limit!r}")
    return ascii_named(name, limit) if ascii_only else named(name, limit)


class InertDeltas:
    r"""The pieces of one streamed text (its deltas) made safe to show as they arrive.

    Feed each delta to :meth:`feed` and show what it returns, in order, then call :meth:`end` when the
    text ends (``TEXT_MESSAGE_END``, the end of ``stream.text_stream``) and show what that returns.
    Shown one after another, the pieces read exactly as :func:`inert_text` shows the whole text,
    wherever the deltas were cut:

    - a joiner or variation selector at a delta's start is judged by the last character of the delta
      before it: kept when it joins (an emoji sequence cut after its first emoji), escaped when it
      follows a blank or another one (a stream of one selector per delta cannot hide text);
    - so is a combining mark, by the marks right before it (four in a row are kept, the rest escaped);
    - a delta's final carriage return is held until the next one: a CRLF cut between two deltas is a
      line end, and a bare CR still shows as ``\r``.

    One object follows one text, from the start of a line; start a new one (or call :meth:`end`) for
    the next text. The ``agui`` CLI writes its token-by-token output (``agui run``, the plain
    ``agui chat``, reasoning) through this class.

    Examples:
        >>> deltas = InertDeltas()
        >>> family = "\U0001f468\u200d\U0001f469\u200d\U0001f467"
        >>> shown = deltas.feed("hi " + family[:2]) + deltas.feed(family[2:]) + deltas.end()
        >>> shown == inert_text("hi " + family) == "hi " + family
        True
        >>> pieces = ["a\r", "\nb ", "\ufe0f", "\x1b[2J\r"]
        >>> print("".join(deltas.feed(piece) for piece in pieces) + deltas.end())
        a
        b \ufe0f\x1b[2J\r
    """

    __slots__ = ("_last", "_held_cr")

    def __init__(self) -> None:
        #: The last characters shown ("" at the start of a line), four: a joiner, selector or combining
        #: mark the next delta starts with is judged by them.
        self._last = ""
        #: A delta ended with a CR: it waits for the next delta, which may start with the LF of a CRLF.
        self._held_cr = False

    def feed(self, delta: str) -> str:
        """The text to show for ``delta``, the next piece of the text (may be ``""``: a delta that is
        only a carriage return waits for the next one)."""
        if self._held_cr:
            self._held_cr = False
            if not delta.startswith("\n"):
                delta = "\r" + delta
        if delta.endswith("\r"):
            self._held_cr = True
            delta = delta[:-1]
        if not delta:
            return ""
        shown, self._last = visible_after(self._last, delta), (self._last + delta)[-_inert.STACKED_MARKS:]
        return shown

    def end(self) -> str:
        r"""The text to show at the end of the text: a carriage return still held (``\r``), or ``""``.
        The object is then at the start of a line again, ready for another text."""
        held, self._held_cr, self._last = self._held_cr, False, ""
        return visible("\r") if held else ""
