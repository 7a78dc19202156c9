"""Attacks on a recording someone else made, handed to the Python API: ``replay()``'s path, and the
answer heads ``RecordedAgent`` sends back.

``agui replay`` and ``agui verify`` refused a named file that is a device, and read a FIFO without a
writer as empty (twenty-first round), but ``replay(Path(...))`` opened the path as it was: a recording
whose file links to ``/dev/urandom`` was read without end, one linking to ``/dev/zero`` read 16 MiB
of NULs before a line limit stopped it, and a FIFO nobody writes to held the caller at the open for
ever. ``replay()`` now opens a path by the CLI's rule (``core.replaying.open_named``). And a folder's
``NN.response.json`` naming a content type or coding no header can carry (a line break, a character
outside Latin-1, a number) made ``RecordedAgent`` crash answering (a traceback in the server's log, the
client cut off or given a bare 500); it is refused with the folder, as a bad status is. Each test
failed before but the ones that say they pin what held (CHANGELOG, "Twenty-third round").
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from agui_client import AgentClient, StreamEnded, replay
from agui_client.testing import RecordedAgent, serve

RECORDING = b"".join(b"data: " + json.dumps(event).encode() + b"\n\n" for event in (
    {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
    {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m", "delta": "kept"},
    {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
))


def test_a_recording_linking_to_a_device_is_refused_before_a_byte_is_read(tmp_path: Path) -> None:
    link = tmp_path / "01.sse"
    link.symlink_to("/dev/zero")
    with pytest.raises(ValueError) as refused:
        replay(link)
    assert str(refused.value) == f"{link}: a device, not a recording"


def test_a_fifo_nobody_writes_to_holds_no_events_instead_of_a_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "01.sse"
    os.mkfifo(fifo)
    outcome: list[Any] = []

    def read() -> None:
        try:
            replay(fifo)
        except StreamEnded as exc:
            outcome.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout=60)
    hung = reader.is_alive()
    if hung:
        # (the release waited in open() for a writer: one that writes nothing lets it go)
        os.close(os.open(fifo, os.O_WRONLY))
        reader.join()
    assert not hung
    [ended] = outcome
    # (no events at all: the end of a stream that started no run, at event #0)
    assert (ended.rule, ended.index, ended.run_id, ended.result.events) == ("LC-04/AGUI003", 0, None, 0)
    assert str(ended).endswith("(no run started)")


def test_a_pipe_named_by_path_is_still_read_to_its_end() -> None:
    # (agui replay <(gunzip -c rec.sse.gz) gives such a path: it is read until its writer closes)
    read_end, write_end = os.pipe()
    writer = threading.Thread(target=lambda: (os.write(write_end, RECORDING), os.close(write_end)))
    writer.start()
    try:
        result = replay(Path(f"/dev/fd/{read_end}"))
    finally:
        writer.join()
        os.close(read_end)
    assert result.outcome == "success" and result.text == "kept"


def _folder(tmp_path: Path, meta: dict[str, Any]) -> Path:
    (tmp_path / "01.request.json").write_text(json.dumps({
        "threadId": "t", "runId": "r", "messages": [{"id": "u", "role": "user", "content": "hi"}],
        "tools": [], "context": [], "state": None, "forwardedProps": None}))
    (tmp_path / "01.sse").write_bytes(RECORDING)
    (tmp_path / "01.response.json").write_text(json.dumps({"status": 200, **meta}))
    return tmp_path


@pytest.mark.parametrize(("field", "value"), [
    ("contentType", "text/event-stream\r\nx-injected: 1"),
    ("contentType", "text/event-stream; charset=\u20ac"),
    ("contentType", 5),
    ("contentEncoding", "gzip\n"),
], ids=["line-break", "not-latin-1", "a-number", "coding-with-a-line-end"])
def test_a_recorded_head_no_header_can_carry_is_refused_with_the_folder(tmp_path: Path, field: str,
                                                                       value: Any) -> None:
    folder = _folder(tmp_path, {field: value})
    with pytest.raises(ValueError) as refused:
        RecordedAgent(folder)
    said = str(refused.value)
    assert said.startswith(f"{folder / '01.response.json'}: {field} ") and "header value" in said
    assert "\n" not in said and "\r" not in said


def test_a_recorded_content_type_in_latin1_is_served_as_it_was(tmp_path: Path) -> None:
    # (pins what held: h11 sends obs-text, and a recording keeps an agent's header as httpx read it)
    folder = _folder(tmp_path, {"contentType": "text/event-stream; note=caf\u00e9"})
    with RecordedAgent(folder) as agent, serve(agent) as server, AgentClient(server.url) as client:
        result = client.thread("t").run("hi")
    assert result.outcome == "success" and result.text == "kept"
