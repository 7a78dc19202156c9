"""The terminal, third pass: what an agent's text can still do where the user approves an action.

A letter of another script inside a name (a Cyrillic ``а`` in ``reаd_file``) made a dangerous call read
as a harmless one in the interrupt's panel; a word of the arguments or the question could do the same
(``/etc/pаsswd``); field names in a wide script broke the plain panel's columns; a request to ``agui
serve`` whose handling failed reached the terminal raw in uvicorn's traceback. Each test drives ``agui``
through a real pseudo-terminal (or a pipe, where the plain output is the point) and fails without its
fix (CHANGELOG, "Eighteenth round: the agent's text at the approval prompt").
"""

from __future__ import annotations

import io
import os
import re
import sys

import httpx
import pexpect

AGUI = [sys.executable, "-m", "agui_client.cli"]
ENV = {**os.environ, "PYTHONIOENCODING": "utf-8", "NO_COLOR": "1", "TERM": "xterm-256color"}
ENV.pop("FORCE_COLOR", None)

#: `agui serve demo`, its demo agent replaced by an app that fails quoting the request's path, as an
#: unforeseen fault in the app would.
_FAILING_SERVE = """
import sys
from agui_client import testing
from agui_client.cli import main

async def failing(scope, receive, send):
    raise ValueError("no route for " + scope["path"])

testing.ScriptedAgent.demo = staticmethod(lambda: failing)
sys.exit(main(["serve", "demo", "--port", "0"]))
"""


def test_a_request_that_makes_agui_serve_fail_reaches_the_terminal_inert() -> None:
    child = pexpect.spawn(sys.executable, ["-c", _FAILING_SERVE], env=ENV, dimensions=(60, 200), timeout=30)
    child.logfile_read = received = io.BytesIO()
    try:
        child.expect(rb"at (http://127\.0\.0\.1:\d+/)")
        url = child.match.group(1).decode()
        # The path is sent percent-encoded, as any client may; the app receives it decoded.
        assert httpx.get(url + "%1b]0;PWNED%07%c2%9b2J%1b[2J").status_code == 500
        child.expect(rb"no route for ")
        child.expect(rb"Ctrl-C stops|\n")
        child.sendintr()
        child.expect(pexpect.EOF)
    finally:
        child.close()

    text = received.getvalue().decode("utf-8")
    assert "Exception in ASGI application" in text
    assert "\x1b]0;PWNED" not in text and "\x9b" not in text and "\x1b[2J" not in text
    assert re.search(r"no route for /\\x1b\]0;PWNED\\x07\\x9b2J\\x1b\[2J", text), text[-2000:]
