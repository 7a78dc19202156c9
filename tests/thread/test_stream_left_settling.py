"""What the reader inside a step does with the run's settling it was handed (a stream's block left while
it read: ``STREAM-SHARED``) when its own step ends in a cancellation, and how the run's span ends.

A cancelled task must end cancelled (a task group, a timeout look for its ``CancelledError``): a store
that fails to give the claim back while that reader settles the run is logged, as the block's own exit
logs a failed release while a run's error or interruption goes on. Before, the ``StoreError`` replaced
the ``CancelledError``. Against a ScriptedAgent on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

import agui_client as ag
from agui_client.stores import MemoryStore
from agui_client.testing import Finish, Gate, ScriptedAgent, Start, Wait, text_message

#: The longest a wait of these tests may take before the test fails (a hang, not a slow machine).
BOUND = 10.0


class ReleaseFails(MemoryStore):
    """A store whose ``release`` fails while ``down``."""

    down = False

    def release(self, thread_id: str, *, claimed_version: int, owner: str) -> int:
        if self.down:
            raise ag.StoreError("the store is down", thread_id=thread_id)
        return super().release(thread_id, claimed_version=claimed_version, owner=owner)


def held_agent(held: Gate) -> ScriptedAgent:
    """A first run that holds after its first message (until the test's end); then an ordinary reply."""
    return ScriptedAgent([[Start(), *text_message("m-1", "before"), Wait(held), Finish()],
                          [Start(), *text_message("m-2", "again"), Finish()]])


async def read_first_message(stream: Any) -> None:
    async for event in stream:
        if isinstance(event, ag.TextMessageEndEvent):
            return


async def enter_a_step(stream: Any) -> asyncio.Task[None]:
    """A task reading ``stream``, inside its step (the run held there), which a second reader's refusal proves."""

    async def read() -> None:
        async for _ in stream:
            pass

    reader = asyncio.create_task(read())
    await asyncio.sleep(0)  # (the task's first turn: it runs into the step, where it waits for the agent)
    with pytest.raises(ag.StreamMisused) as refused:
        await read_first_message(stream)
    assert refused.value.code == "STREAM-SHARED"
    return reader


def test_a_cancelled_reader_whose_handed_settling_fails_ends_cancelled_and_the_failure_is_logged(
        served: Any, caplog: pytest.LogCaptureFixture) -> None:
    held = Gate()
    endpoint = served(held_agent(held))
    store = ReleaseFails()

    async def main() -> None:
        async with ag.AsyncAgentClient(endpoint.url, timeout=BOUND, store=store) as client:
            thread = client.thread("cancelled")
            with pytest.raises(ag.StreamMisused) as left:
                async with thread.stream("hi") as stream:
                    await read_first_message(stream)
                    reader = await enter_a_step(stream)
            assert left.value.code == "STREAM-SHARED"
            store.down = True
            reader.cancel()
            with caplog.at_level(logging.WARNING, logger="agui_client"):
                done, _ = await asyncio.wait([reader], timeout=BOUND)
            assert done == {reader}, "the reader never came out"
            assert reader.cancelled()  # (before: it ended with the store's StoreError)
            run_id = stream.run_input.run_id
            assert [r.getMessage() for r in caplog.records] == [
                f"run {run_id!r}: settling it after its stream's block was left failed while the reader inside a "
                "step ended with CancelledError: the store is down"]
            store.down = False
            # (not busy; the claim the failed release left is this object's, given back as after any such failure)
            await thread.release_claim()
            assert (await thread.run("next")).text == "again"

    try:
        asyncio.run(main())
    finally:
        held.open()
