"""A random differential of the resume rules: our ``check_resume`` against the reference client's.

``python -m tools.differential.resume --oracle DIR [--seed S ...] [--count N] [--confirm K] [--save OUT]``

Each case is what ``fold.mjs --check-resume`` reads (pending interrupts, a resume list, a pinned
``now``), drawn afresh from a seed: one to five pending interrupts (none now and then), ids that are
empty, very long, non-ASCII, look alike, differ only by case, Unicode normalisation, a zero-width
character or a space, or hold a lone UTF-16 half; entries that answer, abandon, omit, repeat (in both
orders), name a look-alike, the interrupt's ``toolCallId`` or nothing open; payloads absent, ``null``,
``false``, ``0``, ``""``, ``{}`` or objects, against a ``responseSchema`` they fit or not; and
``expiresAt`` in every form a producer writes (see :data:`FORMS`) at instants around ``now``: a day, a
second, a millisecond and a microsecond before and after, and exactly at it.

Both verdicts are compared: refused or not, which interrupts are expired, which uncovered, which
entry ids unknown. A case that differs is explained, when it can be, by a difference the golden
resume cases already document (:data:`KNOWN`: each names the golden case and the table of
``tests/core/test_resume_oracle.py`` that lists it); anything else is ``UNEXPLAINED`` and the exit
status is 1. An expiry read differently is explained by the form it was written in, or by the
millisecond the reference truncates to, never by the case as a whole.

The reference is run through ``resume_oracle.mjs`` (this folder): the oracle's ``--check-resume``
mode, for many cases in one node process (starting node per case costs half a second). Before any
case is judged, the driver's verdicts on every golden resume case must equal the ones ``fold.mjs``
recorded; ``--confirm K`` also sends K cases (the divergent ones first) through ``fold.mjs`` itself.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).with_name("resume_oracle.mjs")
GOLDEN = ROOT / "tests" / "golden" / "resume"

UTC = timezone.utc
_MS = timedelta(milliseconds=1)
_US = timedelta(microseconds=1)

# --------------------------------------------------------------------------------------------------
# Drawing cases
# --------------------------------------------------------------------------------------------------

#: Distances from ``now`` an expiry is drawn at (the edges weighted: that is where readings part).
DELTAS = (-timedelta(days=400), -timedelta(days=1), -timedelta(seconds=1), -_MS, -_US, timedelta(0), _US, _MS,
          timedelta(seconds=1), timedelta(days=1), timedelta(days=400))

_WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_LONG_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def _fraction(rng: random.Random, t: datetime, digits: int, sep: str = ".") -> str:
    if digits == 0:
        return ""
    written = f"{t.microsecond:06d}" + "".join(rng.choice("0123456789") for _ in range(max(0, digits - 6)))
    return sep + written[:digits]


def _iso(rng: random.Random, t: datetime, *, offset: timedelta = timedelta(0), zone: str = "Z", sep: str = "T",
         digits: int | None = None, comma: bool = False) -> str:
    local = t + offset
    digits = rng.choice((0, 1, 2, 3, 3, 3, 4, 5, 6, 6, 7, 8, 9)) if digits is None else digits
    return (f"{local:%Y-%m-%d}{sep}{local:%H:%M:%S}" + _fraction(rng, local, digits, "," if comma else ".") + zone)


def _offset_text(offset: timedelta, colon: bool = True) -> str:
    minutes = int(offset.total_seconds() // 60)
    sign = "+" if minutes >= 0 else "-"
    hours, rest = divmod(abs(minutes), 60)
    return f"{sign}{hours:02d}{':' if colon else ''}{rest:02d}"


def _with_offset(rng: random.Random, t: datetime, offset: timedelta, colon: bool = True) -> str:
    return _iso(rng, t, offset=offset, zone=_offset_text(offset, colon))


def _http(t: datetime) -> str:
    return f"{_WEEKDAYS[t.weekday()]}, {t:%d} {_MONTHS[t.month - 1]} {t:%Y %H:%M:%S} GMT"


def _rfc5322(t: datetime, offset: timedelta) -> str:
    # No weekday, a one-digit day where it has one, no seconds: the parts RFC 5322 leaves optional.
    local = t + offset
    return f"{local.day} {_MONTHS[local.month - 1]} {local:%Y %H:%M} {_offset_text(offset, colon=False)}"


def _leap(rng: random.Random, t: datetime) -> str:
    # 23:59:60 of the day before t's day: the instant it names (the next second) is t's midnight.
    day = t.date() - timedelta(days=1)
    return f"{day:%Y-%m-%d}T23:59:60{_fraction(rng, t, rng.choice((0, 0, 3)))}Z"


def _hour24(t: datetime) -> str:
    return f"{t.date() - timedelta(days=1):%Y-%m-%d}T24:00:00Z"


_GARBAGE = ("", " ", "soon", "next tuesday", "null", "undefined", "NaN", "Infinity", "T", "Z", "2026-13-01T00:00:00Z",
            "2026-11-30T25:00:00Z", "2026-11-30T23:60:00Z",
            "2026-11-30T00:00:00ZZ", "2026-11-30T00:00:00+25:00", "2026-11-30TT00:00:00Z", "2026-W48-1",
            "2026-334", "20261130T000000Z", "2026-11-30T00Z", "2026-11-30T00:00:00.Z", "2026-11-30T00:00:00.+00:00",
            "２０２６-11-30T00:00:00Z", "2026-11-30T00:00:00\u221205:00", "2026-11-30\u200bT00:00:00Z",
            "1e3", "2026-11-30T00:00:00 Z", "1780311600 ", "0x6a1b2c3d",
            "2026-11-30T00:00:00+05:30:00", "2026-11-30T00:00:00+24:00", "2026-11-30T00:00:00.000000000000Z",
            "Mon, 30 Nov 2026 00:00:00 CET")
#: Numbers only a JavaScript engine's heuristics read as a date (a year or a month, host-local).
_SHORT_NUMBERS = ("-1", "0", "1", "12", "31", "32", "49", "50", "99", "100", "999")


def _impossible(rng: random.Random, t: datetime) -> str:
    # A day past its month's end, which the reference rolls over into the next month: written for t
    # itself where t falls early in a month after a short one (1 March as 29 February), else a 30 February.
    previous = t.replace(day=1) - timedelta(days=1)
    if previous.day + t.day <= 31 and previous.day < 31:
        return f"{previous:%Y-%m}-{previous.day + t.day:02d}T{t:%H:%M:%S}Z"
    if rng.random() < 0.3:
        return f"Tue, 31 Jun {t.year} {t:%H:%M:%S} GMT"
    return f"{t.year}-02-{rng.choice(('30', '31'))}T{t:%H:%M:%S}Z"

#: How an ``expiresAt`` is written, by name: each a function of the random source and the instant meant.
FORMS: dict[str, Callable[[random.Random, datetime], str]] = {
    "iso-z": lambda rng, t: _iso(rng, t),
    "iso-lower": lambda rng, t: _iso(rng, t, zone="z", sep=rng.choice("tT")),
    "iso-space": lambda rng, t: _iso(rng, t, sep=" "),
    "iso-utc-offset": lambda rng, t: _iso(rng, t, zone=rng.choice(("+00:00", "-00:00", "+0000"))),
    "iso-offset": lambda rng, t: _with_offset(rng, t, rng.choice((timedelta(hours=-5, minutes=-30),
                                                                  timedelta(hours=14), timedelta(hours=-12),
                                                                  timedelta(hours=5, minutes=45),
                                                                  timedelta(hours=-3, minutes=-30)))),
    "iso-offset-compact": lambda rng, t: _with_offset(rng, t, timedelta(hours=5, minutes=30), colon=False),
    "iso-offset-hours": lambda rng, t: _iso(rng, t, offset=timedelta(hours=2), zone="+02"),
    "iso-naive": lambda rng, t: _iso(rng, t, zone=""),
    "iso-comma": lambda rng, t: _iso(rng, t, digits=rng.choice((1, 3, 6)), comma=True),
    "iso-minutes": lambda rng, t: f"{t:%Y-%m-%dT%H:%M}Z",
    "leap-second": _leap,
    "hour-24": lambda rng, t: _hour24(t),
    "date": lambda rng, t: f"{t:%Y-%m-%d}",
    "year-month": lambda rng, t: f"{t:%Y-%m}",
    "year": lambda rng, t: f"{t:%Y}",
    "year-edge": lambda rng, t: rng.choice(("0001-01-01T00:00:00Z", "0001-01-01", "9999-12-31T23:59:59.999Z",
                                            "9999-12-31", "9999-12-31T23:59:59-12:00", "0001-01-01T00:00:00+14:00",
                                            "+275760-09-13T00:00:00Z", "-271821-04-20T00:00:00Z",
                                            "+010000-01-01T00:00:00Z", "-000001-01-01T00:00:00Z", "0000-01-01",
                                            "+002026-11-30T00:00:00Z")),
    "expanded-year": lambda rng, t: "+00" + _iso(rng, t),
    "epoch": lambda rng, t: str(int(t.timestamp() * (1000 if rng.random() < 0.5 else 1))),
    "http": lambda rng, t: _http(t),
    "rfc850": lambda rng, t: (f"{_LONG_WEEKDAYS[t.weekday()]}, {t:%d}-{_MONTHS[t.month - 1]}-{t:%y %H:%M:%S} GMT"),
    "asctime": lambda rng, t: f"{_WEEKDAYS[t.weekday()]} {_MONTHS[t.month - 1]} {t.day:2d} {t:%H:%M:%S %Y}",
    "to-string": lambda rng, t: (f"{_WEEKDAYS[t.weekday()]} {_MONTHS[t.month - 1]} {t:%d %Y %H:%M:%S} GMT+0000 "
                                 "(Coordinated Universal Time)"),
    "rfc5322-est": lambda rng, t: (f"{(t - timedelta(hours=5)).day} {_MONTHS[(t - timedelta(hours=5)).month - 1]} "
                                   f"{t - timedelta(hours=5):%Y %H:%M:%S} EST"),
    "http-lower": lambda rng, t: _http(t).lower(),
    "cookie": lambda rng, t: f"{_WEEKDAYS[t.weekday()]}, {t:%d}-{_MONTHS[t.month - 1]}-{t:%Y %H:%M:%S} GMT",
    "rfc5322-numeric": lambda rng, t: _rfc5322(t, rng.choice((timedelta(hours=2), timedelta(hours=-9, minutes=-30),
                                                              timedelta(0)))),
    "rfc5322-short-year": lambda rng, t: f"{_WEEKDAYS[t.weekday()]}, {t.day} {_MONTHS[t.month - 1]} {t:%y %H:%M:%S} UT",
    "date-with-z": lambda rng, t: f"{t:%Y-%m-%d}Z",
    "utc-word": lambda rng, t: f"{t:%Y-%m-%d %H:%M:%S} UTC",
    "rfc5322-no-zone": lambda rng, t: _http(t).removesuffix(" GMT"),
    "padded": lambda rng, t: rng.choice((" ", "\t", "\n")) + _iso(rng, t, digits=3) + rng.choice(("", " ")),
    "impossible-date": _impossible,
    "short-number": lambda rng, t: rng.choice(_SHORT_NUMBERS),
    "garbage": lambda rng, t: rng.choice(_GARBAGE),
}


def _look_alikes(value: str) -> list[str]:
    """Ids a person would read as ``value`` (or the same up to case): each a different string."""
    out = [value.upper() if value != value.upper() else value.lower(), value + " ", " " + value, value + "\u200b",
           value.replace("i", "\u0456", 1), value.replace("a", "\u0430", 1), value.replace("l", "1", 1)]
    if "\u00e9" in value:
        out.append(value.replace("\u00e9", "e\u0301"))
    if "e\u0301" in value:
        out.append(value.replace("e\u0301", "\u00e9"))
    return [v for v in dict.fromkeys(out) if v != value]


def _draw_id(rng: random.Random, n: int) -> str:
    kind = rng.choices(("plain", "empty", "long", "unicode", "nf", "case", "surrogate", "uuid"),
                       weights=(8, 1, 1, 2, 1, 1, 0.3, 1))[0]
    if kind == "plain":
        return rng.choice((f"i{n}", f"approve-{n}", f"interrupt_{n}", f"{n}"))
    if kind == "empty":
        return ""
    if kind == "long":
        return rng.choice("xé😀") * rng.choice((300, 4096, 20000)) + str(n)
    if kind == "unicode":
        return rng.choice(("承認-", "подтвердить-", "✅", "😀", "ü", "\u05d0\u05d1-", "e\u0301-")) + str(n)
    if kind == "nf":
        return rng.choice(("caf\u00e9-", "cafe\u0301-")) + str(n)
    if kind == "case":
        return rng.choice(("Approve-", "APPROVE-", "approve-")) + str(n)
    if kind == "surrogate":
        return f"i{n}\ud800"
    return f"{rng.getrandbits(32):08x}-0000-4000-8000-{n:012d}"


_SCHEMAS: tuple[tuple[dict[str, Any], tuple[Any, ...], tuple[Any, ...]], ...] = (
    # (schema, payloads that fit, payloads that do not)
    ({"type": "object", "required": ["approved"], "properties": {"approved": {"type": "boolean"}}},
     ({"approved": True}, {"approved": False, "note": ""}), ({}, {"approved": "yes"}, None, False, 0, "")),
    ({"type": "boolean"}, (True, False), (None, 0, "", {}, "true")),
    ({"enum": ["yes", "no", 0]}, ("yes", 0), ("", None, False, "Yes")),
    ({"type": ["null", "string"]}, (None, ""), (0, False, {})),
    ({}, (None, 0, "", {}, False), ()),
)
_PAYLOADS: tuple[Any, ...] = (None, False, 0, "", {}, [], {"approved": True}, "yes", 1.5, {"nested": {"list": [1]}})
_ABSENT = object()


def draw_case(seed: int, index: int) -> dict[str, Any]:
    """One case, a function of ``seed`` and ``index`` only: ``{"case": ..., "forms": [...]}``.

    ``case`` is the oracle's ``--check-resume`` input; ``forms`` names the form each pending
    interrupt's ``expiresAt`` was written in (``None``: it has none), in the order of the interrupts.
    """
    rng = random.Random(f"resume:{seed}:{index}")
    midnight = rng.random() < 0.15  # (a now at midnight meets the leap second and hour 24 exactly)
    day = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(days=rng.randrange(365))
    now = day if midnight else day + timedelta(milliseconds=rng.randrange(86_400_000))
    count = rng.choices((0, 1, 2, 3, 4, 5), weights=(1, 6, 5, 3, 2, 1))[0]
    ids: list[str] = []
    for n in range(1, count + 1):
        fresh = _draw_id(rng, n)
        if ids and rng.random() < 0.12:
            fresh = rng.choice([*_look_alikes(ids[-1]), ids[-1]])  # a look-alike, or the same id again (IR-06)
        ids.append(fresh)
    interrupts: list[dict[str, Any]] = []
    forms: list[str | None] = []
    for n, interrupt_id in enumerate(ids, start=1):
        item: dict[str, Any] = {"id": interrupt_id, "reason": rng.choice(("approval", "input", "tool"))}
        form = None
        if rng.random() < 0.7:
            form = rng.choice(tuple(FORMS))
            at = now + rng.choice(DELTAS)
            item["expiresAt"] = FORMS[form](rng, at)
        if rng.random() < 0.2:
            item["toolCallId"] = f"call_{n}"
        if rng.random() < 0.2:
            item["responseSchema"] = rng.randrange(len(_SCHEMAS))  # (replaced below, once payloads are drawn)
        interrupts.append(item)
        forms.append(form)
    entries: list[dict[str, Any]] = []
    for item in interrupts:
        schema = _SCHEMAS[item["responseSchema"]] if "responseSchema" in item else None
        if schema is not None:
            item["responseSchema"] = schema[0]
        action = rng.choices(("answer", "abandon", "omit", "twice", "alike", "tool"),
                             weights=(10, 4, 1, 1.2, 0.8, 0.4))[0]
        if action == "omit":
            continue
        target = item["id"]
        if action == "alike" and _look_alikes(target):
            target = rng.choice(_look_alikes(target))
        elif action == "tool" and "toolCallId" in item:
            target = item["toolCallId"]
        for _ in range(2 if action == "twice" else 1):
            status = "cancelled" if action == "abandon" or (action == "twice" and rng.random() < 0.5) else "resolved"
            entries.append(_entry(rng, target, status, schema))
    for _ in range(rng.choices((0, 1, 2), weights=(8, 2, 1))[0]):
        # (an extra entry: for an id that may be open, or for one that is not)
        named = rng.choice((*ids, "ghost", "")) if ids and rng.random() < 0.3 else rng.choice(("ghost", "", "i1", "I1"))
        entries.append(_entry(rng, named, rng.choice(("resolved", "cancelled")), None))
    if rng.random() < 0.3:
        rng.shuffle(entries)

    if entries and rng.random() < 0.04:
        rng.choice(entries)["status"] = rng.choice(("approved", "RESOLVED", "canceled", None))
    if entries and rng.random() < 0.03:
        rng.choice(entries)["metadata"] = rng.choice(("ops", [], 1))
    if entries and rng.random() < 0.03:
        # (an id that is no string: the reference's egress refuses it, and so must we)
        rng.choice(entries)["interruptId"] = rng.choice((None, 5, True, ["i1"], _ABSENT))
    for entry in entries:
        if entry.get("interruptId") is _ABSENT:
            del entry["interruptId"]
    written_now = f"{now:%Y-%m-%dT%H:%M:%S}.{now.microsecond // 1000:03d}Z"  # (the oracle reads now to the ms)
    case: dict[str, Any] = {"pendingInterrupts": interrupts, "now": written_now}
    if entries or rng.random() < 0.8:
        case["resume"] = entries
    return {"case": case, "forms": forms}


def _entry(rng: random.Random, interrupt_id: str, status: str | None,
           schema: tuple[dict[str, Any], tuple[Any, ...], tuple[Any, ...]] | None) -> dict[str, Any]:
    entry: dict[str, Any] = {"interruptId": interrupt_id, "status": status}
    if status is None:
        del entry["status"]
    payload: Any = _ABSENT if rng.random() < 0.25 else rng.choice(_PAYLOADS)
    if schema is not None and rng.random() < 0.8:
        fits, misses = schema[1], schema[2]
        payload = rng.choice(misses) if misses and rng.random() < 0.4 else rng.choice(fits)
    if payload is not _ABSENT and (status == "resolved" or rng.random() < 0.3):
        entry["payload"] = payload
    if rng.random() < 0.1:
        entry["metadata"] = {"by": "differential"}
    return entry


def cases(seed: int, count: int) -> Iterator[dict[str, Any]]:
    """``count`` cases of ``seed`` (see :func:`draw_case`)."""
    for index in range(count):
        yield {"name": f"resume~{seed}.{index}", **draw_case(seed, index)}


# --------------------------------------------------------------------------------------------------
# Our verdict
# --------------------------------------------------------------------------------------------------


def _now(value: Any) -> datetime:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return datetime.fromtimestamp(value / 1000, tz=UTC)
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


def our_verdict(case: dict[str, Any]) -> dict[str, Any]:
    """What ``check_resume`` and ``is_expired`` say of ``case``, in the reference verdict's terms.

    The entries are built by hand, not decoded (as ``tests/core/test_resume_oracle.py`` builds them):
    a malformed one must reach ``check_resume``, the last check before bytes leave."""
    from agui_client.core.expiry import is_expired, parse_expires_at
    from agui_client.core.interrupts import PROBLEM_KINDS, check_resume
    from agui_client.errors import ResumeRefused
    from agui_client.types.run import Interrupt, ResumeEntry
    from agui_client.wire.codec import decode
    from agui_client.wire.sink import collect_warnings

    interrupts = [decode(item, Interrupt) for item in case.get("pendingInterrupts", [])]
    entries = [ResumeEntry(interrupt_id=e.get("interruptId"), status=e.get("status"),
                           payload=e.get("payload"), metadata=e.get("metadata")) for e in case.get("resume") or []]
    now = _now(case["now"])
    refused: ResumeRefused | None = None
    with collect_warnings():
        flags = [is_expired(i, now) for i in interrupts]
        try:
            check_resume(interrupts, entries, now=now)
        except ResumeRefused as exc:
            refused = exc
    instants = [None if i.expires_at is None else parse_expires_at(i.expires_at) for i in interrupts]
    problems = {k: list(v) for k, v in refused.problems.items()} if refused else {k: [] for k in PROBLEM_KINDS}
    return {"refused": refused is not None, "kinds": [k for k in PROBLEM_KINDS if problems[k]],
            "builder": _builder_verdict(interrupts, entries, now, refused),
            "expired": [i.id for i, flag in zip(interrupts, flags, strict=True) if flag], "expiredFlags": flags,
            "uncovered": problems["uncovered"], "unknown": problems["unknown"],
            "problems": problems, "instants": [None if t is None else t.isoformat() for t in instants]}


def _builder_verdict(interrupts: list[Any], entries: list[Any], now: datetime, refused: Any) -> str | None:
    """Whether ``ResumeBuilder`` agrees with ``check_resume`` on the same answers (``None``: it does, or
    the entries are not ones it records: an unknown or malformed id, a bad status or metadata, none open).

    The builder is the usual way to answer; its ``build()`` must refuse exactly what the check refuses,
    with the same kind, and its ``uncovered`` and ``expired`` must say what the check and ``is_expired`` do."""
    import attrs

    from agui_client.core.expiry import is_expired
    from agui_client.core.interrupts import PROBLEM_KINDS, ResumeBuilder
    from agui_client.errors import ResumeRefused
    from agui_client.wire.sink import collect_warnings

    open_ids = {i.id for i in interrupts}
    if not interrupts or any(not isinstance(e.interrupt_id, str) or e.interrupt_id not in open_ids
                             or e.status not in ("resolved", "cancelled")
                             or not (e.metadata is None or isinstance(e.metadata, dict)) for e in entries):
        return None
    builder = ResumeBuilder(interrupts, now=now)
    for entry in entries:
        if entry.status == "resolved":
            builder.answer(entry.interrupt_id, entry.payload, metadata=entry.metadata)
        else:
            builder.abandon(entry.interrupt_id, metadata=entry.metadata)
    with collect_warnings():
        try:
            built: tuple[Any, ...] | None = builder.build()
            kind = None
        except ResumeRefused as exc:
            built, kind = None, exc.kind
        expired = builder.expired
        wanted_expired = tuple(dict.fromkeys(i.id for i in interrupts if is_expired(i, now)))
    wanted_kind = None if refused is None else next(k for k in PROBLEM_KINDS if refused.problems[k])
    if kind != wanted_kind:
        return f"build() refused as {kind!r}, check_resume as {wanted_kind!r}"
    if builder.uncovered != tuple(dict.fromkeys(refused.problems["uncovered"] if refused else ())):
        return f"uncovered {builder.uncovered!r}"
    if expired != wanted_expired:
        return f"expired {expired!r} != {wanted_expired!r}"
    # (abandon() records no payload: a cancelled entry's is not the builder's to keep)
    recorded = [attrs.evolve(e, payload=None) if e.status == "cancelled" else e for e in entries]
    if built is not None and sorted(map(repr, built)) != sorted(map(repr, recorded)):
        return "build() returned other entries than were recorded"
    return None


# --------------------------------------------------------------------------------------------------
# Judging a difference
# --------------------------------------------------------------------------------------------------

#: Every difference the golden resume cases document, by label: (golden case, table of
#: tests/core/test_resume_oracle.py naming it). A label is what :func:`explain` finds.
KNOWN: dict[str, tuple[str, str]] = {
    "deliberate/unknown-id": ("resume-unknown-id", "DELIBERATE"),
    "deliberate/nothing-open": ("no-pending-with-resume", "DELIBERATE"),
    "deliberate/duplicate": ("resume-duplicate-id", "DELIBERATE"),
    "deliberate/cancelled-then-resolved": ("resume-expired-cancelled-then-resolved", "DELIBERATE"),
    "deliberate/schema": ("resume-payload-fails-schema", "DELIBERATE"),
    "expiry/leap-second": ("expires-leap-second", "EXPIRY_READ_DIFFERENTLY"),
    "expiry/iso-offset-hours": ("expires-offset-hours-only", "EXPIRY_READ_DIFFERENTLY"),
    "expiry/iso-comma": ("expires-comma-fraction", "EXPIRY_READ_DIFFERENTLY"),
    "expiry/sub-millisecond": ("expires-sub-millisecond", "EXPIRY_READ_DIFFERENTLY"),
    "expiry/impossible-date": ("expires-feb-30", "EXPIRY_READ_DIFFERENTLY"),
    "expiry/short-number": ("expires-short-number", "EXPIRY_READ_DIFFERENTLY"),
    "expiry/rfc5322-no-zone": ("expires-http-without-zone", "EXPIRY_READ_DIFFERENTLY"),
    "expiry/date-with-z": ("expires-date-with-z", "EXPIRY_READ_DIFFERENTLY"),
    "expiry/utc-word": ("expires-utc-word", "EXPIRY_READ_DIFFERENTLY"),
}

#: Forms the reference reads in the host's time zone, and the golden case of each (made with TZ=UTC, where
#: the readings meet). Under ``--tz`` another zone, a difference in one of these is the host's, not a rule's:
#: we read a zoneless date-time as UTC (IR-17, docs/expires-at.md) so a verdict never depends on the host.
HOST_LOCAL: dict[str, str] = {
    "iso-naive": "expires-naive-datetime",
    "asctime": "expires-naive-datetime",
}


def _first_status(case: dict[str, Any], interrupt_id: str) -> Any:
    for entry in case.get("resume") or []:
        if entry.get("interruptId") == interrupt_id:
            return entry.get("status", _ABSENT)
    return None


def _reference_expired(case: dict[str, Any], ref: dict[str, Any]) -> str | None:
    """The interrupt the reference refuses as expired, by its own rule (every pending interrupt has an
    entry; the first one, in raise order, judged expired whose first entry is not ``cancelled``)."""
    if ref["stage"] != "onInitialize" or " expired at " not in str(ref.get("error")):
        return None
    for item, flag in zip(case.get("pendingInterrupts", []), ref["expiredFlags"], strict=True):
        if flag and _first_status(case, item["id"]) != "cancelled":
            return str(item["id"])
    return None


def explain(case: dict[str, Any], forms: list[str | None], ours: dict[str, Any], ref: dict[str, Any],
            host_local: bool = False) -> list[str]:
    """Why ``ours`` and ``ref`` differ, as labels (empty: they agree). An ``UNEXPLAINED/...`` label is a
    difference no documented rule accounts for. ``host_local``: the reference ran in a zone other than
    UTC, so a form of :data:`HOST_LOCAL` may be read apart (``host-local/FORM``)."""
    labels: set[str] = set()
    if ours.get("builder"):
        labels.add("UNEXPLAINED/builder-disagrees")  # (our two paths apart: no reference needed to judge it)
    now = _now(case["now"])
    pending = case.get("pendingInterrupts", [])
    # Expiry, interrupt by interrupt (the reference lists each copy of a repeated id, as we do here).
    read_apart: dict[str, str] = {}  # id -> label of the reading that parted
    if ref["expiredFlags"] != ours["expiredFlags"]:
        for n, item in enumerate(pending):
            ours_says, ref_says = ours["expiredFlags"][n], ref["expiredFlags"][n]
            if ours_says == ref_says:
                continue
            instant = ours["instants"][n]
            if instant is not None:
                at = datetime.fromisoformat(instant)
                truncated = at - timedelta(microseconds=at.microsecond % 1000)
                if (truncated <= now) == ref_says and at.microsecond % 1000:
                    read_apart[item["id"]] = "expiry/sub-millisecond"
                    continue
            form = forms[n] if n < len(forms) else None
            if host_local and form in HOST_LOCAL:
                read_apart[item["id"]] = f"host-local/{form}"
                continue
            read_apart[item["id"]] = f"expiry/{form}" if f"expiry/{form}" in KNOWN else (
                f"UNEXPLAINED/expiry/{form}/{'reference' if ref_says else 'ours'}-expired-only")
        labels.update(read_apart.values())
    if ours["refused"] and not ref["wouldRefuse"]:
        for kind in ours["kinds"]:
            if kind == "unknown":
                labels.add("deliberate/nothing-open" if "nothing" in ours["kinds"] else "deliberate/unknown-id")
            elif kind == "nothing":
                labels.add("deliberate/nothing-open")
            elif kind == "duplicate":
                labels.add("deliberate/duplicate")
            elif kind == "invalid":
                labels.add("deliberate/schema")
            elif kind == "expired":
                for interrupt_id in ours["problems"]["expired"]:
                    if interrupt_id in read_apart:
                        continue
                    if _first_status(case, interrupt_id) == "cancelled":
                        labels.add("deliberate/cancelled-then-resolved")
                    else:
                        labels.add("UNEXPLAINED/expired")
            else:
                labels.add(f"UNEXPLAINED/ours-only/{kind}")
    elif ref["wouldRefuse"] and not ours["refused"]:
        named = _reference_expired(case, ref)
        if named is not None and not read_apart.get(named, "UNEXPLAINED").startswith("UNEXPLAINED"):
            labels.add(f"reference-only/{read_apart[named]}")
        else:
            labels.add(f"UNEXPLAINED/reference-only/{ref['stage']}")
    elif ref["wouldRefuse"]:
        # Both refuse: for the same reason, or each for one the other also finds. The reference reports
        # its first failure: the interrupt it names as expired we must refuse too (as expired, or for the
        # malformed status its first entry carries); what its egress refuses is malformed to us too.
        named = _reference_expired(case, ref)
        if (named is not None and named not in read_apart and named not in ours["problems"]["expired"]
                and _first_status(case, named) in ("resolved", "cancelled")):
            labels.add("UNEXPLAINED/expired-not-named")
        if ref["stage"] == "egress" and "invalid-entry" not in ours["kinds"]:
            labels.add("UNEXPLAINED/egress-not-malformed")
    # The lists: ours are complete whenever we refuse (every kind is found); when we send, the reference's
    # must be empty. (The reference lists a repeated pending id once per copy; we name it once.)
    # An entry whose id is no string is named by where it stands (``<entry N: ...>``) on our side and by
    # its value on the reference's; the generator draws no string id of that shape, so both are left out.
    unknown_ours = [i for i in ours["unknown"] if not (i.startswith("<entry ") and i.endswith(", not a string>"))]
    unknown_theirs = [i for i in ref["unknownResumeIds"] if isinstance(i, str)]
    for mine_list, theirs_list, label in ((ours["uncovered"], list(dict.fromkeys(ref["uncovered"])), "uncovered"),
                                          (unknown_ours, unknown_theirs, "unknown")):
        if (mine_list != theirs_list) if ours["refused"] else bool(theirs_list):
            labels.add(f"UNEXPLAINED/{label}-list")
    return sorted(labels)


# --------------------------------------------------------------------------------------------------
# Running the reference
# --------------------------------------------------------------------------------------------------


class Reference:
    """``resume_oracle.mjs`` in one node process, in a folder whose ``node_modules`` is the oracle's."""

    def __init__(self, oracle: Path, node: str = "node", tz: str = "UTC") -> None:
        if not (oracle / "node_modules" / "@ag-ui" / "client").is_dir():
            raise SystemExit(f"{oracle} has no node_modules/@ag-ui/client: run `npm ci` in a copy of the oracle")
        self.oracle = oracle
        self.node = node
        self.tz = tz

    def verdicts(self, specs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The reference's verdict on each spec (a ``--check-resume`` input), in order."""
        with tempfile.TemporaryDirectory(prefix="agui-resume-") as tmp:
            folder = Path(tmp)
            shutil.copy(DRIVER, folder / DRIVER.name)
            (folder / "node_modules").symlink_to(self.oracle / "node_modules", target_is_directory=True)
            env = {k: v for k, v in os.environ.items() if k != "NODE_ENV"}  # (as make_golden.py runs it)
            env["TZ"] = self.tz  # the reference reads a zoneless date-time as host-local time
            text = "".join(json.dumps(spec, ensure_ascii=True) + "\n" for spec in specs)
            proc = subprocess.run([self.node, str(folder / DRIVER.name)], input=text.encode(), capture_output=True,
                                  env=env, check=False)
        lines = proc.stdout.decode("utf-8").splitlines()
        if proc.returncode != 0 or len(lines) != len(specs):
            why = proc.stderr.decode(errors="replace")[:2000]
            raise SystemExit(f"the driver failed (exit {proc.returncode}): {why}")
        out = [json.loads(line) for line in lines]
        failed = [o["oracleError"] for o in out if "oracleError" in o]
        if failed:
            raise SystemExit(f"the driver could not judge {len(failed)} cases: {failed[0]}")
        return out


VERDICT_KEYS = ("wouldRefuse", "stage", "expired", "uncovered", "unknownResumeIds")


def check_driver(reference: Reference) -> int:
    """Refuse to go on unless the driver gives every golden resume case the verdict ``fold.mjs`` recorded."""
    docs = [json.loads(path.read_text(encoding="utf-8")) for path in sorted(GOLDEN.glob("*.json"))]
    got = reference.verdicts([doc["case"] for doc in docs])
    for path, doc, verdict in zip(sorted(GOLDEN.glob("*.json")), docs, got, strict=True):
        for key in VERDICT_KEYS:
            if doc["oracle"][key] != verdict[key]:
                raise SystemExit(f"the driver disagrees with fold.mjs on golden {path.stem} ({key}: "
                                 f"{verdict[key]!r} != {doc['oracle'][key]!r}): it cannot stand in for the oracle")
    return len(docs)


def confirm(oracle: Path, node: str, specs: list[dict[str, Any]], verdicts: list[dict[str, Any]]) -> None:
    """Send ``specs`` through ``fold.mjs --check-resume`` itself (as make_golden.py runs it): same verdicts."""
    from .reference import make_golden

    runner = make_golden().Oracle(oracle, node)
    with tempfile.TemporaryDirectory(prefix="agui-resume-confirm-") as tmp:
        for n, (spec, verdict) in enumerate(zip(specs, verdicts, strict=True)):
            path = Path(tmp) / f"case-{n}.json"
            path.write_text(json.dumps(spec, ensure_ascii=True), encoding="utf-8")
            out = runner.run("--check-resume", str(path))
            for key in VERDICT_KEYS:
                if out[key] != verdict[key]:
                    raise SystemExit(f"fold.mjs and the driver disagree on a case ({key}): {json.dumps(spec)[:500]}")


# --------------------------------------------------------------------------------------------------
# The command
# --------------------------------------------------------------------------------------------------


def run_seed(reference: Reference, seed: int, count: int) -> list[dict[str, Any]]:
    """Every case of ``seed`` with both verdicts and the labels of what differs."""
    drawn = list(cases(seed, count))
    verdicts = reference.verdicts([item["case"] for item in drawn])
    out = []
    for item, ref in zip(drawn, verdicts, strict=True):
        ours = our_verdict(item["case"])
        labels = explain(item["case"], item["forms"], ours, ref, host_local=reference.tz != "UTC")
        out.append({**item, "ours": ours, "reference": ref, "labels": labels})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.differential.resume", description=__doc__.split("\n\n")[0])
    parser.add_argument("--oracle", required=True, help="the oracle folder (fold.mjs, with `npm ci` done)")
    parser.add_argument("--seed", type=int, action="append", help="a seed (repeatable; default 1)")
    parser.add_argument("--count", type=int, default=2000, help="cases per seed (default 2000)")
    parser.add_argument("--confirm", type=int, default=0, metavar="K",
                        help="also run K cases per seed (the differing ones first) through fold.mjs itself")
    parser.add_argument("--show", type=int, default=3, help="cases shown per unexplained label (default 3)")
    parser.add_argument("--save", help="write every differing case here, one JSON file each")
    parser.add_argument("--node", default="node", help="the node executable")
    parser.add_argument("--tz", default="UTC", help="the reference's host time zone (default UTC, as the golden "
                                                    "cases; another one shows which verdicts depend on the host)")
    args = parser.parse_args(argv)
    oracle = Path(args.oracle).resolve()
    # (the driver is checked against the golden verdicts in UTC, the zone they were recorded in)
    print(f"driver agrees with fold.mjs on all {check_driver(Reference(oracle, args.node))} golden resume cases")
    reference = Reference(oracle, args.node, args.tz)
    unexplained = 0
    for seed in args.seed or [1]:
        judged = run_seed(reference, seed, args.count)
        differing = [item for item in judged if item["labels"]]
        by_label = Counter(label for item in differing for label in item["labels"])
        refused = sum(item["reference"]["wouldRefuse"] for item in judged)
        print(f"seed {seed}: {len(judged)} cases ({refused} refused by the reference), "
              f"{len(judged) - len(differing)} same, {len(differing)} differ")
        for label, n in sorted(by_label.items()):
            plain = label.removeprefix("reference-only/")
            where = KNOWN.get(plain)
            note = f"  (golden {where[0]}, {where[1]})" if where else ""
            if plain.startswith("host-local/"):
                note = f"  (golden {HOST_LOCAL[plain.split('/')[1]]} in UTC; docs/expires-at.md)"
            print(f"    {n:6d}  {label}{note}")
        for label in sorted(by_label):
            if not label.startswith("UNEXPLAINED"):
                continue
            unexplained += 1
            for item in [i for i in differing if label in i["labels"]][: args.show]:
                why = item["ours"].get("builder") or ""
                print(f"  --- {item['name']} {label} {why}"
                      f"\n      case: {json.dumps(item['case'], ensure_ascii=True)[:600]}"
                      f"\n      ours: {json.dumps({k: item['ours'][k] for k in ('refused', 'kinds', 'expired')})[:300]}"
                      f"\n      reference: {json.dumps(item['reference'], ensure_ascii=True)[:400]}")
        if args.save:
            folder = Path(args.save)
            folder.mkdir(parents=True, exist_ok=True)
            for item in differing:
                (folder / f"{item['name']}.json").write_text(json.dumps(item, ensure_ascii=True, indent=1),
                                                             encoding="utf-8")
        if args.confirm:
            picked = (differing + [i for i in judged if not i["labels"]])[: args.confirm]
            confirm(oracle, args.node, [i["case"] for i in picked], [i["reference"] for i in picked])
            print(f"    fold.mjs gave the driver's verdict on {len(picked)} of them")
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main())
