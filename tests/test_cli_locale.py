"""``agui`` in a terminal whose locale is not UTF-8: what the person types reaches the agent as typed.

``LANG=C`` with Python's UTF-8 mode and locale coercion off (as on a minimal container or an old
server) makes stdin and ``sys.argv`` ASCII: each byte of a typed "é" became a lone surrogate, and the
run was refused with "a lone surrogate U+DCC3", which nobody can act on. ``PYTHONIOENCODING=ascii``
failed the chat with a ``UnicodeDecodeError`` traceback. The person types at a real pseudo-terminal.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pexpect
import pytest

from agui_client.cli.terminal import typed_text
from agui_client.testing import ScriptedAgent

TYPED = "Delete the café ☃"

#: An ASCII locale, as Python reads it when it neither coerces the C locale nor turns on UTF-8 mode.
C_LOCALE = {"LC_ALL": "C", "LANG": "C", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0"}


def _environment(**overrides: str) -> dict[str, str]:
    kept = {k: v for k, v in os.environ.items()
            if not k.startswith(("LC_", "LANG", "PYTHONIOENCODING", "PYTHONUTF8", "FORCE_COLOR"))}
    return {**kept, "NO_COLOR": "1", "TERM": "xterm-256color", **overrides}


@pytest.mark.parametrize("locale", [C_LOCALE, {"LANG": "C.UTF-8", "PYTHONIOENCODING": "ascii"}],
                         ids=["LANG=C", "PYTHONIOENCODING=ascii"])
def test_a_chat_line_typed_in_an_ascii_terminal_reaches_the_agent_as_typed(
        served: Callable[[Any], Any], locale: dict[str, str]) -> None:
    endpoint = served(ScriptedAgent.chat(lambda run_input: "noted"))
    child = pexpect.spawn(sys.executable, ["-m", "agui_client.cli", "chat", endpoint.url],
                          env=_environment(**locale), encoding="utf-8", codec_errors="replace",
                          dimensions=(40, 120), timeout=30)
    screen = io.StringIO()
    child.logfile_read = screen
    try:
        child.expect("you: ")
        child.sendline(TYPED)
        child.expect("noted")
        child.expect("you: ")
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        child.close()

    assert child.exitstatus == 0, screen.getvalue()
    assert "Traceback" not in screen.getvalue() and "surrogate" not in screen.getvalue()
    assert endpoint.received[0].body["messages"][-1]["content"] == TYPED


def test_a_message_given_on_the_command_line_under_lang_c_reaches_the_agent_as_typed(
        served: Callable[[Any], Any]) -> None:
    endpoint = served(ScriptedAgent.chat(lambda run_input: "noted"))
    done = subprocess.run([sys.executable, "-m", "agui_client.cli", "run", endpoint.url, "-m", TYPED, "--plain"],
                          env=_environment(**C_LOCALE), capture_output=True, timeout=60)

    assert done.returncode == 0, done.stdout + done.stderr
    assert endpoint.received[0].body["messages"][-1]["content"] == TYPED


def test_bytes_that_are_not_utf8_become_replacement_characters_not_surrogates() -> None:
    # (as Python hands over argv under LANG=C: each byte it could not decode, U+DC00 plus the byte)
    assert typed_text("caf\udcc3\udca9") == "café"
    assert typed_text("caf\udce9") == "caf\ufffd"
    assert typed_text("plain, and \u00e9 decoded already") == "plain, and \u00e9 decoded already"
