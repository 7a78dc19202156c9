"""``RecordedAgent``: a recording (``agui run --record DIR``) served back as an AG-UI agent.

Record once against the real agent, then test offline for ever: each request gets the recorded
response of the same position, in order, provided it matches the request that was recorded. A
request that does not match is refused with HTTP 409 (code ``recording_mismatch``, a body naming
the difference) and kept, so the test fails with :class:`RecordingMismatch` at :meth:`RecordedAgent.check`
(or when the ``with`` block ends) even if the client under test swallowed the error.

What must match: the thread id, the number of messages, and the resume entries (interrupt ids,
statuses and payloads, in order). Message ids, run ids, message text, state, tools and context are
not compared: a new user message gets a new id every time, and the recorded response is sent with
the recorded run id replaced by the request's, so the client sees its own run.

::

    from agui_client import AgentClient
    from agui_client.testing import RecordedAgent, serve

    def test_the_approval_flow_offline():
        with RecordedAgent("tests/recordings/delete-staging") as agent, serve(agent) as url:
            with AgentClient(url) as client:
                thread = client.thread(agent.thread_id)
                first = thread.run("Delete the staging environment")
                assert first.outcome == "interrupt"
                done = thread.run(resume=thread.resume_builder().answer(first.interrupts[0].id,
                                                                        {"approved": True}))
                assert done.outcome == "success"
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from pathlib import Path
from types import TracebackType
from typing import Any

from attrs import frozen

from .._inert import quoted, quoted_name, visible
from ..errors import ProtocolError
from ..wire.codec import decode, encode
from ..wire.jsonio import parse_json
from ..wire.sink import collect_warnings
from ..wire.sse import DEFAULT_MAX_EVENT_BYTES
from ..wire.types.run import RunAgentInput
from .endpoint import Receive, Scope, Send, accept_run, respond
from .recording import META_FILE_BYTES, REQUEST_FILE_BYTES, read_recorded, recorded_exchanges, unanswered
from .script import Respond

__all__ = ["RecordedAgent", "RecordingMismatch", "MISMATCH_CODE"]

logger = logging.getLogger("agui_client.testing")

#: The ``code`` of a 409 body refusing a request that does not match the recording.
MISMATCH_CODE = "recording_mismatch"

#: Bytes read from a recorded response (and sent per body message) at a time.
_SEND_BLOCK = 64 * 1024
#: A line of a recorded response held whole (for the run id's replacement) up to this many bytes: a
#: longer one (a body with no line break) is sent on as it comes, block by block, so a recording is
#: never held whole. The client's own per-event limit is as large, so it would refuse such a line anyway.
_MAX_LINE = DEFAULT_MAX_EVENT_BYTES


class RecordingMismatch(AssertionError):
    """A request did not match the recording (or the recording was not played to its end).

    Attributes:
        problems: one line per refused request or missing exchange.
    """

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        super().__init__("the client did not replay the recording:\n" + "\n".join(f"- {p}" for p in problems))


@frozen
class _Exchange:
    number: int
    name: str
    run_input: RunAgentInput
    body: Path
    status: int
    content_type: str
    content_encoding: str | None


class RecordedAgent:
    """An ASGI 3 agent answering each request with the recorded response, in order (asyncio).

    Args:
        directory: a recording folder (``NN.request.json``, ``NN.response.json``, ``NN.sse``), as
            ``agui run --record`` or :class:`~agui_client.testing.RecordingTransport` write it.

    Raises:
        ValueError: the folder holds no exchange, or an exchange is incomplete or unreadable (named).

    Attributes:
        directory: the folder.
        mismatches: what each refused request differed in, in order (a copy is safer to keep).
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        if not self.directory.is_dir():
            raise ValueError(f"{self.directory} is not a recording folder")
        self._exchanges = [_load(number, path) for number, path in recorded_exchanges(self.directory)]
        if not self._exchanges:
            raise ValueError(f"{self.directory} holds no recorded exchange (NN.request.json)")
        self._lock = threading.Lock()
        self._next = 0
        self.mismatches: list[str] = []

    def __len__(self) -> int:
        return len(self._exchanges)

    def __repr__(self) -> str:
        return f"<RecordedAgent {self.directory} {self._next}/{len(self._exchanges)} played>"

    @property
    def thread_id(self) -> str:
        """The thread of the first recorded request (give it to ``client.thread(...)``)."""
        return self._exchanges[0].run_input.thread_id

    @property
    def played(self) -> int:
        """How many recorded responses were sent."""
        with self._lock:
            return self._next

    def check(self, *, complete: bool = True) -> None:
        """Raise :class:`RecordingMismatch` if a request was refused, or (``complete``) if part of the
        recording was never requested."""
        with self._lock:
            problems = list(self.mismatches)
            if complete and self._next < len(self._exchanges):
                left = [e.name for e in self._exchanges[self._next:]]
                problems.append(f"{len(left)} recorded exchange(s) never requested: {', '.join(left)}")
        if problems:
            raise RecordingMismatch(problems)

    def reset(self) -> None:
        """Start the recording over and forget the mismatches."""
        with self._lock:
            self._next = 0
            self.mismatches.clear()

    def __enter__(self) -> RecordedAgent:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        # A test that already failed keeps its own error; otherwise the recording must have been met.
        if exc_type is None:
            self.check()

    # ---- ASGI ------------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The ASGI 3 entry point."""
        accepted = await accept_run(scope, receive, send)
        if accepted is None:
            return
        run_input = accepted[0]
        problem: str | None
        with self._lock:
            position = self._next
            if position >= len(self._exchanges):
                problem = (f"request {position + 1} (run {quoted_name(run_input.run_id)}): the recording holds "
                           f"{len(self._exchanges)} exchange(s) only")
            else:
                problem = _difference(self._exchanges[position], run_input)
                if problem is None:
                    self._next += 1
            if problem is not None:
                self.mismatches.append(problem)
        if problem is not None:
            logger.warning("%s: request refused (409): %s", self.directory, problem)
            await respond(send, Respond(status=409, body={"detail": problem, "code": MISMATCH_CODE}))
            return
        await _play(send, self._exchanges[position], run_input.run_id)


#: A header value as h11 sends it (a recording keeps the agent's as httpx read it, Latin-1): visible
#: characters and obs-text, spaces and tabs only between them.
_HEADER_VALUE = re.compile("[\x21-\x7e\x80-\xff](?:[ \t]*[\x21-\x7e\x80-\xff])*")


def _load(number: int, request: Path) -> _Exchange:
    name = request.name.split(".", 1)[0]
    stem = request.parent / name
    try:
        with collect_warnings():
            run_input = decode(parse_json(read_recorded(request, REQUEST_FILE_BYTES)), RunAgentInput)
    except (OSError, ValueError, ProtocolError) as exc:
        raise ValueError(f"{request} is not a readable RunAgentInput: {exc}") from exc
    cut = unanswered(request)
    if cut is not None:  # (the same words as agui replay's and verify's, for the same folder)
        raise ValueError(cut)
    body = Path(f"{stem}.sse")
    if not body.is_file():
        raise ValueError(f"{request} has no recorded response ({body.name} is missing)")
    meta: dict[str, Any] = {"status": 200, "contentType": "text/event-stream"}
    meta_path = Path(f"{stem}.response.json")
    if meta_path.exists():  # (a FIFO or a device there is refused by read_recorded, not read as no file)
        try:
            found = json.loads(read_recorded(meta_path, META_FILE_BYTES).decode("utf-8"))
        except (OSError, ValueError, RecursionError) as exc:
            raise ValueError(f"{meta_path} is not readable JSON: {exc}") from exc
        if not isinstance(found, dict):
            raise ValueError(f"{meta_path} is not a JSON object")
        meta.update(found)
    status = meta.get("status")
    if not isinstance(status, int) or not 100 <= status <= 599:
        raise ValueError(f"{meta_path}: status {status!r} is not an HTTP status")
    for field in ("contentType", "contentEncoding"):
        # Sent back as a header: a value HTTP cannot carry (a line break, a character outside ASCII, a
        # number) crashed the agent's answer (a traceback in the server's log, the client cut off or
        # given a bare 500); refused with the folder instead, as a bad status is.
        value = meta.get(field)
        if value not in (None, "") and not (isinstance(value, str) and _HEADER_VALUE.fullmatch(value)):
            raise ValueError(f"{meta_path}: {field} {quoted_name(value)} is not a header value HTTP can carry "
                             "(visible characters of Latin-1, spaces and tabs only inside)")
    encoding = meta.get("contentEncoding")
    return _Exchange(number=number, name=name, run_input=run_input, body=body, status=status,
                     content_type=str(meta.get("contentType") or "text/event-stream"),
                     content_encoding=str(encoding) if encoding else None)


def _resume(run_input: RunAgentInput) -> list[Any]:
    return [encode(entry) for entry in run_input.resume or ()]


def _difference(recorded: _Exchange, got: RunAgentInput) -> str | None:
    """What ``got`` differs in from the recorded request, in words (``None``: it matches)."""
    want = recorded.run_input
    where = f"request {recorded.number} (recorded as {recorded.name}.request.json)"
    if got.thread_id != want.thread_id:
        return f"{where}: thread id {quoted_name(got.thread_id)}, recorded {quoted_name(want.thread_id)}"
    if len(got.messages) != len(want.messages):
        return f"{where}: {len(got.messages)} message(s), recorded {len(want.messages)}"
    sent, kept = _resume(got), _resume(want)
    if sent != kept:
        # (the entries as JSON, made inert as the CLI shows text: a recording may come from anyone, and
        # this line goes to the log and to the client's error, where a C1 CSI or a bidi override in an
        # answer's payload would act on the terminal that shows it)
        # (and cut as every error and log line cuts the agent's or a caller's words: an answer may be a
        # megabyte, which the line, the client's error and the answer's detail would each hold whole)
        return (f"{where}: resume entries {quoted(visible(json.dumps(sent, ensure_ascii=False)))}, "
                f"recorded {quoted(visible(json.dumps(kept, ensure_ascii=False)))}")
    return None


async def _play(send: Send, exchange: _Exchange, run_id: str) -> None:
    headers = [(b"content-type", exchange.content_type.encode("latin-1")), (b"cache-control", b"no-cache")]
    if exchange.content_encoding:
        headers.append((b"content-encoding", exchange.content_encoding.encode("latin-1")))
    await send({"type": "http.response.start", "status": exchange.status, "headers": headers})
    # The run id the recording carries becomes the request's: a run id is a quoted JSON string in the
    # stream, replaced whole, in whole lines: the file is read block by block and the part of a line
    # after a block's last line break waits for the next block (up to _MAX_LINE bytes of it).
    old = json.dumps(exchange.run_input.run_id).encode()
    new = json.dumps(run_id).encode()
    replace = old != new and exchange.content_encoding is None
    held: list[bytes] = []  # (the start of a line, block by block: joined once, when it is sent)
    size = 0
    with open(exchange.body, "rb") as handle:
        while block := handle.read(_SEND_BLOCK):
            cut = max(block.rfind(b"\n"), block.rfind(b"\r")) + 1
            if cut:
                ready = b"".join([*held, block[:cut]])
                held, size = [block[cut:]], len(block) - cut
            elif size + len(block) > _MAX_LINE:  # (a line past the bound goes on as it is)
                ready = b"".join([*held, block])
                held, size = [], 0
            else:
                held.append(block)
                size += len(block)
                continue
            await send({"type": "http.response.body", "body": ready.replace(old, new) if replace else ready,
                        "more_body": True})
    rest = b"".join(held)
    await send({"type": "http.response.body", "body": rest.replace(old, new) if replace else rest,
                "more_body": False})
