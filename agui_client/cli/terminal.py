"""What the CLI writes to a terminal: text from the agent made inert, and shown for what it is.

Every string an agent or a recording supplies (message text, tool names and arguments, reasoning,
interrupt messages and schemas, state, error messages, the bodies quoted in errors) may carry
characters a terminal obeys instead of showing: an escape sequence that retitles the window, writes
the clipboard (OSC 52), clears the screen or asks the terminal to type a reply into stdin (a cursor
position report), a DCS string, the 8-bit C1 forms of the same (U+009B is a whole CSI), or a BEL, a
backspace or a bare carriage return that rewrites what is already on the line. Others mislead the
reader without any terminal feature: bidi overrides and isolates reorder what is shown ("Trojan
Source"), zero-width and tag characters hide text, U+2028/U+2029 break lines where some viewers see
none.

:func:`visible` replaces each such character with its escape as Python writes it (``\\x1b``,
``\\x9b``, ``\\u202e``), in ASCII, so the person sees that something was there and what, and the
terminal receives nothing it acts on. Newlines and tabs are kept; a CRLF becomes a newline. Which
characters count (``agui_client._inert`` holds the rule, ``docs/chat.md`` describes it): the Unicode
categories ``Cc``, ``Cf``, ``Cs``, ``Zl`` and ``Zp``, read from the interpreter's Unicode database, and
every ``Default_Ignorable_Code_Point`` (the Hangul fillers, the combining grapheme joiner …); ZERO WIDTH
JOINER and NON-JOINER and the variation selectors are kept where they join (one, right after a visible
character: emoji sequences, Persian and Indic scripts need them).

Names and ids (interrupt, call, run and thread ids, tool names …) are shown with :func:`named`: the
same, plus every joiner, selector, space but U+0020 and blank symbol escaped and a backslash doubled,
so that two that differ never read the same; one longer than 120 characters is cut and ends with a
digest of the whole.

The CLI applies it where its output leaves, so a renderer cannot forget it: ``PlainOutput``'s
writes (``agui_client.cli.render``), :class:`SafeConsole` (the only rich console the CLI makes), the
:class:`InertLogHandler` for the library's log records and uvicorn's (``agui serve``, ``agui demo``),
and the traceback of an unforeseen fault.
``--json`` output stays JSON: :func:`json_text` writes the same characters as JSON ``\\u`` escapes,
which parse back to the same strings.
"""

from __future__ import annotations

import codecs
import json
import logging
import os
import re
import sys
from collections.abc import Iterable
from typing import Any, TextIO

from rich.console import Console, ConsoleOptions, RenderableType
from rich.protocol import rich_cast
from rich.segment import Segment
from rich.style import Style
from rich.text import Span, Text, TextType

from .._inert import CANDIDATES as _CANDIDATES
from .._inert import ascii_named, named, one_line, prose_with, some_lines, unmixed, visible, visible_after
from .stopping import wait_for_input

__all__ = ["visible", "visible_after", "one_line", "named", "ascii_named", "unmixed", "some_lines", "listed",
           "json_text", "safe_text", "SafeConsole", "InertLogHandler", "LISTED", "typed_text", "read_typed_text"]


def _json_escape(char: str) -> str:
    code = ord(char)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def _json_shown(found: re.Match[str]) -> str:
    return "".join(map(_json_escape, found.group()))


def json_text(value: Any, **options: Any) -> str:
    """``json.dumps(value, ensure_ascii=False, **options)`` with the characters :func:`visible`
    neutralises written as JSON ``\\u`` escapes: other non-ASCII text stays readable, the value
    parses back unchanged, and nothing in it acts on a terminal it is printed to.

    (Without this, ``ensure_ascii=False`` writes DEL, the C1 controls and bidi characters raw: JSON
    only requires U+0000–U+001F to be escaped.)
    """
    return prose_with(json.dumps(value, ensure_ascii=False, **options), _json_shown)


def safe_text(text: str, style: str | Style = "") -> Text:
    """A rich ``Text`` of ``text`` made :func:`visible`.

    Build Text from agent strings with this rather than ``Text(...)``: rich itself silently drops
    BEL, BS, VT, FF and CR from a ``Text``, so :class:`SafeConsole` would never see them to show them.
    """
    return Text(visible(text), style=style)


def _visible_text(text: Text) -> Text:
    """``text`` with its characters made :func:`visible`, styles kept (the same object when clean)."""
    plain = text.plain
    if _CANDIDATES.search(plain) is None:
        return text
    # Cut at every span edge, so each piece has one set of styles over its whole length and the
    # (longer) shown form of a piece can carry them.
    edges = sorted({edge for span in text.spans for edge in (span.start, span.end)} - {0, len(plain)})
    result = text.blank_copy()
    for piece in text.divide(edges):
        shown = visible(piece.plain)
        result.append_text(Text(shown, spans=[Span(0, len(shown), span.style) for span in piece.spans]))
    return result


class SafeConsole(Console):
    """The CLI's rich console: nothing printed through it reaches the terminal able to act on it.

    - markup, emoji codes and highlighting are off, so ``[bold red]``, ``[link=…]`` or ``:smile:``
      in a string is shown as written;
    - every string and ``Text`` rendered, at any depth of a panel, table or group, is made
      :func:`visible` before it is laid out (so widths are measured on what is shown);
    - every segment that comes out is checked once more, and hyperlink styles are dropped (the CLI
      makes none, and an OSC 8 link carries its URL to the terminal), so a renderable that yields
      segments of its own cannot bring a control character through.

    rich's own cursor and style sequences (a spinner, colours) are control segments and styles,
    which pass as they are.
    """

    def __init__(self, **options: Any) -> None:
        options.update(markup=False, emoji=False, highlight=False)
        super().__init__(**options)

    def render_str(self, text: str, **options: Any) -> Text:
        """As ``Console.render_str``, with markup, emoji and highlighting off and the text made visible."""
        options.update(markup=False, emoji=False, highlight=False)
        return super().render_str(visible(text), **options)

    def input(self, prompt: TextType = "", *, markup: bool = True, emoji: bool = True, password: bool = False,
              stream: TextIO | None = None) -> str:
        """As ``Console.input`` (markup and emoji off), its read begun once the terminal has something to
        read or a signal came (:func:`~agui_client.cli.stopping.wait_for_input`: a Ctrl-C landing between
        the prompt and the read is not left until Enter)."""
        if prompt:
            self.print(prompt, markup=False, emoji=False, end="")
        wait_for_input(stream if stream is not None else sys.stdin)
        return super().input("", password=password, stream=stream)

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterable[Segment]:
        """As ``Console.render``, with text made visible and no hyperlinks (see the class docstring)."""
        renderable = rich_cast(renderable)
        if isinstance(renderable, Text):
            renderable = _visible_text(renderable)
        for segment in super().render(renderable, options):
            text, style, control = segment
            if control is not None:
                yield segment
                continue
            if style is not None and style.link:
                style = style.update_link(None)
            yield Segment(visible(text), style)


class InertLogHandler(logging.Handler):
    """Log records (WARNING and above) written to the current ``sys.stderr`` made :func:`visible`,
    cut at ``LOG_CHARS`` characters, one a line, as Python's last-resort handler writes them when nothing
    else is configured."""

    def __init__(self, level: int = logging.WARNING) -> None:
        super().__init__(level)

    def emit(self, record: logging.LogRecord) -> None:
        """Write ``record``'s message, inert."""
        try:
            sys.stderr.write(visible(_bounded(self.format(record))) + "\n")
            sys.stderr.flush()
        except Exception:
            self.handleError(record)


#: The most characters of a log record written (the library bounds what it quotes; a record from
#: elsewhere may quote anything).
LOG_CHARS = 4000


def _bounded(text: str) -> str:
    return text if len(text) <= LOG_CHARS else f"{text[:LOG_CHARS]}... ({len(text) - LOG_CHARS} more characters)"


#: The most ids (or names) a line of the CLI lists; the rest are counted.
LISTED = 10


def listed(names: Iterable[str], limit: int = LISTED) -> str:
    """Names the agent chose (interrupt ids, call ids, field names) as one line lists them: each as
    :func:`named` shows it, the first ``limit``, and a count of the rest (an agent may raise thousands).

    >>> listed(["a", "b\\nc"], 1)
    'a and 1 more'
    """
    names = list(names)
    shown = ", ".join(map(named, names[:limit]))
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


# --------------------------------------------------------------------------------------------------
# What a person types
# --------------------------------------------------------------------------------------------------

#: The lone surrogates Python puts in place of each byte its locale's encoding could not decode.
_UNDECODED = re.compile("[\udc80-\udcff]")


def typed_text(text: str) -> str:
    """A command-line argument as the person typed it (an ``argparse`` ``type``, for the arguments that
    are sent as text: messages, answers, state, ids).

    Under a locale whose encoding cannot decode what the terminal sends (ASCII: the C locale with
    Python's UTF-8 mode off, ``PYTHONUTF8=0``; by default Python reads the C locale as UTF-8) Python
    hands each undecodable byte of ``sys.argv`` over as a lone surrogate, which no JSON can carry: "café" was
    refused as "a lone surrogate U+DCC3 at character 3", which nobody can act on. Terminals send UTF-8
    whatever the locale says (the reason Python's own UTF-8 mode takes the C locale to mean UTF-8), so the
    bytes are read as UTF-8; one that is not UTF-8 becomes U+FFFD, shown and sent as such. File names
    are left alone: ``open()`` turns their surrogates back into the same bytes.

    >>> typed_text("caf\\udcc3\\udca9") == "caf\\u00e9"
    True
    """
    if _UNDECODED.search(text) is None:
        return text
    return os.fsencode(text).decode("utf-8", "replace")


def read_typed_text() -> None:
    """Read ``sys.stdin`` as a person's typing (the chat's lines, the answers to a form), from now on.

    A locale that says ASCII (``LANG=C``) read "é" as two lone surrogates, which the agent's request then
    refused; ``PYTHONIOENCODING=ascii`` failed the chat with a ``UnicodeDecodeError`` traceback. As for
    :func:`typed_text`: an ASCII stdin is read as UTF-8, and a byte its encoding cannot decode becomes
    U+FFFD rather than an error. Another locale's encoding (Latin-1, say) is kept: it reads what its
    terminal sends. Nothing must have been read from stdin yet.
    """
    reconfigure = getattr(sys.stdin, "reconfigure", None)
    if reconfigure is None:
        return
    encoding = getattr(sys.stdin, "encoding", None) or "ascii"
    ascii_only = codecs.lookup(encoding).name == "ascii"
    reconfigure(errors="replace", **({"encoding": "utf-8"} if ascii_only else {}))
