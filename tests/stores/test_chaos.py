"""Replicas racing on shared threads and killed at random: nothing lost, nothing sent twice.

The other crash tests kill one writer at chosen steps. This harness lets a seed choose: for each
durable store (SQLite, Redis, PostgreSQL) and each seed, ``WORKERS`` replica processes
(``chaos_worker.py``: real processes, one forked child per turn, so each turn loads its thread fresh
from the store) play ``ROUNDS`` rounds against one store and one ``ScriptedAgent`` served on
127.0.0.1. In a round every replica takes one turn on one of ``THREADS`` shared threads (half the
rounds all of them on the same thread, so they race): a new message, or a resume answering the
thread's open interrupt with a ``ResumeBuilder``. The agent answers each run with a reply whose size
the run id picks, and ends about half of them with an interrupt; each turn's store folds appended
changes after one to four of them (a small ``Compaction``), so compactions run all the time.

The seed also picks, per turn, whether and how the replica is SIGKILLed, synchronised on events and
never on sleeps: before or after its n-th store call (the replica kills itself: inside a load, a
claim, an append, a save, a compaction), when the test reads its n-th report line, a seeded few
milliseconds after it started its run (anywhere: in a statement, between a request and its reply),
when the agent receives its request, or half-way through the agent's response (at a gate). A killed
replica's next turn is a fresh process (a restart). Or the agent cuts the response half-way (the
replica lives, its run fails, and a resume keeps its claim, as documented). Or the replica is held, on
a signal, at its n-th store call or between a compaction's read and its write, until every other
replica of the round has taken its turn: whole turns of the others come in between (a stale claim, a
claim held while the others are refused, a fold of a thread that moved on).

Between rounds an operator does what the stores page documents for a claim whose writer died:
``thread.release_claim(force=True)``, once it knows whether the agent acted. A dead message turn is
let go (the turn is the caller's to send again); a dead resume is let go and the thread goes on only
when the replica died in its claim, before anything could be sent. Otherwise (and for a resume whose
response was cut) the agent may have acted on the answers, so the thread is released and retired (a
fresh thread takes its place).

After the last round the server is stopped (so every request a killed replica got out is in the
agent's log) and every thread is checked against the log and the store:

* every record loads, and holds no claim;
* no run id reached the agent twice, and no interrupt was answered twice;
* every request carried the whole thread as some earlier run left it (the run's request and reply),
  and its new user turn or its resume answering exactly that run's interrupt;
* the stored thread is exactly what its last run left (its messages, in order, without duplicates,
  and its open interrupt), and every other run the agent received on the thread is on the chain of
  runs leading to it, or was sent by a replica that died holding a claim the operator released;
* every run a replica saw saved (``run`` returned, or its append or save returned) is on that chain;
* a replica refused with ``ConcurrentResume`` sent nothing, and no replica failed otherwise.

The CI version is small (one seed of 16 rounds per store). Run it long with more seeds, from a given one::

    AGUI_CHAOS_SEEDS=200 AGUI_CHAOS_FIRST_SEED=1000 .venv/bin/python -m pytest tests/stores/test_chaos.py -q

(``AGUI_CHAOS_ROUNDS``, ``AGUI_CHAOS_WORKERS`` and ``AGUI_CHAOS_THREADS`` set the rounds per seed, the
replicas and the shared threads; ``-k sqlite`` runs one store). A failure names its store
and seed; the same seed replays the same plan (the timings, and so the interleavings, vary).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from queue import Empty, Queue
from typing import Any

import chaos_worker
import pytest
from attrs import define, field

from agui_client import AgentClient
from agui_client.testing import Disconnect, Gate, Item, ScriptedAgent, Wait, serve, text_message
from agui_client.types import (
    Interrupt,
    RunAgentInput,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunStartedEvent,
    StateSnapshotEvent,
)

__all__: list[str] = []

# One seed of 16 rounds a store: 48 turns, as many as two seeds of 8 rounds played, for two thirds of
# the processor time (measured: 9.6 s against 6.4 s of CPU for SQLite). What is checked comes from the
# turns (each a fresh fork that loads its thread, with its own kill, hold or cut drawn), not from the
# seeds; a second seed only started the replica processes (each importing the package) and the agent's
# server again. Longer threads come with it: more history for the compactions to fold.
SEEDS = int(os.environ.get("AGUI_CHAOS_SEEDS", "1"))
FIRST_SEED = int(os.environ.get("AGUI_CHAOS_FIRST_SEED", "0"))
ROUNDS = int(os.environ.get("AGUI_CHAOS_ROUNDS", "16"))
WORKERS = int(os.environ.get("AGUI_CHAOS_WORKERS", "3"))
THREADS = int(os.environ.get("AGUI_CHAOS_THREADS", "2"))
#: A watchdog for a replica or a gate that never answers, never a timing.
WATCHDOG = 60.0
#: The longest self-kill delay after a run starts (a turn takes some 20 to 60 ms here).
MAX_DELAY = 0.05
LONG = SEEDS * ROUNDS > 16  # (more turns than the CI's: no per-test time limit)


# --------------------------------------------------------------------------------------------------
# The agent
# --------------------------------------------------------------------------------------------------


def interrupts(run_id: str) -> bool:
    """Whether the agent ends run ``run_id`` with an interrupt (about half of them, fixed by the id)."""
    return random.Random(f"ask {run_id}").random() < 0.5


def reply_text(run_id: str) -> str:
    """The text of run ``run_id``'s reply: a few words to some kilobytes, so compactions fold real bytes."""
    return f"reply to {run_id}:" + " word" * random.Random(f"reply {run_id}").choice([1, 20, 200, 800])


class ChaosAgent:
    """A stateless agent that answers every run with one reply and, for half the run ids, an interrupt;
    it kills the sending replica on receiving the request, or half-way through its response, when told."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._pids: dict[str, int] = {}
        self.kills: dict[str, str] = {}
        self.agent = ScriptedAgent([self.step], cycle=True, stateless=True)

    def started(self, run_id: str, pid: int) -> None:
        with self._changed:
            self._pids[run_id] = pid
            self._changed.notify_all()

    def _kill(self, run_id: str) -> None:
        with self._changed:
            assert self._changed.wait_for(lambda: run_id in self._pids, WATCHDOG)
            pid = self._pids[run_id]
        os.kill(pid, signal.SIGKILL)

    def step(self, run_input: RunAgentInput) -> list[Item]:
        run_id = run_input.run_id
        outcome = RunFinishedInterruptOutcome(interrupts=(
            Interrupt(id=f"{run_id}-ask", reason="approval", message=f"May {run_id} go on?"),)) \
            if interrupts(run_id) else None
        events: list[Item] = [
            RunStartedEvent(thread_id=run_input.thread_id, run_id=run_id),
            *text_message(f"{run_id}-reply", reply_text(run_id)),
            StateSnapshotEvent(snapshot={"lastRun": run_id}),
            RunFinishedEvent(thread_id=run_input.thread_id, run_id=run_id, outcome=outcome),
        ]
        how = self.kills.get(run_id)
        if how == "request":
            self._kill(run_id)
        elif how == "cut":
            events.insert(len(events) // 2, Disconnect())
        elif how == "stream":
            gate = Gate()
            events.insert(len(events) // 2, Wait(gate, timeout=WATCHDOG))

            def kill_at_gate() -> None:
                if gate.wait_reached(WATCHDOG):  # (else the replica is gone, and its pid may be another's)
                    self._kill(run_id)
                gate.open()

            threading.Thread(target=kill_at_gate, daemon=True).start()
        return events


# --------------------------------------------------------------------------------------------------
# The replicas
# --------------------------------------------------------------------------------------------------


@define
class Job:
    """One turn a replica takes, and what it reported."""

    worker: int
    run_id: str
    thread_id: str
    kill: dict[str, Any] | None
    lines: list[str] = field(factory=list)
    pid: int | None = None
    code: int | None = None

    def words(self, first: str) -> list[list[str]]:
        return [line.split()[1:] for line in self.lines if line.split()[:1] == [first]]

    @property
    def kind(self) -> str | None:
        """``message`` or ``resume`` (once it said which it sends)."""
        sending = self.words("sending")
        return sending[0][1] if sending else None

    @property
    def owners(self) -> set[str]:
        """The owner tokens its claims named."""
        return {w[3] for w in self.words("op") if w[1] == "claim" and w[2] == "begin" and len(w) > 3}

    @property
    def saved(self) -> bool:
        """Whether it saw its run saved: ``run`` returned, or its append or save returned."""
        return bool(self.words("done")) or any(w[1] in ("append", "save") and w[2] == "end" for w in self.words("op"))

    @property
    def unsent(self) -> bool:
        """Whether it certainly sent nothing: it killed itself in a load or a claim (before any request)."""
        return any(w[-1] in ("load", "claim") for w in self.words("die"))

    @property
    def cut(self) -> bool:
        """Whether the agent cut its response (planned) and its run failed for it, the replica alive."""
        return self.kill == {"agent": "cut"} and bool(self.words("failed")) and not self.killed

    @property
    def killed(self) -> bool:
        return self.code == -signal.SIGKILL


class Replica:
    """A ``chaos_worker.py`` process: hands it one job at a time, reads its reports, kills on a line."""

    def __init__(self, index: int, ended: Queue[tuple[str, int]], agent: ChaosAgent, stderr: Path) -> None:
        self.index = index
        self._ended = ended
        self._agent = agent
        self.job: Job | None = None
        self.stderr = stderr
        with stderr.open("w") as err:
            self.process = subprocess.Popen([sys.executable, chaos_worker.__file__], stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, stderr=err, text=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def start(self, job: Job, spec: dict[str, Any]) -> None:
        self.job = job
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({**spec, "run_id": job.run_id, "thread_id": job.thread_id,
                                             "kill": job.kill if job.kill and ("op" in job.kill or "delay" in job.kill)
                                             else None, "hold": (job.kill or {}).get("hold"),
                                             "compaction": spec["compaction"][self.index]}) + "\n")
        self.process.stdin.flush()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            job = self.job
            assert job is not None
            word, *rest = line.split() or [""]
            if word == "exit":
                job.code = int(rest[0])
                self._ended.put(("ended", self.index))
                continue
            job.lines.append(line)
            if word == "held":
                self._ended.put(("held", self.index))
            if word == "pid":
                job.pid = int(rest[0])
                self._agent.started(job.run_id, job.pid)
            elif job.kill is not None and job.kill.get("line") == len(job.lines) and job.pid is not None:
                # The zygote reports a child's end only after reaping it, and forks the next one only
                # after that: a pid seen here is this job's child, alive or already gone.
                try:
                    os.kill(job.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass  # (it ended before the line was read: the kill came too late, its report says so)

    def close(self) -> int:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        code = self.process.wait(WATCHDOG)
        self._reader.join(WATCHDOG)
        self.process.stdout.close()
        return code


def kill_plan(rng: random.Random) -> dict[str, Any] | None:
    """How (and whether) a turn's replica dies."""
    draw = rng.random()
    if draw < 0.25:
        return None
    if draw < 0.35:
        return {"hold": {"op": rng.randint(1, 5)} if rng.random() < 0.6 else {"fold": True}}
    if draw < 0.60:
        return {"op": rng.randint(1, 5), "when": rng.choice(["before", "after"])}
    if draw < 0.72:
        return {"line": rng.randint(2, 14)}
    if draw < 0.86:
        return {"delay": rng.uniform(0, MAX_DELAY)}
    return {"agent": rng.choice(["request", "stream", "cut"])}


def store_spec(kind: str, seed: int, request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, Any]:
    if kind == "sqlite":
        return {"kind": "sqlite", "target": str(tmp_path / f"chaos-{seed}.db")}
    if kind == "postgres":
        return {"kind": "postgres", "target": request.getfixturevalue("postgres_dsn"),
                "table": f"agui_chaos_{uuid.uuid4().hex}"}
    return {"kind": "redis", "target": request.getfixturevalue("redis_url"),
            "prefix": f"agui:chaos:{uuid.uuid4().hex}:"}


# --------------------------------------------------------------------------------------------------
# One seed
# --------------------------------------------------------------------------------------------------


@define
class Played:
    """What one seed played: its jobs, the threads, the operator's releases and retirements."""

    jobs: dict[str, Job] = field(factory=dict)
    threads: list[str] = field(factory=list)
    retired: dict[str, str] = field(factory=dict)  # thread -> the run whose dead resume retired it
    released: set[str] = field(factory=set)  # runs whose dead claim the operator let go
    violations: list[str] = field(factory=list)
    kills: Counter[str] = field(factory=Counter)
    compactions: int = 0


def play(kind: str, seed: int, spec: dict[str, Any], tmp_path: Path) -> tuple[Played, list[RunAgentInput]]:
    rng = random.Random(f"chaos {kind} {seed}")
    chaos = ChaosAgent()
    played = Played()
    live = [f"s{seed}-t{i}" for i in range(THREADS)]
    played.threads.extend(live)
    fresh = iter(range(THREADS, 1 << 30))
    ended: Queue[tuple[str, int]] = Queue()
    with serve(chaos.agent) as server:
        spec = {**spec, "url": server.url}
        replicas = [Replica(i, ended, chaos, tmp_path / f"replica-{seed}-{i}.err") for i in range(WORKERS)]
        try:
            for round_ in range(ROUNDS):
                together = rng.random() < 0.5
                shared = rng.choice(live)
                spec["compaction"] = [{"min_bytes": rng.choice([0, 512, 8192]), "ratio": rng.choice([0.0, 0.5, 1.0]),
                                       "max_changes": rng.randint(1, 4)} for _ in replicas]
                for replica in replicas:
                    job = Job(worker=replica.index, run_id=f"s{seed}-r{round_}-w{replica.index}",
                              thread_id=shared if together else rng.choice(live), kill=kill_plan(rng))
                    played.jobs[job.run_id] = job
                    if job.kill is not None and "agent" in job.kill:
                        chaos.kills[job.run_id] = job.kill["agent"]
                    played.kills[next(iter(job.kill)) if job.kill else "none"] += 1
                    replica.start(job, spec)
                running, held = {r.index for r in replicas}, set()
                while running:
                    if held and held == running:
                        # Every other replica has ended its turn: the held ones go on.
                        for index in held:
                            pid = replicas[index].job.pid  # type: ignore[union-attr]
                            assert pid is not None
                            os.kill(pid, signal.SIGUSR2)
                        held.clear()
                    try:
                        what, index = ended.get(timeout=WATCHDOG)
                    except Empty:
                        stuck(replicas, ended, f"{kind} seed {seed}")
                    if what == "held":
                        held.add(index)
                    else:
                        running.discard(index)
                        held.discard(index)
                operate(played, spec, live, fresh, seed)
        finally:
            codes = [replica.close() for replica in replicas]
    assert codes == [0] * WORKERS, codes
    # The server has stopped: every request a killed replica got out has reached the log.
    return played, chaos.agent.requests


def stuck(replicas: list[Replica], ended: Queue[tuple[str, int]], where: str) -> None:
    """Fail with what the replicas that never ended their turn printed, and where their threads stood
    (each is sent SIGABRT, on which it dumps its stacks to its stderr file)."""
    hung = [r for r in replicas if r.job is not None and r.job.code is None and r.job.pid is not None]
    aborted = 0
    for replica in hung:
        assert replica.job is not None and replica.job.pid is not None
        try:
            os.kill(replica.job.pid, signal.SIGABRT)
            aborted += 1
        except ProcessLookupError:
            pass  # (gone, yet its end never reported: the failure below shows what it printed)
    while aborted:
        aborted -= ended.get(timeout=WATCHDOG)[0] == "ended"
    pytest.fail(f"{where}: replicas did not end their turns:\n" + "\n".join(
        f"{r.job.run_id if r.job else None} (replica process: {r.process.poll()}; "
        f"plan {r.job.kill if r.job else None}): {r.job.lines if r.job else None}\n{r.stderr.read_text()[-4000:]}"
        for r in hung))


def operate(played: Played, spec: dict[str, Any], live: list[str], fresh: Iterator[int], seed: int) -> None:
    """Between rounds (every replica idle): let go of each claim a dead replica left, as documented."""
    with chaos_worker.open_store(spec) as store, AgentClient(spec["url"], store=store) as client:
        for thread_id in list(live):
            stored = store.load(thread_id)
            if stored is None or stored.claim is None:
                continue
            owner = next((job for job in played.jobs.values() if stored.claim in job.owners), None)
            # A replica that died holds its claim; so does a live one whose resume failed after its
            # request went out (the agent cut the response): the agent may have acted on the answers.
            if owner is None or not (owner.killed or (owner.cut and owner.kind == "resume")):
                played.violations.append(f"thread {thread_id} is claimed by {stored.claim!r} after the round, not "
                                         f"by a replica that died ({owner.run_id if owner else 'no replica'}: "
                                         f"{owner.lines if owner else ''})")
                continue
            client.thread(thread_id).release_claim(force=True)
            after = store.load(thread_id)
            if after is None or after.claim is not None or after.version != stored.version + 1:
                played.violations.append(f"thread {thread_id}: release_claim(force=True) left {after!r}")
            played.released.add(owner.run_id)
            if owner.kind == "resume" and not owner.unsent:
                # The agent may have acted on its answers: nobody answers those interrupts again.
                live.remove(thread_id)
                played.retired[thread_id] = owner.run_id
                replacement = f"s{seed}-t{next(fresh)}"
                live.append(replacement)
                played.threads.append(replacement)


# --------------------------------------------------------------------------------------------------
# The checks
# --------------------------------------------------------------------------------------------------

Message = tuple[str, str, Any]


def sent_messages(request: RunAgentInput) -> list[Message]:
    return [(m.id, type(m).__name__.removesuffix("Message").lower(), getattr(m, "content", None))
            for m in request.messages]


def check(played: Played, requests: list[RunAgentInput], spec: dict[str, Any]) -> Counter[str]:
    """Every invariant of the module docstring; adds what broke to ``played.violations``."""
    bad = played.violations.append
    counts: Counter[str] = Counter()
    runs = Counter(r.run_id for r in requests)
    bad_runs = sorted(run for run, n in runs.items() if n > 1)
    if bad_runs:
        bad(f"run ids sent more than once: {bad_runs}")
    answered = Counter(entry.interrupt_id for r in requests for entry in r.resume or ())
    if any(n > 1 for n in answered.values()):
        bad(f"interrupts answered more than once: {sorted(i for i, n in answered.items() if n > 1)}")
    by_run = {r.run_id: r for r in requests}

    def after(run_id: str) -> list[Message]:
        return [*sent_messages(by_run[run_id]), (f"{run_id}-reply", "assistant", reply_text(run_id))]

    parent: dict[str, str | None] = {}
    for request in requests:
        run_id, job = request.run_id, played.jobs.get(request.run_id)
        if job is None or job.thread_id != request.thread_id:
            bad(f"the agent received run {run_id} on thread {request.thread_id}, which no replica sent there")
            continue
        messages = sent_messages(request)
        if not request.resume:
            if not messages or messages[-1][1:] != ("user", f"turn {run_id}"):
                bad(f"run {run_id} is a message turn without its message last: {messages[-1:]}")
                continue
            messages = messages[:-1]
        before = messages[-1][0].removesuffix("-reply") if messages else None
        if before is not None and (before not in by_run or messages != after(before)):
            bad(f"run {run_id} sent a history that no run left: it ends with {messages[-1][0]}")
            continue
        parent[run_id] = before
        asked = before is not None and interrupts(before)
        if request.resume:
            entries = [e.interrupt_id for e in request.resume]
            if not asked or entries != [f"{before}-ask"]:
                bad(f"run {run_id} resumed {entries} after run {before}, which asked {asked}")
        elif asked:
            bad(f"run {run_id} sent a message past run {before}'s open interrupt")
    for job in played.jobs.values():
        for words in job.words("failed"):
            if not (job.cut and words[1] in ("StreamEnded:", "TransportError:", "ProtocolError:")):
                bad(f"run {job.run_id} failed: {' '.join(words[1:])}")
        if job.words("refused") and job.run_id in runs:
            bad(f"run {job.run_id} was refused, yet its request reached the agent")
        folds = [w[3] for w in job.words("op") if w[1] == "_compact" and w[2] == "end"]
        counts["compactions"] += folds.count("True")
        counts["compactions-skipped"] += folds.count("False")
        counts["held"] += bool(job.words("held"))
        counts["saved"] += job.saved
        counts["refused"] += bool(job.words("refused"))
        counts["killed"] += job.killed
    with chaos_worker.open_store(spec) as store:
        for thread_id in played.threads:
            stored = store.load(thread_id)  # (every record loads: a damaged one raises StoreError)
            thread_runs = [r.run_id for r in requests if r.thread_id == thread_id]
            if stored is None:
                if any(j.thread_id == thread_id and (j.saved or j.run_id in runs) for j in played.jobs.values()):
                    bad(f"thread {thread_id} is gone, but runs were sent or saved on it")
                continue
            if stored.claim is not None:
                bad(f"thread {thread_id} is still claimed by {stored.claim!r}")
            last = stored.data.get("lastRunId")
            held = [(m["id"], m["role"], m.get("content")) for m in stored.data.get("messages", [])]
            if len({m[0] for m in held}) != len(held):
                bad(f"thread {thread_id} holds a message twice: {[m[0] for m in held]}")
            if last is None:
                chain: set[str] = set()
                if held:
                    bad(f"thread {thread_id} holds messages but no last run")
            elif last not in by_run:
                bad(f"thread {thread_id}'s last run {last} never reached the agent")
                continue
            else:
                if held != after(last):
                    bad(f"thread {thread_id} holds {[m[0] for m in held]}, not what run {last} left "
                        f"{[m[0] for m in after(last)]}")
                open_ids = [i["id"] for i in stored.data.get("openInterrupts", [])]
                if open_ids != ([f"{last}-ask"] if interrupts(last) else []):
                    bad(f"thread {thread_id} has open interrupts {open_ids} after run {last}")
                chain, at = set(), last
                while at is not None and at not in chain:
                    chain.add(at)
                    at = parent.get(at)
            counts["chain"] += len(chain)
            for run_id in thread_runs:
                if run_id in chain:
                    continue
                job = played.jobs[run_id]
                if job.cut and job.kind == "message":
                    pass  # (its replica gave the thread back when the response was cut: an ordinary retry)
                elif run_id not in played.released:
                    bad(f"thread {thread_id}: run {run_id} reached the agent but is not in the thread, and its "
                        f"replica held no claim the operator let go (lines: {job.lines})")
                elif job.kind == "resume" and played.retired.get(thread_id) != run_id:
                    bad(f"thread {thread_id}: resume {run_id} reached the agent, and the thread went on without it")
                counts["lost-unsaved"] += 1
            for job in played.jobs.values():
                if job.thread_id == thread_id and job.saved and job.run_id not in chain:
                    bad(f"thread {thread_id}: run {job.run_id} was saved (its replica saw it) but is not in the "
                        f"thread")
    counts["requests"] += len(requests)
    counts["jobs"] += len(played.jobs)
    counts["released"] += len(played.released)
    counts["retired"] += len(played.retired)
    return counts


# --------------------------------------------------------------------------------------------------
# The test
# --------------------------------------------------------------------------------------------------


@pytest.mark.timeout(0 if LONG else 300)
@pytest.mark.parametrize("kind", ["sqlite", "redis", "postgres"])
def test_replicas_killed_at_random_lose_nothing_and_send_nothing_twice(
        kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    totals: Counter[str] = Counter()
    failures: list[str] = []
    for seed in range(FIRST_SEED, FIRST_SEED + SEEDS):
        spec = store_spec(kind, seed, request, tmp_path)
        played, requests = play(kind, seed, spec, tmp_path)
        totals += check(played, requests, spec)
        totals += played.kills
        failures += [f"{kind} seed {seed}: {v}" for v in played.violations]
    print(f"chaos {kind}: seeds {FIRST_SEED}..{FIRST_SEED + SEEDS - 1}, {dict(sorted(totals.items()))}")
    assert not failures, "\n".join(failures)
    # Not vacuous: turns were saved, refused in races, killed, released, and records compacted.
    assert totals["saved"] and totals["killed"] and totals["released"] and totals["compactions"], totals
