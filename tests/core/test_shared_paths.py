"""Values holding a container through many paths, and cycles inside state no walk judged.

A chain of lists each holding the one before twice (``b = [a, a]``, ``c = [b, b]`` …) is a few dozen
lists in memory and, written out as JSON must (once a path), a trillion members: every encoder wrote it
until memory ran out, and the JSON checks walked it so. Past the members a walk reads unmarked, what is
held twice is judged once: written past ``WRITTEN_MEMBERS`` it is refused, typed and named. A cycle
or a doubling chain the caller makes inside the state ``dump(share_state=True)`` shares (or beside it) is
refused by the copy that meets it.
Counts, typed errors and pointers are asserted, never times.
"""

from __future__ import annotations

from typing import Any

import pytest

from agui_client import ThreadState
from agui_client.core.plan import refuse_unencodable
from agui_client.errors import UnencodableValue
from agui_client.wire import jsonio
from agui_client.wire.jsonio import json_problem
from agui_client.wire.values import WALKED_UNMARKED, WRITTEN_MEMBERS, plain_json, tree_copy, written_past


def _doubled(times: int) -> list[Any]:
    chain: list[Any] = [0]
    for _ in range(times):
        chain = [chain, chain]
    return chain


def _written(chain: list[Any]) -> int:
    return 1 if chain == [0] else 2 + 2 * _written(chain[0])


def test_a_list_doubled_forty_times_is_refused_where_its_writing_passes_the_limit() -> None:
    chain = _doubled(40)
    found = written_past({"chain": chain})
    assert found is not None
    pointer, reason = found
    depth = pointer.count("/0")
    node = chain
    for _ in range(depth):
        node = node[0]
    # the deepest container past the limit: its halves are each within it
    assert _written(node) > WRITTEN_MEMBERS >= _written(node[0]) and f"{_written(node):,}" in reason
    assert not plain_json({"chain": chain})
    assert json_problem({"chain": chain}) == found
    with pytest.raises(UnencodableValue) as refused:
        ThreadState(state={"chain": chain})
    assert refused.value.field == "state" and refused.value.pointer == pointer
    with pytest.raises(UnencodableValue) as sent:
        refuse_unencodable("forwardedProps", {"chain": chain}, "the forwarded props")
    assert sent.value.field == "forwardedProps" and sent.value.pointer == pointer
    with pytest.raises(UnencodableValue) as copied:
        tree_copy({"chain": chain})
    assert copied.value.pointer == pointer


def test_the_first_doubling_that_writes_past_the_limit_is_the_one_refused() -> None:
    # (22 doublings write 12.6 million members, 23 write 25.2 million: the limit lies between them)
    within, past = _doubled(22), _doubled(23)
    assert _written(within) <= WRITTEN_MEMBERS < _written(past)
    assert written_past({"chain": within}) is None and plain_json({"chain": within})
    found = written_past({"chain": past})
    assert found is not None and found[0] == "/chain" and not plain_json({"chain": past})
    # (at any limit: refused as soon as what it writes passes it, not before)
    assert written_past(within, limit=_written(within)) is None
    assert written_past(within, limit=_written(within) - 1) is not None


def test_a_list_held_twice_within_the_limit_is_json_and_the_check_walks_it_once() -> None:
    chain = _doubled(19)  # (written: a million members, past the count a walk reads unmarked)
    state = {"chain": chain, "after": float("nan")}
    assert written_past(state) is None and plain_json({"chain": chain})
    # the first problem in document order is still found, after the chain (walked once past the count)
    assert json_problem(state) == ("/after", "nan is not a JSON number")
    copied = tree_copy({"chain": chain})
    assert copied["chain"][0] is not copied["chain"][1] and copied["chain"] == chain


def test_past_the_count_the_check_reads_a_list_held_twice_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # Counted, not timed: each string the check meets is read once it is met; a chain doubled 20 times
    # holds its one string through a million paths, and the check meets it fewer times than it walks
    # members unmarked (every path walked: 1,048,576 times).
    met: list[str] = []
    reading = jsonio._string_problem
    monkeypatch.setattr(jsonio, "_string_problem", lambda text: met.append(text) or reading(text))
    chain: list[Any] = ["leaf"]
    for _ in range(20):
        chain = [chain, chain]

    assert json_problem({"chain": chain}) is None
    assert 0 < len(met) < WALKED_UNMARKED


def test_a_cycle_made_inside_shared_state_is_refused_by_the_copy_that_meets_it() -> None:
    thread = ThreadState(state={"rows": [{"n": n} for n in range(10)]})
    record = thread.dump(share_state=True)
    rows = record["state"]["rows"]  # (the thread's own: the caller was told never to change it)
    rows[3]["again"] = rows
    with pytest.raises(UnencodableValue) as refused:
        ThreadState.load(record)
    assert refused.value.field == "state" and refused.value.pointer == "/rows/3/again"
    assert refused.value.reason == "the value contains itself"


@pytest.mark.parametrize("where", ["beside", "inside"])
def test_a_list_doubled_past_the_limit_in_shared_state_is_refused_by_the_load_that_meets_it(where: str) -> None:
    # The marked state was trusted as checked: orjson's copy wrote a trillion members until memory ran out.
    thread = ThreadState(state={"rows": [{"n": n} for n in range(10)]})
    record = thread.dump(share_state=True)
    if where == "beside":  # (a key set in the dump's own top level, beside the thread's)
        record["state"]["chain"] = _doubled(40)
        pointer = "/chain"
    else:  # (inside the thread's own rows: the caller was told never to change them)
        record["state"]["rows"][3]["chain"] = _doubled(40)
        pointer = "/rows/3/chain"
    with pytest.raises(UnencodableValue) as refused:
        ThreadState.load(record)
    assert refused.value.field == "state" and refused.value.pointer.startswith(pointer + "/0/0/0/0/0/0/0/0/0/0/0")
    assert "more than 16,777,216" in refused.value.reason


def test_a_shared_dump_loads_as_a_thread_of_its_own() -> None:
    thread = ThreadState(state={"rows": [{"n": n} for n in range(10)]})
    loaded = ThreadState.load(thread.dump(share_state=True))
    loaded.state["rows"].clear()  # (a read: the loaded thread's own state unchanged)
    assert loaded.state == thread.state == {"rows": [{"n": n} for n in range(10)]}
    assert thread.document.value["rows"] is not loaded.document.value["rows"]


def test_a_cycle_beside_a_list_written_past_the_limit_is_named_without_going_round_it() -> None:
    # B holds A, which holds B (a cycle) before a chain written past the limit: B's count includes A's and
    # A's includes B's, so a pointer that followed the counts alone went round B and A without end
    # (set_state, a request's check: json_problem asked it as its count ran out, behind 300,000 members)
    chain = _doubled(24)
    inner: list[Any] = []
    outer = [inner, chain]
    inner.append(outer)
    value = [list(range(300_000)), inner]
    found = written_past(value)
    assert found is not None and found[0].startswith("/1/0/1/0")
    # (the checks name the cycle, the first problem in document order)
    assert json_problem(value) == ("/1/0/0", "the value contains itself")
    with pytest.raises(UnencodableValue) as refused:
        ThreadState(state={"value": value})
    assert refused.value.field == "state" and refused.value.pointer == "/value/1/0/0"
    small = _doubled(4)
    inner[:] = []
    outer[1] = small
    inner.append(outer)
    assert written_past([inner], limit=10) == ("/0/0/1/0", "written out it holds 22 members, more than 10: a "
                                               "container in it is held through that many paths, and JSON "
                                               "writes it once for each")


def test_a_check_past_the_count_judges_what_is_held_twice_only_once_it_meets_some(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # json_problem asked written_past as soon as its count ran out: a value of 600,000 members holding
    # nothing twice was walked a second time (half the check's time), and a problem after the count ran
    # out lost to a list written past the limit later in the document.
    from agui_client.wire import jsonio

    asked: list[Any] = []
    real = jsonio.written_past
    monkeypatch.setattr(jsonio, "written_past", lambda value: asked.append(1) or real(value))
    rows = {"rows": [{"id": n, "tags": ["a", "b"]} for n in range(100_000)]}
    assert json_problem(rows) is None and asked == []
    chain = _doubled(24)
    assert json_problem([list(range(300_000)), float("nan"), chain]) == ("/1", "nan is not a JSON number")
    assert asked == []
    found = json_problem([list(range(300_000)), chain, float("nan")])
    assert found is not None and found[0].startswith("/1/0") and len(asked) == 1


def test_a_copy_past_the_count_judges_what_is_held_twice_only_once_it_meets_some(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # tree_copy judged the whole value as soon as its count of containers ran out: two more walks (a
    # cycle, the paths counted) of a value holding nothing twice, three times the copy's own time.
    from agui_client.wire import values

    asked: list[Any] = []
    real = values.costly_refused
    monkeypatch.setattr(values, "costly_refused", lambda value: asked.append(1) or real(value))
    # (the count runs out at the rows' tags, 280,002 containers in; what is below them is copied marked)
    rows = {"rows": [{"n": n, "tags": [n, {"deep": [n]}]} for n in range(140_000)]}
    copied = tree_copy(rows)
    assert copied == rows and copied["rows"][5]["tags"] is not rows["rows"][5]["tags"] and asked == []
    shared = [1, 2]
    held = {"rows": [{"n": n, "tags": [n, {"deep": shared}]} for n in range(140_000)]}
    again = tree_copy(held)
    assert again == held and len(asked) == 1  # (judged once, at the first met again: within the limit)
    assert again["rows"][0]["tags"][1]["deep"] is not again["rows"][1]["tags"][1]["deep"]
