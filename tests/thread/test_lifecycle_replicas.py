"""Replicas of one thread on one durable store, driven at random and checked against the model of the spec.

``test_lifecycle_model.py`` lives one thread through one client object at a time. A web backend runs
several processes, each with its own client object, on one durable store; here two or three *replicas*
(separate ``AgentClient``/``AsyncAgentClient`` objects, with the legacy bridge or without, each with its
own store object on one SQLite file, one redis-server or one PostgreSQL database, or, as client objects
of one process, sharing one ``MemoryStore``) act on the same thread against the same real agent on
127.0.0.1 (the lifecycle model's ``Director``: the machine picks its next response). Each store is a
test of its own; redis-server and PostgreSQL are the suite's session servers
(tests/conftest.py), started only for their store's test.

The replicas' moves: a turn or a resume (valid, or refused by the interrupt rules), each by ``run()``
or ``stream()`` (read to its end or left after the first event), on a copy that may be stale; two
replicas running at the same moment (two OS threads: two resumes of the same interrupts, a resume and
a turn, two tool loops answering the same calls, two first turns of a new thread), and a move that sets
up the rarest of those races, two current tool loops (random moves seldom leave both replicas current
on a thread with calls pending); one replica's run held open after its first event while another acts
(a turn, a resume, a reload: loading the thread while it is claimed leaves that copy stale once the
run ends); a replica that dies (its client object dropped) while its resume's claim is held, or
between any run's claim and its save (the claim is all it leaves), and another that lets go of the
claim (``release_claim()`` is refused as another writer's, ``force=True`` takes it back,
docs/stores.md); a replica that lets go of its own claim; a reload into a new client object of either
shell.

The model is the lifecycle model's (``Model``), once for the store (what the record holds, its
version and whether it is claimed) and once per replica (the copy its object holds and the version it
holds it at). After every step the machine checks:

* of replicas acting on one version, one claims and sends; every other gets ``ConcurrentResume`` with
  nothing sent and its thread unchanged;
* an interrupted run's resume reaches the agent at most once, unless the claim a resume kept was let
  go deliberately (then once more for each release);
* a refused resume is refused before anything is sent, whatever the store holds;
* every replica reports the copy the model says it holds, and the thread loaded from the store
  anywhere is the store's model, at the model's version, claimed exactly when the model says so.

The default run is small, for CI (a few examples per store). The long form, for every store or, with
``-k``, for one (``-s`` prints what the machine did)::

    AGUI_REPLICAS_EXAMPLES=500 AGUI_REPLICAS_STEPS=40 \\
        .venv/bin/python -m pytest tests/thread/test_lifecycle_replicas.py -q -s
    AGUI_REPLICAS_EXAMPLES=200 AGUI_REPLICAS_STEPS=30 \\
        .venv/bin/python -m pytest tests/thread/test_lifecycle_replicas.py -q -s -k postgres
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any

import anyio.from_thread
import anyio.to_thread
import attrs
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import event as hypothesis_event
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)
from test_lifecycle_model import IDS, UTC, Ask, Director, Model, Response, Said, Shell, channel, report, same_ids

import agui_client as ag
from agui_client.stores import Compaction, MemoryStore, PostgresStore, RedisStore, SqliteStore
from agui_client.testing import ScriptedAgent, serve

EXAMPLES = int(os.environ.get("AGUI_REPLICAS_EXAMPLES", "6"))
STEPS = int(os.environ.get("AGUI_REPLICAS_STEPS", "20"))
LONG = "AGUI_REPLICAS_EXAMPLES" in os.environ or "AGUI_REPLICAS_STEPS" in os.environ

#: The durable stores the replicas share, one test each (``-k postgres`` runs one alone).
STORES = ["sqlite", "redis", "memory", "postgres"]

#: The replica whose claim was left by a process that died.
DEAD = -1

#: What the machine did, counted over every example (printed by the long form, with ``-s``).
SEEN: Counter[str] = Counter()


def event(what: str) -> None:
    hypothesis_event(what)
    SEEN[what] += 1

asks = st.lists(st.builds(Ask, id=st.sampled_from(IDS), offset=st.just(None), spelling=st.just("Z"),
                          schema=st.booleans()),
                min_size=1, max_size=3, unique_by=lambda a: a.id).map(tuple)
responses = st.one_of(
    st.sampled_from(["plain", "tool", "error", "rejected", "cancelled", "cut", "delta"]).map(Response),
    st.builds(Response, kind=st.just("interrupt"), asks=asks),
    st.builds(Response, kind=st.just("legacy"), asks=asks),
)
#: A replica's shell, and whether its client reads LangGraph's legacy pauses (``legacy_interrupts``): the
#: replicas of one backend may differ there, and interrupts the bridge read keep their channel anywhere.
SHELLS = st.sampled_from(["sync", "async", "sync+bridge", "async+bridge"])
#: Which replica (modulo their number). Every draw is made before the rule looks at the state, and no rule
#: has a precondition: a race's winner is the scheduler's pick, and a draw or a choice of rules shaped by
#: it would make hypothesis's replay differ.
PICK = st.integers(0, 5)
#: For a run held open after its first event: one whose first event is not its last.
held_responses = responses.filter(lambda r: r.kind != "rejected")


@attrs.define
class Replica:
    """One process's client object, the copy of the thread it holds and the version it holds it at."""

    shell: Shell
    store: Any
    view: Model
    version: int | None


class ReplicaShell(Shell):
    """A shell whose stream can stop after its first event to let something else happen (``between``),
    then read on to the end."""

    def stream_between(self, message: Any, between: Callable[[], None], **arguments: Any
                       ) -> tuple[ag.RunResult, list[Any]]:
        if self.kind == "sync":
            with self.thread.stream(message, **arguments) as stream:
                events = []
                for item in stream:
                    events.append(item)
                    if len(events) == 1:
                        between()
            return stream.result, events

        async def read() -> tuple[ag.RunResult, list[Any]]:
            async with self.thread.stream(message, **arguments) as stream:
                events = []
                async for item in stream:
                    events.append(item)
                    if len(events) == 1:
                        # (off the loop: the other replica may be an async one on this portal)
                        await anyio.to_thread.run_sync(between)
            return stream.result, events
        return self.portal.call(read)


@pytest.fixture(scope="module")
def director_agent() -> Iterator[tuple[str, ScriptedAgent, Director]]:
    """The lifecycle model's agent on 127.0.0.1: the machine picks its next response."""
    director = Director()
    agent = ScriptedAgent([director], cycle=True, stateless=True)
    with serve(agent) as served:
        yield served.url, agent, director


@pytest.fixture
def postgres_table(postgres_dsn: str) -> Iterator[str]:
    """A thread table of the test's own (its replicas' stores create it), dropped with its change table
    at the end (a server named by ``AGUI_TEST_POSTGRES_DSN`` outlives the session)."""
    import psycopg

    table = f"agui_replicas_{uuid.uuid4().hex[:8]}"
    yield table
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute(f"DROP TABLE IF EXISTS {table}, {table}_changes")


class Replicas(RuleBasedStateMachine):
    """Two or three replicas of one thread (see the module docstring)."""

    url: str
    agent: ScriptedAgent
    director: Director
    #: The store every replica's store object opens (one of ``STORES``), and where.
    store: str
    redis_url: str
    postgres_dsn: str
    postgres_table: str

    def __init__(self) -> None:
        super().__init__()
        self.exits = contextlib.ExitStack()
        self.portal = self.exits.enter_context(anyio.from_thread.start_blocking_portal(backend="asyncio"))
        self.thread_id = f"t-{uuid.uuid4().hex[:8]}"
        self.replicas: list[Replica] = []
        self.stored = Model()
        self.head: int | None = None  # (the record's version; None: no record yet)
        self.claim: int | None = None  # (the replica holding the record's claim, DEAD, or None)
        self.runs = 0
        self.sent_before = self.agent.request_count
        self.resumed: Counter[str] = Counter()  # (requests resuming each interrupted run)
        #: Why a resume of that run may go out once more: a claim a resume kept, let go deliberately, or a
        #: resume that failed (a RUN_ERROR leaves the interrupts open, IR-27).
        self.let_go: Counter[str] = Counter()
        self.kept_for: str | None = None  # (the interrupted run whose resume holds the claim)
        self.director.response = None
        self.director.now = datetime(2026, 11, 30, tzinfo=UTC)
        self.picked: list[Any] = []  # (the tool handler's calls, on every replica: an action taken)
        self.handlers: dict[str, Any] = {"pick": lambda q: self.picked.append(q) or {"picked": q}}
        self.new_store: Callable[[], Any] = lambda: None
        self.shared = False  # (one store object for every replica)

    def teardown(self) -> None:
        for replica in self.replicas:
            replica.shell.close()
            self.close_store(replica)
        self.exits.close()

    def close_store(self, replica: Replica) -> None:
        if not self.shared:
            replica.store.close()

    def clock(self) -> datetime:
        return self.director.now

    # -- set-up ------------------------------------------------------------------------------------

    @initialize(shells=st.lists(SHELLS, min_size=2, max_size=3), fold_every=st.sampled_from([0, 1, 3]))
    def open_replicas(self, shells: list[str], fold_every: int) -> None:
        # The stores' own policy folds no change a thread this short appends; folding after every one
        # or every third puts the folds (a load, then a conditional write) among the other replicas' writes.
        policy = Compaction(min_bytes=1 << 40, max_changes=fold_every) if fold_every else None
        if self.store == "sqlite":
            path = os.path.join(self.exits.enter_context(tempfile.TemporaryDirectory()), "threads.db")
            self.new_store = lambda: SqliteStore(path, compaction=policy)
        elif self.store == "memory":
            # (client objects of one process sharing its MemoryStore: a replica that ends leaves it open)
            shared = self.exits.enter_context(MemoryStore(compaction=policy))
            self.new_store = lambda: shared
            self.shared = True
        elif self.store == "postgres":
            # (each replica's store object its own connections to one database, one table)
            self.new_store = lambda: PostgresStore(self.postgres_dsn, table=self.postgres_table, compaction=policy)
        else:
            self.new_store = lambda: RedisStore(self.redis_url, compaction=policy)
        for kind in shells:
            self.replicas.append(self.start(kind))
        event(f"example: {len(shells)} replicas, {f'a fold every {fold_every} changes' if fold_every else 'few folds'}")

    def start(self, kind: str) -> Replica:
        """A new process's client object (its own store object), holding the thread as the store does."""
        store = self.new_store()
        base, _, bridge = kind.partition("+")
        shell = ReplicaShell(base, self.url, store, self.clock, self.portal, self.thread_id, self.handlers,
                             legacy=bool(bridge))
        return Replica(shell, store, self.stored.copy(), self.head)

    # -- helpers -----------------------------------------------------------------------------------

    def next_run(self, response: Response) -> str:
        self.runs += 1
        self.director.response = response
        return f"r{self.runs}"

    def requests(self) -> int:
        return self.agent.request_count - self.sent_before

    def pair(self, pick: int, other: int) -> tuple[int, int]:
        """Two different replicas."""
        a = pick % len(self.replicas)
        return a, (a + 1 + other % (len(self.replicas) - 1)) % len(self.replicas)

    def fresh(self, n: int) -> bool:
        """Whether replica ``n``'s claim would land: it holds the record's version, and nobody claims it."""
        return self.replicas[n].version == self.head and self.claim is None

    def write(self, n: int, op: str) -> None:
        """A write of replica ``n`` landed: the record's version goes on (a claim that creates it: 0)."""
        self.head = 0 if self.head is None else self.head + 1
        self.replicas[n].version = self.head
        self.claim = n if op == "claim" else None

    def plan(self, n: int, how: str) -> tuple[list[tuple[str, str, Any]], type[ag.ResumeRefused] | None, str]:
        """A resume of replica ``n``'s open interrupts: the entries, the refusal the model expects, and
        the id it names."""
        open_ = self.replicas[n].view.open
        plan: list[tuple[str, str, Any]] = [
            (o.id, "cancelled" if how == "abandon" and k == 0 else "resolved", {"answer": f"yes to {o.id}"})
            for k, o in enumerate(open_)]
        if how == "leave-one":
            return plan[1:], ag.UncoveredInterrupts, open_[0].id
        if how == "unknown-id":
            unknown = next(i for i in ("zz", *IDS) if all(o.id != i for o in open_))
            return [*plan, (unknown, "resolved", {"answer": "?"})], ag.UnknownInterrupt, unknown
        return plan, None, ""

    def resume_list(self, n: int, plan: list[tuple[str, str, Any]], form: str) -> Any:
        if form == "entries":
            return [ag.ResumeEntry(interrupt_id=i, status=s, payload=p if s == "resolved" else None)
                    for i, s, p in plan]
        builder = self.replicas[n].shell.thread.resume_builder()
        for i, s, p in plan:
            builder.answer(i, p) if s == "resolved" else builder.abandon(i)
        return builder

    def refused(self, n: int, go: Callable[[], Any], kind: type[ag.AguiError], named: str | list[str] | None
                ) -> None:
        """``go`` (replica ``n``'s move) raises ``kind``, sends nothing and leaves its thread as it was."""
        thread = self.replicas[n].shell.thread
        before, sent, version = report(thread), self.requests(), thread.version
        with pytest.raises(ag.AguiError) as caught:
            go()
        assert isinstance(caught.value, kind), (type(caught.value), kind, caught.value)
        for i in [named] if isinstance(named, str) else named or ():
            assert i in caught.value.ids, (i, caught.value.ids)  # type: ignore[attr-defined]
        if kind is ag.ConcurrentResume:
            assert "Nothing was sent" in str(caught.value), caught.value
        assert self.requests() == sent, f"replica {n}'s refused run reached the agent"
        assert report(thread) == before and thread.version == version
        self.director.response = None

    def stale(self, n: int, go: Callable[[], Any]) -> None:
        """Replica ``n``'s valid run, on a copy the store has moved past (or claimed): refused by its claim."""
        event("stale copy refused")
        self.refused(n, go, ag.ConcurrentResume, None)

    # -- what a sent run does to the model ----------------------------------------------------------

    def sent(self, n: int, rid: str, response: Response, new: list[Said], entries: list[tuple[str, str, Any]] | None,
             streamed: str, outcome: tuple[ag.RunResult | None, list[Any], ag.AguiError | None], sent: int) -> None:
        """Replica ``n``'s run went out (once) and ended: the request, the result and the model."""
        replica = self.replicas[n]
        view = replica.view
        result, events, failure = outcome
        assert self.requests() == sent + 1, "a run that claimed the thread was not sent exactly once"
        request = self.agent.requests[-1]
        assert request.run_id == rid and request.thread_id == self.thread_id
        assert same_ids([m.id for m in request.messages], [m.id for m in view.messages] + [m.id for m in new])
        assert request.state == view.state
        resuming = entries is not None
        if resuming:
            if view.via is not None:
                # (interrupts the legacy bridge read: answered in LangGraph's channel, whatever this client's option)
                assert not request.resume
                assert request.forwarded_props["command"]["resume"] == channel(entries or [])
            else:
                given = sorted((i, s, p if s == "resolved" else None) for i, s, p in entries or ())
                assert sorted((e.interrupt_id, e.status, e.payload) for e in request.resume or ()) == given
            assert view.interrupted_run is not None
            self.resumed[view.interrupted_run] += 1
            assert self.resumed[view.interrupted_run] <= 1 + self.let_go[view.interrupted_run], (
                f"the resume of run {view.interrupted_run} reached the agent twice")
        else:
            assert not request.resume
        resumes = view.interrupted_run
        event(f"sent: {'resume' if resuming else 'turn'} ({streamed}) -> {response.kind}")
        self.write(n, "claim")
        view.messages += new
        if streamed == "leave" and response.kind != "rejected":
            # TR-16: left after RUN_STARTED; not saved. A turn gives the thread back; a resume keeps it
            # claimed (its request reached the agent).
            assert failure is None and result is not None and result.outcome is None
            assert [type(e).__name__ for e in events] == ["RunStartedEvent"]
            if resuming:
                self.kept_for = resumes
            else:
                self.write(n, "release")
            return
        view.played(response, rid, self.director.now, bridged=replica.shell.legacy)
        if response.kind == "cut":
            assert failure is not None and failure.result is not None and failure.result.outcome is None
            assert bool(getattr(failure, "claim_held", False)) == resuming
            if resuming:
                self.kept_for = resumes
            else:
                self.write(n, "release")
            return
        assert failure is None, f"{response.kind}: {failure!r}"
        assert result is not None
        if resuming and response.kind in ("error", "rejected"):
            # IR-27: a RUN_ERROR leaves the interrupts open: the resume may be sent again.
            self.let_go[resumes] += 1
        self.write(n, "save")
        self.stored = view.copy()
        outcome_ = {"plain": "success", "tool": "success", "delta": "success", "error": "error", "rejected": "error",
                    "cancelled": "cancelled", "interrupt": "interrupt",
                    "legacy": "interrupt" if replica.shell.legacy else "success"}[response.kind]
        assert result.outcome == outcome_

    def call(self, n: int, message: Any, streamed: str, **arguments: Any
             ) -> tuple[ag.RunResult | None, list[Any], ag.AguiError | None]:
        shell = self.replicas[n].shell
        try:
            if streamed == "run":
                return shell.run(message, **arguments), [], None
            result, events = shell.stream(message, leave=streamed == "leave", **arguments)
            return result, events, None
        except (ag.ProtocolError, ag.TransportError) as exc:
            return None, [], exc

    # -- moves -------------------------------------------------------------------------------------

    @rule(pick=PICK, response=responses, text=st.booleans(), streamed=st.sampled_from(["run", "stream", "leave"]))
    def turn(self, pick: int, response: Response, text: bool, streamed: str) -> None:
        """A turn on one replica: refused by its own copy while interrupts are open there, by its claim
        when its copy is stale, else sent once."""
        n = pick % len(self.replicas)
        rid = self.next_run(response)
        message = ag.UserMessage(id=f"{rid}-u", content="hello") if text else None
        view = self.replicas[n].view
        go = lambda: self.call(n, message, streamed, run_id=rid)  # noqa: E731
        if view.open:
            self.refused(n, go, ag.AwaitingAnswers, [o.id for o in view.open])
            return
        if not self.fresh(n):
            self.stale(n, go)
            return
        sent = self.requests()
        self.sent(n, rid, response, [Said(message.id, "user")] if message else [], None, streamed, go(), sent)

    @rule(pick=PICK, how=st.sampled_from(["all", "abandon", "leave-one", "unknown-id"]),
          form=st.sampled_from(["builder", "entries"]), response=responses,
          streamed=st.sampled_from(["run", "stream", "leave"]))
    def resume(self, pick: int, how: str, form: str, response: Response, streamed: str) -> None:
        """A resume on one replica (one with open interrupts in its copy): refused before anything is sent
        when the interrupt rules refuse it, by its claim when its copy is stale, else sent once."""
        waiting = [n for n, r in enumerate(self.replicas) if r.view.open]
        if not waiting:
            return
        n = waiting[pick % len(waiting)]
        plan, refusal, named = self.plan(n, how)
        rid = self.next_run(response)
        go = lambda: self.call(n, None, streamed, resume=self.resume_list(n, plan, form), run_id=rid)  # noqa: E731
        event(f"resume {how}")
        if refusal is not None:
            self.refused(n, go, refusal, named)
            return
        if not self.fresh(n):
            self.stale(n, go)
            return
        sent = self.requests()
        self.sent(n, rid, response, [], plan, streamed, go(), sent)

    @rule(pick=PICK, other=PICK, response=responses, loop=st.booleans())
    def race(self, pick: int, other: int, response: Response, loop: bool) -> None:
        """Two replicas run at the same moment (two OS threads), each the move its copy allows: a resume
        answering every open interrupt; else, with ``loop``, the tool loop answering the calls it holds
        (``run_until_done``: the handler runs on the replica that claims, before its run); else a turn
        (the first turn of a new thread, too). Of those whose copy is current, exactly one sends; the
        other gets ``ConcurrentResume`` and sends nothing (and runs no handler)."""
        self.race_of(*self.pair(pick, other), response, loop)

    @rule(pick=PICK, other=PICK, response=responses)
    def loops_race(self, pick: int, other: int, response: Response) -> None:
        """Two current tool loops race on the calls the thread holds. Random moves seldom leave two
        replicas current on a thread with calls pending (a run answered with a call, then the other
        replica's reload, and no write in between), so this move sets it up: when nobody claims the
        thread and no interrupt is open, a turn answered with a call (unless calls are pending already),
        both replicas reloaded, then their loops raced."""
        if self.claim is not None or self.stored.open:
            return
        a, b = self.pair(pick, other)
        if not self.stored.pending:
            self.catch_up(a)
            answer = Response("tool")
            rid = self.next_run(answer)
            message = ag.UserMessage(id=f"{rid}-u", content="use a tool")
            sent = self.requests()
            self.sent(a, rid, answer, [Said(message.id, "user")], None, "run", self.call(a, message, "run", run_id=rid),
                      sent)
        for n in (a, b):
            self.catch_up(n)
        self.race_of(a, b, response, True)

    def race_of(self, a: int, b: int, response: Response, loop: bool) -> None:
        """Replicas ``a`` and ``b`` race (see ``race``)."""
        self.director.response = response
        self.runs += 1
        rids = {a: f"r{self.runs}a", b: f"r{self.runs}b"}
        plans = {n: self.plan(n, "all")[0] if self.replicas[n].view.open else None for n in (a, b)}
        loops = {n: loop and not plans[n] and bool(self.replicas[n].view.pending) for n in (a, b)}
        moves: dict[int, tuple[Any, dict[str, Any]]] = {
            n: (None, {"resume": self.resume_list(n, plans[n] or [], "builder"), "run_id": rids[n]}) if plans[n]
            else (None, {"run_id": rids[n]}) if loops[n]
            else (ag.UserMessage(id=f"{rids[n]}-u", content="at once"), {"run_id": rids[n]}) for n in (a, b)}
        picked = len(self.picked)
        reports = {n: (report(self.replicas[n].shell.thread), self.replicas[n].shell.thread.version) for n in (a, b)}
        fresh = [n for n in (a, b) if self.fresh(n)]
        sent = self.requests()
        barrier = threading.Barrier(2)

        def go(n: int) -> tuple[ag.RunResult | None, list[Any], ag.AguiError | None]:
            barrier.wait()
            try:
                if loops[n]:
                    try:
                        return self.replicas[n].shell.run_until_done(None, **moves[n][1])[0], [], None
                    except (ag.ProtocolError, ag.TransportError) as exc:
                        return None, [], exc
                return self.call(n, moves[n][0], "run", **moves[n][1])
            except ag.ConcurrentResume as exc:
                return None, [], exc

        with ThreadPoolExecutor(2) as pool:
            futures = {n: pool.submit(go, n) for n in (a, b)}
            outcomes = {n: futures[n].result(timeout=60) for n in (a, b)}
        lost = [n for n in (a, b) if isinstance(outcomes[n][2], ag.ConcurrentResume)]
        won = [n for n in (a, b) if n not in lost]
        assert len(won) == min(1, len(fresh)) and set(won) <= set(fresh), (won, fresh, outcomes)
        for n in lost:
            assert "Nothing was sent" in str(outcomes[n][2])
            assert report(self.replicas[n].shell.thread) == reports[n][0]
            assert self.replicas[n].shell.thread.version == reports[n][1]
        kinds = ["resume" if plans[n] else "loop" if loops[n] else "turn" for n in (a, b)]
        event(f"race: {len(fresh)} current, {' and '.join(kinds)}")
        if not won:
            assert self.requests() == sent and len(self.picked) == picked
            self.director.response = None
            return
        (n,) = won
        view = self.replicas[n].view
        held = list(view.pending) if loops[n] else []
        assert len(self.picked) == picked + len(held), "a handler ran on a replica that did not claim the thread"
        for call in held:
            view.answer_call(call, None)  # (the loop's tool message: an id the client makes)
        message = moves[n][0]
        self.sent(n, rids[n], response, [Said(message.id, "user")] if message else [], plans[n], "run",
                  outcomes[n], sent)

    @rule(pick=PICK, other=PICK, response=held_responses, move=st.sampled_from(["turn", "resume", "reload"]),
          shell=SHELLS)
    def meanwhile(self, pick: int, other: int, response: Response, move: str, shell: str) -> None:
        """One replica's run, held open after its first event (the thread claimed) while another replica
        runs a turn or a resume (refused by the claim, nothing sent) or reloads (a copy of the claimed
        record, stale once the run ends)."""
        a, b = self.pair(pick, other)
        first = self.replicas[a]
        if not self.fresh(a):
            return
        rid = self.next_run(response)
        plan = self.plan(a, "all")[0] if first.view.open else None
        arguments: dict[str, Any] = {"run_id": rid}
        if plan is not None:
            arguments["resume"] = self.resume_list(a, plan, "entries")
        message = None if plan is not None else ag.UserMessage(id=f"{rid}-u", content="meanwhile")
        before = (self.stored.copy(), self.head)
        seen: list[str] = []

        def between() -> None:
            # Replica a's run is out: the record is claimed by it at the version after a's.
            assert self.claim is None
            other = self.replicas[b]
            if move == "reload":
                other.shell.close()
                self.close_store(other)
                self.replicas[b] = self.start(shell)
                self.replicas[b].version = before[1] + 1 if before[1] is not None else 0
                self.replicas[b].view = before[0]
                seen.append("reload")
                return
            if move == "resume" and other.view.open:
                entries = self.plan(b, "all")[0]
                go = lambda: self.call(b, None, "run", resume=self.resume_list(b, entries, "builder"),  # noqa: E731
                                       run_id=f"{rid}-x")
            elif move == "turn" and not other.view.open:
                go = lambda: self.call(b, ag.UserMessage(id=f"{rid}-x", content="me too"), "run",  # noqa: E731
                                       run_id=f"{rid}-x")
            else:
                return
            self.refused(b, go, ag.ConcurrentResume, None)
            seen.append(move)

        sent = self.requests()
        shell_ = first.shell
        assert isinstance(shell_, ReplicaShell)
        try:
            result, events = shell_.stream_between(message, between, **arguments)
            outcome: tuple[ag.RunResult | None, list[Any], ag.AguiError | None] = (result, events, None)
        except (ag.ProtocolError, ag.TransportError) as exc:
            outcome = (None, [], exc)
        event(f"meanwhile: {seen[0] if seen else 'nothing'}")
        self.sent(a, rid, response, [Said(message.id, "user")] if message else [], plan, "stream", outcome, sent)

    @rule(pick=PICK, shell=SHELLS)
    def restart(self, pick: int, shell: str) -> None:
        """A replica's process ends (its object dropped, any claim it held left behind: a dead claimer) and a
        new one starts, loading the thread as the store holds it."""
        self.restart_replica(pick % len(self.replicas), shell)

    def restart_replica(self, n: int, shell: str) -> None:
        old = self.replicas[n]
        old.shell.close()
        self.close_store(old)
        if self.claim == n:
            event("a claimer died")
            self.claim = DEAD
        self.replicas[n] = self.start(shell)

    @rule(shell=SHELLS)
    def holder_dies(self, shell: str) -> None:
        """The replica holding the claim a resume kept dies (its process gone, the claim left behind)."""
        if self.claim is not None and self.claim != DEAD:
            self.restart_replica(self.claim, shell)

    @rule(owner=st.sampled_from(["a-dead-process", "dead"]), now=st.integers(0, 3))
    def dies_mid_run(self, owner: str, now: int) -> None:
        """A replica's process is killed between its claim and its run's save (a turn or a resume, its
        request sent or not): the claim is all it leaves, written here as it would have (the store's
        own call, under an owner token nobody alive holds)."""
        if self.claim is not None or now:
            return  # (rarely: a dead claim blocks every replica until someone lets go of it)
        store = self.replicas[0].store
        if self.head is None:
            # (the first run of the thread: its claim created the record, holding the empty thread)
            store.claim(self.thread_id, expected_version=None, owner=owner, data=ag.ThreadState().dump())
        else:
            store.claim(self.thread_id, expected_version=self.head, owner=owner)
        self.head = 0 if self.head is None else self.head + 1
        self.claim = DEAD
        event("a claimer died mid-run")

    @rule(pick=PICK)
    def release(self, pick: int) -> None:
        """The claim a resume kept, let go: by its holder with ``release_claim()``; by another replica only
        once its holder is dead (a plain release is refused as another writer's claim; ``force=True``
        takes it back, docs/stores.md). Letting go allows the resume to be sent once more. With no claim
        held, a release (plain or forced) changes nothing."""
        n = pick % len(self.replicas)
        shell = self.replicas[n].shell
        if self.claim is None:
            thread = shell.thread
            before = (report(thread), thread.version)
            shell.release_claim(force=pick % 2 == 1)
            assert (report(thread), thread.version) == before
            return
        if self.claim != n:
            thread = shell.thread
            before = (report(thread), thread.version)
            with pytest.raises(ag.ConcurrentResume):
                shell.release_claim()
            assert (report(thread), thread.version) == before
            if self.claim != DEAD:
                return  # (its holder is alive: nobody else may take it)
            shell.release_claim(force=True)
            event("a dead claim forced")
        else:
            shell.release_claim()
            event("own claim released")
        replica = self.replicas[n]
        if replica.version is None or self.head not in (replica.version, replica.version + 1):
            # (it did not hold the record it let go of: it took it first, docs/concepts/stores-and-claims.md)
            replica.view = self.stored.copy()
        if self.kept_for is not None:
            self.let_go[self.kept_for] += 1
            self.kept_for = None
        self.write(n, "release")

    @rule(pick=PICK)
    def reload(self, pick: int) -> None:
        """``thread.reload()``: the replica catches up with the store."""
        self.catch_up(pick % len(self.replicas))

    def catch_up(self, n: int) -> None:
        """Replica ``n`` reloads its thread: it holds the store's copy, at the store's version."""
        shell = self.replicas[n].shell
        if shell.kind == "sync":
            shell.thread.reload()
        else:
            self.portal.call(shell.thread.reload)
        self.replicas[n].view = self.stored.copy()
        self.replicas[n].version = self.head

    # -- what the machine checks -------------------------------------------------------------------

    @invariant()
    def every_replica_reports_its_copy(self) -> None:
        for n, replica in enumerate(self.replicas):
            reports(replica.shell.thread.state, replica.view, f"replica {n}")
            assert replica.shell.thread.version == replica.version, (n, replica.shell.thread.version, replica.version)

    @invariant()
    def the_store_holds_the_model(self) -> None:
        if not self.replicas:
            return
        stored = self.replicas[0].store.load(self.thread_id)
        if self.head is None:
            assert stored is None
            return
        assert stored is not None
        assert stored.version == self.head
        assert (stored.claim is not None) == (self.claim is not None)
        reports(ag.ThreadState.load(stored.data), self.stored, "the store")


class PostgresReplicas(Replicas):
    """The replicas on PostgreSQL, whose server may also end every connection their stores keep idle."""

    server_dsn: str  # (for the test's own connections, under no application name)
    postgres_name: str  # (the application name the replicas' stores connect under)

    @rule()
    def server_ends_idle_connections(self) -> None:
        """The server ends every connection the replicas' stores hold between their calls (a restart, a
        failover, an operator's ``pg_terminate_backend``): every store goes on as before, the thread and
        its claims what the model says (a store hands out no dead idle connection; a read or a claim
        whose connection broke under it is tried once more on a fresh one)."""
        import psycopg

        with psycopg.connect(self.server_dsn, autocommit=True) as conn:
            # (with a timeout, the call returns once each backend has exited: its goodbye is then on the
            # idle connection's socket, which the store reads before handing the connection out)
            ended = conn.execute("SELECT pg_terminate_backend(pid, 30000) FROM pg_stat_activity"
                                 " WHERE application_name = %s", (self.postgres_name,)).fetchall()
        assert all(done for (done,) in ended), ended
        if ended:
            event("the server ended the idle connections")


def reports(state: ag.ThreadState, model: Model, who: str) -> None:
    """``state`` is what ``model`` says (messages, interrupts, pending calls, shared state)."""
    assert [type(m).ROLE for m in state.messages] == [m.role for m in model.messages], who
    assert same_ids([m.id for m in state.messages], [m.id for m in model.messages]), who
    assert [i.id for i in state.open_interrupts] == [o.id for o in model.open], who
    assert state.interrupted_run_id == model.interrupted_run, who
    assert list(state.pending_tool_call_ids) == model.pending, who
    assert set(state.incomplete_ids) == model.incomplete, who
    assert state.state == model.state, who
    assert state.open_interrupts_via == model.via, who
    usage = {run: (u,) for run, u in model.usage.items()}
    assert {run: tuple(u) for run, u in state.usage_by_run.items()} == usage, who


@pytest.mark.timeout(0 if LONG else 120)
@pytest.mark.parametrize("store", STORES)
def test_replicas_of_a_thread_send_each_resume_once(
        store: str, director_agent: tuple[str, ScriptedAgent, Director], request: pytest.FixtureRequest) -> None:
    url, agent, director = director_agent
    where: dict[str, Any] = {"url": url, "agent": agent, "director": director, "store": store}
    # (a server is started only for the store that needs it: `-k postgres` starts PostgreSQL alone)
    if store == "redis":
        where["redis_url"] = request.getfixturevalue("redis_url")
    if store == "postgres":
        import psycopg

        where["server_dsn"] = request.getfixturevalue("postgres_dsn")
        where["postgres_name"] = f"agui-replicas-{uuid.uuid4().hex[:8]}"
        where["postgres_dsn"] = psycopg.conninfo.make_conninfo(where["server_dsn"],
                                                               application_name=where["postgres_name"])
        where["postgres_table"] = request.getfixturevalue("postgres_table")
    machine = type(f"Replicas_{store}", (PostgresReplicas if store == "postgres" else Replicas,), where)
    SEEN.clear()
    run_state_machine_as_test(machine, settings=settings(
        max_examples=EXAMPLES, stateful_step_count=STEPS, deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]))
    if LONG:
        print(f"\n{store}:")
        print("\n".join(f"{count:6} {what}" for what, count in sorted(SEEN.items())))
