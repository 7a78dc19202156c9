"""A run's overall deadline, ``run_timeout`` (hardening issue 17, item 5).

The idle timeout bounds the silence between bytes; a server that drips a keep-alive comment just
inside it would hold ``Thread.run()`` for ever. ``run_timeout`` (per client, or per call) bounds the run
as a whole, with the failure rule of any transport fault. Every test runs through both shells; none
measures time: a run that was not bounded would hang the test (the suite's timeout), and the error's
type says which bound ended it.
"""

from __future__ import annotations

import math
import time
from typing import Any

import pytest

import agui_client as ag
from agui_client import _client_base
from agui_client.core.plan import MAX_SECONDS, MIN_SECONDS
from agui_client.stores import MemoryStore
from agui_client.testing import Finish, Gate, KeepAlive, Pause, ScriptedAgent, Start, Wait

#: A response that never ends but is never idle: a comment every 20 ms, for about 4 s.
DRIP = [KeepAlive(), Pause(0.02)] * 200


def _interrupted(*ids: str) -> Finish:
    return Finish(outcome=ag.RunFinishedInterruptOutcome(
        interrupts=tuple(ag.Interrupt(id=i, reason="approval") for i in ids)))


@pytest.mark.parametrize("where", ["client", "call"])
def test_a_dripping_run_ends_at_its_deadline_and_gives_a_turns_claim_back(
    drive: Any, served: Any, where: str
) -> None:
    endpoint = served(ScriptedAgent([[Start(), *DRIP], [Start(), Finish()]]))
    store = MemoryStore()
    on_client = {"run_timeout": 0.3} if where == "client" else {}
    on_call = {"run_timeout": 0.3} if where == "call" else {}
    with drive.client(endpoint.url, store=store, idle_timeout=10, **on_client) as client:
        thread = client.thread()
        with pytest.raises(ag.RunTimeout) as caught:
            thread.run("hi", **on_call)
        error = caught.value
        assert isinstance(error, ag.TransportError) and error.timeout == 0.3
        assert "run_timeout of 0.3s" in str(error)
        # It says where, and carries what was folded, as any fault during a run does.
        assert error.run_id is not None and error.index == 1
        assert error.result is not None and error.result.outcome is None
        stored = store.load(thread.id)
        assert stored is not None and stored.claim is None  # a turn lets go: the retry is the caller's
        assert thread.run("again").outcome == "success"


def test_a_silent_run_ends_at_its_deadline_not_at_the_idle_timeout(drive: Any, served: Any, gate: Gate) -> None:
    # The wait for the next bytes is never longer than the run's deadline: otherwise a silent server
    # would hold the run for the idle timeout (60 s here) before the deadline was looked at.
    endpoint = served(ScriptedAgent([[Start(), Wait(gate, timeout=60)]]))
    with drive.client(endpoint.url, idle_timeout=60) as client:
        with pytest.raises(ag.RunTimeout):
            client.thread().run("hi", run_timeout=0.3)


def test_a_resume_past_its_deadline_after_its_request_was_written_stays_claimed(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent([[Start(), _interrupted("ask-1")], [Start(), *DRIP]]))
    store = MemoryStore()
    with drive.client(endpoint.url, store=store, idle_timeout=10) as client:
        thread = client.thread()
        thread.run("hi")
        with pytest.raises(ag.RunTimeout) as caught:
            thread.run(resume=thread.resume_builder().answer("ask-1", "go"), run_timeout=0.3)

    assert caught.value.request_sent is True
    assert getattr(caught.value, "claim_held", False) is True
    stored = store.load(thread.id)
    assert stored is not None and stored.claim is not None


class _MovedClock:
    """The clock the client reads its runs' deadlines on (``_client_base.time``), which the test moves on:
    the deadline passes when the test says so. A real one had to be long enough for RUN_STARTED to arrive
    on a busy machine (0.3 s read none under load), and the test then waited all of it, 2 s a shell."""

    def __init__(self) -> None:
        self.ahead = 0.0

    def monotonic(self) -> float:
        return time.monotonic() + self.ahead


def test_a_stream_past_its_deadline_raises_while_it_is_read(
        drive: Any, served: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = _MovedClock()
    monkeypatch.setattr(_client_base, "time", clock)
    endpoint = served(ScriptedAgent([[Start(), *DRIP]]))
    seen = []
    with drive.client(endpoint.url, idle_timeout=10, run_timeout=30) as client:
        thread = client.thread()
        with pytest.raises(ag.RunTimeout) as caught, thread.stream("hi") as events:
            for event in events:
                seen.append(type(event).__name__)
                clock.ahead = 31.0  # (the run's time is up: the next read, a drip's comment, finds it so)
    assert seen == ["RunStartedEvent"]
    assert caught.value.timeout == 30 and caught.value.request_sent is True


def test_a_run_that_ends_in_time_is_untouched_by_its_deadline(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent([[Start(), KeepAlive(), Finish()]]))
    with drive.client(endpoint.url, run_timeout=30) as client:
        result = client.thread().run("hi")
    assert result.outcome == "success" and not result.warnings


@pytest.mark.parametrize("value", [math.nan, math.inf, 0, -1, True, "5", 1e308, 1e9 + 1, 1e-320, 0.000999])
@pytest.mark.parametrize("name", ["timeout", "idle_timeout", "run_timeout"])
def test_a_timeout_that_is_not_a_finite_number_above_zero_is_refused_when_given(
    drive: Any, name: str, value: Any
) -> None:
    # A NaN reached the loop's timers: a timeout at the first wait under asyncio, a bare ValueError
    # mid-run under uvloop; 0 or less ended every run at its first wait. Refused where it is given.
    with pytest.raises(ValueError) as caught:
        drive.client("http://127.0.0.1:9/agent", **{name: value})
    assert str(caught.value).startswith(f"{name} must be") and repr(value) in str(caught.value)


@pytest.mark.parametrize("value", [math.nan, 0, 1e308, 1e-320])
def test_a_run_timeout_out_of_range_for_one_run_is_refused_before_the_thread_is_claimed(
    drive: Any, served: Any, value: float
) -> None:
    agent = ScriptedAgent([[Start(), Finish()]])
    endpoint = served(agent)
    store = MemoryStore()
    with drive.client(endpoint.url, store=store) as client:
        thread = client.thread("t")
        with pytest.raises(ValueError) as caught:
            thread.run("hi", run_timeout=value)
        assert str(caught.value).startswith("run_timeout must be")
        assert store.load("t") is None and agent.requests == []  # (nothing claimed, nothing sent)
        assert thread.run("hi").outcome == "success"


def test_a_timeout_below_the_shortest_names_the_setting_and_the_bound(drive: Any) -> None:
    # 1e-320 was taken and ended the connect as a ConnectError ("operation now in progress") or a
    # ConnectTimeout: the waits under a socket count in whole milliseconds.
    with pytest.raises(ValueError) as caught:
        drive.client("http://127.0.0.1:9/agent", idle_timeout=1e-320)
    assert str(caught.value) == ("idle_timeout must be at least 0.001 seconds (1 ms: the shortest wait a socket "
                                 "can keep), got 1e-320")


def test_the_shortest_timeout_is_taken(drive: Any) -> None:
    with drive.client("http://127.0.0.1:9/agent", timeout=MIN_SECONDS, idle_timeout=MIN_SECONDS,
                      run_timeout=MIN_SECONDS) as client:
        assert (client.timeout, client.idle_timeout, client.run_timeout) == (0.001, 0.001, 0.001)


def test_the_longest_timeout_taken_is_a_working_one(drive: Any, served: Any) -> None:
    # 1e308 was taken and ended the first read with the socket's OverflowError: the bound is what the
    # platform's clock holds, and a run with every timeout at it goes through.
    endpoint = served(ScriptedAgent([[Start(), Finish()]]))
    with drive.client(endpoint.url, timeout=MAX_SECONDS, idle_timeout=MAX_SECONDS,
                      run_timeout=MAX_SECONDS) as client:
        assert client.thread().run("hi", run_timeout=MAX_SECONDS).outcome == "success"
