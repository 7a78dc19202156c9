"""The sixteenth round's hostile-agent audit: inputs small on the wire that cost the client far more.

Each test plays the attack from a real server on 127.0.0.1 where it reaches the client through the
transport, and checks that the work it costs is in proportion to what was received. No timing is
asserted: the work is counted.
"""

from __future__ import annotations

import io
from typing import Any

import pytest
from wirekit import sse

from agui_client import AgentClient
from agui_client.core.fold import ThreadState

SSE = [(b"content-type", b"text/event-stream")]


def _answer(body: bytes) -> Any:
    """An ASGI agent answering every request with ``body``, as an event stream."""
    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": SSE})
        await send({"type": "http.response.body", "body": body})
    return app


def test_a_response_of_run_after_run_costs_work_in_proportion_to_its_runs(
        drive: Any, served: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # Each RUN_STARTED asked how many runs the thread held through ``ThreadState.runs``, which copies
    # every run record: a response of run after run (AG-UI lets one stream hold several) cost the square
    # of its runs, 27 s for the 40,000 runs of a 4 MB response, and a response of max_run_bytes never ended.
    n = 2000
    body = b"".join(b'data: {"type":"RUN_STARTED","threadId":"t","runId":"r%d"}\n\n'
                    b'data: {"type":"RUN_FINISHED","threadId":"t","runId":"r%d"}\n\n' % (i, i) for i in range(n))
    endpoint = served(_answer(body))
    copied = [0]
    runs = ThreadState.runs

    def counted(self: ThreadState) -> Any:
        records = runs.fget(self)  # type: ignore[attr-defined]
        copied[0] += len(records)
        return records

    monkeypatch.setattr(ThreadState, "runs", property(counted))
    with drive.client(endpoint.url) as client:
        result = client.thread("t").run("hi", run_id="r0")

    assert result.outcome == "success" and result.run_ids == tuple(f"r{i}" for i in range(n))
    second = next(w for w in result.warnings if w.code == "LC-06")
    assert "run 'r1' (run 2 of this response) started after run 'r0' finished (success)" in second.message
    assert copied[0] <= 4 * n  # (the result reads the response's runs once; it was n²/2)


def test_agui_chat_renders_a_bounded_part_of_a_runs_answers_as_markdown(
        served: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # Rendering Markdown costs far more than the text is long (a table some 10 KB a second): a run's
    # answer of a megabyte of tables held the chat for minutes after it arrived, and 256 MB for hours.
    # Past MARKDOWN_CHARS of a run's answers, blocks are shown as the plain text they are.
    from agui_client.cli import chatview as chat
    from agui_client.cli.render import RichOutput
    from agui_client.cli.terminal import SafeConsole

    def table(k: int) -> str:
        rows = "".join(f"| cell-{k}-{r} | {'x' * 20} |\n" for r in range(60))
        return f"| a | b |\n|---|---|\n{rows}\n"

    blocks = [table(k) for k in range(100)]  # (each delta a whole block: no live tail is redrawn)
    events = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
              {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
              *({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": block} for block in blocks[:50]),
              {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
              {"type": "TEXT_MESSAGE_START", "messageId": "m2", "role": "assistant"},
              *({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m2", "delta": block} for block in blocks[50:]),
              {"type": "TEXT_MESSAGE_END", "messageId": "m2"},
              {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}]
    endpoint = served(_answer(sse(*events)))
    rendered: list[int] = []
    markdown = chat._markdown

    def counted(text: str) -> Any:
        rendered.append(len(text))
        return markdown(text)

    monkeypatch.setattr(chat, "_markdown", counted)
    sink = io.StringIO()
    view = chat.ChatView(RichOutput(SafeConsole(file=sink, width=100, force_terminal=True, color_system=None)))
    with AgentClient(endpoint.url) as client, client.thread("t").stream("hi", run_id="r") as stream:
        for event in stream:
            view.event(event)
    view.close()

    shown = sink.getvalue()
    # The budget is charged what the drawings write (a table writes more than its text): the first blocks
    # are drawn as tables until it is spent, the drawing of the one that outgrows it given up.
    tables = [k for k in range(100) if f"| cell-{k}-0 |" not in shown]
    assert tables == list(range(len(tables))) and 0 < len(tables) < 50  # (the run's two messages share it)
    # (then none: one more is drawn only when its text fits what is left, and given up as its drawing outgrows it)
    assert len(tables) <= len(rendered) <= len(tables) + 1 and rendered == [len(b) for b in blocks[:len(rendered)]]
    assert len(shown[:shown.index(f"| cell-{len(tables)}-0 |")]) <= chat.MARKDOWN_CHARS + 2 * len("agent:\n")
    assert "cell-0-0" in shown and "| cell-0-0 |" not in shown  # (the first blocks: a table)
    assert "| cell-99-59 |" in shown and shown.count("cell-") == 100 * 60  # (the rest: every row, as text)
