"""Golden vectors: our fold against the reference client (@ag-ui/client 1.0.0) on the same streams.

Each ``tests/golden/streams/NAME.jsonl`` was folded by the reference through ``../shared/oracle``
(``make_golden.py``) into ``NAME.expected.json``. We fold the same stream with ``replay()`` and compare
the messages, the state, the open interrupts, the outcome, the pending tool calls, the result, and
whether the run was accepted. Where we deliberately differ, ``DIFFERENCES`` names the stream, what
differs, and why (rules.md "Known disagreements", the verdicts of bad-inputs.md).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agui_client import ProtocolError, ResumeRefused, ThreadState, encode, replay
from agui_client.core.interrupts import check_resume
from agui_client.types import Interrupt, Message, ResumeEntry, TokenUsage
from agui_client.wire.codec import decode

GOLDEN = Path(__file__).parent / "golden"
STREAMS = sorted(p.stem for p in (GOLDEN / "streams").glob("*.jsonl"))
ROOT = Path(__file__).parent.parent

# stream -> (fields that differ, why). "ok" means acceptance differs.
_REJECT_KEEP = frozenset({"ok", "pendingInterrupts"})
DIFFERENCES: dict[str, tuple[frozenset[str], str]] = {
    "stream-ends-after-run-started": (frozenset({"ok"}), "LC-04/B074: a stream that ends without RUN_FINISHED or "
                                      "RUN_ERROR is a failed run (StreamEnded); the reference resolves it as success"),
    "stream-ends-mid-message": (frozenset({"ok"}), "LC-04/B073: no terminal is an error; the partial text is kept and "
                                "flagged incomplete"),
    "stream-ends-mid-tool-args": (frozenset({"ok"}), "B075: no terminal is an error; the cut call is kept, flagged "
                                  "incomplete, and never offered as pending"),
    "run-finished-success-with-interrupts": (_REJECT_KEEP, "IR-03/B233: the success outcome is closed; carrying "
                                             "interrupts is a contradiction we reject, never a success, and the "
                                             "interrupts are held open rather than dropped"),
    "run-finished-cancelled-with-interrupts": (_REJECT_KEEP, "IR-04/B234: the cancelled outcome is closed; the "
                                               "interrupts it carried are held open rather than dropped"),
    "interrupt-response-schema-true": (frozenset({"pendingInterrupts"}), "B238: both reject the boolean schema; we "
                                       "keep the interrupt open (without the schema) rather than losing it"),
    "interrupt-no-reason": (frozenset({"pendingInterrupts"}), "B235: both reject; we keep the interrupt open "
                            "(reason 'unknown') so the next run cannot skip it"),
    "interrupt-subagent-null": (frozenset({"pendingInterrupts"}), "B242: both reject the null tag; we keep the "
                                "interrupt open (unattributed) so the next run cannot skip it"),
    "tool-result-id-collides-open-subagent-message": (frozenset({"ok", "messages"}), "TC-09 with UK-16 as "
                                                      "tool-result-message-id-collides, while a subagent's message "
                                                      "m1 is open (found by the reference differential): ours is "
                                                      "'m1.c1' and the run goes on; the reference's second 'm1', "
                                                      "the parent agent's, takes over m1's owner, so the "
                                                      "subagent's END for m1 disagrees with it (SA-11) and the "
                                                      "reference fails the run"),
    "interrupt-fields-wrong-type": (frozenset({"pendingInterrupts"}), "B238/B242 for any field of the wrong type "
                                    "(found by the reference differential): both reject the outcome; we keep "
                                    "its interrupts open, each without the field it could not read"),
    "interrupt-fields-null": (frozenset({"pendingInterrupts"}), "as interrupt-fields-wrong-type for an interrupt's "
                              "optional fields written null (the Java SDK's records under Jackson's default "
                              "inclusion; found by the SDK-dialect differential): neither client reads them as "
                              "legacy nulls, both reject the outcome (UK-05); we keep its interrupts open with "
                              "the fields that were set"),
    "run-finished-pending-contradiction": (frozenset({"pendingToolCallIds"}), "B170: duplicated ids in "
                                           "pendingToolCallIds are dropped (order kept) with a warning"),
    "text-surrogate-lone": (frozenset({"messages"}), "B093: a half of a surrogate pair still unpaired when the "
                            "message is joined becomes U+FFFD, so the thread can be encoded and sent again"),
    "text-chunk-mixed-explicit": (frozenset({"ok", "messages"}), "TX-14: mixing chunk and explicit forms on one id "
                                  "is tolerated as content for the open message; the reference rejects it"),
    "snapshot-calls-after-streamed-text": (frozenset({"pendingToolCallIds"}), "TC-17 with MS-01 (issue 17 item 13): "
                                           "a call a snapshot adds to a message the run streamed into was made in "
                                           "this run (ag-ui-langgraph names parallel calls only in its closing "
                                           "snapshot); the reference counts TOOL_CALL_START only"),
    "state-delta-root-remove": (frozenset({"state"}), "B190: removing the whole document is refused (state unchanged, "
                                "warning); the reference makes the state null"),
    "state-delta-unknown-op": (frozenset({"state"}), "SP-07 / AGUI303 (bad-inputs' verdict for a 1.0 consumer): "
                               "a patch holding an op JSON Patch does not define is skipped whole, with a "
                               "warning; the reference drops the op and applies the rest"),
    "state-delta-op-not-string": (frozenset({"state"}), "SP-07 / AGUI303, as state-delta-unknown-op: an operation "
                                  "whose op is missing or not a string names no operation JSON Patch defines, so its "
                                  "patch is skipped whole, with a warning; the reference drops the op and applies "
                                  "the rest"),
    "state-delta-proto-keys": (frozenset({"state"}), "B202: __proto__ and constructor are ordinary keys in Python; "
                               "the reference's patch library refuses them"),
    "messages-snapshot-duplicate-ids": (frozenset({"messages"}), "B205: one entry per id (the last wins); the "
                                        "reference appends both copies"),
    "payload-not-json": (frozenset({"messages"}), "B071: what was folded before the bad payload is kept; the "
                         "reference loses it (its error overtakes the queued fold)"),
    "usage-negative": (frozenset({"ok"}), "B282/TU-04, a deliberate deviation: a usage entry the schema refuses is "
                       "dropped with a warning and the RUN_FINISHED applied (telemetry must not cost the outcome); "
                       "the reference rejects the whole RUN_FINISHED and fails the run"),
    "usage-object": (frozenset({"ok"}), "B285/TU-01: a usage that is not an array is dropped with a warning and the "
                     "RUN_FINISHED applied; the reference fails the run"),
    "resume-unknown-id": (frozenset({"ok", "messages", "pendingInterrupts"}), "B267/IR-10: an entry naming an "
                          "interrupt that is not open is refused before anything is sent; the reference sends it"),
    # Found by a differential run against the reference on streams that were not golden yet (tenth round).
    "interrupt-duplicate-ids": (_REJECT_KEEP, "IR-06/B232: two interrupts with one id make coverage ambiguous (one "
                                "answer would cover both); the outcome is refused and the first held open; the "
                                "reference accepts both"),
    "runs-cancelled-after-success-result": (frozenset({"result"}), "B137/LC-11/LC-12: the result is the last run's "
                                            "(a cancelled run produced nothing); the reference keeps reporting "
                                            "the earlier run's"),
    "runs-error-after-success-result": (frozenset({"result"}), "LC-12 as runs-cancelled-after-success-result: the "
                                        "result is the last run's, and a run that failed returned none (a "
                                        "producer's second run on one connection erroring); the reference keeps "
                                        "reporting the earlier run's"),
    "interrupt-outcome-message-open": (frozenset({"pendingInterrupts"}), "IR-27 with TX-04: both refuse a "
                                       "RUN_FINISHED while a message is open; its interrupt outcome still says the "
                                       "agent stopped to ask, so we hold i1 open (as for interrupt-duplicate-ids); "
                                       "the reference leaves nothing pending"),
    "runs-interrupt-after-success-result": (frozenset({"result"}), "LC-12 as runs-cancelled-after-success-result: "
                                            "the result is the last run's, and an interrupted run returned none; "
                                            "the reference keeps reporting the earlier run's"),
    "state-delta-add-leading-zero-index": (frozenset({"state"}), "SP-11/B182: an array index with a leading zero "
                                           "is not applied (warning); the reference's patch library adds at 1"),
    "state-snapshot-integer-beyond-double": (frozenset({"state"}), "TU-04's range is for usage only: state is any "
                                             "JSON, kept exactly; the reference rounds to a double"),
    "tool-call-empty-parent-id": (frozenset({"messages"}), "UK-15/TC-08: \"\" is a legal id, so the call goes "
                                  "on message \"\"; the reference reads it as absent (a JavaScript truthiness "
                                  "test) and keys the message by the call id"),
    "tool-call-parentless-id-collides": (frozenset({"messages"}), "TC-08 with UK-16: an unattributed call gets a "
                                         "message keyed by its id; when a message already has that id (legal: "
                                         "ids are unique per kind) ours is 'x.assistant', one id per message; "
                                         "the reference makes a second message 'x'"),
    "tool-call-restarted-from-history": (frozenset({"messages"}), "TC-22/TC-05: a START for a call an earlier run "
                                         "made, with its ARGS again, replaces the arguments (ag-ui-langgraph "
                                         "re-sends calls on resume); within one run they are appended as the "
                                         "reference does; the reference appends here too ('12')"),
    "tool-result-message-id-collides": (frozenset({"messages"}), "TC-09 with UK-16: a tool result whose messageId "
                                        "names another message gets 'm1.c1' (one id per message, with a "
                                        "warning); the reference makes a second message 'm1'"),
    # Found by the reference differential (python -m tools.differential --oracle, hostile variants).
    "tool-result-resent-same-id": (frozenset({"messages"}), "UK-16/TC-09: a result sent again for the same call "
                                   "under the same messageId is the same message: it replaces the first where it "
                                   "stands (one message per id, as B205 for snapshots); the reference appends a "
                                   "second message 't1'"),
    "tool-result-named-after-parentless-call": (frozenset({"messages"}), "TC-08/TC-09 with UK-16: the assistant "
                                                "message of a parentless call is keyed by the call id by this "
                                                "client; a result whose messageId is that id keeps it and the "
                                                "assistant message becomes 'c1.assistant' (one id per message, "
                                                "with a warning); the reference makes two messages 'c1'"),
    "tool-call-restarted-after-snapshot": (frozenset({"messages"}), "TC-22/TC-05 as tool-call-restarted-from-history: "
                                           "a call this run did not start (a snapshot restated it) started again "
                                           "with its ARGS gets them replaced (ag-ui-langgraph restates the history, "
                                           "then re-sends the interrupted call); the reference appends "
                                           "('{\"a\":1}{\"a\":1}', not JSON)"),
    # Producer shapes (tools/differential/producers.py): ag-ui-langgraph re-emits a call its model did not
    # stream when the tool ends, naming the ToolMessage's id as the call's parent and as the result's id.
    "tool-call-parent-is-result-id": (frozenset({"messages"}), "TC-08/TC-09 with UK-16, the ag-ui-langgraph "
                                      "shape: the call's parentMessageId names no message yet, so its "
                                      "assistant message gets that id; the result named the same is kept as "
                                      "'tm1.c1' (one id per message, with a warning, as for "
                                      "tool-result-message-id-collides); the reference makes two messages 'tm1'"),
    "tool-call-parent-is-result-id-closing-snapshot": (frozenset({"messages"}), "as tool-call-parent-is-result-id, "
                                                       "then the closing MESSAGES_SNAPSHOT ag-ui-langgraph sends "
                                                       "(tm1 the tool message, the call on ai1): one tool message "
                                                       "'tm1'; the reference replaces both of its 'tm1' messages by "
                                                       "the snapshot's and keeps the result twice"),
    "tool-call-parent-is-call-id": (frozenset({"messages"}), "TC-08/TC-09 with UK-16, ag-ui-langgraph when the "
                                    "ToolMessage has no id: the call names its own id as parent and the result "
                                    "takes it too; as tool-result-named-after-parentless-call the result keeps 'c1' "
                                    "and the assistant message becomes 'c1.assistant'; the reference makes two "
                                    "messages 'c1'"),
    # Found by the reference differential's thirteenth round (tools/differential/families.py): the reference's
    # JSON Patch library (fast-json-patch 3.1.1) departs from RFC 6902/6901 where we follow it (SP-06, SP-11).
    "interrupt-outcome-reasoning-open": (frozenset({"pendingInterrupts"}), "RS-05 with IR-27, as "
                                         "interrupt-outcome-message-open: both refuse a RUN_FINISHED while a "
                                         "reasoning span is open; its interrupt outcome still says the agent "
                                         "stopped to ask, so we hold i1 open; the reference leaves nothing "
                                         "pending"),
    # Found by the twenty-fourth round's reference differential (a mutated step-duplicate-open whose RUN_FINISHED
    # was given an interrupt outcome): the same refusal with a step left open, and (probed then) with a call
    # or a subagent left open; a second run (a mutated run-finished-after-error) found it after a RUN_ERROR.
    "interrupt-outcome-step-open": (frozenset({"pendingInterrupts"}), "ST-02 with IR-27, as "
                                    "interrupt-outcome-message-open: both refuse a RUN_FINISHED while a step is "
                                    "open; its interrupt outcome still says the agent stopped to ask, so we hold "
                                    "i1 open; the reference leaves nothing pending"),
    "interrupt-outcome-call-open": (frozenset({"pendingInterrupts"}), "TC-04 with IR-27, as "
                                    "interrupt-outcome-message-open, with a tool call left open"),
    "interrupt-outcome-subagent-open": (frozenset({"pendingInterrupts"}), "SA-04 with IR-27, as "
                                        "interrupt-outcome-message-open, with a subagent left active"),
    "interrupt-outcome-after-run-error": (frozenset({"pendingInterrupts"}), "CL-05 with IR-27, as "
                                          "interrupt-outcome-message-open: both refuse a RUN_FINISHED after the "
                                          "run's RUN_ERROR; its interrupt outcome still says the agent stopped "
                                          "to ask, so we hold i1 open (every refused interrupt outcome is held); "
                                          "the reference leaves nothing pending"),
    "state-delta-index-past-end": (frozenset({"state"}), "SP-11/RFC 6902 4.1: a move or copy whose target index "
                                   "is past the array's end (after the move's removal) does not apply "
                                   "(warning); the reference adds the value at the end"),
    "state-delta-empty-array-index": (frozenset({"state"}), "SP-11/RFC 6901: \"\" is no array index, so add "
                                      "/a/ on an array does not apply (warning); the reference reads it as 0 and "
                                      "inserts at the front"),
    "state-delta-inherited-member-names": (frozenset({"state"}), "SP-06: replace or remove of a member the "
                                           "object does not have fails (warning), whatever its name; the "
                                           "reference finds toString and valueOf on every JavaScript object, "
                                           "so it adds the first and lets the patch with the second apply"),
    "state-delta-move-target-after-removal": (frozenset({"state"}), "RFC 6902 4.4: a move is a remove then an "
                                              "add, so its target is read after the removal; the reference "
                                              "checks the target's parent in the document before it and "
                                              "refuses the patch (warning)"),
    "state-delta-move-into-shifted-sibling": (frozenset({"state"}), "RFC 6902 4.4: a location whose pointer is "
                                              "a proper prefix of the target's cannot be moved there (/a/1 "
                                              "into /a/1/moved), even where the removal shifted another "
                                              "element to /a/1; the reference applies it"),
    "state-delta-test-has-own-property": (frozenset({"state"}), "SP-06: the test compares equal JSON, so the "
                                          "patch applies; the reference's comparison calls the value's "
                                          "hasOwnProperty member, which is a number here, and refuses the "
                                          "patch"),
    "state-snapshot-number-overflows-double": (frozenset({"ok", "state"}), "B090/TR-09: a number that overflows "
                                               "a double is no JSON value either side can write back; the "
                                               "payload is refused (AGUI502) and the run fails, state as it "
                                               "was; the reference reads Infinity and writes it as null"),
    "interrupt-metadata-number-overflows-double": (frozenset({"ok", "pendingInterrupts"}), "B090/TR-09 as "
                                                   "state-snapshot-number-overflows-double, in an interrupt's "
                                                   "metadata and responseSchema (found by the twentieth round's "
                                                   "audit): we refuse the RUN_FINISHED and hold i1 and i2 open, "
                                                   "each without the field holding the number; the reference "
                                                   "accepts it, the number written as null"),
    "tool-call-args-surrogate-lone": (frozenset({"messages"}), "B093 as text-surrogate-lone: a half of a "
                                      "surrogate pair still unpaired when the call's arguments end becomes U+FFFD "
                                      "(the arguments must be sent again as UTF-8); the reference keeps it"),
    "activity-delta-root-not-object": (frozenset({"messages"}), "AC-05 with the schema's ActivityMessage.content "
                                       "(an object): a patch that makes the content an array does not apply "
                                       "(warning); the reference applies it"),
    "text-chunk-then-explicit-end": (frozenset({"ok"}), "TX-14 as text-chunk-mixed-explicit: an explicit END for "
                                     "a message its chunks opened closes it; the reference closes the chunk's "
                                     "message first and then refuses the END"),
    "tool-chunk-then-explicit-args": (frozenset({"ok", "messages", "pendingToolCallIds"}), "TX-14 applied to "
                                      "calls (TC-21): explicit ARGS for a call its chunks opened are that call's; "
                                      "the reference closes the call first and then refuses the ARGS (its "
                                      "arguments stay '{')"),
    "timestamp-integral-float": (frozenset({"ok", "messages"}), "UK-09/UK-05: timestamp is an integer and no "
                                 "value is coerced, so 1780000000000.0 is refused as a number (the run fails); the "
                                 "reference reads JSON numbers as JavaScript does and accepts it"),
    "payload-nested-past-limit": (frozenset({"ok"}), "B094/B095, TR-09: a payload nested deeper than 512 levels "
                                  "(wire.jsonio.DEFAULT_MAX_DEPTH) is refused (AGUI502, the run fails, what was "
                                  "folded before kept); the reference reads any depth its parser reaches"),
    "run-finished-outcome-type-not-string": (frozenset({"ok"}), "LC-10, UK-05: an outcome whose type is missing or "
                                             "not a string fails the run (text folded before kept); read as "
                                             "success it could move past the interrupts it was meant to carry. The "
                                             "reference strips it and reads success"),
    "event-duplicated-key": (frozenset({"ok", "messages"}), "TR-09: an event object repeating a key is ambiguous "
                             "and refused (the run fails, the text folded before kept); the reference takes the "
                             "last value"),
    "reasoning-surrogate-lone": (frozenset({"messages"}), "B093 as text-surrogate-lone, for a reasoning message: "
                                 "the lone half becomes U+FFFD when the message ends; the reference keeps it"),
    "text-surrogate-split-across-reopen": (frozenset({"messages"}), "B093 with TX-05: the high half left alone at "
                                           "the message's END is repaired there (the thread may be sent between "
                                           "END and a re-opening), so the low half the re-opened message brings "
                                           "is alone too: two U+FFFD; the reference joins them into one character"),
    "tool-call-restarted-surrogate-split-across-first-end": (frozenset({"messages"}), "B093 with TC-05, as "
                                                             "text-surrogate-split-across-reopen: a call's first "
                                                             "END judges its arguments (the thread may be sent "
                                                             "before a restart), so each half is alone there: two "
                                                             "U+FFFD; the reference joins them"),
    # Found by the reference differential's fourteenth round (hostile variants of family and producer streams).
    "tool-call-parentless-id-collides-subagent": (frozenset({"messages"}), "SA-10/SA-12 with TC-08/UK-16, as "
                                                  "tool-call-parentless-id-collides: a subagent's call is "
                                                  "attributed, so its message 'x.assistant' is the subagent's; "
                                                  "the reference's second message 'x' (its collision path) "
                                                  "loses the subagentRunId it gives a call's message "
                                                  "otherwise, as if the parent agent made the call"),
    "activity-delta-move-target-after-removal": (frozenset({"messages"}), "AC-03 with RFC 6902 4.4, as "
                                                 "state-delta-move-target-after-removal: the activity's "
                                                 "content is patched; the reference refuses the patch"),
    # Found by the reference differential's fifteenth round (an activity written over a text message whose id
    # a call of it was renamed to).
    "tool-call-foreign-parent-id-collides": (frozenset({"messages"}), "TC-08 with UK-16, as "
                                             "tool-call-parentless-id-collides: a call whose parent is a message "
                                             "of another role gets a message keyed by its id; when a message "
                                             "already has that id (here the parent itself) ours is 'u.assistant', "
                                             "one id per message; the reference makes a second message 'u'"),
    "usage-null": (frozenset({"ok"}), "UK-06 with TU-05, a deliberate deviation as usage-object: a null usage is "
                                      "read as absent (reporting nothing) with a warning and the run's outcome "
                                      "stands; the reference fails the run on it (its compatibility layer reads "
                                      "null as absent for an outcome or a result, not for usage)"),
    "subagent-finished-outcome-null": (frozenset({"ok"}), "UK-06 with SA-07: a null subagent outcome is read as "
                                                          "absent (success) with a warning, as an outcome the "
                                                          "client cannot read already is; the reference fails "
                                                          "the run (it reads RUN_FINISHED's null outcome as "
                                                          "absent, not SUBAGENT_FINISHED's)"),
}


def _load_input(name: str) -> dict[str, Any]:
    path = GOLDEN / "streams" / f"{name}.input.json"
    return json.loads(path.read_text()) if path.exists() else {}


def fold_like_oracle(stream: Path | bytes, seed: dict[str, Any]) -> dict[str, Any]:
    """Fold a stream the way the oracle does: seed the thread, check the resume, replay."""
    messages = decode(seed.get("messages", []), tuple[Message, ...])
    pending = decode(seed.get("pendingInterrupts", []), tuple[Interrupt, ...])
    thread = ThreadState(messages=messages, state=seed.get("state", {}), thread_id=seed.get("threadId"),
                         open_interrupts=pending)
    out: dict[str, Any] = {"ok": True, "error": None}
    if pending:
        entries = decode(seed.get("resume", []), tuple[ResumeEntry, ...])
        try:
            check_resume(pending, entries, now=_now(seed.get("now")))
        except ResumeRefused as exc:
            return {"ok": False, "error": str(exc), "messages": encode(thread.messages), "state": thread.state,
                    "pendingInterrupts": encode(thread.open_interrupts), "outcome": None,
                    "pendingToolCallIds": [], "result": None, "refused": True,
                    "refusedFor": sorted(kind for kind, ids in exc.problems.items() if ids)}
    try:
        result = replay(stream, state=thread)
    except ProtocolError as exc:
        assert exc.result is not None
        result = exc.result
        out = {"ok": False, "error": str(exc), "errorIndex": exc.index}
    out.update({
        "newMessageIds": list(result.new_message_ids),
        "messages": encode(thread.messages),
        "state": thread.state,
        "pendingInterrupts": encode(thread.open_interrupts),
        "outcome": result.outcome if result.outcome != "error" else None,
        "pendingToolCallIds": list(result.pending_tool_call_ids),
        "result": result.result,
        "runError": None if result.error is None else {"message": result.error.message, "code": result.error.code},
    })
    return out


def _now(value: Any) -> Any:
    from datetime import datetime, timezone

    if value is None:
        return None
    if isinstance(value, (int, float)):
        return datetime.fromtimestamp(value / 1000, tz=timezone.utc)
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


COMPARED = ("ok", "messages", "state", "pendingInterrupts", "outcome", "pendingToolCallIds", "result")


def _minted_ids(theirs: Any, ours: Any, mapping: dict[str, str]) -> Any:
    """Replace ids the reference minted at random (``<uuid:N>`` in the golden file) by ours, in order."""
    if isinstance(theirs, dict) and isinstance(ours, dict):
        return {k: _minted_ids(v, ours.get(k), mapping) for k, v in theirs.items()}
    if isinstance(theirs, list) and isinstance(ours, list):
        return [_minted_ids(t, o, mapping) for t, o in zip(theirs, ours, strict=False)] + theirs[len(ours):]
    if isinstance(theirs, str) and theirs.startswith("<uuid:") and isinstance(ours, str):
        return mapping.setdefault(theirs, ours)
    return theirs


def mismatches(ours: dict[str, Any], theirs: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The ``COMPARED`` fields where our fold (``fold_like_oracle``) and the reference's output differ.

    Field -> ``{"ours": ..., "reference": ...}`` (the reference's minted ids replaced by ours). Also
    used by ``python -m tools.differential --oracle`` on streams that are not golden.
    """
    theirs = _minted_ids(theirs, ours, {})
    found: dict[str, dict[str, Any]] = {}
    for key in COMPARED:
        if key == "outcome" and not theirs.get("ok", True):
            continue  # the reference reports no outcome for a run it rejected mid-way
        if key in ("outcome", "pendingToolCallIds", "result") and not ours["ok"]:
            continue
        if ours.get(key) != theirs.get(key):
            found[key] = {"ours": ours.get(key), "reference": theirs.get(key)}
    return found


def _compare(name: str, ours: dict[str, Any], theirs: dict[str, Any]) -> None:
    allowed, _why = DIFFERENCES.get(name, (frozenset(), ""))
    found = mismatches(ours, theirs)
    mismatched = set(found)
    unexpected = mismatched - allowed
    assert not unexpected, {k: found[k] for k in sorted(unexpected)}
    # A listed difference must still be a difference: stale entries hide regressions.
    stale = allowed - mismatched
    assert not stale, f"{name}: listed differences no longer differ: {sorted(stale)}"


@pytest.mark.parametrize("name", STREAMS)
def test_stream_folds_like_the_reference(name: str) -> None:
    expected = json.loads((GOLDEN / "streams" / f"{name}.expected.json").read_text())
    ours = fold_like_oracle(GOLDEN / "streams" / f"{name}.jsonl", _load_input(name))
    _compare(name, ours, expected)


def _reports_new_messages(name: str) -> bool:
    # The reference reports new messages only for a run it accepted (runAgent() resolved).
    expected = json.loads((GOLDEN / "streams" / f"{name}.expected.json").read_text())
    return bool(expected["ok"]) and "newMessages" in expected


@pytest.mark.parametrize("name", [n for n in STREAMS if "messages" not in DIFFERENCES.get(n, (frozenset(), ""))[0]
                                  and _reports_new_messages(n)])
def test_the_new_messages_are_the_references(name: str) -> None:
    """The run's new messages are the ones the reference's ``runAgent()`` reports: those the thread holds at
    the end that it did not hold at the start. (Compared as sets: ours are in the order the run added them,
    the reference's in the thread's order.) Streams whose messages differ by design are left out."""
    expected = json.loads((GOLDEN / "streams" / f"{name}.expected.json").read_text())
    ours = fold_like_oracle(GOLDEN / "streams" / f"{name}.jsonl", _load_input(name))
    theirs = _minted_ids([m["id"] for m in expected["newMessages"]], ours["newMessageIds"], {})
    assert sorted(ours["newMessageIds"]) == sorted(theirs)


def test_the_new_messages_are_in_the_order_the_run_added_them() -> None:
    """A deliberate difference in order only (golden new-messages-order-subagent-result): a tool result goes
    after its call's message, before the subagent's message streamed in between; our new messages keep the
    order the run added them in (what was said when), the reference lists them in the thread's order."""
    name = "new-messages-order-subagent-result"
    expected = json.loads((GOLDEN / "streams" / f"{name}.expected.json").read_text())
    ours = fold_like_oracle(GOLDEN / "streams" / f"{name}.jsonl", {})
    assert [m["id"] for m in ours["messages"]] == [m["id"] for m in expected["messages"]] == ["m1", "t1", "sm1"]
    assert [m["id"] for m in expected["newMessages"]] == ["m1", "t1", "sm1"]
    assert ours["newMessageIds"] == ["m1", "sm1", "t1"]


# stream -> the warnings we give, as (code, event index, pointer): where INDEX.md asks for a warning (or for
# none), its presence is compared, never its wording.
WARNINGS: dict[str, list[tuple[str, int, str | None]]] = {
    "usage-negative": [("TU-04", 4, "/usage/0/inputTokens")],
    "usage-object": [("TU-01", 4, "/usage")],
    "run-finished-usage": [],
    "run-started-protocol-version": [],
    "run-started-protocol-version-newer": [("PV-03", 0, "/protocolVersion")],
    "run-started-protocol-version-garbage": [("PV-03", 0, "/protocolVersion")],
    # TC-05 at the restart, and TC-06 when the run ends, on the arguments appended to those a snapshot
    # restated (the run started the call itself: no replay from history).
    "tool-call-restarted-after-own-snapshot": [("TC-05/AGUI205", 5, "/toolCallId"), ("TC-06/AGUI204", 8, None)],
}


@pytest.mark.parametrize("name", sorted(WARNINGS))
def test_stream_warns_as_the_index_says(name: str) -> None:
    result = replay(GOLDEN / "streams" / f"{name}.jsonl")
    assert [(w.code, w.index, w.pointer) for w in result.warnings] == WARNINGS[name]
    assert all(w.run_id == "r1" for w in result.warnings)


def test_a_dropped_usage_entry_leaves_the_others_and_the_outcome() -> None:
    result = replay(GOLDEN / "streams" / "usage-negative.jsonl")
    assert result.outcome == "success"
    assert result.usage == (TokenUsage(output_tokens=2),)


GEN = sorted((GOLDEN / "gen").glob("*.expected.json"))


def _canonical_digest(value: Any) -> dict[str, Any]:
    import hashlib

    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return {"count": len(value) if isinstance(value, list) else None,
            "sha256": hashlib.sha256(text.encode()).hexdigest()}


@pytest.mark.parametrize("path", GEN, ids=[p.name.split(".")[0] for p in GEN])
def test_generated_stream_folds_like_the_reference(path: Path, tmp_path: Path) -> None:
    expected = json.loads(path.read_text())
    gen = expected["gen"]
    out = tmp_path / "stream.jsonl"
    subprocess.run([sys.executable, str(ROOT / "bench" / "gen.py"), gen["kind"], "--seed", str(gen["seed"]),
                    "--scale", str(gen["scale"]), "-o", str(out)], check=True, capture_output=True)
    thread = ThreadState()
    result = replay(out, state=thread)
    assert result.outcome == expected["outcome"]
    ours_messages = _canonical_digest(encode(thread.messages))
    ours_state = _canonical_digest(thread.state)
    assert ours_messages["sha256"] == expected["messages"]["sha256"]
    assert ours_state["sha256"] == expected["state"]["sha256"]
    assert encode(thread.open_interrupts) == expected["pendingInterrupts"]
