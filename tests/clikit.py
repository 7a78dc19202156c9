"""The ``agui`` command run in this process: ``main(argv)`` with a stdin, stdout and stderr of its own.

A subprocess costs an interpreter start and the CLI's imports (rich, httpx, the package) each time,
about a second on a loaded two-core machine; most CLI tests are about what a command prints and
returns, not about the process boundary. :func:`agui_here` runs ``agui_client.cli.main`` here, with
what a piped subprocess would have: stdin not a terminal (the text given, or nothing), stdout and
stderr not terminals (UTF-8, read back with universal newlines, as ``subprocess.run(text=True)``
reads them), ``NO_COLOR=1``, no ``FORCE_COLOR``, and 80 columns by 25 lines (rich measures the terminal
on descriptors 0 to 2 even when it writes elsewhere: under ``pytest -s`` those are the developer's
terminal, whose width would otherwise reach the output of a command run here). Each test file that
uses it keeps tests through a real process too (``python -m agui_client.cli``, piped or on a
pseudo-terminal): the entry point, the locale, signals and the terminal are only real there.
:func:`agui_process` is that process, started alike in every file (:data:`AGUI` and :data:`ENV` for
the ones on a pseudo-terminal); :func:`on_terminal` starts one on a pseudo-terminal as a user's terminal
has it (colour and all), and :func:`screen_text` reads back the text it drew.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shlex
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs
import pexpect

from agui_client.cli import main

__all__ = ["AGUI", "ENV", "YES_NO_ASKED", "Ran", "RanBytes", "agui_each_in_one_process", "agui_here",
           "agui_here_bytes", "agui_process", "agui_process_bytes", "on_terminal", "screen_text", "spawn_on_terminal"]

#: ``agui`` as a real process: this interpreter, ``python -m agui_client.cli``.
AGUI = [sys.executable, "-m", "agui_client.cli"]
#: A real ``agui`` process's environment: plain output (no terminal), UTF-8 whatever the locale, and
#: this checkout first on the path (else the process imports whichever copy the interpreter has installed,
#: which for a second working tree is another checkout's code).
ENV = {**os.environ, "PYTHONIOENCODING": "utf-8", "NO_COLOR": "1",
       "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(__file__).resolve().parent.parent),
                                                   os.environ.get("PYTHONPATH")]))}
ENV.pop("FORCE_COLOR", None)
#: The end of a yes/no question on a terminal, between rich's styles: written last, just before the
#: answer is read. Waiting for it (not for ``[y/n]`` alone) sends a key or a Ctrl-C to the question itself.
YES_NO_ASKED = r"\[y/n\](?:\x1b\[[0-9;]*m)*: "

#: Every escape sequence rich writes (styles, cursor moves, erasing) and the terminal's carriage returns:
#: what is left is the screen's text.
_SCREEN_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\r")


@attrs.frozen
class Ran:
    """What a finished command left: as ``subprocess.CompletedProcess`` names it, so tests read alike."""

    returncode: int
    stdout: str
    stderr: str


@attrs.frozen
class RanBytes:
    """What a finished command left, as the bytes it wrote (``subprocess.run`` without ``text=True``)."""

    returncode: int
    stdout: bytes
    stderr: bytes


def agui_here(*args: str, stdin: str | None = None) -> Ran:
    """Run ``agui ARGS`` in this process with stdin not a terminal (``stdin`` text, or nothing)."""
    ran = agui_here_bytes(*args, stdin=(stdin or "").encode("utf-8"))
    return Ran(returncode=ran.returncode, stdout=_text(ran.stdout), stderr=_text(ran.stderr))


def agui_here_bytes(*args: str, stdin: bytes | None = None) -> RanBytes:
    """Run ``agui ARGS`` in this process with stdin not a terminal; what it wrote, byte for byte."""
    source = io.TextIOWrapper(io.BytesIO(stdin or b""), encoding="utf-8")
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)
    with _plain_environment(), _streams(source, out, err):
        try:
            code = main(list(args))
        except SystemExit as exc:  # (argparse's usage errors and --help leave this way)
            code = _exit_status(exc, err)
    return RanBytes(returncode=code, stdout=_written(out), stderr=_written(err))


def agui_process(*args: str, stdin: str | None = None, timeout: float = 60,
                 pass_fds: tuple[int, ...] = ()) -> subprocess.CompletedProcess[str]:
    """Run ``agui ARGS`` as a real process with stdin not a terminal (``stdin`` text piped in, or
    nothing); a hang fails the test with ``TimeoutExpired`` after ``timeout`` seconds."""
    return subprocess.run([*AGUI, *args], input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout, env=ENV, check=False, pass_fds=pass_fds)


def agui_process_bytes(*args: str, stdin: bytes | None = None,
                       timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
    """As :func:`agui_process`, what the process wrote byte for byte: what a pipe really receives."""
    return subprocess.run([*AGUI, *args], input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL,
                          capture_output=True, timeout=timeout, env=ENV, check=False)


def spawn_on_terminal(program: Sequence[str], size: tuple[int, int] = (60, 200)) -> tuple[pexpect.spawn, io.StringIO]:
    """``python PROGRAM`` on a pseudo-terminal of ``size`` (60 lines by 200 columns unless given), as a
    user's terminal runs it (``TERM=xterm-256color``, colour on), and what it writes as it is read (the
    caller closes it; see :func:`on_terminal`). An ``expect`` that waits 30 s fails the test."""
    env = {**ENV, "TERM": "xterm-256color"}
    env.pop("NO_COLOR")
    child = pexpect.spawn(sys.executable, list(program), env=env, encoding="utf-8", dimensions=size, timeout=30)
    screen = io.StringIO()
    child.logfile_read = screen
    return child, screen


@contextlib.contextmanager
def on_terminal(program: Sequence[str],
                size: tuple[int, int] = (60, 200)) -> Iterator[tuple[pexpect.spawn, io.StringIO]]:
    """:func:`spawn_on_terminal`, closed as the block ends, whatever happened (its exit status is read
    after the block)."""
    child, screen = spawn_on_terminal(program, size)
    try:
        yield child, screen
    finally:
        child.close()


def screen_text(raw: str) -> str:
    """The text a program on a pseudo-terminal drew, without rich's escape sequences and carriage returns."""
    return _SCREEN_ESCAPES.sub("", raw)


#: What :func:`agui_each_in_one_process` runs: each ``[args, stdin]`` of the JSON list in argv[1] through
#: :func:`agui_here`, and what each left, as JSON on the last line. Before each call a line on stderr says
#: which case starts (:data:`_CASE_STARTS`): a process that dies or hangs is then known to be in it.
_EACH = """
import json, sys
from clikit import _CASE_STARTS, agui_here
left = []
for n, (args, stdin) in enumerate(json.loads(sys.argv[1])):
    print(f"{_CASE_STARTS}{n}", file=sys.stderr, flush=True)
    left.append(agui_here(*args, stdin=stdin))
print(json.dumps([[done.returncode, done.stdout, done.stderr] for done in left]))
"""
_CASE_STARTS = "clikit: the case starts: "
#: How long :func:`agui_each_in_one_process` waits for its process to start its first case (an
#: interpreter's start and the CLI's imports, on a loaded machine).
_START_BOUND = 60.0


def agui_each_in_one_process(calls: Sequence[tuple[Sequence[str], str | None]], *, timeout: float) -> list[Ran]:
    """Run ``agui ARGS`` for each ``(ARGS, stdin)`` of ``calls``, one after the other, in one real process
    (each as :func:`agui_here` runs it, with streams of its own); what each left, in order.

    For commands that must not run in the test's process (one that never ended would hold it, or fill
    its memory) but need no process each: one interpreter start for all of them. A command that never
    ends holds that process, stopped ``timeout`` seconds after its first case started; one that escapes
    :func:`agui_here` ends it. Either fails every call, with an ``AssertionError`` naming the case it was
    in (its number and command). The interpreter's start and imports are not counted in ``timeout`` (they
    are bounded apart, at :data:`_START_BOUND`): they take a second or several as the machine is loaded,
    so a ``timeout`` that covered them had to be long, and a test of a hang waited all of it out.
    """
    tests = str(Path(__file__).resolve().parent)
    listed = [[list(args), stdin] for args, stdin in calls]
    said: list[str] = []
    wrote: list[str] = []
    heard = threading.Event()  # (the first case started, or stderr ended: the process will not start one)
    stopped: subprocess.TimeoutExpired | None = None
    env = {**ENV, "PYTHONPATH": os.pathsep.join([tests, ENV["PYTHONPATH"]])}
    with subprocess.Popen([sys.executable, "-c", _EACH, json.dumps(listed)], env=env, stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as process:

        def hear() -> None:
            assert process.stderr is not None
            try:
                for line in process.stderr:
                    said.append(line)
                    if line.startswith(_CASE_STARTS):
                        heard.set()
            finally:
                heard.set()

        def read() -> None:
            assert process.stdout is not None
            wrote.append(process.stdout.read())

        readers = [threading.Thread(target=hear, daemon=True), threading.Thread(target=read, daemon=True)]
        for reader in readers:
            reader.start()
        try:
            if not heard.wait(_START_BOUND):
                raise subprocess.TimeoutExpired(process.args, _START_BOUND)
            process.wait(timeout)
        except subprocess.TimeoutExpired as exc:
            stopped = exc
        finally:
            if process.returncode is None:  # (stopped, or anything else escaping the wait: it must not outlive us)
                process.kill()
                process.wait()
            for reader in readers:
                reader.join()
    stderr = "".join(said)
    if stopped is not None:
        raise AssertionError(f"{_case_in(stderr, listed)} had not ended at {stopped.timeout} s\n{stderr[-3000:]}"
                             ) from stopped
    if process.returncode != 0:
        raise AssertionError(f"{_case_in(stderr, listed)} ended its process with status {process.returncode}"
                             f"\n{stderr[-3000:]}")
    return [Ran(returncode=code, stdout=out, stderr=err) for code, out, err in json.loads(wrote[0].splitlines()[-1])]


def _case_in(said: str, listed: list[list[Any]]) -> str:
    """The case a process of :func:`agui_each_in_one_process` that wrote ``said`` on stderr was in, named."""
    started = [line.removeprefix(_CASE_STARTS) for line in said.splitlines() if line.startswith(_CASE_STARTS)]
    if not started:
        return f"no case of {len(listed)} (the process did not reach the first)"
    n = int(started[-1])
    command = shlex.join(["agui", *map(str, listed[n][0])])
    return f"case {n} of {len(listed)}, {command if len(command) <= 300 else command[:300] + ' ...'},"


def _exit_status(exc: SystemExit, err: io.TextIOWrapper) -> int:
    """The status a process leaving with ``exc`` ends with, as the interpreter decides it: ``None`` is 0,
    an integer is itself, anything else is written to stderr and is 1."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    err.write(f"{exc.code}\n")
    return 1


def _written(stream: io.TextIOWrapper) -> bytes:
    stream.flush()
    raw = stream.buffer
    assert isinstance(raw, io.BytesIO)
    return raw.getvalue()


def _text(raw: bytes) -> str:
    """As ``subprocess.run(text=True)`` reads a pipe: UTF-8, universal newlines."""
    return raw.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")


@contextlib.contextmanager
def _streams(stdin: io.TextIOWrapper, stdout: io.TextIOWrapper, stderr: io.TextIOWrapper) -> Iterator[None]:
    saved = sys.stdin, sys.stdout, sys.stderr
    sys.stdin, sys.stdout, sys.stderr = stdin, stdout, stderr
    try:
        yield
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved


@contextlib.contextmanager
def _plain_environment() -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in ("NO_COLOR", "FORCE_COLOR", "COLUMNS", "LINES")}
    os.environ["NO_COLOR"] = "1"
    os.environ.pop("FORCE_COLOR", None)
    # (what rich takes when no descriptor is a terminal, as for a piped process started without them)
    os.environ["COLUMNS"], os.environ["LINES"] = "80", "25"
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
