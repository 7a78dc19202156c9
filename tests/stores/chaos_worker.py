"""The replica ``test_chaos.py`` runs (several at once) and kills: one turn of a shared thread per job.

Run as ``python chaos_worker.py``. It imports everything once, then reads one JSON job per line on
stdin and forks a child per job (so a restart after a kill costs a fork, not an interpreter start; the
parent stays single-threaded and opens nothing before forking). The child is the worker: it opens its
own store (``kind``: ``sqlite``, ``redis`` or ``postgres``; ``target``: the file, URL or DSN; ``prefix``
or ``table``) with the job's small ``compaction`` policy, loads ``thread_id`` fresh through
``AgentClient(url).thread(...)`` and runs it once with ``run_id``: a resume answering every open
interrupt with a ``ResumeBuilder`` when it has some, else the new message ``turn <run_id>``.

Every call the thread makes on the store (and the store's own compaction, ``_compact``) is reported
before and after it runs, so the test can hold the store to what a worker saw it acknowledge. The
child prints, one line per ``os.write`` (so a kill never mixes two lines):

* ``pid <pid>``: the process to kill;
* ``op <n> <name> begin [owner]`` / ``op <n> <name> end <version>`` / ``op <n> <name> raised <error>``
  around the ``n``-th store call (``owner``: a claim's owner token);
* ``sending <run_id> message|resume`` just before ``thread.run(...)``;
* ``done <run_id> <outcome> <version>`` when ``run`` returned (the run is saved);
* ``refused <run_id>`` when ``run`` raised ``ConcurrentResume`` (another writer holds or moved the thread);
* ``failed <run_id> <error>: <message>`` for anything else;
* ``die <how>`` just before it kills itself;
* ``held <where>`` / ``going <where>`` when it stops at the job's ``hold`` point, and goes on.

A job's ``kill`` makes the child SIGKILL itself: ``{"op": n, "when": "before"|"after"}`` at the
``n``-th store call, or ``{"delay": seconds}`` that long after ``sending`` (landing anywhere in the
claim, the request, the stream, the save or a compaction). Kills from outside (the test, on reading a
line; the agent, on receiving the request) need nothing here. A job's ``hold`` stops the child at the
``n``-th store call (``{"op": n}``) or between a compaction's read and its write (``{"fold": true}``)
until the test sends it SIGUSR2, once every other replica of the round has ended its turn: the
other replicas' whole turns then come in between. The parent reports ``exit <returncode>``
(negative: the signal) for every child it reaped, and ends at the end of its input.
"""

from __future__ import annotations

import faulthandler
import functools
import os
import signal
import sys
import threading
from typing import Any

from zygote import fork_jobs, say

from agui_client import AgentClient, ConcurrentResume
from agui_client.core import standing
from agui_client.stores import Compaction, PostgresStore, RedisStore, SqliteStore
from agui_client.stores.base import apply_changes

# As in the test suite (tests/conftest.py): every append is checked to rebuild the whole thread.
standing._VERIFY_CHANGES = apply_changes

__all__ = ["open_store", "child", "main", "FRESH", "STORE_CALLS"]

#: One connection per run (see ``test_no_double_send.FRESH``: ``serve()`` leaves Nagle on).
FRESH = {"Connection": "close"}
#: The store calls reported (and counted for a kill at the n-th): the protocol's, and the fold.
STORE_CALLS = ("load", "claim", "save", "append", "release", "_compact")


def open_store(job: dict[str, Any], compaction: Compaction | None = None) -> SqliteStore | RedisStore | PostgresStore:
    """The store a job names."""
    if job["kind"] == "sqlite":
        return SqliteStore(job["target"], compaction=compaction)
    if job["kind"] == "postgres":
        return PostgresStore(job["target"], table=job["table"], compaction=compaction)
    return RedisStore(job["target"], prefix=job["prefix"], compaction=compaction)


def die(how: str) -> None:
    say("die", how)
    os.kill(os.getpid(), signal.SIGKILL)


def hold(where: str) -> None:
    """Stop here until the test sends SIGUSR2 (blocked since the child started, so never lost)."""
    say("held", where)
    signal.sigwait({signal.SIGUSR2})
    say("going", where)


def _reported(store: Any, kill: dict[str, Any] | None, held: dict[str, Any] | None) -> None:
    """Wrap the store object's calls (on the object: its class stays the store's, so the thread object
    sees the same methods and signatures) to report each, to die at the job's chosen one, or to stop
    at it until the test says so (``held``: ``{"op": n}``, or ``{"fold": True}`` between a compaction's
    read and its write)."""
    count = 0
    module = sys.modules[type(store).__module__]
    fold = module.compacted

    def compacted(*args: Any) -> Any:
        if held is not None and held.get("fold"):
            hold("fold")
        return fold(*args)

    module.compacted = compacted

    def wrap(name: str, method: Any) -> Any:
        @functools.wraps(method)
        def reported(*args: Any, **kwargs: Any) -> Any:
            nonlocal count
            count += 1
            n = count
            say("op", n, name, "begin", kwargs.get("owner", ""))
            if held is not None and held.get("op") == n:
                hold(f"op {n} {name}")
            if kill is not None and kill.get("op") == n and kill["when"] == "before":
                die(f"before op {n} {name}")
            try:
                answer = method(*args, **kwargs)
            except BaseException as exc:
                say("op", n, name, "raised", type(exc).__name__)
                raise
            version = getattr(answer, "version", answer)
            say("op", n, name, "end", version)
            if kill is not None and kill.get("op") == n and kill["when"] == "after":
                die(f"after op {n} {name}")
            return answer

        return reported

    for name in STORE_CALLS:
        setattr(store, name, wrap(name, getattr(store, name)))


def child(job: dict[str, Any]) -> None:
    """Run the job's turn and report how it went."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR2})  # (see hold)
    say("pid", os.getpid())
    # A replica that hangs is sent SIGABRT by the test: it then writes where every thread stood.
    faulthandler.enable(all_threads=True)
    kill: dict[str, Any] | None = job.get("kill")
    compaction = Compaction(**job["compaction"])
    with open_store(job, compaction) as store:
        _reported(store, kill, job.get("hold"))
        with AgentClient(job["url"], store=store, headers=FRESH) as client:
            run_id = job["run_id"]
            thread = client.thread(job["thread_id"])
            message, resume = None, None
            if thread.open_interrupts:
                resume = thread.resume_builder()
                for interrupt in thread.open_interrupts:
                    resume.answer(interrupt.id, {"answer": f"{run_id} answers {interrupt.id}"})
            else:
                message = f"turn {run_id}"
            say("sending", run_id, "message" if resume is None else "resume")
            if kill is not None and "delay" in kill:
                timer = threading.Timer(kill["delay"], die, (f"after {kill['delay']:.4f}s",))
                timer.daemon = True
                timer.start()
            try:
                result = thread.run(message, resume=resume, run_id=run_id)
            except ConcurrentResume:
                say("refused", run_id)
                return
            except Exception as exc:  # noqa: BLE001 - reported to the test, which judges it
                say("failed", run_id, f"{type(exc).__name__}:", " ".join(str(exc).split())[:300])
                return
            say("done", run_id, result.outcome, thread.version)


def main() -> None:
    """Fork a child per job line on stdin; report how each one ended."""
    fork_jobs(child)


if __name__ == "__main__":
    main()
