"""Every example in examples/ runs, non-interactively, and shows what it is there to show.

Each runs as a real subprocess: by default against the scripted agent it starts itself, and once
with ``--url`` against an agent served from this process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agui_client.testing import ScriptedAgent

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
ENV = {**os.environ, "PYTHONIOENCODING": "utf-8", "NO_COLOR": "1", "COLUMNS": "200"}


def example(name: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``examples/<name> ARGS`` with no terminal on stdin."""
    done = subprocess.run([sys.executable, str(EXAMPLES / name), *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, env=ENV, timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    return done


def test_script_asks_approves_and_finishes() -> None:
    out = example("script.py").stdout

    assert "interrupt (approval): Delete the staging environment? This cannot be undone." in out
    assert "approved " in out
    assert "agent: Done: the staging environment is deleted." in out
    assert "done: success" in out


def test_script_talks_to_the_agent_at_url(served: Callable[[Any], Any]) -> None:
    endpoint = served(ScriptedAgent.demo())

    out = example("script.py", "--url", endpoint.url, "-m", "Drop the preview environment").stdout

    assert "done: success" in out
    assert endpoint.received[0].body["messages"][0]["content"] == "Drop the preview environment"
    assert len(endpoint.received) == 2  # the question, then the resume


def test_async_stream_prints_typed_events_as_they_arrive() -> None:
    out = example("async_stream.py").stdout

    assert '[tool] delete_environment {"environment":"staging"}' in out
    assert "[state] 2 change(s): /task/status, /log/-" in out
    assert "[run paused: 1 interrupt(s)]" in out
    assert "assistant: Done: the staging environment is deleted. A backup is kept for 60 minutes." in out
    assert "outcome: success" in out


def test_chat_tui_once_with_yes_answers_the_interrupt_and_ends() -> None:
    out = example("chat_tui.py", "--once", "Delete the staging environment", "--yes").stdout

    assert "the agent asks (approval)" in out
    assert '{"approved": true, "environment": "staging", "ttl_minutes": 60}' in out
    assert "Done: the staging environment is deleted." in out
    assert "(success;" in out


def test_chat_tui_asks_again_after_an_answer_the_schema_refuses() -> None:
    # ttl_minutes = -3 breaks the schema's minimum: said, and the form asked again (no traceback).
    done = subprocess.run([sys.executable, str(EXAMPLES / "chat_tui.py"), "--once", "Delete the staging environment"],
                          input="y\n\n\n-3\ny\nqa\n\n30\n", capture_output=True, text=True, env=ENV, timeout=30,
                          check=False)

    assert done.returncode == 0, done.stderr
    assert "not accepted: at /ttl_minutes: -3 is less than the minimum of 0" in done.stdout
    assert 'answer: {"approved": true, "environment": "qa", "ttl_minutes": 30}' in done.stdout
    assert "Done: the qa environment is deleted. A backup is kept for 30 minutes." in done.stdout


def test_frontend_tools_answers_the_call_with_the_python_handler() -> None:
    out = example("frontend_tools.py", "--choice", "green").stdout

    assert "[confirm_choice] the agent asks: Which option do you prefer?" in out
    assert "agent: Thanks! confirm_choice answered: green" in out
    assert "outcome: success" in out


def test_chat_tui_shows_an_agents_control_characters_as_escapes_never_raw(served: Callable[[Any], Any]) -> None:
    from agui_client.testing import Finish, Start, text_message, tool_call

    script = [Start(), *text_message("m1", "clear\x1b[2J\rgone"), *tool_call("c1", "rm\u202etxt.exe", {}),
              Finish()]
    endpoint = served(ScriptedAgent([script]))

    out = example("chat_tui.py", "--url", endpoint.url, "--once", "hi").stdout

    assert "agent: clear\\x1b[2J\\rgone" in out
    assert "[tool] rm\\u202etxt.exe" in out
    assert "\x1b" not in out and "\r" not in out and "\u202e" not in out
