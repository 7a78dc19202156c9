"""Ask an agent to do something, approve what it asks, and print the outcome (synchronous).

    python examples/script.py                 # against the bundled scripted demo agent
    python examples/script.py --url URL       # against any AG-UI endpoint

The whole interrupt life cycle in a dozen lines: ``thread.run()`` returns a ``RunResult``; when its
outcome is ``"interrupt"`` the thread holds the open interrupts, ``thread.resume_builder()`` answers
them (checked against each interrupt's ``responseSchema`` before anything is sent), and
``thread.run(resume=...)`` continues the run.
"""

from __future__ import annotations

import argparse
import json

import agui_client as ag
from agui_client.terminal import inert_name, inert_text  # the agent's words, safe to print


def converse(url: str, message: str) -> ag.RunResult:
    """Send ``message``, approve every interrupt, and return the last run's result."""
    with ag.AgentClient(url) as client:
        thread = client.thread()
        result = thread.run(message)
        print(f"agent: {inert_text(result.text)}")
        while result.outcome == "interrupt":
            resume = thread.resume_builder()
            for interrupt in result.interrupts:
                print(f"interrupt ({inert_name(interrupt.reason)}): {inert_text(interrupt.message or '')}")
                resume.answer(interrupt.id, {"approved": True})  # (the id as the agent wrote it)
                print(f"approved {inert_name(interrupt.id)}")
            result = thread.run(resume=resume)
            print(f"agent: {inert_text(result.text)}")
        print(f"done: {result.outcome}")
        print(f"state: {json.dumps(thread.state.state)}")
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="an AG-UI endpoint (default: start the bundled demo agent)")
    parser.add_argument("-m", "--message", default="Please delete the staging environment.")
    args = parser.parse_args()
    if args.url:
        converse(args.url, args.message)
        return
    from agui_client.testing import ScriptedAgent, serve

    with serve(ScriptedAgent.demo()) as server:
        converse(server.url, args.message)


if __name__ == "__main__":
    main()
