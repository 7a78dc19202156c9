"""The terminal, third pass: what an agent's text can still do where the user approves an action.

A letter of another script inside a name (a Cyrillic ``а`` in ``reаd_file``) made a dangerous call read
as a harmless one in the interrupt's panel; a word of the arguments or the question could do the same
(``/etc/pаsswd``); field names in a wide script broke the plain panel's columns; a request to ``agui
serve`` whose handling failed reached the terminal raw in uvicorn's traceback. Each test drives ``agui``
through a real pseudo-terminal (or a pipe, where the plain output is the point) and fails without its
fix (CHANGELOG, "Eighteenth round: the agent's text at the approval prompt").
"""

from __future__ import annotations

import io
import os
import re
import sys
from collections.abc import Callable
from typing import Any

import httpx
import pexpect
import pytest
from clikit import agui_here

from agui_client._inert import STACKED_MARKS, ascii_named, unmixed, visible
from agui_client.testing import Finish, ScriptedAgent, Start, text_message, tool_call
from agui_client.types import TextMessageContentEvent, TextMessageEndEvent, TextMessageStartEvent
from agui_client.types.run import Interrupt, RunFinishedInterruptOutcome

AGUI = [sys.executable, "-m", "agui_client.cli"]
ENV = {**os.environ, "PYTHONIOENCODING": "utf-8", "NO_COLOR": "1", "TERM": "xterm-256color"}
ENV.pop("FORCE_COLOR", None)

#: What rich writes of its own (styles, the spinner's erasing, cursor moves), and a pty's CRs.
RICH_OWN = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\r")

#: Look-alikes of ASCII: a Cyrillic a (U+0430), a Ukrainian i (U+0456), a Greek omicron (U+03BF), a
#: fullwidth r (U+FF52), a dotless i (U+0131), a division slash (U+2215).
ALIKES = re.compile("[\u0430\u0456\u03bf\uff52\u0131\u2215]")
#: A call and an interrupt whose every name and the words that matter are written with them.
SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["\u0430pproved"], "title": "c\u03bfnfirm the d\u0131rectory",
    "properties": {"\u0430pproved": {"type": "boolean", "description": "y\u0435s to \uff52ead it"},
                   "target": {"enum": ["st\u0430ging", "prod"], "default": "prod"}},
}


def _disguised() -> ScriptedAgent:
    interrupt = Interrupt(id="\u04561", reason="\u0430pproval", tool_call_id="c1", response_schema=SCHEMA,
                          message="Allow re\u0430d_file on /etc/p\u0430sswd\u2215shadow? Merci, "
                                  "\u0434\u043e\u043c, caf\u00e9, \u5220\u9664staging")
    return ScriptedAgent([
        [Start(), *tool_call("c1", "re\u0430d_file", {"path": "/etc/p\u0430sswd"}),
         Finish(outcome=RunFinishedInterruptOutcome(interrupts=(interrupt,)))],
        [Start(), *text_message("m2", "done"), Finish()],
    ])


def _agui_run(url: str) -> tuple[pexpect.spawn, io.StringIO]:
    """``agui run URL -m hi`` on a pseudo-terminal of 60 x 300, and what it writes there."""
    child = pexpect.spawn(sys.executable, [*AGUI[1:], "run", url, "-m", "hi"], env=ENV, dimensions=(60, 300),
                          timeout=30, encoding="utf-8")
    child.logfile_read = screen = io.StringIO()
    return child, screen


def _panel(text: str) -> str:
    """The interrupt's panel and what follows it (the stream's own lines before it show names as named)."""
    return text[text.index("interrupt: "):]


def _check_the_approval(text: str) -> None:
    panel = _panel(text)
    assert ALIKES.search(panel) is None, ALIKES.search(panel)
    for shown in ("interrupt: \\u0430pproval", "\\u04561", "re\\u0430d_file",
                  "/etc/p\\u0430sswd\\u2215shadow", "c\\u03bfnfirm the d\\u0131rectory", "\\u0430pproved",
                  "y\\u0435s to \\uff52ead it", "st\\u0430ging|prod"):
        assert shown in panel, (shown, panel)
    # Prose that mixes nothing stays as written: a Russian word, an accented one, Chinese next to English.
    assert "\u0434\u043e\u043c, caf\u00e9, \u5220\u9664staging" in panel


def test_look_alike_letters_in_the_run_prompts_approval_are_shown_escaped(served: Callable[[Any], Any]) -> None:
    endpoint = served(_disguised())
    child, screen = _agui_run(endpoint.url)
    try:
        child.expect(r"\[y/n\]")
        child.sendline("y")
        child.expect(r"\(prod\)")  # (a choice holding a look-alike is not listed raw in the prompt)
        child.sendline("")
        child.expect(pexpect.EOF)
    finally:
        child.close()

    text = RICH_OWN.sub("", screen.getvalue())
    _check_the_approval(text)
    assert "answer to \\u04561: {\"\\u0430pproved\": true, \"target\": \"prod\"}" in text
    assert endpoint.received[1].body["resume"][0] == {  # (sent as the agent wrote them)
        "interruptId": "\u04561", "status": "resolved", "payload": {"\u0430pproved": True, "target": "prod"}}


def test_look_alike_letters_in_the_chats_approval_are_shown_escaped(served: Callable[[Any], Any]) -> None:
    endpoint = served(_disguised())
    child = pexpect.spawn(sys.executable, [*AGUI[1:], "chat", endpoint.url], env=ENV, dimensions=(60, 300),
                          timeout=30, encoding="utf-8")
    child.logfile_read = screen = io.StringIO()
    try:
        child.expect("you: ")
        child.sendline("hi")
        child.expect(r"\[y/n\]")
        child.sendline("y")
        child.expect(r"\(prod\)")
        child.sendline("")
        child.expect("done")
        child.expect("you: ")
        child.sendline("/quit")
        child.expect(pexpect.EOF)
    finally:
        child.close()

    _check_the_approval(RICH_OWN.sub("", screen.getvalue()))
    assert endpoint.received[1].body["resume"][0]["payload"] == {"\u0430pproved": True, "target": "prod"}


def test_a_piped_question_echoes_a_short_default_with_a_line_end_whole_and_its_look_alikes_escaped(
        served: Callable[[Any], Any]) -> None:
    # (the echo's cut counted the line end's "\\n" as one character: "a\\nb" came out as "...")
    import subprocess

    schema = {"type": "object", "properties": {"note": {"type": "string", "default": "a\nb"},
                                               "env": {"type": "string", "default": "st\u0430ging"}}}
    interrupt = Interrupt(id="i1", reason="input", response_schema=schema)
    endpoint = served(ScriptedAgent([[Start(), Finish(outcome=RunFinishedInterruptOutcome(interrupts=(interrupt,)))],
                                     [Start(), *text_message("m2", "done"), Finish()]]))

    done = subprocess.run([*AGUI, "run", endpoint.url, "-m", "hi", "--ask", "--plain"], input="",
                          capture_output=True, text=True, env=ENV, timeout=120, check=False)

    assert endpoint.received[1].body["resume"][0]["payload"] == {"note": "a\nb", "env": "st\u0430ging"}
    asked = done.stderr.replace("\n", "")  # (the prompt's console wraps at 80 columns off a terminal)
    assert "a\\nb (input ended: the default)" in asked
    assert "st\\u0430ging (input ended: the default)" in asked
    assert "default st\\u0430ging" in done.stdout  # (the panel's description of the field)


@pytest.mark.parametrize(("text", "shown"), [
    ("re\u0430d_file", "re\\u0430d_file"),          # a Cyrillic a
    ("\uff52ead_file", "\\uff52ead_file"),           # a fullwidth r
    ("rea\u0501_file", "rea\\u0501_file"),          # a Cyrillic komi de, a d look-alike
    ("\u627f\u8a8d", "\\u627f\\u8a8d"),            # a name in Chinese: its code points, here
    ("a\\u0430", "a\\\\u0430"),                    # the six characters: the backslash doubled
    ("read_file", "read_file"),
])
def test_a_name_at_the_approval_is_shown_in_ascii(text: str, shown: str) -> None:
    assert ascii_named(text) == shown


@pytest.mark.parametrize(("text", "shown"), [
    ("/etc/p\u0430sswd", "/etc/p\\u0430sswd"),                      # Cyrillic a in a Latin word
    ("paypal\u2024com", "paypal\\u2024com"),                        # a one-dot leader for the dot
    ("etc\u2215passwd", "etc\\u2215passwd"),                        # a division slash
    ("\U0001d41admin \ufb01le", "\\U0001d41admin \\ufb01le"),      # a bold a, a ligature
    ("\u0131d \u03bfk", "\\u0131d \\u03bfk"),                       # a dotless i, a Greek omicron
    ("caf\u00e9 Stra\u00dfe \u0142\u00f3d\u017a", "caf\u00e9 Stra\u00dfe \u0142\u00f3d\u017a"),  # Latin letters
    ("\u0434\u043e\u043c \u5220\u9664staging ok\U0001f44d", "\u0434\u043e\u043c \u5220\u9664staging ok\U0001f44d"),
    # a part of a URL, a path or a call wholly in look-alikes, joined to ASCII by punctuation (it read
    # as pay, sys and copy: the words were split at the dot, the slash and the bracket)
    ("https://\u0440\u0430\u0443.example.com", "https://\\u0440\\u0430\\u0443.example.com"),
    ("rm -rf /data/\u0455\u0443\u0455/", "rm -rf /data/\\u0455\\u0443\\u0455/"),
    ("\u0441\u043e\u0440\u0443(a)", "\\u0441\\u043e\\u0440\\u0443(a)"),
    ("\u0434\u043e\u043c, \u0441\u043e\u0440. 5 \u043a\u0433",
     "\u0434\u043e\u043c, \u0441\u043e\u0440. 5 \u043a\u0433"),                  # Russian, its punctuation
    ("pay 1\u041e0", "pay 1\\u041e0"),             # a Cyrillic O in a number: digits are ASCII too
    ("etc\u29f8passwd", "etc\\u29f8passwd"),        # a big solidus, which no decomposition makes a slash
])
def test_a_word_mixing_ascii_with_look_alikes_shows_them_escaped(text: str, shown: str) -> None:
    assert unmixed(text) == shown


#: A word of format characters only (RIGHT-TO-LEFT OVERRIDE): nothing in it is ASCII, so nothing mixes.
_LONG_WORD = "\u202e" * 100_000


def test_a_long_word_of_format_characters_at_the_approval_is_shown_at_once(served: Callable[[Any], Any]) -> None:
    # Whether a word mixed ASCII with other characters was asked of a regular expression that, in a word
    # with no ASCII letter, tried every start and ran to the word's end from each: the square of the word's
    # length. An interrupt whose question (or call arguments, or field description) was one word of
    # 100,000 U+202E (300 KB) held the prompt some fifty seconds per place, a megabyte for hours.
    schema = {"type": "object", "required": ["approved"],
              "properties": {"approved": {"type": "boolean", "description": _LONG_WORD}}}
    interrupt = Interrupt(id="i1", reason="approval", tool_call_id="c1", response_schema=schema, message=_LONG_WORD)
    endpoint = served(ScriptedAgent([
        [Start(), *tool_call("c1", "delete", {"path": _LONG_WORD}),
         Finish(outcome=RunFinishedInterruptOutcome(interrupts=(interrupt,)))],
        [Start(), *text_message("m2", "done"), Finish()],
    ]))
    child, screen = _agui_run(endpoint.url)
    try:
        child.expect(r"\[y/n\]")
        child.sendline("y")
        child.expect(pexpect.EOF)
    finally:
        child.close()

    panel = _panel(RICH_OWN.sub("", screen.getvalue()))
    assert "\u202e" not in panel and re.search(r"message: +\\u202e\\u202e", panel) is not None
    assert endpoint.received[1].body["resume"][0]["payload"] == {"approved": True}


#: `agui serve demo`, its demo agent replaced by an app that fails quoting the request's path, as an
#: unforeseen fault in the app would.
_FAILING_SERVE = """
import sys
from agui_client import testing
from agui_client.cli import main

async def failing(scope, receive, send):
    raise ValueError("no route for " + scope["path"])

testing.ScriptedAgent.demo = staticmethod(lambda: failing)
sys.exit(main(["serve", "demo", "--port", "0"]))
"""


def test_a_request_that_makes_agui_serve_fail_reaches_the_terminal_inert() -> None:
    child = pexpect.spawn(sys.executable, ["-c", _FAILING_SERVE], env=ENV, dimensions=(60, 200), timeout=30)
    child.logfile_read = received = io.BytesIO()
    try:
        child.expect(rb"at (http://127\.0\.0\.1:\d+/)")
        url = child.match.group(1).decode()
        # The path is sent percent-encoded, as any client may; the app receives it decoded.
        assert httpx.get(url + "%1b]0;PWNED%07%c2%9b2J%1b[2J").status_code == 500
        child.expect(rb"no route for ")
        child.expect(rb"Ctrl-C stops|\n")
        child.sendintr()
        child.expect(pexpect.EOF)
    finally:
        child.close()

    text = received.getvalue().decode("utf-8")
    assert "Exception in ASGI application" in text
    assert "\x1b]0;PWNED" not in text and "\x9b" not in text and "\x1b[2J" not in text
    assert re.search(r"no route for /\\x1b\]0;PWNED\\x07\\x9b2J\\x1b\[2J", text), text[-2000:]


#: Twelve marks on a Z ("Zalgo"), then words whose marks belong (Vietnamese, pointed Hebrew).
ZALGO = "Z" + "\u0301\u0302\u0303\u0304\u0305\u0306\u0307\u0308\u0309\u030a\u030b\u030c"
KEPT = "Vi\u1ec7t e\u0302\u0323 \u05d1\u05bc\u05b8\u0591"
#: A run of five combining marks or more on the screen.
PILE = re.compile("[\u0300-\u036f\u0591-\u05c7]{5,}")


def test_a_pile_of_combining_marks_is_cut_to_four_in_text_names_and_deltas(served: Callable[[Any], Any]) -> None:
    # The message comes one mark a delta, so each delta on its own holds one mark only.
    deltas = [TextMessageContentEvent(message_id="m1", delta=char) for char in f"{ZALGO} {KEPT} {ZALGO}"]
    endpoint = served(ScriptedAgent([[Start(), TextMessageStartEvent(message_id="m1"), *deltas,
                                      TextMessageEndEvent(message_id="m1"), *tool_call("c1", "go" + ZALGO[1:], {}),
                                      *text_message("m2", f"whole: {ZALGO}"), Finish()]]))
    child, screen = _agui_run(endpoint.url)
    try:
        child.expect(pexpect.EOF)
    finally:
        child.close()

    text = RICH_OWN.sub("", screen.getvalue())
    assert PILE.search(text) is None, PILE.search(text)
    kept, escaped = ZALGO[:5], "\\u0305\\u0306\\u0307\\u0308\\u0309\\u030a\\u030b\\u030c"
    assert text.count(kept + escaped) == 4  # twice one mark a delta, whole, and in the summary's final message
    assert "go" + ZALGO[1:5] + escaped in text  # the tool's name
    assert KEPT in text


@pytest.mark.parametrize("text", ["e\u0301\u0301\ufe0f\u0301\u0301", "\u05b8\ufe0f\u05b8\u05b8\u05b8"])
def test_a_selector_between_combining_marks_is_not_counted_among_them(text: str) -> None:
    # Four marks, a variation selector among them: the selectors have their own rule, and counted as a
    # fifth mark they escaped the last of four a Hebrew or Vietnamese word may stack.
    assert STACKED_MARKS == 4 and visible(text) == text


# --------------------------------------------------------------------------------------------------
# The sequences the earlier passes did not send, through every way out of `agui replay` and `verify`
# --------------------------------------------------------------------------------------------------

#: NUL; APC, PM and SOS strings in their 7-bit and C1 forms; an OSC 8 hyperlink; a line written over by
#: CR and by backspaces; a wide CJK name and an emoji ZWJ sequence (column layout).
SEQUENCES = ("<\x00|\x1b_APC\x1b\\|\x1b^PM\x1b\\|\x9fapc\x9c|\x9epm\x9c|\x98sos\x9c|"
             "\x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\|safe\rDANGER|safe\x08\x08\x08\x08DANGER>")
SEQUENCES_SHOWN = ("\\x00", "\\x1b_APC\\x1b\\", "\\x1b^PM\\x1b\\", "\\x9fapc\\x9c", "\\x9epm\\x9c", "\\x98sos\\x9c",
                   "\\x1b]8;;http://evil.example/\\x1b\\click", "safe\\rDANGER", "safe\\x08\\x08\\x08\\x08DANGER")
#: Never on the screen: C0 but tab and newline, DEL and C1.
CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
WIDE = "\u540d\u524d\U0001f468\u200d\U0001f469\u200d\U0001f467"
#: A tool name of 100 KiB.
HUGE = "n" * 102_400


def _sequences_recording(tmp_path: Any) -> str:
    import json

    events = [
        {"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"},
        {"type": "STATE_SNAPSHOT", "snapshot": {SEQUENCES: SEQUENCES, WIDE: WIDE}},
        {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": SEQUENCES},
        {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
        {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": HUGE},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": json.dumps({"k": SEQUENCES})},
        {"type": "TOOL_CALL_END", "toolCallId": "c1"},
        {"type": "TOOL_CALL_START", "toolCallId": "c2", "toolCallName": WIDE},
        {"type": "TOOL_CALL_END", "toolCallId": "c2"},
        {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1", "outcome": {"type": "interrupt", "interrupts": [
            {"id": "i1", "reason": SEQUENCES, "message": SEQUENCES, "toolCallId": "c1"}]}},
    ]
    path = tmp_path / "sequences.jsonl"
    path.write_text("".join(json.dumps(event) + "\n" for event in events))
    return str(path)


def test_apc_pm_sos_osc8_nul_and_overwrites_reach_no_way_out_raw(tmp_path: Any) -> None:
    import json

    capture = _sequences_recording(tmp_path)
    child = pexpect.spawn(sys.executable, [*AGUI[1:], "replay", capture], env=ENV, dimensions=(60, 200),
                          timeout=60, encoding="utf-8")
    child.logfile_read = screen = io.StringIO()
    try:
        child.expect(pexpect.EOF)
    finally:
        child.close()
    piped = agui_here("replay", capture)  # (the terminal above is the real process; these run here)
    as_json = agui_here("replay", "--json", capture)

    terminal = RICH_OWN.sub("", screen.getvalue())
    for text in (terminal, piped.stdout):
        assert CONTROLS.search(text) is None, CONTROLS.search(text)
        assert "n" * 121 not in text and "n" * 120 + "...#" in text  # the 100 KiB name, cut
        assert WIDE in text  # (shown as it is: rich measures it as the terminal draws it)
    for shown in SEQUENCES_SHOWN:
        assert shown in piped.stdout, shown
    assert "interrupt: <\\x00|\\x1b_APC" in terminal
    assert CONTROLS.search(as_json.stdout) is None
    report = json.loads(as_json.stdout)
    assert report["messages"][0]["content"] == SEQUENCES and report["state"][SEQUENCES] == SEQUENCES
    assert report["messages"][1]["toolCalls"][0]["function"]["name"] == HUGE  # (--json is never cut)
