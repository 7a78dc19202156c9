"""``agui probe``: the report as a table, JSON and JUnit XML, and the exit statuses, against a served agent.

In this process (``clikit.agui_here``), except a piped real process for a conforming agent and the
pseudo-terminal test of the table.
"""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pexpect
from clikit import AGUI, ENV, Ran, agui_here, agui_process

from agui_client.cli.probe import parse_answers
from agui_client.testing import ScriptedAgent

PROMPT = "Delete the temporary files"


def agui(*args: str) -> Ran:
    """Run ``agui ARGS`` in this process with stdin not a terminal (``clikit``: no interpreter start)."""
    return agui_here(*args)


def test_a_conforming_agent_exits_0_and_the_table_lists_every_check(served: Callable[[Any], Any]) -> None:
    endpoint = served(ScriptedAgent.approvals(2))

    done = agui_process("probe", endpoint.url, "--prompt", PROMPT)

    assert done.returncode == 0, done.stderr
    for check_id in ("stream-rules", "pause-as-success", "answers-proceed", "approval-result", "uncovered-resume"):
        assert check_id in done.stdout
    assert "defective inputs: off" in done.stdout
    assert "0 MUST check(s) failed, 0 warning(s)" in done.stdout
    assert len(endpoint.received) == 5


def test_a_must_failure_exits_1(served: Callable[[Any], Any]) -> None:
    endpoint = served(ScriptedAgent.approvals(1, faults=["succeed-uncovered"]))

    done = agui("probe", endpoint.url, "--prompt", PROMPT, "--defective")

    assert done.returncode == 1, done.stderr
    assert "1 MUST check(s) failed" in done.stdout
    assert "defective inputs: off" not in done.stdout


def test_warnings_exit_0_unless_strict(served: Callable[[Any], Any]) -> None:
    endpoint = served(ScriptedAgent.approvals(1, faults=["fail-unknown-entry"]))

    lenient = agui("probe", endpoint.url, "--prompt", PROMPT)
    strict = agui("probe", endpoint.url, "--prompt", PROMPT, "--strict")

    assert lenient.returncode == 0 and "2 warning(s)" in lenient.stdout
    assert strict.returncode == 1 and "(--strict: warnings fail)" in strict.stdout


def test_a_prompt_that_raises_no_interrupt_says_the_interrupt_rules_were_not_judged(
        served: Callable[[Any], Any]) -> None:
    endpoint = served(ScriptedAgent.chat("Done, nothing to ask."))

    done = agui("probe", endpoint.url, "--prompt", PROMPT)

    assert done.returncode == 0, done.stderr  # (the agent broke no rule)
    assert done.stdout.rstrip().endswith(
        "0 MUST check(s) failed, 0 warning(s); the prompt raised no interrupt, so the interrupt rules were not "
        "judged (give --prompt one that makes the agent stop to ask)")


def test_json_prints_the_report_on_stdout_and_junit_writes_the_file(served: Callable[[Any], Any],
                                                                    tmp_path: Path) -> None:
    endpoint = served(ScriptedAgent.approvals(2, faults=["last-entry-only"]))
    junit = tmp_path / "probe.xml"

    done = agui("probe", endpoint.url, "--prompt", PROMPT, "--json", "--junit", str(junit))

    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert {c["id"]: c["verdict"] for c in report["checks"]}["approval-result"] == "warn"
    assert "defective inputs: off" in done.stderr  # people's notes go to stderr in JSON mode
    suite = ET.parse(junit).getroot()
    assert suite.get("failures") == "0"
    warned = [case for case in suite if case.get("name") == "approval-result [heuristic]"]
    assert "warning: an approved action was not performed" in (warned[0].findtext("system-out") or "")


def test_answer_options_reach_the_resume(served: Callable[[Any], Any]) -> None:
    endpoint = served(ScriptedAgent.interrupts(2))

    done = agui("probe", endpoint.url, "--prompt", PROMPT, "--answer", 'interrupt-2={"answer": "two"}',
                "--answer", '{"answer": "any"}')

    assert done.returncode == 0, done.stderr
    assert [e["payload"] for e in endpoint.received[1].body["resume"]] == [{"answer": "any"}, {"answer": "two"}]


def test_usage_errors_exit_2(served: Callable[[Any], Any], tmp_path: Path) -> None:
    endpoint = served(ScriptedAgent.approvals(1))

    no_prompt = agui("probe", endpoint.url)
    bad_answer = agui("probe", endpoint.url, "--prompt", PROMPT, "--answer", "x=not json")
    refused = agui("probe", endpoint.url, "--prompt", PROMPT, "--answer", '{"approved": "yes"}')
    unreachable = agui("probe", "http://127.0.0.1:9/", "--prompt", PROMPT)
    unwritable = agui("probe", endpoint.url, "--prompt", PROMPT, "--junit", str(tmp_path / "no" / "such.xml"))

    assert [r.returncode for r in (no_prompt, bad_answer, refused, unreachable, unwritable)] == [2, 2, 2, 2, 2]
    assert "--answer for 'x' is not JSON" in bad_answer.stderr
    assert "an answer given is refused" in refused.stderr
    assert "could not be reached" in unreachable.stderr
    assert "cannot write" in unwritable.stderr


def test_the_table_on_a_terminal_shows_agent_text_inert(served: Callable[[Any], Any]) -> None:
    # An interrupt id with an escape sequence: the rich table on a real terminal shows it escaped.
    from agui_client.testing import Finish, Start
    from agui_client.types import Interrupt, RunFinishedInterruptOutcome

    interrupt = Interrupt(id="q\x1b[2J", reason="input", expires_at="never\x1b]0;pwned\x07")
    agent = ScriptedAgent([[Start(), Finish(outcome=RunFinishedInterruptOutcome(interrupts=(interrupt,)))],
                           [Start(), Finish()]], cycle=True)
    endpoint = served(agent)

    child = pexpect.spawn(AGUI[0], [*AGUI[1:], "probe", endpoint.url, "--prompt", PROMPT], env=ENV,
                          encoding="utf-8", timeout=60, dimensions=(60, 200))
    child.logfile_read = seen = io.StringIO()
    child.expect("expires-at")
    child.expect(r"MUST check\(s\) failed")
    child.expect(pexpect.EOF)
    child.close()

    shown = seen.getvalue()
    assert child.exitstatus == 0  # (an unreadable expiresAt is a warning)
    assert "\x1b]0;" not in shown and "\x1b[2J" not in shown and "\x07" not in shown
    assert "\\x1b]0;pwned\\x07" in shown and "q\\x1b[2J" in shown


def test_a_refused_first_request_exits_2_naming_the_status_with_the_credential_redacted(
        served: Callable[[Any], Any], tmp_path: Path) -> None:
    # A wrong token once made every check n/a and the probe exit 0: a pass in CI for an agent never judged.
    async def refusing(scope: dict[str, Any], receive: Any, send: Any) -> None:
        token = dict(scope["headers"]).get(b"authorization", b"").decode()
        await send({"type": "http.response.start", "status": 401,
                    "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": json.dumps({"error": f"bad token {token}"}).encode()})

    endpoint = served(refusing)
    junit = tmp_path / "probe.xml"

    done = agui("probe", endpoint.url, "--prompt", PROMPT, "-H", "Authorization: Bearer s3cret-value",
                "--junit", str(junit), "--json")

    assert done.returncode == 2, done.stderr
    assert "the target refused the plan's first request, the plain prompt (HTTP 401" in done.stderr
    assert "bad token" in done.stderr and "s3cret-value" not in done.stderr + done.stdout
    assert done.stdout == "" and not junit.exists()  # no report: nothing was judged


def test_thread_prefix_sets_the_thread_ids_sent(served: Callable[[Any], Any]) -> None:
    import uuid

    endpoint = served(ScriptedAgent.approvals(1))

    bare = agui("probe", endpoint.url, "--prompt", PROMPT, "--thread-prefix", "")
    named = agui("probe", endpoint.url, "--prompt", PROMPT, "--thread-prefix", "ci-42-")

    assert bare.returncode == 0 and named.returncode == 0, bare.stderr + named.stderr
    sent = [request.body["threadId"] for request in endpoint.received]
    assert len(sent) == 10
    assert all(str(uuid.UUID(thread)) == thread for thread in sent[:5])
    assert all(thread.startswith("ci-42-") and uuid.UUID(thread[len("ci-42-"):]) for thread in sent[5:])


def test_line_ends_and_separators_in_the_agents_words_are_shown_escaped_as_the_other_commands_show_them(
        served: Callable[[Any], Any]) -> None:
    # The probe quoted the agent's words split on whitespace and joined with spaces: a CR, U+2028,
    # U+2029 or NEL read as a space, where run, replay and verify show each as its escape.
    from agui_client.testing import Start
    from agui_client.types import RunErrorEvent

    said = "one\rtwo\u2028three\u2029four\u0085five\nsix"
    endpoint = served(ScriptedAgent([[Start(), RunErrorEvent(message=said, code="c\rd")]], cycle=True))

    done = agui("probe", endpoint.url, "--prompt", PROMPT)
    as_json = agui("probe", endpoint.url, "--prompt", PROMPT, "--json")

    assert done.returncode == 0 and as_json.returncode == 0, done.stderr + as_json.stderr
    shown = "one\\rtwo\\u2028three\\u2029four\\x85five\\nsix (code c\\rd)"
    assert f"  ask: error - {shown}\n" in done.stdout
    assert f"fresh-resume #2: RUN_ERROR: {shown}" in done.stdout  # (the table's evidence)
    for char in "\r\u2028\u2029\u0085":
        assert char not in done.stdout
    # (the report as data keeps each separator, as JSON escapes it; line ends are written as the table wrote them)
    report = json.loads(as_json.stdout)
    assert {run["detail"] for run in report["runs"]} == {"one\\rtwo\u2028three\u2029four\u0085five\\nsix (code c\\rd)"}


def test_an_answer_names_an_interrupt_id_holding_an_equals_sign_as_a_json_string() -> None:
    # (the probe reads --answer values as agui run does: docs/cli.md)
    assert parse_answers(['"a=b"={"ok": true}', 'c=[1]', '{"any": 1}']) == {
        "a=b": {"ok": True}, "c": [1], "*": {"any": 1}}
