"""The random resume differential (``python -m tools.differential.resume``) without node.

The run itself needs node and the installed oracle, so it is not part of the test run; these tests
keep the rest of it honest: the cases are a function of the seed and draw what the differential
promises to draw, each ``expiresAt`` form writes the instant it was asked for, and the judging names
every golden resume case as its tables do (a documented difference by its label, an agreement by
none, an undocumented one as ``UNEXPLAINED``).
"""

from __future__ import annotations

import random
import sys
import unicodedata
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from agui_client.core.expiry import parse_expires_at
from agui_client.types.run import Interrupt, ResumeEntry
from agui_client.wire.codec import decode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
try:
    from tools.differential import reference, resume
finally:
    sys.path.remove(str(ROOT))

ORACLE_TABLES = reference._load("test_resume_oracle", ROOT / "tests" / "core" / "test_resume_oracle.py")
GOLDEN = sorted((ROOT / "tests" / "golden" / "resume").glob("*.json"))

#: The form each golden case's expiresAt is written in, where the reading differs (the others need none).
GOLDEN_FORMS = {
    "expires-leap-second": "leap-second", "expires-leap-second-cancelled": "leap-second",
    "expires-leap-second-at-now": "leap-second", "expires-feb-30": "impossible-date",
    "expires-http-impossible-date": "impossible-date", "expires-offset-hours-only": "iso-offset-hours",
    "expires-comma-fraction": "iso-comma", "expires-bare-number": "short-number",
    "expires-short-number": "short-number", "expires-negative-number": "short-number",
    "expires-date-with-z": "date-with-z", "expires-utc-word": "utc-word",
    "expires-http-without-zone": "rfc5322-no-zone", "expires-sub-millisecond": "iso-z",
    "expires-one-microsecond-after-now": "iso-z",
}

SEED_CASES = [resume.draw_case(1, n) for n in range(3000)]


def _golden(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    doc = resume.json.loads(path.read_text(encoding="utf-8"))
    case, oracle = doc["case"], dict(doc["oracle"])
    # (the golden files predate the per-copy flags; their ids are unique, so the list gives them)
    oracle["expiredFlags"] = [item["id"] in oracle["expired"] for item in case["pendingInterrupts"]]
    return case, oracle


def test_a_case_is_a_function_of_its_seed_and_index() -> None:
    assert resume.draw_case(7, 3) == resume.draw_case(7, 3)
    assert [resume.draw_case(7, n) for n in range(20)] != [resume.draw_case(8, n) for n in range(20)]
    assert [item["name"] for item in resume.cases(7, 3)] == ["resume~7.0", "resume~7.1", "resume~7.2"]


def test_the_cases_draw_every_form_and_every_kind_of_id_and_entry() -> None:
    forms = {form for item in SEED_CASES for form in item["forms"]}
    assert forms == set(resume.FORMS) | {None}
    pending = [i for item in SEED_CASES for i in item["case"]["pendingInterrupts"]]
    entries = [e for item in SEED_CASES for e in item["case"].get("resume", [])]
    ids = {i["id"] for i in pending}
    assert "" in ids
    assert any(len(i) >= 4096 for i in ids)
    assert any(not i.isascii() for i in ids)
    assert any("\ud800" in i for i in ids)
    assert any(unicodedata.normalize("NFC", i) != i for i in ids) and any("caf\u00e9" in i for i in ids)
    # a look-alike of a pending id named by an entry, and one id raised twice in a run
    assert any(e.get("interruptId") not in {i["id"] for i in item["case"]["pendingInterrupts"]}
               and isinstance(e.get("interruptId"), str)
               and any(e["interruptId"].strip().lower() == i["id"].lower() != e["interruptId"]
                       for i in item["case"]["pendingInterrupts"])
               for item in SEED_CASES for e in item["case"].get("resume", []))
    assert any(len({i["id"] for i in item["case"]["pendingInterrupts"]}) < len(item["case"]["pendingInterrupts"])
               for item in SEED_CASES)
    payloads = [e["payload"] for e in entries if "payload" in e]
    for value in (None, False, 0, "", {}):
        assert any(type(p) is type(value) and p == value for p in payloads), value
    assert any("payload" not in e and e.get("status") == "resolved" for e in entries)
    assert any("responseSchema" in i for i in pending) and any("toolCallId" in i for i in pending)
    assert any(e.get("interruptId") == i.get("toolCallId") for item in SEED_CASES
               for i in item["case"]["pendingInterrupts"] for e in item["case"].get("resume", []))
    assert {e.get("status") for e in entries} >= {"resolved", "cancelled", None, "approved"}
    assert any("interruptId" not in e for e in entries) and any(e.get("interruptId") == 5 for e in entries)
    assert any(item["case"]["pendingInterrupts"] == [] for item in SEED_CASES)
    assert any("resume" not in item["case"] for item in SEED_CASES)
    assert any(item["case"]["now"].endswith("T00:00:00.000Z") for item in SEED_CASES)


@pytest.mark.parametrize("form", ["iso-z", "iso-lower", "iso-space", "iso-utc-offset", "iso-offset",
                                  "iso-offset-compact", "iso-offset-hours", "iso-naive", "iso-comma", "http",
                                  "http-lower", "cookie", "rfc850", "asctime", "to-string", "rfc5322-est",
                                  "rfc5322-numeric", "rfc5322-short-year", "leap-second", "hour-24"])
def test_each_form_writes_the_instant_it_was_asked_for(form: str) -> None:
    # Read back with our parser (which the golden cases hold to the reference's readings of these forms):
    # the instant meant, to the precision the form writes.
    rng = random.Random(form)
    for delta in resume.DELTAS:
        at = datetime(2026, 3, 1, 0, 0, tzinfo=timezone.utc) + delta
        value = resume.FORMS[form](rng, at)
        read = parse_expires_at(value)
        assert read is not None, value
        if form in ("leap-second", "hour-24"):
            # (both name the midnight starting the instant's day; the leap second may carry a fraction)
            assert timedelta(0) <= read - at.replace(hour=0, minute=0, second=0, microsecond=0) < timedelta(seconds=1)
        elif form in ("iso-z", "iso-lower", "iso-space", "iso-utc-offset", "iso-offset", "iso-offset-compact",
                      "iso-offset-hours", "iso-naive", "iso-comma"):
            assert timedelta(0) <= at - read < timedelta(seconds=1), value
        else:
            assert timedelta(0) <= at - read < timedelta(minutes=1), value


def test_the_microsecond_around_now_is_written_with_enough_digits() -> None:
    now = datetime(2026, 11, 30, tzinfo=timezone.utc)
    value = resume._iso(random.Random(1), now + resume._US, digits=6)
    assert value == "2026-11-30T00:00:00.000001Z"
    assert parse_expires_at(value) == now + resume._US


@pytest.mark.parametrize("path", GOLDEN, ids=[path.stem for path in GOLDEN])
def test_the_judging_names_each_golden_case_as_its_tables_do(path: Path) -> None:
    case, oracle = _golden(path)
    name = path.stem
    forms = [GOLDEN_FORMS.get(name) if "expiresAt" in item else None for item in case["pendingInterrupts"]]
    labels = resume.explain(case, forms, resume.our_verdict(case), oracle)
    assert not [label for label in labels if label.startswith("UNEXPLAINED")], labels
    documented = set(ORACLE_TABLES.DELIBERATE) | set(ORACLE_TABLES.REFERENCE_ONLY)
    if name in ORACLE_TABLES.EXPIRY_READ_DIFFERENTLY:
        assert any(label.removeprefix("reference-only/").startswith("expiry/") for label in labels), labels
    elif name in documented:
        assert any(label.startswith("deliberate/") for label in labels), labels
    else:
        assert labels == []


def test_every_known_label_names_a_golden_case_in_its_table() -> None:
    for golden, table in resume.KNOWN.values():
        assert golden in getattr(ORACLE_TABLES, table), (golden, table)
    names = {path.stem for path in GOLDEN}
    assert set(resume.HOST_LOCAL.values()) <= names


def _flip(oracle: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return {**oracle, **changes}


def test_a_reading_no_rule_accounts_for_is_unexplained() -> None:
    # As if we had read a plain Z date-time, a day past, as not expired: the reference refuses, we send.
    case, oracle = _golden(ROOT / "tests" / "golden" / "resume" / "expires-z-past.json")
    ours = resume.our_verdict(case)
    ours = {**ours, "refused": False, "kinds": [], "expired": [], "expiredFlags": [False],
            "problems": {k: [] for k in ours["problems"]}}
    labels = resume.explain(case, ["iso-z"], ours, oracle)
    assert labels == ["UNEXPLAINED/expiry/iso-z/reference-expired-only", "UNEXPLAINED/reference-only/onInitialize"]


def test_an_expired_interrupt_refused_by_the_reference_alone_is_unexplained_even_when_both_refuse() -> None:
    # Two interrupts: one uncovered (both refuse for it), one expired and answered. Were our check to miss
    # the expired one (a copy judged, not every copy), the verdicts would still agree: the reason must too.
    case = {"pendingInterrupts": [{"id": "a", "reason": "r", "expiresAt": "2026-01-01T00:00:00Z"},
                                  {"id": "b", "reason": "r"}],
            "resume": [{"interruptId": "a", "status": "resolved"}, {"interruptId": "b", "status": "resolved"}],
            "now": "2026-11-30T00:00:00.000Z"}
    ours = resume.our_verdict(case)
    assert ours["problems"]["expired"] == ["a"]
    reference_verdict = {"wouldRefuse": True, "stage": "onInitialize",
                         "error": "Interrupt a expired at 2026-01-01T00:00:00Z and can no longer be answered.",
                         "expired": ["a"], "expiredFlags": [True, False], "uncovered": [], "unknownResumeIds": []}
    assert resume.explain(case, ["iso-z", None], ours, reference_verdict) == []
    missed = {**ours, "problems": {**ours["problems"], "expired": []}, "kinds": ["duplicate"]}
    assert resume.explain(case, ["iso-z", None], missed, reference_verdict) == ["UNEXPLAINED/expired-not-named"]


def test_the_informational_lists_must_match() -> None:
    case, oracle = _golden(ROOT / "tests" / "golden" / "resume" / "resume-look-alike-ids.json")
    ours = resume.our_verdict(case)
    assert resume.explain(case, [None, None], ours, oracle) == []
    assert resume.explain(case, [None, None], ours, _flip(oracle, unknownResumeIds=["café", "I1"])) == [
        "UNEXPLAINED/unknown-list"]
    assert resume.explain(case, [None, None], ours, _flip(oracle, uncovered=["i1"])) == ["UNEXPLAINED/uncovered-list"]


def test_a_host_local_reading_is_the_hosts_only_under_another_zone() -> None:
    case = {"pendingInterrupts": [{"id": "a", "reason": "r", "expiresAt": "2026-11-30T03:00:00"}],
            "resume": [{"interruptId": "a", "status": "resolved"}], "now": "2026-11-30T00:00:00.000Z"}
    ours = resume.our_verdict(case)  # (read as UTC: three hours ahead, not expired)
    east = {"wouldRefuse": True, "stage": "onInitialize", "error": "Interrupt a expired at 2026-11-30T03:00:00 and "
            "can no longer be answered.", "expired": ["a"], "expiredFlags": [True], "uncovered": [],
            "unknownResumeIds": []}
    assert resume.explain(case, ["iso-naive"], ours, east, host_local=True) == [
        "host-local/iso-naive", "reference-only/host-local/iso-naive"]
    assert "UNEXPLAINED/expiry/iso-naive/reference-expired-only" in resume.explain(case, ["iso-naive"], ours, east)


class _Recorded(resume.Reference):
    def __init__(self, answers: list[dict[str, Any]]) -> None:
        self.answers = answers
        self.tz = "UTC"

    def verdicts(self, specs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        assert len(specs) == len(self.answers)
        return self.answers


def test_the_driver_is_trusted_only_where_it_gives_the_golden_verdicts() -> None:
    answers = [_golden(path)[1] for path in GOLDEN]
    assert resume.check_driver(_Recorded(answers)) == len(GOLDEN)
    answers[0] = {**answers[0], "wouldRefuse": not answers[0]["wouldRefuse"]}
    with pytest.raises(SystemExit) as refused:
        resume.check_driver(_Recorded(answers))
    assert f"golden {GOLDEN[0].stem} (wouldRefuse" in str(refused.value)


def test_the_builder_must_refuse_what_the_check_refuses() -> None:
    case, _ = _golden(ROOT / "tests" / "golden" / "resume" / "resume-expired-resolved.json")
    ours = resume.our_verdict(case)
    assert ours["kinds"] == ["expired"] and ours["builder"] is None
    interrupts = [decode(item, Interrupt) for item in case["pendingInterrupts"]]
    entries = [ResumeEntry(interrupt_id=e["interruptId"], status=e["status"], payload=e.get("payload"))
               for e in case["resume"]]
    # As if check_resume had let it through: the builder's verdict is then another, and said.
    said = resume._builder_verdict(interrupts, entries, resume._now(case["now"]), None)
    assert said == "build() refused as 'expired', check_resume as None"
    assert resume.explain(case, [None, None], {**ours, "builder": said}, _golden(
        ROOT / "tests" / "golden" / "resume" / "resume-expired-resolved.json")[1]) == ["UNEXPLAINED/builder-disagrees"]
