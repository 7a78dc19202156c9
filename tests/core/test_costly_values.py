"""Values a caller can make costly: a container holding itself, state deeper than orjson writes.

A cycle cannot be written as JSON, and nothing walking it may go round it without end (the plain-JSON
walk did, in ``set_state`` and every save's check) or to a depth limit (orjson, 254 turns before it
gave up). Copies of deep values are the iterative copier's, never ``copy.deepcopy``'s recursion.
Counts, typed errors and identities are asserted, never times.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from agui_client import ThreadState
from agui_client.errors import UnencodableValue
from agui_client.wire import values
from agui_client.wire.jsonio import dump_json
from agui_client.wire.values import PlainDict, PlainList, cycle_at, deep_copy, plain_json


def _holding_itself() -> dict[str, Any]:
    state: dict[str, Any] = {"rows": [{"n": n} for n in range(1_000)], "deep": {"er": []}}
    state["deep"]["er"].append(state["deep"])
    return state


@pytest.mark.parametrize("how", ["constructed", "set_state"])
def test_a_state_holding_itself_is_refused_naming_where(how: str) -> None:
    # The plain-JSON walk went round the cycle without end, its stack growing: both calls hung.
    state = _holding_itself()
    with pytest.raises(UnencodableValue) as refused:
        if how == "constructed":
            ThreadState(state=state)
        else:
            ThreadState(state={"kept": True}).set_state(state)
    assert refused.value.field == "state"
    assert refused.value.pointer == "/deep/er/0"
    assert refused.value.reason == "the value contains itself"


def test_the_walk_meets_a_cycle_past_its_count_and_a_shared_list_is_no_cycle(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Past WALKED_UNMARKED members the walk marks what it meets: a cycle there is found, a list held
    # twice is JSON (written twice) and walked once. (The count lowered: at its own 262,144 the lists
    # below took a second to make and walk, for the same path through the walk.)
    monkeypatch.setattr(values, "WALKED_UNMARKED", 64)
    shared = [1, 2]
    wide = [[n] for n in range(values.WALKED_UNMARKED)]
    assert plain_json([*wide, shared, {"again": shared}])
    wide.append(wide)
    assert not plain_json(wide)
    assert cycle_at(wide) == f"/{values.WALKED_UNMARKED}"
    assert cycle_at({"a": shared, "b": (shared,)}) is None


def test_a_request_holding_itself_is_named_not_just_refused() -> None:
    body: dict[str, Any] = {"state": {"a/b": [0]}}
    body["state"]["a/b"].append(body["state"])
    with pytest.raises(UnencodableValue) as refused:
        dump_json(body)
    assert refused.value.pointer == "/state/a~1b/1"


def test_state_past_orjsons_depth_is_copied_without_copy_deepcopy(monkeypatch: pytest.MonkeyPatch) -> None:
    # ThreadState.copy() goes through dump(share_state=True), whose state and messages are marked
    # (PlainDict, PlainList): deep_copy took those for leaves and handed them whole to copy.deepcopy,
    # recursion and all (a MiB: 0.4-0.7 s), as it did a tuple.
    calls: list[Any] = []
    real = copy.deepcopy
    monkeypatch.setattr(values.copy, "deepcopy", lambda value, *rest: calls.append(value) or real(value, *rest))
    nest: Any = ["bottom"]
    for _ in range(300):
        nest = [nest, {"n": 1}]
    thread = ThreadState(state={"nest": nest})
    copied = thread.copy()
    assert copied.state == {"nest": nest} and calls == []
    marked = deep_copy(PlainDict(a=PlainList([nest])))
    assert type(marked) is dict and type(marked["a"]) is list and marked["a"][0] == nest and calls == []


def test_a_tuple_nested_past_the_recursion_limit_is_copied() -> None:
    nest: Any = ("bottom",)
    for _ in range(5_000):
        nest = (nest,)
    copied = deep_copy(nest)  # (copy.deepcopy raised RecursionError)
    depth = 0
    while copied != ["bottom"]:
        assert type(copied) is list and len(copied) == 1
        copied, depth = copied[0], depth + 1
    assert depth == 5_000


def test_only_the_request_is_written_within_the_shallow_depth(drive: Any, served: Any,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    # The shallow write (orjson inside 222 lists, so that a cycle in the caller's state is given up after
    # SHALLOW_WRITE levels) costs some 20-40 us a call, a hundred times orjson's writing of an event. The
    # request, once a run, is written so; the testing kit's agent, writing every event it sends with
    # dump_json, is not (it was: a 2,000-event stream paid some 60 ms more).
    from agui_client.testing import Finish, ScriptedAgent, Start
    from agui_client.wire import jsonio

    written: list[int] = []
    shallow = jsonio.shallow_orjson
    monkeypatch.setattr(jsonio, "shallow_orjson", lambda value: written.append(1) or shallow(value))
    events: list[Any] = [Start(), {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
                         *({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "w "} for _ in range(200)),
                         {"type": "TEXT_MESSAGE_END", "messageId": "m"}, Finish()]
    endpoint = served(ScriptedAgent([events]))
    with drive.client(endpoint.url) as client:
        assert client.thread().run("go").text == "w " * 200
    assert written == [1]  # (the request's body)
