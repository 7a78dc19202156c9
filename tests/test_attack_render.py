"""Attacks on what the chat renders: rich markup and Markdown in the agent's answer.

The CLI's console reads no markup (tests/test_cli_terminal.py shows ``[bold red]`` and ``[link=…]``
literally in every field); these are the Markdown attacks, run through a pseudo-terminal against a
ScriptedAgent, asserting on the bytes the terminal receives.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from typing import Any

import pexpect
import pytest
from clikit import on_terminal
from test_chat import _say, _text, _writer

from agui_client.testing import Finish, ScriptedAgent, Start, text_message
from agui_client.types import TextMessageContentEvent, TextMessageEndEvent, TextMessageStartEvent
from agui_client.types.run import Interrupt, RunFinishedInterruptOutcome

#: ``agui chat`` on a pseudo-terminal (clikit's :func:`on_terminal` closes it as the block ends).
CHAT = ["-m", "agui_client.cli", "chat"]

#: Markdown an agent may answer with: links whose text is not their target, a title, reference links
#: (defined in their block, and in another), an image, HTML a terminal cannot draw, and markup with a
#: closing tag that closes nothing (rich raises MarkupError on it).
ANSWER = (
    "[https://trusted.example](https://evil.example/a \"the title\") and [click here](https://evil.example/c)\n\n"
    "[r]: https://evil.example/ref \"Approved by your bank\"\n"
    "[approve][r] and [later][s]\n\n"
    "[s]: https://evil.example/s\n\n"
    "<div>the hidden words</div>\n\n"
    "<!-- a hidden comment -->\n\n"
    "inline <b>bold</b> [/] [link=file:///etc/passwd]click[/link] [@click=app.quit] :warning: \\[x] [nosuchstyle]y\n\n"
    "![alt](https://evil.example/img.png \"an image's title\")\n"
)


def _one_turn(url: str) -> tuple[int | None, str, str]:
    """``agui chat URL`` on a pseudo-terminal, one turn ("hi") and ``/quit``: its exit status, what the
    terminal received, and that as the text shown (``_text``)."""
    with on_terminal([*CHAT, url]) as (child, screen):
        _say(child, "hi")
        _say(child, "/quit")
        child.expect(pexpect.EOF)
    return child.exitstatus, screen.getvalue(), _text(screen)


def test_markdown_links_show_their_targets_and_html_is_shown_as_written(served: Callable[[Any], Any]) -> None:
    endpoint = served(ScriptedAgent([[Start(), *text_message("m1", ANSWER), Finish()]]))
    status, raw, shown = _one_turn(endpoint.url)

    assert status == 0 and "Traceback" not in shown
    assert "\x1b]8;" not in raw  # no terminal hyperlink at all
    # the target beside the text, and the title
    assert 'https://trusted.example (https://evil.example/a "the title")' in shown
    assert "click here (https://evil.example/c)" in shown
    # A definition (its target and title) was shown nowhere: a block holding one is shown as written.
    # One in another block is not followed: a block printed is never drawn again, so one defined after
    # its use (where writers put them) could not be, and shown as written, either order reads.
    assert '[r]: https://evil.example/ref "Approved by your bank"\n[approve][r] and [later][s]' in shown
    assert "[s]: https://evil.example/s" in shown
    # HTML is text: rich draws no HTML, and it used to vanish from the screen
    assert "<div>the hidden words</div>" in shown and "<!-- a hidden comment -->" in shown
    assert "inline <b>bold</b>" in shown
    assert "[/] [link=file:///etc/passwd]click[/link] [@click=app.quit] :warning: [x] [nosuchstyle]y" in shown
    assert "alt \"an image's title\"" in shown and "img.png" not in shown  # (an image: its alt text, no link)


def test_an_html_block_streamed_a_character_at_a_time_is_shown_once_and_whole() -> None:
    writer, sink = _writer()
    text = "<details><summary>ok</summary>\nrm -rf ~\n</details>\n\nafter <span>x</span>"
    for char in text:
        writer.feed(char)
    writer.close()
    shown = sink.getvalue()

    assert shown.count("rm -rf ~") == 1 and "<details><summary>ok</summary>" in shown
    assert "after <span>x</span>" in shown


def test_rich_markup_in_every_block_kind_is_shown_as_written() -> None:
    # Headings, quotes, list items, table cells and code: markup in any of them is text.
    from agui_client.cli.chatview import _markdown
    from agui_client.cli.terminal import SafeConsole

    sink = io.StringIO()
    console = SafeConsole(file=sink, width=200, force_terminal=True, color_system="truecolor")
    console.print(_markdown("# [bold red]H[/]\n\n> [link=https://evil.example]q[/link]\n\n- [/]\n\n"
                            "| [blink]c[/] |\n|-|\n| :warning: |\n\n```[/]\n[link=x]y[/link]\n```\n"))
    shown = sink.getvalue()

    assert "\x1b]8;" not in shown
    for literal in ("[bold red]H[/]", "[link=https://evil.example]q[/link]", "[/]", "[blink]c[/]",
                    ":warning:", "[link=x]y[/link]"):
        assert literal in shown, literal


def test_a_long_plain_block_is_left_for_the_terminal_to_wrap() -> None:
    # rich's wrapping of one Text grows faster than the text: a 10 MB answer past the Markdown budget
    # took half a minute to print. Counted, not timed: the block reaches the sink as one line, so rich
    # laid out no wrapped lines for it (the terminal wraps it as it shows it).
    writer, sink = _writer()
    line = "x" * 300_000
    for start in range(0, len(line), 1000):
        writer.feed(line[start:start + 1000])
    writer.close()

    assert sink.getvalue() == f"agent:\n{line}\n"


def test_markup_in_an_approval_forms_choices_and_default_is_shown_as_it_is_sent(
        served: Callable[[Any], Any]) -> None:
    # A choice or default written as markup would, parsed, read as another word than the one sent
    # ("[green]approve[/green]" drawn as "approve"); the form shows each as written, and the value sent
    # is the one typed.
    schema = {"type": "object", "required": ["decision"], "properties": {"decision": {
        "enum": ["[hidden]reject[/hidden]", "approve"], "default": "[hidden]reject[/hidden]",
        "description": "[bold]Pick[/] [link=https://evil.example/]approve[/link] :warning: [/]"}}}
    interrupt = Interrupt(id="i1", reason="confirm", message="[/][red]say[/red]", response_schema=schema)
    endpoint = served(ScriptedAgent([
        [Start(), Finish(outcome=RunFinishedInterruptOutcome(interrupts=(interrupt,)))],
        [Start(), Finish()],
    ]))
    with on_terminal([*CHAT, endpoint.url]) as (child, screen):
        _say(child, "hi")
        child.expect(r"\)(?:\x1b\[[0-9;]*m)*: ")
        child.sendline("")  # (the default, as shown)
        _say(child, "/quit")
        child.expect(pexpect.EOF)
    shown = _text(screen)

    assert child.exitstatus == 0 and "Traceback" not in shown
    assert "\x1b]8;" not in screen.getvalue()
    assert "[bold]Pick[/] [link=https://evil.example/]approve[/link] :warning: [/]" in shown
    assert "[[hidden]reject[/hidden]/approve]" in shown and "([hidden]reject[/hidden])" in shown
    assert "[/][red]say[/red]" in shown
    assert endpoint.received[-1].body["resume"][0]["payload"] == {"decision": "[hidden]reject[/hidden]"}


def test_a_table_shows_every_cell_however_wide_or_long_its_words(served: Callable[[Any], Any]) -> None:
    # rich cut a word wider than its column with an ellipsis, and gave no width at all to the columns a
    # terminal could not hold (at 60 columns, 26 one-letter ones showed 8): words the thread holds
    # the person never saw. A long word is folded onto the next lines; a table too wide is its rows as text.
    word = "approve-the-transfer-" * 15
    wide = "|" + "|".join(f"h{i}" for i in range(100)) + "|\n|" + "-|" * 100 + "\n|" \
        + "|".join(f"c{i}" for i in range(100)) + "|\n"
    answer = f"| name | value |\n|---|---|\n| note | {word} |\n\n{wide}"
    endpoint = served(ScriptedAgent([[Start(), *text_message("m1", answer), Finish()]]))
    status, raw, shown = _one_turn(endpoint.url)
    joined = "".join(shown.split())

    assert status == 0 and "Traceback" not in shown
    assert "…" not in shown and word in joined  # (folded: every character, in order)
    assert "(a table of 100 columns, too many for the width: its rows as text)" in shown
    assert "|" + "|".join(f"h{i}" for i in range(100)) + "|" in joined
    assert "|" + "|".join(f"c{i}" for i in range(100)) + "|" in joined


@pytest.mark.parametrize(("width", "cells"), [
    (60, [letter * 3 for letter in "abcdefghijklmnopqrst"]),  # 20 columns, 3 cells each: the width
    (27, [letter * 5 for letter in "abcdefghi"]),
    (60, list("漢字仮名一二三四五六七八九十上下")),  # 16 columns of a character two cells wide
    (40, [f"{letter}{wide}" for letter, wide in zip("abcdefghijklm", "漢字仮名一二三四五六七八九", strict=True)]),
], ids=["ascii-60", "ascii-27", "wide", "mixed"])
def test_a_table_at_the_edge_of_the_width_shows_every_column(width: int, cells: list[str]) -> None:
    # The table was drawn by rich when each column had three cells of the width, its text's and the two
    # around it; but the table's edge takes one more, and a character two cells wide cannot fold into
    # one: at those widths rich gave a column no room at all, and its words were never seen.
    from agui_client.cli.chatview import _markdown
    from agui_client.cli.terminal import SafeConsole

    row = "|" + "|".join(cells) + "|\n"
    sink = io.StringIO()
    SafeConsole(file=sink, width=width, color_system=None).print(
        _markdown(row + "|" + "-|" * len(cells) + "\n" + row))
    shown = sink.getvalue()

    assert [cell for cell in cells if any(shown.count(char) < 2 * cell.count(char) for char in cell)] == []


def _costly_writer(monkeypatch: pytest.MonkeyPatch) -> tuple[Any, list[float], list[float], list[str]]:
    """A writer on a terminal whose clocks the test moves: each Markdown drawing takes a second, of work and
    of wall time (a long table's tail takes a quarter of one on a small machine)."""
    from agui_client.cli import chatview
    from agui_client.cli.terminal import SafeConsole

    now, spent, drawn = [0.0], [0.0], []
    markdown = chatview._markdown

    def costly(text: str) -> Any:
        drawn.append(text)
        spent[0] += 1.0
        now[0] += 1.0
        return markdown(text)

    monkeypatch.setattr(chatview, "_markdown", costly)
    console = SafeConsole(file=io.StringIO(), width=80, force_terminal=True, color_system=None)
    writer = chatview._MarkdownWriter(console, "agent:", clock=lambda: now[0], work=lambda: spent[0])
    return writer, now, spent, drawn


def test_a_streaming_tail_takes_at_most_its_share_of_the_work_to_redraw(monkeypatch: pytest.MonkeyPatch) -> None:
    # The tail was drawn again at every frame, 12 a second, whatever it cost: a table or code streaming
    # for minutes kept a core busy drawing its last 8 KiB all that time. Counted on the test's clocks.
    from agui_client.cli.chatview import REDRAW_SHARE

    writer, now, spent, drawn = _costly_writer(monkeypatch)
    writer.feed("| a | b |\n|---|---|\n")
    for row in range(240):  # (twenty seconds of frames, the tail a row longer at each)
        writer.feed(f"| {row} | x |\n")
        writer._live.refresh()
        now[0] += 1 / 12
    redrawn, work, took = len(drawn), spent[0], now[0]
    writer.close()

    assert work - 1.0 <= REDRAW_SHARE * took  # (the last drawing's pause may not be over)
    assert redrawn >= REDRAW_SHARE * took - 2  # (and it is drawn as often as that allows)
    assert drawn[-1].count("| 239 | x |") == 1  # (the whole table printed at the end, once)


def test_a_tail_that_did_not_change_is_not_drawn_again(monkeypatch: pytest.MonkeyPatch) -> None:
    # An agent pausing in the middle of a long block (a tool running, a slow model) had its tail parsed and
    # laid out 12 times a second until it went on.
    writer, now, _, drawn = _costly_writer(monkeypatch)
    writer.feed("A paragraph that is still going on")
    for _ in range(50):
        now[0] += 10.0
        writer._live.refresh()
    quiet = len(drawn)
    writer.feed(" and on")
    now[0] += 10.0
    writer._live.refresh()
    writer._live.refresh()
    writer.close()

    assert quiet == 1
    assert drawn[1:] == ["A paragraph that is still going on and on"] * 2  # (drawn once again, then printed)


@pytest.mark.parametrize(("head", "line"), [("| a | b |\n|---|:-:|\n", "| r{} | # x |\n"),
                                            ("```python\n", "# line {}\n")])
def test_a_long_tail_is_redrawn_as_the_table_or_code_it_is(head: str, line: str) -> None:
    # Past LIVE_CHARS the redrawn tail lost the block's first lines: a table's rows or a code block's lines
    # were drawn as one paragraph of their words (a "# comment" as a heading) until the block ended.
    from agui_client.cli.chatview import LIVE_CHARS, _markdown
    from agui_client.cli.terminal import SafeConsole

    writer, _ = _writer()
    writer.feed(head)
    for row in range(2_000):
        writer.feed(line.format(row))
    shown = writer._shown()
    sink = io.StringIO()
    SafeConsole(file=sink, width=80, color_system=None).print(_markdown(shown))
    writer.close()
    drawn = [row.strip() for row in sink.getvalue().splitlines()]

    last = line.format(1999).strip()
    # the last row drawn as a table's row (no "|"), or the last line as code (its "#" kept, on its own line)
    expected = "r1999  # x" if head.startswith("|") else last
    assert drawn.count(expected) == 1 and "|" not in sink.getvalue()
    assert shown.startswith(head) and shown.endswith(line.format(1999)) and len(shown) <= len(head) + LIVE_CHARS


def test_a_bidi_control_in_a_links_target_is_shown_as_its_escape(served: Callable[[Any], Any]) -> None:
    # The answer is made visible before it is parsed, so U+202E is the escape \u202e by then; markdown-it
    # percent-encoded the escape's backslash, and the target read "a%5Cu202eb": the one place the chat
    # showed a bidi control otherwise than as its escape.
    endpoint = served(ScriptedAgent([[Start(), *text_message("m1", "[pay](https://shop.example/a\u202eb%5Cc)"),
                                      Finish()]]))
    status, raw, shown = _one_turn(endpoint.url)

    assert status == 0 and "\u202e" not in raw
    # (the escape as the rest of the chat writes it; a %5C the agent wrote stays as written)
    assert "pay (https://shop.example/a\\u202eb%5Cc)" in shown


def test_a_message_of_headings_is_charged_what_its_drawing_writes() -> None:
    # The Markdown budget counted the characters given, not what they became: a heading is drawn as a
    # line the terminal's width long, so 64 KiB of headings wrote some 1.5 MB and took a second to draw.
    from agui_client.cli.chatview import MARKDOWN_CHARS

    writer, sink = _writer()
    writer.feed("# a\n\n" * 13_000)
    writer.close()
    shown = sink.getvalue()

    drawn = shown[:shown.index("\n# a\n")]  # (the headings drawn as Markdown, before the first one as text)
    assert "# a" not in drawn and len(drawn) <= MARKDOWN_CHARS
    as_markdown = sum(line.strip() == "a" for line in drawn.splitlines())
    assert as_markdown > 0 and shown.count("# a\n") + as_markdown == 13_000  # (every heading, the rest as text)
    assert len(shown) <= MARKDOWN_CHARS + 13_000 * len("# a\n")


def test_ordinary_highlighted_code_keeps_its_colours_and_what_the_terminal_receives_is_bounded(
        served: Callable[[Any], Any]) -> None:
    # The escape sequences around each highlighted piece are charged to their own budget
    # (MARKDOWN_WRITTEN), not to the characters drawn: one budget of both (64 KiB) left every block after
    # the first two or three of these plain. Each block is one delta (no tail redrawn while it streams).
    from agui_client.cli.chatview import MARKDOWN_WRITTEN

    blocks = ["```python\n" + f"def f{n}(x):\n    return x + 1  # c\n" * 30 + "```\n\n" for n in range(4)]
    events = [Start(), TextMessageStartEvent(message_id="m1"),
              *(TextMessageContentEvent(message_id="m1", delta=block) for block in blocks),
              TextMessageEndEvent(message_id="m1"), Finish()]
    endpoint = served(ScriptedAgent([events]))
    status, raw, shown = _one_turn(endpoint.url)

    assert status == 0 and all(f"def f{n}(x):" in shown for n in range(4))
    # Every block drawn as code (in colour, its fence not shown).
    assert "\x1b[38;5;" in raw[raw.rindex("f3"):]  # (256 colours on this terminal)
    assert "```python" not in shown
    # What the terminal received: at most the written budget and the chat's own lines (the banner, the
    # prompts, the turn's end), the terminal's carriage returns aside.
    assert len(raw) - raw.count("\r") <= MARKDOWN_WRITTEN + 4096


def test_code_whose_colour_codes_outgrow_the_written_budget_is_shown_as_text() -> None:
    # A piece a character long, each in another colour, writes some 20 times its text: the characters
    # drawn fit their budget, the escape sequences do not, and the block is printed as the text it is.
    from agui_client.cli import chatview
    from agui_client.cli.terminal import SafeConsole

    sink = io.StringIO()
    console = SafeConsole(file=sink, width=80, height=25, force_terminal=True, color_system="256")
    writer = chatview._MarkdownWriter(console, "agent:", [chatview.MARKDOWN_CHARS, 20_000, chatview.LIVE_WRITTEN])
    code = "```python\n" + "a+b-c*d/e%f+g-h*i/j%k+l-m*n/o%p+q-r*s/t%u+v-w*x/y%z\n" * 20 + "```"
    writer.feed(code + "\n\nafter")
    writer.close()
    shown = sink.getvalue()

    assert len(code) * 3 < 20_000 < chatview.MARKDOWN_CHARS  # (its characters, padding and all, fitted)
    assert writer._markdown_left[:2] == [0, 0] and "```python" in shown  # (as text, its fences shown)
    assert "\x1b[38;5;" not in shown[:shown.index("```python")]  # (nothing of the drawing written)


@pytest.mark.parametrize("colours", ["truecolor", "256", "standard", None])
def test_the_budget_is_charged_every_character_the_console_writes(colours: str | None) -> None:
    # (escape sequences included, as the console writes them for its colour system: none without colour)
    from agui_client.cli import chatview
    from agui_client.cli.terminal import SafeConsole

    sink = io.StringIO()
    console = SafeConsole(file=sink, width=80, height=25, force_terminal=colours is not None, color_system=colours)
    writer = chatview._MarkdownWriter(console, "agent:")
    writer.feed("start\n\n")
    before, left = len(sink.getvalue()), list(writer._markdown_left)
    writer.feed("```python\n" + "def f(x):\n    return [x, 1]  # c\n" * 5 + "```\n\n"
                "# A **heading**\n\n| a | *b* |\n|---|---|\n| 1 | [l](https://x.example) |\n\n> ~~q~~ `c`\n\n")
    written = sink.getvalue()[before:]
    charged = [was - now for was, now in zip(left, writer._markdown_left, strict=True)]
    writer.close()

    assert charged[1] == len(written) and "```" not in sink.getvalue()  # (all of it drawn as Markdown)
    assert ("\x1b[" in written) == (colours is not None)
    # The characters drawn (what was written less its colour codes and its links' escape sequences) are
    # charged but for the blanks that pad the lines out to the width, and each of the four blocks is
    # charged its own drawing.
    drawn = re.sub(r"\x1b\[[0-9;]*m|\x1b\]8;[^\x1b]*\x1b\\", "", written)
    assert len(drawn.replace(" ", "")) + 4 * chatview.BLOCK_CHARS <= charged[0] < len(drawn)


@pytest.mark.parametrize("spent", ["drawn", "written"])
def test_the_redrawn_tail_is_text_once_either_budget_is_spent(spent: str) -> None:
    # (the tail redrawn in place while a message streams, as a finished block past either budget)
    from rich.text import Text

    writer, _ = _writer()
    assert not isinstance(writer._rendered("# a **heading**"), Text)
    writer._markdown_left[["drawn", "written"].index(spent)] = 0
    assert isinstance(writer._rendered("# a **heading**"), Text)


def test_a_block_whose_drawing_outgrows_the_budget_is_shown_as_text() -> None:
    # One block of combining marks, each drawn as its six-character escape: the drawing is given up once it
    # has written what the budget holds, and the block printed as the text it is (escaped all the same).
    from agui_client.cli import chatview

    tower = "a" + "\u0301" * 10_000
    writer, sink = _writer()
    writer._markdown_left[0] = 20_000  # (a tower writes some 60,000: it does not fit)
    writer.feed(tower + "\n\nafter")
    writer.close()
    shown = sink.getvalue()

    # (as text: one line the terminal wraps, where Markdown is drawn in lines of the console's 80 columns)
    assert writer._markdown_left[0] == 0 and max(map(len, shown.splitlines())) > 50_000
    assert shown.count("\\u0301") > 9_000 and shown.endswith("\nafter\n")
    assert chatview.MARKDOWN_CHARS > len(tower)  # (measured by its input it fitted, and was drawn)


def test_a_refresh_of_a_tail_that_did_not_change_writes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    # The live display refreshes 12 times a second; each refresh of an unchanged tail wrote it all to the
    # terminal again (its lines, the cursor moved back over them): some 2 ms each while the agent paused.
    writer, now, _, drawn = _costly_writer(monkeypatch)
    sink = writer.console.file
    writer.feed("| a | b |\n|---|---|\n| 1 | x |\n")
    writer._live.refresh()
    before = len(sink.getvalue())
    for _ in range(50):
        now[0] += 10.0
        writer._live.refresh()
    quiet = len(sink.getvalue()) - before
    writer.feed("| 2 | y |\n")
    now[0] += 10.0
    writer._live.refresh()
    moved, redrawn = len(sink.getvalue()) - before, list(drawn)
    writer.close()

    assert quiet == 0 and len(redrawn) == 2
    assert moved > 0 and redrawn[-1].endswith("| 2 | y |\n")


def test_a_refresh_of_reasoning_that_did_not_change_writes_nothing() -> None:
    # The reasoning shown dimmed while it streams refreshes 12 times a second as the Markdown tail does, and
    # each refresh wrote its lines again while the agent paused (some 0.3 ms and 200 characters each).
    from agui_client.cli import chatview
    from agui_client.cli.render import PlainOutput
    from agui_client.cli.terminal import SafeConsole

    sink = io.StringIO()
    console = SafeConsole(file=sink, width=80, height=25, force_terminal=True, color_system="truecolor")
    thinking = chatview._Thinking(PlainOutput(io.StringIO()), console)
    thinking.feed("weighing the first option\nthen the second\n")
    live = thinking._live
    assert live is not None
    live.refresh()
    shown = sink.getvalue()
    for _ in range(50):
        live.refresh()
    quiet = sink.getvalue()[len(shown):]
    thinking.feed("and a third")
    live.refresh()
    moved = sink.getvalue()[len(shown) + len(quiet):]
    thinking.fold()

    assert "then the second" in shown
    assert quiet == ""
    assert "and a third" in moved  # (a change is drawn at the next refresh)
