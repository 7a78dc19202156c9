"""What a resuming run sends, and what one response may hold, through both shells against a real
``ScriptedAgent`` on 127.0.0.1: the agent records each request, so what was sent is read from the wire.
"""

from __future__ import annotations

from typing import Any

import pytest

import agui_client as ag
from agui_client.testing import Finish, ScriptedAgent, Start

__all__: list[str] = []


def ask_then_finish() -> ScriptedAgent:
    """The first run raises interrupt ``i1``; the second finishes."""
    asked = Finish(outcome=ag.RunFinishedInterruptOutcome(interrupts=(ag.Interrupt(id="i1", reason="approval"),)))
    return ScriptedAgent([[Start(), asked], [Start(), Finish()]], stateless=True)


def test_a_cancelled_entry_given_a_payload_warns_and_is_sent_without_it(drive: Any, served: Any) -> None:
    endpoint = served(ask_then_finish())

    with drive.client(endpoint.url) as client:
        thread = client.thread()
        thread.run("delete the staging database")
        with pytest.warns(ag.AguiWarning) as warned:
            entry = ag.ResumeEntry(interrupt_id="i1", status="cancelled", payload={"approved": True},
                                   metadata={"by": "ops"})
        result = thread.run(resume=[entry])

    [warning] = [str(w.message) for w in warned]
    assert "[IR-11]" in warning and "'i1'" in warning
    assert entry.payload is None
    # Abandoning answers nothing: the entry goes out with its envelope and without the payload.
    assert endpoint.received[-1].body["resume"] == [{"interruptId": "i1", "status": "cancelled",
                                                     "metadata": {"by": "ops"}}]
    assert result.outcome == "success"
