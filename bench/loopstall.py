"""How long each step of an async thread's ordinary work on many forms holds the event loop.

``python -m bench.loopstall [--forms 200] [--reps 3]``: an agent (in a child process, so that its own
work takes no share of this process's interpreter lock) leaves a frontend call held, then asks
``--forms`` 50-field forms; the client answers them all with ``run_until_done(resume=...)``. Beside it
a task on the loop ticks every millisecond. Printed a phase at a time (the run that brings the forms,
the caller's ``open_interrupts`` and ``resume_builder()``, the resume):

- ``gap``: the longest wall-clock time between two ticks, and the loop thread's own CPU time inside it
  (``loop cpu``). A long gap with little loop CPU is the loop waiting for the interpreter's lock, held
  by a worker thread (a resume's check, ``judged()``), or for the machine: not a step of ours.
- ``step``: the most CPU time (``time.thread_time``) one callback of the loop took: one step of ours
  that no other task on the loop can interleave with. Steady under load, where wall-clock gaps are not.
- ``next``: the second most: a phase may hold two long steps (the run that brings the forms: the fold
  of its last read, then its save), and only the longest shows in ``step``.
"""

from __future__ import annotations

import argparse
import asyncio
import asyncio.events
import multiprocessing
import threading
import time
from collections import defaultdict
from typing import Any

import agui_client as ag
from agui_client.testing import Finish, ScriptedAgent, Start, serve, tool_call

from .schemas import form_answer, form_schema

__all__ = ["measure", "main"]


def _agent(forms: int) -> ScriptedAgent:
    held = [Start(), *tool_call("c1", "pick", {"q": "which"}), Finish()]
    asked = tuple(ag.Interrupt(id=f"ask-{n}", reason="input", response_schema=form_schema(n)) for n in range(forms))
    return ScriptedAgent([held, [Start(), Finish(outcome=ag.RunFinishedInterruptOutcome(interrupts=asked))],
                          [Start(), Finish()]])


def _serve(forms: int, urls: Any) -> None:
    with serve(_agent(forms)) as server:
        urls.put(server.url)
        threading.Event().wait()


class _Steps:
    """Each callback the loop runs, timed in the loop thread's CPU time, by phase."""

    def __init__(self) -> None:
        self.phase = "start"
        self.worst: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])  # (the longest two, longest first)
        self._run = asyncio.events.Handle._run

    def __enter__(self) -> _Steps:
        timed = self

        def run(handle: asyncio.events.Handle) -> None:
            began = time.thread_time()
            try:
                timed._run(handle)
            finally:
                spent = time.thread_time() - began
                worst = timed.worst[timed.phase]
                if spent > worst[1]:
                    worst[:] = sorted((*worst, spent), reverse=True)[:2]

        asyncio.events.Handle._run = run  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.events.Handle._run = self._run  # type: ignore[method-assign]


async def measure(forms: int) -> dict[str, dict[str, float]]:
    """One round: per phase, the longest gap between ticks, the loop's CPU inside it, the longest two steps (ms)."""
    spawn = multiprocessing.get_context("spawn")
    urls = spawn.Queue()
    agent = spawn.Process(target=_serve, args=(forms, urls), daemon=True)
    agent.start()
    ticks: list[tuple[float, float, str]] = []
    try:
        url = urls.get(timeout=60)
        with _Steps() as steps:
            async def tick() -> None:
                while True:
                    await asyncio.sleep(0.001)
                    ticks.append((time.perf_counter(), time.thread_time(), steps.phase))

            ticker = asyncio.create_task(tick())
            async with ag.AsyncAgentClient(url) as client:
                thread = client.thread(tool_handlers={"pick": lambda q: "this one"})
                await thread.run("hi")
                await asyncio.sleep(0.01)
                steps.phase = "the run bringing the forms"
                await thread.run("and the forms?")
                await asyncio.sleep(0.01)
                steps.phase = "open_interrupts"
                interrupts = thread.open_interrupts
                await asyncio.sleep(0.01)
                steps.phase = "resume_builder()"
                builder = thread.resume_builder()
                await asyncio.sleep(0.01)
                steps.phase = "answers"
                for n, interrupt in enumerate(interrupts):
                    builder.answer(interrupt.id, form_answer(n))
                    await asyncio.sleep(0)
                await asyncio.sleep(0.01)
                steps.phase = "run_until_done(resume=...)"
                result = await thread.run_until_done(resume=builder)
                await asyncio.sleep(0.01)
                steps.phase = "end"
            ticker.cancel()
            assert result.outcome == "success", result
    finally:
        agent.kill()
        agent.join()
    found: dict[str, dict[str, float]] = {}
    for (at, cpu, _), (then, cpu_then, phase) in zip(ticks, ticks[1:], strict=False):
        seen = found.setdefault(phase, {"gap": 0.0, "loop cpu": 0.0, "step": 0.0, "next": 0.0})
        if (then - at) * 1000 > seen["gap"]:
            seen["gap"], seen["loop cpu"] = (then - at) * 1000, (cpu_then - cpu) * 1000
    for phase, seen in found.items():
        seen["step"], seen["next"] = (spent * 1000 for spent in steps.worst[phase])
    found.pop("start", None)
    found.pop("end", None)
    return found


def main(argv: list[str] | None = None) -> None:
    """Measure ``--reps`` rounds and print each phase's figures (milliseconds)."""
    parser = argparse.ArgumentParser(prog="python -m bench.loopstall", description=__doc__.split("\n")[0])
    parser.add_argument("--forms", type=int, default=200)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args(argv)
    for rep in range(args.reps):
        print(f"round {rep + 1}, {args.forms} forms (ms)")
        for phase, seen in asyncio.run(measure(args.forms)).items():
            print(f"  {phase:30} gap {seen['gap']:7.1f}  loop cpu {seen['loop cpu']:6.1f}  step {seen['step']:6.1f}"
                  f"  next {seen['next']:6.1f}")


if __name__ == "__main__":
    main()
