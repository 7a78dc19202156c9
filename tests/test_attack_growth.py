"""Hostile stream content that aimed at the client's time or memory (the growth audit, issue 21).

Each test builds what a hostile agent could send (thousands of interrupts, ids, warnings ...) and
checks that the work or memory it costs stays bounded by what was received: no timing is asserted,
the work is counted (a hash counted on an id, a structure's size) or memory measured against the input.
"""

from __future__ import annotations

import pytest

from agui_client.core.interrupts import ResumeBuilder
from agui_client.errors import UnknownInterrupt
from agui_client.types.run import Interrupt


class _CountedId(str):
    """An interrupt id that counts how often it is hashed (each dict or set lookup or insert hashes it)."""

    hashed = 0

    def __hash__(self) -> int:
        _CountedId.hashed += 1
        return str.__hash__(self)


def test_answering_interrupts_one_by_one_reads_each_id_a_bounded_number_of_times() -> None:
    # Each answer read every open id again (n² hashes: 4 s for 8,000 interrupts); now the ids are
    # read once when the builder is made, and each answer looks its own id up.
    n = 2000
    interrupts = [Interrupt(id=_CountedId(f"i{k}"), reason="tool_approval") for k in range(n)]
    _CountedId.hashed = 0
    builder = ResumeBuilder(interrupts)
    for interrupt in interrupts:
        builder.answer(interrupt.id, {"ok": True})
    assert _CountedId.hashed <= 4 * n
    assert len(builder.build()) == n


def test_an_unknown_answer_lists_ten_open_interrupts_and_counts_the_rest() -> None:
    builder = ResumeBuilder([Interrupt(id=f"i{k}" + "x" * 500, reason="r") for k in range(5000)])
    with pytest.raises(UnknownInterrupt) as caught:
        builder.answer("nope", {})
    assert "(4990 more)" in str(caught.value)
    assert len(str(caught.value)) < 2000
    assert len(caught.value.open_ids) == 5000
