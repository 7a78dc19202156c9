"""A mutation fuzzer of whole streams, over a real server on 127.0.0.1, checking the client's invariants.

``python -m tools.differential.mutate --seed N --cases K [--oracle DIR] [--only OP,OP] [--save DIR] [--outcomes]``

Honest streams (the golden vectors, ``bench/gen.py`` streams, the producer shapes, families and SDK
habits of the differential, and what the bundled demo agent answers) are mutated at four levels, one
to four operations per case, each drawn from a ``random.Random`` seeded with the seed and the case's
number (so ``--seed N --cases K`` is the same K cases on the same tree, and case ``i`` alone is
``--seed N --first i --cases 1``):

* events: dropped, repeated, swapped, cut short, spliced from another stream; ids made to collide
  across messages, tool calls, interrupts and runs; a field's type, value, case or unicode form
  changed (NUL, C0 and C1 controls, escape sequences, bidi overrides, lone UTF-16 halves, NFD forms,
  huge and empty values); numbers out of range; interrupts with expired, repeated or missing ids;
* JSON text: duplicate keys, ``NaN``, a payload cut, trailing text, escaped surrogates, deep nesting;
* SSE frames: CR, LF and CRLF line ends mixed, comments, ``event:``/``id:``/``retry:`` fields, a
  payload over several ``data:`` lines, a missing ``data:`` prefix, a BOM at the start or later, the
  last blank line missing, empty payloads;
* bytes: flipped, inserted (NUL, 0xFF, invalid UTF-8), cut anywhere, a range repeated.

A case may be resumed: its second request answers whatever the first run left open with entries that
cover, drop, repeat, misname, cancel or carry an unencodable payload (some cases start from an honest
run that asks, so the resume checks are reached often), and gets the mutated body of another stream.

Every case runs on both shells (``AgentClient``, ``AsyncAgentClient``), through ``run()`` or ``stream()``,
on a ``MemoryStore`` or an ``SqliteStore`` (drawn per case), each under a deadline, and is checked for:

1. ``typed``: every failure is an ``AguiError``, never a bare ``KeyError``, ``TypeError`` …, and never a
   ``hang``; a refused resume (``ResumeRefused``, ``UnencodableValue``) sent nothing;
   ``located``: a ``ProtocolError`` names where (an event index, or a pointer) and carries its result;
   ``codes``: its rule, and every warning code of the run, has a section in docs/codes.md;
2. ``kept``: the state folded so far is readable after the error (the thread's and the error's result);
3. ``frozen``: what was handed out (events, results, messages, the state, open interrupts, usage, the
   thread's wire form after each run) does not change afterwards;
4. ``stored``: after a run that ended, the thread reloaded from its store equals the live one; after a
   run that failed (not saved, docs/streaming.md), the store still holds the last saved thread;
5. ``inert``: what the CLI's renderers (plain and rich) write of the run, and on every ``--cli-every``-th
   case what ``agui replay``, ``agui verify`` and ``agui run`` write, holds no control character or
   escape sequence (``cli``: and they end with an exit status);
6. ``shells``: both shells come to the same errors, outcomes, messages, state and open interrupts;
7. with ``--oracle``: every ``--oracle-every``-th case's first body is folded by the reference client,
   and a verdict that differs from ours is printed (``VERDICT``) for triage against the documented
   differences (docs, golden ``DIFFERENCES``); not counted as a finding.

One line per finding (``FINDING seed case op+op invariant: detail``) and a count per invariant at the
end; exit status 1 when there was a finding. ``--save DIR`` writes each failing case's bodies.
Not part of the test run except for a smoke run of 20 cases (``tests/test_attack_mutations.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import functools
import io
import json
import random
import re
import sys
import tempfile
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import attrs

from agui_client import AguiWarning

from .mutations import ALL_OPS, ROOT, Case, Event, Seed, dump, mutate, resume_entries, seeds

NOW = datetime(2026, 11, 30, tzinfo=timezone.utc)  # the clients' pinned clock (expiresAt is judged against it)


# -------------------------------------------------------------------------------------------------
# The server: every request on ``/c/KEY`` gets the next body queued for KEY, in pieces
# -------------------------------------------------------------------------------------------------


class Bodies:
    """An ASGI agent answering each request on ``/c/KEY`` with the next body queued for ``KEY``, sent in
    the pieces queued with it (so a frame, a CRLF or a UTF-8 sequence is split between reads)."""

    def __init__(self) -> None:
        self.queued: dict[str, list[tuple[bytes, list[int]]]] = {}
        #: How many requests each key was asked (a refused resume must have sent nothing).
        self.hits: dict[str, int] = {}
        self._lock = threading.Lock()

    def put(self, key: str, body: bytes, cuts: list[int]) -> None:
        with self._lock:
            self.queued.setdefault(key, []).append((body, cuts))

    def drop(self, key: str) -> None:
        with self._lock:
            self.queued.pop(key, None)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        with self._lock:
            key = scope["path"].rsplit("/", 1)[-1]
            self.hits[key] = self.hits.get(key, 0) + 1
            queue = self.queued.get(key) or [(b"", [])]
            body, cuts = queue.pop(0) if len(queue) > 1 else queue[0]
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")]})
        at = 0
        for cut in [*cuts, len(body)]:
            if cut > at:
                await send({"type": "http.response.body", "body": body[at:cut], "more_body": True})
                at = cut
        await send({"type": "http.response.body", "body": b"", "more_body": False})


def cuts_of(rng: random.Random, body: bytes) -> list[int]:
    """Where a body is split into reads: nowhere, everywhere, or at a few places."""
    how = rng.randrange(4)
    if how == 0 or len(body) < 2:
        return []
    if how == 1 and len(body) < 4000:
        return list(range(1, len(body)))
    return sorted(rng.sample(range(1, len(body)), min(len(body) - 1, rng.randint(1, 12))))


# -------------------------------------------------------------------------------------------------
# The checks
# -------------------------------------------------------------------------------------------------

#: What a renderer may not write: a C0 or C1 control other than LF and TAB, DEL, an escape, a bidi control.
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


@dataclass
class Finding:
    """One broken invariant in one case, on one shell."""

    invariant: str
    shell: str
    detail: str


class Watch:
    """What one case on one shell handed out and what it broke."""

    def __init__(self, shell: str) -> None:
        self.shell = shell
        self.handed: list[tuple[str, Any, Any]] = []
        self.findings: list[Finding] = []
        #: The thread in wire form as the last run that ended saved it.
        self.saved: dict[str, Any] | None = None
        #: How many of the thread's runs had ended before the step being run.
        self.ended_before = 0
        #: Whether the first run raised a ProtocolError (the stream was refused).
        self.refused: bool | None = None
        #: What each run came to, in a form both shells must agree on (the user's message ids left out).
        self.summary: list[Any] = []

    def hand(self, what: str, obj: Any) -> None:
        """``obj`` was handed out: kept with a deep copy of it, compared at the end."""
        try:
            self.handed.append((what, obj, copy.deepcopy(obj)))
        except Exception as exc:  # noqa: BLE001 - an object that cannot be copied is itself a finding
            self.find("frozen", f"{what} cannot be copied: {type(exc).__name__}: {exc}")

    def find(self, invariant: str, detail: str) -> None:
        self.findings.append(Finding(invariant, self.shell, detail[:400]))

    def settle(self) -> None:
        for what, obj, then in self.handed:
            try:
                same = obj == then
            except Exception as exc:  # noqa: BLE001
                self.find("frozen", f"{what} cannot be compared: {type(exc).__name__}: {exc}")
                continue
            if not same:
                self.find("frozen", f"{what} changed after it was handed out")


#: The codes docs/codes.md has a section for (``## CODE {#anchor}``).
DOCUMENTED = frozenset(re.findall(r"^## (\S+) \{#", (ROOT / "docs" / "codes.md").read_text(encoding="utf-8"), re.M))


def check_codes(watch: Watch, exc: BaseException | None, result: Any) -> None:
    """Every rule an error names and every warning code a run gave has its section in docs/codes.md."""
    rule = getattr(exc, "rule", None)
    if rule is not None and rule not in DOCUMENTED:
        watch.find("codes", f"{type(exc).__name__} names rule {rule!r}, which docs/codes.md does not document")
    folded = result if result is not None else getattr(exc, "result", None)
    for warning in getattr(folded, "warnings", ()):
        if warning.code not in DOCUMENTED:
            watch.find("codes", f"warning code {warning.code!r} is not in docs/codes.md: {warning.message:.150}")


def check_error(watch: Watch, exc: BaseException, thread: Any) -> None:
    """Invariants 1 and 2 for an error a run raised."""
    from agui_client import AguiError, ProtocolError

    if not isinstance(exc, AguiError):
        import traceback

        where = "".join(traceback.format_exception(exc)[-3:])
        watch.find("typed", f"{type(exc).__name__}: {exc!s:.200} | {where}")
        return
    if isinstance(exc, ProtocolError):
        if exc.index is None and exc.pointer is None:
            watch.find("located", f"{type(exc).__name__} [{exc.rule}] without index or pointer: {exc.detail:.200}")
        if exc.result is None:
            watch.find("kept", f"{type(exc).__name__} without the result folded so far")
    if exc.result is not None:
        try:
            json.dumps(exc.result.state.to_wire())
            _ = exc.result.messages, exc.result.text, exc.result.new_messages
        except Exception as exc2:  # noqa: BLE001
            watch.find("kept", f"the error's result is not readable: {type(exc2).__name__}: {exc2}")
    try:
        json.dumps(thread.state.to_wire())
    except Exception as exc2:  # noqa: BLE001
        watch.find("kept", f"the thread's state is not readable: {type(exc2).__name__}: {exc2}")


def check_rendered(watch: Watch, events: list[Any], result: Any, exc: BaseException | None, state: Any) -> None:
    """Invariant 5: the CLI's renderers, plain and rich, write nothing a terminal would obey."""
    from agui_client.cli import render

    for plain in (True, False):
        sink = io.StringIO()
        out = render.make_output(plain=plain, stream=sink)
        try:
            renderer = render.EventRenderer(out, state)
            for event in events:
                renderer.event(event)
            renderer.close()
            if result is not None:
                render.render_run_end(out, result, "agui")
            if exc is not None:
                render.render_error(out, exc)
            render.render_messages(out, state)
            for interrupt in state.open_interrupts:
                render.render_interrupt(out, interrupt, state, NOW)
        except Exception as exc2:  # noqa: BLE001 - a renderer that fails is a finding
            watch.find("inert", f"{'plain' if plain else 'rich'} render failed: {type(exc2).__name__}: {exc2}")
            continue
        bad = UNSAFE.search(sink.getvalue())
        if bad:
            text = sink.getvalue()
            watch.find("inert", f"{'plain' if plain else 'rich'} output holds {bad.group()!r}: "
                       f"{text[max(0, bad.start() - 60): bad.end() + 20]!r}")


def check_cli(bodies: Bodies, url: str, key: str, body: bytes, folder: Path) -> list[Finding]:
    """Invariant 5 through the ``agui`` command itself (in this process): ``replay`` and ``verify`` of the
    body as an SSE capture, ``run`` against it (abandoning what it asks); each ends with an exit status,
    and nothing it writes, on stdout or stderr, is a control character or escape sequence."""
    import contextlib

    from agui_client.cli import main

    watch = Watch("cli")
    path = folder / f"{key}.sse"
    path.write_bytes(body)
    bodies.put(key, body, [])
    for argv in (["replay", str(path), "--plain"], ["replay", str(path)], ["verify", str(path), "--plain"],
                 ["run", f"{url}c/{key}", "-m", "hi", "--plain", "--abandon", "--idle-timeout", "5"]):
        out, err = io.StringIO(), io.StringIO()
        stdin, sys.stdin = sys.stdin, io.StringIO("")
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                status = main(argv)
        except SystemExit as exc:
            status = exc.code if isinstance(exc.code, int) else 2
        except Exception as exc:  # noqa: BLE001 - the finding
            watch.find("cli", f"agui {argv[0]} raised {type(exc).__name__}: {exc!s:.200}")
            continue
        finally:
            sys.stdin = stdin
        if status not in (0, 1, 2):
            watch.find("cli", f"agui {argv[0]} exit status {status}: {err.getvalue()[-300:]!r}")
        for name, text in (("stdout", out.getvalue()), ("stderr", err.getvalue())):
            bad = UNSAFE.search(text)
            if bad:
                watch.find("inert", f"agui {' '.join(argv[:1] + argv[2:3])} {name} holds {bad.group()!r}: "
                                    f"{text[max(0, bad.start() - 60): bad.end() + 20]!r}")
    bodies.drop(key)
    path.unlink()
    return watch.findings


def check_stored(watch: Watch, reloaded: Any, live: Any) -> None:
    """Invariant 4: the thread from the store is the live one."""
    try:
        a, b = reloaded.to_wire(), live.to_wire()
    except Exception as exc:  # noqa: BLE001
        watch.find("stored", f"to_wire failed: {type(exc).__name__}: {exc}")
        return
    if a != b:
        keys = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
        first = keys[0]
        stored, live_text = (json.dumps(side.get(first), default=repr)[:150] for side in (a, b))
        watch.find("stored", f"reloaded thread differs in {keys}; {first}: stored {stored} live {live_text}")


# -------------------------------------------------------------------------------------------------
# Running one case on one shell
# -------------------------------------------------------------------------------------------------


@dataclass
class Step:
    """One run of a case: the body the agent answers with and how the run is asked for."""

    key: str
    message: str | None = "hi"
    resume_from: random.Random | None = None  # (when set: resume whatever is open, bent by this random)
    quiet: bool = False  # (``run()``, which folds each read at once and hands out no events, else ``stream()``)
    sent: Callable[[], int | None] = lambda: 0  # (how many requests reached the agent for this step)


def _client_kwargs(store: Any) -> dict[str, Any]:
    return {"store": store, "idle_timeout": 5.0, "run_timeout": 20.0, "clock": lambda: NOW, "max_retries": 0}


def _after_run(watch: Watch, thread: Any, events: list[Any], result: Any, exc: BaseException | None,
               reload: Callable[[], Any], step: Step) -> None:
    from agui_client import ProtocolError, ResumeRefused, UnencodableValue

    if isinstance(exc, (ResumeRefused, UnencodableValue)) and step.sent():
        watch.find("typed", f"{type(exc).__name__} says nothing was sent, yet the agent got {step.sent()} request(s)")

    if watch.refused is None:
        watch.refused = isinstance(exc, ProtocolError)
    try:
        wire = thread.state.to_wire()
        watch.summary.append((type(exc).__name__ if exc is not None else None, getattr(exc, "rule", None),
                              getattr(exc, "index", None), getattr(result, "outcome", None),
                              [(m.get("role"), m.get("content")) for m in wire.get("messages", [])],
                              wire.get("state"), wire.get("openInterrupts"), len(events)))
    except Exception:  # noqa: BLE001 - the state's own check reports it
        pass
    if exc is not None:
        check_error(watch, exc, thread)
    check_codes(watch, exc, result)
    if result is not None:
        # (all of the result but its ``state``, which is the live thread: documented to change with later runs)
        watch.hand("result", {f.name: getattr(result, f.name) for f in attrs.fields(type(result)) if f.name != "state"})
        watch.hand("result.messages", result.messages)
        watch.hand("result.interrupts", result.interrupts)
    try:
        watch.hand("state.to_wire()", thread.state.to_wire())
        watch.hand("state.messages", thread.state.messages)
        watch.hand("state.state", thread.state.state)
        watch.hand("state.open_interrupts", thread.state.open_interrupts)
        watch.hand("state.usage_by_run", thread.state.usage_by_run)
        watch.hand("state.pending_tool_call_ids", thread.state.pending_tool_call_ids)
    except Exception as exc2:  # noqa: BLE001
        watch.find("kept", f"state unreadable: {type(exc2).__name__}: {exc2}")
        return
    check_rendered(watch, events, result, exc, thread.state)
    # A run that raised is not saved (docs/streaming.md, TR-16): the store still holds the thread as the
    # last run that ended left it. One that ended is saved: the store holds the live thread.
    try:
        reloaded = reload()
    except Exception as exc2:  # noqa: BLE001
        watch.find("stored", f"reload failed: {type(exc2).__name__}: {exc2}")
        return
    ended = _ended(thread) > watch.ended_before
    if exc is None:
        watch.saved = thread.state.to_wire()
        check_stored(watch, reloaded, thread.state)
    elif ended or getattr(exc, "thread_saved", False):
        # (a run of the response ended before the failure, or it asked questions: saved as far as that)
        watch.saved = reloaded.to_wire()
    elif watch.saved is not None and reloaded.to_wire() != watch.saved:
        watch.find("stored", f"after a failed run the store no longer holds the last saved thread "
                             f"({type(exc).__name__})")


def _ended(thread: Any) -> int:
    return sum(1 for run in thread.state.runs if run.terminated)


def _resume(step: Step, thread: Any) -> tuple[Any, str | None]:
    if step.resume_from is None:
        return None, step.message
    ids = [i.id for i in thread.state.open_interrupts]
    return resume_entries(step.resume_from, ids), None


def run_sync(url: str, store: Any, thread_id: str, steps: list[Step]) -> Watch:
    from agui_client import AgentClient

    watch = Watch("sync")
    with AgentClient(url, **_client_kwargs(store)) as client:
        thread = client.thread(thread_id)
        for step in steps:
            client.url = f"{url}c/{step.key}"
            events: list[Any] = []
            result, exc = None, None
            try:
                watch.ended_before = _ended(thread)
                resume, message = _resume(step, thread)
                if step.quiet:
                    result = thread.run(message, resume=resume)
                else:
                    with thread.stream(message, resume=resume) as stream:
                        for event in stream:
                            events.append(event)
                            watch.hand("event", event)
                    result = stream.result
            except Exception as caught:  # noqa: BLE001 - judged by check_error
                exc = caught
            _after_run(watch, thread, events, result, exc, lambda: client.thread(thread_id).state, step)
    watch.settle()
    return watch


async def run_async(url: str, store: Any, thread_id: str, steps: list[Step]) -> Watch:
    from agui_client import AsyncAgentClient

    watch = Watch("async")
    async with AsyncAgentClient(url, **_client_kwargs(store)) as client:
        thread = await client.load_thread(thread_id)
        for step in steps:
            client.url = f"{url}c/{step.key}"
            events: list[Any] = []
            result, exc = None, None
            try:
                watch.ended_before = _ended(thread)
                resume, message = _resume(step, thread)
                if step.quiet:
                    result = await thread.run(message, resume=resume)
                else:
                    async with thread.stream(message, resume=resume) as astream:
                        async for event in astream:
                            events.append(event)
                            watch.hand("event", event)
                    result = astream.result
            except Exception as caught:  # noqa: BLE001 - judged by check_error
                exc = caught
            reloaded = (await client.load_thread(thread_id)).state
            _after_run(watch, thread, events, result, exc, functools.partial(lambda state: state, reloaded), step)
    watch.settle()
    return watch


def deadline(seconds: float, work: Callable[[], Watch], shell: str) -> Watch:
    """``work()`` in a thread of its own; a watch saying ``hang`` when it takes longer than ``seconds``."""
    box: list[Watch] = []
    failure: list[BaseException] = []

    def target() -> None:
        try:
            box.append(work())
        except BaseException as exc:  # noqa: BLE001 - reported as the finding it is
            failure.append(exc)

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        watch = Watch(shell)
        watch.find("hang", f"no answer in {seconds} s")
        return watch
    if failure:
        watch = Watch(shell)
        exc = failure[0]
        watch.find("typed", f"escaped the harness: {type(exc).__name__}: {exc!s:.300}")
        return watch
    return box[0]


# -------------------------------------------------------------------------------------------------
# The run
# -------------------------------------------------------------------------------------------------


def demo_streams(url: str) -> list[list[Event]]:
    """What the bundled demo agent answers: a new message, then an approving resume."""
    from agui_client import AgentClient, ResumeEntry, encode

    out: list[list[Event]] = []
    with AgentClient(url) as client:
        thread = client.thread()
        for message, resume in (("Delete the staging environment", None), (None, True)):
            entries = [ResumeEntry(interrupt_id=i.id, status="resolved", payload={"approved": True})
                       for i in thread.state.open_interrupts] if resume else None
            with thread.stream(message, resume=entries) as stream:
                out.append([encode(event) for event in stream])
    return out


@dataclass
class Tally:
    """Cases run and findings, by invariant."""

    cases: int = 0
    runs: int = 0
    findings: dict[str, int] = field(default_factory=dict)
    first: dict[str, str] = field(default_factory=dict)
    compared: int = 0
    verdicts: dict[str, int] = field(default_factory=dict)
    #: How the sync shell's runs came out (an error's class and rule, or the outcome), to see what was reached.
    outcomes: dict[str, int] = field(default_factory=dict)


def _asks(events: list[Event]) -> bool:
    """Whether the stream's last run ends with an interrupt outcome."""
    ends = [e for e in events if isinstance(e, dict) and e.get("type") in ("RUN_FINISHED", "RUN_ERROR")]
    return bool(ends) and isinstance(ends[-1].get("outcome"), dict) and ends[-1]["outcome"].get("type") == "interrupt"


def run_case(bodies: Bodies, url: str, seed: int, index: int, pool: list[Seed], stores: dict[str, Any],
             only: list[str] | None, limit: float) -> tuple[Case, list[Finding], list[bytes]]:
    """Case ``index`` of ``seed`` on both shells; its findings, and the bodies it was answered with."""
    from agui_client.stores import MemoryStore

    rng = random.Random(f"{seed}:{index}")
    base = rng.choice(pool)
    asking = [s for s in pool if _asks(s.events)]
    if asking and rng.random() < 0.15:
        # An honest run that asks, then a bent resume and a mutated answer: the resume checks and what
        # follows them are reached far more often than through a mutated first run that happens to ask.
        base = rng.choice(asking)
        case = Case(base.events, ["honest"], body=b"".join(
            b"data: " + dump(e).encode("utf-8", "surrogatepass") + b"\n\n" for e in base.events))
        resumed = True
    else:
        case = mutate(rng, base.events, rng.choice(pool).events, only)
        resumed = rng.random() < 0.3
    case.ops.insert(0, base.name)
    answers = [(case.body or b"", cuts_of(rng, case.body or b""))]
    if resumed:
        follow = mutate(rng, rng.choice(pool).events, [], only) if rng.random() < 0.5 else Case(
            [], body=b'data: {"type":"RUN_STARTED","threadId":"t","runId":"r2"}\n\n'
                     b'data: {"type":"RUN_FINISHED","threadId":"t","runId":"r2"}\n\n')
        answers.append((follow.body or b"", cuts_of(rng, follow.body or b"")))
        case.ops.append("resume")
    on_sqlite = rng.random() < 0.5
    quiet = rng.random() < 0.3
    if quiet:
        case.ops.append("run()")
    findings: list[Finding] = []
    summaries: list[list[Any]] = []
    case.refused = None
    for shell in ("sync", "async"):
        key = f"s{seed}c{index}{shell}"
        for n, (body, cuts) in enumerate(answers):
            bodies.put(f"{key}-{n}", body, cuts)
        steps = [Step(f"{key}-0", quiet=quiet, sent=functools.partial(bodies.hits.get, f"{key}-0", 0))]
        if resumed:
            steps.append(Step(f"{key}-1", resume_from=random.Random(f"{seed}:{index}:resume"), quiet=quiet,
                              sent=functools.partial(bodies.hits.get, f"{key}-1", 0)))
        store = stores[shell] if on_sqlite else MemoryStore()
        thread_id = f"t-{seed}-{index}"
        work = functools.partial(run_sync, url, store, thread_id, steps) if shell == "sync" else \
            functools.partial(asyncio.run, run_async(url, store, thread_id, steps))
        watch = deadline(limit, work, shell)
        findings += watch.findings
        summaries.append(watch.summary)
        if shell == "sync":
            case.outcomes = [f"{s[0]}:{s[1]}" if s[0] else f"outcome:{s[3]}" for s in watch.summary]
            case.refused = watch.refused
        for n in range(len(answers)):
            bodies.drop(f"{key}-{n}")
    if len(summaries) == 2 and summaries[0] != summaries[1] and not findings:
        differ = next(n for n, (a, b) in enumerate(zip(*summaries, strict=False)) if a != b) if all(summaries) else 0
        findings.append(Finding("shells", "both", f"sync and async differ at run {differ}: "
                                f"{json.dumps(summaries[0][differ:differ + 1], default=repr)[:180]} | "
                                f"{json.dumps(summaries[1][differ:differ + 1], default=repr)[:180]}"))
    return case, findings, [body for body, _ in answers]


@contextmanager
def harness(with_demo: bool = True) -> Iterator[tuple[Bodies, str, list[Seed], dict[str, Any]]]:
    """The server, the seeds and the two SQLite stores (one per shell) of a fuzzing run."""
    from agui_client.stores import SqliteStore
    from agui_client.testing import ScriptedAgent, serve

    with ExitStack() as stack:
        bodies = Bodies()
        url = stack.enter_context(serve(bodies))
        demo: list[list[Event]] = []
        if with_demo:
            demo = demo_streams(stack.enter_context(serve(ScriptedAgent.demo())))
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="agui-mutate-")))
        stores = {shell: SqliteStore(folder / f"{shell}.db") for shell in ("sync", "async")}
        for store in stores.values():
            stack.callback(store.close)
        yield bodies, url, seeds(demo), stores


def reference_refuses(oracle: Any, body: bytes, folder: Path) -> bool | None:
    """Whether the reference client refuses ``body`` on its HTTP path (``None``: the oracle failed)."""
    from .reference import Stream, make_golden, run_reference

    path = folder / "case.sse"
    path.write_bytes(body)
    try:
        out = run_reference(oracle, Stream("case", path))
    except (make_golden().OracleFailure, RecursionError):
        # (RecursionError: the reference's fold of a deeply nested value, read back by make_golden's json)
        return None
    return not out.get("ok")


def fuzz(seed: int, cases: int, first: int = 0, only: list[str] | None = None, limit: float = 60.0,
         save: Path | None = None, report: Callable[[str], None] = print, oracle: Any = None,
         oracle_every: int = 10, cli_every: int = 10) -> Tally:
    """Run cases ``first`` … ``first + cases - 1`` of ``seed``; one line per finding through ``report``.

    With ``oracle`` (make_golden's ``Oracle``), every ``oracle_every``-th case's first body is also folded
    by the reference client, and a verdict that differs from ours is reported as a ``VERDICT`` line, for
    triage against the documented differences (not counted as a finding: most are documented ones, a
    stream without its terminal event, CR line ends, a payload the reference cannot parse where we drop
    the frame with a warning)."""
    tally = Tally()
    # (the library's Python warnings, AguiWarning, say what a run tolerated; they are no finding, and a
    # test run that makes warnings errors must not turn them into one)
    with warnings.catch_warnings(), harness() as (bodies, url, pool, stores), \
            tempfile.TemporaryDirectory() as scratch:
        warnings.simplefilter("ignore", AguiWarning)
        for index in range(first, first + cases):
            case, findings, answers = run_case(bodies, url, seed, index, pool, stores, only, limit)
            if cli_every and index % cli_every == 0:
                findings += check_cli(bodies, url, f"s{seed}c{index}cli", answers[0], Path(scratch))
            if oracle is not None and index % oracle_every == 0 and case.refused is not None:
                theirs = reference_refuses(oracle, answers[0], Path(scratch))
                tally.compared += 1
                if theirs is not None and theirs != case.refused:
                    key = f"{'+'.join(case.ops[1:])}: ours {'refuse' if case.refused else 'accept'}"
                    tally.verdicts[key] = tally.verdicts.get(key, 0) + 1
                    report(f"VERDICT {seed} {index} {'+'.join(case.ops)}: we "
                           f"{'refuse' if case.refused else 'accept'} ({case.outcomes[0] if case.outcomes else '?'}), "
                           f"the reference {'refuses' if theirs else 'accepts'}")
            tally.cases += 1
            for n, outcome in enumerate(case.outcomes):
                label = f"{'resume ' if n else ''}{outcome}"
                tally.outcomes[label] = tally.outcomes.get(label, 0) + 1
            tally.runs += 2 * len(answers)
            for finding in findings:
                tally.findings[finding.invariant] = tally.findings.get(finding.invariant, 0) + 1
                line = f"FINDING {seed} {index} {'+'.join(case.ops)} {finding.invariant} {finding.shell}: " \
                       f"{finding.detail}"
                tally.first.setdefault(finding.invariant, line)
                report(line)
            if findings and save is not None:
                save.mkdir(parents=True, exist_ok=True)
                for n, body in enumerate(answers):
                    (save / f"s{seed}-c{index}-{n}.sse").write_bytes(body)
    return tally


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.differential.mutate", description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cases", type=int, default=500)
    parser.add_argument("--first", type=int, default=0, help="the first case's number (to rerun one case)")
    parser.add_argument("--only", default="", help=f"operations to draw from (comma separated): {','.join(ALL_OPS)}")
    parser.add_argument("--deadline", type=float, default=60.0, help="seconds a case may take on one shell")
    parser.add_argument("--save", type=Path, help="write each failing case's bodies here")
    parser.add_argument("--oracle", type=Path, help="the shared oracle with `npm ci` done: compare verdicts")
    parser.add_argument("--oracle-every", type=int, default=10, help="compare every K-th case with the oracle")
    parser.add_argument("--node", default="node")
    parser.add_argument("--cli-every", type=int, default=10, help="run agui replay, verify and run on every K-th case")
    parser.add_argument("--outcomes", action="store_true", help="count how the runs ended, by error class and rule")
    args = parser.parse_args(argv)
    only = [op for op in args.only.split(",") if op] or None
    unknown = sorted(set(only or ()) - set(ALL_OPS))
    if unknown:
        parser.error(f"unknown operations: {unknown}")
    oracle = None
    if args.oracle is not None:
        from .reference import make_golden

        oracle = make_golden().Oracle(args.oracle.resolve(), args.node)
    tally = fuzz(args.seed, args.cases, args.first, only, args.deadline, args.save, oracle=oracle,
                 oracle_every=args.oracle_every, cli_every=args.cli_every)
    print(f"seed {args.seed}: {tally.cases} cases, {tally.runs} runs, findings: "
          f"{json.dumps(tally.findings, sort_keys=True) if tally.findings else 'none'}"
          + (f"; {tally.compared} compared with the reference, {sum(tally.verdicts.values())} verdicts differ"
             if oracle is not None else ""))
    if args.outcomes:
        for label, count in sorted(tally.outcomes.items(), key=lambda item: -item[1]):
            print(f"{count:7d} {label}")
    return 1 if tally.findings else 0


if __name__ == "__main__":
    sys.exit(main())
