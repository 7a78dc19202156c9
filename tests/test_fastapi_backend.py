"""The FastAPI backend example (``examples/fastapi_backend.py``), run for real.

Two replicas of the example run as separate single-worker uvicorn processes on two ports, sharing
one real redis-server (and, a second time, one table of a real PostgreSQL server), against a
``ScriptedAgent`` served by this test (which counts what it receives). A thread started on one
replica is answered on the other, so "the answer arrives on another replica" is shown
deterministically rather than left to a load balancer. Answers that are
incomplete, schema-invalid, unknown, expired or already given are refused with a 422 naming the
ids, and the agent receives nothing; an answer racing one in flight gets a 409. The documented
``uvicorn examples.fastapi_backend:app --workers 2`` command is run once as well.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import httpx
import pytest
from serverkit import SURROGATE_HALVES, free_port

from agui_client.testing import ANSWER_SCHEMA, Gate, Item, ScriptedAgent, Wait, last_user_text, serve
from agui_client.testing.scenarios import interrupts_step
from agui_client.types import RunAgentInput

__all__: list[str] = []

ROOT = Path(__file__).resolve().parent.parent
#: A watchdog for a process or a response that never comes, never a timing.
WATCHDOG = 60.0
STALE = "2001-01-01T00:00:00Z"


# --------------------------------------------------------------------------------------------------
# The agent and the replicas
# --------------------------------------------------------------------------------------------------


class BackendAgent:
    """Two interrupts per new message (one long expired when the message says "stale"); the resume
    honours the answers. A resume of a thread with a gate waits at it right after ``RUN_STARTED``."""

    def __init__(self) -> None:
        self.gates: dict[str, Gate] = {}
        self.agent = ScriptedAgent([self.step], cycle=True)
        self._fresh = interrupts_step(self.agent.open_interrupts, n=2, reason="input", expires_at=None,
                                      response_schema=ANSWER_SCHEMA)
        self._stale = interrupts_step(self.agent.open_interrupts, n=1, reason="input", expires_at=STALE,
                                      response_schema=ANSWER_SCHEMA)

    def step(self, run_input: RunAgentInput) -> list[Item]:
        play = self._stale if "stale" in (last_user_text(run_input) or "") else self._fresh
        items: list[Item] = list(play(run_input))
        gate = self.gates.get(run_input.thread_id)
        if run_input.resume and gate is not None:
            items.insert(1, Wait(gate, timeout=WATCHDOG))
        return items


@pytest.fixture(scope="module")
def backend_agent() -> Iterator[tuple[BackendAgent, str]]:
    backend = BackendAgent()
    with serve(backend.agent) as server:
        yield backend, server.url


class Replica:
    """The example under uvicorn in a process of its own, reachable at ``url``; its log read as it comes."""

    def __init__(self, env: dict[str, str], *, workers: int = 1) -> None:
        log: list[str] = []
        for _attempt in range(5):
            port = free_port()
            self.process = subprocess.Popen(
                [sys.executable, "-m", "uvicorn", "examples.fastapi_backend:app", "--host", "127.0.0.1",
                 "--port", str(port), "--workers", str(workers)],
                cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                text=True)
            assert self.process.stderr is not None
            log = []
            ready = 0
            # uvicorn says when each worker is ready; waiting on its log needs no polling or sleeps.
            for line in self.process.stderr:
                log.append(line)
                ready += "Application startup complete" in line
                if ready == workers:
                    self.url = f"http://127.0.0.1:{port}"
                    self.log: list[str] = []
                    self._logged = threading.Condition()
                    self._drain = threading.Thread(target=self._read_log, args=(self.process.stderr,), daemon=True)
                    self._drain.start()
                    return
            self.process.wait()
            self.process.stderr.close()
        pytest.fail("the example did not start:\n" + "".join(log[-30:]), pytrace=False)

    def _read_log(self, stream: IO[str]) -> None:
        # Read to the end, so that the child never blocks on a full pipe; each line kept for wait_logged.
        for line in stream:
            with self._logged:
                self.log.append(line)
                self._logged.notify_all()

    def wait_logged(self, text: str) -> bool:
        """Whether a line holding ``text`` reaches the replica's log (waits for it, up to the watchdog)."""
        with self._logged:
            return self._logged.wait_for(lambda: any(text in line for line in self.log), WATCHDOG)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(WATCHDOG)
        self._drain.join(WATCHDOG)
        assert self.process.stderr is not None
        self.process.stderr.close()


def replica_env(agent_url: str, redis: str) -> dict[str, str]:
    prefix = f"agui:example:{uuid.uuid4().hex}:"
    return {**os.environ, "AGENT_URL": agent_url, "REDIS_URL": redis, "REDIS_PREFIX": prefix}


def postgres_replica_env(agent_url: str, dsn: str) -> dict[str, str]:
    env = {**os.environ, "AGENT_URL": agent_url, "DATABASE_URL": dsn,
           "THREADS_TABLE": f"agui_example_{uuid.uuid4().hex}"}
    env.pop("REDIS_URL", None)
    return env


@pytest.fixture(scope="module", params=["redis", "postgres"])
def replicas(backend_agent: tuple[BackendAgent, str],
             request: pytest.FixtureRequest) -> Iterator[tuple[Replica, Replica]]:
    """Two single-worker replicas of the example sharing one Redis store, or one PostgreSQL table."""
    if request.param == "redis":
        env = replica_env(backend_agent[1], request.getfixturevalue("redis_url"))
    else:
        env = postgres_replica_env(backend_agent[1], request.getfixturevalue("postgres_dsn"))
    started: list[Replica] = []
    try:
        started.append(Replica(env))
        started.append(Replica(env))
        yield started[0], started[1]
    finally:
        for replica in started:
            replica.stop()


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=WATCHDOG) as client:
        yield client


def frames(response: httpx.Response) -> list[dict[str, Any]]:
    """The JSON of every ``data:`` frame of an SSE response."""
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    return [json.loads(block[len("data: "):]) for block in response.text.split("\n\n") if block.startswith("data: ")]


def chat(http: httpx.Client, url: str, message: str) -> dict[str, Any]:
    """Send a message on a new thread; returns the final frame (the thread's id and open interrupts)."""
    events = frames(http.post(f"{url}/chat", json={"message": message}))
    assert [e["type"] for e in events[-2:]] == ["RUN_FINISHED", "agui_client.thread"]
    assert events[0]["type"] == "RUN_STARTED"
    final = events[-1]
    assert final["outcome"] == "interrupt"
    return final


def answer(http: httpx.Client, url: str, thread_id: str, answers: dict[str, Any],
           abandon: tuple[str, ...] = ()) -> httpx.Response:
    return http.post(f"{url}/threads/{thread_id}/answers", json={"answers": answers, "abandon": list(abandon)})


def example_module() -> Any:
    """The example's module, imported here from its file (it is not a package)."""
    spec = importlib.util.spec_from_file_location("fastapi_backend_example", ROOT / "examples" / "fastapi_backend.py")
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    return example


BOTH = {"interrupt-1": {"answer": "yes"}, "interrupt-2": {"answer": "no"}}


# --------------------------------------------------------------------------------------------------
# Tests
# --------------------------------------------------------------------------------------------------


def test_an_interrupt_raised_on_one_replica_is_answered_on_the_other(
        replicas: tuple[Replica, Replica], backend_agent: tuple[BackendAgent, str], http: httpx.Client) -> None:
    a, b = (replica.url for replica in replicas)
    agent = backend_agent[0].agent
    first = chat(http, a, "Ask me two things")
    assert [i["id"] for i in first["openInterrupts"]] == ["interrupt-1", "interrupt-2"]
    thread_id = first["threadId"]
    before = agent.request_count

    events = frames(answer(http, b, thread_id, BOTH))

    final = events[-1]
    assert (final["type"], final["threadId"], final["outcome"], final["openInterrupts"]) == (
        "agui_client.thread", thread_id, "success", [])
    assert final["result"] == {"answers": BOTH, "abandoned": []}
    assert final["version"] == first["version"] + 2  # claimed, then saved
    assert agent.request_count == before + 1
    sent = agent.requests[-1]
    assert sent.thread_id == thread_id
    assert [(e.interrupt_id, e.status, e.payload) for e in sent.resume or ()] == [
        ("interrupt-1", "resolved", {"answer": "yes"}), ("interrupt-2", "resolved", {"answer": "no"})]
    # Replica b continued the thread replica a saved: the first turn's message went with the resume.
    assert [last_user_text(r) for r in agent.requests[before - 1:]] == ["Ask me two things"] * 2

    stored_a = http.get(f"{a}/threads/{thread_id}").json()
    assert stored_a == http.get(f"{b}/threads/{thread_id}").json()
    assert (stored_a["version"], stored_a["openInterrupts"], stored_a["claimed"]) == (final["version"], [], False)


def test_incomplete_invalid_unknown_and_repeated_answers_are_refused_before_sending(
        replicas: tuple[Replica, Replica], backend_agent: tuple[BackendAgent, str], http: httpx.Client) -> None:
    a, b = (replica.url for replica in replicas)
    agent = backend_agent[0].agent
    thread_id = chat(http, a, "Ask me two things")["threadId"]
    before = agent.request_count

    incomplete = answer(http, b, thread_id, {"interrupt-1": {"answer": "yes"}})
    mixed = answer(http, b, thread_id, {"interrupt-1": {"answer": 42}, "interrupt-2": {"answer": "no"}, "bogus": {}})
    both_ways = answer(http, a, thread_id, {"interrupt-1": {"answer": "yes"}}, abandon=("interrupt-1", "interrupt-2"))

    assert agent.request_count == before
    assert incomplete.status_code == 422
    body = incomplete.json()
    assert (body["error"], body["ids"], body["problems"]) == (
        "uncovered", ["interrupt-2"], {"uncovered": ["interrupt-2"]})
    assert mixed.status_code == 422
    body = mixed.json()
    assert (body["error"], body["ids"], body["problems"]) == (
        "unknown", ["interrupt-1", "bogus"], {"unknown": ["bogus"], "invalid": ["interrupt-1"]})
    assert list(body["errors"]) == ["interrupt-1"]
    assert both_ways.status_code == 422
    body = both_ways.json()
    assert (body["error"], body["ids"], body["problems"]) == (
        "duplicate", ["interrupt-1"], {"duplicate": ["interrupt-1"]})

    # Answered on one replica, the same answers are stale on the other: nothing is sent twice.
    assert frames(answer(http, a, thread_id, BOTH))[-1]["outcome"] == "success"
    again = answer(http, b, thread_id, BOTH)
    assert again.status_code == 422
    body = again.json()
    assert (body["error"], body["ids"]) == ("nothing", ["interrupt-1", "interrupt-2"])
    assert agent.request_count == before + 1


def test_an_expired_interrupt_cannot_be_answered_only_abandoned(
        replicas: tuple[Replica, Replica], backend_agent: tuple[BackendAgent, str], http: httpx.Client) -> None:
    a, b = (replica.url for replica in replicas)
    agent = backend_agent[0].agent
    first = chat(http, a, "A stale question")
    assert [(i["id"], i["expiresAt"]) for i in first["openInterrupts"]] == [("interrupt-1", STALE)]
    thread_id = first["threadId"]
    before = agent.request_count

    late = answer(http, b, thread_id, {"interrupt-1": {"answer": "too late"}})

    assert late.status_code == 422
    body = late.json()
    assert (body["error"], body["ids"], body["problems"]) == ("expired", ["interrupt-1"], {"expired": ["interrupt-1"]})
    assert agent.request_count == before

    final = frames(answer(http, b, thread_id, {}, abandon=("interrupt-1",)))[-1]
    assert (final["outcome"], final["result"], final["openInterrupts"]) == (
        "success", {"answers": {}, "abandoned": ["interrupt-1"]}, [])
    assert agent.request_count == before + 1
    assert [(e.interrupt_id, e.status) for e in agent.requests[-1].resume or ()] == [("interrupt-1", "cancelled")]


def test_an_answer_racing_one_in_flight_on_another_replica_gets_409(
        replicas: tuple[Replica, Replica], backend_agent: tuple[BackendAgent, str], http: httpx.Client) -> None:
    a, b = (replica.url for replica in replicas)
    backend = backend_agent[0]
    thread_id = chat(http, a, "Ask me two things")["threadId"]
    gate = backend.gates[thread_id] = Gate()

    with http.stream("POST", f"{a}/threads/{thread_id}/answers", json={"answers": BOTH}) as held:
        # Replica a answered with headers only once the agent accepted its resume: the thread is claimed.
        assert held.status_code == 200
        assert gate.wait_reached(WATCHDOG)
        sent = backend.agent.request_count
        racing = answer(http, b, thread_id, BOTH)
        gate.open()
        held.read()

    assert racing.status_code == 409
    assert (racing.json()["error"], racing.json()["threadId"]) == ("concurrent", thread_id)
    # The browser's user reads words meant for them; the Python advice goes to the developer's log.
    assert racing.json()["message"] == example_module().ANSWERED_ELSEWHERE
    assert replicas[1].wait_logged(f"thread {thread_id}: ")
    assert "thread.reload()" in next(line for line in replicas[1].log if f"thread {thread_id}: " in line)
    assert backend.agent.request_count == sent
    assert frames(held)[-1]["outcome"] == "success"


def _relayed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, agent_url: str,
             requests: list[tuple[str, dict[str, Any]]], example: Any = None) -> list[httpx.Response]:
    """What the example answers to ``requests`` (path, JSON body), run in this process against ``agent_url``
    (``example``: the example's module with settings a test changed; a fresh import by default)."""
    import asyncio

    example = example if example is not None else example_module()
    monkeypatch.setenv("THREADS_DB", str(tmp_path / "threads.db"))
    monkeypatch.setenv("AGENT_URL", agent_url)
    monkeypatch.delenv("REDIS_URL", raising=False)
    monkeypatch.delenv("DATABASE_URL", raising=False)

    async def main() -> list[httpx.Response]:
        async with example.lifespan(example.app), httpx.AsyncClient(
                transport=httpx.ASGITransport(app=example.app), base_url="http://backend.test") as browser:
            return [await browser.post(path, json=body) for path, body in requests]

    return asyncio.run(main())


def test_half_a_character_from_the_agent_reaches_the_browser_as_its_escape(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    # An agent slicing text by UTF-16 code unit sends a lone surrogate as its JSON escape, which the
    # client keeps as sent (UTF16-SURROGATE). The example's frame() wrote it as UTF-8 and raised inside
    # the run's task: the browser's stream stopped after TEXT_MESSAGE_START, with no final frame and
    # no error frame, and the task's exception was never retrieved.
    from agui_client.testing import Finish, Start

    with serve(ScriptedAgent([[Start(), SURROGATE_HALVES, Finish()]])) as server:
        response = _relayed(tmp_path, monkeypatch, server.url, [("/chat", {"message": "hi"})])[0]

    events = frames(response)
    assert [e["type"] for e in events] == ["RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT",
                                           "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED",
                                           "agui_client.thread"]
    assert [e["delta"] for e in events[2:4]] == ["café \ud83d", "\ude00!"]  # (as the agent sent them)
    assert events[-1]["outcome"] == "success"


def test_a_run_whose_agent_never_ends_is_ended_by_the_examples_deadline(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # The run outlives the browser by design, so nothing bounded it: an agent keeping its stream alive
    # with comments held the run's task until the worker stopped.
    from agui_client.testing import KeepAlive, Pause, Start

    example = example_module()
    monkeypatch.setattr(example, "RUN_TIMEOUT", 1.0)
    drip: list[Item] = [Start()]
    for _ in range(int(WATCHDOG / 0.05)):  # (the agent's own pace: a comment every 50 ms, for a minute)
        drip += [KeepAlive(), Pause(0.05)]

    with serve(ScriptedAgent([drip])) as server:
        response = _relayed(tmp_path, monkeypatch, server.url, [("/chat", {"message": "hi"})], example)[0]

    events = frames(response)
    assert [e["type"] for e in events] == ["RUN_STARTED", "agui_client.error"]
    assert events[-1]["error"] == "RunTimeout"


def test_the_documented_two_worker_command_serves_a_whole_approval(
        backend_agent: tuple[BackendAgent, str], redis_url: str, http: httpx.Client) -> None:
    agent = backend_agent[0].agent
    server = Replica(replica_env(backend_agent[1], redis_url), workers=2)
    try:
        before = agent.request_count
        first = chat(http, server.url, "Ask me two things")
        # A fresh connection each time: either worker may take it, and both share the Redis store.
        with httpx.Client(timeout=WATCHDOG) as fresh:
            final = frames(answer(fresh, server.url, first["threadId"], BOTH))[-1]
    finally:
        server.stop()
    assert (final["outcome"], final["openInterrupts"]) == ("success", [])
    assert agent.request_count == before + 2


def test_the_example_cancels_runs_still_in_flight_at_shutdown_so_their_claims_go(tmp_path: Path,
                                                                                   monkeypatch: pytest.MonkeyPatch
                                                                                   ) -> None:
    # Past the grace, a run still going is cancelled, not cut off by closing the client and store
    # under it: a cancelled turn gives its claim back, so the thread is not stuck after a restart.
    import asyncio

    import agui_client as ag
    from agui_client.stores import SqliteStore
    from agui_client.testing import Finish, Start

    example = example_module()
    gate = Gate()
    db = tmp_path / "threads.db"
    monkeypatch.setattr(example, "SHUTDOWN_GRACE", 0.2)
    monkeypatch.setenv("THREADS_DB", str(db))
    monkeypatch.delenv("REDIS_URL", raising=False)

    with serve(ScriptedAgent([[Start(), Finish()], [Start(), Wait(gate, timeout=WATCHDOG), Finish()]])) as server:
        monkeypatch.setenv("AGENT_URL", server.url)

        async def main() -> tuple[str, Any]:
            async with example.lifespan(example.app):
                client: ag.AsyncAgentClient = example.app.state.client
                thread = client.thread()
                await thread.run("hello")
                task = asyncio.ensure_future(thread.run("and then?"))
                example.app.state.runs.add(task)
                await asyncio.to_thread(gate.wait_reached, WATCHDOG)
            return thread.id, task

        thread_id, task = asyncio.run(main())
        gate.open()
    with SqliteStore(db) as store:
        stored = store.load(thread_id)

    assert task.cancelled()
    assert stored is not None and stored.claim is None


def test_a_failure_before_or_during_a_run_shows_the_user_words_for_them_and_logs_the_librarys(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    # The 502, the 503 and the error frame passed the library's message to the browser: the agent's URL
    # and what it answered, the store's words, a run id and an event index, written for the developer.
    from agui_client.testing import Finish, Respond, Start

    def step(run_input: RunAgentInput) -> Any:
        if last_user_text(run_input) == "fail":
            return Respond(status=500, body="upstream model gateway 10.0.0.7 refused: quota")
        return [Start(), {"type": "TEXT_MESSAGE_CONTENT", "messageId": "ghost", "delta": "x"}, Finish()]

    example = example_module()
    caplog.set_level("WARNING", logger="fastapi_backend")
    with serve(ScriptedAgent([step], cycle=True)) as server:
        unavailable, not_started, broke_off = _relayed(tmp_path, monkeypatch, server.url, [
            ("/chat", {"message": "fail"}),
            ("/chat", {"thread_id": "t" * 1100, "message": "hello"}),  # (too long for a store: its claim fails)
            ("/chat", {"message": "go"}),
        ])

    assert unavailable.status_code == 502
    assert unavailable.json()["error"] == "agent_failed"
    assert unavailable.json()["message"] == example.AGENT_UNAVAILABLE
    assert not_started.status_code == 503
    assert (not_started.json()["error"], not_started.json()["message"]) == ("StoreError", example.NOT_STARTED)
    error = frames(broke_off)[-1]
    assert (error["type"], error["error"], error["message"]) == ("agui_client.error", "SequenceError",
                                                                  example.BROKE_OFF)
    shown = unavailable.text + not_started.text + broke_off.text
    assert server.url not in shown and "10.0.0.7" not in shown and "1024" not in shown and "ghost" not in shown

    logged = [record.getMessage() for record in caplog.records if record.name == "fastapi_backend"]
    assert len(logged) == 3, logged
    assert f"{unavailable.json()['threadId']}: the agent failed before the run started: " in logged[0]
    assert "500" in logged[0] and "10.0.0.7" in logged[0]
    assert "the run could not start: " in logged[1] and "more than the 1024 a store takes" in logged[1]
    assert f"{error['threadId']}: the run failed part-way: " in logged[2] and "ghost" in logged[2]
