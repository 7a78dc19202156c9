"""A FastAPI relay: runs a thread with agui_client and re-emits its events to a browser with the official
``ag_ui.encoder.EventEncoder``.

The browser (say, a page using the official ``@ag-ui/client`` to read the stream) sees exactly the AG-UI
events the agent sent, encoded by the protocol's own Python SDK; the relay in between keeps the thread
(its messages, state and open interrupts) with agui_client, which checks every event and refuses a
resume that does not answer the open interrupts before anything reaches the agent. The events cross
with :func:`agui_client.ag_ui.to_ag_ui`; the resume entries the browser sends, written as the official
``ResumeEntry`` model, cross back with :func:`agui_client.ag_ui.from_ag_ui`.

Endpoint::

    POST /threads/{thread_id}/runs   {"message"?: str, "resume"?: [{"interruptId", "status", "payload"?}]}
        -> 200 text/event-stream (EventEncoder's content type): one frame per AG-UI event; a run that
           cannot start or fails mid-stream ends with a RUN_ERROR whose code names the agui_client error

Run it (from the repository root; without ``AGENT_URL`` it serves the bundled demo agent)::

    pip install 'agui-client[ag-ui,testing]' fastapi uvicorn
    uvicorn examples.ag_ui_relay:app --port 8000
    curl -N localhost:8000/threads/t1/runs -H 'content-type: application/json' \\
         -d '{"message": "Delete the staging environment"}'
    # ... data: {"type":"RUN_FINISHED",...,"outcome":{"type":"interrupt","interrupts":[{"id":"<id>",...}]}}
    curl -N localhost:8000/threads/t1/runs -H 'content-type: application/json' \\
         -d '{"resume": [{"interruptId": "<id>", "status": "resolved", "payload": {"approved": true}}]}'

One process keeps its threads in memory; ``examples/fastapi_backend.py`` shows threads shared by several
workers through Redis or PostgreSQL, and runs that outlive the browser's connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import weakref
from collections.abc import AsyncIterator

from ag_ui.core import ResumeEntry as OfficialResumeEntry
from ag_ui.core import RunErrorEvent as OfficialRunErrorEvent
from ag_ui.encoder import EventEncoder
from fastapi import FastAPI, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel

import agui_client as ag
from agui_client.ag_ui import from_ag_ui, to_ag_ui

__all__ = ["app", "RunRequest", "sse", "turn", "TURN_WAIT"]


class RunRequest(BaseModel):
    """A turn: a new message, or answers to the thread's open interrupts (the official model's JSON)."""

    message: str | None = None
    resume: list[OfficialResumeEntry] | None = None


@contextlib.asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    """One client per process (its threads kept in memory), closed at shutdown."""
    async with contextlib.AsyncExitStack() as stack:
        agent_url = os.environ.get("AGENT_URL")
        if not agent_url:
            from agui_client.testing import ScriptedAgent, serve

            agent_url = (await stack.enter_async_context(serve(ScriptedAgent.demo()))).url
        app.state.client = await stack.enter_async_context(ag.AsyncAgentClient(agent_url))
        yield


app = FastAPI(title="agui_client ag-ui relay example", lifespan=lifespan)


def sse(encoder: EventEncoder, event: ag.Event) -> str:
    """The SDK's frame for ``event``; where pydantic cannot write it, the same frame written by ``json``.

    The client reads two things the agent may send that pydantic's writer cannot: half a character
    (a lone surrogate, sent as its JSON escape by an agent slicing text by UTF-16 code unit; the client
    warns ``UTF16-SURROGATE``) and a value nested past pydantic's depth limit (about 250 levels; the
    client reads 512). Raised here, they broke the browser's stream off mid-run. ``json.dumps`` writes
    the event as the client encodes it, the escape as it came, which a browser's ``JSON.parse`` reads
    back into the very event.
    """
    try:
        return encoder.encode(to_ag_ui(event))
    except ValueError:  # (PydanticSerializationError is one)
        return f"data: {json.dumps(ag.encode(event), separators=(',', ':'))}\n\n"


#: The turn each thread has in this process, while its response is written and its run ends.
_turns: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()
#: How long a turn waits for the one before it on the same thread to end (seconds).
TURN_WAIT = 10.0


@contextlib.asynccontextmanager
async def turn(thread_id: str) -> AsyncIterator[None]:
    """Wait, up to :data:`TURN_WAIT`, for the thread's turn before this one in this process to end.

    A browser that leaves mid-run and sends its next turn at once would otherwise read the thread while
    the first turn is still closing its response and releasing its claim, and be refused as another
    writer ("another writer got there first"). Past the wait (the turn before is a long run, another
    tab's) the store's claim decides, as it does between replicas: the turn is refused as a RUN_ERROR.
    """
    lock = _turns.get(thread_id)
    if lock is None:
        lock = _turns[thread_id] = asyncio.Lock()
    try:
        await asyncio.wait_for(lock.acquire(), TURN_WAIT)
    except asyncio.TimeoutError:
        yield
        return
    try:
        yield
    finally:
        lock.release()


@app.post("/threads/{thread_id}/runs", response_model=None)
async def run(thread_id: str, body: RunRequest, request: Request) -> StreamingResponse:
    """Run the thread (a new message, or the browser's answers) and stream its events as the SDK encodes them."""
    client: ag.AsyncAgentClient = request.app.state.client
    encoder = EventEncoder(accept=request.headers.get("accept", "text/event-stream"))

    async def frames() -> AsyncIterator[str]:
        try:
            async with turn(thread_id):
                thread = await client.load_thread(thread_id)
                # (read here, so that an entry the client cannot read is a RUN_ERROR like any refusal, not a 500)
                resume = [from_ag_ui(entry) for entry in body.resume] if body.resume else None
                async with thread.stream(body.message, resume=resume) as events:
                    async for event in events:
                        if isinstance(event, ag.UnknownEvent):
                            continue  # (a type AG-UI 1.0 does not define: ag_ui.core has no model for it)
                        yield sse(encoder, event)
        except ag.AguiError as exc:
            # Refused before sending (an unanswered interrupt, say) or failed mid-stream: the browser's
            # client reads a RUN_ERROR, named by the agui_client error.
            yield encoder.encode(OfficialRunErrorEvent(message=str(exc), code=type(exc).__name__))

    return StreamingResponse(frames(), media_type=encoder.get_content_type(),
                             headers={"cache-control": "no-cache", "x-accel-buffering": "no"})
