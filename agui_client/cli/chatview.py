"""The view of a chat turn: one run's events drawn in the terminal as they arrive (``agui chat``).

The answer is rendered as Markdown as it arrives (finished blocks printed once, only the unfinished
tail redrawn in place, so a long message costs what it is long, and only so much of a run's answers
rendered as Markdown at all as draws :data:`MARKDOWN_CHARS` characters and writes
:data:`MARKDOWN_WRITTEN` to the terminal, escape sequences included, and only so much redrawn in place
as writes :data:`LIVE_WRITTEN`), reasoning shown dimmed and
folded to one line ("thought for N s") once the answer starts, tool calls with their arguments and
results (a JSON array of objects as a table), subagents labelled; the one-line events go to the CLI's
:class:`~agui_client.cli.render.EventRenderer`. The chat loop that makes a view per run is
:mod:`agui_client.cli.chat`'s.
"""

from __future__ import annotations

import functools
import io
import json
import re
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.constrain import Constrain
from rich.control import Control
from rich.live import Live
from rich.segment import ControlType, Segment, Segments
from rich.style import Style
from rich.table import Table
from rich.text import Text

from ..core.fold import ThreadState
from ..wire.types import events as ev
from .render import EventRenderer, Output, RichOutput
from .stopping import held_signals
from .terminal import SafeConsole, named, safe_text, visible

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

__all__ = ["ChatView", "parts_text", "tool_name"]

#: Rows and columns of a JSON array of objects shown as a table; the rest is counted, not shown.
TABLE_ROWS = 20
TABLE_COLUMNS = 8
#: The longest tool result parsed to look for a table (a larger one is shown clipped, as text).
TABLE_MAX_CHARS = 256 * 1024
#: Lines of the reasoning kept on screen while it streams (it is folded to one line afterwards).
THINKING_LINES = 4
#: The characters one run's answers may draw as Markdown (what the drawings show, counted as what costs
#: the drawing time: see ``_MarkdownWriter._print``); the blocks that no longer fit are shown as plain
#: text. Rendering costs far more than reading: a table runs at some 10 KB a second on a small machine, a
#: highlighted code block at 20, against a megabyte a second and more for plain text, so an agent's
#: megabytes of tables held the chat for hours after they arrived. This bounds the time the drawing takes.
MARKDOWN_CHARS = 64 * 1024
#: What one block's drawing is charged besides its characters: parsing and laying out a block takes some
#: 0.2 ms whatever it holds (a one-letter heading as much as a line of 80 characters of text), so a run of
#: 13,000 one-letter headings, charged only their letters, would take seconds to draw.
BLOCK_CHARS = 80
#: What one run's Markdown may write to the terminal, escape sequences included: highlighted code writes
#: 15 to 30 times its text in colour codes (8 KiB of it, 239 KB), so the characters drawn alone let an
#: agent send the terminal some 2 MB a run. This bounds the bytes the terminal receives; it is set well
#: above ordinary answers' (a dozen highlighted 30-line blocks write some 350 KB at 100 columns in
#: 24-bit colour) so that they keep their colours, where one budget of both would have left the code
#: after the first two such blocks plain.
MARKDOWN_WRITTEN = 1024 * 1024
#: What one run's unfinished blocks, redrawn in place while they stream, may write to the terminal (their
#: escape sequences and the cursor's moves back over them included). Each redraw writes the tail again, as
#: many lines as the terminal is high, up to 12 times a second: a screen of highlighted code is some 16 KB
#: at 80 columns by 24 lines and 58 KB at 200 by 60, so a stream that trickles a token at a time had the
#: terminal receive 200 to 350 KB a second for as long as it lasted, whatever the budgets above said. Once
#: it is spent the tail is no longer redrawn: the rest of the run's text is written as it comes, as plain
#: text, costing what it is long, and reasoning is no longer shown while it streams (its redraws are
#: charged here too). An answer streaming a screen-tall block of code reaches it after some 45 s at 80
#: columns (25 s at 200); most answers' tails are a paragraph or two, a tenth of that a redraw.
LIVE_WRITTEN = 8 * 1024 * 1024


class ChatView:
    """Shows one run's events in the chat (see the module docstring); ``close()`` when it ends.

    Text, reasoning and tool calls are drawn here; the one-line events (state, activities, steps,
    subagents, custom events, errors) by the CLI's :class:`~agui_client.cli.render.EventRenderer`.
    """

    def __init__(self, out: Output, state: ThreadState | None = None) -> None:
        self.out = out
        self.console: SafeConsole | None = out.console if isinstance(out, RichOutput) else None
        self.lines = EventRenderer(out, state)
        self.state = state
        self._subagents: dict[str, str] = {}
        self._writer: _Writer | None = None
        self._writer_id: str | None = None
        self._thinking: _Thinking | None = None
        self._calls: dict[str, tuple[str, list[str], str | None]] = {}
        # (what is left of MARKDOWN_CHARS, MARKDOWN_WRITTEN and LIVE_WRITTEN, shared by the run's messages:
        # one list, spent in place)
        self._markdown_left = [MARKDOWN_CHARS, MARKDOWN_WRITTEN, LIVE_WRITTEN]

    def event(self, event: ev.Event | ev.UnknownEvent) -> None:
        """Show one event."""
        match event:
            case ev.RunStartedEvent() | ev.RunFinishedEvent() | ev.ReasoningEndEvent():
                return  # (the turn's end line says how it ended)
            case ev.TextMessageStartEvent(message_id=mid, role=role, subagent_run_id=sub):
                self._write_to(mid, sub, role)
            case ev.TextMessageContentEvent(message_id=mid, delta=delta, subagent_run_id=sub):
                self._write_to(mid, sub, None).feed(delta)
            case ev.TextMessageEndEvent(message_id=mid):
                if self._writer_id == mid:
                    self._end_text()
            case ev.ReasoningStartEvent() | ev.ReasoningMessageStartEvent():
                self._end_text()
                if self._thinking is None:
                    self._thinking = _Thinking(self.out, self.console, self._markdown_left)
            case ev.ReasoningMessageContentEvent(delta=delta):
                if self._thinking is None:
                    self._end_text()
                    self._thinking = _Thinking(self.out, self.console, self._markdown_left)
                self._thinking.feed(delta)
            case ev.ReasoningMessageEndEvent():
                if self._thinking is not None:
                    self._thinking.ended()
            case ev.ToolCallStartEvent(tool_call_id=cid, tool_call_name=name, subagent_run_id=sub):
                self._settle()
                self._calls[cid] = (named(name), [], sub)
                self.out.start_waiting(f"{named(name)}(...)")
            case ev.ToolCallArgsEvent(tool_call_id=cid, delta=delta):
                if cid in self._calls:
                    self._calls[cid][1].append(delta)
            case ev.ToolCallEndEvent(tool_call_id=cid):
                self.out.stop_waiting()
                if cid in self._calls:
                    name, parts, sub = self._calls[cid]
                    self.out.line(f"{self._who(sub)}{self.out.mark('⚙', 'tool:')} {name} "
                                  f"{_clip(''.join(parts) or '{}', 300)}", "bold yellow")
            case ev.ToolCallResultEvent(tool_call_id=cid, content=content):
                self._settle()
                self._result(cid, content if isinstance(content, str) else parts_text(content))
            case ev.SubagentStartedEvent(subagent_run_id=sub, name=name):
                self._subagents[sub] = name
                self._settle()
                self.lines.event(event)
            case _:
                self._settle()
                self.lines.event(event)

    def close(self) -> None:
        """Finish what is open (a message the stream cut off stays as far as it came)."""
        self._settle()
        self.out.stop_waiting()
        self.out.end_line()

    # -- internals ------------------------------------------------------------------------------------

    def _who(self, subagent: str | None) -> str:
        return f"[{named(self._subagents.get(subagent, subagent))}] " if subagent else ""

    def _write_to(self, message_id: str, subagent: str | None, role: str | None) -> _Writer:
        if self._writer is not None and self._writer_id == message_id:
            return self._writer
        self._settle()
        if subagent:
            label = f"[{named(self._subagents.get(subagent, subagent))}]"
        else:
            label = "agent:" if role in (None, "assistant") else f"{role}:"
        self._writer = _MarkdownWriter(self.console, label, self._markdown_left) if self.console is not None \
            else _PlainWriter(self.out, label)
        self._writer_id = message_id
        return self._writer

    def _end_text(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
            self._writer_id = None

    def _settle(self) -> None:
        """Something else begins: the reasoning folds, the message being written ends its line."""
        if self._thinking is not None:
            self._thinking.fold()
            self._thinking = None
        self._end_text()
        self.out.stop_waiting()

    def _result(self, call_id: str, content: str) -> None:
        known = self._calls.get(call_id)
        name = known[0] if known is not None else named(tool_name(self.state, call_id))
        arrow = self.out.mark("↳", "->")
        rows = _object_rows(content)
        if rows is None:
            self.out.line(f"  {arrow} {name} returned {_clip(content, 300)}", "green")
            return
        title = f"  {arrow} {name} returned {len(rows)} row(s)"
        columns = list(dict.fromkeys(key for row in rows for key in row))
        shown_columns = columns[:TABLE_COLUMNS]
        hidden = len(columns) - len(shown_columns)
        if self.console is None:
            self.out.line(title + (f" ({hidden} more column(s) not shown)" if hidden else ""), "green")
            for row in rows[:TABLE_ROWS]:
                self.out.line("    " + ", ".join(f"{named(c, 60)}: {_cell(row.get(c))}"
                                                for c in shown_columns if c in row))
        else:
            self.out.line(title + (f" ({hidden} more column(s) not shown)" if hidden else ""), "green")
            table = Table(box=box.SIMPLE_HEAD)
            for column in shown_columns:
                table.add_column(safe_text(named(column, 60), "bold"))
            for row in rows[:TABLE_ROWS]:
                table.add_row(*(safe_text(_cell(row.get(c)) if c in row else "") for c in shown_columns))
            self.console.print(table)
        if len(rows) > TABLE_ROWS:
            self.out.line(f"    ... and {len(rows) - TABLE_ROWS} more row(s)", "dim")


class _Writer:
    """Where one text message goes as it streams."""

    def feed(self, delta: str) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class _PlainWriter(_Writer):
    """Plain output: the label, then the tokens as they come, as text."""

    def __init__(self, out: Output, label: str) -> None:
        self.out = out
        out.end_line()
        out.inline(label + " ", "bold cyan")

    def feed(self, delta: str) -> None:
        self.out.inline(delta)

    def close(self) -> None:
        self.out.end_line()


class _MarkdownWriter(_Writer):
    """A message rendered as Markdown while it streams.

    Blocks are cut at blank lines outside a fenced code block: a finished block is printed once and
    never drawn again; only the unfinished tail is redrawn in place (a transient ``Live``). The tail is
    kept as its lines and the pieces of its last line (never one string grown per token, which would
    copy it again for every word), each line is looked at once, and the redraw shows only the tail's
    last :data:`LIVE_CHARS` characters: a message that never leaves a block (one endless paragraph, a
    code fence left open) costs what it is long, not its square, and the whole of it is printed once
    when it ends.

    ``markdown_left`` (a three-item list, spent in place) is how many characters the Markdown may still
    draw, how many it may still write, escape sequences included, and how many the redrawn tail may still
    write (:data:`MARKDOWN_CHARS`, :data:`MARKDOWN_WRITTEN` and :data:`LIVE_WRITTEN` when not given): a
    finished block that does not fit is printed as plain text, and so is the redrawn tail once either of
    the first two is spent. Once the third is spent the tail is no longer redrawn: what came of it is
    written as plain text, and the rest of the message as it comes (a stream of tokens, as the plain
    chat writes it).

    The tail is drawn again only when it changed, and no more often than its drawing's cost allows
    (:class:`_Redrawn`; ``clock`` and ``work`` are its clocks, given by the tests).
    """

    def __init__(self, console: SafeConsole, label: str, markdown_left: list[int] | None = None, *,
                 clock: Callable[[], float] = time.monotonic, work: Callable[[], float] = time.thread_time) -> None:
        self.console = console
        self.label = label
        self._clock, self._work = clock, work
        self._markdown_left = markdown_left if markdown_left is not None else [MARKDOWN_CHARS, MARKDOWN_WRITTEN,
                                                                               LIVE_WRITTEN]
        self._labelled = False
        self._lines: list[str] = []  # the tail's complete lines, each with its line end
        self._partial: list[str] = []  # the pieces of its last line, whose end has not come
        self._text = False  # whether the tail holds anything but white space
        self._fence: str | None = None  # (the fence marker of the code block the tail is in)
        self._head = ""  # (that code block's opening line, or the head and delimiter rows of a table the tail is)
        self._live: Live | None = None
        self._redrawn: _Redrawn | None = None
        self._ledger = _Ledger(console, self._markdown_left)
        # (the plain stream the message goes on as once the redrawn tail has written LIVE_WRITTEN)
        self._plain: RichOutput | None = None

    def feed(self, delta: str) -> None:
        if self._plain is None and self._markdown_left[2] <= 0:
            self._go_plain()  # (the redrawn tail has written what it may: see LIVE_WRITTEN)
        if self._plain is not None:
            self._plain.inline(delta)
            return
        *ended, rest = delta.split("\n")
        if ended:
            ended[0] = "".join((*self._partial, ended[0]))
            self._partial = []
            for line in ended:
                self._lines.append(line + "\n")
                self._text = self._text or bool(line.strip())
                if len(self._lines) == 2 and self._fence is None and _is_table_head(*self._lines):
                    self._head = "".join(self._lines)
                if self._ends_block(line):
                    block = "".join(self._lines)
                    self._lines, self._head = [], ""
                    self._stop_live()
                    if self._text:
                        self._print(block)
                    self._text = False
        if rest:
            self._partial.append(rest)
            self._text = self._text or bool(rest.strip())
        if self._redrawn is not None:
            self._redrawn.changed = True
        if self._live is None and self._text:
            self._label()
            # The tail is parsed when the screen is refreshed (12 times a second at most, and less when
            # its drawing costs more: see _Redrawn), not per token: a long paragraph would otherwise be
            # parsed again for every word.
            redrawn = self._redrawn = _Redrawn(lambda: self._rendered(self._shown()), self._ledger,
                                               clock=self._clock, work=self._work)
            with held_signals():  # (a display cut while it starts or stops stays half-drawn: see cli.stopping)
                self._live = _TailLive(redrawn.drawn_again, console=self.console, auto_refresh=True,
                                       refresh_per_second=12, transient=True, vertical_overflow="ellipsis",
                                       get_renderable=lambda: _live_width(self.console, redrawn))
                self._live.start()

    def close(self) -> None:
        if self._plain is not None:
            self._plain.end_line()
            return
        self._stop_live()
        tail = "".join((*self._lines, *self._partial))
        if tail.strip():
            self._print(tail)
        elif not self._labelled:
            self._label()
        self._lines, self._partial, self._text, self._head = [], [], False, ""

    def _ends_block(self, written: str) -> bool:
        """Whether ``written`` (a line just completed) is a blank line outside a code block, following the
        fences."""
        line = written.strip()
        if self._fence is not None:
            if line.startswith(self._fence) and not line.strip(self._fence[0]):
                self._fence, self._head = None, ""  # (a closing fence: as long as the opening one or longer, alone)
        elif line.startswith(("```", "~~~")):
            self._fence, self._head = line[: len(line) - len(line.lstrip(line[0]))], written + "\n"
        elif not line:
            return True
        return False

    def _shown(self) -> str:
        """The tail's last lines, as many as the terminal is high, in at most :data:`LIVE_CHARS` characters,
        joined from the pieces that hold them (only the end of a line longer than that).

        Cut, the tail starts at a line's start, after the code block's opening line or the table's head
        when it is in one (up to half of :data:`LIVE_CHARS`): its last lines are drawn as the code or
        the rows they are, not as a paragraph of their words.
        """
        head = self._head if len(self._head) <= LIVE_CHARS // 2 else ""
        ending: list[str] = []  # (the last line's pieces, newest first)
        size = 0
        for piece in reversed(self._partial):
            ending.append(piece)
            size += len(piece)
            if size >= LIVE_CHARS:  # (one endless line: its end)
                return head + "".join(reversed(ending))[-LIVE_CHARS:]
        lines, rows = self._lines, max(self.console.height, 1)
        first = len(lines)
        while first > 0 and len(lines) - first < rows and size + len(lines[first - 1]) <= LIVE_CHARS:
            first -= 1
            size += len(lines[first])
        partial = "".join(reversed(ending))
        if first <= head.count("\n"):  # (all of it, or all but lines of the head, which comes whole)
            return "".join(lines) + partial
        if first == len(lines):  # (the line before is longer than what is left: its end)
            last = lines[-1]
            return head + last[len(last) - (LIVE_CHARS - size):] + partial
        return head + "".join(lines[first:]) + partial

    def _go_plain(self) -> None:
        """The redrawn tail has written what :data:`LIVE_WRITTEN` allows: take it down, write what came of it
        as plain text, and go on with the rest of the message as it comes."""
        self._stop_live()
        self._label()
        self._plain = RichOutput(self.console)
        self._plain.inline("".join((*self._lines, *self._partial)))
        self._lines, self._partial, self._text, self._head, self._fence = [], [], False, "", None

    def _label(self) -> None:
        if not self._labelled:
            self._labelled = True
            self.console.print(safe_text(self.label, "bold cyan"))

    def _print(self, block: str) -> None:
        """Print a finished block: as Markdown while what the run's Markdown wrote stays within its budget,
        else as plain text.

        Two budgets are charged, both by what the drawing writes rather than the block's length. The
        characters drawn (:data:`MARKDOWN_CHARS`, the drawing's time), as what costs time: each piece's
        characters but the blanks that pad its line to the terminal's width (one for a piece of blanks alone),
        a tower of combining marks as the escapes it is shown by (six characters for each), and
        :data:`BLOCK_CHARS` for the block itself, so 64 KiB of one-letter headings draw in some 0.2 s at
        any width (measured in CPU time: a 30-line block of code takes 7.5 ms at 80 columns and at 200,
        and counted its padding was charged 2,592 characters at 80 columns and 6,432 at 200, against 617
        at either now). And what is written, escape
        sequences included (:data:`MARKDOWN_WRITTEN`, the terminal's bytes): each styled piece is written
        between its style's escape sequences, and highlighted code writes 15 to 30 times its text in
        colour codes (8 KiB of it, 239 KB). The drawing is read a segment at a time and given up once it
        has spent what is left of either, the block then printed as text: a block costs at most the
        budgets to draw, and writes at most that, whatever it becomes.
        """
        self._label()
        left = self._markdown_left
        if len(block) <= left[0]:
            drawn: list[Segment] = []
            chars, written = BLOCK_CHARS, 0
            for segment in self.console.render(_markdown(block)):
                text = segment.text
                # (the blanks that fill a line out to the terminal's width cost no drawing time: a block of
                # code took as long at 200 columns as at 80, and charged for them only ten 30-line blocks
                # a run were highlighted at 200 columns, 25 at 80)
                if text:
                    chars += len(_PADDING.sub("", text)) or 1
                written += self._ledger.written(segment)
                if chars > left[0] or written > left[1]:
                    left[0] = left[1] = 0
                    break
                drawn.append(segment)
            else:
                left[0] -= chars
                left[1] -= written
                self.console.print(Segments(drawn))
                return
        # Left for the terminal to wrap: rich's wrapping of one Text grows faster than the text (1 MB took
        # half a second, 10 MB half a minute, with or without spaces), and a block past the Markdown
        # budget may be as long as the agent likes.
        self.console.print(safe_text(block.rstrip("\n")), soft_wrap=True)

    def _rendered(self, tail: str) -> RenderableType:
        """The redrawn tail: Markdown while the run may still render some, else plain text."""
        return _markdown(tail) if self._markdown_left[0] > 0 and self._markdown_left[1] > 0 else safe_text(tail)

    def _stop_live(self) -> None:
        if self._live is None:
            return
        if self._redrawn is not None:
            # (the display's last refresh, as it stops, is erased at once: it need not draw the tail again)
            self._redrawn.changed = False
            self._redrawn = None
        with held_signals():
            live, self._live = self._live, None
            live.stop()


class _Ledger:
    """What a run's drawings write to ``console``, charged to ``left`` (the run's budgets: see
    :class:`_MarkdownWriter`), the characters of escape sequences around each style met measured once."""

    def __init__(self, console: Console, left: list[int]) -> None:
        self.console, self.left = console, left
        self._styled: dict[Style, int] = {}

    def written(self, segment: Segment) -> int:
        """The characters the console writes for ``segment``: its text, and its style's escape sequences
        around it."""
        text, style, control = segment
        if control is not None or not (style and text):
            return len(text)
        around = self._styled.get(style)
        if around is None:
            around = self._styled[style] = _escapes_around(self.console, style)
        return len(text) + around

    @property
    def spent(self) -> bool:
        """Whether the redraws have written what :data:`LIVE_WRITTEN` allows."""
        return self.left[2] <= 0

    def redraw(self, lines: Sequence[Sequence[Segment]]) -> bool:
        """Charge a redraw of ``lines`` to :data:`LIVE_WRITTEN`'s budget: what it writes, escape sequences
        included, and the cursor's moves back over each line to draw the next over it. Whether it may be
        written (nothing is, after the one that spends it)."""
        if self.spent:
            return False
        self.left[2] -= sum(self.written(segment) for line in lines for segment in line) + len(lines) * _LINE_MOVES
        return True


def _escapes_around(console: Console, style: Style) -> int:
    """The characters ``console`` writes around a piece of text drawn in ``style``: its escape sequences
    (colours, attributes; none on a console without colour), measured by having a console of its colour
    system write one character in it, so the count is rich's own, whatever the colour system. (Another
    console: one that shows a live display would hand the piece to the display, which is being drawn.)"""
    scratch = SafeConsole(file=io.StringIO(), force_terminal=True, color_system=console.color_system,
                          legacy_windows=console.legacy_windows, width=80)
    with scratch.capture() as captured:
        scratch.print(Segments([Segment("x", style)]), end="")
    return len(captured.get()) - 1


#: The most of an unfinished block the live view redraws (a terminal shows less).
LIVE_CHARS = 8192
#: The blanks that pad a line of a drawing out to the terminal's width (at the end of a piece, or before a
#: line end in it).
_PADDING = re.compile(r" +(?=\n|\Z)")
#: What the live display writes for each line of a redraw besides the line: its line end, and the
#: cursor's move back up over it (erasing it) before the next redraw.
_LINE_MOVES = 1 + len(Control((ControlType.CURSOR_UP, 1), (ControlType.ERASE_IN_LINE, 2)).segment.text)
#: A table's delimiter row (``|---|:--:|``), which with the row above it opens a table.
_DELIMITER_ROW = re.compile(r"\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?")


def _is_table_head(first: str, second: str) -> bool:
    """Whether two lines (each with its line end) open a Markdown table."""
    return "|" in first and "|" in second and _DELIMITER_ROW.fullmatch(second.strip()) is not None


#: The most of one core the redrawn tail may take: after a drawing that took ``t`` seconds of work, the
#: next waits ``t * (1 / REDRAW_SHARE - 1)`` seconds. An 8 KiB tail of a table takes a quarter of a second
#: to draw, of highlighted code a sixth: at 12 frames a second, one streaming for minutes kept a core
#: busy drawing it all that time, slowing the reading of the stream it drew.
REDRAW_SHARE = 0.25


class _Redrawn:
    """The live tail as last drawn, drawn again only when it changed (``changed``) and its last drawing's
    work has been paid back (:data:`REDRAW_SHARE`), or when the width it is drawn at changed. Taller than
    the terminal, its last lines are shown, under a line ``...``.

    ``draw`` makes the renderable; ``ledger`` is charged the lines each time they are written, and once
    what redraws may write is spent the tail is not drawn again (none given: nothing is charged);
    ``clock`` (wall time) and ``work`` (the drawing thread's processor time) are the clocks.
    """

    def __init__(self, draw: Callable[[], RenderableType], ledger: _Ledger | None = None, *,
                 clock: Callable[[], float] = time.monotonic, work: Callable[[], float] = time.thread_time) -> None:
        self.changed = True
        self._draw, self._ledger, self._clock, self._work = draw, ledger, clock, work
        self._lines: list[list[Segment]] = []
        self._width = -1
        self._due = 0.0

    def drawn_again(self, width: int) -> bool:
        """Whether drawn at ``width`` columns the tail would be drawn anew, not shown as last drawn."""
        spent = self._ledger is not None and self._ledger.spent
        return not spent and (width != self._width or (self.changed and self._clock() >= self._due))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if self.drawn_again(options.max_width):
            self.changed = False  # (before the drawing: a change made while it draws is drawn next time)
            started = self._work()
            lines = console.render_lines(self._draw(), options)
            # Its last lines, the newest text: the live display would show the first ones and "..."
            height = options.size.height
            self._lines = lines if len(lines) <= height else [[Segment("...", Style(dim=True))],
                                                              *lines[len(lines) - height + 1:]]
            cost = self._work() - started
            self._due = self._clock() + cost * (1 / REDRAW_SHARE - 1)
            self._width = options.max_width
        if self._ledger is not None and not self._ledger.redraw(self._lines):
            return  # (spent while the display drew: not reached while it refreshes only when drawn_again)
        for index, line in enumerate(self._lines):
            if index:
                yield Segment.line()
            yield from line


class _Thinking:
    """Reasoning shown dimmed while it streams (its last lines, redrawn), folded to one line after."""

    def __init__(self, out: Output, console: SafeConsole | None, left: list[int] | None = None) -> None:
        self.out = out
        self.console = console
        # (its redraws are charged as the Markdown tail's, to the run's LIVE_WRITTEN)
        self._ledger = _Ledger(console, left if left is not None else [0, 0, LIVE_WRITTEN]) \
            if console is not None else None
        self.started = time.monotonic()
        self.finished: float | None = None
        self._text: list[str] = []
        self._size = 0
        self._live: Live | None = None
        self._changed = True  # (text came since the display last drew it)
        if console is None:
            out.end_line()
            out.inline("thinking: ", "dim italic")

    def feed(self, delta: str) -> None:
        if self.console is None:
            self.out.inline(delta, "dim italic")
            return
        self._text.append(delta)
        self._size += len(delta)
        if self._size > 4096:  # (only the last lines are shown: keep what they need)
            joined = "".join(self._text)[-2048:]
            self._text, self._size = [joined], len(joined)
        self._changed = True
        if self._live is None:
            self.out.end_line()
            self.out.stop_waiting()
            with held_signals():  # (as for the Markdown tail)
                # (a refresh with nothing new is skipped, as the Markdown tail's: see _TailLive)
                self._live = _TailLive(self._stale, console=self.console, auto_refresh=True, refresh_per_second=12,
                                       transient=True, vertical_overflow="crop",
                                       get_renderable=lambda: _live_width(self.console, self._charged()))
                self._live.start()

    def _stale(self, columns: int) -> bool:
        return self._changed and self._ledger is not None and not self._ledger.spent

    def _charged(self) -> RenderableType:
        assert self._ledger is not None  # (a display is shown only on a console)
        return _Charged(self._shown(), self._ledger.redraw)

    def _shown(self) -> Text:
        # (what the display draws: the mark is taken down as the text is read, so text that comes while
        # it draws is drawn next time)
        self._changed = False
        lines = "".join(self._text).splitlines()[-THINKING_LINES:]
        return safe_text("thinking: " + "\n".join(lines), "dim italic")

    def ended(self) -> None:
        if self.finished is None:
            self.finished = time.monotonic()

    def fold(self) -> None:
        seconds = (self.finished if self.finished is not None else time.monotonic()) - self.started
        if self._live is not None:
            with held_signals():
                live, self._live = self._live, None
                live.stop()
        self.out.end_line()
        # (rounded, a quick thought read "thought for 0 s")
        said = "less than a second" if seconds < 0.5 else f"{seconds:.0f} s"
        self.out.line(f"thought for {said}", "dim italic")


class _Charged:
    """``renderable`` drawn where ``charge`` allows its lines to be written (see :meth:`_Ledger.redraw`):
    nothing once what the redraws may write is spent."""

    def __init__(self, renderable: RenderableType,
                 charge: Callable[[Sequence[Sequence[Segment]]], bool]) -> None:
        self.renderable, self.charge = renderable, charge

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        # (unpadded and cropped as the display draws them: padded, each line of the reasoning was written
        # out to the terminal's width)
        lines = console.render_lines(self.renderable, options, pad=False)[:options.size.height]
        if not self.charge(lines):
            return
        for index, line in enumerate(lines):
            if index:
                yield Segment.line()
            yield from line


#: Columns a redrawn tail leaves free at its right: the terminal echoes Ctrl-C there as ``^C``.
LIVE_MARGIN = 2


class _TailLive(Live):
    """rich's ``Live`` for a tail redrawn while it streams (a :class:`_Redrawn` Markdown tail, the reasoning
    shown): a refresh that would show the tail as it was last drawn is skipped. The display refreshes 12
    times a second while a message streams, and each refresh wrote the whole tail to the terminal again
    (its lines, the cursor moved back over them), some 2 ms of work when nothing had changed, as while the
    agent thinks between two words. ``stale(columns)``: whether the tail is to be drawn again at a width
    of ``columns`` (asked only while the terminal's width is as at the last refresh)."""

    def __init__(self, stale: Callable[[int], bool], **options: Any) -> None:
        super().__init__(**options)
        self._stale = stale
        self._shown_at: int | None = None  # (the terminal's width at the last refresh)

    def refresh(self) -> None:
        """Draw the tail again, unless it and the terminal's width are as at the last refresh."""
        width = self.console.width
        if width == self._shown_at and not self._stale(_live_columns(width)):
            return
        self._shown_at = width
        super().refresh()


def _live_columns(width: int) -> int:
    """The columns the live tail is drawn in, on a terminal ``width`` columns wide."""
    return min(width, max(10, width - LIVE_MARGIN))


def _live_width(console: SafeConsole | None, renderable: RenderableType) -> RenderableType:
    """``renderable`` drawn :data:`LIVE_MARGIN` columns narrower than the terminal.

    A live display leaves the cursor at the end of its last line, which Markdown pads to the full
    width; the ``^C`` the terminal echoes there would wrap to a new line the display does not know
    of, and its next redraw (or its erasing) would start one line too low, leaving a copy of the tail.
    """
    width = console.width if console is not None else 80
    return Constrain(renderable, width=_live_columns(width))


#: The deepest nesting of blocks (quotes, lists and their items) rendered as Markdown. markdown-it
#: stops reading a block once it is 20 levels deep (its ``maxNesting``) and what it has not read is
#: never shown: ten nested lists (two levels each) or twenty nested quotes made the text in them
#: vanish. Text nested this deep is shown as the plain text it is.
MARKDOWN_MAX_LEVEL = 16


@functools.cache
def _markdown_parser() -> MarkdownIt:
    """rich's Markdown parser (CommonMark with tables and strikethrough), reading no HTML, that keeps the
    backslashes of a link's target."""
    from markdown_it import MarkdownIt

    class _ShownTargets(MarkdownIt):
        def normalizeLink(self, url: str) -> str:  # noqa: N802 - markdown-it's name
            # The text is made visible before it is parsed, so a bidi control in a link's target is the
            # escape ``\u202e`` by then; markdown-it percent-encodes a target's backslash, and rich shows
            # the target as the parser left it: ``%5Cu202e``, the one place the chat showed a bidi control
            # otherwise than as its escape. Each part between backslashes is normalized as markdown-it
            # does (its host made ASCII: a look-alike host name shows as punycode), the backslashes kept.
            return "\\".join(super(_ShownTargets, self).normalizeLink(part) for part in url.split("\\"))

    return _ShownTargets("commonmark", {"html": False}).enable("strikethrough").enable("table")


def _markdown(text: str) -> RenderableType:
    # (imported here: markdown-it and pygments would add their import time to every agui command)
    from .mdview import AnswerMarkdown, show_titles

    # Made visible before parsing, so a control character is shown, not measured or obeyed; links
    # are shown with their address instead of as terminal hyperlinks.
    shown = visible(text)
    rendered = AnswerMarkdown("", hyperlinks=False)
    # rich's own parser reads HTML and rich draws none of it: a block of HTML (``<div>…</div>``, a
    # comment) vanished from the screen though the thread holds it, so an agent could say to the
    # record what the person never sees. Read with HTML off, it is text, shown as written.
    found: dict[str, Any] = {}
    rendered.markup, rendered.parsed = shown, _markdown_parser().parse(shown, found)
    # (the tokens rich parsed: no second parse to judge them) A link reference's definition (``[r]:
    # https://… "title"``) leaves no token, so rich showed nothing of it, target and title alike: a block
    # that holds one is shown as the text it is, as one nested too deep for the parser.
    if found.get("references") or any(token.level >= MARKDOWN_MAX_LEVEL for token in rendered.parsed):
        return safe_text(text)
    show_titles(rendered.parsed)
    return rendered


def _object_rows(content: str) -> list[dict[str, Any]] | None:
    """``content`` as a JSON array of objects, else ``None``."""
    stripped = content.strip()
    if not stripped.startswith("[") or len(stripped) > TABLE_MAX_CHARS:
        return None
    try:
        value = json.loads(stripped)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, list) or not value or not all(isinstance(row, dict) for row in value):
        return None
    return value


def _cell(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return _clip(text, 60)


def _clip(text: str, limit: int) -> str:
    text = text.replace("\r\n", "\n").replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def parts_text(content: Sequence[Any]) -> str:
    """Content parts as one line of text: each part's text, a ``<type>`` placeholder for the others."""
    return " ".join(getattr(part, "text", f"<{getattr(part, 'TYPE', 'part')}>") for part in content)


def tool_name(state: ThreadState | None, call_id: str) -> str:
    """The name of the tool ``call_id`` called, as the thread holds it, else the id itself."""
    call = state.tool_call(call_id) if state is not None else None
    return call.function.name if call is not None else call_id

