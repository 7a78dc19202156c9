"""A small terminal chat on the public API: tokens as they arrive, interrupts answered in a form.

    python examples/chat_tui.py                                  # chat with the bundled scripted demo agent
    python examples/chat_tui.py --url URL                        # chat with any AG-UI endpoint
    python examples/chat_tui.py --once "Delete staging" --yes    # one turn, no questions (scripts, CI)

Type /quit (or Ctrl-D) to leave. When the agent stops to ask, each property of the interrupt's
``responseSchema`` is one question; the whole answer is checked against the schema before it is
sent, and asked again when the schema refuses it, so a wrong answer never ends the chat.

For the full terminal chat (Markdown, tables, /export, Ctrl-C to cancel a turn) run ``agui chat``.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import agui_client as ag
from agui_client.terminal import InertDeltas, inert_name, inert_text

_SKIP = object()

# Everything the agent sends is shown through agui_client.terminal: what a terminal would obey or a
# reader cannot see (an escape sequence, a bare CR, a bidi override, a zero-width character) is written
# as its escape (\x1b), while emoji and every script read as they should.


def stream_run(thread: ag.Thread, message: str | None, resume: ag.ResumeBuilder | None = None) -> ag.RunResult:
    """Stream one run, printing text as it arrives."""
    deltas = InertDeltas()  # (one message's deltas: an emoji cut between two of them still reads whole)
    with thread.stream(message, resume=resume) as events:
        for event in events:
            match event:
                case ag.TextMessageStartEvent():
                    deltas = InertDeltas()
                    print("agent: ", end="", flush=True)
                case ag.TextMessageContentEvent(delta=delta):
                    print(deltas.feed(delta), end="", flush=True)
                case ag.TextMessageEndEvent():
                    print(deltas.end())
                case ag.ToolCallStartEvent(tool_call_name=name):
                    print(f"[tool] {inert_name(name)}")
                case ag.RunErrorEvent(message=error):
                    print(f"[run failed] {inert_text(error)}")
    return events.result  # (a RunResult: the stream was read to its end)


def ask_field(name: str, prop: dict[str, Any], required: bool) -> Any:
    """One property: typed text read as the schema's type; Enter takes the default."""
    hint = f" {prop['enum']}" if "enum" in prop else (" [y/n]" if prop.get("type") == "boolean" else "")
    if "default" in prop:
        hint += f" (default {prop['default']})"
    while True:
        text = input(f"{inert_name(name)}{inert_text(hint)}: ").strip()
        if not text:
            if "default" in prop:
                return prop["default"]
            if not required:
                return _SKIP
            print(f"  {inert_name(name)} is required")
        elif prop.get("type") == "boolean":
            if text.lower() in ("y", "yes", "n", "no"):
                return text.lower().startswith("y")
            print("  please answer y or n")
        elif prop.get("type") in ("integer", "number"):
            try:
                return int(text) if prop["type"] == "integer" else float(text)
            except ValueError:
                print(f"  {inert_name(name)} must be a {inert_name(str(prop['type']))}")
        else:
            return text


def ask_answer(interrupt: ag.Interrupt) -> Any:
    """Ask until the interrupt's schema accepts the answer."""
    schema = interrupt.response_schema or {}
    properties = schema.get("properties") or {}
    while True:
        if properties:
            answer = {}
            for name, prop in properties.items():
                value = ask_field(name, prop, name in (schema.get("required") or ()))
                if value is not _SKIP:
                    answer[name] = value
        else:
            try:
                answer = json.loads(input("answer (JSON): ") or '{"approved": true}')
            except ValueError as exc:
                print(f"  not JSON: {exc}")
                continue
        problems = ag.check_answer(interrupt, answer)  # the check a resume runs; nothing recorded or sent
        for problem in problems:
            print(f"  not accepted: at {inert_name(problem.pointer or '/')}: {inert_text(problem.message)}")
        if not problems:
            return answer


def default_answer(schema: dict[str, Any] | None) -> dict[str, Any]:
    """What ``--yes`` says: every default, and ``approved: true``."""
    answer: dict[str, Any] = {"approved": True}
    for name, prop in ((schema or {}).get("properties") or {}).items():
        if "default" in prop:
            answer[name] = prop["default"]
    return answer


def chat_turn(thread: ag.Thread, message: str, *, yes: bool) -> ag.RunResult:
    """Send one message; answer the interrupts it raises until the agent is done."""
    result = stream_run(thread, message)
    while result.outcome == "interrupt":
        resume = thread.resume_builder()
        for interrupt in result.interrupts:
            print(f"the agent asks ({inert_name(interrupt.reason)}): {inert_text(interrupt.message or '')}")
            answer = default_answer(interrupt.response_schema) if yes else ask_answer(interrupt)
            print(f"answer: {json.dumps(answer)}")
            resume.answer(interrupt.id, answer)
        result = stream_run(thread, None, resume=resume)
    return result


def chat(url: str, *, once: str | None, yes: bool) -> None:
    """The chat loop (or a single turn with ``once``)."""
    with ag.AgentClient(url) as client:
        thread = client.thread()
        print(f"thread {thread.id} with {url} - /quit to leave")
        while True:
            message = once if once is not None else input("you: ").strip()
            if message in ("/quit", "/exit"):
                break
            if message:
                result = chat_turn(thread, message, yes=yes)
                print(f"({result.outcome}; {result.total_usage.total_tokens or 0} tokens)")
            if once is not None:
                break
        print(f"state: {json.dumps(thread.state.state)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="an AG-UI endpoint (default: start the bundled demo agent)")
    parser.add_argument("--once", metavar="TEXT", help="send TEXT, show the answer, and exit")
    parser.add_argument("--yes", action="store_true", help="answer interrupts with their defaults, approved")
    args = parser.parse_args()
    try:
        if args.url:
            chat(args.url, once=args.once, yes=args.yes)
            return
        from agui_client.testing import ScriptedAgent, serve

        with serve(ScriptedAgent.demo()) as server:
            chat(server.url, once=args.once, yes=args.yes)
    except (KeyboardInterrupt, EOFError):  # Ctrl-C, or Ctrl-D at any prompt
        print("\nbye")


if __name__ == "__main__":
    main()
