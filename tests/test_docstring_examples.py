"""The examples in the public classes' docstrings run as written, against the bundled ScriptedAgent.

Each ``Example::`` block is run with the names it assumes bound: ``url`` (a served agent), ``client``
(an ``AgentClient`` on it), ``thread`` (a new thread of that client), ``run_input`` and ``httpx``.
``help(AgentClient)`` must also show how to come back to a thread (``thread.id``) and where it is kept
(``client.store``).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import io
import pydoc
import re
import textwrap
import typing
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

import agui_client as ag
from agui_client.testing import Respond, ScriptedAgent, serve

#: Each documented object, the agent its examples talk to, and the examples left out (with why).
DOCUMENTED: list[tuple[str, Any, Any]] = [
    ("AgentClient", ag.AgentClient, ScriptedAgent.chat),
    ("AgentClient.open", ag.AgentClient.open, ScriptedAgent.chat),
    ("AsyncAgentClient", ag.AsyncAgentClient, ScriptedAgent.chat),
    ("AsyncAgentClient.open", ag.AsyncAgentClient.open, ScriptedAgent.chat),
    ("Thread", ag.Thread, ScriptedAgent.chat),
    ("AsyncThread", ag.AsyncThread, ScriptedAgent.chat),
    ("RunStream", ag.RunStream, ScriptedAgent.chat),
    ("AsyncRunStream", ag.AsyncRunStream, ScriptedAgent.chat),
    ("LoopStream", ag.LoopStream, lambda: ScriptedAgent.frontend_tool("confirm_choice")),
    ("AsyncLoopStream", ag.AsyncLoopStream, lambda: ScriptedAgent.frontend_tool("confirm_choice")),
    ("Thread.stream_until_done", ag.Thread.stream_until_done, lambda: ScriptedAgent.frontend_tool("confirm_choice")),
    ("AsyncThread.stream_until_done", ag.AsyncThread.stream_until_done,
     lambda: ScriptedAgent.frontend_tool("confirm_choice")),
    ("RunResult", ag.RunResult, ScriptedAgent.chat),
    ("ResumeBuilder", ag.ResumeBuilder, lambda: ScriptedAgent.interrupts(1)),
    ("HTTPStatusError", ag.HTTPStatusError, lambda: ScriptedAgent([Respond(status=503, body="busy")], cycle=True)),
    ("Telemetry", ag.Telemetry, ScriptedAgent.chat),
    ("ScriptedAgent", ScriptedAgent, ScriptedAgent.chat),
    ("serve", serve, ScriptedAgent.chat),
    ("replay", ag.replay, ScriptedAgent.chat),
    ("encode", ag.encode, ScriptedAgent.chat),
]
#: Blocks that are fragments by design (names from the surrounding prose).
FRAGMENTS = ("Example (unbound, checked by hand)::",)


def examples(obj: Any) -> list[str]:
    doc = inspect.getdoc(obj) or ""
    found = []
    for match in re.finditer(r"^(Example[^\n]*::)\n\n((?:    .*\n|\n)+)", doc + "\n", flags=re.M):
        if match.group(1) not in FRAGMENTS:
            found.append(textwrap.dedent(match.group(2)))
    return found


@pytest.fixture
def agent_url() -> Iterator[Any]:
    servers: list[Any] = []

    def start(agent: Any) -> str:
        server = serve(agent)
        servers.append(server)
        return str(server.url)

    yield start
    for server in servers:
        server.stop()


@pytest.mark.parametrize(("name", "obj", "agent"), DOCUMENTED, ids=[d[0] for d in DOCUMENTED])
def test_the_docstring_examples_run(name: str, obj: Any, agent: Any, agent_url: Any) -> None:
    blocks = examples(obj)
    assert blocks, f"{name} has an example"
    url = agent_url(agent())
    run_input = ag.RunAgentInput(thread_id="t-1", run_id="r-1", messages=(ag.UserMessage(id="m-1", content="hi"),))
    for block in blocks:
        out = io.StringIO()
        with ag.AgentClient(url) as client, contextlib.redirect_stdout(out):
            names = {"url": url, "client": client, "thread": client.thread(), "run_input": run_input, "httpx": httpx,
                     "ResumeBuilder": ag.ResumeBuilder, "__name__": "__example__"}
            if "async with" in block and "asyncio.run" not in block:
                asyncio.run(_in_async_client(block, names))
            else:
                exec(compile(block, name, "exec"), names)
        assert out.getvalue().strip(), f"{name}'s example prints what it shows"


async def _in_async_client(block: str, names: dict[str, Any]) -> None:
    source = "async def _example(client):\n" + textwrap.indent(block, "    ")
    exec(compile(source, "example", "exec"), names)
    async with ag.AsyncAgentClient(names["url"]) as client:
        await names["_example"](client)


def test_help_of_agent_client_shows_an_example_the_thread_id_and_the_store() -> None:
    text = pydoc.plain(pydoc.render_doc(ag.AgentClient))

    assert "Example::" in text and "thread.id" in text and "client.store" in text


def test_open_is_annotated_as_the_context_manager_it_is() -> None:
    sync_hints = typing.get_type_hints(ag.AgentClient.open)
    async_hints = typing.get_type_hints(ag.AsyncAgentClient.open)

    assert typing.get_origin(sync_hints["return"]) is contextlib.AbstractContextManager
    assert typing.get_origin(async_hints["return"]) is contextlib.AbstractAsyncContextManager
    assert typing.get_args(sync_hints["return"])[0] == Iterator[str | bytes]


@pytest.mark.parametrize("obj", [ScriptedAgent, serve, ag.replay, ag.encode], ids=lambda o: o.__name__)
def test_what_these_examples_say_they_print_is_what_they_print(obj: Any) -> None:
    (block,) = examples(obj)
    # The comment after the example's last print (or on the line below it) is what it prints.
    said = re.findall(r"^ *print\(.*?# (.*)$|^ *# (.*)$", block, flags=re.M)[-1]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, obj.__name__, "exec"), {"__name__": "__example__"})

    expected = (said[0] or said[1]).split(" (")[0]  # (what follows in parentheses is a remark)
    assert out.getvalue().splitlines()[-1] == expected
