"""The text paths of the last rounds, audited for the caller's secrets and the agent's control sequences
(the twenty-fourth round).

Each test is an attack one of those paths did not hold: a real agent on 127.0.0.1 echoing the
caller's credential where the path reads it, or writing a control sequence where the path shows it.
What the audit tried and found sound is listed in the changelog's "Twenty-fourth round: secrets audit".
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import httpx
import pytest
from wirekit import request_body

import agui_client as ag
from agui_client._inert import QUOTED_CHARS
from agui_client.testing import (
    AsyncRecordingTransport,
    Finish,
    RecordedAgent,
    RecordingTransport,
    ScriptedAgent,
    Start,
    probe,
    serve,
)

MARK = "[redacted]"
API_KEY = "ak_9c1d2e7f0a55bb"
#: What a terminal obeys (OSC, BEL, CSI in C0 and in C1) and a bidi override, as an agent may write them.
HOSTILE = "\x1b]0;owned\x07 \x1b[2J \x9b31m \u202eevil"
#: Each of them, raw: none may be left in text a person is shown.
RAW = ("\x1b", "\x07", "\x9b", "\u202e")


def _redirecting_once(inner: Any) -> Any:
    """An agent that first redirects the run, within its origin, to a URL whose query holds the request's
    ``X-Api-Key`` under a name nothing marks as secret, then answers it with ``inner``."""
    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["path"].endswith("/agent"):
            key = dict(scope["headers"])[b"x-api-key"]
            location = scope["path"].encode() + b"/next?from=" + key
            await send({"type": "http.response.start", "status": 307,
                        "headers": [(b"location", location), (b"content-length", b"0")]})
            await send({"type": "http.response.body", "body": b""})
            return
        await inner(scope, receive, send)
    return app


def test_httpx_request_line_of_a_followed_redirect_hides_a_credential_its_location_echoes(
        drive: Any, served: Any, caplog: pytest.LogCaptureFixture) -> None:
    # httpx logs each request's URL at INFO; the filter hid the URL's userinfo and the values of
    # sensitive query names only. A redirect followed goes to the URL the agent chose: "?from=<the key>"
    # was written to the logs of any application logging at INFO.
    endpoint = served(_redirecting_once(ScriptedAgent([[Start(), Finish()]])))

    with caplog.at_level(logging.INFO, logger="httpx"), \
            drive.client(endpoint.url, headers={"X-Api-Key": API_KEY}, follow_redirects=True) as client:
        assert client.thread("t").run("hi", run_id="r").outcome == "success"

    lines = [record.getMessage() for record in caplog.records if record.name == "httpx"]
    assert any(line.startswith("HTTP Request: POST ") and f"/next?from={MARK} " in line for line in lines), lines
    assert not [line for line in lines if API_KEY in line]


def test_a_probe_reports_junit_and_failed_assertion_write_the_agents_control_characters_as_escapes() -> None:
    # The table and --json show the agent's words inert; the JUnit XML kept the C1 controls and bidi
    # overrides (XML can hold them: only C0 was escaped), and assert_conformant's AssertionError, which
    # pytest prints to the terminal, kept them all.
    report = probe(ScriptedAgent([[Start(), {"type": "RUN_ERROR", "message": HOSTILE}]]), prompt="x")
    assert any(HOSTILE in check.reason for check in report.checks)  # (the report's data keeps what the agent said)

    junit = report.to_junit(strict=True)
    said = [element.get("message") or "" for element in ET.fromstring(junit).iter() if element.get("message")]
    assert any("\\x1b]0;owned\\x07" in message and "\\u202eevil" in message for message in said), said
    assert [char for char in RAW if char in junit] == []

    with pytest.raises(AssertionError) as caught:
        report.assert_conformant(strict=True)
    assert "\\x9b31m \\u202eevil" in str(caught.value)
    assert [char for char in RAW if char in str(caught.value)] == []


async def _echoing(scope: Any, receive: Any, send: Any, *, odd: bool = False) -> None:
    """An agent whose every reply, and the state it sets, repeat the request's ``X-Api-Key`` (with ``odd``,
    beside a lone surrogate, which JSON's escapes can write and UTF-8 cannot)."""
    body = await request_body(receive)
    run_input = json.loads(body)
    key = dict(scope["headers"])[b"x-api-key"].decode()
    ids = {"threadId": run_input["threadId"], "runId": run_input["runId"]}
    reply = f"m{len(run_input['messages'])}"
    events = [{"type": "RUN_STARTED", **ids},
              {"type": "TEXT_MESSAGE_START", "messageId": reply, "role": "assistant"},
              {"type": "TEXT_MESSAGE_CONTENT", "messageId": reply, "delta": f"your key is {key}"},
              {"type": "TEXT_MESSAGE_END", "messageId": reply},
              {"type": "STATE_SNAPSHOT", "snapshot": {"seen": key, **({"odd": "\ud800"} if odd else {})}},
              {"type": "RUN_FINISHED", **ids}]
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
    frames = b"".join(b"data: %s\n\n" % json.dumps(event).encode() for event in events)
    await send({"type": "http.response.body", "body": frames})


@pytest.mark.parametrize("shell", ["sync", "async"])
def test_a_recordings_next_request_holds_no_credential_the_agent_echoed_in_the_thread(
        served: Any, tmp_path: Path, shell: str) -> None:
    # The answer's file had the agent's echo of the key redacted; the next request sends the thread's
    # messages and state back, the echo in them, and its file was written exactly as sent.
    endpoint = served(_echoing)
    if shell == "sync":
        with httpx.Client(transport=RecordingTransport(tmp_path)) as http, \
                ag.AgentClient(endpoint.url, http_client=http, headers={"X-Api-Key": API_KEY}) as client:
            thread = client.thread()
            thread.run("hi")
            said = thread.run("again").state.messages[1].content
    else:
        async def main() -> str:
            async with httpx.AsyncClient(transport=AsyncRecordingTransport(tmp_path)) as http, \
                    ag.AsyncAgentClient(endpoint.url, http_client=http, headers={"X-Api-Key": API_KEY}) as client:
                thread = client.thread()
                await thread.run("hi")
                return (await thread.run("again")).state.messages[1].content
        said = asyncio.run(main())

    assert said == f"your key is {API_KEY}"  # (the thread keeps what the agent said)
    assert [path.name for path in sorted(tmp_path.iterdir()) if API_KEY in path.read_text()] == []
    second = json.loads((tmp_path / "02.request.json").read_text())
    assert (second["messages"][1]["content"], second["state"]) == (f"your key is {MARK}", {"seen": MARK})
    assert (tmp_path / "01.request.json").read_bytes() == json.dumps(
        json.loads((tmp_path / "01.request.json").read_text()), separators=(",", ":")).encode()
    assert len(RecordedAgent(tmp_path)) == 2  # (each request file still reads as a RunAgentInput)


@pytest.mark.parametrize("shell", ["sync", "async"])
def test_a_recordings_redacted_request_keeps_a_lone_surrogate_the_thread_holds(
        served: Any, tmp_path: Path, shell: str) -> None:
    # The redacted body was written again with the standard library's ensure_ascii=False and encoded
    # as UTF-8, which holds no lone surrogate: UnicodeEncodeError out of the transport, and the run
    # after the agent's echo failed before it was sent. Now every character past ASCII is escaped there.
    endpoint = served(functools.partial(_echoing, odd=True))
    if shell == "sync":
        with httpx.Client(transport=RecordingTransport(tmp_path)) as http, \
                ag.AgentClient(endpoint.url, http_client=http, headers={"X-Api-Key": API_KEY}) as client:
            thread = client.thread()
            thread.run("hi")
            with pytest.warns(ag.AguiWarning) as warned:  # (the client's own note on what it sends)
                outcome = thread.run("again").outcome
    else:
        async def main() -> str:
            async with httpx.AsyncClient(transport=AsyncRecordingTransport(tmp_path)) as http, \
                    ag.AsyncAgentClient(endpoint.url, http_client=http, headers={"X-Api-Key": API_KEY}) as client:
                thread = client.thread()
                await thread.run("hi")
                return (await thread.run("again")).outcome
        with pytest.warns(ag.AguiWarning) as warned:
            outcome = asyncio.run(main())

    assert outcome == "success"
    assert ["UTF16-SURROGATE" in str(warning.message) for warning in warned] == [True]
    assert [path.name for path in sorted(tmp_path.iterdir()) if API_KEY in path.read_text()] == []
    second = json.loads((tmp_path / "02.request.json").read_bytes().decode("utf-8"))
    assert second["state"] == {"seen": MARK, "odd": "\ud800"}
    assert len(RecordedAgent(tmp_path)) == 2


def _refused_resume(tmp_path: Path, caplog: pytest.LogCaptureFixture, payload: Any) -> tuple[dict[str, Any], str, str]:
    """A recorded exchange whose request resumes with ``payload``, answered by a run that sends none: the
    recording, the recorded agent's mismatch and the log line that says it (the 409 asserted)."""
    recorded = {"threadId": "t", "runId": "r", "messages": [{"id": "u1", "role": "user", "content": "hi"}],
                "resume": [{"interruptId": "i1", "status": "resolved", "payload": payload}],
                "tools": [], "context": [], "forwardedProps": {}, "state": {}}
    (tmp_path / "01.request.json").write_text(json.dumps(recorded))
    (tmp_path / "01.sse").write_text("")
    agent = RecordedAgent(tmp_path)

    with caplog.at_level(logging.WARNING, logger="agui_client.testing"), serve(agent) as endpoint, \
            ag.AgentClient(endpoint.url) as client:
        with pytest.raises(ag.HTTPStatusError) as caught:
            client.thread("t").run("hi")

    assert caught.value.status_code == 409
    [problem] = agent.mismatches
    [said] = [record.getMessage() for record in caplog.records if "request refused" in record.getMessage()]
    return recorded, problem, said


def test_recorded_agents_refusal_of_a_resume_writes_the_recordings_control_characters_as_escapes(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # The refusal names the resume entries, the recorded ones as the folder holds them (a recording may
    # come from anyone): written with ensure_ascii=False, a payload's C1 CSI and bidi override went raw
    # into the log line that says it, and into the answer's detail.
    _, problem, said = _refused_resume(tmp_path, caplog, HOSTILE)
    assert "\\x9b31m \\u202eevil" in problem and problem in said
    assert [char for char in RAW if char in said] == []


def test_recorded_agents_refusal_of_a_resume_quotes_a_bounded_part_of_each_side(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # A recorded answer of a megabyte: the refusal (its log line, the mismatch, the 409's detail) held it
    # whole; it quotes QUOTED_CHARS of each side, with a count of the rest, as every such line does.
    recorded, problem, said = _refused_resume(tmp_path, caplog, "x" * 1_000_000)
    assert problem in said and len(said) < 1_000 + len(str(tmp_path)) + 200
    assert 'recorded [{"interruptId": "i1", "status": "resolved", "payload": "xxx' in problem
    assert f"... ({len(json.dumps(recorded['resume'])) - QUOTED_CHARS} more characters)" in problem


def test_recorded_agents_refusal_of_a_resume_quotes_a_bounded_part_of_what_was_sent(
        tmp_path: Path, served: Any, caplog: pytest.LogCaptureFixture) -> None:
    # The other side: the recording's answer is short, the one sent a megabyte.
    endpoint = served(ScriptedAgent.interrupts(1, response_schema=None))
    with httpx.Client(transport=RecordingTransport(tmp_path)) as http, \
            ag.AgentClient(endpoint.url, http_client=http) as client:
        thread = client.thread("t")
        thread.run("hi")
        thread.run(resume=thread.resume_builder().answer("interrupt-1", "short"))
    agent = RecordedAgent(tmp_path)

    with caplog.at_level(logging.WARNING, logger="agui_client.testing"), serve(agent) as replayed, \
            ag.AgentClient(replayed.url) as client:
        thread = client.thread("t")
        thread.run("hi")
        with pytest.raises(ag.HTTPStatusError) as caught:
            thread.run(resume=thread.resume_builder().answer("interrupt-1", "x" * 1_000_000))

    assert caught.value.status_code == 409
    [problem] = agent.mismatches
    [said] = [record.getMessage() for record in caplog.records if "request refused" in record.getMessage()]
    assert problem in said and len(said) < 1_000 + len(str(tmp_path)) + 200
    assert 'resume entries [{"interruptId": "interrupt-1", "status": "resolved", "payload": "xxx' in problem
    assert " more characters)" in problem and '"payload": "short"' in problem
