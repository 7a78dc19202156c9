# pip install 'agui-client[testing]'
from agui_client import AgentClient, RunResult, SubagentStartedEvent, ToolCallStartEvent
from agui_client.testing import ScriptedAgent, serve

with serve(ScriptedAgent.demo()) as server, AgentClient(server.url) as client:
    thread = client.thread()
    with thread.stream("Delete the staging database") as events:
        for event in events:                   # every event, typed, as its bytes arrive, already folded
            match event:
                case ToolCallStartEvent(tool_call_name=name) | SubagentStartedEvent(name=name):
                    print(f"[{event.TYPE}] {name}")
        asked = events.get_final_result()      # reads what is left; a RunResult, never None
    print(asked.outcome, [i.id for i in asked.interrupts])

    resume = thread.resume_builder().answer(asked.interrupts[0].id, {"approved": True})
    with thread.stream(resume=resume) as stream:
        for text in stream.text_stream:        # only the main agent's text, each delta as a str
            print(text, end="", flush=True)
    result: RunResult = stream.result          # typed: there once the block is left
    print("\n" + (result.outcome or "cut short"))
