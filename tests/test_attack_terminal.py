"""The terminal, second pass: what an agent can still put on the user's terminal through ``agui``.

Characters that render as nothing or as a blank (a Hangul filler, a variation selector, U+2800) made
two different interrupt ids, tool names or thread ids read the same; ids cut at 120 characters read the
same when they differed after the cut; ``--yes`` echoed a default answer of a megabyte whole; a refused
resume named the agent's ids in its message as the agent wrote them. Each test drives ``agui`` through a
real pseudo-terminal (or piped, in this process, where the plain output is the point) against an agent on 127.0.0.1,
and fails without its fix (CHANGELOG, "Fourteenth round: the terminal, second pass").
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pexpect
import pytest
from clikit import Ran, agui_here

from agui_client.testing import Finish, ScriptedAgent, Start, text_message, tool_call
from agui_client.types.run import Interrupt, RunFinishedInterruptOutcome

AGUI = [sys.executable, "-m", "agui_client.cli"]
ENV = {**os.environ, "PYTHONIOENCODING": "utf-8", "NO_COLOR": "1"}
ENV.pop("FORCE_COLOR", None)
#: What rich writes of its own on a terminal (styles, the spinner's line erasing); a pty's CR LF.
RICH_OWN = re.compile(r"\x1b\[[0-9;?]*[a-zA-Z]|\r(?=\n)|\r(?=\x1b)")
#: Characters that show as nothing or as a blank, which no id on the screen may carry raw.
UNSEEN = re.compile("[\u3164\uffa0\u115f\u1160\u2800\ufe0f\ufe00\u034f\u00ad\u2060\ufeff\U000e0041]")

ALIKE = ["approve", "approve\u3164", "approve\ufe0f", "approve\u2800", "appro\u00adve"]
LONG = ["L" * 200 + "1", "L" * 200 + "2"]
CUT = re.compile(r"L{120}\.\.\.#([0-9a-f]{8})")


def _spawned(*args: str, columns: int, encoding: str | None = None) -> pexpect.spawn:
    """``agui ARGS`` in a colour terminal of 60 lines and ``columns`` columns, its output kept in
    ``child.logfile_read`` (bytes, or text with ``encoding``)."""
    env = {**ENV, "TERM": "xterm-256color"}
    env.pop("NO_COLOR")
    child = pexpect.spawn(sys.executable, ["-m", "agui_client.cli", *args], env=env, dimensions=(60, columns),
                          timeout=60, encoding=encoding)
    child.logfile_read = io.BytesIO() if encoding is None else io.StringIO()
    return child


def _on_terminal(*args: str, columns: int = 400) -> str:
    child = _spawned(*args, columns=columns)
    try:
        child.expect(pexpect.EOF)
    finally:
        child.close()
    return RICH_OWN.sub("", child.logfile_read.getvalue().decode("utf-8"))


def _piped(*args: str) -> Ran:
    """``agui ARGS`` piped, in this process (``clikit``: the plain output without an interpreter start)."""
    return agui_here(*args)


def _asking(interrupts: list[Interrupt]) -> ScriptedAgent:
    return ScriptedAgent([
        [Start(), Finish(outcome=RunFinishedInterruptOutcome(interrupts=tuple(interrupts)))],
        [Start(), *text_message("m2", "done"), Finish()],
    ])


SCHEMA: dict[str, Any] = {"type": "object", "properties": {"approved": {"type": "boolean", "default": True}}}


def test_interrupt_ids_that_differ_only_in_invisible_characters_or_after_the_cut_read_differently(
        served: Callable[[Any], Any]) -> None:
    endpoint = served(_asking([Interrupt(id=i, reason="approval", response_schema=SCHEMA) for i in ALIKE + LONG]))

    text = _on_terminal("run", endpoint.url, "-m", "hi", "--yes")

    assert UNSEEN.search(text) is None, UNSEEN.search(text)
    for shown in ("approve\\u3164", "approve\\ufe0f", "approve\\u2800", "appro\\xadve"):
        assert f"answer to {shown}: " in text
    assert "answer to approve: " in text
    digests = {m.group(1) for m in CUT.finditer(text)}
    assert len(digests) == 2, digests  # one per long id, the same wherever it is shown
    assert "L" * 121 not in text
    assert endpoint.received[1].body["resume"][-1]["interruptId"] == LONG[1]  # (sent whole, as it came)


def test_tool_names_and_a_thread_id_that_differ_only_in_invisible_characters_read_differently(
        served: Callable[[Any], Any]) -> None:
    endpoint = served(ScriptedAgent([[Start(), *tool_call("c1", "delete\u3164", {"a": 1}),
                                      *tool_call("c2", "delete\U000e0041", {"a": 2}), Finish()]]))

    text = _on_terminal("run", endpoint.url, "-m", "hi", "--thread-id", "t\u2800\u3164")

    assert UNSEEN.search(text) is None
    assert "delete\\u3164" in text and "delete\\U000e0041" in text
    assert "t\\u2800\\u3164" in text


def test_the_yes_echo_of_a_large_default_answer_is_cut(served: Callable[[Any], Any]) -> None:
    big = "x" * 400_000  # (a schema holds at most a million characters)
    schema = {"type": "object", "properties": {"note": {"type": "string", "default": big}}}
    endpoint = served(_asking([Interrupt(id="i1", reason="input", response_schema=schema)]))

    text = _on_terminal("run", endpoint.url, "-m", "hi", "--yes")
    piped = _piped("run", endpoint.url, "-m", "hi", "--yes")

    assert endpoint.received[1].body["resume"][0]["payload"] == {"note": big}  # (sent whole)
    for shown in (text, piped.stdout):
        echo = next(line for line in shown.splitlines() if line.startswith("answer to i1: "))
        assert len(echo) < 500 and "more characters)" in echo, echo[:600]
        assert "x" * 1000 not in shown


def test_a_refused_resume_names_the_agents_ids_escaped_and_cut(served: Callable[[Any], Any]) -> None:
    # The refusal's message quoted each id as repr writes it: a Hangul filler or a variation selector
    # raw, and a long id cut at 96 characters with nothing to tell two apart.
    schema = {"type": "object", "required": ["reason"], "properties": {"reason": {"type": "string"}}}
    ids = ["M" * 300 + "1\u3164", "M" * 300 + "2\ufe0f"]
    endpoint = served(_asking([Interrupt(id=i, reason="input", response_schema=schema) for i in ids]))

    text = _on_terminal("run", endpoint.url, "-m", "hi", "--answer", '{"other": 1}')
    piped = _piped("run", endpoint.url, "-m", "hi", "--answer", '{"other": 1}')

    for shown in (text, piped.stdout):
        refusal = shown[shown.index("answer refused"):]
        assert UNSEEN.search(refusal) is None
        assert "M" * 150 not in refusal
        digests = set(re.findall(r"M{50,}\.\.\.#([0-9a-f]{8})", refusal))
        assert len(digests) == 2, refusal[:2000]


def test_the_chats_answer_echo_and_transcript_note_are_cut_and_on_one_line(
        served: Callable[[Any], Any], tmp_path: Path) -> None:
    big = "y" * 300_000
    schema = {"type": "object", "properties": {"note": {"type": "string", "default": big}}}
    endpoint = served(_asking([Interrupt(id="i1", reason="input\n## You\n\nforged", response_schema=schema)]))
    export = tmp_path / "chat.md"
    child = _spawned("chat", endpoint.url, columns=200, encoding="utf-8")
    screen = child.logfile_read
    try:
        child.expect("you: ")
        child.sendline("hi")
        child.expect("note")
        child.sendline("")
        child.expect("done")
        child.expect("you: ")
        child.sendline(f"/export {export}")
        child.expect("exported")
        child.expect("you: ")
        child.sendline("/quit")
        child.expect(pexpect.EOF)
    finally:
        child.close()

    assert endpoint.received[1].body["resume"][0]["payload"] == {"note": big}
    text = RICH_OWN.sub("", screen.getvalue())
    echo = next(line for line in text.splitlines() if line.startswith("answer: "))
    assert len(echo) < 500 and "more characters)" in echo
    written = export.read_text(encoding="utf-8")
    assert "y" * 1000 not in written
    assert "> answer to input\\n## You\\n\\nforged: " in written
    assert not any(line == "forged" or line.startswith("forged") for line in written.splitlines())


# --------------------------------------------------------------------------------------------------
# The audit: every other way out of the CLI
# --------------------------------------------------------------------------------------------------


def test_an_argparse_error_quoting_the_value_given_is_inert_and_cut() -> None:
    # argparse wrote its own errors raw, quoting the value (pasted, perhaps, from an agent's words).
    done = _piped("run", "http://127.0.0.1:9/agent", "--legacy-interrupts", "x\u3164" + "v" * 100_000)

    assert done.returncode == 2
    assert "invalid choice" in done.stderr and "x\\u3164" in done.stderr
    assert UNSEEN.search(done.stderr) is None and len(done.stderr) < 10_000


def test_an_unforeseen_faults_traceback_and_a_usage_problem_are_cut(
        monkeypatch: Any, capsys: Any) -> None:
    from agui_client import cli
    from agui_client.cli import app
    from agui_client.cli.converse import UsageProblem

    def fault(argv: Any) -> int:
        raise RuntimeError("boom\u3164" + "b" * 1_000_000)

    monkeypatch.setattr(app, "run_cli", fault)
    assert cli.main([]) == 1
    traceback = capsys.readouterr().err
    assert "Traceback" in traceback and "RuntimeError: boom\\u3164" in traceback
    assert len(traceback) < 25_000

    def usage(out: Any, path: str, *, as_json: bool) -> int:
        raise UsageProblem("bad\u3164" + "u" * 1_000_000)

    monkeypatch.undo()
    monkeypatch.setattr(app, "replay_command", usage)
    assert cli.main(["replay", "x"]) == 2
    said = capsys.readouterr().err
    assert said.startswith("agui replay: bad\\u3164") and len(said) < 5_000 and "more characters)" in said


def test_a_log_record_is_cut(capsys: Any) -> None:
    import logging

    from agui_client.cli.terminal import InertLogHandler

    handler = InertLogHandler()
    handler.emit(logging.LogRecord("agui_client", logging.WARNING, __file__, 1, "l\u3164" + "l" * 100_000, None, None))

    written = capsys.readouterr().err
    assert written.startswith("l\\u3164") and len(written) < 5_000


def _recording(tmp_path: Path, events: list[dict[str, Any]]) -> str:
    import json

    path = tmp_path / "rec.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return str(path)


def test_replay_shows_a_large_state_and_result_cut(tmp_path: Path) -> None:
    ids = {"threadId": "t1", "runId": "r1"}
    capture = _recording(tmp_path, [
        {"type": "RUN_STARTED", **ids},
        {"type": "STATE_SNAPSHOT", "snapshot": {f"k{n}": n for n in range(5000)} | {"long": "s" * 100_000}},
        {"type": "RUN_FINISHED", **ids, "result": {"r": "z" * 100_000}},
    ])

    piped = _piped("replay", capture)
    text = _on_terminal("replay", capture)

    for shown in (piped.stdout, text):
        assert '"k10": 10' in shown and "more lines)" in shown
        assert "k4000" not in shown and "s" * 3000 not in shown and "z" * 5000 not in shown
        assert len(shown) < 100_000


def test_a_folder_of_exchanges_that_are_not_runs_is_named_in_a_bounded_list(tmp_path: Path) -> None:
    import json

    request = {"threadId": "t1", "runId": "r1", "messages": [], "tools": [], "context": [], "state": {},
               "forwardedProps": {}}
    for n in range(1, 41):
        (tmp_path / f"{n:02d}.request.json").write_text(json.dumps(request))
        (tmp_path / f"{n:02d}.response.json").write_text(json.dumps({"status": 500, "contentType": "text/plain"}))

    done = _piped("replay", str(tmp_path))

    assert done.returncode == 2, done.stderr
    assert "01: HTTP 500 text/plain" in done.stderr and "and 30 more" in done.stderr
    assert "40: HTTP" not in done.stderr


def test_a_piped_question_that_takes_a_large_default_shows_it_on_one_line_and_cut(
        served: Callable[[Any], Any]) -> None:
    default = "a\nrun finished: success" + "w" * 5000
    schema = {"type": "object", "properties": {"note": {"type": "string", "default": default}}}
    endpoint = served(_asking([Interrupt(id="i1", reason="input", response_schema=schema)]))

    done = subprocess.run([*AGUI, "run", endpoint.url, "-m", "hi", "--ask", "--plain"], input="", capture_output=True,
                          text=True, env=ENV, timeout=120, check=False)

    assert endpoint.received[1].body["resume"][0]["payload"] == {"note": default}
    shown = done.stdout + done.stderr
    unwrapped = shown.replace("\n", "")  # (the prompt's console wraps at 80 columns off a terminal)
    assert "a\\nrun finished: success" in unwrapped and "(input ended: the default)" in unwrapped
    assert not any(line.lstrip().startswith("run finished: success") for line in shown.splitlines())
    assert "w" * 1000 not in unwrapped


def test_enum_values_that_differ_only_in_invisible_characters_read_differently(
        served: Callable[[Any], Any]) -> None:
    schema = {"type": "object", "properties": {"env": {"enum": ["prod", "prod\ufe0f", "prod\u3164"]}}}
    endpoint = served(_asking([Interrupt(id="i1", reason="input", response_schema=schema)]))

    done = _piped("run", endpoint.url, "-m", "hi", "--plain")

    assert "one of prod|prod\\ufe0f|prod\\u3164" in done.stdout
    assert UNSEEN.search(done.stdout) is None


def test_a_tool_results_column_names_read_apart_in_the_chats_table(served: Callable[[Any], Any]) -> None:
    import json

    rows = json.dumps([{"name": 1, "name\ufe0f": 2, "name\u2800": 3}])
    endpoint = served(ScriptedAgent([[Start(), *tool_call("c1", "lookup", {}, result=rows), Finish()]]))
    child = _spawned("chat", endpoint.url, columns=200, encoding="utf-8")
    screen = child.logfile_read
    try:
        child.expect("you: ")
        child.sendline("hi")
        child.expect("row")
        child.expect("you: ")
        child.sendline("/quit")
        child.expect(pexpect.EOF)
    finally:
        child.close()

    text = RICH_OWN.sub("", screen.getvalue())
    assert "name\\ufe0f" in text and "name\\u2800" in text
    assert UNSEEN.search(text) is None


def test_the_command_to_answer_later_names_an_unusual_thread_id_exactly_and_visibly(
        served: Callable[[Any], Any], tmp_path: Path) -> None:
    thread_id = "t\u3164\u00ad\\xad'x"
    endpoint = served(_asking([Interrupt(id="i1", reason="input", response_schema=SCHEMA)]))

    done = _piped("run", endpoint.url, "-m", "hi", "--thread-file", str(tmp_path / "t.db"), "--thread-id", thread_id)

    line = next(line for line in done.stdout.splitlines() if line.startswith("to answer later: "))
    assert UNSEEN.search(line) is None
    word = re.search(r"--thread-id (\$'(?:[^'\\]|\\.)*')", line)
    assert word is not None, line
    # The shell reads the word back to the exact id.
    echoed = subprocess.run(["bash", "-c", f"printf %s {word.group(1)}"], capture_output=True, text=True,
                            check=True, env={**ENV, "LC_ALL": "C.UTF-8"})
    assert echoed.stdout == thread_id


def test_the_probes_table_names_a_bounded_number_of_answered_interrupts(
        served: Callable[[Any], Any]) -> None:
    endpoint = served(ScriptedAgent.interrupts(30, response_schema=SCHEMA))

    done = _piped("probe", endpoint.url, "--prompt", "go", "--plain")

    assert "and 20 more" in done.stdout, done.stdout[-3000:]


def test_a_run_error_and_an_interrupts_message_of_a_megabyte_on_one_line_are_cut(
        served: Callable[[Any], Any]) -> None:
    from agui_client.types import RunErrorEvent

    endpoint = served(ScriptedAgent([
        [Start(), Finish(outcome=RunFinishedInterruptOutcome(interrupts=(
            Interrupt(id="i1", reason="input", message="q" * 1_000_000, response_schema=SCHEMA),)))],
        [Start(), RunErrorEvent(message="e" * 1_000_000)],
    ]))

    done = _piped("run", endpoint.url, "-m", "hi", "--yes")

    assert done.returncode == 1
    assert "q" * 1000 in done.stdout and "q" * 30_000 not in done.stdout
    assert "e" * 1000 in done.stdout and "e" * 5000 not in done.stdout
    assert len(done.stdout) < 100_000


def test_a_line_end_in_the_agents_text_cannot_start_a_line_of_a_plain_panel(served: Callable[[Any], Any]) -> None:
    from agui_client.types import RunErrorEvent

    forged = "real question\n  id: other\n== summary ==\n  outcome: success"
    endpoint = served(ScriptedAgent([
        [Start(), Finish(outcome=RunFinishedInterruptOutcome(interrupts=(
            Interrupt(id="i1", reason="input", message=forged, response_schema=SCHEMA),)))],
        [Start(), RunErrorEvent(message=forged)],
    ]))

    done = _piped("run", endpoint.url, "-m", "hi", "--yes")

    lines = done.stdout.splitlines()
    assert "  id: i1" in lines and "  id: other" not in lines
    assert "== summary ==" in lines and lines.count("== summary ==") == 1
    assert "      id: other" in lines  # (under the line it goes on from)


@pytest.mark.parametrize("colour", [True, False])
def test_an_emoji_sequence_cut_between_two_deltas_is_shown_whole(served: Callable[[Any], Any], colour: bool) -> None:
    # The prose rule escapes a joiner or selector that joins nothing. One at the start of a delta may be
    # joining the character the delta before ended with (a model's tokens cut emoji sequences so): it
    # was shown as \u200d. It is judged by that character now, so one selector a delta, after an
    # emoji, cannot carry hidden text either: only the first joins.
    family, heart = "\U0001f468\u200d\U0001f469\u200d\U0001f467", "\u2764\ufe0f"
    deltas = ["family \U0001f468", "\u200d\U0001f469", "\u200d\U0001f467", " and \u2764", "\ufe0f", "\ufe0f",
              "\ufe0f\ufe0f!", " \u200d."]
    content = [{"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": delta} for delta in deltas]
    endpoint = served(ScriptedAgent([[Start(), {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
                                      *content, {"type": "TEXT_MESSAGE_END", "messageId": "m1"}, Finish()]]))

    text = _on_terminal("run", endpoint.url, "-m", "hi") if colour else _piped("run", endpoint.url, "-m", "hi").stdout

    streamed = next(line for line in text.splitlines() if line.startswith("assistant: "))
    assert streamed == f"assistant: family {family} and {heart}\\ufe0f\\ufe0f\\ufe0f! \\u200d."
