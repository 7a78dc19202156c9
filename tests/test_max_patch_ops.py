"""``max_patch_ops``: the most operations one patch may hold, a client setting (``SP-06`` past it).

The bound was a constant: an agent that diffs a table of more than 20,000 changed rows (a
``fast-json-patch`` ``compare()``) had every such delta refused, its state out of step until the next
snapshot, and nothing to raise; a backend sharing one loop among many runs could not lower it.
"""

from __future__ import annotations

import asyncio
import json
from functools import partial
from typing import Any

import pytest
from clikit import agui_here
from wirekit import sse

import agui_client as ag
from agui_client.core.patch import MAX_PATCH_OPS
from agui_client.core.session import RunSession
from agui_client.testing import Finish, ScriptedAgent, Start

_sse = partial(sse, compact=True)  # (compact JSON, as producers write it)


def _adds(count: int, prefix: str) -> list[dict[str, Any]]:
    return [{"op": "add", "path": f"/{prefix}{i}", "value": i} for i in range(count)]


def _patches() -> bytes:
    """A state delta of six operations, one of five, and an activity delta of six."""
    return _sse({"type": "STATE_DELTA", "delta": _adds(6, "six")},
                {"type": "STATE_DELTA", "delta": _adds(5, "five")},
                {"type": "ACTIVITY_SNAPSHOT", "messageId": "a1", "activityType": "progress", "content": {}},
                {"type": "ACTIVITY_DELTA", "messageId": "a1", "activityType": "progress", "patch": _adds(6, "k")})


def _activity(state: Any) -> Any:
    [activity] = [m for m in state.messages if isinstance(m, ag.ActivityMessage)]
    return activity.content


def test_a_client_bounds_the_operations_of_each_patch_by_its_setting_read_when_a_run_starts(
        drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent([[Start(), _patches(), Finish()]] * 2))

    with drive.client(endpoint.url, max_patch_ops=5) as client:
        assert client.max_patch_ops == 5
        bounded = client.thread("t1").run("hi", run_id="r1")
        client.max_patch_ops = 6  # (the next run's)
        raised = client.thread("t2").run("hi", run_id="r2")

    # Five operations apply; six are refused whole, a state's and an activity's patch alike.
    assert sorted(bounded.state.state) == [f"five{i}" for i in range(5)]
    assert _activity(bounded.state) == {}
    assert [(w.code, w.index, w.pointer) for w in bounded.warnings] == [
        ("SP-06/AGUI302", 1, "/delta/5"), ("AC-05", 4, "/patch/5")]
    assert "more than the 5 one patch may hold" in bounded.warnings[0].message
    assert raised.warnings == ()
    assert sorted(raised.state.state) == sorted([f"six{i}" for i in range(6)] + [f"five{i}" for i in range(5)])
    assert _activity(raised.state) == {f"k{i}": i for i in range(6)}


def test_a_patch_past_the_default_applies_once_the_setting_is_raised(drive: Any, served: Any) -> None:
    # The honest case the constant refused: a diff of more than 20,000 rows.
    rows = _sse({"type": "STATE_DELTA", "delta": _adds(MAX_PATCH_OPS + 1, "row")})
    endpoint = served(ScriptedAgent([[Start(), rows, Finish()]] * 2))

    with drive.client(endpoint.url) as client:
        refused = client.thread("t1").run("hi", run_id="r1")
    with drive.client(endpoint.url, max_patch_ops=None) as client:
        applied = client.thread("t2").run("hi", run_id="r2")

    assert MAX_PATCH_OPS == 20_000
    assert refused.state.state == {} and [w.code for w in refused.warnings] == ["SP-06/AGUI302"]
    assert applied.warnings == () and len(applied.state.state) == MAX_PATCH_OPS + 1


@pytest.mark.parametrize("events", [False, True])
def test_a_session_takes_the_bound_for_its_response_and_the_next_session_its_own(events: bool) -> None:
    thread = ag.ThreadState(thread_id="t")
    for run, bound in (("r1", 5), ("r2", MAX_PATCH_OPS)):
        session = RunSession(thread, events=events, max_patch_ops=bound)
        for event in ({"type": "RUN_STARTED", "threadId": "t", "runId": run},
                      {"type": "STATE_DELTA", "delta": _adds(6, run)},
                      {"type": "RUN_FINISHED", "threadId": "t", "runId": run}):
            session.feed_payload(json.dumps(event).encode())
        session.end()

    assert sorted(thread.state) == [f"r2{i}" for i in range(6)]


@pytest.mark.parametrize("make", [ag.AgentClient, ag.AsyncAgentClient])
def test_max_patch_ops_refuses_what_is_no_bound(make: Any) -> None:
    for bad in (0, -1, 1.5, "20000", True):
        with pytest.raises(ValueError) as refused:
            make("http://127.0.0.1:9/", max_patch_ops=bad)
        assert "max_patch_ops must be a positive int or None" in str(refused.value)
    client = make("http://127.0.0.1:9/")
    try:
        assert client.max_patch_ops == MAX_PATCH_OPS
        for bad in (0, 2.0, False):
            with pytest.raises(ValueError) as refused:
                client.max_patch_ops = bad
            assert repr(bad) in str(refused.value)
        assert client.max_patch_ops == MAX_PATCH_OPS
    finally:
        if make is ag.AgentClient:
            client.close()
        else:
            asyncio.run(client.close())


def test_the_cli_bounds_each_patch_with_max_patch_ops(served: Any) -> None:
    endpoint = served(ScriptedAgent([[Start(), _patches(), Finish()]], cycle=True))

    bounded = agui_here("run", endpoint.url, "-m", "hi", "--max-patch-ops", "5")
    unbounded = agui_here("run", endpoint.url, "-m", "hi", "--max-patch-ops", "none")
    refused = agui_here("run", endpoint.url, "-m", "hi", "--max-patch-ops", "0")

    assert bounded.returncode == 0, bounded.stderr
    assert "more than the 5 one patch may hold" in bounded.stdout + bounded.stderr
    assert unbounded.returncode == 0, unbounded.stderr
    assert "one patch may hold" not in unbounded.stdout + unbounded.stderr
    assert refused.returncode == 2 and "--max-patch-ops" in refused.stderr
