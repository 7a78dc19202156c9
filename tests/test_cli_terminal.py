"""What a terminal receives from ``agui``: nothing an agent or a recording sent can act on it.

Every string the agent controls (message text, reasoning, tool names and arguments, state keys and
values, interrupt reasons, messages and schema titles and descriptions, RUN_ERROR, an HTTP error
body, an unknown event's type) carries the same hostile string: OSC title and clipboard writes, a
screen clear, a cursor position request (the terminal would type its answer into stdin), a DCS
request, their 8-bit C1 forms, BEL, BS, a bare CR, DEL, bidi overrides and isolates, zero-width and
tag characters, a line separator, and rich markup. The commands run through a real pseudo-terminal
(rich output: colours, a spinner, panels, prompts) and piped (plain output: in this process through
``clikit``, and as real processes for ``replay`` and ``run``); the raw bytes are checked for every
such character, and for the visible form each must be shown in instead (so a test that printed
nothing at all would fail).
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pexpect
from clikit import ENV, RanBytes, agui_here_bytes, agui_process_bytes

from agui_client.testing import Finish, Respond, ScriptedAgent, Start, reasoning, text_message, tool_call
from agui_client.types import (
    RunErrorEvent,
    StateSnapshotEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
)
from agui_client.types.run import Interrupt, RunFinishedInterruptOutcome

HOSTILE = (
    "<\x1b]0;PWNED\x07|\x1b]52;c;cHduZWQ=\x07|\x1b[2J\x1b[H|\x1b[6n|\x1bP+q544e\x1b\\|\x9b6n|\x9d0;T\x9c|\x90q\x9c"
    "|\x07|\x08|over\rwrite|\x7f|\u202eevil\u202c|\u2066x\u2069|\u200b|\U000e0041|a\u2028b"
    "|[bold red]MU[/bold red]|[link=http://evil.example/]LK[/link]|:warning:|crlf\r\nok>"
)

#: What the terminal must never receive from the agent: C0 controls but tab and newline, DEL, C1,
#: bidi embeddings/overrides/isolates, zero-width space, line/paragraph separators, tag characters.
FORBIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b\u202a-\u202e\u2066-\u2069\u2028\u2029\U000e0000-\U000e007f]")
#: What rich itself writes on a terminal: SGR styles, the spinner's cursor hiding and line erasing,
#: and the CR that goes back over the spinner's line; a pty turns each newline into CR LF.
RICH_OWN = re.compile(r"\x1b\[[0-9;]*m|\x1b\[\?25[hl]|\x1b\[2K|\x1b\[[0-9]*A|\r\n|\r(?=\x1b\[(?:2K|1A))")
#: Markers that show what was sent, as written near the start of the hostile string (where no
#: table or panel wraps them).
SHOWN = ("\\x1b]0;PWNED\\x07", "\\x1b]52;c;")
SHOWN_ANYWHERE = ("\\x9b6n", "\\x9d0;T\\x9c", "\\x90q\\x9c", "over\\rwrite", "\\x7f", "\\u202e", "\\u2066",
                  "\\u200b", "\\U000e0041", "\\u2028", "[bold red]MU[/bold red]", "[link=http://evil.example/]LK")


def assert_inert(raw: bytes, *, terminal: bool, everywhere: bool = True) -> str:
    """Check ``raw`` (what the terminal or pipe received); returns it as text, rich's own codes removed."""
    text = raw.decode("utf-8")
    if terminal:
        text = RICH_OWN.sub("", text)
    found = FORBIDDEN.search(text)
    assert found is None, f"{found.group()!r} reached the terminal: {text[max(0, found.start() - 60):found.end()]!r}"
    for marker in SHOWN + (SHOWN_ANYWHERE if everywhere else ()):
        assert marker in text, f"{marker} is not shown"
    return text


def _spawn(*args: str) -> tuple[pexpect.spawn, io.BytesIO]:
    env = {**ENV, "TERM": "xterm-256color"}
    env.pop("NO_COLOR")
    child = pexpect.spawn(sys.executable, ["-m", "agui_client.cli", *args], env=env, dimensions=(60, 500),
                          timeout=30)
    received = io.BytesIO()
    child.logfile_read = received
    return child, received


def _on_terminal(*args: str) -> tuple[int, bytes]:
    child, received = _spawn(*args)
    try:
        child.expect(pexpect.EOF)
    finally:
        child.close()
    return child.exitstatus, received.getvalue()


def _piped(*args: str, stdin: bytes | None = None) -> RanBytes:
    """``agui ARGS`` in this process, piped (``clikit``): the bytes the CLI writes, without a process start."""
    return agui_here_bytes(*args, stdin=stdin)


# --------------------------------------------------------------------------------------------------
# Recordings: agui replay, agui verify
# --------------------------------------------------------------------------------------------------

SCHEMA: dict[str, Any] = {"type": "object", "title": HOSTILE, "required": ["approved"], "properties": {
    "approved": {"type": "boolean", "description": HOSTILE},
    "env": {"enum": ["safe", HOSTILE], "default": "safe", "title": HOSTILE},
}}

RECORDING: list[dict[str, Any]] = [
    {"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"},
    {"type": "STATE_SNAPSHOT", "snapshot": {HOSTILE: HOSTILE}},
    {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": HOSTILE},
    {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
    {"type": "REASONING_MESSAGE_START", "messageId": "rm1", "role": "reasoning"},
    {"type": "REASONING_MESSAGE_CONTENT", "messageId": "rm1", "delta": HOSTILE},
    {"type": "REASONING_MESSAGE_END", "messageId": "rm1"},
    {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": HOSTILE},
    {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": json.dumps({"k": HOSTILE})},
    {"type": "TOOL_CALL_END", "toolCallId": "c1"},
    {"type": "X" + HOSTILE},
    {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1", "outcome": {"type": "interrupt", "interrupts": [
        {"id": "i1", "reason": HOSTILE, "message": HOSTILE, "responseSchema": SCHEMA}]}},
]
#: A recording that breaks the protocol (content for a message never started); the error names the run.
BROKEN: list[dict[str, Any]] = [
    {"type": "RUN_STARTED", "threadId": HOSTILE, "runId": HOSTILE},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": HOSTILE, "delta": HOSTILE},
    {"type": "RUN_ERROR", "message": HOSTILE, "code": HOSTILE},
]


def _write(path: Path, events: list[dict[str, Any]], *, sse: bool = False) -> str:
    if sse:
        path.write_text("".join(f"data: {json.dumps(e)}\n\n" for e in events))
    else:
        path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return str(path)


def test_replay_on_a_terminal_shows_the_recordings_strings_inert(tmp_path: Path) -> None:
    capture = _write(tmp_path / "hostile.sse", RECORDING, sse=True)

    status, raw = _on_terminal("replay", capture)

    assert status == 0
    text = assert_inert(raw, terminal=True)
    assert "\x1b]8;" not in raw.decode()  # no hyperlink from the [link=…] markup
    assert "interrupt: <\\x1b]0;PWNED" in text  # the interrupt's reason, in its panel's title


def test_replay_piped_shows_the_recordings_strings_inert(tmp_path: Path) -> None:
    capture = _write(tmp_path / "hostile.jsonl", RECORDING)

    done = agui_process_bytes("replay", capture)

    assert done.returncode == 0, done.stderr
    text = assert_inert(done.stdout, terminal=False)
    assert "\x1b" not in done.stdout.decode()
    # Plain output is not wrapped: the message is shown whole, CRLF as a line end.
    assert ("assistant: <\\x1b]0;PWNED\\x07|\\x1b]52;c;cHduZWQ=\\x07|\\x1b[2J\\x1b[H|\\x1b[6n|\\x1bP+q544e\\x1b\\|"
            "\\x9b6n|\\x9d0;T\\x9c|\\x90q\\x9c|\\x07|\\x08|over\\rwrite|\\x7f|\\u202eevil\\u202c|\\u2066x\\u2069|"
            "\\u200b|\\U000e0041|a\\u2028b|[bold red]MU[/bold red]|[link=http://evil.example/]LK[/link]|:warning:"
            "|crlf\nok>") in text


def test_a_protocol_error_quoting_the_recording_is_shown_inert(tmp_path: Path) -> None:
    capture = _write(tmp_path / "broken.jsonl", BROKEN)

    status, raw = _on_terminal("replay", capture)
    piped = _piped("replay", capture)

    assert status == 1 and piped.returncode == 1
    assert "run <\\x1b]0;PWNED" in assert_inert(raw, terminal=True, everywhere=False)
    assert "run <\\x1b]0;PWNED" in assert_inert(piped.stdout + piped.stderr, terminal=False, everywhere=False)


def test_verify_on_a_terminal_and_piped_shows_findings_inert(tmp_path: Path) -> None:
    capture = _write(tmp_path / "hostile.jsonl", RECORDING + BROKEN[1:])

    status, raw = _on_terminal("verify", capture)
    piped = _piped("verify", capture)

    assert status == 1 and piped.returncode == 1
    assert_inert(raw, terminal=True, everywhere=False)  # (a table cell wraps the rest anywhere)
    # (the findings quote the agent's id as every message quotes one: cut past 100 characters, with a
    # digest of the whole, so only the markers near its start are shown)
    text = assert_inert(piped.stdout, terminal=False, everywhere=False)
    assert "...#" in text


def test_json_output_is_json_with_the_hostile_characters_escaped(tmp_path: Path) -> None:
    # --json keeps non-ASCII text readable (ensure_ascii=False) but writes DEL, C1, bidi, zero-width
    # and tag characters as \u escapes: the same strings once parsed, nothing raw on a terminal.
    capture = _write(tmp_path / "hostile.jsonl",
                     [*RECORDING[:-1], {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/w", "value": "café"}]},
                      RECORDING[-1]])

    replayed = _piped("replay", "--json", capture)
    verified = _piped("verify", "--json", capture)

    for done in (replayed, verified):
        assert FORBIDDEN.search(done.stdout.decode("utf-8")) is None
    report = json.loads(replayed.stdout)
    assert report["state"] == {HOSTILE: HOSTILE, "w": "café"}
    assert report["messages"][0]["content"] == HOSTILE
    assert report["openInterrupts"][0]["responseSchema"] == SCHEMA
    assert "café" in replayed.stdout.decode("utf-8")
    findings = json.loads(verified.stdout)["findings"]
    assert findings[0]["eventType"] == "X" + HOSTILE


# --------------------------------------------------------------------------------------------------
# A live agent: agui run
# --------------------------------------------------------------------------------------------------


def _hostile_agent() -> ScriptedAgent:
    interrupt = Interrupt(id="i1", reason=HOSTILE, message=HOSTILE, response_schema=SCHEMA)
    return ScriptedAgent([
        [Start(), StateSnapshotEvent(snapshot={HOSTILE: HOSTILE}), *reasoning("r1", HOSTILE),
         *text_message("m1", HOSTILE), *tool_call("c1", HOSTILE, {"k": HOSTILE}, result=HOSTILE),
         Finish(outcome=RunFinishedInterruptOutcome(interrupts=(interrupt,)))],
        [Start(), RunErrorEvent(message=HOSTILE, code=HOSTILE)],
    ])


def test_run_on_a_terminal_asks_and_shows_the_agents_strings_inert(served: Callable[[Any], Any]) -> None:
    endpoint = served(_hostile_agent())

    child, received = _spawn("run", endpoint.url, "-m", "hi")
    try:
        child.expect(rb"\[y/n\]")  # approved, described by the agent
        child.sendline(b"maybe")
        child.expect(rb"Please enter Y or N")  # (rich's own note, its markup read as such)
        child.expect(rb"\[y/n\]")
        child.sendline(b"y")
        child.expect(rb"\(safe\)")  # env: a choice among the agent's values
        child.sendline(b"")
        child.expect(pexpect.EOF)
    finally:
        child.close()

    assert child.exitstatus == 1  # the resumed run ends with RUN_ERROR
    assert endpoint.received[1].body["resume"][0]["payload"] == {"approved": True, "env": "safe"}
    text = assert_inert(received.getvalue(), terminal=True, everywhere=False)
    for marker in SHOWN_ANYWHERE:  # each string is shown somewhere whole (the stream is not wrapped)
        assert marker in text
    assert "RUN_ERROR" in text and "[prompt.invalid]" not in text


def test_run_piped_shows_the_agents_strings_inert(served: Callable[[Any], Any]) -> None:
    endpoint = served(_hostile_agent())

    done = agui_process_bytes("run", endpoint.url, "-m", "hi", "--yes")

    assert done.returncode == 1
    text = assert_inert(done.stdout + done.stderr, terminal=False)
    assert "\x1b" not in text
    assert "RUN_ERROR" in text and "error: <\\x1b]0;PWNED" in text  # the summary's error row


def test_run_json_lines_carry_the_agents_strings_escaped(served: Callable[[Any], Any]) -> None:
    endpoint = served(_hostile_agent())

    done = _piped("run", endpoint.url, "-m", "hi", "--yes", "--json")

    assert done.returncode == 1
    assert FORBIDDEN.search(done.stdout.decode("utf-8")) is None
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert {"type": "RUN_ERROR", "message": HOSTILE, "code": HOSTILE} in lines
    assert lines[-1]["state"] == {HOSTILE: HOSTILE}
    assert FORBIDDEN.search(done.stderr.decode("utf-8")) is None


def test_a_crlf_split_between_two_tokens_is_one_line_end_and_a_bare_cr_is_shown(
        served: Callable[[Any], Any]) -> None:
    deltas = ["one\r", "\ntwo\r", "three\r"]
    endpoint = served(ScriptedAgent([[
        Start(), TextMessageStartEvent(message_id="m1"),
        *(TextMessageContentEvent(message_id="m1", delta=delta) for delta in deltas),
        TextMessageEndEvent(message_id="m1"), Finish()]]))

    done = _piped("run", endpoint.url, "-m", "hi")

    assert done.returncode == 0, done.stderr
    assert b"\r" not in done.stdout
    assert b"assistant: one\ntwo\\rthree\\r\n" in done.stdout


def test_an_http_error_body_is_shown_inert(served: Callable[[Any], Any]) -> None:
    endpoint = served(ScriptedAgent([Respond(status=500, body=HOSTILE), Respond(status=500, body=HOSTILE)]))

    status, raw = _on_terminal("run", endpoint.url, "-m", "hi")
    piped = _piped("run", endpoint.url, "-m", "hi")

    assert status == 1 and piped.returncode == 1
    assert "HTTP 500" in assert_inert(raw, terminal=True, everywhere=False)
    assert "HTTP 500" in assert_inert(piped.stdout, terminal=False, everywhere=False)


# --------------------------------------------------------------------------------------------------
# The boundary itself
# --------------------------------------------------------------------------------------------------


def test_the_cli_console_keeps_every_renderable_inert_even_built_without_the_helpers() -> None:
    # A renderer that forgets safe_text, or hands rich a markup title, a table of strings, JSON or
    # segments of its own, still cannot put a control character or a hyperlink on the terminal.
    from rich.json import JSON
    from rich.panel import Panel
    from rich.segment import Segment
    from rich.table import Table
    from rich.text import Text

    from agui_client.cli.terminal import SafeConsole

    class Raw:
        def __rich_console__(self, console: Any, options: Any) -> Any:
            yield Segment(HOSTILE + "\n")

    table = Table()
    table.add_column(HOSTILE)
    table.add_row(HOSTILE)
    sink = io.StringIO()
    console = SafeConsole(file=sink, force_terminal=True, color_system="truecolor", width=500)
    console.print(HOSTILE)
    console.print(Text(HOSTILE, style="bold"))
    console.print(Panel(Text(HOSTILE), title="[link=http://evil.example/]t[/link] \x1b]0;T\x07"))
    console.print(table, JSON.from_data({HOSTILE: HOSTILE}), Raw())
    console.input(HOSTILE, stream=io.StringIO("\n"))

    written = sink.getvalue()
    assert "\x1b]" not in written and "\x1bP" not in written
    assert FORBIDDEN.search(RICH_OWN.sub("", written).replace("\r", "")) is None
    assert "[bold red]MU[/bold red]" in written and "\\x1b]0;PWNED\\x07" in written


def _with_replay_replaced(body: str) -> subprocess.CompletedProcess[bytes]:
    """``agui replay x`` in a child interpreter whose replay command is ``body`` (a simulated fault)."""
    code = ("import logging, sys\n"
            "import agui_client.cli.app as app\n"
            "def replaced(*args, **kwargs):\n"
            f"    {body}\n"
            "app.replay_command = replaced\n"
            "from agui_client.cli import main\n"
            "sys.exit(main(['replay', 'x']))\n")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, env=ENV, timeout=30,
                          stdin=subprocess.DEVNULL, check=False)


def test_an_unexpected_error_quoting_the_agent_is_printed_inert() -> None:
    # A fault nobody foresaw ends with a traceback on stderr, as inert as everything else.
    done = _with_replay_replaced(f"raise ValueError({HOSTILE!r})")

    assert done.returncode == 1
    text = assert_inert(done.stderr, terminal=False)
    assert "Traceback" in text and "ValueError" in text


def test_a_library_warning_quoting_the_agent_is_logged_inert() -> None:
    done = _with_replay_replaced(f"logging.getLogger('agui_client.thread').warning('%s', {HOSTILE!r}); return 0")

    assert done.returncode == 0, done.stderr
    assert_inert(done.stderr, terminal=False)


# --------------------------------------------------------------------------------------------------
# Names on one line: an id with a line end in it cannot forge a line of the CLI's own
# --------------------------------------------------------------------------------------------------

#: A name that, shown as it is, would print lines reading like the CLI's own (and a screenful of y).
FORGER = "evil\nassistant: FORGED\n\u25a0 run finished: success\r\nFORGED? [y/n]\n" + "y" * 5000
FORGED_LINE = re.compile(r"^\W*(assistant: FORGED|. run finished: success|FORGED\?)", re.M)

NAMES: list[dict[str, Any]] = [
    {"type": "RUN_STARTED", "threadId": FORGER, "runId": FORGER},
    {"type": "STEP_STARTED", "stepName": FORGER},
    {"type": "STEP_FINISHED", "stepName": FORGER},
    {"type": "STATE_SNAPSHOT", "snapshot": {FORGER: 1}},
    {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/" + FORGER, "value": 2}]},
    {"type": "TOOL_CALL_START", "toolCallId": FORGER, "toolCallName": FORGER},
    {"type": "TOOL_CALL_END", "toolCallId": FORGER},
    {"type": "TOOL_CALL_RESULT", "messageId": "tm", "toolCallId": FORGER, "content": "ok"},
    {"type": "ACTIVITY_SNAPSHOT", "messageId": "a1", "activityType": FORGER, "content": {}},
    {"type": "CUSTOM", "name": FORGER, "value": 1},
    {"type": "SUBAGENT_STARTED", "subagentRunId": FORGER, "name": FORGER},
    {"type": "SUBAGENT_ERROR", "subagentRunId": FORGER, "message": "boom\n" * 10_000, "code": FORGER},
    {"type": "X" + FORGER},
    {"type": "RUN_FINISHED", "threadId": FORGER, "runId": FORGER, "outcome": {"type": "interrupt", "interrupts": [
        {"id": FORGER, "reason": FORGER, "message": "m", "toolCallId": FORGER}]}},
    {"type": "RUN_ERROR", "message": "late\n" * 10_000, "code": FORGER},
]


def _forged(text: str) -> list[str]:
    return FORGED_LINE.findall(text)


def _terminal_text(raw: bytes) -> str:
    """What a terminal shows (its lines kept), after checking nothing in it acts on the terminal."""
    text = RICH_OWN.sub("", raw.decode("utf-8").replace("\r\n", "\n"))
    found = FORBIDDEN.search(text)
    assert found is None, f"{found.group()!r} reached the terminal"
    return text


def test_names_with_line_ends_are_shown_on_one_line_in_replay_and_verify(tmp_path: Path) -> None:
    # Tool names, ids, types, step and activity names were printed as they came: a line end in one
    # printed lines of the agent's choosing, reading like the CLI's own.
    path = _write(tmp_path / "names.jsonl", NAMES)

    status, raw = _on_terminal("replay", path)
    replayed = _piped("replay", path)
    verified = _piped("verify", path)

    assert status == 0 and replayed.returncode == 0 and verified.returncode == 0
    for text in (_terminal_text(raw), replayed.stdout.decode("utf-8"), verified.stdout.decode("utf-8")):
        assert not _forged(text)
        assert "evil\\nassistant: FORGED" in text  # (shown, on its line)
        # (a name is cut, not a screenful; the state's JSON, which is data, is shown whole)
        assert all(len(line) < 1200 for line in text.splitlines() if '"evil' not in line)


def test_names_and_error_floods_are_bounded_in_a_live_run(served: Callable[[Any], Any]) -> None:
    body = "".join(f"data: {json.dumps(event)}\n\n" for event in NAMES).encode()
    endpoint = served(ScriptedAgent([Respond(status=200, body=body, content_type="text/event-stream")]))

    done = _piped("run", endpoint.url, "-m", "hi", "--yes")
    status, raw = _on_terminal("run", endpoint.url, "-m", "hi", "--yes")

    text = done.stdout.decode("utf-8") + done.stderr.decode("utf-8")
    assert done.returncode != 0 or "interrupt" in text
    for shown in (text, _terminal_text(raw)):
        assert not _forged(shown)
        assert "evil\\nassistant: FORGED" in shown
        assert shown.count("boom") <= 41 and "more lines)" in shown  # (a 10,000-line error in 40 lines)


def test_a_form_shows_the_agents_field_names_on_one_line_and_a_long_enum_in_part(
        served: Callable[[Any], Any]) -> None:
    # A property named with line ends forged lines in the form's prompts, and rich listed every one of
    # an enum's 5,000 values in the prompt.
    values = [f"v{i}" for i in range(5000)] + [FORGER]
    schema = {"type": "object", "required": [FORGER], "properties": {
        FORGER: {"enum": values, "default": "v0", "description": FORGER}}}
    interrupt = Interrupt(id="i1", reason="pick", response_schema=schema)
    endpoint = served(ScriptedAgent([[Start(), Finish(outcome=RunFinishedInterruptOutcome(interrupts=(interrupt,)))],
                                     [Start(), Finish()]]))

    child, received = _spawn("run", endpoint.url, "-m", "hi")
    try:
        child.expect(rb"\(v0\)")  # (the default, shown: it is short)
        child.sendline(b"")
        child.expect(pexpect.EOF)
    finally:
        child.close()

    assert child.exitstatus == 0
    assert endpoint.received[1].body["resume"][0]["payload"] == {FORGER: "v0"}
    text = _terminal_text(received.getvalue())
    assert _forged(text) == ["\u25a0 run finished: success"]  # (the resumed run's own line)
    assert "evil\\nassistant: FORGED" in text and "v19|... (4981 more)" in text
    assert "v4999" not in text  # (the answer line is the JSON sent, key whole: data, on one line)
