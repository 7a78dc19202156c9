"""The ``agui`` command's recordings and connection flags (issue 18, items 2 and 5), against real
servers on 127.0.0.1: run in this process (``clikit.agui_here``) where the point is what a command
prints and records, as real processes where it is the process (two processes on one thread file, a
replay by a third; ``agui serve`` on a pseudo-terminal).

``--record DIR`` on ``run`` and ``demo``; ``agui replay DIR`` folding a recording into the thread
the live run left (``to_wire()`` equal); ``agui replay`` of ``agui run --json`` output; ``agui serve``
of the demo agent and of a recording (driven through a pseudo-terminal, Ctrl-C stops it);
``--timeout``, ``--idle-timeout``, ``-H``; ``--answer ID=JSON``; ``--yes`` on an expired interrupt and
on a required field without a default; ``agui verify``'s line and byte offsets and its single
report of a refused ``RUN_FINISHED``.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pexpect
import pytest
from clikit import ENV, Ran, agui_here, agui_process
from serverkit import free_port
from wirekit import sse_text

from agui_client import AgentClient, HTTPStatusError
from agui_client.testing import ANSWER_SCHEMA, Disconnect, Finish, Gate, ScriptedAgent, Start, Wait, text_message
from agui_client.types.run import Interrupt, RunFinishedInterruptOutcome


def agui(*args: str) -> Ran:
    """Run ``agui ARGS`` in this process with stdin not a terminal (``clikit``: no interpreter start)."""
    return agui_here(*args)


APPROVE = '{"approved": true, "environment": "staging", "ttl_minutes": 60}'


def _thread_line(stdout: str) -> dict[str, Any]:
    last = json.loads(stdout.splitlines()[-1])
    assert last["kind"] == "agui.thread"
    return last


def _wire(thread: dict[str, Any]) -> dict[str, Any]:
    return {key: thread[key] for key in ("messages", "state", "openInterrupts")}


# --------------------------------------------------------------------------------------------------
# --record and agui replay DIR
# --------------------------------------------------------------------------------------------------


def test_a_recording_replays_to_the_thread_the_live_run_left(served: Callable[[Any], Any], tmp_path: Path) -> None:
    endpoint = served(ScriptedAgent.demo())
    rec = tmp_path / "rec"

    live = agui("run", endpoint.url, "-m", "delete staging", "--yes", "--json", "--record", str(rec),
                "-H", "Authorization: Bearer sk-never-written")
    replayed = agui("replay", "--json", str(rec))
    shown = agui("replay", str(rec))

    assert live.returncode == 0, live.stderr
    assert sorted(p.name for p in rec.iterdir()) == [
        "01.request.json", "01.response.json", "01.sse", "02.request.json", "02.response.json", "02.sse"]
    assert not any(b"sk-never-written" in p.read_bytes() for p in rec.iterdir())
    assert replayed.returncode == 0, replayed.stderr
    thread, folded = _thread_line(live.stdout), json.loads(replayed.stdout)
    assert _wire(folded) == _wire(thread)  # the user's messages included: they came from the requests
    assert folded["messages"][0]["content"] == "delete staging"
    assert folded["outcome"] == "success" and folded["exchanges"] == 2
    assert shown.returncode == 0, shown.stderr
    assert "2 exchange(s)" in shown.stdout and "2 run(s)" in shown.stdout
    assert "user: delete staging" in shown.stdout
    assert "Done: the staging environment is deleted." in shown.stdout


def test_two_processes_on_one_thread_file_leave_one_recording_of_the_whole_thread(
        served: Callable[[Any], Any], tmp_path: Path) -> None:
    endpoint = served(ScriptedAgent.demo())
    db, rec = str(tmp_path / "t.db"), str(tmp_path / "rec")

    first = agui_process("run", endpoint.url, "-m", "delete qa", "--thread-file", db, "--record", rec)
    second = agui_process("run", endpoint.url, "--thread-file", db, "--resume", "--yes", "--record", rec, "--json")
    replayed = agui_process("replay", "--json", rec)

    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert (tmp_path / "rec" / "02.sse").is_file()
    assert _wire(json.loads(replayed.stdout)) == _wire(_thread_line(second.stdout))


def test_demo_record_keeps_the_conversation_with_the_bundled_agent(tmp_path: Path) -> None:
    done = agui("demo", "--yes", "--record", str(tmp_path))
    shown = agui("replay", str(tmp_path))

    assert done.returncode == 0, done.stderr
    assert shown.returncode == 0, shown.stderr
    assert "Done: the staging environment is deleted." in shown.stdout
    assert "Please delete the staging environment" in shown.stdout


def test_replay_of_run_json_output_skips_the_thread_line(served: Callable[[Any], Any], tmp_path: Path) -> None:
    endpoint = served(ScriptedAgent.demo())
    live = agui("run", endpoint.url, "-m", "delete staging", "--yes", "--json")
    capture = tmp_path / "rec.jsonl"
    capture.write_text(live.stdout)
    # The unmarked line older versions wrote is recognised too.
    legacy = tmp_path / "legacy.jsonl"
    thread = _thread_line(live.stdout)
    del thread["kind"]
    legacy.write_text("".join(live.stdout.splitlines(keepends=True)[:-1]) + json.dumps(thread) + "\n")

    shown = agui("replay", str(capture))
    old = agui("replay", "--json", str(legacy))
    verified = agui("verify", str(capture))

    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert "thread line `agui run --json` ends with was skipped" in shown.stdout
    assert "outcome: success" in shown.stdout
    assert old.returncode == 0, old.stdout
    assert json.loads(old.stdout)["state"] == thread["state"]
    assert verified.returncode == 0 and "0 error(s)" in verified.stdout


def test_replay_of_a_folder_that_is_not_a_recording_exits_2(tmp_path: Path) -> None:
    empty = agui("replay", str(tmp_path))

    assert empty.returncode == 2 and "holds no recorded exchange" in empty.stderr


# --------------------------------------------------------------------------------------------------
# agui serve
# --------------------------------------------------------------------------------------------------


def _spawn_serve(*args: str) -> tuple[pexpect.spawn, str]:
    child = pexpect.spawn(sys.executable, ["-m", "agui_client.cli", "serve", *args], env=ENV, encoding="utf-8",
                          dimensions=(50, 200), timeout=30)
    child.expect(r"at (http://127\.0\.0\.1:\d+/)")
    return child, child.match.group(1)


def test_serve_runs_a_recording_for_a_second_client_and_refuses_a_mismatch(
        served: Callable[[Any], Any], tmp_path: Path) -> None:
    endpoint = served(ScriptedAgent.demo())
    rec = tmp_path / "rec"
    live = agui("run", endpoint.url, "-m", "delete staging", "--yes", "--json", "--record", str(rec))
    recorded = _thread_line(live.stdout)

    child, url = _spawn_serve(str(rec))
    try:
        child.expect("Ctrl-C stops")
        with AgentClient(url) as client:
            with pytest.raises(HTTPStatusError) as refused:
                client.thread("another-thread").run("delete staging")
            thread = client.thread(recorded["threadId"])
            first = thread.run("delete staging")
            done = thread.run(resume=thread.resume_builder().answer(first.interrupts[0].id, json.loads(APPROVE)))
        child.expect("request refused \\(409\\)")
        child.sendintr()
        child.expect("stopped")
        child.expect("1 request\\(s\\) did not match the recording")
        child.expect(pexpect.EOF)
    finally:
        child.close()

    assert child.exitstatus == 0
    assert refused.value.status_code == 409 and "thread id 'another-thread'" in refused.value.payload["detail"]
    assert done.outcome == "success"
    assert thread.state.state == recorded["state"]
    def said(messages: list[dict[str, Any]]) -> list[str]:
        return [m["content"] for m in messages if m["role"] == "assistant" and m.get("content")]
    assert said(thread.state.to_wire()["messages"]) == said(recorded["messages"])
    assert len(said(recorded["messages"])) >= 2


def test_serve_demo_prints_its_url_and_serves_the_demo_agent() -> None:
    port = free_port()
    child, url = _spawn_serve("demo", "--port", str(port))
    assert url == f"http://127.0.0.1:{port}/"
    try:
        with AgentClient(url) as client:
            result = client.thread().run("delete staging")
        child.sendintr()
        child.expect(pexpect.EOF)
    finally:
        child.close()

    assert result.outcome == "interrupt" and result.interrupts[0].reason == "approval"
    assert child.exitstatus == 0


def test_the_fastapi_example_says_how_to_start_an_agent_for_its_agent_url() -> None:
    readme = (Path(__file__).parent.parent / "examples" / "README.md").read_text()

    started = re.search(r"agui serve demo --port (\d+)", readme)
    assert started is not None
    assert f"AGENT_URL=http://127.0.0.1:{started.group(1)}/" in readme


# --------------------------------------------------------------------------------------------------
# --timeout, --idle-timeout, -H
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("flag", "said"), [("--timeout", "went on past its run_timeout of 1.0s"),
                                            ("--idle-timeout", "for 1.0s")])
def test_a_silent_agent_is_given_up_on_after_the_timeout_given(
        served: Callable[[Any], Any], flag: str, said: str) -> None:
    gate = Gate()
    endpoint = served(ScriptedAgent([[Start(), Wait(gate, timeout=60)]]))
    try:
        failed = agui("run", endpoint.url, "-m", "hi", flag, "1")
    finally:
        gate.open()

    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert said in failed.stdout


def test_timeouts_and_headers_given_wrong_are_usage_problems_and_no_value_is_echoed() -> None:
    bad_timeout = agui("run", "http://127.0.0.1:9/", "-m", "hi", "--timeout", "-1")
    no_colon = agui("run", "http://127.0.0.1:9/", "-m", "hi", "-H", "Bearer sk-typed-without-a-colon")

    assert bad_timeout.returncode == 2 and "positive number of seconds" in bad_timeout.stderr
    assert no_colon.returncode == 2 and "-H expects 'Name: value'" in no_colon.stderr
    assert "sk-typed-without-a-colon" not in no_colon.stdout + no_colon.stderr


# --------------------------------------------------------------------------------------------------
# --answer ID=JSON, --yes
# --------------------------------------------------------------------------------------------------


def test_answer_per_interrupt_and_a_bare_answer_for_the_rest(served: Callable[[Any], Any]) -> None:
    each = served(ScriptedAgent.interrupts(3))
    done = agui("run", each.url, "-m", "hi", "--answer", 'interrupt-1={"answer": "one"}',
                "--answer", 'interrupt-3={"answer": "three"}', "--answer", '{"answer": "rest"}',
                "--answer", 'interrupt-9={"answer": "nine"}')

    assert done.returncode == 0, done.stdout + done.stderr
    resume = {e["interruptId"]: e["payload"] for e in each.received[1].body["resume"]}
    assert resume == {"interrupt-1": {"answer": "one"}, "interrupt-2": {"answer": "rest"},
                      "interrupt-3": {"answer": "three"}}
    assert "--answer named interrupt(s) interrupt-9 that were not open: not used" in done.stdout


def _asking_ids(*ids: str) -> ScriptedAgent:
    return ScriptedAgent([
        [Start(), Finish(outcome=RunFinishedInterruptOutcome(interrupts=tuple(
            Interrupt(id=interrupt_id, reason="input") for interrupt_id in ids)))],
        [Start(), *text_message("m2", "done"), Finish()],
    ])


def test_answer_names_an_interrupt_id_holding_an_equals_sign_as_a_json_string(served: Callable[[Any], Any]) -> None:
    # Split at the first "=", "a=b={...}" named interrupt "a" with the JSON text 'b={...}': an id holding
    # "=" could not be answered by name at all.
    endpoint = served(_asking_ids("a=b", "c", "d"))
    done = agui("run", endpoint.url, "-m", "hi", "--answer", '"a=b"={"ok": true}', "--answer", ' c =[1]',
                "--answer", '"d"="x=y"')

    assert done.returncode == 0, done.stdout + done.stderr
    resume = {e["interruptId"]: e["payload"] for e in endpoint.received[1].body["resume"]}
    assert resume == {"a=b": {"ok": True}, "c": [1], "d": "x=y"}


def test_answer_with_a_quoted_id_that_is_not_followed_by_json_is_a_usage_problem(
        served: Callable[[Any], Any]) -> None:
    endpoint = served(_asking_ids("a=b"))
    done = agui("run", endpoint.url, "-m", "hi", "--answer", '"a=b"={ok}')

    assert done.returncode == 2
    assert "--answer a=b= is not JSON" in done.stderr, done.stderr
    assert endpoint.agent.request_count == 0  # (refused before anything was sent)


def test_answer_without_one_for_an_open_interrupt_sends_nothing(served: Callable[[Any], Any]) -> None:
    endpoint = served(ScriptedAgent.interrupts(2))
    done = agui("run", endpoint.url, "-m", "hi", "--answer", 'interrupt-1={"answer": "one"}')
    twice = agui("run", endpoint.url, "-m", "hi", "--answer", "{}", "--answer", "[]")

    assert done.returncode == 2
    assert "no --answer for interrupt(s) interrupt-2 (open: interrupt-1, interrupt-2)" in done.stderr
    assert endpoint.agent.request_count == 1  # the first run only: no resume was sent
    assert twice.returncode == 2 and "more than once" in twice.stderr


@pytest.mark.parametrize("flags", [["--yes"], ["--answer", APPROVE]], ids=["yes", "answer"])
def test_an_expired_interrupt_under_yes_or_answer_exits_1_and_sends_nothing(
        served: Callable[[Any], Any], flags: list[str]) -> None:
    endpoint = served(ScriptedAgent.demo(expires_in=-60))

    done = agui("run", endpoint.url, "-m", "delete staging", *flags)

    assert done.returncode == 1
    assert re.search(r"interrupt\(s\) \S+ expired and cannot be answered; nothing was sent "
                     r"\(--abandon-expired abandons them", done.stdout)
    assert endpoint.agent.request_count == 1
    assert "abandoning it" not in done.stdout


def test_yes_refuses_to_invent_a_required_value_without_a_default(served: Callable[[Any], Any]) -> None:
    endpoint = served(ScriptedAgent.interrupts(1, response_schema=ANSWER_SCHEMA))

    done = agui("run", endpoint.url, "-m", "hi", "--yes")

    assert done.returncode == 2
    assert ("--yes does not invent answers: interrupt interrupt-1 requires answer with no default; "
            "give them with --answer interrupt-1=JSON") in done.stderr
    assert endpoint.agent.request_count == 1


def test_what_yes_fills_and_what_it_leaves_to_a_person() -> None:
    from agui_client.cli.forms import yes_unfilled
    from agui_client.testing import APPROVAL_SCHEMA

    assert yes_unfilled(APPROVAL_SCHEMA) == []
    assert yes_unfilled(ANSWER_SCHEMA) == ["answer"]
    assert yes_unfilled(None) == []
    assert yes_unfilled({"type": "object", "required": ["ok", "k", "one", "n", "env"], "properties": {
        "ok": {"type": "boolean"}, "k": {"const": 7}, "one": {"enum": ["only"]}, "n": {"type": "integer"},
        "env": {"enum": ["a", "b"]}}}) == ["n", "env"]
    assert yes_unfilled({"type": "string"}) == ["(the answer)"]
    assert yes_unfilled({"type": "string", "default": "x"}) == []


# --------------------------------------------------------------------------------------------------
# agui verify
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("form", ["sse", "jsonl"])
def test_replay_names_the_line_and_byte_of_the_event_that_breaks_the_protocol(tmp_path: Path, form: str) -> None:
    # replay named the event's number only; in a capture of thousands of lines, finding it meant
    # counting events by hand, or running verify. It names the line and byte as verify does.
    events = [{"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"},
              {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
              {"type": "TEXT_MESSAGE_CONTENT", "messageId": "ghost", "delta": "boo"}]
    text = sse_text(*events) if form == "sse" else "".join(json.dumps(e) + "\n" for e in events)
    capture = tmp_path / f"broken.{form}"
    capture.write_text(text)
    offset = text.index('{"type": "TEXT_MESSAGE_CONTENT"') - (len("data: ") if form == "sse" else 0)
    line = text[:offset].count("\n") + 1

    shown = agui("replay", str(capture))
    report = json.loads(agui("replay", "--json", str(capture)).stdout)

    assert shown.returncode == 1
    assert (f"the recording breaks the protocol at event #2 (line {line}, byte {offset}); "
            f"`agui verify {capture}` lists every finding") in " ".join(shown.stdout.split())
    assert (report["error"]["index"], report["error"]["line"], report["error"]["offset"]) == (2, line, offset)


def test_verify_reports_a_refused_run_finished_once_with_its_line_and_byte_offset(tmp_path: Path) -> None:
    started = {"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"}
    capture = tmp_path / "open.sse"
    capture.write_text(sse_text(started, {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
                            {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1"}))
    third = capture.read_text().index('data: {"type": "RUN_FINISHED"')

    shown = agui("verify", str(capture))
    report = json.loads(agui("verify", "--json", str(capture)).stdout)

    assert shown.returncode == 1
    assert f"error: event #2 (line 5, byte {third}) RUN_FINISHED [TX-04/AGUI103]" in shown.stdout
    assert "ended without" not in shown.stdout
    assert "1 error(s)" in shown.stdout
    assert [(f["index"], f["line"], f["offset"], f["rule"]) for f in report["findings"]] == [
        (2, 5, third, "TX-04/AGUI103")]


def test_verify_places_a_finding_at_the_end_of_the_file(tmp_path: Path) -> None:
    capture = tmp_path / "cut.sse"
    capture.write_text(sse_text({"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"}))

    report = json.loads(agui("verify", "--json", str(capture)).stdout)

    assert [(f["rule"], f["line"], f["offset"]) for f in report["findings"]] == [
        ("LC-04/AGUI003", None, len(capture.read_bytes()))]


def test_verify_lists_the_repairs_replay_reports(tmp_path: Path) -> None:
    # A lone UTF-16 half in a text delta is repaired when the text is joined (no event index): replay()
    # reports it, and so does verify, at the end of the file.
    capture = tmp_path / "half.sse"
    capture.write_text(sse_text({"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"},
                            {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
                            {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "a\ud83d"},
                            {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
                            {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1"}))
    from agui_client import replay

    assert [w.code for w in replay(capture).warnings] == ["UTF16-SURROGATE"]
    shown = agui("verify", "--plain", str(capture))
    report = json.loads(agui("verify", "--json", str(capture)).stdout)

    assert shown.returncode == 0 and "0 error(s), 1 warning(s) - no errors" in shown.stdout
    assert [(f["rule"], f["index"], f["line"]) for f in report["findings"]] == [("UTF16-SURROGATE", None, None)]
    assert "warning: at the end" in shown.stdout and "[UTF16-SURROGATE]" in shown.stdout


def test_verify_of_a_recording_folder_judges_each_run_in_the_thread_it_continued(
        served: Callable[[Any], Any], tmp_path: Path) -> None:
    endpoint = served(ScriptedAgent.demo())
    assert agui("run", endpoint.url, "-m", "delete staging", "--yes", "--record", str(tmp_path)).returncode == 0

    clean = agui("verify", str(tmp_path))
    summary = json.loads(agui("verify", "--json", str(tmp_path)).stdout)

    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert f"{tmp_path}: 2 exchange(s)" in clean.stdout and "0 error(s), 0 warning(s) - clean" in clean.stdout
    assert (summary["exchanges"], summary["runs"], summary["errors"], summary["findings"]) == (2, 2, 0, [])
    assert summary["events"] > 4

    # The resume's response: its RUN_STARTED names another run than its request (a warning only a
    # run read with its request can give), then a delta for a message nobody started (an error).
    resumed = json.loads((tmp_path / "02.request.json").read_text())
    (tmp_path / "02.sse").write_text(sse_text(
        {"type": "RUN_STARTED", "threadId": resumed["threadId"], "runId": "someone-else"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "ghost", "delta": "boo"},
        {"type": "RUN_FINISHED", "threadId": resumed["threadId"], "runId": "someone-else"}))

    broken = agui("verify", "--plain", str(tmp_path))
    report = json.loads(agui("verify", "--json", str(tmp_path)).stdout)

    assert broken.returncode == 1
    assert {(f["file"], f["index"], f["rule"], f["severity"]) for f in report["findings"]} >= {
        ("02.sse", 0, "LC-08", "warning")}
    assert [f["file"] for f in report["findings"]] == ["02.sse"] * len(report["findings"])
    error = next(f for f in report["findings"] if f["severity"] == "error")
    assert (error["index"], error["eventType"], error["line"]) == (1, "TEXT_MESSAGE_CONTENT", 3)
    assert "error: 02.sse event #1 (line 3, byte" in broken.stdout
    assert "2 exchange(s)" in broken.stdout and f"{report['errors']} error(s)" in broken.stdout


def test_verify_of_a_folder_without_a_run_exits_2(tmp_path: Path) -> None:
    (tmp_path / "01.request.json").write_text(json.dumps({"threadId": "t", "runId": "r", "messages": []}))
    (tmp_path / "01.response.json").write_text(json.dumps({"status": 503, "contentType": "application/json"}))

    refused = agui("verify", str(tmp_path))

    assert refused.returncode == 2
    assert "holds no run: 01: HTTP 503 application/json: not a run, skipped" in refused.stderr


def test_a_command_can_hold_a_stopped_recorder_and_start_it_mid_session(
        served: Callable[[Any], Any], tmp_path: Path) -> None:
    # What `agui chat`'s /record builds on: the shared options' client over a recorder started later.
    import argparse
    import contextlib

    from agui_client.cli.options import open_client
    from agui_client.testing import RecordingTransport

    endpoint = served(ScriptedAgent.chat("hello"))
    recorder = RecordingTransport()
    args = argparse.Namespace(header=["X-Key: k-never-written"], timeout=None, idle_timeout=5.0, record=None)
    with contextlib.ExitStack() as stack:
        thread = open_client(stack, endpoint.url, args, recorder=recorder).thread()
        thread.run("not recorded")
        recorder.start(tmp_path)
        thread.run("recorded")

    assert sorted(p.name for p in tmp_path.iterdir()) == ["01.request.json", "01.response.json", "01.sse"]
    assert json.loads((tmp_path / "01.request.json").read_text())["messages"][-1]["content"] == "recorded"
    assert endpoint.received[1].headers["x-key"] == "k-never-written"
    assert b"k-never-written" not in b"".join(p.read_bytes() for p in tmp_path.iterdir())


def test_replay_of_a_folder_names_the_exchange_that_breaks_the_protocol(
        served: Callable[[Any], Any], tmp_path: Path) -> None:
    endpoint = served(ScriptedAgent.demo())
    assert agui("run", endpoint.url, "-m", "delete staging", "--yes", "--record", str(tmp_path)).returncode == 0
    (tmp_path / "02.sse").write_text(sse_text({"type": "TEXT_MESSAGE_CONTENT", "messageId": "ghost", "delta": "boo"}))

    broken = agui("replay", str(tmp_path))

    assert broken.returncode == 1
    assert "the recording breaks the protocol in 02.sse at event #0 (line 1, byte 0)" in broken.stdout


def _cut_recording(served: Callable[[Any], Any], folder: Path) -> tuple[Path, int, str]:
    """``agui run --record folder`` of a run whose connection dropped after the agent's text: the capture,
    its size in bytes, and how the recording's end is said (after its last event, at its last byte)."""
    endpoint = served(ScriptedAgent([[Start(), *text_message("m1", "half a"), Disconnect()]]))
    assert agui("run", endpoint.url, "-m", "hi", "--record", str(folder)).returncode == 1
    capture = folder / "01.sse"
    size = len(capture.read_bytes())
    return capture, size, f"ends before the run finished, after event #4 (TEXT_MESSAGE_END), at byte {size}"


def test_replay_of_a_run_cut_before_its_end_says_it_ends_after_the_last_event(
        served: Callable[[Any], Any], tmp_path: Path) -> None:
    # The connection dropped after the agent's text: replay said "at event #3 (end, byte N)", naming an
    # event the recording does not hold. It says the recording ends before the run finished, after
    # its last event, by number and type, at the file's last byte.
    capture, _, ends = _cut_recording(served, tmp_path)

    for source, place in ((capture, ""), (tmp_path, " in 01.sse")):
        shown = agui("replay", str(source))

        assert shown.returncode == 1
        said = " ".join(shown.stdout.split())
        assert f"the recording{place} {ends};" in said, said
        assert "(end," not in said and "breaks the protocol" not in said
        # (the panel above the line too: it said "event #5", one past the last event)
        assert f"== protocol error (StreamEnded) == {ends}, rule LC-04/AGUI003" in said and "#5" not in said, said


def test_replay_json_and_verify_of_a_run_cut_before_its_end_say_it_ends_after_the_last_event(
        served: Callable[[Any], Any], tmp_path: Path) -> None:
    # ``replay --json`` gave only the error's index (5: the count of events, one past the last), and
    # ``verify`` said "event #5 (end, byte N)". Both say what the recording ends after, as replay's line;
    # the finding's ``index`` stays the error's typed one.
    capture, size, ends = _cut_recording(served, tmp_path)
    cut = {"index": 5, "error": "StreamEnded", "line": None, "offset": size,
           "after": {"index": 4, "eventType": "TEXT_MESSAGE_END"}, "where": ends}

    replayed = json.loads(agui("replay", str(capture), "--json").stdout)["error"]
    verified = agui("verify", str(capture))
    in_folder = agui("verify", str(tmp_path))
    [listed] = json.loads(agui("verify", str(capture), "--json").stdout)["findings"]

    assert {key: replayed[key] for key in cut} == cut
    assert {key: listed[key] for key in cut} == cut
    assert verified.returncode == 1 and in_folder.returncode == 1
    assert f"error: {ends} - [LC-04/AGUI003] the stream ended" in verified.stdout, verified.stdout
    assert f"error: 01.sse {ends} - [LC-04/AGUI003]" in in_folder.stdout, in_folder.stdout
    assert "(end," not in verified.stdout + in_folder.stdout


def test_replay_of_a_recording_cut_after_an_event_of_an_unknown_type_names_that_type(tmp_path: Path) -> None:
    capture = tmp_path / "cut.sse"
    capture.write_text(sse_text({"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"}, {"type": "VENDOR_NOTE"}))

    shown = agui("replay", str(capture))

    assert shown.returncode == 1
    assert (f"the recording ends before the run finished, after event #1 (VENDOR_NOTE), at byte "
            f"{len(capture.read_bytes())};") in " ".join(shown.stdout.split())


def test_record_on_a_full_disk_says_so_and_the_run_goes_on(served: Callable[[Any], Any], tmp_path: Path) -> None:
    # (the agent's turn makes the answer's file lead to /dev/full, where every write fails as on a full disk)
    folder = tmp_path / "rec"

    def turn(run_input: Any) -> list[Any]:
        (folder / "01.sse").symlink_to("/dev/full")
        return [Start(), *text_message("m1", "all of it arrived"), Finish()]

    endpoint = served(ScriptedAgent([turn]))
    done = agui("run", endpoint.url, "-m", "hi", "--record", str(folder))

    assert done.returncode == 0, done.stderr
    assert "all of it arrived" in done.stdout
    assert (f"recording: {folder / '01.sse'}: No space left on device (the rest of this answer is not "
            "recorded)") in done.stderr
