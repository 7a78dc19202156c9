"""What a person gives ``agui`` at its edges: option values and answers typed at a prompt.

JSON nested deeper than Python's reader goes (``--state``, ``--answer``, ``agui probe --answer``, a
JSON answer at a prompt) ended the command with a ``RecursionError`` traceback; ``NaN``, ``Infinity``
and ``1e999`` were read as numbers and refused later, one of them after the request had been made
(exit 1, not a usage problem); ``--idle-timeout 1e308`` ended the first read with an
``OverflowError`` traceback. Each test fails without its fix (CHANGELOG, "Twenty-first round").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from clikit import agui_here

from agui_client.testing import Finish, ScriptedAgent, Start, text_message
from agui_client.types.run import Interrupt, RunFinishedInterruptOutcome

#: JSON nested well past the depth at which ``json.loads`` runs out of stack.
DEEP = "[" * 5000 + "]" * 5000


@pytest.mark.parametrize(("option", "value"), [
    ("--state", DEEP), ("--answer", DEEP), ("--answer", f"interrupt-1={DEEP}"),
    ("--state", '{"a": NaN}'), ("--state", '{"a": 1e999}'), ("--answer", "Infinity"),
])
def test_json_given_in_an_option_that_no_agent_could_be_sent_is_a_usage_problem(
        served: Callable[[Any], Any], option: str, value: str) -> None:
    endpoint = served(ScriptedAgent.interrupts(1))

    ran = agui_here("run", endpoint.url, "-m", "hi", option, value)

    assert ran.returncode == 2, ran.stderr
    assert ran.stderr.startswith(f"agui run: {option}")
    assert "is not JSON: " in ran.stderr and "Traceback" not in ran.stderr
    assert endpoint.agent.request_count == 0  # (refused before anything was sent)


def test_a_probe_answer_nested_too_deep_is_a_usage_problem(served: Callable[[Any], Any]) -> None:
    endpoint = served(ScriptedAgent.interrupts(1))

    ran = agui_here("probe", endpoint.url, "--prompt", "hi", "--answer", f"interrupt-1={DEEP}")

    assert ran.returncode == 2
    assert ran.stderr.startswith("agui probe: --answer for 'interrupt-1' is not JSON: nested deeper")
    assert endpoint.agent.request_count == 0


def _asking_for_details() -> ScriptedAgent:
    schema = {"type": "object", "required": ["details"], "properties": {"details": {"type": "object"}}}
    return ScriptedAgent([
        [Start(), Finish(outcome=RunFinishedInterruptOutcome(interrupts=(
            Interrupt(id="i1", reason="input", response_schema=schema),)))],
        [Start(), *text_message("m2", "done"), Finish()],
    ])


@pytest.mark.parametrize("pasted", [DEEP, '{"n": NaN}', '{"n": 1e400}'], ids=["deep", "nan", "overflow"])
def test_an_answer_at_a_json_prompt_that_is_not_json_is_asked_again(served: Callable[[Any], Any],
                                                                    pasted: str) -> None:
    endpoint = served(_asking_for_details())

    ran = agui_here("run", endpoint.url, "-m", "hi", "--ask", stdin=f"{pasted}\n{{\"n\": 1}}\n")

    assert ran.returncode == 0, ran.stderr
    assert "not JSON: " in ran.stderr and "Traceback" not in ran.stderr
    assert endpoint.received[1].body["resume"][0]["payload"] == {"details": {"n": 1}}


@pytest.mark.parametrize("option", ["--timeout", "--idle-timeout"])
@pytest.mark.parametrize("value", ["1e308", "1e10"])
def test_a_timeout_past_what_a_clock_holds_is_a_usage_problem(served: Callable[[Any], Any], option: str,
                                                             value: str) -> None:
    endpoint = served(ScriptedAgent.interrupts(1))

    ran = agui_here("run", endpoint.url, "-m", "hi", "--yes", option, value)

    assert ran.returncode == 2
    assert f"argument {option}: '{value}': give at most 1,000,000,000 seconds" in ran.stderr
    assert endpoint.agent.request_count == 0


def test_the_longest_timeout_taken_still_runs(served: Callable[[Any], Any]) -> None:
    endpoint = served(ScriptedAgent.interrupts(1))

    ran = agui_here("run", endpoint.url, "-m", "hi", "--answer", '{"answer": "a"}',
                    "--timeout", "1e9", "--idle-timeout", "1e9")

    assert ran.returncode == 0, ran.stderr
    assert endpoint.agent.request_count == 2
