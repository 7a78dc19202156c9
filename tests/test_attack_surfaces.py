"""Attack audit, third round: the surfaces the first two rounds did not reach.

A hostile agent on 127.0.0.1 (or a hostile recording folder, or a tampered stored thread) against
what the CLI prints, what the chat exports, what `agui probe` answers, what spans and warnings say,
and how recording folders are read. Each test fails without its fix (CHANGELOG, "Attack audit, third
round").
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
from pathlib import Path
from typing import Any

import pexpect
import pytest
from clikit import AGUI, ENV, Ran, agui_each_in_one_process, agui_here
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from wirekit import request_body, request_json, sse

import agui_client as ag
from agui_client.cli import forms
from agui_client.testing import Finish, ScriptedAgent, Start, text_message, tool_call
from agui_client.types import StateSnapshotEvent


def agui(*args: str) -> Ran:
    """Run ``agui ARGS`` in this process with stdin not a terminal (``clikit``: no interpreter start)."""
    return agui_here(*args)


# --------------------------------------------------------------------------------------------------
# --yes and agui probe: an object schema without properties
# --------------------------------------------------------------------------------------------------


def _nested(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"a": schema}, "required": ["a"]}
    return schema


@pytest.mark.parametrize(("schema", "expected"), [
    ({"type": "object"}, {}),
    ({"type": "object", "properties": {}}, {}),
    ({"properties": {}}, {}),
    ({"type": "object", "properties": {"a": {"type": "object"}}, "required": ["a"]}, {"a": {}}),
])
def test_the_yes_answer_to_an_object_without_properties_is_the_empty_object(schema: dict[str, Any],
                                                                            expected: Any) -> None:
    assert forms.yes_payload(schema) == expected


def test_the_yes_answer_fills_an_agents_deep_nesting_to_a_bounded_depth() -> None:
    payload = forms.yes_payload(_nested(2000))

    depth = 0
    while isinstance(payload, dict) and "a" in payload:
        payload, depth = payload["a"], depth + 1
    assert payload == {}
    assert 16 <= depth <= 64


def test_agui_probe_answers_an_interrupt_whose_schema_is_a_bare_object(served: Any) -> None:
    # `{"type": "object"}` is a schema producers write; the probe's default answer went round between
    # the form and its filler until Python's recursion limit, and the probe died with a traceback.
    endpoint = served(ScriptedAgent.interrupts(1, response_schema={"type": "object"}))

    done = agui("probe", endpoint.url, "--prompt", "do it", "--json")

    assert "Traceback" not in done.stderr and "RecursionError" not in done.stderr
    report = json.loads(done.stdout)
    assert done.returncode == 0, done.stderr
    resumes = [r for r in endpoint.agent.requests if r.resume]
    assert any(entry.payload == {} for r in resumes for entry in r.resume)  # (the schema's own answer)
    assert report["checks"]


# --------------------------------------------------------------------------------------------------
# Secrets: ids and headers the agent chose, echoing the caller's credential
# --------------------------------------------------------------------------------------------------

TOKEN = "sk-live-7f3a9c1e5b2d4f60"
HEADERS = {"Authorization": f"Bearer {TOKEN}"}


def _echoing(shape: str) -> Any:
    """An agent that puts the request's bearer token where ``shape`` says."""
    async def app(scope: Any, receive: Any, send: Any) -> None:
        request = await request_json(receive)
        token = dict(scope["headers"])[b"authorization"].decode().partition(" ")[2]
        thread_id = request["threadId"]
        headers = [(b"content-type", b"text/event-stream")]
        if shape == "content-coding":
            headers.append((b"content-encoding", f"x-{token}".encode()))
        run_id = token if shape == "run-id" else request["runId"]
        events: list[dict[str, Any]] = [
            {"type": "RUN_STARTED", "threadId": thread_id, "runId": run_id},
            {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": f"your key is {token}"},
            {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
        ]
        if shape == "call-id" and not any(m.get("role") == "tool" for m in request["messages"]):
            events += [{"type": "TOOL_CALL_START", "toolCallId": f"call-{token}", "toolCallName": "lookup"},
                       {"type": "TOOL_CALL_ARGS", "toolCallId": f"call-{token}", "delta": json.dumps({"q": token})},
                       {"type": "TOOL_CALL_END", "toolCallId": f"call-{token}"}]
        if shape == "interrupt-id":
            events.append({"type": "RUN_FINISHED", "threadId": thread_id, "runId": run_id, "outcome": {
                "type": "interrupt", "interrupts": [{"id": f"ask-{token}", "reason": "input"}]}})
        else:
            events.append({"type": "RUN_FINISHED", "threadId": thread_id, "runId": run_id})
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body",
                    "body": sse(*events)})
    return app


def test_a_warning_naming_a_run_id_that_echoes_the_credential_is_redacted(drive: Any, served: Any) -> None:
    # RUN_STARTED naming another run than the request's (LC-08) is warned of, under the run id the
    # agent wrote: the warning's message was redacted, its run id (which str() starts with) was not.
    endpoint = served(_echoing("run-id"))
    with drive.client(endpoint.url, headers=HEADERS, telemetry=False) as client:
        result = client.thread().run("hi")

    assert [w.code for w in result.warnings] == ["LC-08"]
    assert TOKEN not in repr(result.warnings) and TOKEN not in str(result.warnings[0])
    assert result.warnings[0].run_id == "[redacted]"


def test_a_content_coding_that_echoes_the_credential_is_refused_without_it(drive: Any, served: Any) -> None:
    endpoint = served(_echoing("content-coding"))
    with drive.client(endpoint.url, headers=HEADERS, telemetry=False) as client:
        with pytest.raises(ag.ProtocolError) as caught:
            client.thread().run("hi")

    assert caught.value.rule == "CONTENT-CODING"
    assert TOKEN not in str(caught.value) and TOKEN not in repr(caught.value.args)
    assert "[redacted]" in str(caught.value)


@pytest.mark.parametrize("shape", ["run-id", "interrupt-id"])
@pytest.mark.parametrize("record_content", [False, True])
def test_a_span_keeps_no_credential_the_agent_echoed_in_an_id_or_its_reply(
        drive: Any, served: Any, shape: str, record_content: bool) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry = ag.Telemetry(tracer_provider=provider, record_content=record_content)
    endpoint = served(_echoing(shape))
    with drive.client(endpoint.url, headers=HEADERS, telemetry=telemetry) as client:
        thread = client.thread()
        result = thread.run("hi")
        if shape == "interrupt-id":
            assert TOKEN in result.interrupts[0].id  # (the conversation keeps the agent's words)
            with pytest.raises(ag.ResumeRefused):
                thread.run("next")  # (a refused resume's span names the interrupts it left open)
            thread.run(resume=thread.resume_builder().abandon(result.interrupts[0].id))

    spans = exporter.get_finished_spans()
    assert len([s for s in spans if s.name == "agui.run"]) == (3 if shape == "interrupt-id" else 1)
    for span in spans:
        recorded = [repr(dict(span.attributes or {})), str(span.status.description)]
        recorded += [f"{event.name} {dict(event.attributes or {})!r}" for event in span.events]
        assert TOKEN not in "\n".join(recorded), span.name
    first = spans[0]
    if shape == "run-id":
        assert (first.attributes or {})["agui.run.id"] == "[redacted]"
    else:
        assert (first.attributes or {})["agui.run.interrupt_ids"] == ("ask-[redacted]",)
        assert (spans[-1].attributes or {})["agui.run.resumes"] == first.attributes["agui.run.id"]  # type: ignore[index]


# --------------------------------------------------------------------------------------------------
# A hostile recording folder: agui replay, verify and serve
# --------------------------------------------------------------------------------------------------

REQUEST = {"threadId": "t", "runId": "r", "messages": [], "state": {}, "tools": [], "context": [],
           "forwardedProps": {}}
RESPONSE = ('data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\n'
            'data: {"type":"RUN_FINISHED","threadId":"t","runId":"r"}\n\n')


def _folder(path: Path) -> Path:
    path.mkdir()
    (path / "01.request.json").write_text(json.dumps(REQUEST))
    (path / "01.sse").write_text(RESPONSE)
    return path


def _fifo(path: Path) -> None:
    os.mkfifo(path)


HOSTILE = ["request-fifo", "response-fifo", "request-device", "meta-deep", "meta-huge", "meta-list", "meta-fifo",
           "meta-device"]


def _hostile_folder(path: Path, hostile: str) -> tuple[Path, str]:
    """A recording folder holding the ``hostile`` file, and the name a refusal of it must give."""
    folder = _folder(path)
    if hostile == "request-fifo":
        _fifo(folder / "02.request.json")
        return folder, "02.request.json"
    if hostile == "response-fifo":
        (folder / "01.sse").unlink()
        _fifo(folder / "01.sse")
        return folder, "01.sse"
    if hostile == "request-device":
        (folder / "02.request.json").symlink_to("/dev/zero")
        return folder, "02.request.json"
    meta = folder / "01.response.json"
    if hostile == "meta-deep":
        meta.write_text("[" * 30000)
    elif hostile in ("meta-fifo", "meta-device"):
        # (was taken for a folder without the status file: replayed and served as 200, unlike the docs)
        _fifo(meta) if hostile == "meta-fifo" else meta.symlink_to("/dev/zero")
    elif hostile == "meta-huge":
        meta.write_text(json.dumps({"status": 200, "pad": "x" * 200_000}))
    else:
        meta.write_text("[1, 2]")
    return folder, "01.response.json"


@pytest.fixture(scope="module")
def served_hostile(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Ran, str]]:
    """What ``agui serve`` of each hostile folder left: every folder in one process of its own (were a
    file not refused, serve would serve until stopped: that process, not this one, hangs, and is stopped
    at 45 s), not a process each (an interpreter start per folder was 8 of this file's slowest tests).
    By hostile file: what serve left, and the name its refusal must give."""
    base = tmp_path_factory.mktemp("hostile-serve")
    folders = {hostile: _hostile_folder(base / hostile, hostile) for hostile in HOSTILE}
    left = agui_each_in_one_process([(("serve", str(folder)), None) for folder, _ in folders.values()], timeout=45)
    # (serve looks for a regular file, and says so: a FIFO in the response's place is "missing")
    return {hostile: (done, "01.sse is missing" if hostile == "response-fifo" else folders[hostile][1])
            for hostile, done in zip(folders, left, strict=True)}


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are a POSIX feature")
# replay and verify run in this process, where a hang has no timeout of its own: it fails here, not at the
# suite's 120 s (serve's one process for every folder is stopped at 45 s).
@pytest.mark.timeout(60)
@pytest.mark.parametrize("command", ["replay", "verify", "serve"])
@pytest.mark.parametrize("hostile", HOSTILE)
def test_a_hostile_file_in_a_recording_folder_is_unreadable_input_not_a_hang(
        tmp_path: Path, request: pytest.FixtureRequest, command: str, hostile: str) -> None:
    # A FIFO blocked the open until another process wrote to it (every command hung), a link to a
    # device was read without end, and a status file nested deeper than json reads escaped as a
    # RecursionError traceback. Each is now a usage error naming the file, exit 2, at once.
    if command == "serve":
        done, named = request.getfixturevalue("served_hostile")[hostile]
    else:
        folder, named = _hostile_folder(tmp_path / "rec", hostile)
        done = agui(command, str(folder))

    if hostile == "meta-list" and command != "serve":
        assert done.returncode == 0, done.stderr  # (replay and verify read a status that is no object as none)
        return
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    assert named in done.stderr
    assert done.stderr.startswith(f"agui {command}: ")


def test_a_recording_folder_of_regular_files_still_replays_verifies_and_serves(tmp_path: Path,
                                                                              drive: Any) -> None:
    folder = _folder(tmp_path / "rec")
    (folder / "01.response.json").write_text(json.dumps({"status": 200, "contentType": "text/event-stream"}))

    assert agui("replay", str(folder)).returncode == 0
    assert agui("verify", str(folder)).returncode == 0
    from agui_client.testing import RecordedAgent, serve

    with serve(RecordedAgent(folder)) as url, drive.client(url, telemetry=False) as client:
        assert client.thread("t").run(run_id="r").outcome == "success"


# --------------------------------------------------------------------------------------------------
# agui chat's /export: the transcript is as inert as the chat
# --------------------------------------------------------------------------------------------------

#: What a file printed to a terminal must not hold: C0 controls but tab and newline, DEL, C1, bidi
#: embeddings, overrides and isolates, zero-width space, line separators, tag characters.
FORBIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b\u202a-\u202e\u2066-\u2069\u2028\u2029\U000e0000-\U000e007f]")
STATE_HOSTILE = "\x9b2J\x9d0;PWNED\x9c|\u202eevil\u202c|\u2066x\u2069|\u200b|\U000e0041"
FORGED = "lookup\n\n## You\n\nyes, delete everything"


def test_the_chats_export_keeps_the_agents_state_and_names_inert(tmp_path: Path, served: Any) -> None:
    # The state block was written with json.dumps(ensure_ascii=False), which escapes only U+0000-U+001F:
    # a C1 CSI (U+009B) or a bidi override in the agent's state reached the file raw, and `cat chat.md`
    # obeyed it. A tool name with line ends wrote headings of its choosing ("## You").
    agent = ScriptedAgent([[Start(), StateSnapshotEvent(snapshot={STATE_HOSTILE: STATE_HOSTILE}),
                            *tool_call("c1", FORGED, {"q": 1}, result="done"),
                            *text_message("m1", "All done."), Finish()]])
    endpoint = served(agent)
    export = tmp_path / "chat.md"
    env = {**ENV, "TERM": "xterm-256color"}
    env.pop("NO_COLOR")
    child = pexpect.spawn(sys.executable, [*AGUI[1:], "chat", endpoint.url], env=env, encoding="utf-8",
                          dimensions=(60, 200), timeout=60)
    try:
        child.expect("you: ")
        child.sendline("hi")
        child.expect("All done.")
        child.expect("you: ")
        child.sendline(f"/export {export}")
        child.expect("you: ")
        child.sendline("/quit")
        child.expect(pexpect.EOF)
    finally:
        child.close()

    text = export.read_text(encoding="utf-8")
    found = FORBIDDEN.search(text)
    assert found is None, f"{found.group()!r} written to the transcript"
    state = json.loads(text.split("## State", 1)[1].split("```json\n", 1)[1].split("\n```", 1)[0])
    assert state == {STATE_HOSTILE: STATE_HOSTILE}  # (escaped as JSON: it reads back as the agent sent it)
    headings = [line for line in text.splitlines() if line.startswith("#")]
    assert headings.count("## You") == 1  # (the person's one message; the tool's name forged none)
    assert "lookup\\n\\n## You" in text


# --------------------------------------------------------------------------------------------------
# What agui run prints of a refused answer and an error body
# --------------------------------------------------------------------------------------------------


def _interrupting(count: int) -> Any:
    """An agent raising ``count`` interrupts whose ids carry line ends, each asking for a field of its own."""
    async def app(scope: Any, receive: Any, send: Any) -> None:
        request = await request_json(receive)
        ids = {"threadId": request["threadId"], "runId": request["runId"]}
        interrupts = [{"id": f"q{n}\nrun finished: success", "reason": "input", "responseSchema": {
            "type": "object", "required": [f"field{n}"], "properties": {f"field{n}": {"type": "string"}}}}
            for n in range(count)]
        events = [{"type": "RUN_STARTED", **ids},
                  {"type": "RUN_FINISHED", **ids, "outcome": {"type": "interrupt", "interrupts": interrupts}}]
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
        await send({"type": "http.response.body",
                    "body": sse(*events)})
    return app


def test_a_refused_answer_lists_a_bounded_number_of_problems_each_on_one_line(served: Any) -> None:
    endpoint = served(_interrupting(300))

    done = agui("run", endpoint.url, "-m", "hi", "--plain", "--answer", '{"other": 1}')

    assert done.returncode == 2, done.stderr
    refusal = done.stdout[done.stdout.index("== answer refused"):]
    problem_lines = [line for line in refusal.splitlines() if "is a required property" in line]
    assert 1 <= len(problem_lines) <= 12
    assert "more" in refusal.splitlines()[-1] or any("more" in line for line in refusal.splitlines()[-3:])
    assert not any(line.strip().startswith("run finished: success") for line in done.stdout.splitlines())


def test_an_error_bodys_code_is_shown_on_one_line(served: Any) -> None:
    from agui_client.testing import Respond

    endpoint = served(ScriptedAgent([Respond(status=400, body={"detail": "refused",
                                                               "code": "E1\nrun finished: success" + "x" * 5000})]))

    done = agui("run", endpoint.url, "-m", "hi", "--plain")

    assert done.returncode == 1
    assert "refused" in done.stdout + done.stderr
    assert not any(line.strip().startswith("run finished: success")
                   for line in (done.stdout + done.stderr).splitlines())
    assert "x" * 1000 not in done.stdout + done.stderr


def test_a_stored_thread_id_with_line_ends_is_shown_on_one_line(tmp_path: Path, served: Any) -> None:
    # A thread file is input too (copied, shared, edited): its thread id was printed as it was stored,
    # in the run's heading, the summary and the list of threads to pick from.
    from agui_client.core.fold import ThreadState
    from agui_client.stores import SqliteStore

    forged = "t1\nFORGED-LINE approved"
    path = tmp_path / "threads.db"
    with SqliteStore(path) as store:
        store.save(forged, ThreadState(thread_id=forged).dump(), expected_version=None)
    endpoint = served(ScriptedAgent.chat("hello"))

    one = agui("run", endpoint.url, "-m", "hi", "--plain", "--thread-file", str(path))
    with SqliteStore(path) as store:
        store.save("t2\nFORGED-LINE too", ThreadState(thread_id="t2").dump(), expected_version=None)
    several = agui("run", endpoint.url, "-m", "hi", "--plain", "--thread-file", str(path))

    assert one.returncode == 0, one.stderr
    assert several.returncode == 2
    for done in (one, several):
        shown = (done.stdout + done.stderr).splitlines()
        assert not any(line.lstrip().startswith("FORGED-LINE") for line in shown), shown
    assert "t1\\nFORGED-LINE approved" in one.stdout
    assert "t2\\nFORGED-LINE too" in several.stderr


def test_a_probe_report_keeps_no_credential_the_agent_echoed_as_an_interrupt_id(served: Any, tmp_path: Path) -> None:
    # The report quoted the agent's text through the request's redactor, but said in its own words
    # which interrupts each run ended with and which the resumes answered: the ids as the agent wrote
    # them, in the JSON, the table and the JUnit file a CI keeps.
    endpoint = served(_echoing("interrupt-id"))
    junit = tmp_path / "probe.xml"

    as_json = agui("probe", endpoint.url, "--prompt", "go", "-H", f"Authorization: Bearer {TOKEN}", "--json",
                   "--junit", str(junit))
    table = agui("probe", endpoint.url, "--prompt", "go", "-H", f"Authorization: Bearer {TOKEN}", "--plain")

    report = json.loads(as_json.stdout)
    assert report["runs"][0]["interrupts"] == ["ask-[redacted]"]
    for text in (as_json.stdout, as_json.stderr, junit.read_text(), table.stdout, table.stderr):
        assert TOKEN not in text


def test_a_failed_tool_handlers_log_line_quotes_the_agents_call_id_inert(
        drive: Any, served: Any, caplog: pytest.LogCaptureFixture) -> None:
    # The warning that a handler raised named the call as the agent wrote its id: an application
    # logging to a terminal (logging.basicConfig) received the agent's escape sequences.
    call_id = "c1\x1b]0;PWNED\x07\x9b2J\u202e"
    endpoint = served(ScriptedAgent([[Start(), *tool_call(call_id, "lookup", {"q": 1}), Finish()],
                                     [Start(), *text_message("m1", "sorry"), Finish()]]))

    def lookup(q: int) -> str:
        raise RuntimeError("backend down")

    with caplog.at_level(logging.WARNING, logger="agui_client"), \
            drive.client(endpoint.url, telemetry=False) as client:
        thread = client.thread(tool_handlers={"lookup": lookup})
        result = thread.run_until_done("hi")

    assert result.outcome == "success"
    lines = [logging.Formatter().format(record) for record in caplog.records if "tool handler" in record.getMessage()]
    assert lines
    assert not FORBIDDEN.search("\n".join(lines))
    assert "\\x1b]0;PWNED\\x07" in lines[0]


def test_a_failed_tool_handlers_log_line_keeps_no_credential_the_agent_echoed(
        drive: Any, served: Any, caplog: pytest.LogCaptureFixture) -> None:
    # The line names the agent's call id and the handler's error, which may quote the arguments: an agent
    # echoing the request's token as both put it into the application's log (the span's ids and the
    # warnings' run ids were redacted; the log line was not).
    endpoint = served(_echoing("call-id"))

    def lookup(q: str) -> str:
        raise RuntimeError(f"no record for {q}")

    with caplog.at_level(logging.WARNING, logger="agui_client"), \
            drive.client(endpoint.url, headers=HEADERS, telemetry=False) as client:
        result = client.thread(tool_handlers={"lookup": lookup}).run_until_done("hi")

    assert result.outcome == "success"
    lines = [record.getMessage() for record in caplog.records if "tool handler" in record.getMessage()]
    assert len(lines) == 1 and "'call-[redacted]'" in lines[0] and "no record for [redacted]" in lines[0], lines
    assert TOKEN not in "\n".join(lines)


def _malformed() -> Any:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        await request_body(receive)  # (the request, read whole and let go)
        token = dict(scope["headers"])[b"authorization"].partition(b" ")[2]
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
        await send({"type": "http.response.body", "body": b'data: {"type": "RUN_STARTED", ' + token + b"\n\n"})
    return app


def test_a_malformed_event_leaves_no_unredacted_payload_in_the_errors_chain(drive: Any, served: Any) -> None:
    # The DecodeError is raised `from None`, which hides the JSONDecodeError from a traceback but keeps
    # it as __context__, its .doc the whole payload as the agent sent it (the credential included).
    endpoint = served(_malformed())
    with drive.client(endpoint.url, headers=HEADERS, telemetry=False) as client:
        with pytest.raises(ag.ProtocolError) as caught:
            client.thread().run("hi")

    chain: list[BaseException] = []
    error: BaseException | None = caught.value
    while error is not None and error not in chain:
        chain.append(error)
        error = error.__cause__ or error.__context__
    for link in chain:
        assert TOKEN not in repr(link) + repr(vars(link)), type(link).__name__


@pytest.mark.parametrize("answer", [["--yes"], ["--answer", "q0\nFORGED-LINE x={\"field0\": \"a\"}"]])
def test_what_agui_run_cannot_answer_lists_ten_ids_each_on_one_line(served: Any, answer: list[str]) -> None:
    # `--yes` without a default to take, or `--answer` naming some interrupts only, is refused naming the
    # interrupts: all of them, as the agent wrote their ids (3,000 of them made one line of 100 KB, and
    # an id's line end started a line of the agent's choosing).
    endpoint = served(_interrupting(3000))

    done = agui("run", endpoint.url, "-m", "hi", "--plain", *answer)

    assert done.returncode == 2, done.stderr
    refusal = [line for line in done.stderr.splitlines() if line.startswith("agui run: ")]
    assert len(refusal) == 1 and len(refusal[0]) < 3000, refusal
    if answer != ["--yes"]:  # (--yes stops at the first interrupt it cannot fill)
        assert "and 2990 more" in refusal[0]
    assert not any(line.lstrip().startswith(("run finished: success", "FORGED-LINE"))
                   for line in (done.stdout + done.stderr).splitlines())


def test_an_interrupts_form_shows_the_schemas_title_constants_defaults_and_bounds_cut_short(served: Any) -> None:
    # The form's heading quoted the schema's title whole, and each field's constant, default and bounds
    # were written out whole: a title of a line end and 200 KB started a line of the agent's choosing and
    # filled the screen.
    big = "\nFORGED-LINE " + "y" * 200_000
    schema = {"type": "object", "title": big, "properties": {
        "mode": {"const": {"k": big}},
        "note": {"type": "string", "default": big},
        "count": {"type": "integer", "minimum": int("7" * 4000)},
    }}
    endpoint = served(ScriptedAgent.interrupts(1, response_schema=schema))

    done = agui("run", endpoint.url, "-m", "hi", "--plain")

    assert done.returncode == 0, done.stderr
    shown = done.stdout + done.stderr
    assert "interrupt-1" in shown and "mode" in shown and "count" in shown
    assert not any(line.lstrip().startswith("FORGED-LINE") for line in shown.splitlines())
    assert "y" * 500 not in shown and "7" * 500 not in shown


@pytest.mark.parametrize("pattern", ["[[a]](?=b)", "(?=a)[[:alpha:]]", "[" * 10_000, "[a--b](?=x)"])
def test_a_pattern_python_warns_about_is_judged_without_a_warning(pattern: str) -> None:
    # A pattern RE2 cannot run is compiled by Python only to tell an invalid regex from an unrunnable
    # one; Python warns of some syntax (a nested set, a set difference). Where warnings are errors (as
    # in this suite), that warning escaped check_answer() and the resume builder as a FutureWarning.
    import warnings

    from agui_client import ResumeBuilder, check_answer
    from agui_client.types.run import Interrupt

    schema = {"type": "object", "properties": {"code": {"type": "string", "pattern": pattern}}}
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        warnings.simplefilter("ignore", ag.AguiWarning)  # (IR-30: the pattern is not checked, and says so)
        problems = check_answer(schema, {"code": "ab"})
        try:
            ResumeBuilder((Interrupt(id="i1", reason="input", response_schema=schema),)).answer(
                "i1", {"code": "ab"}).build()
        except ag.InvalidResumePayload as exc:
            assert exc.ids == ("i1",)
    assert all(problem.code in ("invalid",) for problem in problems)


def test_the_frontend_calls_a_run_leaves_are_listed_ten_and_a_count(served: Any) -> None:
    # `agui run` does not run frontend tools; it said which calls it left, all of them on one line.
    calls = [event for n in range(500) for event in tool_call(f"c{n}", f"pick{n}", {"n": n})]
    endpoint = served(ScriptedAgent([[Start(), *calls, Finish()]]))

    done = agui("run", endpoint.url, "-m", "hi", "--plain")

    assert done.returncode == 0, done.stderr
    left = [line for line in done.stdout.splitlines() if "left frontend tool call(s)" in line]
    assert len(left) == 1 and "and 490 more" in left[0] and "pick9(" in left[0] and "pick10(" not in left[0]


def test_the_summaries_list_ten_open_interrupts_and_pending_calls_and_a_count(served: Any, tmp_path: Path) -> None:
    # `agui run`'s summary listed every open interrupt id on one line, and `agui replay`'s every pending
    # tool call id: what the round bounded where a refusal or a run's end names them (3,000 made a line of
    # 100 KB) was still whole there.
    endpoint = served(_interrupting(300))
    done = agui("run", endpoint.url, "-m", "hi", "--plain")
    assert done.returncode == 0, done.stderr
    row = [line for line in done.stdout.splitlines() if line.lstrip().startswith("open interrupts")]
    assert len(row) == 1 and "and 290 more" in row[0] and "q9\\n" in row[0] and "q10\\n" not in row[0], row

    events = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}]
    for n in range(300):
        events += [{"type": "TOOL_CALL_START", "toolCallId": f"c{n}", "toolCallName": "pick"},
                   {"type": "TOOL_CALL_END", "toolCallId": f"c{n}"}]
    events.append({"type": "RUN_FINISHED", "threadId": "t", "runId": "r"})
    stream = tmp_path / "calls.jsonl"
    stream.write_text("".join(json.dumps(e) + "\n" for e in events))
    done = agui("replay", str(stream), "--plain")
    assert done.returncode == 0, done.stderr
    row = [line for line in done.stdout.splitlines() if line.lstrip().startswith("pending tool calls")]
    assert len(row) == 1 and row[0].endswith(", c8, c9 and 290 more") and "c10" not in row[0], row
