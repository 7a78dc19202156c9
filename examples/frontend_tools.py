"""Frontend tools: the agent calls a tool that runs here, in Python, and continues with its answer.

    python examples/frontend_tools.py              # against the bundled scripted agent
    python examples/frontend_tools.py --url URL    # against any AG-UI endpoint

``client.thread(tool_handlers={...})`` declares each handler to the agent as a tool (its name, its
docstring, parameters from its signature). ``thread.run_until_done()`` runs, answers the frontend
tool calls the run leaves pending by calling the handlers, and runs again until the agent is done.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import agui_client as ag
from agui_client.terminal import inert_text  # the agent's words, safe to print

TOOL = "confirm_choice"


def make_handler(choice: str) -> Callable[[str], str]:
    """A ``confirm_choice`` tool that always answers ``choice`` (a real app would ask its user)."""

    def confirm_choice(question: str) -> str:
        """Ask the person in front of the application to choose; returns their choice."""
        print(f"[{TOOL}] the agent asks: {inert_text(str(question))}")
        print(f"[{TOOL}] answering: {choice}")
        return choice

    return confirm_choice


def converse(url: str, message: str, choice: str) -> ag.RunResult:
    """Send ``message`` and let the tool handler answer the agent's frontend tool calls."""
    with ag.AgentClient(url) as client:
        thread = client.thread(tool_handlers={TOOL: make_handler(choice)})
        result = thread.run_until_done(message)
        print(f"agent: {inert_text(result.text)}")
        print(f"outcome: {result.outcome}")
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="an AG-UI endpoint (default: start the bundled scripted agent)")
    parser.add_argument("-m", "--message", default="Help me pick a colour for the new dashboard.")
    parser.add_argument("--choice", default="the blue one", help="what the tool answers")
    args = parser.parse_args()
    if args.url:
        converse(args.url, args.message, args.choice)
        return
    from agui_client.testing import ScriptedAgent, serve

    with serve(ScriptedAgent.frontend_tool(TOOL)) as server:
        converse(server.url, args.message, args.choice)


if __name__ == "__main__":
    main()
