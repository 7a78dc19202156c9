"""A small terminal chat with rich: tokens as they arrive, tool calls, and interrupts answered in a form.

    python examples/chat_tui.py                                  # chat with the bundled scripted demo agent
    python examples/chat_tui.py --url URL                        # chat with any AG-UI endpoint
    python examples/chat_tui.py --once "Delete staging" --yes    # one turn, no questions (scripts, CI)

Type ``/quit`` (or Ctrl-D) to leave. When the agent stops to ask, the interrupt's
``responseSchema`` becomes a few prompts: y/n for booleans, choices for enums, whole numbers for
integers, defaults taken on Enter. ``--yes`` answers with the defaults and ``approved: true``.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.panel import Panel
from rich.prompt import Confirm, IntPrompt, Prompt
from rich.text import Text

import agui_client as ag

console = Console(highlight=False)


def stream_run(thread: ag.Thread, message: str | None, resume: ag.ResumeBuilder | None = None) -> ag.RunResult:
    """Stream one run: a spinner until the first event, then each text message growing token by token."""
    status = console.status("[dim]waiting for the agent...")
    status.start()
    live: Live | None = None
    text = Text()
    try:
        with thread.stream(message, resume=resume) as events:
            for event in events:
                status.stop()
                match event:
                    case ag.TextMessageStartEvent():
                        text = Text()
                        text.append("agent: ", style="bold cyan")
                        live = Live(text, console=console, refresh_per_second=15)
                        live.start()
                    case ag.TextMessageContentEvent(delta=delta) if live is not None:
                        text.append(delta)
                        live.update(text)
                    case ag.TextMessageEndEvent() if live is not None:
                        live.stop()
                        live = None
                        if not console.is_terminal:
                            console.line()  # a terminal Live ends its line itself; a pipe needs one
                    case ag.ReasoningMessageStartEvent():
                        console.print("thinking: ", style="dim italic", end="")
                    case ag.ReasoningMessageContentEvent(delta=delta):
                        console.print(delta, style="dim italic", end="", markup=False)
                    case ag.ReasoningMessageEndEvent():
                        console.print()
                    case ag.ToolCallStartEvent(tool_call_name=name):
                        console.print(f"⚙ {name} ", style="yellow", end="", markup=False)
                    case ag.ToolCallArgsEvent(delta=delta):
                        console.print(delta, style="yellow", end="", markup=False)
                    case ag.ToolCallEndEvent():
                        console.print()
                    case ag.RunErrorEvent(message=error):
                        console.print(Panel(error, title="run failed", border_style="red"))
                    case _:
                        pass
    finally:
        status.stop()
        if live is not None:
            live.stop()
    result = events.result
    assert result is not None
    return result


def default_answer(schema: dict[str, Any] | None) -> dict[str, Any]:
    """What ``--yes`` says: every default, and ``approved: true``."""
    answer: dict[str, Any] = {"approved": True}
    for name, prop in ((schema or {}).get("properties") or {}).items():
        if "default" in prop:
            answer[name] = prop["default"]
    return answer


def ask_answer(schema: dict[str, Any] | None) -> dict[str, Any]:
    """One prompt per property of the interrupt's ``responseSchema``."""
    properties = (schema or {}).get("properties") or {}
    if not properties:
        return {"approved": Confirm.ask("approve?", console=console)}
    required = set((schema or {}).get("required") or ())
    answer: dict[str, Any] = {}
    for name, prop in properties.items():
        label = f"{name} [dim]({prop.get('description', prop.get('type', ''))})[/]"
        default = prop.get("default")
        if prop.get("type") == "boolean":
            answer[name] = Confirm.ask(label, console=console, **({"default": default} if default is not None else {}))
        elif "enum" in prop:
            answer[name] = Prompt.ask(label, console=console, choices=[str(c) for c in prop["enum"]],
                                      **({"default": str(default)} if default is not None else {}))
        elif prop.get("type") == "integer":
            fallback = {"default": default} if default is not None else {}
            answer[name] = IntPrompt.ask(label, console=console, **fallback)
        else:
            value = Prompt.ask(label, console=console, **({"default": str(default)} if default is not None else {}))
            if value or name in required:
                answer[name] = value
    return answer


def chat_turn(thread: ag.Thread, message: str, *, yes: bool) -> ag.RunResult:
    """Send one message; answer the interrupts it raises until the agent is done."""
    result = stream_run(thread, message)
    while result.outcome == "interrupt":
        resume = thread.resume_builder()
        for interrupt in result.interrupts:
            console.print(Panel(interrupt.message or interrupt.reason, title=f"the agent asks ({interrupt.reason})",
                                border_style="yellow"))
            answer = default_answer(interrupt.response_schema) if yes else ask_answer(interrupt.response_schema)
            console.print(f"answer: {json.dumps(answer)}", style="bold", markup=False)
            resume.answer(interrupt.id, answer)
        result = stream_run(thread, None, resume=resume)
    return result


def chat(url: str, *, once: str | None, yes: bool) -> None:
    """The chat loop (or a single turn with ``once``)."""
    with ag.AgentClient(url) as client:
        thread = client.thread()
        console.print(f"[dim]thread {thread.id} with {url} - /quit to leave[/]")
        while True:
            if once is not None:
                message = once
            else:
                try:
                    message = Prompt.ask("[bold green]you", console=console)
                except EOFError:
                    break
                if message.strip() in ("/quit", "/exit"):
                    break
                if not message.strip():
                    continue
            result = chat_turn(thread, message, yes=yes)
            console.print(f"[dim]({result.outcome}; {result.total_usage.total_tokens or 0} tokens)[/]")
            if once is not None:
                break
        console.print(f"[dim]state: {json.dumps(thread.state.state)}[/]", markup=True)


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
    except (KeyboardInterrupt, EOFError):  # Ctrl-C, or Ctrl-D at any prompt (an interrupt's included)
        console.print("\nbye")


if __name__ == "__main__":
    main()
