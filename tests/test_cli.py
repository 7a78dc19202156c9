"""The ``agui`` command against real servers: in this process (``clikit.agui_here``) where the point is
what a command prints and returns, as a real subprocess (``python -m agui_client.cli``) for each command
once, for the entry point, the locale and the terminal.

``agui demo`` starts its own scripted agent; ``agui run`` talks to one served from this process
(the session's uvicorn server), so a second subprocess can resume the thread the first one left in
a SQLite file. ``agui replay`` and ``agui verify`` read small captures written here with known
contents and known violations. An interactive ``agui demo`` is driven through a pseudo-terminal.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pexpect
import pytest
from clikit import ENV, YES_NO_ASKED, Ran, agui_here, agui_process
from wirekit import request_json, sse_text

from agui_client.testing import Finish, Respond, ScriptedAgent, Start
from agui_client.types import RunErrorEvent


def agui(*args: str, stdin: str | None = None) -> Ran:
    """Run ``agui ARGS`` in this process with stdin not a terminal (``clikit``: no interpreter start)."""
    return agui_here(*args, stdin=stdin)


def _jsonl(*events: dict[str, Any]) -> str:
    return "".join(json.dumps(e) + "\n" for e in events)


# --------------------------------------------------------------------------------------------------
# agui demo
# --------------------------------------------------------------------------------------------------


def test_demo_yes_shows_the_interrupt_the_answer_and_the_final_message() -> None:
    done = agui_process("demo", "--yes")

    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "interrupt: approval" in out
    assert "Delete the staging environment? This cannot be undone." in out
    assert "expires at:" in out
    assert re.search(r"approved\s+boolean; required", out)
    assert re.search(r"environment\s+one of staging\|preview\|qa; default staging", out)
    assert 'answer to ' in out and '{"approved": true, "environment": "staging", "ttl_minutes": 60}' in out
    assert "final message: Done: the staging environment is deleted. A backup is kept for 60 minutes." in out
    # The stream itself: tokens, reasoning, tool calls with arguments, state summaries.
    assert "thinking: The user wants an environment removed." in out
    assert 'tool: delete_environment {"environment":"staging"}' in out
    assert "state: 2 ops on /task/status, /log/-" in out
    assert '"status": "done"' in out
    assert "over 2 runs" in out
    assert "\x1b[" not in out  # plain: no colours when stdout is not a terminal


def test_demo_abandon_ends_cleanly_and_says_so() -> None:
    done = agui("demo", "--abandon")

    assert done.returncode == 0, done.stderr
    assert "abandoned interrupt" in done.stdout
    assert "Understood: the request was abandoned. Nothing was deleted." in done.stdout
    assert '"status": "abandoned"' in done.stdout


def test_demo_answer_json_is_sent_as_the_answer() -> None:
    done = agui("demo", "--answer", '{"approved": false}')

    assert done.returncode == 0, done.stderr
    assert '{"approved": false}' in done.stdout
    assert "OK, I did not delete anything: the deletion was not approved." in done.stdout


def test_demo_without_a_terminal_or_flags_answers_as_with_yes_and_says_so() -> None:
    done = agui("demo")

    assert done.returncode == 0, done.stderr
    assert "stdin is not a terminal: answering as with --yes" in done.stdout
    assert "Done: the staging environment is deleted." in done.stdout


def test_demo_ask_reads_answers_piped_into_stdin() -> None:
    # `echo n | agui demo --ask` is a refusal. Further questions take their defaults once the input
    # ends; "yes" is a yes. (Without --ask, piped stdin is never read: a script fed to bash on stdin
    # would otherwise lose its next lines to the questions.)
    refused = agui("demo", "--ask", stdin="n\n")
    approved = agui("demo", "--ask", stdin="yes\nqa\n")
    ignored = agui("demo", stdin="n\n")

    assert refused.returncode == 0, refused.stderr
    assert "answering as with --yes" not in refused.stdout + refused.stderr
    assert '{"approved": false, "environment": "staging", "ttl_minutes": 60}' in refused.stdout
    assert "OK, I did not delete anything: the deletion was not approved." in refused.stdout
    assert approved.returncode == 0, approved.stderr
    assert '{"approved": true, "environment": "qa", "ttl_minutes": 60}' in approved.stdout
    assert "answering as with --yes" in ignored.stdout and '"approved": true' in ignored.stdout


def test_demo_piped_input_that_ends_before_a_required_answer_sends_nothing() -> None:
    ended = agui("demo", "--ask", stdin="maybe\n")

    assert ended.returncode == 130
    assert "input ended: nothing more was sent" in ended.stderr
    assert "\nanswer to" not in ended.stdout and "run finished: success" not in ended.stdout


def test_demo_answer_the_schema_refuses_is_not_sent_and_exits_2() -> None:
    refused = agui("demo", "--answer", '{"approved": "maybe"}')
    not_json = agui("demo", "--answer", "{approved")

    assert refused.returncode == 2
    assert "answer refused" in refused.stdout and "'maybe' is not of type 'boolean'" in refused.stdout
    assert "Done:" not in refused.stdout
    assert not_json.returncode == 2 and "--answer is not JSON" in not_json.stderr


def _spawn_demo(*args: str) -> pexpect.spawn:
    env = {**ENV, "TERM": "xterm-256color"}
    env.pop("NO_COLOR")
    return pexpect.spawn(sys.executable, ["-m", "agui_client.cli", "demo", *args], env=env, encoding="utf-8",
                         dimensions=(50, 160), timeout=30)


def test_interactive_demo_asks_each_field_of_the_schema_through_a_terminal() -> None:
    child = _spawn_demo()
    try:
        # Styles put escape sequences between the parts of a prompt: match across them.
        child.expect(r"approved \(Delete the environment\?\).*\[y/n\]")
        child.sendline("y")
        child.expect(r"environment .*\[staging/preview/qa\].*\(staging\)")
        child.sendline("")
        child.expect(r"comment")
        child.sendline("")
        child.expect(r"ttl_minutes .*\(60\)")
        child.sendline("soon")
        child.expect("ttl_minutes must be an integer")
        child.expect(r"ttl_minutes .*\(60\)")
        child.sendline("")
        child.expect('"approved": true, "environment": "staging", "ttl_minutes": 60')
        child.expect("Done: the staging environment is deleted")
        child.expect("final message")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0


def test_ctrl_c_at_the_prompt_exits_130() -> None:
    child = _spawn_demo()
    try:
        child.expect(YES_NO_ASKED)
        child.sendintr()
        child.expect("interrupted")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 130


def test_ctrl_d_at_the_prompt_ends_quietly() -> None:
    # End of input at a question: no traceback, a word on what happened, the Ctrl-C status.
    child = _spawn_demo()
    try:
        child.expect(YES_NO_ASKED)
        child.sendeof()
        child.expect("input ended")
        output = child.read() if child.isalive() else ""
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert "Traceback" not in (child.before or "") + output
    assert child.exitstatus == 130


def test_a_terminal_that_cannot_show_a_character_gets_a_replacement_not_a_crash() -> None:
    import subprocess

    env = {**ENV, "PYTHONIOENCODING": "ascii"}
    done = subprocess.run([sys.executable, "-m", "agui_client.cli", "demo", "--yes", "-m", "caf\u00e9 \u2615 please"],
                          env=env,
                          capture_output=True, text=True, encoding="ascii", errors="replace", timeout=60)
    assert done.returncode == 0, done.stderr
    assert "UnicodeEncodeError" not in done.stderr and "Done:" in done.stdout


# --------------------------------------------------------------------------------------------------
# agui run
# --------------------------------------------------------------------------------------------------


def test_run_keeps_the_interrupt_in_the_thread_file_and_a_second_process_resumes_it(
        served: Callable[[Any], Any], tmp_path: Path) -> None:
    endpoint = served(ScriptedAgent.demo())
    db = str(tmp_path / "t.db")

    first = agui_process("run", endpoint.url, "-m", "Remove the qa environment", "--thread-file", db,
                         "-H", "Authorization: Bearer s3cret")
    assert first.returncode == 0, first.stderr
    found = re.search(r"thread (\S+) \(new, kept in", first.stdout)
    assert found is not None, first.stdout
    thread_id = found.group(1)
    assert "interrupt: approval" in first.stdout
    assert "leaving the interrupt(s) open" in first.stdout
    assert f"--thread-id {thread_id} --resume --yes" in first.stdout
    assert endpoint.received[0].headers["authorization"] == "Bearer s3cret"

    second = agui_process("run", endpoint.url, "--thread-file", db, "--resume", "--answer",
                          '{"approved": true, "environment": "qa", "ttl_minutes": 5}')
    assert second.returncode == 0, second.stderr
    assert f"thread {thread_id} (kept in" in second.stdout
    assert "Done: the qa environment is deleted. A backup is kept for 5 minutes." in second.stdout
    resumed = endpoint.received[1].body
    assert resumed["threadId"] == thread_id
    assert resumed["resume"][0]["payload"] == {"approved": True, "environment": "qa", "ttl_minutes": 5}
    assert [m["content"] for m in resumed["messages"] if m["role"] == "user"] == ["Remove the qa environment"]

    again = agui_process("run", endpoint.url, "--thread-file", db, "--resume", "--yes")
    assert again.returncode == 2 and "no open interrupts" in again.stderr


def test_run_hint_to_answer_later_names_the_url_without_its_credentials(
        served: Callable[[Any], Any], tmp_path: Path) -> None:
    endpoint = served(ScriptedAgent.demo())
    scheme, _, rest = endpoint.url.partition("://")
    url = f"{scheme}://robot:pa55word-xyz@{rest}?token=tok-98765&v=2"
    db = str(tmp_path / "t.db")

    first = agui("run", url, "-m", "Remove the qa environment", "--thread-file", db)

    assert first.returncode == 0, first.stderr
    hint = next(line for line in first.stdout.splitlines() if "to answer later" in line)
    assert f"{scheme}://{rest}?token=[redacted]&v=2" in hint
    for secret in ("robot", "pa55word-xyz", "tok-98765"):
        assert secret not in first.stdout + first.stderr


def test_run_without_a_message_says_so_and_how_to_give_one_piped(served: Callable[[Any], Any]) -> None:
    endpoint = served(ScriptedAgent.chat(lambda run_input: f"got {len(run_input.messages)} message(s)"))

    piped = agui("run", endpoint.url, "--plain", stdin="Delete the staging environment\n")
    asked = agui("run", endpoint.url, "--plain", "--ask", stdin="Delete the staging environment\n")

    assert piped.returncode == 0, piped.stderr
    assert ("no message given: the run carries none (give one with -m TEXT; a message piped in is read with "
            "--ask)") in piped.stdout
    assert endpoint.received[0].body["messages"] == []  # (what the note says: nothing of the line was sent)
    assert asked.returncode == 0 and "no message given" not in asked.stdout
    assert [m["content"] for m in endpoint.received[1].body["messages"]] == ["Delete the staging environment"]


def test_run_without_a_message_in_json_mode_gives_only_advice_that_works(served: Callable[[Any], Any]) -> None:
    # --ask is refused beside --json (it puts questions to a person): the note pointed a program's
    # author at it, and following it was a usage error.
    endpoint = served(ScriptedAgent.chat(lambda run_input: "ok"))

    piped = agui("run", endpoint.url, "--json", stdin="Delete the staging environment\n")
    followed = agui("run", endpoint.url, "--json", "--ask", stdin="Delete the staging environment\n")

    assert piped.returncode == 0, piped.stderr
    assert "no message given: the run carries none (give one with -m TEXT)" in piped.stderr
    assert "--ask" not in piped.stderr  # (before: "a message piped in is read with --ask")
    assert followed.returncode == 2 and "--ask" in followed.stderr  # (why the advice must not name it)


def test_run_refuses_a_new_message_while_the_thread_waits_on_an_interrupt(
        served: Callable[[Any], Any], tmp_path: Path) -> None:
    endpoint = served(ScriptedAgent.demo())
    db = str(tmp_path / "t.db")
    assert agui("run", endpoint.url, "-m", "delete staging", "--thread-file", db).returncode == 0

    refused = agui("run", endpoint.url, "-m", "something else", "--thread-file", db)

    assert refused.returncode == 2
    assert "add --resume" in refused.stderr
    assert len(endpoint.received) == 1


def test_run_json_prints_events_as_json_lines_then_the_final_thread(served: Callable[[Any], Any]) -> None:
    endpoint = served(ScriptedAgent.demo())

    done = agui("run", endpoint.url, "-m", "delete staging", "--json", "--yes", "--state", '{"from": "cli"}')

    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    events, final = lines[:-1], lines[-1]
    assert [e["type"] for e in events].count("RUN_STARTED") == 2
    assert events[-1]["type"] == "RUN_FINISHED"
    assert final["outcome"] == "success" and final["openInterrupts"] == []
    assert final["state"]["task"]["status"] == "done"
    assert final["messages"][0] == {"id": final["messages"][0]["id"], "role": "user", "content": "delete staging"}
    assert endpoint.received[0].body["state"] == {"from": "cli"}
    assert "answer to" in done.stderr  # people's notes go to stderr; stdout holds data only


def test_run_abandons_an_expired_interrupt_instead_of_answering_it(served: Callable[[Any], Any]) -> None:
    endpoint = served(ScriptedAgent.demo(expires_in=-60))

    done = agui("run", endpoint.url, "-m", "delete staging", "--yes", "--abandon-expired")

    assert done.returncode == 0, done.stderr
    assert "(expired)" in done.stdout
    assert "has expired and cannot be answered: abandoning it" in done.stdout
    assert endpoint.received[1].body["resume"] == [
        {"interruptId": endpoint.received[1].body["resume"][0]["interruptId"], "status": "cancelled"}]
    assert "the request was abandoned" in done.stdout


def test_run_yes_with_a_backtracking_pattern_and_default_is_refused_at_once(served: Callable[[Any], Any]) -> None:
    # The agent's own default fails its own pattern, one Python's re takes minutes to reject.
    schema = {"type": "object", "required": ["code"], "properties": {
        "code": {"type": "string", "pattern": "^(a+)+$", "default": "a" * 34 + "!"}}}
    endpoint = served(ScriptedAgent.interrupts(1, response_schema=schema))

    done = agui("run", endpoint.url, "-m", "hi", "--yes")

    assert done.returncode == 2, done.stderr
    assert "answer refused" in done.stdout and "does not match" in done.stdout
    assert endpoint.agent.request_count == 1


def test_run_shows_a_schema_that_cannot_judge_any_answer_instead_of_asking_again(
        served: Callable[[Any], Any]) -> None:
    schema = {"type": "object", "required": ["ticket"], "properties": {
        "ticket": {"type": "string", "description": "The ticket to close", "$ref": "#/$defs/missing"}}}
    endpoint = served(ScriptedAgent.interrupts(1, response_schema=schema))
    env = {**ENV, "TERM": "xterm-256color"}
    child = pexpect.spawn(sys.executable, ["-m", "agui_client.cli", "run", endpoint.url, "-m", "hi"], env=env,
                          encoding="utf-8", dimensions=(50, 160), timeout=30)
    try:
        child.expect(r"ticket \(The ticket to close\)")
        child.sendline("T-1")
        child.expect(r"answer refused \(UnusableResponseSchema\)")
        child.expect("unresolvable")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 2
    assert "not accepted" not in (child.before or "")
    assert endpoint.agent.request_count == 1


def test_run_that_ends_with_run_error_exits_1_and_shows_the_error(served: Callable[[Any], Any]) -> None:
    endpoint = served(ScriptedAgent([[Start(), RunErrorEvent(message="the model is overloaded", code="busy")]]))

    failed = agui("run", endpoint.url, "-m", "hi")

    assert failed.returncode == 1
    assert "RUN_ERROR" in failed.stdout and "the model is overloaded (code busy)" in failed.stdout


def _echoing_credentials(status: int) -> Callable[..., Any]:
    """An agent that repeats the request's credentials: in a 403 body, or in a stream's RUN_ERROR."""
    async def app(scope: Any, receive: Any, send: Any) -> None:
        request = await request_json(receive)
        headers = {name.decode(): value.decode() for name, value in scope["headers"]}
        echoed = f"you sent {headers['authorization']} and key {headers['x-api-key']}"
        ids = {"threadId": request["threadId"], "runId": request["runId"]}
        body = echoed if status != 200 else sse_text({"type": "RUN_STARTED", **ids},
                                                 {"type": "RUN_ERROR", "message": echoed})
        kind = b"text/plain" if status != 200 else b"text/event-stream"
        await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", kind)]})
        await send({"type": "http.response.body", "body": body.encode()})
    return app


@pytest.mark.parametrize("status", [403, 200], ids=["403-body", "run-error"])
def test_run_never_shows_the_credentials_an_agent_echoes(served: Callable[[Any], Any], status: int) -> None:
    token, key = "sk-live-0f1e2d3c4b5a6978", "ak-77f0c1d2e3b4"
    endpoint = served(_echoing_credentials(status))
    env = {**ENV, "TERM": "xterm-256color"}
    env.pop("NO_COLOR")

    # (a terminal wide enough that no line is wrapped: a secret split over two lines would hide a leak)
    child = pexpect.spawn(sys.executable, ["-m", "agui_client.cli", "run", endpoint.url, "-m", "hi",
                                           "-H", f"Authorization: Bearer {token}", "-H", f"X-Api-Key: {key}"],
                          env=env, encoding="utf-8", dimensions=(50, 400), timeout=30)
    child.expect(pexpect.EOF)
    child.close()
    shown = child.before

    assert child.exitstatus == 1
    assert token not in shown and key not in shown
    assert "you sent [redacted] and key [redacted]" in shown


def test_run_names_the_frontend_tool_calls_it_leaves_with_their_arguments_on_one_line(
        served: Callable[[Any], Any]) -> None:
    from agui_client.testing import Finish, tool_call

    endpoint = served(ScriptedAgent([[Start(), *tool_call("c1", "pick_date", {"after": "2026-12-24"}),
                                      *tool_call("c2", "x\nassistant: approved"), Finish()]]))
    done = agui("run", endpoint.url, "-m", "when?")

    assert done.returncode == 0, done.stderr
    (line,) = [line for line in done.stdout.splitlines() if "frontend tool call" in line]
    assert 'pick_date({"after":"2026-12-24"})' in line and "(the CLI does not run them)" in line
    # (a name forging a line of its own stays on this one)
    assert "assistant: approved()" in line
    assert not any(line.startswith("assistant: approved") for line in done.stdout.splitlines())


def test_run_against_nothing_listening_exits_1() -> None:
    failed = agui("run", "http://127.0.0.1:9/agent", "-m", "hi")

    assert failed.returncode == 1
    assert "could not reach" in failed.stdout


def test_run_max_retries_sends_again_after_a_503_and_the_run_goes_on(served: Callable[[Any], Any]) -> None:
    busy = Respond(status=503, body="busy", headers={"Retry-After": "0"})
    endpoint = served(ScriptedAgent([busy, [Start(), Finish()]]))
    refused = served(ScriptedAgent([busy, [Start(), Finish()]]))

    done = agui("run", endpoint.url, "-m", "hi", "--max-retries", "1")
    failed = agui("run", refused.url, "-m", "hi")  # (the default: no retry)

    assert done.returncode == 0, done.stderr
    assert endpoint.agent.request_count == 2
    assert failed.returncode == 1 and refused.agent.request_count == 1
    assert agui("run", endpoint.url, "-m", "hi", "--max-retries", "-1").returncode == 2


def test_run_usage_problems_exit_2() -> None:
    assert agui("run", "http://127.0.0.1:9/", "-H", "no colon").returncode == 2
    assert agui("run", "http://127.0.0.1:9/", "--state", "{nope").returncode == 2
    assert agui("run", "http://127.0.0.1:9/", "--resume", "--yes").returncode == 2


# --------------------------------------------------------------------------------------------------
# agui replay / agui verify
# --------------------------------------------------------------------------------------------------

INTERRUPTED = sse_text(
    {"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"},
    {"type": "STATE_SNAPSHOT", "snapshot": {"step": "asking"}},
    {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "May I "},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "proceed?"},
    {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
    {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1", "outcome": {"type": "interrupt", "interrupts": [
        {"id": "ask-1", "reason": "approval", "message": "Proceed with the migration?",
         "responseSchema": {"type": "object", "properties": {"approved": {"type": "boolean"}}}}]}},
)

#: Two errors (content for a message never started, a tool call never started) and one warning.
BROKEN = _jsonl(
    {"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "ghost", "delta": "boo"},
    {"type": "SOMETHING_NEW", "x": 1},
    {"type": "TEXT_MESSAGE_START", "messageId": "m1"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "Hello"},
    {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
    {"type": "TOOL_CALL_END", "toolCallId": "nowhere"},
    {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1"},
)

WARNED = _jsonl(
    {"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"},
    {"type": "SOMETHING_NEW", "x": 1},
    {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1"},
)


def test_replay_shows_messages_state_outcome_and_open_interrupts(tmp_path: Path) -> None:
    capture = tmp_path / "run.sse"
    capture.write_text(INTERRUPTED)

    shown = agui("replay", str(capture))

    assert shown.returncode == 0, shown.stderr
    assert "7 event(s), 1 run(s)" in shown.stdout
    assert "assistant: May I proceed?" in shown.stdout
    assert "outcome: interrupt" in shown.stdout
    assert '"step": "asking"' in shown.stdout
    assert "id: ask-1" in shown.stdout and "Proceed with the migration?" in shown.stdout


def test_replay_json_is_the_wire_thread_plus_the_outcome_and_reads_stdin() -> None:
    shown = agui_process("replay", "--json", "-", stdin=INTERRUPTED)

    assert shown.returncode == 0, shown.stderr
    report = json.loads(shown.stdout)
    assert report["outcome"] == "interrupt"
    assert report["state"] == {"step": "asking"}
    assert report["messages"] == [{"id": "m1", "role": "assistant", "content": "May I proceed?"}]
    assert [i["id"] for i in report["openInterrupts"]] == ["ask-1"]


def test_replay_of_a_recording_that_breaks_the_protocol_exits_1_naming_index_and_rule(tmp_path: Path) -> None:
    capture = tmp_path / "broken.jsonl"
    capture.write_text(BROKEN)

    shown = agui("replay", str(capture))
    as_json = agui("replay", "--json", str(capture))

    assert shown.returncode == 1
    assert "event #1, TEXT_MESSAGE_CONTENT, rule TX-02" in shown.stdout
    assert "no open text message 'ghost'" in shown.stdout
    assert as_json.returncode == 1
    error = json.loads(as_json.stdout)["error"]
    assert (error["index"], error["eventType"], error["rule"].split("/")[0]) == (1, "TEXT_MESSAGE_CONTENT", "TX-02")


def test_replay_and_verify_exit_2_on_unreadable_input(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.txt"
    garbage.write_text("this is not\nan event stream\n")
    missing = str(tmp_path / "missing.sse")

    missing_file = agui_process("verify", missing)
    not_events = agui("replay", str(garbage))
    empty_stdin = agui_process("verify", "-", stdin="")

    assert missing_file.returncode == 2 and "cannot read" in missing_file.stderr
    assert not_events.returncode == 2 and "no AG-UI events found" in not_events.stderr
    assert empty_stdin.returncode == 2


def test_verify_lists_every_finding_with_index_line_offset_type_and_rule(tmp_path: Path) -> None:
    capture = tmp_path / "broken.jsonl"
    capture.write_text(BROKEN)
    starts = [0]
    for line in BROKEN.encode().splitlines(keepends=True):
        starts.append(starts[-1] + len(line))

    shown = agui("verify", str(capture))
    as_json = agui("verify", "--json", str(capture))

    assert shown.returncode == 1
    lines = shown.stdout.splitlines()
    assert (f"error: event #1 (line 2, byte {starts[1]}) TEXT_MESSAGE_CONTENT [TX-02/AGUI101] "
            "no open text message 'ghost'") in lines
    assert any(line.startswith(f"warning: event #2 (line 3, byte {starts[2]}) SOMETHING_NEW [UK-02]") for line in lines)
    assert any(line.startswith(f"error: event #6 (line 7, byte {starts[6]}) TOOL_CALL_END [TC-02") for line in lines)
    assert "8 event(s), 2 error(s), 1 warning(s)" in shown.stdout
    report = json.loads(as_json.stdout)
    assert as_json.returncode == 1
    assert [(f["severity"], f["index"], f["line"], f["offset"]) for f in report["findings"]] == [
        ("error", 1, 2, starts[1]), ("warning", 2, 3, starts[2]), ("error", 6, 7, starts[6])]


def test_verify_exits_0_on_a_clean_recording_and_on_warnings_alone(tmp_path: Path) -> None:
    clean = tmp_path / "clean.sse"
    clean.write_text(INTERRUPTED)
    warned = tmp_path / "warned.jsonl"
    warned.write_text(WARNED)

    ok = agui("verify", str(clean))
    warnings_only = agui("verify", str(warned))

    assert ok.returncode == 0 and "0 error(s), 0 warning(s) - clean" in ok.stdout
    assert warnings_only.returncode == 0 and "0 error(s), 1 warning(s)" in warnings_only.stdout


# --------------------------------------------------------------------------------------------------
# the entry point
# --------------------------------------------------------------------------------------------------


def test_without_rich_the_command_prints_an_install_hint_and_exits_2() -> None:
    code = ("import sys; sys.modules['rich'] = None\n"
            "import agui_client.cli as cli\n"
            "sys.exit(cli.main(['demo']))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=ENV, timeout=30,
                          stdin=subprocess.DEVNULL, check=False)

    assert done.returncode == 2
    assert "pip install 'agui-client[cli]'" in done.stderr


def test_the_installed_agui_script_runs() -> None:
    script = Path(sys.executable).with_name("agui")
    # `pip install -e .` puts the entry point next to the interpreter; CI installs exactly so.
    assert script.exists(), "the agui entry point is not installed next to this interpreter"

    done = subprocess.run([str(script), "--help"], capture_output=True, text=True, env=ENV, timeout=30,
                          stdin=subprocess.DEVNULL, check=False)

    assert done.returncode == 0
    for command in ("demo", "run", "replay", "verify"):
        assert command in done.stdout


# --------------------------------------------------------------------------------------------------
# the answer form (in process: the prompts' logic without a terminal)
# --------------------------------------------------------------------------------------------------


class ScriptedAsker:
    """Answers the form's questions from a list, recording what was asked and said."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.asked: list[str] = []
        self.said: list[str] = []

    def _next(self, label: str, default: str | None) -> str:
        self.asked.append(label)
        answer = self.answers.pop(0)
        return default if answer == "" and default is not None else answer

    def ask_bool(self, label: str, *, default: bool | None) -> bool:
        return self._next(label, None if default is None else ("y" if default else "n")) == "y"

    def ask_choice(self, label: str, choices: Any, *, default: str | None) -> str:
        return self._next(label, default)

    def ask_text(self, label: str, *, default: str | None) -> str:
        return self._next(label, default)

    def say(self, text: str) -> None:
        self.said.append(text)


def test_yes_payload_takes_defaults_approves_and_fills_required_fields() -> None:
    from agui_client.cli.forms import yes_payload
    from agui_client.testing import ANSWER_SCHEMA, APPROVAL_SCHEMA

    assert yes_payload(APPROVAL_SCHEMA) == {"approved": True, "environment": "staging", "ttl_minutes": 60}
    assert yes_payload(ANSWER_SCHEMA) == {"answer": "yes"}
    assert yes_payload(None) == {"approved": True}
    assert yes_payload({"type": "object", "properties": {"n": {"type": "integer", "minimum": 3}, "k": {"enum": [7, 8]}},
                        "required": ["n", "k"]}) == {"n": 3, "k": 7}


def test_numbers_typed_are_read_exactly_and_nan_or_inf_refused() -> None:
    # float() would round an integer past 2**53; "nan"/"inf" are not JSON (the resume would refuse them).
    from agui_client.cli.forms import ask_payload

    schema = {"type": "object", "required": ["id", "ratio"],
              "properties": {"id": {"type": "integer"}, "ratio": {"type": "number"}}}
    asker = ScriptedAsker("1.5", "12345678901234567891", "nan", "inf", "2.5e-1")

    payload = ask_payload(schema, asker)

    assert payload == {"id": 12345678901234567891, "ratio": 0.25}
    assert asker.said == ["id must be an integer", "ratio must be a number", "ratio must be a number"]


def test_the_form_checks_each_value_against_its_schema_and_insists_on_required_fields() -> None:
    from agui_client.cli.forms import ask_payload

    schema = {"type": "object", "required": ["name", "level"], "properties": {
        "name": {"type": "string"},
        "level": {"enum": [1, 2, 3]},
        "ratio": {"type": "number", "maximum": 1},
        "note": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
    }}
    asker = ScriptedAsker("", "Ada", "2", "1.5", "0.25", "", "[1]", '["a"]')

    payload = ask_payload(schema, asker)

    assert payload == {"name": "Ada", "level": 2, "ratio": 0.25, "tags": ["a"]}
    assert asker.said[0] == "name is required"
    assert "1.5 is greater than the maximum of 1" in asker.said[1]
    assert "1 is not of type 'string'" in asker.said[2]


def test_an_integer_too_long_for_the_interpreter_is_refused_not_a_crash() -> None:
    from agui_client.cli.forms import ask_payload

    schema = {"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}}
    asker = ScriptedAsker("1" * 5000, "5")

    assert ask_payload(schema, asker) == {"n": 5}
    assert asker.said == ["n must be an integer"]
