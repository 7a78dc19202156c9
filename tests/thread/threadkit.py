"""Helpers the thread tests share (one test body, both shells: see ``tests/conftest.py``'s ``drive``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import timezone
from typing import Any

import agui_client as ag
from agui_client.stores import MemoryStore, StoredThread
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


class WholeOnly:
    """A third-party store of the protocol without ``append``: every save rewrites the thread."""

    def __init__(self) -> None:
        self.inner = MemoryStore()
        self.saves = 0

    def load(self, thread_id: str) -> StoredThread | None:
        return self.inner.load(thread_id)

    def save(self, thread_id: str, data: Mapping[str, Any], *, expected_version: int | None) -> int:
        self.saves += 1
        return self.inner.save(thread_id, data, expected_version=expected_version)

    def claim(self, thread_id: str, *, expected_version: int | None, owner: str,
              data: Mapping[str, Any] | None = None) -> int:
        return self.inner.claim(thread_id, expected_version=expected_version, owner=owner, data=data)

    def release(self, thread_id: str, *, claimed_version: int, owner: str) -> int:
        return self.inner.release(thread_id, claimed_version=claimed_version, owner=owner)

    def delete(self, thread_id: str) -> None:
        self.inner.delete(thread_id)

    def close(self) -> None:
        self.inner.close()
