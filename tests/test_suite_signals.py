"""The suite hears its own Ctrl-C when it is started where SIGINT is ignored.

A CI runner or a shell without job control may start the test command in the background with
SIGINT ignored. Python then installs no handler, and the tests that press Ctrl-C (in process, and
through pseudo-terminals to the CLI) saw nothing: seven of them failed. ``tests/conftest.py`` takes
Python's handler back for the session; this runs one such test in a session started that way.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CTRL_C_TEST = "tests/thread/test_tools.py::test_ctrl_c_while_the_tool_loop_claims_gives_the_claim_back"


def _ignore_ctrl_c() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def test_a_session_started_with_sigint_ignored_still_hears_the_ctrl_c_its_tests_press(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--basetemp", str(tmp_path / "t"),
         CTRL_C_TEST],
        cwd=ROOT, preexec_fn=_ignore_ctrl_c, stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=300, check=False)

    # (pytest exits 0 only when the tests it collected ran and passed; 5 when it collected none)
    assert done.returncode == 0, done.stdout[-3000:]
