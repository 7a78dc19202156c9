"""The sixteenth round's hostile-agent audit: inputs small on the wire that cost the client far more.

Each test plays the attack from a real server on 127.0.0.1 where it reaches the client through the
transport, and checks that the work it costs is in proportion to what was received. No timing is
asserted: the work is counted.
"""

from __future__ import annotations

from typing import Any

import pytest

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
