"""Writers the crash tests kill, forked from one interpreter that imported them once.

A crash test kills a writer process dozens of times. Started as a fresh interpreter each time, every
writer paid Python's start and ``agui_client``'s imports (about a second on a loaded 2-core machine)
before its first write; forked from a *zygote* it pays a fork. What the tests prove is unchanged: the
child is a process of its own, killed with SIGKILL (no cleanup, no flush, no atexit), that opens its
own store after the fork. The zygote stays single-threaded and opens nothing, so there is nothing for
a fork to copy half-done.

The writer's side is :func:`fork_jobs`: one JSON job per line on stdin, a child per job, and
``exit <returncode>`` (negative: the signal) once the child is reaped. The test's side is
:class:`Zygote`. Every report line is written with a single ``write`` of a few bytes, which POSIX
makes atomic on a pipe: a kill never leaves half a line, so the zygote's ``exit`` always starts one.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

__all__ = ["say", "fork_jobs", "Zygote"]


def say(*words: object) -> None:
    """One report line, written with a single ``write`` (a kill never leaves half of one)."""
    os.write(1, (" ".join(str(w) for w in words) + "\n").encode())


def fork_jobs(run: Callable[[dict[str, Any]], None], *, announce: bool = False) -> None:
    """Fork a child per job line on stdin, which calls ``run(job)``; report how each one ended.

    With ``announce`` the child first reports ``pid <pid>``, the process a test kills.
    """
    for line in sys.stdin:
        job = json.loads(line)
        pid = os.fork()
        if pid == 0:
            code = 0
            if announce:
                say("pid", os.getpid())
            try:
                run(job)
            except BaseException:  # noqa: BLE001 - reported, then the child leaves without cleanup
                os.write(2, traceback.format_exc().encode())
                code = 1
            # os._exit flushes nothing, and a writer that returned may have printed its last line.
            sys.stdout.flush()
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        say("exit", os.waitstatus_to_exitcode(status))


class Zygote:
    """``python <script>`` run as a zygote (its ``fork_jobs(..., announce=True)``): :meth:`run` hands it
    one job and reads what that job's child printed, until the zygote reports how the child ended."""

    def __init__(self, script: Path, stderr: Path) -> None:
        self.stderr = stderr
        with stderr.open("w") as err:
            self.process = subprocess.Popen([sys.executable, str(script)], stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, stderr=err, text=True, cwd=script.parent)

    def run(self, job: dict[str, Any], *, kill_on: Callable[[str], bool] | None = None) -> tuple[int, list[str]]:
        """Run ``job`` in a new child; SIGKILL it on the first line ``kill_on`` accepts. Returns the
        child's exit code (``-SIGKILL`` when killed) and every line it printed, the kill's line and
        any it got out after it included."""
        process = self.process
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(json.dumps(job) + "\n")
        process.stdin.flush()
        pid: int | None = None
        lines: list[str] = []
        for line in process.stdout:
            if pid is None:
                word, number = line.split()
                assert word == "pid", line
                pid = int(number)
                continue
            if line.startswith("exit "):
                return int(line.split()[1]), lines
            lines.append(line)
            if kill_on is not None and kill_on(line):
                kill_on = None
                # Not reaped before the zygote reports "exit", so this pid is still the child.
                os.kill(pid, signal.SIGKILL)
        raise AssertionError(f"the zygote ended in the middle of a job; the child printed {lines}:\n"
                             f"{self.stderr.read_text()}")

    def close(self) -> None:
        """End the zygote (the end of its input) and check it ended cleanly."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        self.process.wait(60)
        self.process.stdout.close()
        assert self.process.returncode == 0, self.stderr.read_text()

    def __enter__(self) -> Zygote:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if kind is None:
            self.close()
            return
        # The test failed: end the zygote without adding a second error to its report.
        self.process.kill()
        self.process.wait(60)
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()
