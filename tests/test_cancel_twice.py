"""A run's task cancelled again while its first cancellation is being handled: nothing is left behind.

A web framework cancels the handler of a client that went away, and may cancel it again while the
handler cleans up (a server shutting down, a ``TaskGroup`` whose other tasks fail one after another).
The second cancellation comes while the run closes its response: httpx marks the response closed
before httpcore lets go of the connection, and anyio's shield, which httpcore's close takes, does not
hold off asyncio's own ``Task.cancel()``. The connection must still go back: a pool with a cap
(``max_connections=1`` here) would otherwise have lost its place for good, and the next run would
wait for it until its pool timeout.

The sync client's twin: a second Ctrl-C while httpcore closes the answer the first one's read ended.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from serverkit import held_connections, httpcore_pools

import agui_client as ag
from agui_client.testing import Finish, Gate, ScriptedAgent, Start, Wait, last_user_text, text_message

#: The longest a wait of these tests may take before the test fails (a leak, not a slow machine).
BOUND = 10.0


def held_at_go(gate: Gate) -> ScriptedAgent:
    """An agent that answers "go" with half an answer, then holds at ``gate``; any other message, "ok"."""

    def step(run_input: Any) -> Any:
        if last_user_text(run_input) == "go":
            return [Start(), *text_message("m-half", "half an answer"), Wait(gate), Finish()]
        return [Start(), *text_message(f"m-{run_input.run_id}", "ok"), Finish()]

    return ScriptedAgent([step], cycle=True)


@pytest.mark.parametrize("pool", ["capped", "own"])
@pytest.mark.parametrize("shape", ["run", "stream"])
@pytest.mark.parametrize("turns", [0, 1, 2])
def test_a_run_cancelled_again_while_it_closes_gives_its_connection_back(served: Any, shape: str, turns: int,
                                                                          pool: str) -> None:
    gate = Gate()
    endpoint = served(held_at_go(gate))

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
                assert held_connections(under) == [] and not under._requests
            stored = client.store.load(thread.id)
            assert stored is not None and stored.claim is None  # (the turn gave the thread back)
            # The next run gets the pool's one connection at once (it would wait for BOUND, then fail).
            again = await asyncio.wait_for(thread.run("again"), BOUND)
            assert again.outcome == "success"
        if capped:
            await capped["http_client"].aclose()

    asyncio.run(main())


@pytest.mark.parametrize("pool", ["capped", "own"])
@pytest.mark.parametrize("shape", ["run", "stream"])
def test_a_sync_run_interrupted_again_while_httpcore_closes_gives_its_connection_back(
        served: Any, shape: str, pool: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # The sync client's twin of the case above: the first Ctrl-C lands in a read, and httpcore closes the
    # answer there and then (marking it closed first); the second lands as the connection lets go of the
    # answer. Nothing later closes it again: the connection stayed active, its socket open, for good.
    import h11
    from httpcore._sync.http11 import HTTP11Connection

    gate = Gate()
    endpoint = served(held_at_go(gate))
    receive, let_go = HTTP11Connection._receive_event, HTTP11Connection._response_closed
    seen: list[bool] = []
    pressed: list[str] = []

    def read_then_ctrl_c(self: Any, *args: Any, **kwargs: Any) -> Any:
        if seen and not pressed:
            pressed.append("in a read")
            raise KeyboardInterrupt
        event = receive(self, *args, **kwargs)
        if isinstance(event, h11.Data) and b'TEXT_MESSAGE_END","messageId":"m-half"' in bytes(event.data):
            seen.append(True)  # (the agent waits at the gate now: the next read would wait for it)
        return event

    def ctrl_c_again_then_let_go(self: Any) -> None:
        if pressed == ["in a read"]:
            pressed.append("in the close")
            raise KeyboardInterrupt
        let_go(self)

    monkeypatch.setattr(HTTP11Connection, "_receive_event", read_then_ctrl_c)
    monkeypatch.setattr(HTTP11Connection, "_response_closed", ctrl_c_again_then_let_go)
    capped = {"http_client": httpx.Client(limits=httpx.Limits(max_connections=1))} if pool == "capped" else {}
    try:
        with ag.AgentClient(endpoint.url, timeout=BOUND, **capped) as client:
            thread = client.load_thread()
            assert thread.run("first").outcome == "success"
            with pytest.raises(KeyboardInterrupt):
                if shape == "run":
                    thread.run("go")
                else:
                    with thread.stream("go") as stream:
                        for _ in stream:
                            pass
            assert pressed == ["in a read", "in the close"]

            for under in httpcore_pools(client.http):
                assert held_connections(under) == [] and not under._requests
            assert endpoint.agent.wait_until(lambda agent: bool(agent.disconnects), BOUND)  # (its socket closed)
            stored = client.store.load(thread.id)
            assert stored is not None and stored.claim is None
            again = thread.run("again")  # (the pool's one connection: it would wait for BOUND, then fail)
            assert again.outcome == "success"
    finally:
        gate.open()
        if capped:
            capped["http_client"].close()
