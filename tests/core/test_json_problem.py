"""``jsonio.json_problem``: where a value the client would send stops being JSON, and why."""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

import pytest

from agui_client import UnencodableValue
from agui_client._inert import QUOTED_CHARS
from agui_client.testing import ScriptedAgent
from agui_client.wire.jsonio import json_problem

__all__: list[str] = []


@pytest.mark.parametrize("value", [
    None, True, 0, -1, 10**40, 1.5, "", "é 日本 😀", [], (), {}, {"a": [1, 2.0, "x", None, False, {"b": ()}]},
])
def test_json_values_have_no_problem(value: Any) -> None:
    assert json_problem(value) is None


@pytest.mark.parametrize(("value", "pointer"), [
    pytest.param({1, 2}, "", id="set"),
    pytest.param(frozenset(), "", id="frozenset"),
    pytest.param(b"x", "", id="bytes"),
    pytest.param(math.nan, "", id="nan"),
    pytest.param(math.inf, "", id="inf"),
    pytest.param(-math.inf, "", id="minus-inf"),
    pytest.param("ok\ud800", "", id="lone-high-surrogate"),
    pytest.param("\udfff", "", id="lone-low-surrogate"),
    pytest.param(datetime(2026, 1, 1), "", id="datetime"),
    pytest.param(object(), "", id="object"),
    pytest.param({1: "x"}, "", id="int-key"),
    pytest.param({None: "x"}, "", id="none-key"),
    pytest.param({"a": {"b": [0, 1, {2}]}}, "/a/b/2", id="nested"),
    pytest.param({"a~b/c": math.nan}, "/a~0b~1c", id="escaped-key"),
    pytest.param({"ok": 1, "bad": {1}, "later": b""}, "/bad", id="first-in-document-order"),
    pytest.param([[], [1, [math.inf]]], "/1/1/0", id="in-lists"),
])
def test_a_value_json_cannot_hold_is_located_by_its_pointer(value: Any, pointer: str) -> None:
    found = json_problem(value)

    assert found is not None
    assert found[0] == pointer
    assert found[1]


def test_a_container_holding_itself_is_a_problem_not_an_endless_walk() -> None:
    cycle: list[Any] = [1]
    cycle.append({"again": cycle})

    assert json_problem(cycle) == ("/1/again", "the value contains itself")


def test_a_value_shared_twice_is_not_a_cycle() -> None:
    shared = {"x": [1]}

    assert json_problem([shared, shared, {"y": shared}]) is None


def test_a_deep_value_does_not_exhaust_the_stack_nor_cost_the_square_of_its_depth() -> None:
    # 300,000 levels: a walk that built each level's pointer as it went (the square of the depth in
    # characters, some 45 billion here) would outlast the suite's per-test timeout many times over.
    deep: Any = "leaf"
    for _ in range(300_000):
        deep = [deep]

    assert json_problem(deep) is None
    deep = [deep, float("nan")]
    assert json_problem(deep) == ("/1", "nan is not a JSON number")


#: A key as long as a state may hold (an agent's event reaches 16 MiB; a mebibyte is enough to show the cut).
LONG = 1 << 20


def test_a_long_bad_key_is_shown_cut_at_the_quoting_bound() -> None:
    key = "\udc00" + "k" * LONG
    surrogate = json_problem({"state": {key: 1}})
    not_text = json_problem({("k" * LONG,): 1})
    huge_int = json_problem({10**5000: 1})  # (past the interpreter's digits limit: it has no repr)

    assert surrogate == ("/state", f"key {key[:QUOTED_CHARS]!r}... ({LONG + 1 - QUOTED_CHARS} more "
                                   "characters): a lone surrogate U+DC00 at character 0 is not text JSON can carry")
    assert not_text is not None and not_text[1].startswith("key ('kkk")
    assert not_text[1].endswith(f"... ({LONG + 5 - QUOTED_CHARS} more characters) is not a string (type tuple); "
                                "JSON keys are strings")
    assert huge_int == ("", "key <a int too long to show> is not a string (type int); JSON keys are strings")
    # A short key is shown whole, as before.
    assert json_problem({1: "x"}) == ("", "key 1 is not a string (type int); JSON keys are strings")


def test_a_run_refusing_a_long_bad_key_says_it_cut(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent.chat("unused"))
    with drive.client(endpoint.url) as client:
        with pytest.raises(UnencodableValue) as refused:
            client.thread().run("hi", state={"\ud800" + "k" * LONG: 1})

    assert len(str(refused.value)) < 2 * QUOTED_CHARS and len(refused.value.reason) < 2 * QUOTED_CHARS
    assert f"... ({LONG + 1 - QUOTED_CHARS} more characters): a lone surrogate U+D800" in refused.value.reason
    assert endpoint.received == []  # (nothing was sent)
