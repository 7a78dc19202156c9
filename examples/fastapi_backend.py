"""A FastAPI backend for a browser chat: relays each turn to an AG-UI agent, threads kept in Redis or PostgreSQL.

The browser posts a message and reads the agent's events as server-sent events. When the agent
stops to ask (an interrupt), the answer arrives later in another request, perhaps on another
worker or replica: every worker keeps threads in one shared store, so any of them can continue
the thread, and the store's compare-and-set makes sure two answers racing for the same interrupt
cannot both reach the agent. Answers that are incomplete, stale, unknown or fail the interrupt's
``responseSchema`` are refused before anything is sent.

Endpoints::

    POST /chat                    {"thread_id"?: str, "message": str}
        -> 200 text/event-stream: one "data: <json>" frame per AG-UI event, then a final
           {"type": "agui_client.thread", "threadId", "version", "outcome", "openInterrupts", "result"}
           (or {"type": "agui_client.error", "threadId", "error", "message", "claimHeld"} when the run
           failed mid-stream: the message is for the browser's user, the library's reason goes to the log)
        -> 422 when the thread is waiting for answers (answer its interrupts first)
        -> 502 {"error": "agent_failed", "message": ...}: the agent could not be reached, or answered
           with an error, before the run started
        -> 503 {"error": <the error's class>, "message": ...}: the run could not start for another
           reason (the store failed, say); for both, the message is for the browser's user and the
           library's reason, which may name the agent's URL or the store, goes to the log
    POST /threads/{id}/answers    {"answers": {interrupt_id: payload}, "abandon": [interrupt_id, ...]}
        -> 200 text/event-stream: the continued run, framed the same way
        -> 422 {"error": kind, "ids": [...], "problems": {kind: [ids]}, "errors": {id: [messages]},
                "message": ...}: incomplete, stale (expired, or already answered), unknown or
                schema-invalid answers; nothing was sent to the agent
        -> 409 {"error": "concurrent", "message": ...}: another request is resuming (or resumed) this
           thread; the message is for the browser's user, the library's reason goes to the log
        -> 404: no such thread
    GET  /threads/{id}            the stored thread: version, messages, state, open interrupts

Configuration (environment variables; ``python examples/fastapi_backend.py --help`` has flags for them):

    AGENT_URL     the agent's endpoint; when unset, each process serves a bundled
                  ScriptedAgent.demo() on 127.0.0.1 (see below for several workers)
    REDIS_URL     keep threads in Redis (RedisStore), shared by every worker and replica
    REDIS_PREFIX  the Redis key prefix (default "agui:thread:")
    DATABASE_URL  without REDIS_URL: keep threads in PostgreSQL (PostgresStore), shared by every worker and replica
    THREADS_TABLE the PostgreSQL table (default "agui_threads")
    THREADS_DB    without either: a SQLite file (default "threads.db"), shared by the workers of one host

Run it with two workers sharing Redis (from the repository root)::

    pip install 'agui-client[redis,testing]' fastapi uvicorn
    AGENT_URL=http://127.0.0.1:9000/ REDIS_URL=redis://127.0.0.1:6379/0 \\
        uvicorn examples.fastapi_backend:app --workers 2 --port 8000

With several workers, give ``AGENT_URL``: a demo agent per worker would not know the interrupts the
other worker's agent raised. Or let the script start one demo agent for all its workers::

    REDIS_URL=redis://127.0.0.1:6379/0 python examples/fastapi_backend.py --workers 2 --port 8000

Talk to it::

    curl -N localhost:8000/chat -H 'content-type: application/json' \\
         -d '{"message": "Delete the staging environment"}'
    # ... data: {"type":"agui_client.thread","threadId":"<id>","outcome":"interrupt",
    #            "openInterrupts":[{"id":"<interrupt id>","reason":"approval",...}],...}
    curl -N localhost:8000/threads/<id>/answers -H 'content-type: application/json' \\
         -d '{"answers": {"<interrupt id>": {"approved": true}}}'
    curl localhost:8000/threads/<id>

A run is driven by a task of its own, not by the browser's connection: a browser that goes away
mid-stream stops receiving frames, but the run still ends and the thread is still saved, so the
next request finds it whole.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, Field

import agui_client as ag
from agui_client.stores import PostgresStore, RedisStore, SqliteStore, ThreadStore
from agui_client.types import ResumeEntry

__all__ = ["app", "ChatRequest", "AnswersRequest", "open_store", "main"]

#: How long shutdown waits for runs whose browser left (they save their thread when they end).
SHUTDOWN_GRACE = 30.0

#: The longest a run may take (seconds). A run outlives its browser, so nothing else bounds it: an agent
#: that keeps its stream alive with comments and never ends held the run's task until the worker
#: stopped. Past it the run fails with ``RunTimeout`` (the thread is saved).
RUN_TIMEOUT = 600.0

#: The backend developer's log: the library's own words on a failure, advice for code included.
log = logging.getLogger("fastapi_backend")

#: What the browser's user reads when someone else answered their thread first.
ANSWERED_ELSEWHERE = "This conversation was answered elsewhere a moment ago. Reload it to see where it stands."
#: What the browser's user reads when the agent could not be reached, or failed, before the run started (502).
AGENT_UNAVAILABLE = "The assistant could not be reached just now. Please try again in a moment."
#: What the browser's user reads when the run could not start for another reason (503).
NOT_STARTED = "This conversation cannot go on just now. Please try again in a moment."
#: What the browser's user reads when the run failed part-way (the error frame).
BROKE_OFF = "The assistant's answer broke off. Reload the conversation to see where it stands, then try again."


class ChatRequest(BaseModel):
    """A new turn: a message, on a new thread or an existing one."""

    thread_id: str | None = None
    message: str


class AnswersRequest(BaseModel):
    """Answers to a thread's open interrupts: a payload per answered id, and the ids abandoned."""

    answers: dict[str, Any] = Field(default_factory=dict)
    abandon: list[str] = Field(default_factory=list)


def open_store() -> ThreadStore:
    """The store the environment names: Redis when ``REDIS_URL`` is set, else PostgreSQL when
    ``DATABASE_URL`` is, else a SQLite file."""
    redis_url = os.environ.get("REDIS_URL")
    if redis_url:
        return RedisStore(redis_url, prefix=os.environ.get("REDIS_PREFIX", "agui:thread:"))
    database_url = os.environ.get("DATABASE_URL")
    if database_url:
        return PostgresStore(database_url, table=os.environ.get("THREADS_TABLE", "agui_threads"))
    return SqliteStore(os.environ.get("THREADS_DB", "threads.db"))


@contextlib.asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    """One client and one store per worker process, closed at shutdown after the runs in flight."""
    async with contextlib.AsyncExitStack() as stack:
        agent_url = os.environ.get("AGENT_URL")
        if not agent_url:
            from agui_client.testing import ScriptedAgent, serve

            agent_url = (await stack.enter_async_context(serve(ScriptedAgent.demo()))).url
        store = open_store()
        stack.callback(store.close)
        app.state.client = await stack.enter_async_context(
            ag.AsyncAgentClient(agent_url, store=store, run_timeout=RUN_TIMEOUT))
        app.state.runs = set()
        yield
        if app.state.runs:
            _, late = await asyncio.wait(app.state.runs, timeout=SHUTDOWN_GRACE)
            # Cancelled rather than cut off by closing the client and store under them: a cancelled
            # turn gives its claim back; a resume whose request went out keeps it (and says so).
            for task in late:
                task.cancel()
            await asyncio.gather(*late, return_exceptions=True)


app = FastAPI(title="agui_client FastAPI backend example", lifespan=lifespan)


@app.post("/chat", response_model=None)
async def chat(body: ChatRequest, request: Request) -> Response:
    """Send a message on a thread (a new one without ``thread_id``) and stream the run."""
    client: ag.AsyncAgentClient = request.app.state.client
    # Loading a thread reads the store, a blocking call: load_thread keeps it off the event loop.
    thread = await client.load_thread(body.thread_id)
    return await relay(request.app, thread, message=body.message)


@app.post("/threads/{thread_id}/answers", response_model=None)
async def answers(thread_id: str, body: AnswersRequest, request: Request) -> Response:
    """Answer (or abandon) a thread's open interrupts and stream the continued run."""
    client: ag.AsyncAgentClient = request.app.state.client
    thread = await client.load_thread(thread_id)
    if thread.version is None:
        return JSONResponse({"error": "not_found", "threadId": thread_id}, status_code=404)
    given = [ag.ResumeEntry(interrupt_id=i, status="resolved", payload=p) for i, p in body.answers.items()]
    given += [ag.ResumeEntry(interrupt_id=i, status="cancelled") for i in body.abandon]
    try:
        # The request's answers judged all at once, so the 422 names every problem (a builder refuses an
        # id that is not open as it is given); then the builder, bound to this thread's interrupted run.
        ag.check_resume(thread.open_interrupts, given, now=client.clock)
        resume = thread.resume_builder()
        for entry in given:
            if entry.status == "resolved":
                resume.answer(entry.interrupt_id, entry.payload)
            else:
                resume.abandon(entry.interrupt_id)
        entries = resume.build()
    except ag.ResumeRefused as exc:
        return refused(exc)
    return await relay(request.app, thread, resume=entries)


@app.get("/threads/{thread_id}", response_model=None)
async def get_thread(thread_id: str, request: Request) -> Response:
    """The stored thread in wire form, with its version (for a page that reloads)."""
    client: ag.AsyncAgentClient = request.app.state.client
    stored = await asyncio.to_thread(client.store.load, thread_id)
    if stored is None:
        return JSONResponse({"error": "not_found", "threadId": thread_id}, status_code=404)
    state = ag.ThreadState.load(stored.data)
    return JSONResponse({"threadId": thread_id, "version": stored.version, "claimed": stored.claim is not None,
                         **state.to_wire()})


# --------------------------------------------------------------------------------------------------
# Relaying a run as server-sent events
# --------------------------------------------------------------------------------------------------


def frame(payload: Mapping[str, Any]) -> bytes:
    """One SSE frame holding ``payload`` as JSON."""
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    try:
        return b"data: " + text.encode() + b"\n\n"
    except UnicodeEncodeError:
        # Half a character (an agent slicing text by UTF-16 code unit sends one as its escape, and the
        # client keeps the event as sent) has no UTF-8: raised here, it ended the run's task and cut
        # the browser's stream off. Written as ASCII, it goes out as the escape it came as.
        return b"data: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"


def refused(exc: ag.ResumeRefused) -> JSONResponse:
    """422 naming every offending interrupt id, by kind of problem."""
    return JSONResponse({
        "error": exc.kind,
        "ids": list(exc.ids),
        "problems": {kind: list(ids) for kind, ids in exc.problems.items() if ids},
        "errors": {interrupt_id: list(messages) for interrupt_id, messages in exc.errors.items()},
        "message": str(exc),
    }, status_code=422)


def failed_to_start(thread: ag.AsyncThread, exc: ag.AguiError) -> JSONResponse:
    """The answer for a run refused (or failed) before its first event: nothing to stream."""
    if isinstance(exc, ag.ResumeRefused):
        return refused(exc)
    if isinstance(exc, ag.ConcurrentResume):
        # The library's text is written for the code that holds the thread (it says which Python call
        # catches up): it goes to the log, and the browser's user gets words meant for them.
        log.warning("thread %s: %s", thread.id, exc)
        return JSONResponse({"error": "concurrent", "threadId": thread.id, "message": ANSWERED_ELSEWHERE,
                             "expectedVersion": exc.expected_version, "actualVersion": exc.actual_version},
                            status_code=409)
    # As for the 409: the library's text is for the developer (it may name the agent's URL, what the agent
    # answered, the store and its tables), so it goes to the log, and the browser gets words of its own.
    if isinstance(exc, ag.TransportError):
        log.warning("thread %s: the agent failed before the run started: %s", thread.id, exc)
        return JSONResponse({"error": "agent_failed", "threadId": thread.id, "message": AGENT_UNAVAILABLE},
                            status_code=502)
    log.error("thread %s: the run could not start: %s", thread.id, exc)
    return JSONResponse({"error": type(exc).__name__, "threadId": thread.id, "message": NOT_STARTED},
                        status_code=503)


def final_frame(thread: ag.AsyncThread, result: ag.RunResult | None) -> dict[str, Any]:
    """The last frame: where the thread stands now, for the browser to render and answer."""
    return {
        "type": "agui_client.thread",
        "threadId": thread.id,
        "version": thread.version,
        "outcome": result.outcome if result is not None else None,
        "openInterrupts": ag.encode(thread.open_interrupts),
        "result": result.result if result is not None else None,
    }


def error_frame(thread: ag.AsyncThread, exc: ag.AguiError) -> dict[str, Any]:
    """The last frame of a run that failed mid-stream (the library's reason goes to the log)."""
    log.error("thread %s: the run failed part-way: %s", thread.id, exc)
    return {
        "type": "agui_client.error",
        "threadId": thread.id,
        "error": type(exc).__name__,
        "message": BROKE_OFF,
        # A resume whose request may have reached the agent keeps the thread claimed (see Thread.stream).
        "claimHeld": bool(getattr(exc, "claim_held", False)),
    }


async def relay(app: FastAPI, thread: ag.AsyncThread, *, message: str | None = None,
                resume: Sequence[ResumeEntry] | None = None) -> Response:
    """Start the run in a task of its own and stream its frames; a 4xx/5xx when it cannot start.

    The task folds every event into the thread and saves it at the run's end (``AsyncThread.stream``
    does), whether or not the browser is still listening.
    """
    started: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    frames: asyncio.Queue[bytes | None] = asyncio.Queue()
    listening = [True]

    def emit(payload: Mapping[str, Any]) -> None:
        if listening[0]:
            frames.put_nowait(frame(payload))

    async def drive() -> None:
        result: ag.RunResult | None = None
        try:
            async with thread.stream(message, resume=resume) as events:
                started.set_result(None)
                async for event in events:
                    emit(ag.encode(event))
            result = events.result
            emit(final_frame(thread, result))
        except ag.AguiError as exc:
            if not started.done():
                started.set_exception(exc)
            else:
                emit(error_frame(thread, exc))
        except BaseException as exc:
            if not started.done():
                # Cancelled before it started (the server is stopping), or a bug: the request fails too.
                started.cancel() if isinstance(exc, asyncio.CancelledError) else started.set_exception(exc)
            raise
        finally:
            frames.put_nowait(None)

    task = asyncio.create_task(drive())
    runs: set[asyncio.Task[None]] = app.state.runs
    runs.add(task)
    task.add_done_callback(runs.discard)
    try:
        await started
    except ag.AguiError as exc:
        return failed_to_start(thread, exc)

    async def body() -> AsyncIterator[bytes]:
        try:
            while (item := await frames.get()) is not None:
                yield item
        finally:
            listening[0] = False  # the browser left (or the run ended): the run goes on without it

    return StreamingResponse(body(), media_type="text/event-stream",
                             headers={"cache-control": "no-cache", "x-accel-buffering": "no"})


# --------------------------------------------------------------------------------------------------
# python examples/fastapi_backend.py
# --------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> None:
    """Serve the app with uvicorn; without an agent URL, one demo agent serves every worker."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--agent-url", help="the agent's endpoint (AGENT_URL; default: a bundled demo agent)")
    parser.add_argument("--redis-url", help="keep threads in Redis (REDIS_URL)")
    parser.add_argument("--database-url", help="keep threads in PostgreSQL (DATABASE_URL; used without Redis)")
    parser.add_argument("--db", help="keep threads in this SQLite file (THREADS_DB; used without either)")
    args = parser.parse_args(argv)
    for name, value in (("AGENT_URL", args.agent_url), ("REDIS_URL", args.redis_url),
                        ("DATABASE_URL", args.database_url), ("THREADS_DB", args.db)):
        if value:
            os.environ[name] = value

    import uvicorn

    with contextlib.ExitStack() as stack:
        if not os.environ.get("AGENT_URL"):
            from agui_client.testing import ScriptedAgent, serve

            # Set before the workers start, so they all inherit it and talk to the same agent.
            os.environ["AGENT_URL"] = stack.enter_context(serve(ScriptedAgent.demo())).url
            print(f"demo agent at {os.environ['AGENT_URL']}")
        uvicorn.run("fastapi_backend:app", app_dir=str(Path(__file__).resolve().parent), host=args.host,
                    port=args.port, workers=args.workers)


if __name__ == "__main__":
    main()
