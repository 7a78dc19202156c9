"""``agui chat``: a person at a real pseudo-terminal, talking to real agents on 127.0.0.1.

The bundled demo agent (started by ``agui chat`` itself) gets three turns, a form answered wrongly
then rightly, a "no" that skips the rest of the form, ``/export`` (the file read back), ``/new`` and
``--record``. A scripted agent served from this process holds its first response at a gate, so
Ctrl-C lands mid-turn every time (no sleeps): the turn is cancelled, the server sees the client go,
and the next turn sends a consistent history, saved in the thread file. The pieces (the Markdown
writer, the form's yes/no gate, the transcript, the recording transport) are checked on their own.
"""

from __future__ import annotations

import io
import json
import re
import sqlite3
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import httpx
import pexpect
import pytest
from clikit import YES_NO_ASKED, agui_here, agui_process, screen_text, spawn_on_terminal
from test_cli_terminal import HOSTILE, assert_inert

from agui_client import AgentClient
from agui_client.cli import forms
from agui_client.cli.chat import ChatView, transcript
from agui_client.cli.chatview import _MarkdownWriter
from agui_client.cli.render import PlainOutput
from agui_client.cli.terminal import SafeConsole
from agui_client.stores import SqliteStore
from agui_client.testing import (
    ANSWER_SCHEMA,
    Finish,
    Gate,
    RecordedAgent,
    ScriptedAgent,
    Start,
    Wait,
    reasoning,
    serve,
    text_message,
    tool_call,
)
from agui_client.testing.recorded import RecordingMismatch
from agui_client.testing.recording import RecordingTransport
from agui_client.types import (
    RunErrorEvent,
    StateSnapshotEvent,
    SubagentFinishedEvent,
    SubagentStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
)
from agui_client.types.run import Interrupt, RunFinishedInterruptOutcome, TokenUsage


def _spawn(*args: str) -> tuple[pexpect.spawn, io.StringIO]:
    return spawn_on_terminal(["-m", "agui_client.cli", "chat", *args])


def _text(screen: io.StringIO) -> str:
    return screen_text(screen.getvalue())


#: The form's question for ANSWER_SCHEMA, whole: its ": " is the last thing written before the chat reads
#: the answer, so a Ctrl-C sent after it reaches the form itself, not the lines drawn before it.
ANSWER_PROMPT = r"answer \(Your answer\): "
#: The cancellation's line to its end, so that no more of it can follow (``(?!:)`` at the end of what has
#: arrived so far would pass on a line the terminal hands over in two reads).
CANCELLED_ALONE = r"turn cancelled \(Ctrl-C\)(?:\x1b\[[0-9;]*m)*\r\n"


def _say(child: pexpect.spawn, line: str) -> None:
    child.expect("you: ")
    child.sendline(line)


# --------------------------------------------------------------------------------------------------
# The bundled demo agent
# --------------------------------------------------------------------------------------------------


def test_three_turns_with_the_demo_agent_forms_export_and_new(tmp_path: Path) -> None:
    export = tmp_path / "chat.md"
    records = tmp_path / "rec"
    child, screen = _spawn("--record", str(records))
    try:
        # Turn 1: approve, with a backup time the schema refuses, then one it accepts.
        _say(child, "Please delete the staging environment")
        child.expect(r"approved \(Delete the environment\?\).*\[y/n\]")
        child.sendline("y")
        child.expect(r"environment .*\(staging\)")
        child.sendline("")
        child.expect("comment")
        child.sendline("")
        child.expect(r"ttl_minutes .*\(60\)")
        child.sendline("-3")
        child.expect("ttl_minutes: -3 is less than the minimum of 0")
        child.expect(r"ttl_minutes .*\(60\)")
        child.sendline("30")
        child.expect("Done: the staging environment is deleted. A backup is kept for 30 minutes.")
        # Turn 2: a "no" is the whole answer ({approved: false} satisfies the schema): nothing else asked.
        _say(child, "Now the preview environment")
        child.expect(YES_NO_ASKED)
        child.sendline("n")
        child.expect("OK, I did not delete anything: the deletion was not approved.")
        # Turn 3: yes, another environment, a comment.
        _say(child, "And qa?")
        child.expect(YES_NO_ASKED)
        child.sendline("yes")
        child.expect(r"environment .*\(staging\)")
        child.sendline("qa")
        child.expect("comment")
        child.sendline("cleanup")
        child.expect(r"ttl_minutes .*\(60\)")
        child.sendline("")
        child.expect("Done: the qa environment is deleted. A backup is kept for 60 minutes.")
        _say(child, "/state")
        child.expect(r'"status"\S*: \S*"done"')  # (between styles)
        _say(child, f"/export {export}")
        child.expect(r"exported \d+ message\(s\) to")
        _say(child, "/new")
        child.expect(r"new thread ([0-9a-f-]{36})")
        _say(child, "/messages")
        child.expect(r"\(no messages\)")
        _say(child, "/quit")
        child.expect(pexpect.EOF)
    finally:
        child.close()

    assert child.exitstatus == 0
    text = _text(screen)
    # The stream, as a person sees it: reasoning folded, tool calls with arguments and results,
    # the subagent labelled, state and activity changes in a line each, usage per turn.
    assert re.search(r"thought for (\d+ s|less than a second)", text)
    assert "The user wants an environment removed" in text  # (shown while it streamed)
    assert '⚙ list_environments {"include":"all"}' in text
    assert '↳ list_environments returned ["staging","preview","production"]' in text
    assert "[risk-checker]\nNothing has deployed to staging for 30 days" in text
    assert "state: 2 ops on /task/status, /log/-" in text
    assert "activity progress: 2 ops on /label, /percent" in text
    assert '{"approved": true, "environment": "staging", "ttl_minutes": 30}' in text
    assert '{"approved": false}' in text
    # One question open: its long id is in the panel, not repeated on the lines around the form.
    assert text.count("Your answer (empty input takes the default shown):") == 3
    assert 'answer: {"approved": false}' in text and "-approval: {" not in text
    assert '{"approved": true, "environment": "qa", "comment": "cleanup", "ttl_minutes": 60}' in text
    assert len(re.findall(r"\(success; \d+ tokens \(.*\) over 2 runs\)", text)) == 3
    # What the person typed is on the screen once: the terminal's echo, never a second copy.
    for typed in ("Please delete the staging environment", "Now the preview environment", "And qa?"):
        assert text.count(f"you: {typed}") == 1

    written = export.read_text(encoding="utf-8")
    assert written.startswith("# agui chat transcript\n")
    assert "## You\n\nPlease delete the staging environment\n" in written
    assert "## risk-checker (subagent)\n\nNothing has deployed to staging for 30 days" in written
    assert "- tool call `delete_environment`\n\n```json\n{\"environment\":\"staging\"}\n```" in written
    assert '> answer to approval: {"approved": true, "environment": "staging", "ttl_minutes": 30}' in written
    assert "Done: the staging environment is deleted. A backup is kept for 30 minutes." in written
    assert "OK, I did not delete anything: the deletion was not approved." in written
    assert "Done: the qa environment is deleted. A backup is kept for 60 minutes." in written
    assert written.index("## You\n\nAnd qa?") > written.index("OK, I did not delete anything")
    assert '"status": "done"' in written.split("## State")[1]

    # --record kept the six requests (three turns, three resumes) and their responses.
    bodies = [json.loads((records / f"{n:02d}.request.json").read_text()) for n in range(1, 7)]
    assert bodies[0]["messages"][-1]["content"] == "Please delete the staging environment"
    assert bodies[1]["resume"][0]["payload"] == {"approved": True, "environment": "staging", "ttl_minutes": 30}
    assert bodies[3]["resume"][0]["payload"] == {"approved": False}
    assert not (records / "07.request.json").exists()
    assert '"type":"RUN_FINISHED"' in (records / "02.sse").read_text().replace(" ", "")


def _delete_staging_then_refuse_preview(child: pexpect.spawn, ttl: str) -> None:
    """Two turns with the demo agent: approve with a backup time of ``ttl``, then refuse."""
    _say(child, "Please delete the staging environment")
    child.expect(YES_NO_ASKED)
    child.sendline("y")
    child.expect(r"environment .*\(staging\)")
    child.sendline("")
    child.expect("comment")
    child.sendline("")
    child.expect(r"ttl_minutes .*\(60\)")
    child.sendline(ttl)


def test_a_chat_recorded_against_the_demo_agent_replays_through_a_recorded_agent(tmp_path: Path) -> None:
    records = tmp_path / "rec"
    thread_id = "0b7e5c1e-2f4a-4d8e-9a51-3c6f0d2b7a10"  # (a recording answers its own thread only)

    def chat(*args: str, ttl: str) -> str:
        child, screen = _spawn(*args, "--thread", thread_id)
        try:
            _delete_staging_then_refuse_preview(child, ttl)
            if ttl == "30":
                child.expect("A backup is kept for 30 minutes.")
                _say(child, "Now the preview environment")
                child.expect(YES_NO_ASKED)
                child.sendline("n")
                child.expect("OK, I did not delete anything: the deletion was not approved.")
            else:
                child.expect(r"HTTP 409")
                child.expect(r"the thread is as saved after its last complete run")
                child.expect(r"the agent is waiting for 1 answer\(s\)")
                _say(child, "/messages")  # (the chat goes on: the thread as the recording left it)
                child.expect("Staging can go. I need your approval before I delete it.")
            _say(child, "/quit")
            child.expect(pexpect.EOF)
        finally:
            child.close()
        assert child.exitstatus == 0
        return _text(screen)

    recorded = chat("--record", str(records), ttl="30")  # against the bundled demo agent
    assert sorted(p.name for p in records.iterdir() if p.name.endswith(".request.json")) == [
        "01.request.json", "02.request.json", "03.request.json", "04.request.json"]

    with RecordedAgent(records) as agent, serve(agent) as server:
        assert agent.thread_id == thread_id
        replayed = chat(server.url, ttl="30")
        agent.check()  # every request matched, and the whole recording was played
        assert agent.played == 4 and not agent.mismatches

    def turns(text: str) -> list[str]:
        """What the person saw of the two turns, the prompts and answers included (ids and times apart;
        and the spinner and the streamed reasoning, which the terminal log holds once per frame drawn,
        however many that was: a loaded machine draws more of them)."""
        body = text[text.index("you: Please delete"):text.index("you: /quit")]
        return [line for line in body.splitlines()
                if line.strip() and not re.search(r"expires at|thought for|waiting for the agent|thinking:", line)]

    def thought(text: str) -> str:
        """The reasoning as its last frame showed it (the longest: the earlier frames show less of it)."""
        return max((line.strip() for line in text.splitlines() if "thinking:" in line), key=len)

    assert turns(replayed) == turns(recorded)
    assert thought(replayed) == thought(recorded) and len(thought(recorded)) > len("thinking: ")
    assert "Done: the staging environment is deleted. A backup is kept for 30 minutes." in replayed

    # Another answer than the recorded one: the recording refuses it (409, naming the difference),
    # the chat shows a failed turn and goes on, and the test would fail at check().
    refusing = RecordedAgent(records)
    with serve(refusing) as server:
        mismatched = chat(server.url, ttl="45")
    assert len(refusing.mismatches) == 1 and '"ttl_minutes": 45' in refusing.mismatches[0]
    with pytest.raises(RecordingMismatch) as refused:
        refusing.check(complete=False)
    assert "recorded as 02.request.json" in str(refused.value)
    assert "Traceback" not in mismatched
    # The 409 is readable in the chat: the agent's explanation whole, as text, the recorded answer included.
    assert 'resume entries [{"interruptId"' in mismatched and '"ttl_minutes": 30}}] (code recording_mismatch)' in \
        " ".join(line.strip("│ ") for line in mismatched.splitlines()).replace("  ", " ")
    assert '\\"' not in mismatched


def test_ctrl_d_and_ctrl_c_at_the_prompt_leave() -> None:
    for leave in ("eof", "intr"):
        child, screen = _spawn()
        try:
            child.expect("you: ")
            child.sendeof() if leave == "eof" else child.sendintr()
            child.expect("bye")
            child.expect(pexpect.EOF)
        finally:
            child.close()
        assert child.exitstatus == 0, leave
        assert "Traceback" not in _text(screen)


# --------------------------------------------------------------------------------------------------
# A scripted agent served here: Ctrl-C mid-turn, Markdown, tables
# --------------------------------------------------------------------------------------------------

MARKDOWN = "# Hosts\n\nHere is **what I found**:\n\n- alpha\n- beta\n\n```\ncode line\n\nstill code\n```\n"
HOSTS = [{"host": "alpha", "cpu": 2, "zone": "eu-1"}, {"host": "beta", "cpu": 8}]


def _slow_agent(gate: Gate) -> ScriptedAgent:
    return ScriptedAgent([
        [Start(), *reasoning("r0", "I should list the hosts first."),
         *text_message("m0", MARKDOWN),
         *tool_call("c0", "list_hosts", {"region": "eu"}, result=json.dumps(HOSTS)),
         SubagentStartedEvent(subagent_run_id="s0", name="checker"),
         *text_message("m1", "All hosts answer.", subagent_run_id="s0"),
         SubagentFinishedEvent(subagent_run_id="s0"),
         TextMessageStartEvent(message_id="m2"), TextMessageContentEvent(message_id="m2", delta="Now the slow part"),
         Wait(gate), TextMessageEndEvent(message_id="m2"), Finish()],
        [Start(), *text_message("m3", "Second answer."),
         Finish(usage=(TokenUsage(input_tokens=12, output_tokens=3, total_tokens=15),))],
    ])


def test_ctrl_c_mid_turn_cancels_it_and_the_next_turn_works(served: Callable[[Any], Any], gate: Gate,
                                                            tmp_path: Path) -> None:
    endpoint = served(_slow_agent(gate))
    thread_file = tmp_path / "chat.db"
    child, screen = _spawn(endpoint.url, "--thread-file", str(thread_file))
    try:
        _say(child, "show me the hosts")
        child.expect("Now the slow part")  # (the response now waits at the gate)
        child.sendintr()
        child.expect(r"turn cancelled \(Ctrl-C\)")
        child.expect(r"the unfinished turn \(\d+ message\(s\)\) was not kept")
        _say(child, "again")
        child.expect("Second answer.")
        child.expect(r"\(success; 15 tokens \(12 in, 3 out\) over 1 run\)")
        _say(child, "/messages")
        child.expect("assistant: Second answer.")
        _say(child, "/quit")
        child.expect(pexpect.EOF)
    finally:
        child.close()

    assert child.exitstatus == 0
    assert endpoint.agent.wait_until(lambda agent: bool(agent.disconnects))  # the response was closed
    assert "TR-16" not in _text(screen) and "warning" not in _text(screen)  # (the cancellation, said once)
    assert not gate.is_open
    text = _text(screen)
    # Markdown as it streams: rendered, not raw; a blank line inside a code block does not cut it.
    assert "Hosts" in text and "# Hosts" not in text
    assert "Here is what I found:" in text  # (the tail is redrawn as it grows: "**" shows until it closes)
    assert "• alpha" in text and "• beta" in text
    assert re.search(r"code line\s*\n\s*\n\s*still code", text)
    assert "```" not in text
    # Reasoning folded, the tool call with its arguments, its result as a table, the subagent labelled.
    assert re.search(r"thought for (\d+ s|less than a second)", text)
    assert '⚙ list_hosts {"region":"eu"}' in text
    assert "↳ list_hosts returned 2 row(s)" in text
    assert re.search(r"host\s+cpu\s+zone", text) and re.search(r"alpha\s+2\s+eu-1", text)
    assert re.search(r"beta\s+8", text)
    assert "[checker]\nAll hosts answer." in text
    # The next turn sent a consistent history: the cancelled turn is not in it.
    assert [m["content"] for m in endpoint.received[1].body["messages"]] == ["again"]
    # And the thread file holds it, unclaimed.
    with sqlite3.connect(thread_file) as conn:
        (thread_id,) = conn.execute("SELECT thread_id FROM agui_threads").fetchone()
    with SqliteStore(str(thread_file)) as store:
        stored = store.load(thread_id)
    assert stored is not None and stored.claim is None
    assert [m["content"] for m in stored.data["messages"]] == ["again", "Second answer."]


def _asking(interrupt_id: str) -> Finish:
    return Finish(outcome=RunFinishedInterruptOutcome(interrupts=(Interrupt(
        id=interrupt_id, reason="input", message="Which colour?", response_schema=ANSWER_SCHEMA),)))


def test_ctrl_c_in_a_resume_or_a_form_leaves_the_interrupt_open_to_answer_or_abandon(
        served: Callable[[Any], Any], gate: Gate, tmp_path: Path) -> None:
    endpoint = served(ScriptedAgent([
        [Start(), *text_message("a", "I need an answer."), _asking("i1")],
        [Start(), *text_message("b", "Working on it"), Wait(gate), Finish()],  # the resume, cut by Ctrl-C
        [Start(), *text_message("c", "Answered again."), Finish()],
        [Start(), *text_message("d", "Another question."), _asking("i2")],
        [Start(), *text_message("e", "Fine, dropped."), Finish()],
    ]))
    child, screen = _spawn(endpoint.url)
    try:
        _say(child, "hi")
        child.expect(ANSWER_PROMPT)
        child.sendline("blue")
        child.expect("Working on it")
        child.sendintr()  # while the resume streams: its request reached the agent
        child.expect(r"turn cancelled \(Ctrl-C\): the agent may have acted on your answers")
        child.expect(r"the agent is waiting for 1 answer\(s\): press Enter to answer")
        _say(child, "")  # Enter: the form again
        child.expect(ANSWER_PROMPT)
        child.sendline("green")
        child.expect("Answered again.")
        _say(child, "next")
        child.expect(ANSWER_PROMPT)
        child.sendintr()  # in the form: nothing was sent
        child.expect(CANCELLED_ALONE)
        child.expect("the agent is waiting for 1 answer")
        _say(child, "never mind")  # a message: the question is abandoned, the message sent with it
        child.expect("abandoned interrupt i2 \\(a new message was sent instead\\)")
        child.expect("Fine, dropped.")
        _say(child, f"/export {tmp_path / 'chat.md'}")
        child.expect("exported")
        _say(child, "/quit")
        child.expect(pexpect.EOF)
    finally:
        child.close()

    assert child.exitstatus == 0
    bodies = [r.body for r in endpoint.received]
    assert len(bodies) == 5
    assert bodies[1]["resume"] == [{"interruptId": "i1", "status": "resolved", "payload": {"answer": "blue"}}]
    assert bodies[2]["resume"] == [{"interruptId": "i1", "status": "resolved", "payload": {"answer": "green"}}]
    assert bodies[4]["resume"] == [{"interruptId": "i2", "status": "cancelled"}]
    assert bodies[4]["messages"][-1]["content"] == "never mind"
    text = _text(screen)
    assert "Traceback" not in text
    # The cut resume is the streaming API's incomplete run (TR-16), said once in the chat's words: no
    # warning code, no log line telling the person to call release_claim() (the chat lets go itself).
    assert "TR-16" not in text and "release_claim" not in text and "stays claimed" not in text
    assert text.count("(cancelled; usage not reported)") == 2 and "(success; usage not reported)" in text
    written = (tmp_path / "chat.md").read_text()
    # Only the answer whose run completed is in the transcript, after the question it answered.
    assert '> answer to input: {"answer": "green"}' in written and "blue" not in written
    assert written.index("I need an answer.") < written.index('"green"') < written.index("Answered again.")


def test_a_second_chat_goes_on_with_the_thread_in_the_file(served: Callable[[Any], Any], tmp_path: Path) -> None:
    endpoint = served(ScriptedAgent.chat(lambda run_input: f"you said {run_input.messages[-1].content}"))
    thread_file = str(tmp_path / "t.db")

    first = agui_here("chat", endpoint.url, "--thread-file", thread_file, stdin="one\n")
    second = agui_here("chat", endpoint.url, "--thread-file", thread_file, stdin="two\n")

    assert first.returncode == 0 and second.returncode == 0, second.stderr
    assert "1 message(s) so far" not in second.stdout and "2 message(s) so far (/messages)" in second.stdout
    assert [m["content"] for m in endpoint.received[1].body["messages"]] == ["one", "you said one", "two"]

    third = agui_here("chat", endpoint.url, "--thread-file", thread_file, stdin="/new\nthree\n")
    ambiguous = agui_here("chat", endpoint.url, "--thread-file", thread_file, stdin="")
    new_id = re.search(r"new thread ([0-9a-f-]{36})", third.stdout)
    assert new_id is not None
    chosen = agui_here("chat", endpoint.url, "--thread-file", thread_file, "--thread", new_id.group(1), stdin="four\n")

    assert ambiguous.returncode == 2 and "holds 2 threads; pick one with --thread" in ambiguous.stderr
    assert new_id.group(1) in ambiguous.stderr
    assert chosen.returncode == 0, chosen.stderr
    assert [m["content"] for m in endpoint.received[-1].body["messages"]] == ["three", "you said three", "four"]


def test_agent_strings_reach_the_terminal_inert(served: Callable[[Any], Any]) -> None:
    schema = {"type": "object", "required": ["approved"],
              "properties": {"approved": {"type": "boolean", "description": HOSTILE}}}
    interrupt = Interrupt(id="i1", reason=HOSTILE, message=HOSTILE, response_schema=schema)
    endpoint = served(ScriptedAgent([
        [Start(), StateSnapshotEvent(snapshot={HOSTILE: HOSTILE}), *reasoning("r1", HOSTILE),
         *text_message("m1", HOSTILE),
         *tool_call("c1", HOSTILE, {"k": HOSTILE}, result=json.dumps([{HOSTILE: HOSTILE}])),
         Finish(outcome=RunFinishedInterruptOutcome(interrupts=(interrupt,)))],
        [Start(), RunErrorEvent(message=HOSTILE, code=HOSTILE)],
    ]))
    child, screen = _spawn(endpoint.url)
    try:
        _say(child, "hi")
        child.expect(YES_NO_ASKED)
        child.sendline("n")
        child.expect("RUN_ERROR")
        _say(child, "/quit")
        child.expect(pexpect.EOF)
    finally:
        child.close()

    assert child.exitstatus == 0
    assert_inert(screen.getvalue().encode("utf-8"), terminal=True, everywhere=False)
    assert "\x1b]8;" not in screen.getvalue()  # no hyperlink from the [link=…] markup


# --------------------------------------------------------------------------------------------------
# Without a terminal, and usage
# --------------------------------------------------------------------------------------------------


def test_piped_lines_are_turns_and_the_end_of_input_leaves(served: Callable[[Any], Any], tmp_path: Path) -> None:
    endpoint = served(ScriptedAgent.chat("Hello! How can I help you today?"))
    records = tmp_path / "rec"

    done = agui_process("chat", endpoint.url, "-H", "Authorization: Bearer sekrit-123", "--idle-timeout", "5",
                        stdin=f"hi\n/help\n/record {records}\n//slash first\n/record off\nlast\n")

    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "you: hi\nagent: Hello! How can I help you today?\n" in out  # shown once, as typed
    assert "/export FILE.md" in out and "/record DIR" in out
    assert endpoint.received[1].body["messages"][-1]["content"] == "/slash first"
    assert f"recording each request into {records}" in out and f"stopped recording into {records}" in out
    # (only while recording)
    assert sorted(p.name for p in records.iterdir()) == ["01.request.json", "01.response.json", "01.sse"]
    assert json.loads((records / "01.request.json").read_text())["messages"][-1]["content"] == "/slash first"
    assert "sekrit" not in (records / "01.request.json").read_text()
    assert endpoint.received[0].headers["authorization"] == "Bearer sekrit-123"
    assert "sekrit" not in out + done.stderr
    assert "\x1b" not in out


def test_credentials_in_the_url_reach_neither_the_screen_nor_the_transcript(served: Callable[[Any], Any],
                                                                              tmp_path: Path) -> None:
    endpoint = served(ScriptedAgent.chat("Hello."))
    host = endpoint.url.split("://", 1)[1]
    url = f"http://alice:pw-SECRET@{host}?token=tok-SECRET&page=2"
    exported = tmp_path / "t.md"

    done = agui_here("chat", url, stdin=f"hi\n/export {exported}\n")

    assert done.returncode == 0, done.stderr
    assert "agent: Hello." in done.stdout  # (the turn went out: the URL was used as given)
    assert "SECRET" not in done.stdout + done.stderr
    assert f"chat with http://{host}" in done.stdout and "page=2" in done.stdout
    transcript_text = exported.read_text()
    assert "SECRET" not in transcript_text and f"http://{host}" in transcript_text


def test_an_endless_paragraph_is_redrawn_from_its_last_characters_only() -> None:
    # A block that never ends (one paragraph, or a code fence left open) is redrawn while it streams:
    # only its last LIVE_CHARS characters are (after a code block's opening line), and it is printed
    # whole, once, when the message ends.
    from agui_client.cli.chatview import LIVE_CHARS

    for opening in ("", "```\n"):
        writer, sink = _writer()
        writer.feed(opening)
        for i in range(20_000):
            writer.feed(f"w{i} ")
        shown = writer._shown()
        assert len(shown) == len(opening) + LIVE_CHARS and shown.startswith(opening) and shown.endswith("w19999 ")
        writer.close()
        assert sink.getvalue().count("w0 ") == 1 and "w19999" in sink.getvalue()


def test_usage_problems_exit_2_without_showing_header_values() -> None:
    header = agui_here("chat", "http://127.0.0.1:9/", "-H", "sekrit-no-colon", stdin="")
    timeout = agui_here("chat", "http://127.0.0.1:9/", "--timeout", "0", stdin="")

    assert header.returncode == 2 and "-H expects 'Name: value'" in header.stderr
    assert "sekrit" not in header.stdout + header.stderr
    assert timeout.returncode == 2 and "give a positive number of seconds" in timeout.stderr


def test_timeout_bounds_each_run_as_on_run_and_demo(served: Callable[[Any], Any], gate: Gate) -> None:
    # --timeout is shared with run, demo and probe (cli/options.py): the longest one run may take, not
    # a connect timeout. An agent that goes silent mid-run fails that turn; the chat goes on.
    endpoint = served(ScriptedAgent([
        [Start(), *text_message("a", "Let me think"), Wait(gate), Finish()],
        [Start(), *text_message("b", "Back again."), Finish()],
    ]))

    done = agui_here("chat", endpoint.url, "--timeout", "1", stdin="hi\nagain\n")

    assert done.returncode == 0, done.stderr
    assert "RunTimeout" in done.stdout and "past its run_timeout of 1.0s" in done.stdout
    assert "agent: Back again." in done.stdout  # (the next turn ran, on the thread as it was)
    assert [m["content"] for m in endpoint.received[1].body["messages"]] == ["again"]
    help_text = agui_here("chat", "--help", stdin="").stdout
    assert "the longest one run may take" in " ".join(help_text.split())


def test_a_failed_turn_is_shown_and_the_chat_goes_on() -> None:
    done = agui_here("chat", "http://127.0.0.1:9/", "--timeout", "2", stdin="hi\n/messages\n")

    assert done.returncode == 0, done.stderr
    assert "TransportError" in done.stdout and "could not reach http://127.0.0.1:9/" in done.stdout
    assert "you: /messages\n(no messages)" in done.stdout  # (the chat went on, the thread as it was)


# --------------------------------------------------------------------------------------------------
# The pieces
# --------------------------------------------------------------------------------------------------


class Answers:
    """An Asker that gives scripted answers and records the questions."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.asked: list[str] = []

    def _next(self, label: str) -> str:
        self.asked.append(label.split(" ")[0])
        return self.answers.pop(0)

    def ask_bool(self, label: str, *, default: bool | None) -> bool:
        return self._next(label) == "y"

    def ask_choice(self, label: str, choices: Any, *, default: str | None) -> str:
        return self._next(label) or (default or "")

    def ask_text(self, label: str, *, default: str | None) -> str:
        return self._next(label) or (default or "")

    def say(self, text: str) -> None:
        pass


def test_the_gate_skips_the_rest_of_the_form_only_when_the_schema_allows() -> None:
    from agui_client.testing import APPROVAL_SCHEMA

    refused = Answers("n")
    approved = Answers("y", "qa", "", "5")
    needs_more = {"type": "object", "required": ["approved", "reason"], "properties": {
        "approved": {"type": "boolean"}, "reason": {"type": "string"}}}
    insisted = Answers("n", "not now")
    plain = Answers("n", "", "", "")

    assert forms.ask_payload(APPROVAL_SCHEMA, refused, gate=True) == {"approved": False}
    assert refused.asked == ["approved"]
    assert forms.ask_payload(APPROVAL_SCHEMA, approved, gate=True) == {
        "approved": True, "environment": "qa", "ttl_minutes": 5}
    assert forms.ask_payload(needs_more, insisted, gate=True) == {"approved": False, "reason": "not now"}
    assert forms.ask_payload(APPROVAL_SCHEMA, plain) == {"approved": False, "environment": "staging",
                                                         "ttl_minutes": 60}  # (no gate: the whole form)
    assert forms.gate_field({"type": "object", "properties": {"note": {"type": "string"}}}) is None


def _writer() -> tuple[_MarkdownWriter, io.StringIO]:
    sink = io.StringIO()
    console = SafeConsole(file=sink, width=80, force_terminal=False, color_system=None)
    return _MarkdownWriter(console, "agent:"), sink


def test_markdown_blocks_are_printed_once_and_a_code_block_is_never_cut() -> None:
    writer, sink = _writer()
    text = "First **para**.\n\n```python\nx = 1\n\ny = 2\n```\n\nLast *line*"
    for char in text:  # (one character per token: the worst case for the splitting)
        writer.feed(char)
    before_close = sink.getvalue()
    writer.close()
    shown = sink.getvalue()

    assert "First para." in before_close and "Last line" not in before_close  # the tail waits for its end
    assert shown.count("First para.") == 1 and shown.count("x = 1") == 1 and shown.count("Last line") == 1
    assert re.search(r"x = 1\s*\n\s*\n\s*y = 2", shown)
    assert "**" not in shown and "```" not in shown and shown.startswith("agent:\n")


@pytest.mark.parametrize("opener", ["- ", "1. ", "> "])
def test_text_nested_past_what_markdown_reads_is_shown_as_text(opener: str) -> None:
    # markdown-it stops reading a block 20 levels deep: the words in ten nested lists (two levels
    # each) or twenty nested quotes were not shown at all. Past MARKDOWN_MAX_LEVEL the block is
    # shown as the plain text it is, and so is its redrawn tail; shallower nesting stays Markdown.
    from agui_client.cli.chatview import MARKDOWN_MAX_LEVEL

    deep = opener * MARKDOWN_MAX_LEVEL + "the hidden words\n"
    writer, sink = _writer()
    writer.feed(f"{deep}\n{opener * 3}shallow item\n")
    assert writer._rendered(deep).__class__.__name__ == "Text"  # (the redrawn tail as well)
    writer.close()
    shown = sink.getvalue()

    assert "the hidden words" in shown and deep.strip() in shown  # (as written)
    assert "shallow item" in shown and f"{opener * 3}shallow item" not in shown  # (rendered)
    assert MARKDOWN_MAX_LEVEL < 20  # (below markdown-it's own limit, where the text is lost)


def test_a_redrawn_tail_leaves_room_for_the_terminals_ctrl_c_echo() -> None:
    # A tail drawn to the last column leaves the cursor there; the terminal's "^C" echo then wraps,
    # and the next redraw started a line too low, leaving a second copy of the tail on the screen.
    sink = io.StringIO()
    console = SafeConsole(file=sink, width=40, force_terminal=True, color_system=None)
    writer = _MarkdownWriter(console, "agent:")
    writer.feed("A paragraph that streams and is still going on, past one line")
    if writer._live is not None:
        writer._live.refresh()
    drawn = screen_text(sink.getvalue()).replace("\x1b[?25l", "").replace("\x1b[?25h", "")
    writer.close()

    lines = [line for line in drawn.split("\n") if line.strip() and line != "agent:"]
    assert lines and max(len(line) for line in lines) <= 40 - 2
    assert "past one line" in screen_text(sink.getvalue())


def test_a_tail_taller_than_the_terminal_shows_its_newest_lines() -> None:
    # The live display showed a tail's first lines and "...": the text arriving was out of sight until its
    # block ended.
    sink = io.StringIO()
    console = SafeConsole(file=sink, width=40, height=10, force_terminal=True, color_system=None)
    writer = _MarkdownWriter(console, "agent:")
    writer.feed("```\n" + "".join(f"line {i}\n" for i in range(30)))
    if writer._live is not None:
        writer._live.refresh()
    frame = screen_text(sink.getvalue()).split("agent:")[-1]
    writer.close()

    assert "line 29" in frame and "line 0\n" not in frame and "..." in frame


def test_an_http_error_shows_the_agents_explanation_whole_and_as_text() -> None:
    from agui_client.cli.render import render_error
    from agui_client.errors import HTTPStatusError

    detail = "request 2 differs: " + "x" * 300 + ' "quoted" \x1b[31m end'
    body = json.dumps({"detail": detail, "code": "recording_mismatch"})
    error = HTTPStatusError(f"HTTP 409 Conflict from POST http://127.0.0.1:9/: {body[:200]}", status_code=409,
                            body=body, payload=json.loads(body))
    plain = HTTPStatusError("HTTP 502 Bad Gateway from POST http://127.0.0.1:9/: upstream down", status_code=502,
                            body="upstream down")
    sink = io.StringIO()
    render_error(PlainOutput(sink), error)
    render_error(PlainOutput(sink), plain)

    shown = sink.getvalue().splitlines()
    assert shown[1] == "  HTTP 409 Conflict from POST http://127.0.0.1:9/"
    assert shown[2] == ('  request 2 differs: ' + "x" * 300 + ' "quoted" \\x1b[31m end (code recording_mismatch) '
                        "(see: agui explain recording_mismatch)")
    assert shown[4] == "  HTTP 502 Bad Gateway from POST http://127.0.0.1:9/: upstream down"  # (no JSON: as it was)


def test_the_interrupt_panel_wraps_under_its_columns_at_80_columns() -> None:
    from agui_client.cli.render import RichOutput, render_interrupt
    from agui_client.testing import APPROVAL_SCHEMA

    interrupt = Interrupt(id="80d134ad-ddd3-4c79-9455-812ed697023b-approval", reason="approval",
                          message="Delete the staging environment? This cannot be undone, and nobody can bring "
                                  "it back after the purge.", response_schema=APPROVAL_SCHEMA,
                          expires_at="2030-01-01T00:00:00Z")
    sink = io.StringIO()
    render_interrupt(RichOutput(SafeConsole(file=sink, width=80, color_system=None)), interrupt, None,
                     now=datetime(2029, 12, 29, 21, 30, tzinfo=timezone.utc))

    shown = sink.getvalue().splitlines()
    # Each wrapped line continues under its own column, never under the labels.
    assert any(re.fullmatch(r"│ {13}nobody can bring it back after the purge\. +│", line) for line in shown)
    assert any(re.fullmatch(r"│ {16}to delete +│", line) for line in shown)
    assert any("expires at: 2030-01-01T00:00:00Z (in 2 d 2 h)" in line for line in shown)


def test_plain_view_shows_tokens_reasoning_folded_and_tables_as_rows() -> None:
    sink = io.StringIO()
    view = ChatView(PlainOutput(sink))
    for event in [*reasoning("r", "hmm"), *text_message("m", "Hi **there**"),
                  *tool_call("c", "rows", {}, result=json.dumps(HOSTS))]:
        view.event(event)
    view.close()

    assert sink.getvalue().splitlines() == [
        "thinking: hmm", "thought for less than a second", "agent: Hi **there**", "tool: rows {}",
        "  -> rows returned 2 row(s)", "    host: alpha, cpu: 2, zone: eu-1", "    host: beta, cpu: 8"]


@pytest.mark.parametrize("took, said", [(0.2, "thought for less than a second"), (3.4, "thought for 3 s"),
                                        (61.0, "thought for 61 s")])
def test_folded_reasoning_says_how_long_it_took(monkeypatch: pytest.MonkeyPatch, took: float, said: str) -> None:
    from types import SimpleNamespace

    import agui_client.cli.chatview as chat_module

    ticks = iter([100.0, 100.0 + took])  # (the reasoning's start, then its end)
    monkeypatch.setattr(chat_module, "time", SimpleNamespace(monotonic=lambda: next(ticks)))
    sink = io.StringIO()
    view = ChatView(PlainOutput(sink))
    for event in [*reasoning("r", "hmm"), *text_message("m", "done")]:
        view.event(event)
    view.close()

    assert sink.getvalue().splitlines()[:2] == ["thinking: hmm", said]


def test_interleaved_text_reasoning_and_tool_calls_on_a_terminal_keep_one_live_display_at_a_time() -> None:
    # rich refuses a second live display while one runs: every change of lane must end the last one.
    from agui_client.cli.render import RichOutput
    from agui_client.types import ReasoningMessageContentEvent, StateDeltaEvent, ToolCallArgsEvent

    sink = io.StringIO()
    out = RichOutput(SafeConsole(file=sink, force_terminal=True, width=100, color_system=None))
    view = ChatView(out)
    out.start_waiting("waiting for the agent...")
    text, thinking, call = text_message("m", "one two"), reasoning("r", "hmm yes"), tool_call("c", "f", {"a": 1})
    for event in [text[0], text[1], *thinking[:3], call[0], text[2], ToolCallArgsEvent(tool_call_id="c", delta="{}"),
                  ReasoningMessageContentEvent(message_id="r", delta=" more"), *call[2:],
                  StateDeltaEvent(delta=({"op": "add", "path": "/x", "value": 1},)), text[3], *thinking[3:]]:
        view.event(event)
    view.close()

    shown = screen_text(sink.getvalue())
    assert shown.count("thought for") == 3 and "⚙ f {}" in shown and "state: 1 op on /x" in shown
    assert "one" in shown and "two" in shown


def test_the_transcript_makes_agent_strings_inert_and_fences_what_they_hold(served: Callable[[Any], Any]) -> None:
    endpoint = served(ScriptedAgent([[Start(), *text_message("m1", "ok \x1b]0;T\x07"),
                                      *tool_call("c1", "t", {}, result="a ```` b"), Finish()]]))
    with AgentClient(endpoint.url) as client:
        thread = client.thread()
        thread.run("hi")

    text = transcript(thread.state, url=endpoint.url, thread_id=thread.id, answers=[(1, "answer to x: 1")])

    assert "\x1b" not in text and "ok \\x1b]0;T\\x07" in text
    assert "`````\na ```` b\n`````" in text  # a fence longer than the backticks inside
    assert text.index("## You") < text.index("> answer to x: 1") < text.index("## Agent")


def test_the_recording_transport_writes_each_request_and_response(served: Callable[[Any], Any],
                                                                  tmp_path: Path) -> None:
    endpoint = served(ScriptedAgent.chat("recorded"))
    recorder = RecordingTransport()
    with httpx.Client(transport=recorder) as http, AgentClient(endpoint.url, http_client=http,
                                                              headers={"Authorization": "Bearer sekrit"}) as client:
        thread = client.thread()
        thread.run("not recorded")
        recorder.start(tmp_path / "rec")
        thread.run("recorded one")
        recorder.stop()
        thread.run("not recorded either")

    files = sorted(p.name for p in (tmp_path / "rec").iterdir())
    assert files == ["01.request.json", "01.response.json", "01.sse"]
    body = json.loads((tmp_path / "rec" / "01.request.json").read_text())
    assert body["messages"][-1]["content"] == "recorded one"
    replayed = agui_here("replay", "--json", str(tmp_path / "rec" / "01.sse"))
    assert replayed.returncode == 0, replayed.stderr
    assert json.loads(replayed.stdout)["messages"][-1]["content"] == "recorded"
    assert not any("sekrit" in p.read_text() for p in (tmp_path / "rec").iterdir())
