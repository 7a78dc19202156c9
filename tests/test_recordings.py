"""Recordings as a library: ``RecordingTransport`` (sync and async) writes each exchange as it streams,
never a header value; ``RecordedAgent`` serves a recording back to a second client and refuses (409,
then ``RecordingMismatch``) a request that does not match it.

Against real servers on 127.0.0.1 (the session's ``served`` router, or ``serve``).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from wirekit import request_json

from agui_client import AgentClient, HTTPStatusError
from agui_client.testing import (
    MISMATCH_CODE,
    AsyncRecordingTransport,
    Finish,
    Gate,
    RecordedAgent,
    RecordingMismatch,
    RecordingTransport,
    ScriptedAgent,
    Start,
    Wait,
    serve,
    text_message,
)
from agui_client.types import TextMessageEndEvent, UserMessage

SECRET = "sk-live-5ecr3t-0000"


def _transport(drive: Any, directory: Path | None) -> RecordingTransport | AsyncRecordingTransport:
    return RecordingTransport(directory) if drive.kind == "sync" else AsyncRecordingTransport(directory)


def _approve(thread: Any) -> Any:
    first = thread.run("Delete the staging environment")
    assert first.outcome == "interrupt"
    return thread.run(resume=thread.resume_builder().answer(first.interrupts[0].id, {"approved": True}))


def test_each_exchange_is_kept_in_request_order_and_no_header_value_is_written(
        drive: Any, served: Callable[[Any], Any], tmp_path: Path) -> None:
    endpoint = served(ScriptedAgent.demo())
    recorder = _transport(drive, tmp_path / "rec")
    http = drive.http_client(recorder)

    with drive.client(endpoint.url, http_client=http, headers={"Authorization": f"Bearer {SECRET}"}) as client:
        done = _approve(client.thread())

    assert done.outcome == "success"
    names = sorted(p.name for p in (tmp_path / "rec").iterdir())
    assert names == ["01.request.json", "01.response.json", "01.sse", "02.request.json", "02.response.json",
                     "02.sse"]
    assert [p.name for p in recorder.files] == names
    for n, received in enumerate(endpoint.received, start=1):
        # The request body exactly as the agent received it; the status and type of the answer.
        assert json.loads((tmp_path / "rec" / f"0{n}.request.json").read_bytes()) == received.body
        assert json.loads((tmp_path / "rec" / f"0{n}.response.json").read_text()) == {
            "status": 200, "contentType": "text/event-stream"}
    first = (tmp_path / "rec" / "01.sse").read_text()
    second = (tmp_path / "rec" / "02.sse").read_text()
    assert first.startswith("data: {") and '"outcome":{"type":"interrupt"' in first
    events = [json.loads(line[len("data: "):]) for line in second.splitlines() if line.startswith("data: ")]
    assert "".join(e.get("delta", "") for e in events if e["type"] == "TEXT_MESSAGE_CONTENT") == done.text
    for path in (tmp_path / "rec").iterdir():
        assert SECRET.encode() not in path.read_bytes()
        assert b"Bearer" not in path.read_bytes()


def test_the_response_is_written_as_it_streams_through(served: Callable[[Any], Any], tmp_path: Path) -> None:
    gate = Gate()
    endpoint = served(ScriptedAgent([[Start(), *text_message("m1", "before the gate"), Wait(gate),
                                      *text_message("m2", "after the gate"), Finish()]]))
    recorder = RecordingTransport(tmp_path)

    with httpx.Client(transport=recorder) as http, AgentClient(endpoint.url, http_client=http) as client:
        thread = client.thread()
        with thread.stream("hi") as events:
            for event in events:
                if isinstance(event, TextMessageEndEvent) and event.message_id == "m1":
                    # Held at the gate: what came before is on disk already, what comes after is not.
                    kept = (tmp_path / "01.sse").read_text()
                    gate.open()
        result = events.result

    assert result is not None and result.outcome == "success"
    assert '"messageId":"m1"' in kept and "RUN_STARTED" in kept and "RUN_FINISHED" not in kept and "m2" not in kept
    assert "RUN_FINISHED" in (tmp_path / "01.sse").read_text()


def test_recording_starts_and_stops_mid_session_and_a_folder_is_continued(
        drive: Any, served: Callable[[Any], Any], tmp_path: Path) -> None:
    endpoint = served(ScriptedAgent.chat("hello"))
    recorder = _transport(drive, None)
    http = drive.http_client(recorder)

    with drive.client(endpoint.url, http_client=http) as client:
        thread = client.thread()
        thread.run("one")  # not recorded
        recorder.start(tmp_path / "rec")
        assert recorder.directory == tmp_path / "rec"
        thread.run("two")
        recorder.stop()
        thread.run("three")  # not recorded
        recorder.start(tmp_path / "rec")  # continued after its last number
        thread.run("four")

    recorded = [json.loads((tmp_path / "rec" / f"{n}.request.json").read_bytes()) for n in ("01", "02")]
    assert [r["messages"][-1]["content"] for r in recorded] == ["two", "four"]
    assert not (tmp_path / "rec" / "03.request.json").exists()
    assert recorder.directory == tmp_path / "rec"


def test_a_gzip_encoded_response_is_kept_as_the_event_stream_the_client_read(
        served: Callable[[Any], Any], tmp_path: Path) -> None:
    async def gzipped(scope: Any, receive: Any, send: Any) -> None:
        request = await request_json(receive)
        ids = {"threadId": request["threadId"], "runId": request["runId"]}
        body = "".join(f"data: {json.dumps(e)}\n\n" for e in (
            {"type": "RUN_STARTED", **ids}, {"type": "RUN_FINISHED", **ids})).encode()
        await send({"type": "http.response.start", "status": 200, "headers": [
            (b"content-type", b"text/event-stream"), (b"content-encoding", b"gzip")]})
        await send({"type": "http.response.body", "body": gzip.compress(body)})

    endpoint = served(gzipped)
    with httpx.Client(transport=RecordingTransport(tmp_path)) as http, \
            AgentClient(endpoint.url, http_client=http) as client:
        result = client.thread().run("hi")

    assert result.outcome == "success"
    assert (tmp_path / "01.sse").read_bytes().startswith(b'data: {"type": "RUN_STARTED"')


def test_an_error_answer_is_recorded_with_its_status(served: Callable[[Any], Any], tmp_path: Path) -> None:
    from agui_client.testing import Respond

    endpoint = served(ScriptedAgent([Respond(status=503, body={"detail": "busy"})]))
    with httpx.Client(transport=RecordingTransport(tmp_path)) as http, \
            AgentClient(endpoint.url, http_client=http) as client, pytest.raises(HTTPStatusError):
        client.thread().run("hi")

    assert json.loads((tmp_path / "01.response.json").read_text()) == {"status": 503,
                                                                        "contentType": "application/json"}
    assert json.loads((tmp_path / "01.sse").read_bytes()) == {"detail": "busy"}


# --------------------------------------------------------------------------------------------------
# RecordedAgent
# --------------------------------------------------------------------------------------------------


def _record_demo(directory: Path) -> dict[str, Any]:
    """Record the demo's approval flow into ``directory``; what the live client saw."""
    with serve(ScriptedAgent.demo()) as url, httpx.Client(transport=RecordingTransport(directory)) as http, \
            AgentClient(url, http_client=http) as client:
        thread = client.thread()
        done = _approve(thread)
        return {"thread": thread.id, "outcome": done.outcome, "text": done.text, "state": thread.state.state,
                "messages": len(thread.state.messages)}


def test_a_recorded_agent_gives_a_second_client_the_same_results(tmp_path: Path) -> None:
    live = _record_demo(tmp_path)

    with RecordedAgent(tmp_path) as agent, serve(agent) as url, AgentClient(url) as client:
        assert agent.thread_id == live["thread"] and len(agent) == 2
        thread = client.thread(agent.thread_id)
        first = thread.run("Delete the staging environment")
        assert first.outcome == "interrupt"
        assert first.run_id is not None  # the run the client sent, not the recorded one
        done = thread.run(resume=thread.resume_builder().answer(first.interrupts[0].id, {"approved": True}))
        assert agent.played == 2

    assert {"thread": thread.id, "outcome": done.outcome, "text": done.text, "state": thread.state.state,
            "messages": len(thread.state.messages)} == live
    assert done.warnings == ()


@pytest.mark.parametrize("differs", ["thread", "messages", "resume"])
def test_a_request_that_does_not_match_is_refused_with_409_and_fails_the_test(tmp_path: Path, differs: str) -> None:
    live = _record_demo(tmp_path)
    agent = RecordedAgent(tmp_path)

    with serve(agent) as url, AgentClient(url) as client:
        thread = client.thread(live["thread"] if differs != "thread" else "another-thread")
        if differs == "resume":
            first = thread.run("Delete the staging environment")
            with pytest.raises(HTTPStatusError) as refused:
                thread.run(resume=thread.resume_builder().answer(first.interrupts[0].id, {"approved": False}))
        else:
            with pytest.raises(HTTPStatusError) as refused:
                thread.run([UserMessage(id="u1", content="Delete the staging environment"),
                            UserMessage(id="u2", content="and more")] if differs == "messages" else "hi")
        error = refused.value

    assert error.status_code == 409
    assert error.payload["code"] == MISMATCH_CODE
    expected = {"thread": "thread id 'another-thread', recorded", "messages": "2 message(s), recorded 1",
                "resume": '"approved": false}}], recorded'}[differs]
    assert expected in error.payload["detail"]
    with pytest.raises(RecordingMismatch) as failed:
        agent.check()
    assert expected in str(failed.value)
    assert len(agent.mismatches) == 1


def test_a_recording_left_unplayed_fails_at_the_end_of_the_with_block(tmp_path: Path) -> None:
    live = _record_demo(tmp_path)

    with pytest.raises(RecordingMismatch) as refused:
        with RecordedAgent(tmp_path) as agent, serve(agent) as url, AgentClient(url) as client:
            client.thread(live["thread"]).run("Delete the staging environment")
    assert "1 recorded exchange(s) never requested: 02" in str(refused.value)

    agent.check(complete=False)  # what was requested matched


def test_a_folder_that_is_not_a_recording_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(ValueError) as refused:
        RecordedAgent(tmp_path)
    assert "holds no recorded exchange" in str(refused.value)
    (tmp_path / "01.request.json").write_text('{"threadId": "t", "runId": "r", "messages": []}')
    (tmp_path / "01.response.json").write_text('{"status": 200, "contentType": "text/event-stream"}')
    with pytest.raises(ValueError) as refused:
        RecordedAgent(tmp_path)
    assert "01.sse is missing" in str(refused.value)


def test_a_recording_cut_before_its_last_answer_is_refused_as_replay_refuses_it(tmp_path: Path) -> None:
    # A process killed between writing a request and its answer's head leaves NN.request.json alone:
    # RecordedAgent (and so `agui serve`) said "02.sse is missing", where replay and verify say why.
    live = _record_demo(tmp_path)
    for answer in ("02.sse", "02.response.json"):
        (tmp_path / answer).unlink()

    with pytest.raises(ValueError) as refused:
        RecordedAgent(tmp_path)

    assert str(refused.value) == (f"{tmp_path / '02.request.json'} has no response beside it (02.sse): the "
                                  "recording stopped during that run, before its answer came (move "
                                  "02.request.json away to read the runs before it)")
    (tmp_path / "02.request.json").rename(tmp_path / "later.json")  # (as the message says)
    with RecordedAgent(tmp_path) as agent, serve(agent) as url, AgentClient(url) as client:
        assert client.thread(live["thread"]).run("Delete the staging environment").outcome == "interrupt"


def test_a_request_that_got_no_answer_leaves_no_exchange(drive: Any, tmp_path: Path) -> None:
    from agui_client import TransportError

    recorder = _transport(drive, tmp_path)
    http = drive.http_client(recorder)

    with drive.client("http://127.0.0.1:9/agent", http_client=http) as client, pytest.raises(TransportError):
        client.thread().run("hi")

    assert list(tmp_path.iterdir()) == [] and recorder.files == []


def test_a_recorded_body_without_line_breaks_is_served_block_by_block(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    from agui_client.testing import recorded

    monkeypatch.setattr(recorded, "_MAX_LINE", 100_000, raising=False)
    request = {"threadId": "t1", "runId": "r-old", "messages": [], "state": {}, "tools": [], "context": [],
               "forwardedProps": {}}
    (tmp_path / "01.request.json").write_text(json.dumps(request))
    started = b'data: {"type": "RUN_STARTED", "threadId": "t1", "runId": "r-old"}\n\n'
    endless = b'data: {"type": "CUSTOM", "name": "big", "value": "' + b"y" * 600_000  # no line break
    (tmp_path / "01.sse").write_bytes(started + endless)
    bodies: list[bytes] = []

    async def ask() -> None:
        sent = json.dumps({**request, "runId": "r-new"}).encode()
        received = iter([{"type": "http.request", "body": sent, "more_body": False}])

        async def receive() -> dict[str, Any]:
            return next(received, {"type": "http.disconnect"})

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.body":
                bodies.append(message["body"])

        scope = {"type": "http", "method": "POST", "path": "/", "headers": [(b"content-type", b"application/json")],
                 "query_string": b""}
        await RecordedAgent(tmp_path)(scope, receive, send)

    asyncio.run(ask())

    assert b"".join(bodies) == started.replace(b'"r-old"', b'"r-new"') + endless
    # never the whole long line at once: the blocks read, up to the line bound
    assert max(len(body) for body in bodies) <= 100_000 + recorded._SEND_BLOCK
    assert len(bodies) > 3


# --------------------------------------------------------------------------------------------------
# A file that cannot be written: recording never fails a run
# --------------------------------------------------------------------------------------------------

def _full_disk_at(path: Path) -> Callable[[Any], list[Any]]:
    """An agent's turn that, while answering, makes ``path`` lead to /dev/full (every write to it fails
    with "No space left on device", as on a full disk) before the recorder opens it."""
    def turn(run_input: Any) -> list[Any]:
        if not path.is_symlink():
            path.symlink_to("/dev/full")
        return [Start(), *text_message("m1", "word " * 500), Finish()]
    return turn


def test_a_full_disk_mid_answer_leaves_the_rest_unrecorded_and_the_run_whole(
        drive: Any, served: Callable[[Any], Any], tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    endpoint = served(ScriptedAgent([_full_disk_at(tmp_path / "01.sse")], cycle=True))
    recorder = _transport(drive, tmp_path)

    with caplog.at_level("WARNING", logger="agui_client.testing"), \
            drive.client(endpoint.url, http_client=drive.http_client(recorder)) as client:
        result = client.thread().run("hi")

    assert result.outcome == "success" and result.text == "word " * 500  # (the client read it all)
    assert (tmp_path / "01.request.json").is_file() and (tmp_path / "01.response.json").is_file()
    problem = f"{tmp_path / '01.sse'}: No space left on device (the rest of this answer is not recorded)"
    assert recorder.problems == [problem]
    assert [record.getMessage() for record in caplog.records] == [f"recording: {problem}"]


def test_a_folder_removed_while_recording_leaves_that_exchange_unrecorded(
        drive: Any, served: Callable[[Any], Any], tmp_path: Path) -> None:
    endpoint = served(ScriptedAgent.chat())
    folder = tmp_path / "recording"
    recorder = _transport(drive, folder)
    folder.rmdir()

    with drive.client(endpoint.url, http_client=drive.http_client(recorder)) as client:
        assert client.thread().run("hi").outcome == "success"

    assert not folder.exists() and recorder.files == []
    assert recorder.problems == [f"{folder}: No such file or directory (this exchange is not recorded)"]


def test_files_left_in_the_folder_are_never_written_over(drive: Any, served: Callable[[Any], Any],
                                                          tmp_path: Path) -> None:
    # (an answer's file whose request is gone, from a process killed mid-exchange or a person's edit)
    endpoint = served(ScriptedAgent.chat())
    (tmp_path / "01.sse").write_text("keep me")

    with drive.client(endpoint.url, http_client=drive.http_client(_transport(drive, tmp_path))) as client:
        client.thread().run("hi")

    assert (tmp_path / "01.sse").read_text() == "keep me"
    assert (tmp_path / "02.sse").stat().st_size > 0 and not (tmp_path / "01.request.json").exists()
