"""The reference differential (``python -m tools.differential --oracle``) without node.

The mode itself needs node and the installed oracle, so it is not part of the test run; these tests
keep the rest of it from rotting: the judging and reporting on two prepared folds (the golden tests'
own comparison and ``DIFFERENCES``), how streams and their starting threads are found, and the
hostile variants (deterministic for a seed, each one foldable by our client).
"""

from __future__ import annotations

import fnmatch
import json
import sys
from pathlib import Path
from typing import Any

import pytest
import test_golden

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
try:
    from tools.differential import families, hostile, hostile_golden, integrations, producers, reference
    from tools.differential.__main__ import main
finally:
    sys.path.remove(str(ROOT))

GOLDEN = ROOT / "tests" / "golden" / "streams"


def _fold(messages: list[Any], ok: bool = True, outcome: str | None = "success") -> dict[str, Any]:
    return {"ok": ok, "error": None if ok else "refused", "messages": messages, "state": {}, "pendingInterrupts": [],
            "outcome": outcome, "pendingToolCallIds": [], "result": None}


def _stream(name: str) -> reference.Stream:
    return reference.Stream(name, Path(f"{name}.jsonl"))


def test_the_comparison_is_the_golden_tests_own() -> None:
    assert reference.golden() is sys.modules["test_golden"]
    assert reference.golden().mismatches is test_golden.mismatches


def test_equal_folds_are_same_and_a_differing_field_is_reported_by_pointer() -> None:
    text = [{"id": "m1", "role": "assistant", "content": "hi"}]
    same = reference.judge(_stream("s"), _fold(text), _fold(text))
    assert same.status == "SAME" and not same.failed
    assert reference.report(same) == ["SAME   s  reference: ok success | ours: ok success"]

    other = [{"id": "m1", "role": "assistant", "content": "ho"}]
    diff = reference.judge(_stream("s"), _fold(text), _fold(other))
    assert diff.status == "DIFF" and diff.failed
    assert list(diff.fields) == ["messages"]
    lines = reference.report(diff)
    assert lines[0].endswith("[messages]")
    assert "ours != reference at /messages/0/content: 'hi' != 'ho'" in lines[1]


def test_minted_ids_of_the_reference_are_not_differences() -> None:
    ours = _fold([{"id": "b7c1", "role": "reasoning", "content": "x"}])
    theirs = _fold([{"id": "<uuid:1>", "role": "reasoning", "content": "x"}])
    assert reference.judge(_stream("s"), ours, theirs).status == "SAME"


def test_a_documented_difference_is_known_and_a_gone_one_is_stale() -> None:
    name = "usage-object"  # DIFFERENCES: acceptance differs
    assert test_golden.DIFFERENCES[name][0] == frozenset({"ok"})
    ours, theirs = _fold([]), _fold([], ok=False, outcome=None)
    known = reference.judge(_stream(name), ours, theirs)
    assert known.status == "KNOWN" and not known.failed
    stale = reference.judge(_stream(name), ours, ours)
    assert stale.status == "STALE" and stale.failed
    assert "documented differences gone: ['ok']" in reference.report(stale)[1]
    # A field the entry does not name still fails the stream.
    worse = reference.judge(_stream(name), _fold([{"id": "m", "role": "user", "content": "x"}]), theirs)
    assert worse.status == "DIFF" and list(worse.fields) == ["messages"]


def test_a_variant_keeps_the_difference_of_the_stream_it_came_from() -> None:
    ours, theirs = _fold([]), _fold([], ok=False, outcome=None)
    assert reference.judge(_stream("usage-object~m3.1"), ours, theirs).status == "KNOWN"
    assert reference.judge(_stream("usage-object~m3.1"), ours, ours).status == "SAME"  # (not stale)
    assert reference.judge(_stream("run-minimal-no-outcome~m3.1"), ours, theirs).status == "DIFF"


def test_the_summary_counts_every_status() -> None:
    text = [{"id": "m1", "role": "user", "content": "x"}]
    verdicts = [reference.judge(_stream("a"), _fold(text), _fold(text)),
                reference.judge(_stream("b"), _fold(text), _fold([])),
                reference.Verdict(_stream("c"), "CRASH", detail="boom")]
    assert reference.summary(verdicts) == "3 streams: 1 same, 1 diff, 1 crash"
    assert reference.report(verdicts[2]) == ["CRASH  c", "    boom"]


def test_streams_are_found_with_their_starting_thread_and_label(tmp_path: Path) -> None:
    for name in ("a.jsonl", "a.input.json", "a.expected.json", "b.sse", "b.input.json", "c.jsonl", "notes.md"):
        (tmp_path / name).write_text("{}\n")
    (tmp_path / "MANIFEST.tsv").write_text("c.jsonl\tmade by hand\n")
    found = reference.collect([tmp_path])
    assert [(s.name, s.path.name, s.input and s.input.name, s.label) for s in found] == [
        ("a", "a.jsonl", "a.input.json", ""), ("b.sse", "b.sse", "b.input.json", ""),
        ("c", "c.jsonl", None, "made by hand")]
    with pytest.raises(SystemExit):
        reference.collect([tmp_path / "notes.md"])


def test_a_folder_holding_its_streams_one_level_down_is_refused(tmp_path: Path) -> None:
    # `--oracle DIR tests/golden --gen ...` compared none of the golden streams (they are in tests/golden/streams)
    # and said nothing of it: the count at the end held only the generated ones.
    (tmp_path / "streams").mkdir()
    (tmp_path / "streams" / "a.jsonl").write_text("{}\n")
    (tmp_path / "INDEX.md").write_text("# streams\n")
    with pytest.raises(SystemExit) as refused:
        reference.collect([tmp_path])
    assert str(refused.value) == f"{tmp_path}: no .jsonl or .sse stream directly inside (its streams' own folder?)"
    assert [s.name for s in reference.collect([tmp_path / "streams"])] == ["a"]


def test_quiet_points_exclude_open_messages_and_calls() -> None:
    events = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
              {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
              {"type": "TEXT_MESSAGE_END", "messageId": "m"},
              {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "f"},
              {"type": "TOOL_CALL_END", "toolCallId": "c"},
              {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}]
    assert hostile.quiet_points(events) == [1, 3, 5]


def test_quiet_points_exclude_an_open_legacy_thinking_span() -> None:
    """The Rust SDK writes reasoning as the pre-1.0 THINKING_* events, which carry no ids: a run split or
    given an interrupt outcome inside one would be refused by both clients, not a quiet point."""
    events = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
              {"type": "THINKING_START"},
              {"type": "THINKING_TEXT_MESSAGE_START"},
              {"type": "THINKING_TEXT_MESSAGE_CONTENT", "delta": "why"},
              {"type": "THINKING_TEXT_MESSAGE_END"},
              {"type": "THINKING_END"},
              {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}]
    assert hostile.quiet_points(events) == [1, 6]


def _source(name: str) -> tuple[list[Any], dict[str, Any] | None]:
    events = hostile.parse_lines((GOLDEN / f"{name}.jsonl").read_text(encoding="utf-8"))
    inp = GOLDEN / f"{name}.input.json"
    return events, json.loads(inp.read_text()) if inp.exists() else None


def test_variants_are_deterministic_for_a_seed() -> None:
    events, inp = _source("multi-run-interrupt-then-resume")
    one = hostile.variants(events, inp, 4, 6, "x")
    two = hostile.variants(events, inp, 4, 6, "x")
    assert [(v.label, v.events, v.input) for v in one] == [(v.label, v.events, v.input) for v in two]
    other = hostile.variants(events, inp, 5, 6, "x")
    assert [v.events for v in one] != [v.events for v in other]
    assert all(v.events != events or v.input != inp for v in one)


def test_every_mutation_applies_somewhere() -> None:
    import random

    sources = [_source(n) for n in ("multi-run-interrupt-then-resume", "activity-snapshot-and-delta", "multi-run",
                                    "run-finished-pending-absent", "snapshot-calls-after-streamed-text")]
    applied = set()
    for name, mutation in hostile.MUTATIONS.items():
        for k in range(40):
            events, inp = sources[k % len(sources)]
            if mutation(random.Random(k), list(events), inp) is not None:
                applied.add(name)
                break
    assert applied == set(hostile.MUTATIONS)


def test_a_written_corpus_folds_with_our_client(tmp_path: Path) -> None:
    """``--corpus`` without ``--oracle`` writes the streams; each one folds (or is refused) without a crash."""
    sources = [str(GOLDEN / f"{n}.jsonl") for n in ("multi-run-interrupt-then-resume", "tool-call-empty-parent-id")]
    status = main(["--corpus", str(tmp_path), "--gen", "mixed:3:0.002", "--mutate", "4", "--seed", "9",
                   "--sse-every", "3", *sources])
    assert status == 0
    written = reference.collect([tmp_path])
    assert len(written) == 1 + 3 * 4
    assert sum(s.path.suffix == ".sse" for s in written) == 4
    assert all(s.label for s in written)
    for stream in written:
        out = reference.run_ours(stream)
        assert set(reference.golden().COMPARED) <= set(out)


def test_producer_shapes_are_deterministic_for_a_seed_and_fold_as_their_producers_meant() -> None:
    """Every producer shape is a stream both clients accept: our client folds each one to its end."""
    one = list(producers.streams(7, 2))
    assert one == list(producers.streams(7, 2))
    assert [e for _, e, _, _ in one] != [e for _, e, _, _ in producers.streams(8, 2)]
    assert {name.rsplit("-s7.", 1)[0] for name, *_ in one} == {f"p-{shape}" for shape in producers.SHAPES}
    for name, events, inp, framing in one:
        assert framing is None
        out = test_golden.fold_like_oracle(hostile.dump_lines(events).encode(), inp or {})
        if not out["ok"]:  # (a call's chunks cut by another event or call, the next unnamed: refused by both)
            assert ("interleaved" in name or "crewai-chunks" in name) and "TC-21" in out["error"], (name, out["error"])
            continue
        # the shapes that end with RUN_ERROR end with no outcome; every other run ends as its producer meant
        assert out["outcome"] in ({None} if "error-mid" in name else {"success", "interrupt", "cancelled"}), name


@pytest.mark.parametrize("style", producers.FRAMINGS)
def test_every_producer_framing_is_the_same_stream_to_our_client(style: str) -> None:
    """The SSE framings producers use (CRLF, keep-alive comments, fields, payloads over several lines) fold alike."""
    [(_, events, inp, _)] = [s for s in producers.streams(3, 1) if s[0].startswith("p-crewai-chunks-")]
    framed = producers.frame(events, style)
    assert ("\r\n" in framed) == (style == "crlf")
    as_lines = test_golden.fold_like_oracle(hostile.dump_lines(events).encode(), inp or {})
    assert test_golden.fold_like_oracle(framed.encode(), inp or {}) == as_lines


def test_a_producer_shape_made_to_meet_a_documented_difference_is_judged_as_that_golden_stream() -> None:
    for shape, golden_name in producers.DOCUMENTED.items():
        assert shape in producers.SHAPES and golden_name in test_golden.DIFFERENCES
    assert producers.documented("p-runs-in-one-stream-s3.1~m4.2") == "runs-cancelled-after-success-result"
    assert producers.documented("p-lg-reasoning-s3.1") is None and producers.documented("multi-run") is None
    ours, theirs = _fold([], outcome="cancelled"), _fold([], outcome="cancelled")
    ours["result"], theirs["result"] = None, {"n": 2}
    assert reference.judge(_stream("p-runs-in-one-stream-s3.1"), ours, theirs).status == "KNOWN"
    assert reference.judge(_stream("p-runs-in-one-stream-s3.1"), ours, ours).status == "SAME"  # (not stale)
    assert reference.judge(_stream("p-lg-reasoning-s3.1"), ours, theirs).status == "DIFF"


def test_producer_streams_are_written_with_their_framing_and_starting_thread(tmp_path: Path) -> None:
    status = main(["--corpus", str(tmp_path), "--gen", "producers:2:2", "--sse-every", "2", "--skip-sources"])
    assert status == 0
    written = reference.collect([tmp_path])
    assert len(written) == 2 * len(producers.SHAPES)
    assert sum(s.path.suffix == ".sse" for s in written) == len(producers.SHAPES)
    assert {s.name for s in written if s.input} == {
        f"p-{shape}-s2.{n}" + (".sse" if n else "") for shape in ("lg-regenerate-snapshot", "lg-closing-snapshot-rich",
                                                                   "snapshot-omits-streaming-call",
                                                                   "snapshot-omits-streaming-text",
                                                                   "adk-delta-on-input-state") for n in (0, 1)}
    for stream in written:
        out = reference.run_ours(stream)
        assert out["ok"] or "TC-21" in out["error"], stream.name


def test_the_families_are_deterministic_for_a_seed_and_our_client_folds_each_to_its_end() -> None:
    """Every family (tools/differential/families.py) is a stream our client accepts, the same for a seed."""
    one = list(families.streams(5, 2))
    assert one == list(families.streams(5, 2))
    assert [e for _, e, _, _ in one] != [e for _, e, _, _ in families.streams(6, 2)]
    made = {name.split("-s5.", 1)[0] for name, *_ in one}
    assert made == {f"f-{shape}" for shape in families.SHAPES} | {"f-chain"}
    outcomes = set()
    for name, events, inp, framing in one:
        assert framing is None
        out = test_golden.fold_like_oracle(hostile.dump_lines(events).encode("utf-8", "surrogatepass"), inp or {})
        if not out["ok"]:  # (a subagent's step finished untagged: refused by both, ST-04)
            assert name.startswith("f-subagent-tree") and "ST-04" in out["error"], (name, out["error"])
            continue
        outcomes.add(out["outcome"])
    assert {"success", "interrupt"} <= outcomes


@pytest.mark.parametrize("seed", range(40))
def test_the_patch_model_draws_patches_that_apply_as_it_says(seed: int) -> None:
    """A patch ``_Model`` draws applies to its document and gives the model's; one drawn to fail does not apply."""
    import copy
    import random

    from agui_client.core.patch import PatchFailed, apply_patch

    rng = random.Random(seed)
    model = families._Model(rng, {"rows": [[1, 2], [3]], "a/b": {"~": [0]}, "": [], "log": []})
    for _ in range(8):
        before = copy.deepcopy(model.doc)
        fail = rng.random() < 0.3
        patch = model.patch(rng.randint(1, 12), fail=fail)
        if fail:
            with pytest.raises(PatchFailed):
                apply_patch(copy.deepcopy(before), patch)
            assert model.doc == before
        else:
            assert apply_patch(copy.deepcopy(before), patch) == model.doc


def test_a_chain_step_starts_from_what_the_step_before_left() -> None:
    """Each step of a thread across requests starts from our fold of the one before: its messages, state and
    open interrupts, with a resume covering every one of them."""
    steps = families.chain(11, 0)
    assert len(steps) >= 3
    assert all(n.startswith(f"f-chain-s11.0-k{k}") for k, (n, *_) in enumerate(steps))
    for (_, events, inp), (_, _, after) in zip(steps, steps[1:], strict=False):
        held = families._fold(events, inp)
        assert after["state"] == held["state"]
        assert [m["id"] for m in after["messages"]][:len(held["messages"])] == [m["id"] for m in held["messages"]]
        pending = [i["id"] for i in held["pendingInterrupts"]]
        assert [i["id"] for i in after.get("pendingInterrupts", [])] == pending
        assert [e["interruptId"] for e in after.get("resume", [])] == pending


def test_a_family_that_may_meet_a_documented_difference_is_judged_as_that_golden_stream() -> None:
    for family, golden_name in families.DOCUMENTED.items():
        assert family in families.SHAPES and golden_name in test_golden.DIFFERENCES
    assert families.documented("f-runs-thread-s3.5") == "runs-interrupt-after-success-result"
    # A chain's step that is a whole family's stream is judged as that family (a chain's own step is not).
    steps = {name: events for seed in range(40, 50) for name, events, _ in families.chain(seed, 0)}
    whole = [name for name in steps if name.endswith("-runs-thread")]
    assert whole and all(families.documented(name) == "runs-interrupt-after-success-result" for name in whole)
    assert families.documented("f-chain-s3.5-k1") is None
    assert families.documented("f-unicode-edges-s3.5") is None and families.documented("p-runs-thread-s1.0") is None
    ours = _fold([], outcome="interrupt") | {"result": None}
    theirs = _fold([], outcome="interrupt") | {"result": 0}
    assert reference.judge(_stream("f-runs-thread-s3.5"), ours, theirs).status == "KNOWN"
    assert reference.judge(_stream("f-chunks-everywhere-s3.5"), ours, theirs).status == "DIFF"


def test_a_mutation_that_meets_a_documented_difference_names_the_golden_streams_that_document_it() -> None:
    made: set[str] = set()
    sources = [_source(n) for n in ("multi-run-interrupt-then-resume", "activity-snapshot-and-delta", "multi-run",
                                    "tool-call-empty-parent-id", "snapshot-calls-after-streamed-text")]
    for k in range(60):
        events, inp = sources[k % len(sources)]
        made.update(label for v in hostile.variants(events, inp, k, 8, "x") for label in v.label.split("+"))
    for pattern, names in hostile_golden.DOCUMENTED.items():
        assert any(fnmatch.fnmatchcase(label, pattern) for label in made), pattern  # a label a mutation writes
        assert names and all(name in test_golden.DIFFERENCES for name in names), pattern
    assert hostile_golden.documented(["numbers-state", "empty-id-text", "rename-tool-as-holder"]) == {
        "empty-id-text": ("tool-call-empty-parent-id",),
        "rename-tool-as-holder": hostile_golden.DOCUMENTED["rename-tool-as-*"]}
    # Text appended to an argument delta may part a character's halves (golden tool-call-args-surrogate-lone);
    # only where a delta holds a half.
    halves = [{"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": '{"q": "\ud83d-0'}]
    assert hostile_golden.documented(["numbers-args"], halves) == {"numbers-args": ("tool-call-args-surrogate-lone",)}
    assert hostile_golden.documented(["numbers-args"], [dict(halves[0], delta='{"q": 1-0')]) == {}
    # Unusual unicode in place of a delta that held a character's second half leaves its first alone (twenty-sixth
    # round: tool-call-restarted-surrogate-split-across-later-end~m20261284.0, the delta '\ude00"}' made '𝔘𝔫𝔦').
    parted = _source("tool-call-restarted-surrogate-split-across-later-end")[0]
    parted[8] = dict(parted[8], delta="𝔘𝔫𝔦")
    assert hostile_golden.documented(["unicode-delta"], parted) == {"unicode-delta": hostile_golden.DOCUMENTED[
        "unicode-delta"]} and "tool-call-args-surrogate-lone" in hostile_golden.DOCUMENTED["unicode-delta"]
    assert hostile_golden.documented(["unicode-delta"], [dict(halves[0], delta='{"q": "𝔘𝔫𝔦')]) == {}
    assert hostile_golden.documented(["activity-over-text-replace-True", "rename-activity-as-text",
                                      "split-run-x"]) == {}
    # An interrupt outcome written on a RUN_FINISHED that lands with a step open (golden interrupt-outcome-step-open);
    # not once the step has finished.
    step_open = _source("interrupt-outcome-step-open")[0]
    assert hostile_golden.documented(["interrupt-outcome"], step_open) == {
        "interrupt-outcome": ("interrupt-outcome-step-open",)}
    closed = [*step_open[:2], {"type": "STEP_FINISHED", "stepName": "plan"}, step_open[2]]
    assert hostile_golden.documented(["interrupt-outcome"], closed) == {}


def _variant(folder: Path, name: str, label: str, events: list[Any] | None = None) -> reference.Stream:
    """A variant's stream written to ``folder`` (by default golden tool-call-empty-parent-id's events)."""
    path = folder / f"{name}.jsonl"
    path.write_text(hostile.dump_lines(events if events is not None else _source("tool-call-empty-parent-id")[0]))
    return reference.Stream(name, path, None, label)


def test_a_variant_carrying_such_a_mutation_may_differ_in_that_golden_streams_fields_only(tmp_path: Path) -> None:
    # empty-id-text: the reference reads the parent id "" as absent (golden tool-call-empty-parent-id)
    ours = _fold([{"id": "", "role": "assistant", "content": "a", "toolCalls": [{"id": "c1"}]}])
    theirs = _fold([{"id": "", "role": "assistant", "content": "a"}, {"id": "c1", "role": "assistant",
                                                                      "toolCalls": [{"id": "c1"}]}])
    variant = _variant(tmp_path, "f-reasoning-full-s3.1~m4.0", "f-reasoning-full-s3.1: numbers-args+empty-id-text")
    known = reference.judge(variant, ours, theirs)
    assert known.status == "KNOWN" and "empty-id-text as tool-call-empty-parent-id" in known.detail
    assert reference.judge(variant, ours, ours).status == "SAME"  # (a mutation may not meet it: not stale)
    # Another field that differs still fails the variant.
    worse = reference.judge(variant, ours | {"state": {"a": 1}}, theirs)
    assert worse.status == "DIFF" and list(worse.fields) == ["state"]
    # Without the mutation in its label, or with no label, or for a stream that is no variant: DIFF.
    for stream in (_variant(tmp_path, "f-reasoning-full-s3.1~m4.0", "f-reasoning-full-s3.1: numbers-args"),
                   _variant(tmp_path, "f-reasoning-full-s3.1~m4.0", ""),
                   _variant(tmp_path, "f-reasoning-full-s3.1", "f-reasoning-full-s3.1: empty-id-text")):
        assert reference.judge(stream, ours, theirs).status == "DIFF"
    # Nor when the variant's events cannot be read (the situation cannot be checked).
    variant.path.unlink()
    assert reference.judge(variant, ours, theirs).status == "DIFF"
    assert reference.mutations(variant) == ["numbers-args", "empty-id-text"]


def test_a_delta_whose_character_unicode_parted_may_differ_as_a_lone_half_does(tmp_path: Path) -> None:
    # Twenty-sixth round: the delta holding a character's second half made '𝔘𝔫𝔦' (unicode-delta) leaves its first
    # half alone in the call's arguments: ours U+FFFD, the reference the half (golden tool-call-args-surrogate-lone).
    events = _source("tool-call-restarted-surrogate-split-across-later-end")[0]
    events[8] = dict(events[8], delta="𝔘𝔫𝔦")

    def call(arguments: str) -> list[Any]:
        return [{"id": "m1", "role": "assistant", "toolCalls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": arguments}}]}]

    ours, theirs = _fold(call('{"a":"xy\ufffd𝔘𝔫𝔦')), _fold(call('{"a":"xy\ud83d𝔘𝔫𝔦'))
    name = "tool-call-restarted-surrogate-split-across-later-end"
    variant = _variant(tmp_path, f"{name}~m20261284.0", f"{name}: unicode-delta", events)
    known = reference.judge(variant, ours, theirs)
    assert known.status == "KNOWN" and known.detail.startswith("unicode-delta as ")
    assert "tool-call-args-surrogate-lone" in known.detail
    # Unusual unicode elsewhere (a name) is no such mutation.
    other = _variant(tmp_path, f"{name}~m20261284.1", f"{name}: unicode-name", events)
    assert reference.judge(other, ours, theirs).status == "DIFF"


def test_a_corpus_read_back_keeps_the_mutations_its_variants_carry(tmp_path: Path) -> None:
    source = GOLDEN / "tool-call-empty-parent-id.jsonl"
    made = reference.generate(tmp_path, [reference.stream_of(source)], [], 3, 7, only=["empty", "split-run"])
    again = {s.name: s for s in reference.collect([tmp_path])}
    assert made and all(reference.mutations(again[s.name]) == s.label.split(": ", 1)[1].split("+") for s in made)


def test_each_golden_stream_a_mutation_names_holds_the_situation_its_check_looks_for() -> None:
    declared = {name for names in hostile_golden.DOCUMENTED.values() for name in names}
    assert declared == set(hostile_golden.SIGNS)
    for name, check in hostile_golden.SIGNS.items():
        assert check(*_source(name)), name
    # ... and only such streams: none of these holds any of the situations.
    for name in ("multi-run", "multi-run-interrupt-then-resume", "activity-snapshot-and-delta", "tool-result-history",
                 "tool-call-parent-unknown", "tool-result-unknown-id", "snapshot-calls-after-streamed-text",
                 "tool-chunk-parent-lane", "tool-result-before-end"):
        assert not any(check(*_source(name)) for check in set(hostile_golden.SIGNS.values())), name


def test_a_variant_is_judged_by_the_situation_its_events_hold(tmp_path: Path) -> None:
    ours = _fold([{"id": "", "role": "assistant", "content": "a", "toolCalls": [{"id": "c1"}]}])
    theirs = _fold([{"id": "", "role": "assistant", "content": "a"}, {"id": "c1", "role": "assistant",
                                                                      "toolCalls": [{"id": "c1"}]}])
    events, _ = _source("tool-call-empty-parent-id")
    other = [{**e, "parentMessageId": "m0"} if "parentMessageId" in e else e for e in events]
    label = "f-x-s1.0: empty-id-text"
    assert reference.judge(_variant(tmp_path, "f-x-s1.0~m2.0", label), ours, theirs).status == "KNOWN"
    assert reference.judge(_variant(tmp_path, "f-x-s1.0~m2.1", label, other), ours, theirs).status == "DIFF"
    # (an SSE-framed variant is read as its events)
    framed = tmp_path / "f-x-s1.0~m2.2.sse"
    framed.write_text("".join(f"data: {line}\n\n" for line in hostile.dump_lines(events).splitlines()))
    assert reference.judge(reference.Stream(framed.name, framed, None, label), ours, theirs).status == "KNOWN"


def test_a_result_id_taken_by_another_calls_result_is_a_collision_and_by_its_own_a_resend() -> None:
    def results(*calls: str) -> list[Any]:
        return [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
                *({"type": "TOOL_CALL_RESULT", "messageId": "t1", "toolCallId": c, "content": "x"} for c in calls),
                {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}]

    assert hostile_golden.has_shared_id(results("c1", "c2"), None)
    assert not hostile_golden.has_result_again(results("c1", "c2"), None)
    assert hostile_golden.has_result_again(results("c1", "c1"), None)
    assert not hostile_golden.has_shared_id(results("c1", "c1"), None)
    history = {"messages": [{"id": "t1", "role": "tool", "toolCallId": "c1", "content": "x"}]}
    assert hostile_golden.has_result_again(results("c1"), history)
    assert hostile_golden.has_shared_id(results("c2"), history)


def test_a_result_named_after_a_reasoning_message_a_snapshot_kept_is_a_collision() -> None:
    # Twenty-fifth round: a snapshot that leaves out the thread's reasoning (and activity) messages keeps them
    # (MS-03), so a result renamed after one later in the run still shares its id
    # (f-chain-s20261243.5-k3-snapshot-rewrites~m20261246.0, rename-result-as-reasoning: reported DIFF before).
    history = {"messages": [{"id": "r1", "role": "reasoning", "content": "thinking"},
                            {"id": "a1", "role": "activity", "activityType": "plan", "content": {}}]}
    snapshot = {"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "u", "role": "user", "content": "hi"}]}
    for taken in ("r1", "a1"):
        result = {"type": "TOOL_CALL_RESULT", "messageId": taken, "toolCallId": "c1", "content": "x"}
        assert hostile_golden.has_shared_id(_run(snapshot, result), history), taken
    # A snapshot keeps no other message: a result named after the user message it left out takes a free id.
    gone = {"messages": [{"id": "u0", "role": "user", "content": "before"}]}
    result = {"type": "TOOL_CALL_RESULT", "messageId": "u0", "toolCallId": "c1", "content": "x"}
    assert not hostile_golden.has_shared_id(_run(snapshot, result), gone)


def _run(*body: dict[str, Any]) -> list[Any]:
    return [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}, *body,
            {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}]


def _start(call: str, parent: str | None = None) -> dict[str, Any]:
    return {"type": "TOOL_CALL_START", "toolCallId": call, "toolCallName": "f",
            **({"parentMessageId": parent} if parent is not None else {})}


def test_a_call_message_keyed_by_an_id_a_message_holds_is_a_collision_whatever_came_first() -> None:
    # Fifteenth round: a parentless call whose id an earlier call named as its parent (rename-tool-as-holder) makes a
    # second message with that id (golden tool-call-parentless-id-collides); named the other way round, the call
    # joins the parentless call's message.
    assert hostile_golden.has_shared_id(_run(_start("c", parent="m"), _start("m")), None)
    assert not hostile_golden.has_shared_id(_run(_start("m"), _start("c", parent="m")), None)
    # A call whose parent is a user message gets a message keyed by its id (TC-08): a collision only when that id
    # is taken, here by the parent itself (golden tool-call-foreign-parent-id-collides).
    user = {"type": "TEXT_MESSAGE_START", "messageId": "u", "role": "user"}
    assert not hostile_golden.has_shared_id(_run(user, _start("c", parent="u")), None)
    assert hostile_golden.has_shared_id(_run(user, _start("u", parent="u")), None)
    activity = {"type": "ACTIVITY_SNAPSHOT", "messageId": "a", "activityType": "plan", "content": {}}
    assert hostile_golden.has_shared_id(_run(activity, _start("a", parent="a")), None)
    # A call started again, a chunk lane going on, a user's chunks: no second message.
    assert not hostile_golden.has_shared_id(_run(_start("c", parent="m"), _start("c", parent="m"), _start("c")), None)
    chunks = [{"type": "TEXT_MESSAGE_CHUNK", "messageId": "u", "role": "user", "delta": "a"},
              {"type": "TEXT_MESSAGE_CHUNK", "messageId": "u", "delta": "b"}]
    assert not hostile_golden.has_shared_id(_run(*chunks), None)
    rename = hostile_golden.DOCUMENTED["rename-tool-as-*"]
    assert {"tool-call-parentless-id-collides-subagent", "tool-call-foreign-parent-id-collides"} <= set(rename)


def test_results_a_mutation_draws_at_one_point_for_two_calls_are_a_result_id_collision() -> None:
    # Fifteenth round: tool-result-empty-content and tool-result-unknown at one point both named their result
    # 'tr9' (f-subagent-tree-s1511.15~m1513.1): ours is 'tr9.no-such-call' as TC-09 says.
    results = _run(_start("c1", parent="m"), {"type": "TOOL_CALL_END", "toolCallId": "c1"},
                   {"type": "TOOL_CALL_RESULT", "messageId": "tr9", "toolCallId": "c1", "content": ""},
                   {"type": "TOOL_CALL_RESULT", "messageId": "tr9", "toolCallId": "no-such-call", "content": "late"})
    labels = ["tool-result-unknown", "empty-delta", "tool-result-empty-content"]
    assert hostile_golden.documented(labels, results) == {"tool-result-unknown": ("tool-result-message-id-collides",),
                                                   "tool-result-empty-content": ("tool-result-message-id-collides",)}
    apart = [{**e, "messageId": "tr10"} if e.get("toolCallId") == "no-such-call" else e for e in results]
    assert hostile_golden.documented(labels, apart) == {}


def test_a_run_that_returned_a_result_then_one_that_did_not_succeed_is_the_result_difference(tmp_path: Path) -> None:
    # Fifteenth round: split-run-same-id then numbers-result on the first run's RUN_FINISHED, the second run failing
    # (p-strands-error-mid-message-s1512.3~m1513.1): ours is the last run's result (none), the reference's the
    # first's (golden runs-error-after-success-result).
    def runs(first: dict[str, Any], *ends: dict[str, Any]) -> list[Any]:
        out: list[Any] = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
                          {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", **first}]
        for end in ends:
            out += [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}, end]
        return out

    error = {"type": "RUN_ERROR", "message": "rate exceeded"}
    cancelled = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": {"type": "cancelled"}}
    success = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}
    errors = hostile_golden.SIGNS["runs-error-after-success-result"]
    cancels = hostile_golden.SIGNS["runs-cancelled-after-success-result"]
    assert errors(runs({"result": {"n": 1}}, error), None) and not cancels(runs({"result": {"n": 1}}, error), None)
    assert cancels(runs({"result": 0}, cancelled), None)
    assert not errors(runs({}, error), None)  # (no result returned: both report none)
    assert not errors(runs({"result": 1}, error, success), None)  # (a run succeeded since: its result, none)
    labels = ["split-run-same-id", "echo-input-add", "numbers-result"]
    assert hostile_golden.documented(labels, runs({"result": 1}, error)) == {
        "split-run-same-id": ("runs-error-after-success-result",),
        "numbers-result": ("runs-error-after-success-result",)}
    variant = _variant(tmp_path, "p-strands-error-mid-message-s1512.3~m1513.1",
                       f"p-strands-error-mid-message-s1512.3: {'+'.join(labels)}", runs({"result": 1}, error))
    ours, theirs = _fold([], outcome=None), _fold([], outcome=None) | {"result": 1}
    known = reference.judge(variant, ours, theirs)
    assert known.status == "KNOWN" and "numbers-result as runs-error-after-success-result" in known.detail
    assert reference.judge(variant, ours | {"state": {"a": 1}}, theirs).status == "DIFF"


def test_the_integration_shapes_are_deterministic_for_a_seed_and_our_client_folds_each_to_its_end() -> None:
    """Every shape of tools/differential/integrations.py is a stream our client accepts, the same for a seed;
    a step of a resume chain may be refused before it runs, for an answer its schema refuses only, and the
    malformed interrupt outcome is refused on purpose."""
    one = list(integrations.streams(7, 3))
    assert one == list(integrations.streams(7, 3))
    assert [e for _, e, _, _ in one] != [e for _, e, _, _ in integrations.streams(8, 3)]
    made = {name.split("-s7.", 1)[0] for name, *_ in one}
    assert made == {f"i-{shape}" for shape in integrations.SHAPES} | {"i-resume-chain"}
    outcomes = set()
    for name, events, inp, framing in one:
        assert framing is None
        out = test_golden.fold_like_oracle(hostile.dump_lines(events).encode("utf-8", "surrogatepass"), inp or {})
        if name.startswith("i-lg-interrupt-malformed"):  # (refused by both, its interrupts held: DOCUMENTED)
            assert not out["ok"] and out["pendingInterrupts"], out
            continue
        if not out["ok"]:
            assert name.startswith("i-resume-chain") and out["refusedFor"] in (["invalid"], ["expired"]), out
            continue
        outcomes.add(out["outcome"])
    assert outcomes == {"success", "interrupt"}


def test_a_resume_chain_turn_resumes_every_interrupt_the_turn_before_left_open() -> None:
    """Each turn starts from our fold of the one before, with a resume covering every open interrupt; an
    interrupt expired at ``now`` is abandoned (or, now and then, answered anyway: refused by both)."""
    turns = [integrations.resume_chain(31, n) for n in range(12)]
    resumed = 0
    for steps in turns:
        for (_, events, inp), (_, _, after) in zip(steps, steps[1:], strict=False):
            held = families._fold(events, inp)
            pending = held["pendingInterrupts"]
            assert after.get("pendingInterrupts", []) == pending
            assert [e["interruptId"] for e in after.get("resume", [])] == [i["id"] for i in pending]
            resumed += bool(pending)
    assert resumed >= 5


def test_a_resume_we_refuse_deliberately_is_known_and_another_refusal_is_not() -> None:
    """We refuse a resume whose payload its responseSchema refuses (golden resume case
    resume-payload-fails-schema, tests/core/test_resume_oracle.py DELIBERATE); the reference sends it, and the
    run's whole fold differs. Any other refusal the reference does not share still fails the stream."""
    theirs = _fold([{"id": "m1", "role": "assistant", "content": "ran"}])
    refused = _fold([], ok=False, outcome=None) | {"refused": True, "refusedFor": ["invalid"],
                                                   "pendingInterrupts": [{"id": "i1", "reason": "approval"}]}
    known = reference.judge(_stream("i-resume-chain-s1.0-k1"), refused, theirs)
    assert known.status == "KNOWN", known.fields
    assert set(known.fields) == {"ok", "messages", "pendingInterrupts"}
    assert "resume refused as golden resume/resume-payload-fails-schema" in known.detail
    for kinds in (["uncovered"], ["invalid", "expired"]):
        other = reference.judge(_stream("i-resume-chain-s1.0-k1"), refused | {"refusedFor": kinds}, theirs)
        assert other.status == "DIFF"
    # Both refusing is the same verdict, not a documented difference.
    assert reference.judge(_stream("s"), refused, refused | {"refused": False}).status == "SAME"


def test_an_integration_shape_made_to_meet_a_documented_difference_is_judged_as_that_golden_stream() -> None:
    for shape, golden_name in integrations.DOCUMENTED.items():
        assert shape in integrations.SHAPES and golden_name in test_golden.DIFFERENCES
    assert integrations.documented("i-lg-interrupt-malformed-s3.1~m2.0") == "interrupt-response-schema-true"
    assert integrations.documented("i-lg-multi-interrupt-s3.1") is None
    assert integrations.documented("p-lg-interrupt-malformed-s3.1") is None
    ours = _fold([], ok=False, outcome=None) | {"pendingInterrupts": [{"id": "i1", "reason": "x"}]}
    theirs = _fold([], ok=False, outcome=None)
    assert reference.judge(_stream("i-lg-interrupt-malformed-s3.1"), ours, theirs).status == "KNOWN"
    assert reference.judge(_stream("i-lg-multi-interrupt-s3.1"), ours, theirs).status == "DIFF"
