"""The interrupts of a ``RUN_FINISHED`` the session refuses, held open on the thread all the same.

An interrupt outcome says the agent stopped to ask, and the next run must answer or abandon what it
asked. A session refuses such an event in one of three ways, and none may lose the interrupts:

* too malformed to decode (``IR-27``): whatever can be read of them from its JSON (:func:`hold_from_json`);
* decoded, then refused by a sequence rule (``IR-06`` and its class): as decoded (:func:`hold_from_event`);
* decoded, with schemas that would cost the resume answering them too much (``SCHEMA-STEPS``, judged by
  :func:`costly_schemas`): as decoded, the same way.

Either way the thread holds them open (one per id, the first: the ledger's rule), and the error that
refuses the event carries them as held (``.interrupts``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._inert import quoted_name
from ..errors import LimitExceeded, ProtocolError
from ..wire.jsonio import json_problem
from ..wire.types import events as ev
from ..wire.types import run as rn
from .schema import past_ceiling

if TYPE_CHECKING:
    from .fold import ThreadState

__all__ = ["hold_from_json", "hold_from_event", "costly_schemas"]


def hold_from_json(state: ThreadState, run_id: str | None, raw: dict[str, Any], exc: ProtocolError) -> None:
    """Hold open the interrupts ``raw``, a ``RUN_FINISHED`` refused before it was decoded, names in
    ``state`` (as asked in the run ``run_id``), and give them to ``exc``."""
    # IR-27: a RUN_FINISHED too malformed to accept may still name interrupts (a success outcome
    # carrying them, a boolean responseSchema). Losing them would let the next run skip what the
    # agent asked, so whatever can be read of them is held open, and the error carries them.
    outcome = raw.get("outcome")
    items = outcome.get("interrupts") if type(outcome) is dict else None
    if type(items) is not list:
        return
    held: list[rn.Interrupt] = []
    for item in items:
        if type(item) is not dict or type(item.get("id")) is not str:
            continue
        text = {k: item[k] for k in ("message", "toolCallId", "expiresAt", "subagentRunId")
                if type(item.get(k)) is str}
        held.append(rn.Interrupt(
            id=item["id"], reason=item["reason"] if type(item.get("reason")) is str else "unknown",
            message=text.get("message"), tool_call_id=text.get("toolCallId"), expires_at=text.get("expiresAt"),
            subagent_run_id=text.get("subagentRunId"),
            response_schema=_json_object(item.get("responseSchema")), metadata=_json_object(item.get("metadata"))))
    if held:
        state.hold_interrupts(tuple(held), run_id)
        exc.interrupts = state.open_interrupts  # type: ignore[attr-defined]  # (as held: one per id)


def hold_from_event(state: ThreadState, run_id: str | None, event: ev.Event | ev.UnknownEvent,
                    exc: ProtocolError) -> None:
    """Hold open the interrupts of ``event`` in ``state`` (as asked in the run ``run_id``) when it is an
    interrupt outcome a sequence rule refused, and give them to ``exc``; nothing for any other event."""
    # IR-06 and its class: an interrupt outcome the sequence rules refuse (a repeated interrupt id, a
    # message left open) still says the agent stopped to ask. Dropping its interrupts would let the
    # next run move past them, so they are held open and the error carries them, as for a
    # RUN_FINISHED too malformed to decode (IR-27).
    if type(event) is ev.RunFinishedEvent and type(event.outcome) is rn.RunFinishedInterruptOutcome:
        asked = event.outcome.interrupts
        state.hold_interrupts(asked, run_id)  # (one per id, the first: the ledger's rule)
        exc.interrupts = state.open_interrupts  # type: ignore[attr-defined]  # (as held: one per id)


def costly_schemas(interrupts: Sequence[rn.Interrupt], ceiling: int, *, plain: bool = False) -> LimitExceeded | None:
    """The refusal of interrupts whose schemas would buy a resume more than ``ceiling`` steps, if they do
    (``plain``: the schemas are plain JSON a parser made, measured at C speed: ``schema.text_length``).

    A resume's allowance grows with its schemas' text (see ``schema.shared_allowance``), so a
    ``RUN_FINISHED`` of 16 MiB of schemas that multiply their work bought 16 million steps, some
    9 s of the caller's thread when the interrupts are answered. Measured by the allowance's own
    arithmetic when the schemas arrive, it is refused as it is read; its interrupts are still held
    open (:func:`hold_from_event`), and the resume that answers them stays within the ceiling.
    """
    asking = [(n, interrupt) for n, interrupt in enumerate(interrupts) if interrupt.response_schema is not None]
    past = past_ceiling((interrupt.response_schema for _, interrupt in asking), ceiling, plain=plain)
    if past is None:
        return None
    position, steps = past
    n, interrupt = asking[position]
    return LimitExceeded(
        f"the responseSchemas of its interrupts would let a resume spend {steps:,} steps checking answers "
        f"against them, past the client's max_schema_steps ({ceiling:,}), from interrupt "
        f"{quoted_name(interrupt.id)}'s on", limit=ceiling, rule="SCHEMA-STEPS",
        pointer=f"/outcome/interrupts/{n}/responseSchema", interrupt_id=interrupt.id)


def _json_object(value: Any) -> dict[str, Any] | None:
    """``value`` when it is an object all of which is JSON, else ``None`` (a held interrupt's field: one
    holding what JSON cannot, an infinity read from a refused payload, would make the thread unsavable)."""
    return value if type(value) is dict and json_problem(value) is None else None
