"""The public sanitiser (``agui_client.terminal``) on hostile text, and the example chat that uses it.

``inert_text`` (prose), ``inert_name`` (names and ids) and ``InertDeltas`` (streamed deltas) are the
rule the CLI applies (``agui_client._inert``, tested on its own in test_terminal_text.py), offered to
users' own chat apps: plain ``str`` in and out. What a real terminal receives from
``examples/chat_tui.py`` is checked through a pseudo-terminal.
"""

from __future__ import annotations

import doctest
import io
import os
import subprocess
import sys
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pexpect
import pytest
from hypothesis import given
from hypothesis import strategies as st

import agui_client.terminal
from agui_client import TextMessageContentEvent, TextMessageEndEvent, TextMessageStartEvent
from agui_client.cli.render import PlainOutput
from agui_client.terminal import NAME_CHARS, InertDeltas, inert_name, inert_text
from agui_client.testing import Finish, ScriptedAgent, Start, text_message, tool_call
from agui_client.types.run import Interrupt, RunFinishedInterruptOutcome

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

FAMILY = "\U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466"  # one emoji: four joined by ZWJs
HEART_ON_FIRE = "\u2764\ufe0f\u200d\U0001f525"                         # a selector, then a joiner
PERSIAN = "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645"            # a ZWNJ between letters
#: Characters a terminal would obey: ESC sequences (CSI, OSC 52 clipboard write, DCS), C1, BEL, BS, DEL.
OBEYED = ["\x1b[2J", "\x1b]52;c;cHduZWQ=\x07", "\x1bP1$r\x1b\\", "\x9b31m", "\x9d0;title\x9c", "\x08", "\x7f"]
#: Characters that mislead a reader: bidi overrides and isolates, zero-width, tags, fillers, separators.
UNSEEN = ["\u202e", "\u202d", "\u2066", "\u2069", "\u200b", "\u2060", "\ufeff", "\U000e0041", "\u3164", "\u115f",
          "\uffa0", "\u034f", "\u00ad", "\u2028", "\u2029", "\ud800", "\udfff"]


def _safe(shown: str) -> bool:
    """Nothing in ``shown`` acts on a terminal or hides: each character printable (or tab, newline),
    or a joiner or selector right after a visible character, and the whole encodable as UTF-8."""
    shown.encode("utf-8")
    for i, char in enumerate(shown):
        if char in "\t\n":
            continue
        if unicodedata.category(char) in ("Cc", "Cs", "Zl", "Zp") or char == "\u3164":
            return False
        if unicodedata.category(char) == "Cf" or char in "\ufe0e\ufe0f":
            before = shown[i - 1] if i else ""
            joiner = char in "\u200c\u200d\ufe0e\ufe0f" or "\U000e0100" <= char <= "\U000e01ef"
            if not joiner or not before or before.isspace() or unicodedata.category(before) in ("Cf", "Cc"):
                return False
    return True


def test_the_public_docstring_examples_hold() -> None:
    failed, attempted = doctest.testmod(agui_client.terminal)

    assert attempted >= 15 and failed == 0


def test_the_module_needs_no_rich() -> None:
    # (plain str in and out, for any toolkit: rich is the CLI's extra, and may be absent)
    code = "import sys; sys.modules['rich'] = None; import agui_client.terminal as t; print(t.inert_text('\\x1b'))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)

    assert done.returncode == 0, done.stderr
    assert done.stdout == "\\x1b\n"


@pytest.mark.parametrize("char", OBEYED + UNSEEN)
def test_what_a_terminal_obeys_or_a_reader_cannot_see_is_shown_as_its_escape(char: str) -> None:
    text = f"before {char} after"

    for shown in (inert_text(text), inert_name(text)):
        assert char not in shown
        assert "\x1b" not in shown and "\x07" not in shown and "\x9b" not in shown
        assert shown.isascii()
        shown.encode("utf-8")  # (a lone surrogate would not encode)
    assert inert_text(f"ok{UNSEEN[0]}go") == "ok\\u202ego"
    assert inert_text("\ud800") == "\\ud800" and inert_name("\udfff") == "\\udfff"


def test_a_carriage_return_is_shown_but_a_crlf_is_a_line_end() -> None:
    assert inert_text("100%\rdone") == "100%\\rdone"
    assert inert_text("one\r\ntwo") == "one\ntwo"


@pytest.mark.parametrize("text", [
    f"family {FAMILY} here", f"on fire {HEART_ON_FIRE}", PERSIAN, "keycap #\ufe0f\u20e3",
    "\u845b\U000e0100 ideograph", "cafe\u0301", "braille \u2800\u2801, a\u00a0no-break space", "tab\tand\nline",
    "日本語 中文 한국어",
])
def test_prose_keeps_emoji_scripts_and_blanks_as_they_are(text: str) -> None:
    assert inert_text(text) == text


@pytest.mark.parametrize(("text", "shown"), [
    ("\u2764\ufe0f\ufe0f", "\u2764\ufe0f\\ufe0f"),                         # a second selector in a row
    ("\U0001f600" + "\ufe00\ufe01" * 2, "\U0001f600\ufe00\\ufe01\\ufe00\\ufe01"),  # bytes smuggled in selectors
    ("gap \u200d", "gap \\u200d"),                                          # after a blank: joins nothing
    ("\u200dstart", "\\u200dstart"),                                        # at the start: nothing before it
    ("\u3164\ufe0f", "\\u3164\\ufe0f"),                                     # after an escaped character
])
def test_a_joiner_or_selector_that_joins_nothing_is_escaped_in_prose(text: str, shown: str) -> None:
    assert inert_text(text) == shown


@pytest.mark.parametrize("char", ["\u200d", "\u200c", "\ufe0f", "\U000e0100", "\u2800", "\u00a0", "\u3000", "\\"])
def test_a_name_escapes_every_joiner_selector_blank_and_backslash(char: str) -> None:
    shown = inert_name(f"approve{char}")

    assert shown != "approve" and char not in shown.replace("\\\\", "")
    assert shown.startswith("approve\\") and shown.isascii()


@given(st.text(), st.text())
def test_two_names_that_differ_never_read_the_same(one: str, other: str) -> None:
    if one != other:
        assert inert_name(one, 10**6) != inert_name(other, 10**6)


@given(st.text())
def test_a_name_is_one_bounded_line_and_prose_is_safe(text: str) -> None:
    name = inert_name(text)

    assert "\n" not in name and "\r" not in name and name == name.strip()
    assert len(name) <= NAME_CHARS + 12
    assert _safe(name) and _safe(inert_text(text))


def test_a_very_long_id_is_cut_with_a_digest_of_the_whole() -> None:
    one, other = "i" * 1_000_000 + "1", "i" * 1_000_000 + "2"

    shown_one, shown_other = inert_name(one), inert_name(other)

    assert shown_one != shown_other
    assert shown_one.startswith("i" * NAME_CHARS + "...#") and len(shown_one) == NAME_CHARS + 12
    assert inert_name(one) == shown_one  # (the same within a process)
    assert len(inert_name(one, limit=20)) == 32
    assert len(inert_name("\u3164" * 1000)) == NAME_CHARS + 12  # (cut after escaping: bounded on screen)


def _streamed(pieces: list[str]) -> str:
    deltas = InertDeltas()
    return "".join(deltas.feed(piece) for piece in pieces) + deltas.end()


@pytest.mark.parametrize("text", [f"family {FAMILY}!", f"{HEART_ON_FIRE} x", PERSIAN, "a\r\nb\rc\r", "x\ufe0f\ufe0f",
                                  "Z" + "\u0301" * 9 + " e\u0302\u0323"])
def test_a_text_cut_between_deltas_at_every_point_reads_as_the_whole(text: str) -> None:
    whole = inert_text(text)

    for cut in range(len(text) + 1):
        assert _streamed([text[:cut], text[cut:]]) == whole, cut
    assert _streamed(list(text)) == whole  # (one character a delta)


def test_a_stream_of_one_selector_a_delta_cannot_hide_text() -> None:
    assert _streamed(["\U0001f600", *["\ufe01"] * 4]) == "\U0001f600\ufe01" + "\\ufe01" * 3
    assert _streamed(["\u200d", "x"]) == "\\u200dx"  # (a stream starts at a line's start)


@given(st.text(alphabet=st.sampled_from(["a", " ", "\n", "\r", "\u200d", "\u200c", "\ufe0f", "\U0001f468",
                                         "\x1b", "\u3164", "\u202e", "\t", "\ud800", "\u0301", "\u05b8"])),
       st.lists(st.integers(min_value=0, max_value=40), max_size=6))
def test_streamed_deltas_read_as_the_whole_text_wherever_they_are_cut(text: str, cuts: list[int]) -> None:
    edges = sorted({min(cut, len(text)) for cut in cuts})
    pieces = [text[start:end] for start, end in zip([0, *edges], [*edges, len(text)], strict=True)]

    assert _streamed(pieces) == inert_text(text)


def test_one_inert_deltas_follows_one_text_after_another() -> None:
    deltas = InertDeltas()

    assert deltas.feed("line\r") == "line"  # (the CR waits: it may be half a CRLF)
    assert deltas.end() == "\\r"            # (the text ended on it: a bare CR after all)
    assert deltas.feed("\u200d") == "\\u200d"  # (a new text starts a line: nothing to join)


@pytest.mark.parametrize("text", [f"family {FAMILY}!", "a\r\nb\rc\r", "x\ufe0f\ufe0f\x1b[2J", f"{HEART_ON_FIRE}"])
def test_the_cli_streams_its_tokens_as_the_public_helper_does(text: str) -> None:
    # (one rule, written once: PlainOutput's tokens go through InertDeltas)
    for cut in range(len(text) + 1):
        stream = io.StringIO()
        out = PlainOutput(stream)
        out.inline(text[:cut])
        out.inline(text[cut:])
        out.end_line()
        assert stream.getvalue().rstrip("\n") == inert_text(text).rstrip("\n"), cut


# -- the example chat, on a real pseudo-terminal -------------------------------------------------------

PTY_ENV = {**os.environ, "PYTHONIOENCODING": "utf-8", "NO_COLOR": "1", "TERM": "xterm-256color"}


def test_the_example_chat_shows_hostile_text_inert_and_emoji_whole_on_a_terminal(
        served: Callable[[Any], Any]) -> None:
    deltas = ["clear\x1b[2J", "\x9b31m red", " \u202eevil", f" family {FAMILY[:3]}", FAMILY[3:], " fire \u2764",
              "\ufe0f\u200d\U0001f525", " hidden\ufe01", "\ufe02\ufe03 ok\r", "\nnext line"]
    message: list[Any] = [TextMessageStartEvent(message_id="m1"),
               *[TextMessageContentEvent(message_id="m1", delta=delta) for delta in deltas],
               TextMessageEndEvent(message_id="m1")]
    asking = Interrupt(id="i1", reason="approval\u3164", message="ok?\x1b]52;c;cHduZWQ=\x07",
                       response_schema={"type": "object", "properties": {"approved": {"type": "boolean"}}})
    endpoint = served(ScriptedAgent([
        [Start(), *message, *tool_call("c1", "rm\u3164\u202etxt.exe", {}),
         Finish(outcome=RunFinishedInterruptOutcome(interrupts=(asking,)))],
        [Start(), *text_message("m2", "done"), Finish()],
    ]))
    child = pexpect.spawn(sys.executable, [str(EXAMPLES / "chat_tui.py"), "--url", endpoint.url, "--once", "hi",
                                           "--yes"], env=PTY_ENV, dimensions=(60, 200), timeout=60, encoding="utf-8")
    child.logfile_read = io.StringIO()
    try:
        child.expect(pexpect.EOF)
    finally:
        child.close()
    screen = child.logfile_read.getvalue().replace("\r\n", "\n")  # (the terminal's own line ends)

    assert child.exitstatus == 0, screen
    assert "agent: clear\\x1b[2J\\x9b31m red \\u202eevil" in screen
    assert f"family {FAMILY} fire {HEART_ON_FIRE} hidden\ufe01\\ufe02\\ufe03 ok\nnext line" in screen
    assert "[tool] rm\\u3164\\u202etxt.exe" in screen
    assert "the agent asks (approval\\u3164): ok?\\x1b]52;c;cHduZWQ=\\x07" in screen
    assert "done" in screen and "(success;" in screen
    for raw in ("\x1b", "\x9b", "\x07", "\r", "\u202e", "\u3164", "\ufe02"):
        assert raw not in screen, repr(raw)


HOSTILE = f"clear\x1b[2J\x9b31m \u202eevil \u3164 family {FAMILY}"


def _hostile_agent() -> ScriptedAgent:
    asking = Interrupt(id="i1\u3164", reason="approval\u202e", message=f"ok?{HOSTILE}")
    deltas = [*HOSTILE.partition("\U0001f469")[:2], HOSTILE.partition("\U0001f469")[2]]  # (the emoji cut)
    message: list[Any] = [TextMessageStartEvent(message_id="m1"),
                          *[TextMessageContentEvent(message_id="m1", delta=delta) for delta in deltas],
                          TextMessageEndEvent(message_id="m1")]
    return ScriptedAgent([
        [Start(), *message, *tool_call("c1", "rm\u3164", {"a": HOSTILE}),
         Finish(outcome=RunFinishedInterruptOutcome(interrupts=(asking,)))],
        [Start(), *text_message("m2", f"done {HOSTILE}"), Finish()],
    ])


@pytest.mark.parametrize(("example", "agent", "expected"), [
    ("script.py", _hostile_agent, ["interrupt (approval\\u202e): ok?clear\\x1b[2J", "approved i1\\u3164",
                                   f"agent: done clear\\x1b[2J\\x9b31m \\u202eevil \\u3164 family {FAMILY}"]),
    ("async_stream.py", _hostile_agent, [f"assistant: clear\\x1b[2J\\x9b31m \\u202eevil \\u3164 family {FAMILY}\n",
                                         "[tool] rm\\u3164 {", "approving: ok?clear\\x1b[2J"]),
    ("frontend_tools.py", lambda: ScriptedAgent.frontend_tool("confirm_choice", arguments={"question": HOSTILE}),
     [f"the agent asks: clear\\x1b[2J\\x9b31m \\u202eevil \\u3164 family {FAMILY}\n"]),
])
def test_the_other_examples_print_an_agents_words_inert(served: Callable[[Any], Any], example: str,
                                                        agent: Callable[[], Any], expected: list[str]) -> None:
    endpoint = served(agent())
    done = subprocess.run([sys.executable, str(EXAMPLES / example), "--url", endpoint.url],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60, check=False,
                          env={**os.environ, "PYTHONIOENCODING": "utf-8"})

    assert done.returncode == 0, done.stderr
    for text in expected:
        assert text in done.stdout, (text, done.stdout)
    for raw in ("\x1b", "\x9b", "\r", "\u202e", "\u3164"):
        assert raw not in done.stdout, repr(raw)


@pytest.mark.parametrize("limit", [0, -3, 2.5])
def test_inert_name_refuses_a_limit_that_shows_nothing_whole(limit: Any) -> None:
    with pytest.raises(ValueError):
        inert_name("abcdefgh", limit)
