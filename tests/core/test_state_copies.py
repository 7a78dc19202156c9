"""The copies the thread makes of its state: each read its own, made from bytes kept once a change.

A read of ``thread.state.state`` is a tree of its own (every dict and list new); reads between two
changes are made from the bytes the first of them kept. A patch an event handed out brought keeps the
state plain JSON when its values are as a parser makes them, so the reads after it stay the fast ones;
a value the bytes cannot hold (a tuple, nesting deeper than they go) is copied as before.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from agui_client.core.fold import ThreadState, document
from agui_client.errors import UnencodableValue
from agui_client.wire import values
from agui_client.wire.types import events as ev


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    made: list[str] = []
    for name in ("frozen_json", "thawed_json", "copy_json", "deep_copy"):
        real = getattr(document, name)
        monkeypatch.setattr(document, name, lambda value, real=real, name=name: made.append(name) or real(value))
    return made


def test_reads_between_changes_share_one_kept_form_and_a_change_lets_it_go(monkeypatch: pytest.MonkeyPatch) -> None:
    thread = ThreadState(state={"rows": [{"n": 1}]})
    made = _counting(monkeypatch)
    first, second = thread.state, thread.state
    assert made == ["frozen_json", "thawed_json", "thawed_json"]
    first["rows"][0]["n"] = 2
    assert second == {"rows": [{"n": 1}]} and thread.state == {"rows": [{"n": 1}]}
    made.clear()
    thread.apply(ev.StateDeltaEvent(delta=({"op": "add", "path": "/rows/-", "value": {"n": 3}},)))
    assert thread.state == {"rows": [{"n": 1}, {"n": 3}]} and made == ["frozen_json", "thawed_json"]
    made.clear()
    thread.set_state({"other": [1]})
    assert thread.state == {"other": [1]} and made == ["copy_json", "frozen_json", "thawed_json"]  # (its own copy)
    made.clear()
    thread.document.adopt({"stored": True})  # (a store's fresh record, held as it is)
    assert thread.state == {"stored": True} and made == ["frozen_json", "thawed_json"]


def test_a_patch_handed_out_keeps_the_state_plain_and_a_tuple_in_it_is_read_as_a_list(
        monkeypatch: pytest.MonkeyPatch) -> None:
    thread = ThreadState(state={"rows": []})
    # A stream's events are handed out, so the fold copies their patches: parsed values keep it plain.
    thread.apply(ev.StateDeltaEvent(delta=({"op": "add", "path": "/rows/-", "value": {"n": [1, 2]}},)))
    made = _counting(monkeypatch)
    assert thread.state == {"rows": [{"n": [1, 2]}]} and made == ["frozen_json", "thawed_json"]
    # A tuple built in Python is held as the patch held it; a read hands out a list, as before.
    thread.apply(ev.StateDeltaEvent(delta=({"op": "add", "path": "/pair", "value": (1, [2])},)))
    made.clear()
    read = thread.state
    assert read == {"rows": [{"n": [1, 2]}], "pair": [1, [2]]} and type(read["pair"]) is list
    assert made == ["deep_copy"]
    # A value built in Python beyond JSON is still copied as it is (a save then refuses it).
    thread.apply(ev.StateDeltaEvent(delta=({"op": "add", "path": "/nan", "value": float("nan")},)))
    assert thread.state["nan"] != thread.state["nan"]


def test_a_state_deeper_than_the_kept_form_goes_is_copied_level_by_level(monkeypatch: pytest.MonkeyPatch) -> None:
    deep: Any = []
    for _ in range(3_000):
        deep = [deep]
    thread = ThreadState(state={"deep": deep})
    made = _counting(monkeypatch)
    first, second = thread.state, thread.state
    assert first is not second and first["deep"] is not second["deep"]
    assert made == ["frozen_json", "copy_json", "copy_json"]  # (its bytes tried once a change)
    node = first["deep"]
    for _ in range(3_000):
        node = node[0]
    node.append("mine")
    node = second["deep"]
    for _ in range(3_000):
        node = node[0]
    assert node == []


def test_a_thread_copy_copies_the_state_once_and_holds_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    thread = ThreadState(state={"rows": [{"n": n} for n in range(100)]})
    copied_states: list[Any] = []
    for module in (document, values):
        real = module.copy_json

        def spy(value: Any, real: Any = real) -> Any:
            held = value.get("state") if isinstance(value, dict) and "threadId" in value else value
            if isinstance(held, dict) and "rows" in held:
                copied_states.append(held)
            return real(value)

        monkeypatch.setattr(module, "copy_json", spy)
    other = thread.copy()
    assert len(copied_states) == 1  # (twice before: with the record, then by the new thread)
    other.set_state({"rows": []})
    other_rows = other.state["rows"]
    assert len(thread.state["rows"]) == 100 and other_rows == []


def test_a_thread_copy_judges_state_an_event_built_elsewhere_brought() -> None:
    # (a snapshot event built in Python may hold NaN: the document is then not known plain, and the copy
    # judges the state as any caller's, refusing it, rather than copying it as orjson writes NaN: null)
    thread = ThreadState()
    thread.apply(ev.StateSnapshotEvent(snapshot={"rows": [1, float("nan")]}))

    with pytest.raises(UnencodableValue) as refused:
        thread.copy()
    assert (refused.value.field, refused.value.pointer) == ("state", "/rows/1")


def test_a_read_racing_a_change_leaves_no_kept_form_of_the_state_before_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # A read in another OS thread has made the bytes of the state as it was, and a delta lands before it
    # keeps them: the reads after the change must be of the changed state, not of those bytes for good.
    thread = ThreadState(state={"n": 0})
    made, go = threading.Event(), threading.Event()
    real = document.frozen_json

    def held(value: Any) -> bytes | None:
        frozen = real(value)
        if threading.current_thread().name == "reader":
            made.set()
            assert go.wait(10.0)
        return frozen

    monkeypatch.setattr(document, "frozen_json", held)
    out: list[Any] = []
    reader = threading.Thread(target=lambda: out.append(thread.state), name="reader", daemon=True)
    reader.start()
    assert made.wait(10.0)
    thread.apply(ev.StateDeltaEvent(delta=({"op": "replace", "path": "/n", "value": 1},)))
    go.set()
    reader.join(10.0)

    assert out == [{"n": 0}]  # (the read made before the change: the state it began with)
    assert thread.state == {"n": 1} and thread.state == {"n": 1}
    thread.set_state({"n": 2})
    assert thread.state == {"n": 2}
