"""Writers racing to answer the same interrupt: exactly one resume reaches the agent.

DESIGN, "The interrupt life cycle", step 5: two writers that race to resume the same interrupts
cannot both send. Each round here makes a fresh interrupted thread with a real first run against a
served ``ScriptedAgent`` (which counts what it receives), then ``WRITERS`` writers, each with its own
``AgentClient`` and its own store object (one ``SqliteStore`` file, one Redis server, one PostgreSQL
table; the memory store can only be shared, so it is one object), load that thread, build a resume answering its open
interrupts, wait at a barrier that lets them all go at once, and call ``thread.run(resume=...)``.

Whatever the interleaving, the round must end with:

* one writer's run returning a success, and its request the *only* new one the agent saw (each
  writer names its run, so a loser's request would show up under its own run id);
* every other writer raising ``ConcurrentResume`` that names the thread and the version it loaded;
* the store holding the winner's thread: two versions on (its claim, then its save), no claim left,
  no open interrupts.

Without the claim (compare-and-set before any request) every writer would send and all but one
would fail only when saving, after the agent had acted: the request count catches that.

Threads race ``THREAD_ROUNDS`` times per store; separate processes (``multiprocessing`` with
``spawn``, so nothing of this process's threads or sockets is inherited) race ``PROCESS_ROUNDS``
times per durable store, the same worker processes serving every round.

The first turn of a new thread races the same way: every writer loads a thread id the store does not
hold yet and sends a message. Its claim is the record's creation, so exactly one request reaches the
agent there too, and every other writer gets ``ConcurrentResume`` (expected version 0) having sent
nothing; the store holds the winner's thread at version 1 (a store of the earlier protocol, whose
claim cannot create, at version 3: created, claimed, saved).
"""

from __future__ import annotations

import functools
import multiprocessing
import threading
import traceback
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from agui_client import AgentClient, ConcurrentResume
from agui_client.core.fold import ThreadState
from agui_client.stores import MemoryStore, PostgresStore, RedisStore, SqliteStore, ThreadStore
from agui_client.testing import ScriptedAgent, serve

__all__: list[str] = []

WRITERS = 8
# Every round is the same race at a barrier. A claim that does not compare the version fails round 0
# (tried), as would a writer that sends before it claims (every writer sends); the rare interleavings
# inside one store's claim are the contract's racing tests' (tests/stores/test_store_contract.py: 16
# threads, 50 rounds, a thread switch every microsecond). Rounds past a few bought nothing here: a
# MemoryStore claim whose check and write took the lock apart passed 400 rounds of each thread test,
# where the contract's test failed it in round 9. 200 rounds cost 8 times what 25 do.
THREAD_ROUNDS = 25
PROCESS_ROUNDS = 20
#: A watchdog for a barrier whose party died, never a timing: a healthy round passes it at once.
WATCHDOG = 60.0
#: One connection per run. ``serve()`` listens on a socket made with protocol 0, so asyncio does not
#: set TCP_NODELAY on the connections it accepts, and on a reused keep-alive connection every response
#: waits for the client's delayed ACK (~40 ms on Linux) before its first event. A fresh connection
#: starts in quick-ACK mode. Nothing here depends on it but the speed.
FRESH = {"Connection": "close"}


# --------------------------------------------------------------------------------------------------
# Fixtures and helpers
# --------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def served_agent() -> Iterator[tuple[ScriptedAgent, str]]:
    """One agent for every round: each round runs on a fresh thread id, so the rounds never mix."""
    agent = ScriptedAgent.interrupts(2)
    with serve(agent) as server:
        yield agent, server.url


def store_spec(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    """What a writer (or a worker process) needs to open its own store object on the shared store."""
    if kind == "sqlite":
        return {"kind": "sqlite", "target": str(tmp_path / "race.db")}
    if kind == "postgres":
        return {"kind": "postgres", "target": request.getfixturevalue("postgres_dsn"),
                "table": f"agui_race_{uuid.uuid4().hex}"}
    return {"kind": "redis", "target": request.getfixturevalue("redis_url"),
            "prefix": f"agui:race:{uuid.uuid4().hex}:"}


def store_opener(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], ThreadStore]:
    """A function that opens a new store object on the same backing store (the same one, for memory)."""
    if kind == "memory":
        shared = MemoryStore()
        return lambda: shared
    spec = store_spec(kind, request, tmp_path)
    return lambda: open_spec(spec)


def open_spec(spec: dict[str, str]) -> SqliteStore | RedisStore | PostgresStore:
    if spec["kind"] == "sqlite":
        return SqliteStore(spec["target"])
    if spec["kind"] == "postgres":
        return PostgresStore(spec["target"], table=spec["table"])
    return RedisStore(spec["target"], prefix=spec["prefix"])


def interrupted_thread(client: AgentClient, thread_id: str) -> int:
    """Run a thread to its interrupts (a real first run); returns the version the store holds."""
    first = client.thread(thread_id).run("Ask me two things")
    assert first.outcome == "interrupt"
    assert [i.id for i in first.interrupts] == ["interrupt-1", "interrupt-2"]
    stored = client.store.load(thread_id)
    assert stored is not None and stored.claim is None
    return stored.version


class Report(NamedTuple):
    """How one writer's attempt ended, in a form a worker process can send back.

    ``won``: its run returned (``outcome`` and ``result`` are the run's); otherwise it raised
    ``ConcurrentResume`` naming ``thread_id`` and the ``expected``/``actual`` versions.
    """

    won: bool
    outcome: str | None = None
    result: Any = None
    thread_id: str | None = None
    expected: int | None = None
    actual: int | None = None


def attempt(client: AgentClient, thread_id: str, run_id: str, ready: Callable[[], object]) -> Report:
    """Load the thread, answer every open interrupt, wait for the others (``ready``), then resume."""
    thread = client.thread(thread_id)
    resume = thread.resume_builder()
    for interrupt in thread.open_interrupts:
        resume.answer(interrupt.id, {"answer": f"{run_id} says yes"})
    ready()
    try:
        result = thread.run(resume=resume, run_id=run_id)
    except ConcurrentResume as exc:
        return Report(won=False, thread_id=exc.thread_id, expected=exc.expected_version, actual=exc.actual_version)
    return Report(won=True, outcome=result.outcome, result=result.result)


def first_turn(client: AgentClient, thread_id: str, run_id: str, ready: Callable[[], object]) -> Report:
    """Load a thread id nobody holds yet, wait for the others (``ready``), then send its first turn."""
    thread = client.thread(thread_id)
    assert thread.version is None
    ready()
    try:
        result = thread.run(f"{run_id} says hello", run_id=run_id)
    except ConcurrentResume as exc:
        return Report(won=False, thread_id=exc.thread_id, expected=exc.expected_version, actual=exc.actual_version)
    return Report(won=True, outcome=result.outcome, result=[i.id for i in result.interrupts])


def check_first_round(agent: ScriptedAgent, store: ThreadStore, *, thread_id: str, before: int,
                      reports: dict[str, Report], saved_at: int = 1) -> None:
    """Exactly one writer sent the new thread's first turn; every other one lost before sending."""
    winners = [run_id for run_id, report in reports.items() if report.won]
    assert len(winners) == 1, f"{len(winners)} writers sent the first turn of thread {thread_id!r}: {winners}"
    (winner,) = winners
    assert (reports[winner].outcome, reports[winner].result) == ("interrupt", ["interrupt-1", "interrupt-2"])

    sent = agent.requests[before:]
    assert [r.run_id for r in sent] == [winner], "a losing writer's first turn reached the agent"
    assert [getattr(m, "content", None) for m in sent[0].messages] == [f"{winner} says hello"]

    for run_id, report in reports.items():
        if run_id != winner:
            assert (report.thread_id, report.expected) == (thread_id, 0)
            assert report.actual is not None

    stored = store.load(thread_id)
    assert stored is not None
    assert (stored.version, stored.claim) == (saved_at, None)
    assert [i.id for i in ThreadState.load(stored.data).open_interrupts] == ["interrupt-1", "interrupt-2"]
    assert stored.data["lastRunId"] == winner


def check_round(agent: ScriptedAgent, store: ThreadStore, *, thread_id: str, version: int, before: int,
                reports: dict[str, Report]) -> None:
    """Exactly one writer sent (and won); every other one lost before sending; the store holds the winner's thread."""
    winners = [run_id for run_id, report in reports.items() if report.won]
    assert len(winners) == 1, f"{len(winners)} writers resumed thread {thread_id!r}: {winners}"
    (winner,) = winners
    assert (reports[winner].outcome, reports[winner].result) == ("success", {
        "answers": {"interrupt-1": {"answer": f"{winner} says yes"}, "interrupt-2": {"answer": f"{winner} says yes"}},
        "abandoned": []})

    sent = agent.requests[before:]
    assert [r.run_id for r in sent] == [winner], "a losing writer's request reached the agent"
    assert agent.request_count - before == 1
    assert [(e.interrupt_id, e.status) for e in sent[0].resume or ()] == [
        ("interrupt-1", "resolved"), ("interrupt-2", "resolved")]

    for run_id, report in reports.items():
        if run_id != winner:
            assert (report.thread_id, report.expected) == (thread_id, version)
            assert report.actual is not None and report.actual > version

    stored = store.load(thread_id)
    assert stored is not None
    assert (stored.version, stored.claim) == (version + 2, None)
    assert ThreadState.load(stored.data).open_interrupts == ()
    assert stored.data["lastRunId"] == winner


# --------------------------------------------------------------------------------------------------
# Threads
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["memory", "sqlite", "redis", "postgres"])
def test_racing_threads_send_exactly_one_resume(kind: str, served_agent: tuple[ScriptedAgent, str],
                                                request: pytest.FixtureRequest, tmp_path: Path) -> None:
    agent, url = served_agent
    open_store = store_opener(kind, request, tmp_path)
    setup = open_store()
    stores = [open_store() for _ in range(WRITERS)]
    clients = [AgentClient(url, store=store, headers=FRESH) for store in stores]
    setup_client = AgentClient(url, store=setup, headers=FRESH)
    try:
        with ThreadPoolExecutor(max_workers=WRITERS) as pool:
            for round_ in range(THREAD_ROUNDS):
                thread_id = f"race-{kind}-{round_}-{uuid.uuid4().hex}"
                version = interrupted_thread(setup_client, thread_id)
                before = agent.request_count
                barrier = threading.Barrier(WRITERS)
                release = functools.partial(barrier.wait, WATCHDOG)
                futures = {run_id: pool.submit(attempt, clients[i], thread_id, run_id, release)
                           for i, run_id in enumerate(f"{thread_id}-writer-{i}" for i in range(WRITERS))}
                reports = {run_id: future.result() for run_id, future in futures.items()}
                check_round(agent, setup, thread_id=thread_id, version=version, before=before, reports=reports)
    finally:
        for client in [setup_client, *clients]:
            client.close()
        for store in {id(s): s for s in [setup, *stores]}.values():
            store.close()


class EarlierProtocolStore:
    """A third-party store written for the protocol before creating claims: ``claim`` takes no ``data``."""

    def __init__(self) -> None:
        self._inner = MemoryStore()

    def load(self, thread_id: str) -> Any:
        return self._inner.load(thread_id)

    def save(self, thread_id: str, data: Any, *, expected_version: int | None) -> int:
        return self._inner.save(thread_id, data, expected_version=expected_version)

    def claim(self, thread_id: str, *, expected_version: int, owner: str) -> int:
        return self._inner.claim(thread_id, expected_version=expected_version, owner=owner)

    def release(self, thread_id: str, *, claimed_version: int, owner: str) -> int:
        return self._inner.release(thread_id, claimed_version=claimed_version, owner=owner)

    def delete(self, thread_id: str) -> None:
        self._inner.delete(thread_id)

    def close(self) -> None:
        self._inner.close()


@pytest.mark.parametrize("kind", ["memory", "earlier-protocol"])
def test_racing_threads_send_exactly_one_first_turn(kind: str, served_agent: tuple[ScriptedAgent, str]) -> None:
    agent, url = served_agent
    store: Any = MemoryStore() if kind == "memory" else EarlierProtocolStore()
    clients = [AgentClient(url, store=store, headers=FRESH) for _ in range(WRITERS)]
    try:
        with ThreadPoolExecutor(max_workers=WRITERS) as pool:
            for round_ in range(THREAD_ROUNDS):
                thread_id = f"first-{kind}-{round_}-{uuid.uuid4().hex}"
                before = agent.request_count
                barrier = threading.Barrier(WRITERS)
                release = functools.partial(barrier.wait, WATCHDOG)
                futures = {run_id: pool.submit(first_turn, clients[i], thread_id, run_id, release)
                           for i, run_id in enumerate(f"{thread_id}-writer-{i}" for i in range(WRITERS))}
                reports = {run_id: future.result() for run_id, future in futures.items()}
                check_first_round(agent, store, thread_id=thread_id, before=before, reports=reports,
                                  saved_at=1 if kind == "memory" else 3)
    finally:
        for client in clients:
            client.close()
        store.close()


# --------------------------------------------------------------------------------------------------
# Processes
# --------------------------------------------------------------------------------------------------


def race_worker(url: str, index: int, barrier: Any, conn: Connection) -> None:
    """One racing process: for each ``(store spec, thread id, what)`` received, race the others to
    answer the thread's interrupts (``what == "resume"``) or to send a new thread's first turn (``"first"``).

    Sends back a :class:`Report` (or the traceback text of anything unexpected); ``None`` ends it.
    Spawned, so it imports this module afresh and inherits none of the test process's threads. It
    keeps one store object and one client per store spec for all the rounds it plays.
    """
    clients: dict[str, AgentClient] = {}
    try:
        while (job := conn.recv()) is not None:
            spec, thread_id, what = job
            key = repr(sorted(spec.items()))
            if key not in clients:
                clients[key] = AgentClient(url, store=open_spec(spec), headers=FRESH)
            play = first_turn if what == "first" else attempt
            try:
                report: Report | str = play(clients[key], thread_id, f"{thread_id}-process-{index}",
                                            functools.partial(barrier.wait, WATCHDOG))
            except BaseException:  # noqa: BLE001 - handed to the test, which fails with it
                report = traceback.format_exc()
            conn.send(report)
    finally:
        for client in clients.values():
            client.close()
            client.store.close()
        conn.close()


@pytest.fixture(scope="module")
def race_processes(served_agent: tuple[ScriptedAgent, str]) -> Iterator[list[Connection]]:
    """``WRITERS`` spawned worker processes sharing one barrier; yields a pipe to each."""
    _, url = served_agent
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(WRITERS)
    pipes = [ctx.Pipe() for _ in range(WRITERS)]
    workers = [ctx.Process(target=race_worker, args=(url, i, barrier, child), daemon=True)
               for i, (_, child) in enumerate(pipes)]
    for worker in workers:
        worker.start()
    for _, child in pipes:
        child.close()
    try:
        yield [parent for parent, _ in pipes]
    finally:
        for parent, _ in pipes:
            try:
                parent.send(None)
            except OSError:
                pass  # that worker is gone already; its exit code below says so
            parent.close()
        for worker in workers:
            worker.join(WATCHDOG)
            if worker.is_alive():
                worker.kill()
                worker.join()
    assert [w.exitcode for w in workers] == [0] * WRITERS


@pytest.mark.parametrize("kind", ["sqlite", "redis", "postgres"])
def test_racing_processes_send_exactly_one_resume(kind: str, served_agent: tuple[ScriptedAgent, str],
                                                  race_processes: list[Connection], request: pytest.FixtureRequest,
                                                  tmp_path: Path) -> None:
    agent, url = served_agent
    spec = store_spec(kind, request, tmp_path)
    with open_spec(spec) as setup, AgentClient(url, store=setup, headers=FRESH) as setup_client:
        for round_ in range(PROCESS_ROUNDS):
            thread_id = f"race-{kind}-processes-{round_}-{uuid.uuid4().hex}"
            version = interrupted_thread(setup_client, thread_id)
            before = agent.request_count
            reports = race(race_processes, spec, thread_id, "resume")
            check_round(agent, setup, thread_id=thread_id, version=version, before=before, reports=reports)


def race(race_processes: list[Connection], spec: dict[str, str], thread_id: str, what: str) -> dict[str, Report]:
    """Have every worker process race on ``thread_id``; returns each one's report by its run id."""
    for pipe in race_processes:
        pipe.send((spec, thread_id, what))
    replies = [pipe.recv() for pipe in race_processes]
    errors = [reply for reply in replies if isinstance(reply, str)]
    assert not errors, "\n".join(errors)
    return {f"{thread_id}-process-{i}": reply for i, reply in enumerate(replies)}


@pytest.mark.parametrize("kind", ["sqlite", "redis", "postgres"])
def test_racing_processes_send_exactly_one_first_turn(kind: str, served_agent: tuple[ScriptedAgent, str],
                                                      race_processes: list[Connection],
                                                      request: pytest.FixtureRequest, tmp_path: Path) -> None:
    agent, _ = served_agent
    spec = store_spec(kind, request, tmp_path)
    with open_spec(spec) as setup:
        for round_ in range(PROCESS_ROUNDS):
            thread_id = f"first-{kind}-processes-{round_}-{uuid.uuid4().hex}"
            assert setup.load(thread_id) is None
            before = agent.request_count
            reports = race(race_processes, spec, thread_id, "first")
            check_first_round(agent, setup, thread_id=thread_id, before=before, reports=reports)


def test_an_operator_can_release_the_claim_of_a_writer_that_died(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A claim left by a dead writer blocks every resume until someone decides: release_claim(force=True)."""
    from agui_client import AgentClient, ConcurrentResume
    from agui_client.stores import SqliteStore
    from agui_client.testing import ScriptedAgent, serve

    agent = ScriptedAgent.interrupts(n=1)
    db = tmp_path / "threads.db"
    with serve(agent) as server:
        with AgentClient(server.url, store=SqliteStore(db)) as client:
            client.thread("t").run("go")
        store = SqliteStore(db)
        stored = store.load("t")
        assert stored is not None
        store.claim("t", expected_version=stored.version, owner="a-writer-that-died")
        store.close()
        with AgentClient(server.url, store=SqliteStore(db)) as client:
            thread = client.thread("t")
            resume = thread.resume_builder().answer("interrupt-1", {"answer": "yes"})
            with pytest.raises(ConcurrentResume):
                thread.run(resume=resume)
            with pytest.raises(ConcurrentResume) as refused:
                thread.release_claim()        # not ours: refused, and the claim stands
            assert refused.value.thread_id == "t" and "a-writer-that-died" in str(refused.value)
            with pytest.raises(ConcurrentResume):
                thread.run(resume=resume)
            thread.release_claim(force=True)
            assert thread.run(resume=resume).outcome == "success"
    assert agent.request_count == 2
