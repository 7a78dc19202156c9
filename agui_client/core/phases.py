"""The run-lifecycle phase table: where a stream of runs stands, and what each kind of event does there.

A stream holds one or more runs, one after another (LC-06). Where the stream stands is its
*phase*, and which run-lifecycle event a phase admits is data, in :data:`TRANSITIONS`, in the
manner of h11's state tables::

    idle ──RUN_STARTED──▶ running ──RUN_FINISHED──▶ finished ──RUN_ERROR──▶ late-error
      │                     │                          (the one late RUN_ERROR, CL-02)
      └─RUN_ERROR (LC-02)─▶ errored ◀──RUN_ERROR──┘
    finished / errored / late-error ──RUN_STARTED──▶ running (a fresh run scope)

The table is read by :class:`~agui_client.core.verify.RunVerifier` (the run-lifecycle events) and by
the id rules of ``core/id_rules.py`` (every other event's phase step); this module holds no state.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Literal

from attrs import frozen

__all__ = ["Phase", "PhaseRow", "Violation", "TRANSITIONS", "TERMINATED", "KEEPS"]

Phase = Literal["idle", "running", "finished", "errored", "late-error"]


@frozen(kw_only=True)
class Violation:
    """A lifecycle event a phase does not admit.

    Attributes:
        rule: the rule id and validator code, as on the raised ``SequenceError``.
        message: what went wrong, for a person.
    """

    rule: str
    message: str


@frozen(kw_only=True)
class PhaseRow:
    """What each kind of event does in one phase: the next phase, or the violation it is."""

    run_started: Phase | Violation
    run_finished: Phase | Violation
    run_error: Phase | Violation
    other: Phase | Violation


_NOT_STARTED = Violation(rule="LC-01/AGUI001", message="the first event must be RUN_STARTED (or RUN_ERROR)")
_AFTER_FINISHED = Violation(
    rule="CL-01/AGUI004",
    message="the run already finished; only one late RUN_ERROR or a new RUN_STARTED may follow",
)
_AFTER_ERROR = Violation(
    rule="LC-14/AGUI004", message="the run failed with RUN_ERROR; only a new RUN_STARTED may follow"
)
_AFTER_LATE_ERROR = Violation(
    rule="CL-03/AGUI004",
    message="the closed run already had its one late RUN_ERROR; only a new RUN_STARTED may follow",
)
_FINISHED_AFTER_ERROR = Violation(rule="CL-05/AGUI005", message="RUN_FINISHED after RUN_ERROR")

#: The run-lifecycle phase table: phase -> what RUN_STARTED, RUN_FINISHED, RUN_ERROR and any other
#: event lead to. ``ev.UnknownEvent`` is outside the table.
TRANSITIONS: Mapping[Phase, PhaseRow] = MappingProxyType({
    "idle": PhaseRow(run_started="running", run_finished=_NOT_STARTED, run_error="errored", other=_NOT_STARTED),
    "running": PhaseRow(
        run_started=Violation(rule="LC-05/AGUI002", message="RUN_STARTED while a run is still open"),
        run_finished="finished",
        run_error="errored",
        other="running",
    ),
    "finished": PhaseRow(
        run_started="running", run_finished=_AFTER_FINISHED, run_error="late-error", other=_AFTER_FINISHED
    ),
    "errored": PhaseRow(
        run_started="running", run_finished=_FINISHED_AFTER_ERROR, run_error=_AFTER_ERROR, other=_AFTER_ERROR
    ),
    "late-error": PhaseRow(
        run_started="running", run_finished=_FINISHED_AFTER_ERROR, run_error=_AFTER_LATE_ERROR, other=_AFTER_LATE_ERROR
    ),
})

TERMINATED: frozenset[Phase] = frozenset({"finished", "errored", "late-error"})
#: The phases in which an event that is not a run-lifecycle event keeps the phase (derived from the table).
KEEPS: frozenset[Phase] = frozenset(phase for phase, row in TRANSITIONS.items() if row.other == phase)
