"""The getting-started pages' Python runs as written (docs/start/), against the bundled ScriptedAgent.

The web backend page's snippet needs Redis and an agent: it runs in tests/stores/test_web_backend_page.py,
against the session's redis-server.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path
from typing import Any

START = Path(__file__).parent.parent / "docs" / "start"


def snippets(page: str) -> list[str]:
    """The page's ```python blocks, in order."""
    return re.findall(r"```python\n(.*?)```", (START / page).read_text(encoding="utf-8"), flags=re.S)


def test_the_script_page_runs_a_conversation_with_an_interrupt_and_its_resume() -> None:
    (snippet,) = snippets("script.md")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(snippet, str(START / "script.md"), "exec"), {"__name__": "__docs__"})

    lines = out.getvalue().splitlines()
    assert lines[0] == "interrupt"  # (what the page's comment says it prints)
    assert "approved" in lines[1]
    assert lines[2].startswith("success - ")


def test_the_tests_page_test_passes_and_fails_when_the_agent_says_something_else() -> None:
    (snippet,) = snippets("tests.md")
    names: dict[str, Any] = {"__name__": "__docs__"}
    exec(compile(snippet, str(START / "tests.md"), "exec"), names)
    names["test_my_code_reads_the_answer"]()  # (passes as written)

    changed: dict[str, Any] = {"__name__": "__docs__"}
    exec(compile(snippet.replace('"m1", "Hello!"', '"m1", "Goodbye!"'), str(START / "tests.md"), "exec"), changed)
    try:
        changed["test_my_code_reads_the_answer"]()
    except AssertionError:
        pass
    else:
        raise AssertionError("the page's test passed against an agent that answers otherwise")


def test_the_chat_app_page_streams_answers_an_interrupt_and_runs_a_frontend_tool() -> None:
    snippet = snippets("chat-app.md")[0]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(snippet, str(START / "chat-app.md"), "exec"), {"__name__": "__docs__"})

    lines = out.getvalue().splitlines()
    # The demo: streamed up to its question, approved, streamed to the end.
    assert lines[:3] == [lines[0], "Done: the staging environment is deleted. A backup is kept for 60 minutes.",
                         "success"]
    assert "I need your approval" in lines[0]
    # The frontend tool: the handler's answer reached the agent, which quotes it in the next run.
    assert lines[3:] == ["I need your input: let me ask confirm_choice in your app.",
                         "Thanks! confirm_choice answered: yes, to 'Which option do you prefer?'", "success"]


def test_the_chat_app_page_shows_an_agents_text_inert_as_its_comments_say() -> None:
    snippet = snippets("chat-app.md")[1]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(snippet, str(START / "chat-app.md"), "exec"), {"__name__": "__docs__"})

    said = [line.split("# ")[1].split(":")[0] if "True" in line else line.split("# ")[1]
            for line in snippet.splitlines() if line.startswith("print(")]
    assert out.getvalue().splitlines() == said
    assert "\x1b" not in out.getvalue() and "\u3164" not in out.getvalue()
