"""The reference differential's variants of golden streams whose documented difference is the verdict, without node.

Two things kept these variants from testing what they were made for: a number a double cannot hold
(golden ``*-number-overflows-double``) was written back as ``Infinity``, which is not JSON, and a variant
that goes on past the event one client refuses (golden ``usage-object``, ``payload-nested-past-limit``)
differed in every field the later events change. The number is now kept as written, and those fields
are accepted when the client that went on, folded up to the refused event, agrees with the other.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import test_golden

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
try:
    from tools.differential import hostile, mutations, reference
finally:
    sys.path.remove(str(ROOT))

GOLDEN = ROOT / "tests" / "golden" / "streams"
SECOND_RUN = [{"type": "RUN_STARTED", "threadId": "t1", "runId": "r2"},
              {"type": "TEXT_MESSAGE_START", "messageId": "m9", "role": "assistant"},
              {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m9", "delta": "later"},
              {"type": "TEXT_MESSAGE_END", "messageId": "m9"},
              {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r2"}]


def _golden(name: str) -> tuple[list[Any], dict[str, Any]]:
    """A golden stream's events and the reference's fold of it (its ``.expected.json``)."""
    events = hostile.parse_lines((GOLDEN / f"{name}.jsonl").read_text(encoding="utf-8"))
    return events, json.loads((GOLDEN / f"{name}.expected.json").read_text(encoding="utf-8"))


def _write(folder: Path, name: str, events: list[Any], sse: bool = False) -> reference.Stream:
    """A variant of a golden stream as ``--mutate`` writes it (JSONL, or one ``data:`` line per event)."""
    text = hostile.dump_lines(events)
    if sse:
        text = "".join(f"data: {line}\n\n" for line in text.splitlines())
    path = folder / (f"{name}.sse" if sse else f"{name}.jsonl")
    path.write_text(text, encoding="utf-8")
    return reference.Stream(path.name if sse else name, path, None, f"{name.split('~')[0]}: reorder")


def test_a_number_a_double_cannot_hold_is_written_back_as_the_stream_wrote_it() -> None:
    events, _ = _golden("interrupt-metadata-number-overflows-double")
    text = hostile.dump_lines(events)
    assert "Infinity" not in text and text.count("1e400") == 2
    assert hostile.parse_lines(text) == events
    # ... in every variant (the mutations leave it alone), and in the mutation fuzzer's cases.
    written = [hostile.dump_lines(v.events) for v in hostile.variants(events, None, 20261260, 12, "x")]
    assert not any("Infinity" in w for w in written) and sum("1e400" in w for w in written) >= 10
    assert mutations.dump({"a": [hostile.NumberText("-1E999")], "b": "\u0000"}) == '{"a": [-1E999], "b": "\\u0000"}'


def test_a_variant_that_goes_on_after_the_references_refusal_differs_only_in_what_follows(tmp_path: Path) -> None:
    # usage-object: the reference refuses the RUN_FINISHED at event 4; a run after it is ours alone.
    events, theirs = _golden("usage-object")
    variant = _write(tmp_path, "usage-object~m1.0", [*events, *SECOND_RUN])
    ours = reference.run_ours(variant)
    assert ours["ok"] and [m["id"] for m in ours["messages"]] == ["m0", "m9"]

    known = reference.judge(variant, ours, theirs)

    assert known.status == "KNOWN", reference.report(known)
    assert set(known.fields) == {"ok", "messages"}
    assert "messages after the reference refused event 4, as usage-object" in known.detail
    # Not when the folds differ before the refused event: the reference held other text there.
    other = theirs | {"messages": [{"id": "m0", "role": "assistant", "content": "other"}]}
    assert list(reference.judge(variant, ours, other).fields) == ["messages"]
    # Not for a verdict the golden stream does not document: here we refuse event 4 and the reference
    # goes on, though the folds agree up to it.
    refused = ours | {"ok": False, "error": "refused", "errorIndex": 4, "messages": theirs["messages"]}
    went_on = theirs | {"ok": True, "messages": ours["messages"]}
    wrong_way = reference.judge(variant, refused, went_on, lambda prefix: theirs | {"ok": True})
    assert wrong_way.status == "DIFF" and list(wrong_way.fields) == ["messages"]


def test_through_sse_the_reference_is_asked_where_it_refused_the_events_folded_directly(tmp_path: Path) -> None:
    # The HTTP path keeps nothing of a refused stream (B071): its fold there cannot say where it refused.
    events, theirs = _golden("usage-object")
    variant = _write(tmp_path, "usage-object~m1.1", [*events, *SECOND_RUN], sse=True)
    ours = reference.run_ours(variant)
    over_http = theirs | {"messages": [], "lastEventIndex": None}
    asked: list[str] = []

    def refold(prefix: reference.Stream) -> dict[str, Any]:
        asked.append(prefix.path.read_text(encoding="utf-8"))
        return theirs

    assert reference.judge(variant, ours, over_http).status == "DIFF"  # (no way to ask)
    assert reference.judge(variant, ours, over_http, refold).status == "KNOWN"
    assert asked == [hostile.dump_lines([*events, *SECOND_RUN])]


def test_a_variant_that_goes_on_after_our_refusal_is_compared_with_the_reference_up_to_it(tmp_path: Path) -> None:
    # state-snapshot-number-overflows-double: we refuse the snapshot at event 2; the reference goes on.
    events, theirs = _golden("state-snapshot-number-overflows-double")
    variant = _write(tmp_path, "state-snapshot-number-overflows-double~m1.0", [*events[:3], *SECOND_RUN[1:4],
                                                                              events[3]])
    ours = reference.run_ours(variant)
    assert not ours["ok"] and ours["errorIndex"] == 2
    went_on = theirs | {"messages": [{"id": "m9", "role": "assistant", "content": "later"}]}
    prefixes: list[str] = []

    def refold(prefix: reference.Stream) -> dict[str, Any]:
        # (what the reference holds after events 0 and 1: our own fold of them, on which both agree)
        prefixes.append(prefix.path.read_text(encoding="utf-8"))
        return test_golden.fold_like_oracle(prefix.path, {})

    assert list(reference.judge(variant, ours, went_on).fields) == ["messages"]  # (without the reference at hand)
    known = reference.judge(variant, ours, went_on, refold)
    assert known.status == "KNOWN" and "messages after ours refused event 2" in known.detail
    assert prefixes == ["".join(line + "\n" for line in variant.path.read_text().splitlines()[:2])]
    # The reference up to our refusal holding another message: the difference stands.
    other = [{"id": "m0", "role": "user", "content": "earlier"}]
    elsewhere = reference.judge(variant, ours, went_on, lambda prefix: refold(prefix) | {"messages": other})
    assert elsewhere.status == "DIFF" and list(elsewhere.fields) == ["messages"]
