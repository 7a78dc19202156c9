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

import pytest

from agui_client.stores import SqliteStore
from agui_client.testing import Respond, Start
from agui_client.types import RunErrorEvent, TextMessageEndEvent

START = Path(__file__).parent.parent / "docs" / "start"


def snippets(page: str) -> list[str]:
    """The page's ```python blocks, in order."""
    return re.findall(r"```python\n(.*?)```", (START / page).read_text(encoding="utf-8"), flags=re.S)


def test_the_script_page_runs_a_conversation_with_an_interrupt_and_its_resume() -> None:
    snippet = snippets("script.md")[0]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(snippet, str(START / "script.md"), "exec"), {"__name__": "__docs__"})

    lines = out.getvalue().splitlines()
    assert lines[0] == "interrupt"  # (what the page's comment says it prints)
    assert "approved" in lines[1]
    assert lines[2].startswith("success - ")


def _script_with_a_store(agent: str | None = None, url: str | None = None) -> str:
    """The script page's second snippet, run in the current folder, with another agent or URL; what it printed,
    or the message it exited with."""
    snippet = snippets("script.md")[1]
    if agent is not None:
        snippet = snippet.replace("ScriptedAgent.demo()", agent)
    if url is not None:
        snippet = snippet.replace("AgentClient(server.url", f"AgentClient({url!r}")
    out = io.StringIO()
    names = {"__name__": "__docs__", "Respond": Respond, "Start": Start, "RunErrorEvent": RunErrorEvent,
             "TextMessageEndEvent": TextMessageEndEvent}
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(snippet, str(START / "script.md"), "exec"), names)
    except SystemExit as exc:
        return f"exit: {exc.code}"
    return out.getvalue()


def test_the_script_pages_store_keeps_the_thread_for_the_next_run_of_the_script(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)

    assert _script_with_a_store() == "success 9\n"  # (what the page's comment says it prints)
    assert _script_with_a_store() == "success 18\n"  # the second run went on with the stored thread
    with SqliteStore(str(tmp_path / "threads.db")) as store:
        assert store.thread_ids() == ["ticket-42"]


def test_the_script_pages_error_handling_says_what_happened_for_each_kind_of_failure(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)

    busy = _script_with_a_store('ScriptedAgent([Respond(status=503, body="busy")])')
    broken = _script_with_a_store('ScriptedAgent([[Start(), TextMessageEndEvent(message_id="m9")]])')
    failed = _script_with_a_store('ScriptedAgent([[Start(), RunErrorEvent(message="overloaded", code="busy")]])')
    unreachable = _script_with_a_store(url="http://127.0.0.1:9/")

    assert busy.startswith("exit: HTTP 503 ") and busy.endswith(": busy")
    assert broken.startswith("exit: the agent broke the protocol: ") and "TX-02" in broken
    assert failed.startswith("exit: run ") and failed.endswith("failed: overloaded (code 'busy')")
    assert unreachable.startswith("exit: could not reach http://127.0.0.1:9/")
    assert unreachable.endswith("(it never reached the agent: safe to retry)")


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
