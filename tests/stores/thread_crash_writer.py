"""The process the thread crash test kills: runs a thread one step on, through ``Thread.run``.

Run as ``python thread_crash_writer.py``. It imports everything once, then reads one JSON job per
line on stdin and forks a child per job (so a kill costs a fork, not an interpreter start; the
parent stays single-threaded and opens nothing before forking). The child opens its own store
(``kind``: ``sqlite``, ``redis`` or ``postgres``; ``target``: the file, URL or DSN; ``prefix`` or
``table``) and ``AgentClient`` for
the agent at ``url``, loads ``thread_id`` and runs it once more with ``run_id``: a resume answering
every open interrupt when the thread has some, else the new message ``message``. It prints, one
line each, with a single ``write`` (so a kill never mixes two lines):

* ``pid <pid>`` as soon as the child starts: the process to kill;
* ``sending <run_id>`` just before ``thread.run(...)``;
* ``reported <interrupt id> ...`` when ``run`` returned to it, with the run's interrupts.

Then it waits to be killed. With ``kill_delay`` (seconds) the child SIGKILLs itself that long
after ``sending``, so the kill lands at a seeded moment inside the run: the claim, the request, the
stream, the save, or after the report. The parent reports ``exit <returncode>`` (negative: the
signal) for every child it reaped, and ends at the end of its input.
"""

from __future__ import annotations

import os
import signal
import threading
from typing import Any

from zygote import fork_jobs, say

from agui_client import AgentClient
from agui_client.stores import PostgresStore, RedisStore, SqliteStore

__all__ = ["open_store", "child", "main", "FRESH"]

#: One connection per run (see ``test_no_double_send.FRESH``: ``serve()`` leaves Nagle on).
FRESH = {"Connection": "close"}


def open_store(job: dict[str, Any]) -> SqliteStore | RedisStore | PostgresStore:
    """The store a job names."""
    if job["kind"] == "sqlite":
        return SqliteStore(job["target"])
    if job["kind"] == "postgres":
        return PostgresStore(job["target"], table=job["table"])
    return RedisStore(job["target"], prefix=job["prefix"])


def child(job: dict[str, Any]) -> None:
    """Run the job's thread one step on, report, and wait for the kill."""
    say("pid", str(os.getpid()))
    with open_store(job) as store, AgentClient(job["url"], store=store, headers=FRESH) as client:
        thread = client.thread(job["thread_id"])
        message, resume = None, None
        if thread.open_interrupts:
            resume = thread.resume_builder()
            for interrupt in thread.open_interrupts:
                resume.answer(interrupt.id, {"answer": f"yes to {interrupt.id}"})
        else:
            message = job["message"]
        say("sending", job["run_id"])
        if job.get("kill_delay") is not None:
            timer = threading.Timer(job["kill_delay"], os.kill, (os.getpid(), signal.SIGKILL))
            timer.daemon = True
            timer.start()
        result = thread.run(message, resume=resume, run_id=job["run_id"])
        say("reported", *(i.id for i in result.interrupts))
        threading.Event().wait()


def main() -> None:
    """Fork a child per job line on stdin; report how each one ended."""
    fork_jobs(child)


if __name__ == "__main__":
    main()
