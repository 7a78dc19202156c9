"""What ``agui chat`` may spend drawing a run's Markdown, on a real pseudo-terminal.

The tail redrawn while a block streams is charged to a budget of its own (``LIVE_WRITTEN``): a stream that
trickles a token at a time had the terminal receive a screen of the tail at each redraw, without end. The
characters drawn (``MARKDOWN_CHARS``) are counted as what costs drawing time, not the blanks that pad a
line to the terminal's width: at 200 columns only a handful of code blocks a run kept their colours.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import pexpect
import pytest
from clikit import on_terminal, screen_text
from test_attack_render import CHAT, _one_turn
from test_chat import _say, _text

from agui_client.cli import chatview
from agui_client.cli.render import RichOutput
from agui_client.cli.terminal import SafeConsole
from agui_client.testing import Finish, Gate, ScriptedAgent, Start, Wait
from agui_client.types import (
    ReasoningMessageContentEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
)

#: Lines of code the hostile stream sends, one at a time, each once the last was shown.
TRICKLED = 16
#: The terminal it is shown on (lines, columns): a wide one, so that each redraw writes much (its lines are
#: padded to the width) and few redraws spend LIVE_WRITTEN; few lines, as highlighting them is what costs.
LARGE = (40, 20_000)
#: The most one redraw of the tail writes: the terminal's lines, each its width and the colour codes and
#: cursor moves around it (some 350 characters for these lines of code).
REDRAW = LARGE[0] * (LARGE[1] + 512)


#: The code the stream opens with: a screen of it, so that each redraw is a screen tall from the first.
_SCREEN = "".join(f"y{n:04d} = 0\n" for n in range(LARGE[0]))


def _name(n: int) -> str:
    return f"z{n:04d}q"


def _line(n: int) -> str:
    return f"{_name(n)} = 1\n"


def test_a_stream_trickled_a_line_at_a_time_writes_at_most_the_redraw_budget(served: Callable[[Any], Any]) -> None:
    # Each line is sent once the terminal has shown the one before: the tail (an open code block, a screen
    # tall) is redrawn for each, some 800 KB on a terminal of 40 lines by 20,000 columns (at 200 columns by
    # 60 lines, a redraw of such a tail writes some 28 KB, 12 times a second, for as long as the stream
    # trickles). Before the redraws were charged, 16 lines had it receive 11.8 MB, 8.7 MB now: the redraws
    # stop at LIVE_WRITTEN and the rest comes as text.
    gates = [Gate() for _ in range(TRICKLED)]
    events: list[Any] = [Start(), TextMessageStartEvent(message_id="m1"),
                         TextMessageContentEvent(message_id="m1", delta="```python\n" + _SCREEN + _line(0))]
    for n in range(1, TRICKLED):
        events += [Wait(gates[n]), TextMessageContentEvent(message_id="m1", delta=_line(n))]
    events += [TextMessageContentEvent(message_id="m1", delta="```\n"), TextMessageEndEvent(message_id="m1"),
               Finish()]
    endpoint = served(ScriptedAgent([events]))
    try:
        with on_terminal([*CHAT, endpoint.url], LARGE) as (child, screen):
            child.maxread = 1 << 20  # (read megabytes in large pieces: pexpect searches what it holds at each)
            _say(child, "hi")
            for n in range(1, TRICKLED):
                child.expect_exact(_name(n - 1))
                gates[n].open()
            child.expect_exact(_name(TRICKLED - 1))
            _say(child, "/quit")
            child.expect(pexpect.EOF)
    finally:
        for gate in gates:
            gate.open()
    raw, shown = screen.getvalue(), _text(screen)

    assert child.exitstatus == 0 and all(_line(n).strip() in shown for n in range(TRICKLED))
    # (the redraws, a redraw past what was left, the code written as text, the chat's own lines)
    bound = chatview.LIVE_WRITTEN + REDRAW + len(_SCREEN) + TRICKLED * len(_line(0)) + 4096
    assert len(raw) - raw.count("\r") <= bound
    # The tail was redrawn as colour-highlighted code before the budget was spent; the lines after it came
    # as text, and nothing was redrawn after them (no line erased to draw it again). (The next to last line
    # is looked at: the last is followed by the message's end at once, and the tail then is printed whole
    # whether the redraws were charged or not.)
    assert "\x1b[38;5;" in raw[:raw.index(_name(1))]
    late = raw.index(_name(TRICKLED - 2))
    assert raw.startswith(_line(TRICKLED - 2).replace("\n", "\r\n"), late) and "\x1b[2K" not in raw[late:]
    assert len(raw) > chatview.LIVE_WRITTEN  # (the redraws did spend it)


def test_ordinary_code_at_200_columns_keeps_its_colours(served: Callable[[Any], Any]) -> None:
    # Charged the blanks that pad each line to the terminal's width, a 30-line block of code cost 6,400 of
    # the 64 KiB drawn at 200 columns: the eleventh and later were shown as text. Drawing them takes as long
    # at 200 columns as at 80, so they are charged what they draw, and a run of twenty keeps its colours.
    blocks = ["```python\n" + f"def f{n}(x):\n    return x + 1  # c\n" * 15 + "```\n\n" for n in range(20)]
    events = [Start(), TextMessageStartEvent(message_id="m1"),
              *(TextMessageContentEvent(message_id="m1", delta=block) for block in blocks),
              TextMessageEndEvent(message_id="m1"), Finish()]
    status, raw, shown = _one_turn(served(ScriptedAgent([events])).url)

    assert status == 0 and all(f"def f{n}(x):" in shown for n in range(20))
    assert "```python" not in shown  # (every block drawn as code, its fences not shown)
    assert "\x1b[38;5;" in raw[raw.rindex("f19"):]


def test_a_code_block_is_charged_the_same_drawing_at_80_and_200_columns() -> None:
    # (the blanks that pad its lines to the width cost no drawing time: 7.5 ms of CPU at either width)
    block = "```python\n" + "def f(x):\n    return x + 1  # c\n" * 15 + "```\n\n"
    charged = []
    for width in (80, 200):
        console = SafeConsole(file=io.StringIO(), width=width, height=25, force_terminal=True, color_system="256")
        writer = chatview._MarkdownWriter(console, "agent:")
        writer.feed(block)
        charged.append(chatview.MARKDOWN_CHARS - writer._markdown_left[0])
        writer.close()

    assert charged[0] == charged[1] < 30 * 80 and "```" not in console.file.getvalue()


def _clocked_writer(width: int, height: int, *, redraws: int
                    ) -> tuple[io.StringIO, chatview._MarkdownWriter, list[float], list[int]]:
    """A Markdown writer on a terminal of ``width`` x ``height`` writing into the returned sink, its clock
    the returned one-item list (moved by the test), ``redraws`` characters left of LIVE_WRITTEN."""
    sink = io.StringIO()
    console = SafeConsole(file=sink, width=width, height=height, force_terminal=True, color_system="256")
    now = [0.0]
    left = [chatview.MARKDOWN_CHARS, chatview.MARKDOWN_WRITTEN, redraws]
    writer = chatview._MarkdownWriter(console, "agent:", left, clock=lambda: now[0], work=lambda: 0.0)
    return sink, writer, now, left


def test_a_redraw_is_charged_at_least_what_it_writes() -> None:
    # (what the live display writes for each redraw: the lines, their colour codes, the cursor's moves)
    sink, writer, now, left = _clocked_writer(200, 40, redraws=10_000_000)
    writer.feed("```python\n" + _line(0))
    before, charged = len(sink.getvalue()), left[2]
    for n in range(1, 40):
        writer.feed(_line(n))
        now[0] += 10.0
        assert writer._live is not None
        writer._live.refresh()
    written, charged = len(sink.getvalue()) - before, charged - left[2]
    writer.close()

    assert written > 100_000  # (40 redraws, up to a screen each)
    assert written <= charged <= written * 1.01


def test_once_the_redraw_budget_is_spent_the_message_goes_on_as_text() -> None:
    sink, writer, now, left = _clocked_writer(80, 25, redraws=1)
    writer.feed("```python\nx = 1\n")
    assert writer._live is not None
    writer._live.refresh()  # (the redraw that spends what was left)
    drawn = len(sink.getvalue())
    now[0] += 10.0
    assert writer._redrawn is not None
    writer._redrawn.changed = True  # (as a token would mark it: a redraw would show it)
    writer._live.refresh()
    after = len(sink.getvalue())
    writer.feed("y = 2\n```\n\nz **3**")
    writer.close()
    shown = sink.getvalue()

    assert left[2] < 0 and writer._live is None
    assert after == drawn  # (nothing drawn by the second refresh)
    # (the message as text, from where the tail began)
    assert shown[drawn:].endswith("```python\nx = 1\ny = 2\n```\n\nz **3**\n")


def test_reasoning_redrawn_while_it_streams_is_charged_to_the_same_budget() -> None:
    # (the reasoning shown dimmed while it streams is redrawn as the Markdown tail is: its redraws are
    # charged to the run's LIVE_WRITTEN, and once it is spent it is no longer redrawn)
    from agui_client.cli.render import PlainOutput

    sink = io.StringIO()
    console = SafeConsole(file=sink, width=80, height=25, force_terminal=True, color_system="256")
    left = [chatview.MARKDOWN_CHARS, chatview.MARKDOWN_WRITTEN, 1_000]
    thinking = chatview._Thinking(PlainOutput(io.StringIO()), console, left)
    live = thinking._live
    written = []
    for n in range(20):
        thinking.feed(f"step {n} of the plan\n")
        live = thinking._live
        assert live is not None
        live.refresh()
        written.append(len(sink.getvalue()))
    thinking.fold()

    assert left[2] < 0  # (spent by the redraws, the one that spent it written)
    assert written[0] > 0 and written[-1] == written[-2] < 1_000 + 25 * 90  # (nothing drawn after it)
    assert "step 19" not in sink.getvalue()


def test_a_runs_reasoning_and_its_answer_redraw_on_one_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    # (the view hands the reasoning the run's LIVE_WRITTEN: an answer after reasoning whose redraws spent it
    # is written as text as it comes, its tail never redrawn)
    monkeypatch.setattr(chatview, "LIVE_WRITTEN", 1_000)
    sink = io.StringIO()
    view = chatview.ChatView(RichOutput(SafeConsole(file=sink, width=80, height=25, force_terminal=True,
                                                    color_system="256")))
    for n in range(20):
        view.event(ReasoningMessageContentEvent(message_id="r", delta=f"step {n} of the plan\n"))
        assert view._thinking is not None and view._thinking._live is not None
        view._thinking._live.refresh()
    view.event(TextMessageStartEvent(message_id="m1"))
    view.event(TextMessageContentEvent(message_id="m1", delta="```python\nx = 1\n"))
    shown = screen_text(sink.getvalue())  # (before the message ends: as it came)
    view.close()

    assert "step 0 of the plan" in shown and "step 19" not in shown
    assert "```python\nx = 1" in shown


def test_reasoning_redrawn_writes_its_lines_unpadded() -> None:
    # (charging the reasoning's redraws must not change what they write: the display draws its lines as
    # long as they are, where lines padded out to the terminal's width made each redraw of four short
    # lines write 864 characters at 200 columns instead of 106)
    from agui_client.cli.render import PlainOutput

    sink = io.StringIO()
    console = SafeConsole(file=sink, width=200, height=25, force_terminal=True, color_system="256")
    thinking = chatview._Thinking(PlainOutput(io.StringIO()), console)
    for n in range(4):
        thinking.feed(f"step {n}\n")
    live = thinking._live
    assert live is not None
    before = len(sink.getvalue())
    live.refresh()
    redraw = sink.getvalue()[before:]
    thinking.fold()

    assert "step 3" in redraw and "      " not in redraw
    assert len(redraw) < 4 * 40
