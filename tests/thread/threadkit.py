"""Helpers the thread tests share (one test body, both shells: see ``tests/conftest.py``'s ``drive``)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timezone
from typing import Any

from storekit import BareStore

import agui_client as ag
from agui_client.testing import (
    Finish,
)

UTC = timezone.utc


def interrupted(*ids: str, **fields: Any) -> Finish:
    """``RUN_FINISHED`` ending with the interrupt outcome, one interrupt per id."""
    return Finish(outcome=ag.RunFinishedInterruptOutcome(
        interrupts=tuple(ag.Interrupt(id=i, reason="approval", **fields) for i in ids)))


def finishing(outcome: dict[str, Any] | None) -> Callable[[Any], list[dict[str, Any]]]:
    def step(run_input: Any) -> list[dict[str, Any]]:
        ids = {"threadId": run_input.thread_id, "runId": run_input.run_id}
        finish = {"type": "RUN_FINISHED", **ids, **({"outcome": outcome} if outcome else {})}
        return [{"type": "RUN_STARTED", **ids}, finish]
    return step


#: A third-party store of the protocol without ``append``: every save rewrites the thread.
WholeOnly = BareStore
