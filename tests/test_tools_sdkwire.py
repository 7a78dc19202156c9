"""The SDK dialects of the reference differential (``--gen sdkwire:SEED:N``) without node.

The differential itself needs node and the installed oracle; these tests keep the generator honest: each
dialect writes what its SDK writes (and nothing our client reads differently from the plain form, but where
the SDK's habit changes the meaning), each quirk's own stream is read as docs/codes.md says, and the streams
meeting a documented difference are judged as its golden stream.
"""

from __future__ import annotations

import dataclasses
import json
import random
import sys
from pathlib import Path
from typing import Any

import pytest
import test_golden

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
try:
    from tools.differential import hostile, producers, reference, sdkwire
    from tools.differential.__main__ import main
finally:
    sys.path.remove(str(ROOT))


def _fold(lines: list[str], framing: str | None = None, inp: dict[str, Any] | None = None) -> dict[str, Any]:
    body = sdkwire.frame(lines, framing) if framing else hostile.dump_lines(lines)
    return test_golden.fold_like_oracle(body.encode("utf-8", "surrogatepass"), inp or {})


def _conversation(seed: int, dialect: str) -> list[Any]:
    p = producers._P(random.Random(f"{seed}:conv:{dialect}"))
    return sdkwire.conversation(p, sdkwire.DIALECTS[dialect])


def test_the_streams_are_deterministic_for_a_seed_and_every_dialect_and_quirk_is_drawn() -> None:
    one = list(sdkwire.streams(5, 2))
    assert one == list(sdkwire.streams(5, 2))
    assert [s[1] for s in one] != [s[1] for s in sdkwire.streams(6, 2)]
    names = {name for name, *_ in one}
    assert {f"w-quirk-{q.name}" for q in sdkwire.QUIRKS} <= names
    assert {f"w-{d}-s5.{n}" for d in sdkwire.DIALECTS for n in (0, 1)} <= names
    assert any(name.startswith("w-chain-") for name in names)
    assert {framing for *_, framing in one} - {None} <= set(sdkwire.FRAMINGS)


@pytest.mark.parametrize("dialect", ["go", "kotlin", "dotnet", "dart", "community"])
def test_a_dialect_that_only_writes_differently_folds_as_the_plain_stream(dialect: str) -> None:
    """Escapes, member order, defaults written out, doubles: the same conversation to our client."""
    for seed in range(4):
        events = _conversation(seed, dialect)
        writing = sdkwire.DIALECTS[dialect]
        if dialect == "dotnet":  # (its escapes only: the metadata it may add is what it says, and kept)
            writing = dataclasses.replace(writing, rewrite=sdkwire._same)
        written = sdkwire.render(events, writing, random.Random(seed))
        plain = _fold([json.dumps(e) for e in events])
        if dialect == "go" and any(op.get("value", 0) is None for e in events if e["type"] == "STATE_DELTA"
                                   for op in e["delta"]):
            # omitempty leaves a null value out: the operation is malformed, both clients refuse the run
            assert "needs 'value'" in _fold(written)["error"]
            continue
        assert plain["ok"], plain["error"]
        assert _fold(written) == plain


def test_each_dialect_writes_its_sdks_habits() -> None:
    events = _conversation(3, "go") + [{"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "<&> 😀 é"}]
    rng = random.Random(0)
    go = "\n".join(sdkwire.render(events, sdkwire.DIALECTS["go"], rng))
    assert "\\u003c\\u0026\\u003e" in go and "<" not in go
    dotnet = "\n".join(sdkwire.render(events, sdkwire.DIALECTS["dotnet"], rng))
    assert dotnet.isascii() and "\\uD83D\\uDE00" in dotnet and "\\u00E9" in dotnet
    java = sdkwire.render(events, sdkwire.DIALECTS["java"], rng)
    assert all('"rawEvent":' in line for line in java) and all(line.endswith('"}') for line in java)
    rust = "\n".join(sdkwire.render(events, sdkwire.DIALECTS["rust"], rng))
    assert "REASONING_" not in rust and '"outcome"' not in rust
    call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    kotlin = sdkwire.render([{"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "a", "role": "assistant",
                                                                         "toolCalls": [call]}]}],
                            sdkwire.DIALECTS["kotlin"], rng)
    assert kotlin == ['{"type":"MESSAGES_SNAPSHOT","messages":[{"role":"assistant","id":"a","toolCalls":'
                      '[{"id":"c","function":{"name":"f","arguments":"{}"},"type":"function"}]}]}']
    ruby = sdkwire.render([{"type": "RUN_FINISHED", "threadId": "t", "runId": "r",
                            "result": {"final_answer": None, "ids": [1, None, 2]}}], sdkwire.DIALECTS["ruby"], rng)
    assert ruby == ['{"type":"RUN_FINISHED","threadId":"t","runId":"r","result":{"ids":[1,2]}}']


@pytest.mark.parametrize("style", sdkwire.FRAMINGS)
def test_every_framing_is_the_same_stream_to_our_client(style: str) -> None:
    events = _conversation(1, "dart")
    lines = sdkwire.render(events, sdkwire.DIALECTS["dart"], random.Random(1), pretty=style == "java-pretty")
    framed = sdkwire.frame(lines, style)
    assert framed.count("data:") >= len(lines)
    assert _fold(lines, style) == _fold(sdkwire.render(events, sdkwire.DIALECTS["dart"], random.Random(1)))


@pytest.mark.parametrize("quirk", sdkwire.QUIRKS, ids=lambda q: q.name)
def test_each_quirk_is_read_with_the_code_our_docs_promise(quirk: sdkwire.Quirk) -> None:
    from agui_client import ProtocolError, replay

    body = sdkwire.frame(quirk.lines, quirk.framing) if quirk.framing else hostile.dump_lines(quirk.lines)
    try:
        result = replay(body.encode())
        refused = None
    except ProtocolError as exc:
        refused, result = exc, exc.result
    assert (refused is None) == quirk.accepted, refused
    if refused is not None:
        assert f"[{quirk.code}" in str(refused)
    elif quirk.code is not None:
        assert quirk.code in {w.code for w in result.warnings}
    if quirk.documented:
        assert quirk.documented in test_golden.DIFFERENCES


def test_a_stream_meeting_a_documented_difference_is_judged_as_that_golden_stream() -> None:
    assert sdkwire.documented("w-java-interrupt-nulls-s3.1") == "interrupt-fields-null"
    assert sdkwire.documented("w-quirk-rust-timestamp-f64.sse") == "timestamp-integral-float"
    assert sdkwire.documented("w-java-interrupt-nulls-s3.1.sse") == "interrupt-fields-null"
    assert sdkwire.documented("w-java-s3.1") is None and sdkwire.documented("p-java-interrupt-nulls-s3.1") is None
    assert set(sdkwire.DOCUMENTED.values()) <= set(test_golden.DIFFERENCES)
    ours = {"ok": False, "error": "x", "messages": [], "state": {}, "outcome": None, "pendingToolCallIds": [],
            "result": None, "pendingInterrupts": [{"id": "i1", "reason": "approval"}]}
    theirs = {**ours, "pendingInterrupts": []}
    judged = {name: reference.judge(reference.Stream(name, Path(f"{name}.jsonl")), ours, theirs).status
              for name in ("w-java-interrupt-nulls-s3.1", "w-java-s3.1")}
    assert judged == {"w-java-interrupt-nulls-s3.1": "KNOWN", "w-java-s3.1": "DIFF"}


def test_a_java_stream_writes_interrupt_nulls_only_in_its_own_shape() -> None:
    """The nulls that fail both runs are drawn in their own shape, so the others stay comparable throughout."""
    for name, lines, _, _ in sdkwire.streams(11, 6, only=["java", "java-interrupt-nulls"]):
        outcomes = [json.loads(line).get("outcome") for line in lines if '"RUN_FINISHED"' in line]
        held = [o for o in outcomes if isinstance(o, dict) and o.get("type") == "interrupt"]
        nulls = any(v is None for o in held for i in o["interrupts"] for v in i.values())
        assert nulls == (name.startswith("w-java-interrupt-nulls") and bool(held)), name


def test_the_dialects_are_written_with_their_framing_and_fold_without_a_crash(tmp_path: Path) -> None:
    assert main(["--corpus", str(tmp_path), "--gen", "sdkwire:4:1"]) == 0
    written = reference.collect([tmp_path])
    assert len(written) == len(sdkwire.QUIRKS) + len(sdkwire.DIALECTS) + sum(
        1 for name, *_ in sdkwire.resume_chain(4, 0))
    assert {s.path.suffix for s in written} == {".jsonl", ".sse"}
    for stream in written:
        assert stream.label.startswith("sdkwire.py --seed 4")
        out = reference.run_ours(stream)
        assert set(reference.golden().COMPARED) <= set(out)


def test_only_a_streams_last_run_returns_a_result() -> None:
    """A result followed by another run's end is the documented runs-*-after-success-result, met elsewhere:
    here every result stays comparable."""
    seen = 0
    for name, lines, _, _ in sdkwire.streams(13, 12, only=list(sdkwire.DIALECTS)):
        events = [json.loads(line) for line in lines]
        with_result = [i for i, e in enumerate(events) if e["type"] == "RUN_FINISHED" and e.get("result") is not None]
        seen += len(with_result)
        assert all(e["type"] != "RUN_STARTED" for i in with_result for e in events[i:]), name
    assert seen
