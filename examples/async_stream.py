"""Stream a run with the async client and react to typed events with ``match``.

    python examples/async_stream.py              # against the bundled scripted demo agent
    python examples/async_stream.py --url URL    # against any AG-UI endpoint

Each event arrives the moment its bytes do, already folded into ``thread.state``. The events are
attrs classes, so ``match`` picks them apart by class and field. When the run stops on an
interrupt, the example approves it and streams the continued run the same way.
"""

from __future__ import annotations

import argparse
import asyncio

import agui_client as ag
from agui_client.terminal import InertDeltas, inert_name, inert_text

#: The text, reasoning or tool arguments being streamed (one at a time here), made safe to print as its
#: deltas arrive: an escape sequence or a bidi override shows as its escape, an emoji cut between two
#: deltas reads whole.
DELTAS = InertDeltas()


def show(event: ag.Event | ag.UnknownEvent) -> None:
    """Print one event as a person would want to see it (the agent's words through agui_client.terminal)."""
    match event:
        case ag.RunStartedEvent(run_id=run_id):
            print(f"[run {inert_name(run_id)} started]")
        case ag.TextMessageStartEvent():
            print("assistant: ", end="", flush=True)
        case ag.TextMessageContentEvent(delta=delta):
            print(DELTAS.feed(delta), end="", flush=True)
        case ag.TextMessageEndEvent():
            print(DELTAS.end())
        case ag.ReasoningMessageStartEvent():
            print("(thinking: ", end="", flush=True)
        case ag.ReasoningMessageContentEvent(delta=delta):
            print(DELTAS.feed(delta), end="", flush=True)
        case ag.ReasoningMessageEndEvent():
            print(DELTAS.end() + ")")
        case ag.ToolCallStartEvent(tool_call_name=name):
            print(f"[tool] {inert_name(name)} ", end="", flush=True)
        case ag.ToolCallArgsEvent(delta=delta):
            print(DELTAS.feed(delta), end="", flush=True)
        case ag.ToolCallEndEvent():
            print(DELTAS.end())
        case ag.ToolCallResultEvent(content=content):
            print(f"[tool result] {inert_text(str(content))}")
        case ag.StateSnapshotEvent(snapshot=snapshot):
            keys = sorted(snapshot) if isinstance(snapshot, dict) else snapshot
            print(f"[state] snapshot with keys {inert_text(str(keys))}")
        case ag.StateDeltaEvent(delta=ops):
            print(f"[state] {len(ops)} change(s): {', '.join(inert_name(str(op['path'])) for op in ops)}")
        case ag.RunFinishedEvent(outcome=ag.RunFinishedInterruptOutcome(interrupts=interrupts)):
            print(f"[run paused: {len(interrupts)} interrupt(s)]")
        case ag.RunFinishedEvent():
            print("[run finished]")
        case ag.RunErrorEvent(message=message, code=code):
            print(f"[run failed: {inert_text(message)} ({inert_name(str(code))})]")
        case _:
            pass  # activities, steps, subagents, custom events ... are folded all the same


async def converse(url: str, message: str) -> ag.RunResult:
    """Stream ``message``'s run, approve every interrupt, stream the continuation."""
    async with ag.AsyncAgentClient(url) as client:
        thread = client.thread()
        text: str | None = message
        resume: ag.ResumeBuilder | None = None
        while True:
            async with thread.stream(text, resume=resume) as events:
                async for event in events:
                    show(event)
            result = events.result
            assert result is not None
            if result.outcome != "interrupt":
                break
            resume = thread.resume_builder()
            for interrupt in result.interrupts:
                print(f"approving: {inert_text(interrupt.message or '')}")
                resume.answer(interrupt.id, {"approved": True})
            text = None
        print(f"outcome: {result.outcome}; state: {inert_text(str(thread.state.state))}")
        return result


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="an AG-UI endpoint (default: start the bundled demo agent)")
    parser.add_argument("-m", "--message", default="Please delete the staging environment.")
    args = parser.parse_args()
    if args.url:
        await converse(args.url, args.message)
        return
    from agui_client.testing import ScriptedAgent, serve

    async with serve(ScriptedAgent.demo()) as server:
        await converse(server.url, args.message)


if __name__ == "__main__":
    asyncio.run(main())
