"""A process killed in the middle of ``Thread.run`` never leaves a torn thread in the store.

``tests/stores/test_crash.py`` kills a process that calls the store directly. This test kills one
that drives a real thread through ``Thread.run`` against a ``ScriptedAgent`` served here:
``thread_crash_writer.py`` loads the thread, runs it one step on (a resume answering its open
interrupts, or a first message), prints ``reported <interrupt ids>`` when ``run`` returns to it,
and is killed with SIGKILL at a moment drawn from a seeded RNG, one of:

* ``sending``: when it says it is about to call ``run`` (the kill lands in the claim or the request);
* ``reported``: when it printed the interrupts ``run`` returned (the save happened before);
* ``early``: it kills itself a seeded 0 to 5 ms after ``sending`` (the claim, the request's start);
* ``timer``: it kills itself a seeded 0 to 50 ms after ``sending``: anywhere in the claim, the
  request, the stream, the save, or after the report (a run takes some 20 to 50 ms here);
* ``gate``: while the agent holds the response at a ``Wait`` half-way through the stream.

Then a fresh store object loads the thread. It must hold either the previous version (claimed, when
the kill came after the claim and before the save; for the first run, nothing, or the record its claim
created: version 0, claimed, the empty thread) or exactly the thread a complete run makes: the
previous one with the run's request and all of the run's events folded in, rebuilt here with
``replay`` from the request the agent received. Never anything between. When the killed process had
printed ``reported``, the thread's open interrupts are exactly the ones it printed; a kill while the
stream is held must leave the previous version.

The next process continues from what the store holds. A claim left by a killed process is
released here first, as an operator would once they know whether the request reached the agent.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest
import thread_crash_writer

from agui_client import ThreadState, replay
from agui_client.stores import StoredThread
from agui_client.testing import ANSWER_SCHEMA, Gate, Item, ScriptedAgent, Wait, serve, text_message
from agui_client.types import (
    Event,
    Interrupt,
    RunAgentInput,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunStartedEvent,
    StateSnapshotEvent,
)

__all__: list[str] = []

KILLS = 20
MODES = ("sending", "reported", "early", "timer", "gate")
#: The longest self-kill delay (seconds) of each timed mode: a run takes some 20 to 50 ms here.
DELAYS = {"early": 0.005, "timer": 0.05}
#: A watchdog for a response that never reaches its gate, never a timing.
WATCHDOG = 30.0
#: Long enough that a kill a few milliseconds in can land mid-stream.
TEXT = " ".join(f"word{i}" for i in range(150))


def events_for(run_input: RunAgentInput) -> list[Event]:
    """The complete run the agent plays for ``run_input``: text, a state snapshot, two new interrupts."""
    run_id = run_input.run_id
    interrupts = tuple(
        Interrupt(id=f"{run_id}-{name}", reason=name, message=f"{name} for {run_id}?", response_schema=ANSWER_SCHEMA)
        for name in ("approve", "confirm"))
    return [
        RunStartedEvent(thread_id=run_input.thread_id, run_id=run_id),
        *text_message(f"{run_id}-text", f"Run {run_id}: {TEXT}"),
        StateSnapshotEvent(snapshot={"lastRun": run_id,
                                     "answered": [e.interrupt_id for e in run_input.resume or ()]}),
        RunFinishedEvent(thread_id=run_input.thread_id, run_id=run_id,
                         outcome=RunFinishedInterruptOutcome(interrupts=interrupts)),
    ]


class CrashAgent:
    """A stateless agent whose every run ends with two new interrupts; some runs stop at a gate."""

    def __init__(self) -> None:
        self.gates: dict[str, Gate] = {}
        self.agent = ScriptedAgent([self.step], cycle=True, stateless=True)

    def step(self, run_input: RunAgentInput) -> list[Item]:
        events: list[Item] = list(events_for(run_input))
        gate = self.gates.get(run_input.run_id)
        if gate is not None:
            half = len(events) // 2
            events[half:half] = [Wait(gate, timeout=WATCHDOG)]
        return events


@pytest.fixture(scope="module")
def crash_agent() -> Iterator[tuple[CrashAgent, str]]:
    crash = CrashAgent()
    with serve(crash.agent) as server:
        yield crash, server.url


def complete_run(previous: StoredThread | None, thread_id: str, request: RunAgentInput) -> dict[str, Any]:
    """The dump a complete run of ``request`` makes of the ``previous`` thread."""
    state = ThreadState.load(previous.data) if previous is not None else ThreadState(thread_id=thread_id)
    known = {m.id for m in state.messages}
    for message in request.messages:
        if message.id not in known:
            state.add_message(message)
    replay(events_for(request), state=state, run_input=request)
    return state.dump()


def play(helper: subprocess.Popen[str], stdout: IO[str], job: dict[str, Any], mode: str,
         gate: Gate | None) -> tuple[list[str], int]:
    """Hand the helper one job and kill its child as ``mode`` says; returns what it printed and its exit code."""
    assert helper.stdin is not None
    helper.stdin.write(json.dumps(job) + "\n")
    helper.stdin.flush()
    lines: list[str] = []
    pid: int | None = None
    for line in stdout:
        word, *rest = line.split()
        if word == "exit":
            return lines, int(rest[0])
        lines.append(line)
        if word == "pid":
            pid = int(rest[0])
        elif word == mode or (word == "sending" and mode == "gate"):
            assert pid is not None
            if gate is not None:
                assert gate.wait_reached(WATCHDOG), "the run never reached the agent's gate"
            # The child is not reaped before its parent reports "exit", so this pid is still the child.
            os.kill(pid, signal.SIGKILL)
            if gate is not None:
                gate.open()
    raise AssertionError(f"the helper ended in the middle of a job; it printed {lines}")


def check_after_kill(stored: StoredThread | None, previous: StoredThread | None, *, thread_id: str, run_id: str,
                     reported: list[str] | None, sent: list[RunAgentInput]) -> str:
    """The thread is the previous version or the complete new one; returns which (``previous``/``new``)."""
    # Every run claims the thread before sending (a resume or not): a stored one at its version, a new
    # one by creating its record claimed, at version 0, holding the thread as it was before the run.
    before = previous.data if previous is not None else ThreadState(thread_id=thread_id).dump()
    if stored is None or stored.data == before:
        assert reported is None, f"run {run_id} reported {reported}, but the store holds the previous thread"
        if stored is None:
            assert previous is None, "the thread vanished"
        else:
            # Untouched, or claimed before the request and killed before the save.
            allowed = [(0, True)] if previous is None else [(previous.version, False), (previous.version + 1, True)]
            assert (stored.version, stored.claim is not None) in allowed
        return "previous"
    assert len(sent) == 1, f"the store moved on, but the agent received {len(sent)} request(s) for run {run_id}"
    assert stored.claim is None
    assert stored.version == (1 if previous is None else previous.version + 2)
    assert stored.data == complete_run(previous, thread_id, sent[0]), f"torn thread at version {stored.version}"
    thread = ThreadState.load(stored.data)
    if reported is not None:
        assert [i.id for i in thread.open_interrupts] == reported
    assert [i.id for i in thread.open_interrupts] == [f"{run_id}-approve", f"{run_id}-confirm"]
    return "new"


@pytest.mark.timeout(300)
@pytest.mark.parametrize("kind", ["sqlite", "redis", "postgres"])
def test_a_run_killed_anywhere_leaves_the_previous_or_the_complete_thread(
        kind: str, crash_agent: tuple[CrashAgent, str], request: pytest.FixtureRequest, tmp_path: Path) -> None:
    crash, url = crash_agent
    thread_id = f"crash-{kind}-{uuid.uuid4().hex}"
    store_job: dict[str, Any]
    if kind == "sqlite":
        store_job = {"kind": "sqlite", "target": str(tmp_path / "threads.db")}
    elif kind == "postgres":
        store_job = {"kind": "postgres", "target": request.getfixturevalue("postgres_dsn"),
                     "table": f"agui_crash_{uuid.uuid4().hex}"}
    else:
        store_job = {"kind": "redis", "target": request.getfixturevalue("redis_url"),
                     "prefix": f"agui:crash:{uuid.uuid4().hex}:"}
    rng = random.Random(f"thread-crash-{kind}")
    modes = [MODES[k % len(MODES)] for k in range(KILLS)]
    rng.shuffle(modes)
    stderr = tmp_path / "helper.err"
    outcomes: Counter[tuple[str, str]] = Counter()
    previous: StoredThread | None = None
    with stderr.open("w") as err:
        helper = subprocess.Popen([sys.executable, thread_crash_writer.__file__], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=err, text=True)
    assert helper.stdin is not None and helper.stdout is not None
    try:
        for kill, mode in enumerate(modes):
            run_id = f"{kind}-run-{kill}"
            gate = crash.gates.setdefault(run_id, Gate()) if mode == "gate" else None
            job = {**store_job, "url": url, "thread_id": thread_id, "run_id": run_id, "message": f"Step {kill}",
                   "kill_delay": rng.uniform(0, DELAYS[mode]) if mode in DELAYS else None}
            lines, code = play(helper, helper.stdout, job, mode, gate)
            assert code == -signal.SIGKILL, f"the writer exited {code}, not by SIGKILL:\n{stderr.read_text()}"
            reported = next((line.split()[1:] for line in lines if line.startswith("reported ")), None)
            sent = [r for r in crash.agent.requests if r.run_id == run_id]

            with thread_crash_writer.open_store(store_job) as reader:
                stored = reader.load(thread_id)
                outcome = check_after_kill(stored, previous, thread_id=thread_id, run_id=run_id, reported=reported,
                                           sent=sent)
                if mode == "gate":
                    assert outcome == "previous", "a run held mid-stream saved its thread"
                if stored is not None and stored.claim is not None:
                    reader.release(thread_id, claimed_version=stored.version, owner=stored.claim)
                    stored = reader.load(thread_id)
            outcomes[mode, outcome] += 1
            previous = stored
    finally:
        helper.stdin.close()
        helper.wait(WATCHDOG)
        helper.stdout.close()
    assert helper.returncode == 0, stderr.read_text()
    # Not vacuous: kills left both the previous thread and complete new ones behind.
    assert outcomes["reported", "new"] >= 1 and outcomes["gate", "previous"] >= 1, outcomes
    assert previous is not None and len(ThreadState.load(previous.data).open_interrupts) == 2
