"""What answering interrupts in ``agui chat`` copies of their ``responseSchema``s.

Each read of a thread's open interrupts hands out copies of every schema (so a caller changing what it
was handed changes nothing the resume checks). The chat read them again per answer (to ask whether
several were open) and judged each answer tried through a builder of its own, which copies the schema
it is given: 300 interrupts cost 182,400 copies. The schemas are only read; the copies a turn makes now
grow with the interrupts, not with their square.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from clikit import agui_here

from agui_client import InvalidResumePayload
from agui_client.cli import forms
from agui_client.core import interrupts
from agui_client.testing import ScriptedAgent
from agui_client.types.run import Interrupt

#: A schema the spy knows again by its title (the copies are equal to it, never the same object).
SCHEMA = {"title": "counted", "type": "object", "required": ["answer"],
          "properties": {"answer": {"type": "string"}, "note": {"type": "string", "default": "none"}}}


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the copies made of :data:`SCHEMA`: every interrupt's schema is copied by ``KeptInterrupts``,
    from its bytes (``thawed_json``, all of an owner's at once) or one value at a time (``copy_json``,
    ``foreign_copy``)."""
    copies = [0]

    def counted(value: Any) -> bool:
        return isinstance(value, dict) and value.get("title") == "counted"

    def spying(real: Callable[..., Any], many: bool) -> Callable[..., Any]:
        def spy(*args: Any) -> Any:
            made = real(*args)
            copies[0] += sum(map(counted, made)) if many else counted(made)
            return made
        return spy

    monkeypatch.setattr(interrupts, "thawed_json", spying(interrupts.thawed_json, True))
    monkeypatch.setattr(interrupts, "copy_json", spying(interrupts.copy_json, False))
    monkeypatch.setattr(interrupts, "foreign_copy", spying(interrupts.foreign_copy, False))
    return copies


def _copies_answering(n: int, served: Callable[[Any], Any], monkeypatch: pytest.MonkeyPatch) -> int:
    endpoint = served(ScriptedAgent.interrupts(n, response_schema=SCHEMA))
    copies = _counting(monkeypatch)
    done = agui_here("chat", endpoint.url, stdin="hi\n" + "yes\n\n" * n)
    assert done.returncode == 0, done.stderr
    # (every interrupt answered, and the resume's run took every answer)
    assert done.stdout.count('answered {"answer":"yes","note":"none"}') == n
    return copies[0]


def test_the_copies_of_the_schemas_grow_with_the_interrupts_not_their_square(
        served: Callable[[Any], Any], monkeypatch: pytest.MonkeyPatch) -> None:
    few = _copies_answering(2, served, monkeypatch)
    many = _copies_answering(12, served, monkeypatch)

    # The same copies for each interrupt however many are open (before: 12 each for 2, 32 each for 12;
    # now 3: the fold's, the chat's one read, the builder's; the run's checks read the thread's own)
    assert few > 0 and many * 2 == few * 12
    assert few == 3 * 2  # (a read's copy of what a builder is given was a fourth)


def test_judging_an_answer_alone_copies_no_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    # (each answer tried is judged: a builder made for it copied the schema every time)
    copies = _counting(monkeypatch)
    interrupt = Interrupt(id="i1", reason="input", response_schema=SCHEMA)

    forms.judge_alone(interrupt, {"answer": "yes"}, max_schema_steps=None)
    with pytest.raises(InvalidResumePayload):
        forms.judge_alone(interrupt, {"answer": 5}, max_schema_steps=None)

    assert copies[0] == 0
