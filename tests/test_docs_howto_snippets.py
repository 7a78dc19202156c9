"""The how-to and concept pages' Python runs as written, with the names their prose leaves to the reader bound.

The README and the getting-started pages are complete programs (tests/test_readme.py,
tests/test_docs_start_pages.py); the how-to pages hold fragments that use a ``thread``, an
``interrupt``, an agent ``url`` or a ``token`` the text has just introduced. Here each fragment runs
against a ScriptedAgent on 127.0.0.1 with those names bound, and shows what the page says it shows.

Left out, with why: docs/opentelemetry.md (it needs an OTLP exporter package and sets the process's
global tracer provider), docs/probe.md (it imports the reader's own agent), docs/stores.md (run
against PostgreSQL in tests/stores/test_store_postgres.py), docs/codes.md (tests/test_codes.py).
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import agui_client as ag
from agui_client.testing import Respond, ScriptedAgent, serve

DOCS = Path(__file__).parent.parent / "docs"
LEGACY = Path(__file__).parent / "data" / "legacy"


def snippets(page: str) -> list[str]:
    """The page's ```python blocks, in order."""
    return re.findall(r"```python\n(.*?)```", (DOCS / page).read_text(encoding="utf-8"), flags=re.S)


def run(page: str, snippet: str, **names: Any) -> str:
    """Run ``snippet`` with ``names`` bound; what it printed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(snippet, str(DOCS / page), "exec"), {"__name__": "__docs__", **names})
    return out.getvalue()


def test_the_streaming_page_prints_the_text_reports_tr_16_and_refuses_an_early_result_and_a_second_entry(
) -> None:
    streamed, _, left_early, too_early, reentered = snippets("streaming.md")
    agent = ScriptedAgent.demo()
    with serve(agent) as server, ag.AgentClient(server.url) as client:
        names: dict[str, Any] = {"thread": client.thread()}
        printed = run("streaming.md", streamed, **names)
        assert "I need your approval before I delete it." in printed
        assert names["thread"].open_interrupts  # (the run ended: its interrupt is held)

        assert run("streaming.md", left_early, thread=client.thread()) == "None ['TR-16']\n"

        with pytest.raises(ag.StreamNotFinished) as refused:
            run("streaming.md", too_early, thread=client.thread())
        assert "the stream has not ended" in str(refused.value)

        with pytest.raises(ag.StreamMisused) as misused:
            run("streaming.md", reentered, thread=client.thread())
        assert misused.value.code == "STREAM-REENTERED"
        assert agent.request_count == 4  # (the block entered again sent nothing)


def test_the_streaming_pages_tool_loop_prints_every_runs_text_and_each_runs_id() -> None:
    loop = snippets("streaming.md")[1]
    agent = ScriptedAgent.frontend_tool("confirm_choice")
    with serve(agent) as server, ag.AgentClient(server.url) as client:
        thread = client.thread(tool_handlers={"confirm_choice": lambda question: "two at eight"})
        printed = run("streaming.md", loop, thread=thread).splitlines()

    assert printed == ["I need your input: let me ask confirm_choice in your app.",  # (each answer on its own line)
                       "Thanks! confirm_choice answered: two at eight",
                       "success", str([r.run_id for r in agent.requests])]
    assert len(agent.requests) == 2


def test_the_answers_page_check_answer_names_the_field_and_why() -> None:
    (snippet,) = snippets("answers.md")
    with serve(ScriptedAgent.demo()) as server, ag.AgentClient(server.url) as client:
        interrupt = client.thread().run("Delete the staging database").interrupts[0]

    assert run("answers.md", snippet, interrupt=interrupt) == "/ttl_minutes -5 is less than the minimum of 0\n"


def test_the_httpx_errors_page_catches_a_status_and_an_unreachable_agent_as_httpx_errors(
        served: Callable[[Any], Any]) -> None:
    (snippet,) = snippets("errors-httpx.md")
    busy = served(ScriptedAgent([Respond(status=503, body="busy", headers={"Retry-After": "7"})]))

    printed = run("errors-httpx.md", snippet, url=busy.url, token="s3cret-t0ken")

    assert printed == "503 busy 7\n"
    assert busy.received[0].headers["authorization"] == "Bearer s3cret-t0ken"

    printed = run("errors-httpx.md", snippet, url="http://127.0.0.1:9/agent", token="s3cret-t0ken")
    assert printed.startswith("unreachable: could not reach http://127.0.0.1:9/agent")


def test_the_recordings_page_records_a_conversation_then_its_test_passes_offline(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record, replay = snippets("recordings.md")
    monkeypatch.chdir(tmp_path)  # (the page records into tests/recordings/delete-staging, relative)
    agent = ScriptedAgent.demo()
    with serve(agent) as server:
        run("recordings.md", record, url=server.url)
    assert agent.request_count == 2
    assert sorted(p.name for p in (tmp_path / "tests" / "recordings" / "delete-staging").iterdir())[:3] == [
        "01.request.json", "01.response.json", "01.sse"]

    names: dict[str, Any] = {"__name__": "__docs__"}
    exec(compile(replay, str(DOCS / "recordings.md"), "exec"), names)
    names["test_the_approval_flow_offline"]()  # (passes against the recording, the agent gone)


def test_the_legacy_page_answers_a_langgraph_question_through_the_bridge() -> None:
    (snippet,) = snippets("legacy-interrupts.md")

    def recorded(n: int) -> Any:
        def answer(run_input: ag.RunAgentInput) -> bytes:
            text = (LEGACY / f"approved-{n}.sse").read_text(encoding="utf-8")
            first = json.loads(text.split("\n", 1)[0][len("data:"):])
            return text.replace(first["threadId"], run_input.thread_id).replace(
                first["runId"], run_input.run_id).encode()
        return answer

    producer = ScriptedAgent([recorded(1), recorded(2)], stateless=True)  # (what ag-ui-langgraph sent)
    with serve(producer) as server:
        run("legacy-interrupts.md", snippet, url=server.url)

    resumed = producer.requests[1]
    assert resumed.resume is None  # (never also as a resume list)
    assert resumed.forwarded_props["command"]["resume"] == {"approved": True}


def test_the_ag_ui_page_round_trips_an_event_through_the_official_models() -> None:
    (snippet,) = snippets("ag-ui-interop.md")

    printed = run("ag-ui-interop.md", snippet)

    assert printed == 'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"Hello"}\n\n'


def test_the_threads_and_runs_page_folds_a_run_through_a_session_of_its_own() -> None:
    (snippet,) = snippets("concepts/threads-and-runs.md")

    printed = run("concepts/threads-and-runs.md", snippet)

    assert printed.splitlines() == ["RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
                                    "RUN_FINISHED", "success Hello! ['user', 'assistant']"]
