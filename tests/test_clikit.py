"""``clikit.agui_here``, the in-process ``agui``: it must end and lay out as a piped process would.

Two ways it did not: ``SystemExit(None)`` (``sys.exit()``) was read as status 1 where the interpreter
ends with 0, and rich measured the terminal on descriptors 0 to 2, so under ``pytest -s`` the
developer's terminal width reached what a command wrote here.

``clikit.agui_each_in_one_process`` runs several commands in one real process: a case that hangs it or
ends it must be named, or a failing fixture says only that all of them failed. ``clikit.ENV`` must put
this checkout first on the path, or a real process imports whichever copy is installed.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import clikit
import pytest
from clikit import ENV, agui_each_in_one_process, agui_here

from agui_client.testing import Gate, ScriptedAgent, Start, Wait


@pytest.mark.parametrize(("code", "status", "said"), [(None, 0, ""), (0, 0, ""), (3, 3, ""),
                                                      ("bye: no agent", 1, "bye: no agent\n")])
def test_a_command_that_exits_ends_with_the_status_the_interpreter_gives(
        monkeypatch: pytest.MonkeyPatch, code: Any, status: int, said: str) -> None:
    def leaves(argv: list[str]) -> int:
        raise SystemExit(code)

    monkeypatch.setattr(clikit, "main", leaves)

    ran = agui_here("demo")

    assert (ran.returncode, ran.stderr) == (status, said)


@contextlib.contextmanager
def _on_a_terminal(columns: int, descriptors: tuple[int, ...] = (0,)) -> Iterator[None]:
    """``descriptors`` (descriptor 0 unless told) on a pseudo-terminal ``columns`` wide for the block (as
    under ``pytest -s``)."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    saved = {fd: os.dup(fd) for fd in descriptors}
    for fd in descriptors:
        os.dup2(follower, fd)
    try:
        yield
    finally:
        for fd, kept in saved.items():
            os.dup2(kept, fd)
            os.close(kept)
        for fd in (follower, leader):
            os.close(fd)


def test_what_a_command_writes_here_does_not_depend_on_the_terminal_the_tests_run_on(
        served: Callable[[Any], Any]) -> None:
    url = served(ScriptedAgent.demo()).url
    apart = agui_here("demo", "--url", url, "--ask", stdin="y\n")

    with _on_a_terminal(columns=20):
        narrow = agui_here("demo", "--url", url, "--ask", stdin="y\n")

    assert "approved (Delete the environment?) [y/n]: yes\n" in narrow.stderr
    assert narrow.stderr.splitlines()[:2] == apart.stderr.splitlines()[:2]
    # (the help argparse lays out measures the terminal too, on descriptor 1 (shutil's), where pytest -s
    # leaves the developer's terminal: the same fix holds it. Compared with the help laid out apart: two
    # calls inside the block would each see the narrow terminal, and agree whatever the width)
    help_apart = agui_here("--help").stdout
    with _on_a_terminal(columns=20, descriptors=(0, 1)):
        help_narrow = agui_here("--help").stdout
    assert help_narrow == help_apart and len(max(help_apart.splitlines(), key=len)) > 20


@pytest.mark.timeout(60)
def test_a_case_that_hangs_the_one_process_is_named(served: Callable[[Any], Any]) -> None:
    # (the agent holds the second case's run at a gate the test opens only once the process was stopped)
    gate = Gate()
    url = served(ScriptedAgent([[Start(), Wait(gate, timeout=60)]])).url
    try:
        with pytest.raises(AssertionError) as caught:
            agui_each_in_one_process([(("--version",), None), (("run", url, "-m", "hi"), None)], timeout=3)
    finally:
        gate.open()

    said = str(caught.value)
    assert said.startswith(f"case 1 of 2, agui run {url} -m hi, had not ended at 3 s"), said
    assert isinstance(caught.value.__cause__, subprocess.TimeoutExpired)


def test_a_case_that_ends_the_one_process_is_named() -> None:
    # (an argument that is no string breaks argparse inside main: an exception agui_here does not take,
    # as any command's escaping exception would end the process)
    with pytest.raises(AssertionError) as caught:
        agui_each_in_one_process([(("--version",), None), (("--version",), None),
                                  (("demo", 5), None)], timeout=60)  # type: ignore[list-item]

    said = str(caught.value)
    assert said.startswith("case 2 of 3, agui demo 5, ended its process with status 1"), said
    assert "Traceback" in said


def test_a_real_process_imports_this_checkout(tmp_path: Path) -> None:
    # (from another folder, so that the current one on the path cannot be what finds it)
    done = subprocess.run([sys.executable, "-c", "import agui_client; print(agui_client.__file__)"], env=ENV,
                          cwd=tmp_path, capture_output=True, text=True, timeout=60, check=True)

    checkout = Path(clikit.__file__).resolve().parent.parent
    assert Path(done.stdout.strip()).resolve() == checkout / "agui_client" / "__init__.py"
