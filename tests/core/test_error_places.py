"""What an error quotes of a place in a value the caller built: each key bounded, the steps bounded, the
place still named (``_inert.shown_pointer``); the error's ``pointer`` attribute whole."""

from __future__ import annotations

from typing import Any

import pytest

from agui_client import UnencodableValue
from agui_client._inert import KEY_CHARS, POINTER_STEPS, shown_pointer
from agui_client.core.fold import ThreadState
from agui_client.core.interrupts import ResumeBuilder
from agui_client.errors import UnencodableResumePayload
from agui_client.testing import ScriptedAgent
from agui_client.types.run import Interrupt
from agui_client.wire.records import dump_record

__all__: list[str] = []

#: A key of a mebibyte (an agent's state may hold one of 16 MiB, sent back in every request).
LONG = 1 << 20
KEY = "k" * LONG
#: The longest a message naming a place is let be here (the rest of it is a few words).
BOUNDED = 1_000


def test_a_pointer_shows_each_long_step_cut_with_its_length_and_the_steps_around_it_whole() -> None:
    assert shown_pointer("") == "/"
    assert shown_pointer("/rows/3/name") == "/rows/3/name"
    assert shown_pointer("/" + "k" * KEY_CHARS) == "/" + "k" * KEY_CHARS  # (a step of the bound is whole)
    assert shown_pointer(f"/rows/{KEY}/x~1y") == f"/rows/{'k' * KEY_CHARS}...(1,048,576 characters)/x~1y"
    # (what a terminal obeys, in a key the agent chose, is shown as its escape)
    assert shown_pointer("/a\x1b[2Jb") == "/a\\x1b[2Jb"


def test_a_deep_pointer_shows_its_first_and_last_steps_and_how_many_between() -> None:
    pointer = "/rows" + "/0" * 100_000 + "/x"

    shown = shown_pointer(pointer)

    assert shown == "/rows" + "/0" * (POINTER_STEPS - 1) + "/...(99,970 steps)" + "/0" * (POINTER_STEPS - 1) + "/x"
    assert shown_pointer("/0" * (2 * POINTER_STEPS)) == "/0" * (2 * POINTER_STEPS)  # (none left out: whole)


def test_state_refused_behind_a_long_key_names_the_place_bounded(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent.chat("unused"))
    with drive.client(endpoint.url) as client:
        with pytest.raises(UnencodableValue) as refused:
            client.thread().run("hi", state={"rows": [{KEY: [1, float("nan")]}]})

    error = refused.value
    assert len(str(error)) < BOUNDED
    assert f"/rows/0/{'k' * KEY_CHARS}...(1,048,576 characters)/1" in str(error)
    assert (error.field, error.pointer) == ("state", f"/rows/0/{KEY}/1")  # (whole: it looks the place up)
    assert endpoint.received == []  # (nothing was sent)


def test_a_thread_given_deep_state_that_is_not_json_names_the_place_bounded() -> None:
    deep: Any = float("inf")
    for _ in range(50_000):
        deep = [deep]

    with pytest.raises(UnencodableValue) as refused:
        ThreadState(state={KEY: deep})

    error = refused.value
    assert len(str(error)) < BOUNDED and "...(1,048,576 characters)/0/0/" in str(error)
    assert "/...(49,969 steps)/" in str(error)
    assert error.pointer == f"/{KEY}" + "/0" * 50_000


def test_a_resume_payload_refused_behind_a_long_key_names_the_place_bounded() -> None:
    builder = ResumeBuilder([Interrupt(id="i1", reason="approval")])

    with pytest.raises(UnencodableResumePayload) as refused:
        builder.answer("i1", {"answers": {KEY: {"when": {1, 2}}}})

    error = refused.value
    assert len(str(error)) < BOUNDED and len(error.errors["i1"][0]) < BOUNDED
    assert f"/answers/{'k' * KEY_CHARS}...(1,048,576 characters)/when" in error.errors["i1"][0]
    assert error.pointer == f"/answers/{KEY}/when"


def test_a_record_holding_itself_behind_a_long_key_names_the_place_bounded() -> None:
    rows: list[Any] = [1]
    rows.append({"again": rows})

    with pytest.raises(UnencodableValue) as refused:
        dump_record({"state": {KEY: rows}})

    error = refused.value
    assert len(str(error)) < BOUNDED
    assert f"/state/{'k' * KEY_CHARS}...(1,048,576 characters)/1/again" in str(error)
    assert error.pointer == f"/state/{KEY}/1/again"
