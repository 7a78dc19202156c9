"""The resume rules against the reference client's verdicts (tests/golden/resume/*.json).

Each golden file holds a ``case`` (pending interrupts, resume list, the pinned ``now``) and the
``oracle``'s answer: whether ``@ag-ui/client`` 1.0.0 refuses it before sending, which interrupts it
judges expired, which are uncovered, which entry ids are unknown. We must refuse wherever the
reference does. We refuse more, deliberately, where the 1.0 text asks for it and the reference does
not check; each such case is named in ``DELIBERATE``. Where we read ``expiresAt`` differently, the
case is named in ``EXPIRY_READ_DIFFERENTLY``, and the one case the reference refuses and we do not
is named, with its reason, in ``REFERENCE_ONLY``.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from agui_client.core.expiry import is_expired
from agui_client.core.interrupts import check_resume
from agui_client.errors import ResumeRefused
from agui_client.types.run import Interrupt, ResumeEntry
from agui_client.wire.codec import decode
from agui_client.wire.sink import collect_warnings

__all__: list[str] = []

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "resume"
CASES = sorted(GOLDEN.glob("*.json"))

UNKNOWN = "an entry names no open interrupt (IR-10, B267/B277); the reference's pre-run check does not look"
NOTHING_OPEN = ("a resume list with no open interrupts answers nothing (B269); the reference sends it, "
                "its entries unrecognised")
DUPLICATE = "two entries for one interrupt (the list is one entry per interrupt); the reference sends both"
CANCEL_THEN_RESOLVE = ("[cancelled, resolved] for an expired id answers it (IR-19) and names it twice; the "
                       "reference stops at the cancelled entry and sends the answer")
LEAP_SECOND = ("a leap second is read as the next second (B253), so the date is past; the reference's parser "
               "calls it Invalid Date and it never expires")

OUR_READING = ("the judging consumer's own reading of expiresAt decides (interrupts-1.0: 'an interrupt the "
               "consumer judges expired can no longer be answered'): we read {form} as the instant it names, "
               "which is past; the reference's Date parser gives Invalid Date, which never expires")
SCHEMA_CHECKED = ("a resolved payload is checked against the interrupt's responseSchema before sending (IR-30's "
                  "optional check, always on here: B274 'PRE when enabled'); the reference does not check")

#: Cases we refuse and the reference sends, with the reason.
DELIBERATE: dict[str, str] = {
    "expires-offset-hours-only": OUR_READING.format(form="a '+05' offset (hours only)"),
    "expires-comma-fraction": OUR_READING.format(form="a comma before the fraction of a second (ISO 8601)"),
    "resume-payload-fails-schema": SCHEMA_CHECKED,
    "resume-payload-absent-schema-requires-it": SCHEMA_CHECKED,
    "no-pending-with-resume": NOTHING_OPEN,
    "resume-duplicate-conflicting": DUPLICATE,
    "resume-duplicate-id": DUPLICATE,
    "resume-expired-cancelled-then-resolved": CANCEL_THEN_RESOLVE,
    "resume-tool-call-id-as-interrupt": UNKNOWN,
    "resume-unknown-id": UNKNOWN,
    "expires-leap-second": LEAP_SECOND,
    "expires-leap-second-at-now": LEAP_SECOND + " (here exactly now: expiry is inclusive)",
}

#: Cases the reference refuses and we send, with the reason (against the general rule; keep it short).
REFERENCE_ONLY: dict[str, str] = {
    "expires-feb-30": ("2026-02-30 is no date (B259): it never expires, with a warning; the reference rolls it "
                       "over to 2 March and calls it expired"),
    "expires-sub-millisecond": ("00:00:00.0005Z is half a millisecond after a now of 00:00:00Z: we read the "
                                "fraction to the microsecond, so it has not expired; the reference cuts it to "
                                "the millisecond, reads exactly now, and calls it expired"),
    "expires-bare-number": ("'0' is no date (docs/expires-at.md: forms only a JavaScript engine's heuristics "
                            "read): it never expires, with a warning; V8 reads a short number as a year or a "
                            "month in host-local time ('0' is 2000-01-01) and calls it expired"),
    "expires-short-number": ("'12' is no date, as '0' (expires-bare-number): V8 reads 2001-12-01 in host-local "
                             "time and calls it expired"),
    "expires-date-with-z": ("'2026-11-29Z' is no ISO 8601 form (a zone belongs to a time): it never expires, "
                            "with a warning; V8's fallback parser reads UTC midnight and calls it expired"),
    "expires-utc-word": ("'2026-11-29 23:59:59 UTC' is neither ISO 8601 nor RFC 5322 ('UTC' is a zone name "
                         "in neither): it never expires, with a warning; V8's fallback parser reads that instant "
                         "and calls it expired"),
    "expires-one-microsecond-after-now": ("00:00:00.000001Z is a microsecond after a now of 00:00:00Z, as "
                                          "expires-sub-millisecond: the reference cuts it to the millisecond, reads "
                                          "exactly now and calls it expired"),
    "expires-negative-number": ("'-1' is no date, as '0' (expires-bare-number): V8 reads 2001-01-01 in host-local "
                                "time and calls it expired"),
    "expires-http-without-zone": ("'Sun, 29 Nov 2026 23:00:00' is no date: RFC 5322 requires the zone "
                                  "(docs/expires-at.md); it never expires, with a warning; the reference reads "
                                  "host-local time and calls it expired"),
    "expires-http-impossible-date": ("'Tue, 31 Jun 2026' is no date (B259), as 2026-02-30 (expires-feb-30): the "
                                     "reference rolls it over to 1 July and calls it expired"),
}

#: Cases whose ``expiresAt`` we judge differently from the reference's isInterruptExpired.
EXPIRY_READ_DIFFERENTLY: dict[str, str] = {
    "expires-leap-second": LEAP_SECOND,
    "expires-leap-second-cancelled": LEAP_SECOND,
    "expires-feb-30": REFERENCE_ONLY["expires-feb-30"],
    "expires-offset-hours-only": DELIBERATE["expires-offset-hours-only"],
    "expires-comma-fraction": DELIBERATE["expires-comma-fraction"],
    "expires-sub-millisecond": REFERENCE_ONLY["expires-sub-millisecond"],
    "expires-bare-number": REFERENCE_ONLY["expires-bare-number"],
    "expires-short-number": REFERENCE_ONLY["expires-short-number"],
    "expires-date-with-z": REFERENCE_ONLY["expires-date-with-z"],
    "expires-utc-word": REFERENCE_ONLY["expires-utc-word"],
    "expires-leap-second-at-now": DELIBERATE["expires-leap-second-at-now"],
    "expires-one-microsecond-after-now": REFERENCE_ONLY["expires-one-microsecond-after-now"],
    "expires-negative-number": REFERENCE_ONLY["expires-negative-number"],
    "expires-http-impossible-date": REFERENCE_ONLY["expires-http-impossible-date"],
    "expires-http-without-zone": REFERENCE_ONLY["expires-http-without-zone"],
}


def _now(value: Any) -> datetime:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return datetime.fromtimestamp(value / 1000, tz=timezone.utc)
    assert isinstance(value, str)
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def _entry(wire: dict[str, Any]) -> ResumeEntry:
    # Built by hand rather than decoded: a malformed entry (bad status) must reach check_resume,
    # which is the last check before bytes leave, whatever made the list.
    return ResumeEntry(interrupt_id=wire.get("interruptId"), status=wire.get("status"),  # type: ignore[arg-type]
                       payload=wire.get("payload"), metadata=wire.get("metadata"))


def _load(path: Path) -> tuple[list[Interrupt], list[ResumeEntry], datetime, dict[str, Any]]:
    doc = json.loads(path.read_text(encoding="utf-8"))
    case, oracle = doc["case"], doc.get("oracle")
    assert oracle is not None, f"{path.name} has no oracle verdict yet: run make_golden.py --only resume"
    interrupts = [decode(item, Interrupt) for item in case.get("pendingInterrupts", [])]
    entries = [_entry(item) for item in case.get("resume") or []]
    return interrupts, entries, _now(case["now"]), oracle


def _our_verdict(interrupts: list[Interrupt], entries: list[ResumeEntry], now: datetime) -> ResumeRefused | None:
    try:
        # Unreadable and zoneless values warn; the verdict is what is compared here.
        with collect_warnings():
            check_resume(interrupts, entries, now=now)
    except ResumeRefused as exc:
        return exc
    return None


def test_the_golden_directory_holds_cases() -> None:
    assert len(CASES) >= 20


def test_every_listed_case_exists() -> None:
    names = {path.stem for path in CASES}
    assert set(DELIBERATE) | set(REFERENCE_ONLY) | set(EXPIRY_READ_DIFFERENTLY) <= names


@pytest.mark.parametrize("path", CASES, ids=[path.stem for path in CASES])
def test_we_refuse_wherever_the_reference_refuses(path: Path) -> None:
    interrupts, entries, now, oracle = _load(path)
    ours = _our_verdict(interrupts, entries, now)
    name = path.stem
    if oracle["wouldRefuse"] and name not in REFERENCE_ONLY:
        assert ours is not None, f"the reference refuses {name} ({oracle['error']}) and we would send it"
    if ours is not None and not oracle["wouldRefuse"]:
        assert name in DELIBERATE, f"we refuse {name} ({ours.kind}: {ours}) and the reference does not"
    # Every listed difference must still be one: a stale entry hides nothing.
    if name in DELIBERATE:
        assert ours is not None and not oracle["wouldRefuse"]
    if name in REFERENCE_ONLY:
        assert ours is None and oracle["wouldRefuse"]


@pytest.mark.parametrize("path", CASES, ids=[path.stem for path in CASES])
def test_our_findings_match_the_references_informational_lists(path: Path) -> None:
    interrupts, entries, now, oracle = _load(path)
    name = path.stem
    with collect_warnings():
        expired = [i.id for i in interrupts if is_expired(i, now)]
    if name in EXPIRY_READ_DIFFERENTLY:
        assert expired != oracle["expired"]
    else:
        assert expired == oracle["expired"]
    ours = _our_verdict(interrupts, entries, now)
    if ours is None:
        assert oracle["uncovered"] == [] and oracle["unknownResumeIds"] == []
    else:
        assert list(ours.problems["uncovered"]) == oracle["uncovered"]
        assert list(ours.problems["unknown"]) == oracle["unknownResumeIds"]
