"""The in-place atomic JSON Patch applier, against RFC 6902 cases and the jsonpatch library."""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonpatch
import jsonpointer
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from patch_oracle import reference_apply

from agui_client.core.patch import MAX_DEPTH, PatchFailed, apply_patch
from agui_client.wire.policy import FieldError, check_patch


def test_operations_apply_in_place_and_in_order() -> None:
    doc = {"a": 1, "items": [1, 2], "o": {"k": "v"}}
    result = apply_patch(doc, [
        {"op": "replace", "path": "/a", "value": 2},
        {"op": "add", "path": "/items/-", "value": 3},
        {"op": "add", "path": "/items/0", "value": 0},
        {"op": "remove", "path": "/o/k"},
        {"op": "copy", "from": "/items", "path": "/copy"},
        {"op": "move", "from": "/a", "path": "/moved"},
        {"op": "test", "path": "/moved", "value": 2},
    ])
    assert result is doc
    assert doc == {"items": [0, 1, 2, 3], "o": {}, "copy": [0, 1, 2, 3], "moved": 2}


_GENERAL_FAILING = [  # a move: the general applier, with its undo log
    {"op": "replace", "path": "/a", "value": 2},
    {"op": "remove", "path": "/items/0"},
    {"op": "add", "path": "/o/k/-", "value": 9},
    {"op": "move", "from": "/o", "path": "/p"},
    {"op": "remove", "path": "/nope"},
]
_COMMON_FAILING = [  # adds, replaces and removes below the root: the applier's short path, its own undo log
    {"op": "replace", "path": "/a", "value": 2},
    {"op": "remove", "path": "/items/0"},
    {"op": "add", "path": "/o/k/-", "value": {"n": 9}},
    {"op": "add", "path": "/o/new", "value": 1},
    {"op": "replace", "path": "/nope", "value": 3},
]


@pytest.mark.parametrize("adopt", [False, True])
@pytest.mark.parametrize("patch", [_GENERAL_FAILING, _COMMON_FAILING], ids=["general", "common"])
def test_a_failing_patch_leaves_the_document_exactly_as_it_was(patch: list[dict[str, Any]], adopt: bool) -> None:
    doc = {"a": 1, "items": [1, 2, 3], "o": {"k": [1]}}
    before = copy.deepcopy(doc)
    with pytest.raises(PatchFailed) as caught:
        apply_patch(doc, copy.deepcopy(patch), adopt_values=adopt)
    assert caught.value.op_index == 4
    assert doc == before


@pytest.mark.parametrize(("patch", "reason"), [
    ([{"op": "replace", "path": "/a/01", "value": 1}], "leading zero (B182)"),
    ([{"op": "replace", "path": "/a/-", "value": 1}], "'-' is only for add (B183)"),
    ([{"op": "remove", "path": "/a/-"}], "'-' is only for add (B183)"),
    ([{"op": "move", "from": "/o", "path": "/o/c"}], "move into its own child (B181)"),
    ([{"op": "remove", "path": ""}], "removing the whole document (B190)"),
    ([{"op": "replace", "path": "/a/99999999999999999999", "value": 1}], "huge index, no giant allocation (B193)"),
    ([{"op": "add", "path": "/a/5", "value": 1}], "add past the end of an array"),
    ([{"op": "test", "path": "/o", "value": {"x": 2}}], "failed test"),
    ([{"op": "test", "path": "/t", "value": 1}], "true is not 1 in JSON"),
])
def test_what_rfc_6902_forbids_is_refused(patch: list[Any], reason: str) -> None:
    doc = {"a": [1, 2], "o": {"x": 1}, "t": True}
    before = copy.deepcopy(doc)
    with pytest.raises(PatchFailed):
        apply_patch(doc, patch)
    assert doc == before, reason


def test_the_root_can_be_replaced() -> None:
    assert apply_patch({"a": 1}, [{"op": "replace", "path": "", "value": [1, 2]}]) == [1, 2]


def test_escaped_keys_and_proto_like_keys_are_ordinary_members() -> None:
    doc: dict[str, Any] = {}
    apply_patch(doc, [{"op": "add", "path": "/a~1b", "value": 1}, {"op": "add", "path": "/a~0b", "value": 2},
                      {"op": "add", "path": "/__proto__", "value": {"polluted": True}}])
    assert doc == {"a/b": 1, "a~b": 2, "__proto__": {"polluted": True}}


def test_copy_amplification_is_refused_by_the_budget() -> None:
    ops = [{"op": "add", "path": "/x", "value": [1]}]
    ops += [{"op": "copy", "from": "/x", "path": "/x/-"} for _ in range(40)]
    doc: dict[str, Any] = {}
    with pytest.raises(PatchFailed):
        apply_patch(doc, ops, copy_budget=100_000)
    assert doc == {}


def test_added_values_are_copies_so_the_event_is_never_mutated() -> None:
    value = {"list": [1]}
    doc: dict[str, Any] = {}
    apply_patch(doc, [{"op": "add", "path": "/v", "value": value}])
    apply_patch(doc, [{"op": "add", "path": "/v/list/-", "value": 2}])
    assert value == {"list": [1]}


json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.sampled_from(["a", "b", ""]))
json_doc = st.recursive(json_leaf, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(["a", "b", "c", "~", "/"]), inner, max_size=4)),
    max_leaves=12)
segment = st.one_of(st.sampled_from(["a", "b", "c", "~0", "~1", "-", "0", "1", "2", "01"]))
pointer = st.lists(segment, max_size=3).map(lambda parts: "".join("/" + p for p in parts))
operation = st.one_of(
    st.builds(lambda p, v: {"op": "add", "path": p, "value": v}, pointer, json_doc),
    st.builds(lambda p: {"op": "remove", "path": p}, pointer),
    st.builds(lambda p, v: {"op": "replace", "path": p, "value": v}, pointer, json_doc),
    st.builds(lambda f, p: {"op": "move", "from": f, "path": p}, pointer, pointer),
    st.builds(lambda f, p: {"op": "copy", "from": f, "path": p}, pointer, pointer),
    st.builds(lambda p, v: {"op": "test", "path": p, "value": v}, pointer, json_leaf),
)


@settings(max_examples=400, deadline=None)
@given(json_doc, st.lists(operation, min_size=1, max_size=4), st.booleans())
# jsonpatch's two departures from RFC 6902, which the oracle corrects (see patch_oracle)
@example({"a": 1}, [{"op": "replace", "path": "", "value": [1]}, {"op": "add", "path": "/-", "value": 2}], False)
@example(None, [{"op": "replace", "path": "", "value": {"a": 1}}, {"op": "add", "path": "/b", "value": 2}], True)
def test_agrees_with_the_jsonpatch_library(document: Any, patch: list[Any], adopt: bool) -> None:
    """Same result or same refusal; a refused patch (single or multi-operation) leaves the document as it was."""
    ours_doc = copy.deepcopy(document)
    try:
        expected = reference_apply(document, patch)
        expected_ok = True
    except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException, KeyError, IndexError, TypeError):
        expected_ok = False
    # JSON equality: jsonpatch's test op compares with Python ==, where True == 1; we do not.
    if any(op["op"] == "test" for op in patch):
        return
    try:
        ours = apply_patch(ours_doc, copy.deepcopy(patch) if adopt else patch, adopt_values=adopt)
    except PatchFailed:
        assert not expected_ok, (document, patch, expected)
        assert json.dumps(ours_doc, sort_keys=True) == json.dumps(document, sort_keys=True)
        return
    assert expected_ok, (document, patch)
    assert json.dumps(ours, sort_keys=True) == json.dumps(expected, sort_keys=True)


@pytest.mark.parametrize("first", [
    {"op": "replace", "path": "/a", "value": 2},
    {"op": "move", "from": "/a", "path": "/b"},
])
def test_a_value_too_deep_to_copy_is_refused_and_changes_nothing(first: dict[str, Any]) -> None:
    deep: Any = []
    for _ in range(100_000):
        deep = [deep]
    doc = {"a": 1}
    with pytest.raises(PatchFailed) as caught:
        apply_patch(doc, [first, {"op": "add", "path": "/deep", "value": deep}])
    assert caught.value.op_index == 1
    assert str(caught.value) == \
        f"the document would nest deeper than {MAX_DEPTH} levels (this place leaves {MAX_DEPTH - 1})"
    assert doc == {"a": 1}


def test_copies_spend_an_allowance_across_patches_and_an_undone_patch_keeps_it_spent() -> None:
    # B194's class beyond one patch: each small patch may copy a large subtree (or reference a large
    # string) again, growing the state without end. A shared allowance bounds them all; strings count
    # their characters, which a store and the next request write out once per copy.
    doc: dict[str, Any] = {"s": "x" * 1000}
    allowance = [3500]
    apply_patch(doc, [{"op": "copy", "from": "/s", "path": "/a"}], copy_allowance=allowance)
    apply_patch(doc, [{"op": "copy", "from": "/s", "path": "/b"}], copy_allowance=allowance)
    left = allowance[0]
    assert 1000 < left < 2000

    with pytest.raises(PatchFailed) as caught:  # the second copy passes what is left: all undone
        apply_patch(doc, [{"op": "copy", "from": "/s", "path": "/c"}, {"op": "copy", "from": "/s", "path": "/d"}],
                    copy_allowance=allowance)
    assert caught.value.op_index == 1 and "amplification" in str(caught.value)
    assert set(doc) == {"s", "a", "b"}
    # What the undone patch's copies walked stays spent: giving it back would let the same patch make
    # the client walk the value again, event after event.
    assert allowance[0] < 0
    with pytest.raises(PatchFailed):
        apply_patch(doc, [{"op": "copy", "from": "/s", "path": "/c"}], copy_allowance=allowance)

    with pytest.raises(PatchFailed):  # the per-patch node budget still applies
        apply_patch(doc, [{"op": "add", "path": "/l", "value": list(range(10))},
                          {"op": "copy", "from": "/l", "path": "/c"}], copy_allowance=[10**9], copy_budget=15)
    apply_patch(doc, [{"op": "copy", "from": "/s", "path": "/e"}])  # no allowance given: unbounded across patches
    assert set(doc) == {"s", "a", "b", "e"}


# --- the decoder's check asked only when needed (``vet``) ------------------------------------------

def _vet_counting() -> tuple[list[int], Any]:
    asked: list[int] = []

    def vet(patch: Any) -> None:
        asked.append(1)
        check_patch(patch, "delta")
    return asked, vet


def test_a_patch_of_plain_operations_never_asks_for_the_check() -> None:
    asked, vet = _vet_counting()
    document = {"a": 1, "b": [1]}
    for patch in ([{"op": "replace", "path": "/a", "value": 2}],
                  [{"op": "add", "path": "/b/-", "value": 3}, {"op": "remove", "path": "/a"}]):
        document = apply_patch(document, patch, vet=vet)
    assert document == {"b": [1, 3]} and asked == []


@pytest.mark.parametrize("patch", [
    [{"op": "add", "path": "/x", "value": 1}, {"op": "test", "path": "/x"}],  # (test without its value)
    [{"op": "add", "path": "/x", "value": 1}, {"op": "move", "path": "/y", "from": "/a~2"}],
    [{"op": "add", "path": "/x"}],  # (a plain operation that fails: judged before it is reported)
    [{"op": "add", "path": "/x", "value": 1}, {"op": "copy", "path": "/y"}],
])
def test_a_patch_the_check_refuses_is_refused_by_it_with_the_document_unchanged(patch: list[Any]) -> None:
    asked, vet = _vet_counting()
    document = {"a": 1}
    with pytest.raises(FieldError):
        apply_patch(document, patch, vet=vet)
    assert document == {"a": 1} and asked == [1]


def test_a_failing_patch_the_check_accepts_fails_as_it_would_without_it() -> None:
    asked, vet = _vet_counting()
    document = {"a": 1}
    with pytest.raises(PatchFailed) as caught:
        apply_patch(document, [{"op": "add", "path": "/b", "value": 1}, {"op": "remove", "path": "/missing"}],
                    vet=vet)
    assert document == {"a": 1} and caught.value.op_index == 1 and asked == [1]


@given(st.lists(st.fixed_dictionaries({"op": st.sampled_from(["add", "replace", "remove"]),
                                        "path": st.text(min_size=1).map(lambda t: "/" + t)},
                                       optional={"value": st.integers()}), min_size=1, max_size=4))
def test_every_operation_the_applier_takes_as_plain_passes_the_check(ops: list[dict[str, Any]]) -> None:
    # What lets a vetted patch of plain operations skip the check: the applier's plain test is stricter.
    plain = [op for op in ops if "~" not in op["path"] and len(op["path"]) > 1
             and (op["op"] == "remove" or "value" in op)]
    check_patch(plain, "delta")  # (raises if the rule were looser than the applier's)
