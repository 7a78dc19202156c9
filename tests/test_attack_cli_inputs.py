"""What a person gives ``agui`` at its edges: option values, answers typed at a prompt, a file to read.

JSON nested deeper than Python's reader goes (``--state``, ``--answer``, ``agui probe --answer``, a
JSON answer at a prompt) ended the command with a ``RecursionError`` traceback; ``NaN``, ``Infinity``
and ``1e999`` were read as numbers and refused later, one of them after the request had been made
(exit 1, not a usage problem); ``--idle-timeout 1e308`` ended the first read with an
``OverflowError`` traceback. Once piped answers had run out, a default the interrupt's own schema
refuses was taken, refused and taken again without end. A recording named on the command line that was a link to
``/dev/urandom`` was read without end, and a FIFO nobody wrote to held the command at its open.
Each test fails without its fix (CHANGELOG, "Twenty-first round").
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from clikit import Ran, agui_each_in_one_process, agui_here, agui_process

from agui_client.testing import Finish, ScriptedAgent, Start, serve, text_message
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


#: A field whose default its own schema refuses, and the words of the refusal.
REFUSED_DEFAULTS = {
    "below-minimum": ({"type": "integer", "minimum": 10, "default": 5}, "n: 5 is less than the minimum of 10"),
    "pattern": ({"type": "string", "pattern": "^a+$", "default": "bbb"}, "n: 'bbb' does not match '^a+$'"),
    "not-a-number": ({"type": "integer", "default": "many"}, "n must be an integer"),
    "json": ({"type": "object", "required": ["x"], "default": {}}, "n: 'x' is a required property"),
}


@pytest.fixture(scope="module")
def refused_defaults() -> Iterator[dict[tuple[str, str], tuple[Ran, ScriptedAgent]]]:
    """``agui run --ask`` and ``agui chat`` of an agent asking for each refused default, answers piped in
    and run out: all eight in one process of their own (a command that asked again without end holds
    that process, not this one), not a process each. By (command, field): what it left, and its agent."""
    with contextlib.ExitStack() as stack:
        asked: list[tuple[tuple[str, str], ScriptedAgent, tuple[tuple[str, ...], str]]] = []
        for command in ("run", "chat"):
            for name, (field, _refused) in REFUSED_DEFAULTS.items():
                schema = {"type": "object", "properties": {"n": field}}
                agent = ScriptedAgent([
                    [Start(), Finish(outcome=RunFinishedInterruptOutcome(interrupts=(
                        Interrupt(id="i1", reason="input", response_schema=schema),)))],
                    [Start(), *text_message("m2", "done"), Finish()],
                ])
                url = stack.enter_context(serve(agent)).url
                args = ("run", url, "-m", "hi", "--ask") if command == "run" else ("chat", url)
                asked.append(((command, name), agent, (args, "" if command == "run" else "hi\n")))
        left = agui_each_in_one_process([call for _key, _agent, call in asked], timeout=90)
        yield {key: (done, agent) for (key, agent, _call), done in zip(asked, left, strict=True)}


@pytest.mark.parametrize("name", list(REFUSED_DEFAULTS))
@pytest.mark.parametrize("command", ["run", "chat"])
def test_a_default_the_schema_refuses_ends_the_questions_once_piped_answers_ran_out(
        refused_defaults: dict[tuple[str, str], tuple[Ran, ScriptedAgent]], name: str, command: str) -> None:
    # The default was taken, refused, and taken again without end (writing both lines each time).
    done, agent = refused_defaults[command, name]
    refused = REFUSED_DEFAULTS[name][1]

    said = done.stdout + done.stderr
    assert done.returncode == (130 if command == "run" else 0), said
    assert said.count(refused) == 1
    assert agent.request_count == 1  # (the answer was never sent)


_TOO_LONG = "give at most 1,000,000,000 seconds"
_TOO_SHORT = "give at least 0.001 seconds (1 ms: the shortest wait a socket can keep)"


@pytest.mark.parametrize("option", ["--timeout", "--idle-timeout"])
@pytest.mark.parametrize(("value", "advice"), [("1e308", _TOO_LONG), ("1e10", _TOO_LONG),
                                               ("1e-320", _TOO_SHORT), ("0.0009", _TOO_SHORT)])
def test_a_timeout_outside_what_a_socket_can_wait_is_a_usage_problem(served: Callable[[Any], Any], option: str,
                                                                     value: str, advice: str) -> None:
    # (1e308 ended the first read with an OverflowError traceback; 1e-320 was taken and the run ended in
    # a ConnectError, "operation now in progress", naming no option)
    endpoint = served(ScriptedAgent.interrupts(1))

    ran = agui_here("run", endpoint.url, "-m", "hi", "--yes", option, value)

    assert ran.returncode == 2
    assert f"argument {option}: '{value}': {advice}" in ran.stderr
    assert endpoint.agent.request_count == 0


def test_the_longest_timeout_taken_still_runs(served: Callable[[Any], Any]) -> None:
    endpoint = served(ScriptedAgent.interrupts(1))

    ran = agui_here("run", endpoint.url, "-m", "hi", "--answer", '{"answer": "a"}',
                    "--timeout", "1e9", "--idle-timeout", "1e9")

    assert ran.returncode == 0, ran.stderr
    assert endpoint.agent.request_count == 2


# --------------------------------------------------------------------------------------------------
# a recording named on the command line that is no file
# --------------------------------------------------------------------------------------------------

_RUN = (b'data: {"type":"RUN_STARTED","threadId":"t1","runId":"r1"}\n\n'
        b'data: {"type":"RUN_FINISHED","threadId":"t1","runId":"r1"}\n\n')


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs and /dev/urandom are POSIX")
@pytest.mark.parametrize("command", ["replay", "verify"])
@pytest.mark.parametrize("hostile", ["link-to-urandom", "fifo-nobody-writes"])
def test_a_named_recording_that_is_a_device_or_a_silent_fifo_ends_as_unreadable(
        tmp_path: Path, command: str, hostile: str) -> None:
    # (a link to /dev/urandom was read without end; a FIFO's open waited for a writer without end)
    named = tmp_path / "rec.sse"
    if hostile == "link-to-urandom":
        named.symlink_to("/dev/urandom")
    else:
        os.mkfifo(named)

    done = agui_process(command, str(named), stdin="")

    assert done.returncode == 2
    said = done.stderr.strip()
    if hostile == "link-to-urandom":
        assert said == f"agui {command}: cannot read {named}: a device, not a recording (for standard input, give -)"
    else:
        assert said == f"agui {command}: no AG-UI events found (expected an SSE capture or JSON lines)"


@pytest.mark.skipif(not os.path.isdir("/dev/fd"), reason="names a pipe as /dev/fd/N, as a shell's <(...) does")
def test_a_pipe_named_on_the_command_line_is_read_until_its_writer_is_done(tmp_path: Path) -> None:
    # As `agui replay <(gunzip -c rec.sse.gz)`: the pipe is opened without blocking and read blocking.
    reader, writer = os.pipe()
    feeding = threading.Thread(target=lambda: (os.write(writer, _RUN[:40]), os.write(writer, _RUN[40:]),
                                               os.close(writer)))
    try:
        feeding.start()
        done = agui_process("replay", "--json", f"/dev/fd/{reader}", stdin="", pass_fds=(reader,))
    finally:
        feeding.join()
        os.close(reader)

    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["outcome"] == "success"
