"""A run's task cancelled again while its first cancellation is being handled: nothing is left behind.

A web framework cancels the handler of a client that went away, and may cancel it again while the
handler cleans up (a server shutting down, a ``TaskGroup`` whose other tasks fail one after another).
The second cancellation comes while the run closes its response: httpx marks the response closed
before httpcore lets go of the connection, and anyio's shield, which httpcore's close takes, does not
hold off asyncio's own ``Task.cancel()``. The connection must still go back: a pool with a cap
(``max_connections=1`` here) would otherwise have lost its place for good, and the next run would
wait for it until its pool timeout.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from serverkit import httpcore_pools

import agui_client as ag
from agui_client.testing import Finish, Gate, ScriptedAgent, Start, Wait, last_user_text, text_message

#: The longest a wait of these tests may take before the test fails (a leak, not a slow machine).
BOUND = 10.0


def active(pool: Any) -> list[Any]:
    """The connections of httpcore's ``pool`` a request still holds (neither idle nor closed)."""
    return [c for c in pool._connections if not c.is_idle() and not c.is_closed()]


@pytest.mark.parametrize("pool", ["capped", "own"])
@pytest.mark.parametrize("shape", ["run", "stream"])
@pytest.mark.parametrize("turns", [0, 1, 2])
def test_a_run_cancelled_again_while_it_closes_gives_its_connection_back(served: Any, shape: str, turns: int,
                                                                          pool: str) -> None:
    gate = Gate()

    def step(run_input: Any) -> Any:
        if last_user_text(run_input) == "go":
            return [Start(), *text_message("m-half", "half an answer"), Wait(gate), Finish()]
        return [Start(), *text_message(f"m-{run_input.run_id}", "ok"), Finish()]

    endpoint = served(ScriptedAgent([step], cycle=True))

    async def main() -> None:
        capped = {"http_client": httpx.AsyncClient(limits=httpx.Limits(max_connections=1))} if pool == "capped" else {}
        async with ag.AsyncAgentClient(endpoint.url, timeout=BOUND, **capped) as client:
            thread = await client.load_thread()
            assert (await thread.run("first")).outcome == "success"

            async def work() -> None:
                if shape == "run":
                    await thread.run("go")
                    return
                async with thread.stream("go") as stream:
                    async for _ in stream:
                        pass

            task = asyncio.create_task(work())
            await asyncio.wait_for(asyncio.to_thread(gate.wait_reached, BOUND), BOUND)
            task.cancel()
            for _ in range(turns):  # (the first cancellation's handling goes on meanwhile)
                await asyncio.sleep(0)
            task.cancel()
            await asyncio.sleep(0)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await asyncio.wait_for(task, BOUND)
            gate.open()

            for under in httpcore_pools(client.http):
                assert active(under) == [] and not under._requests
            stored = client.store.load(thread.id)
            assert stored is not None and stored.claim is None  # (the turn gave the thread back)
            # The next run gets the pool's one connection at once (it would wait for BOUND, then fail).
            again = await asyncio.wait_for(thread.run("again"), BOUND)
            assert again.outcome == "success"
        if capped:
            await capped["http_client"].aclose()

    asyncio.run(main())
