"""When an interrupt expires: ``expiresAt`` read as the reference reads it, and judged against a clock.

* :func:`parse_expires_at` reads an ``expiresAt`` value (ISO 8601 as ECMAScript reads it, HTTP's and
  RFC 5322's dates, JavaScript's ``toString`` form) as an aware UTC instant, or ``None``.
* :func:`is_expired` judges one interrupt at ``now``; :func:`judge_expiry` judges many against one
  reading of the clock (:func:`current_time`), as the resume rules of
  :mod:`~agui_client.core.interrupts` do. Both warn once for a value that is not a date (IR-18) or
  names no zone (IR-17).

Sans-IO: the clock is injected (``now=``, a :data:`Clock`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Final, TypeAlias

from dateutil.parser import isoparse

from .._inert import quoted_name
from ..wire.sink import warn
from ..wire.types.run import Interrupt

__all__ = ["Clock", "current_time", "is_expired", "judge_expiry", "parse_expires_at"]

#: What ``now=`` accepts: a datetime (naive means UTC), a callable returning one, or ``None`` for the
#: current UTC time.
Clock: TypeAlias = datetime | Callable[[], datetime] | None


# The grammar is gated before dateutil sees the value because isoparse is far more lenient than the
# reference (JavaScript's Date): it reads ISO week dates, basic format (20260420T170000Z), hour-only
# times and any separator character, all of which the reference calls Invalid Date. Accepted: the
# ECMAScript date-time forms (YYYY, YYYY-MM, YYYY-MM-DD, then T or space, HH:MM[:SS[.frac]]) with the
# offsets ISO 8601 allows (Z, ±HH:MM, ±HHMM, ±HH). The year is four digits or ECMAScript's expanded
# ±YYYYYY. ASCII digits only: \d would admit other scripts.
_YEAR = r"[0-9]{4}|[+-][0-9]{6}"
_ISO_FORM = re.compile(
    rf"(?P<date>(?P<year>{_YEAR})(?:-[0-9]{{2}})?)"
    rf"|(?P<day>(?P<dayyear>{_YEAR})-[0-9]{{2}}-[0-9]{{2}})"
    r"(?:[T ](?P<hm>[0-9]{2}:[0-9]{2})(?::(?P<sec>[0-9]{2})(?P<frac>[.,][0-9]+)?)?"
    r"(?P<tz>Z|[+-][0-9]{2}(?::?[0-9]{2})?)?)?"
)

# ECMAScript's Date spans ±8.64e15 ms around 1970: years -271821 to 275760 (the edge years only in part,
# which is not modelled: a value in them is read as in range).
_JS_FIRST_YEAR: Final = -271821
_JS_LAST_YEAR: Final = 275760
_EARLIEST: Final = datetime.min.replace(tzinfo=timezone.utc)
_LATEST: Final = datetime.max.replace(tzinfo=timezone.utc)


# The other forms read are those a date means without guessing: HTTP's (RFC 9110 section 5.6.7: the
# preferred IMF-fixdate, which JavaScript's toUTCString writes, and the obsolete RFC 850 and asctime
# forms every HTTP recipient must read), the Internet Message Format's date-time that IMF-fixdate is a
# profile of (RFC 5322 section 3.3: a numeric zone, the obsolete zone names, a two-digit year), and
# JavaScript's toString form, the other form ECMA-262 requires the reference's parser to read back.
# Names are read in any case, as the reference reads them; the parts are separated as the grammars say.
_WEEKDAY = r"(?:mon|tue|wed|thu|fri|sat|sun)"
_MONTH = r"(?P<month>jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)"
_CLOCK = r"(?P<hour>[0-9]{2}):(?P<minute>[0-9]{2})"
_HTTP_FORMS = tuple(re.compile(form, re.IGNORECASE | re.ASCII) for form in (
    # IMF-fixdate and RFC 5322: [Mon, ]01 Jun 2026 11:00[:00] GMT|+0200|EST …
    rf"(?:{_WEEKDAY}, )?(?P<day>[0-9]{{1,2}}) {_MONTH} (?P<year>[0-9]{{4}}|[0-9]{{2}}) "
    rf"{_CLOCK}(?::(?P<sec>[0-9]{{2}}))? (?P<zone>[+-][0-9]{{4}}|ut|gmt|z|[ecmp][sd]t)",
    # RFC 850: Monday, 01-Jun-26 11:00:00 GMT (and the cookie form, Mon, 01-Jun-2026 11:00:00 GMT)
    rf"(?:{_WEEKDAY}|monday|tuesday|wednesday|thursday|friday|saturday|sunday), (?P<day>[0-9]{{2}})-{_MONTH}-"
    rf"(?P<year>[0-9]{{4}}|[0-9]{{2}}) {_CLOCK}:(?P<sec>[0-9]{{2}}) (?P<zone>gmt)",
    # asctime: Mon Jun  1 11:00:00 2026 (no zone: an HTTP-date is always UTC; one space before a
    # one-digit day is read too, as the reference reads it: the value is no less clear)
    rf"{_WEEKDAY} {_MONTH} (?P<day>[0-9]{{2}}| ?[0-9]) {_CLOCK}:(?P<sec>[0-9]{{2}}) (?P<year>[0-9]{{4}})",
    # JavaScript's toString: Mon Jun 01 2026 11:00:00 GMT+0200 (Central European Summer Time)
    rf"{_WEEKDAY} {_MONTH} (?P<day>[0-9]{{2}}) (?P<year>[0-9]{{4}}) {_CLOCK}:(?P<sec>[0-9]{{2}}) "
    r"gmt(?P<zone>[+-][0-9]{4})(?: \([^()]*\))?",
))
_MONTHS: Final = {name: n for n, name in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), start=1)}
# RFC 5322's obsolete zone names (its military letters are left out: RFC 5322 itself says their sign was
# never agreed on, and the reference does not read them).
_ZONE_HOURS: Final = {"ut": 0, "gmt": 0, "z": 0, "est": -5, "edt": -4, "cst": -6, "cdt": -5, "mst": -7,
                      "mdt": -6, "pst": -8, "pdt": -7}


def _read_http(value: str) -> datetime | None:
    """An HTTP-date, RFC 5322 date-time or JavaScript ``toString`` value as an aware UTC datetime, else ``None``."""
    for form in _HTTP_FORMS:
        match = form.fullmatch(value)
        if match is not None:
            break
    else:
        return None
    year = int(match["year"])
    if len(match["year"]) == 2:
        # RFC 5322's obsolete two-digit year (and RFC 850's), with its fixed pivot, which is the
        # reference's too: 00-49 are 2000-2049, 50-99 are 1950-1999. RFC 9110 would slide the pivot with
        # the clock (a year more than 50 years ahead is the past century's); reading it here would need
        # the clock inside the parser, and the two differ only for an expiry 24 years away or more.
        year += 2000 if year < 50 else 1900
    zone = (match.groupdict().get("zone") or "gmt").lower()
    if zone in _ZONE_HOURS:
        offset = timedelta(hours=_ZONE_HOURS[zone])
    else:
        hours, minutes = int(zone[1:3]), int(zone[3:])
        if minutes > 59:
            return None
        offset = (1 if zone[0] == "+" else -1) * timedelta(hours=hours, minutes=minutes)
    second = int(match["sec"] or 0)
    if second > 60:
        return None
    # A leap second is the next second, as in the ISO form; the weekday is not checked against the
    # date, as the reference does not check it.
    extra = timedelta(seconds=1) if second == 60 else timedelta(0)
    try:
        local = datetime(year, _MONTHS[match["month"].lower()], int(match["day"]), int(match["hour"]),
                         int(match["minute"]), min(second, 59))
        return (local - offset + extra).replace(tzinfo=timezone.utc)
    except (ValueError, OverflowError):
        # An impossible date or time (31 Jun, 25:00), as for the ISO form; year 0000 is none either.
        return None


def _read(value: str) -> tuple[datetime | None, bool]:
    """``value`` as an aware UTC datetime (``None`` if unreadable), and whether it named no zone."""
    # Lowercase t/z are RFC 3339 and the reference accepts them; Python's parsers do not all do so.
    normal = value.upper()
    match = _ISO_FORM.fullmatch(normal)
    if match is None:
        return _read_http(value), False
    extra = timedelta(0)
    if match["sec"] == "60":
        # A leap second: no Python parser accepts second 60, and the instant it names is the
        # one just before the next second, so read it as that next second.
        normal = normal[: match.start("sec")] + "59" + normal[match.end("sec"):]
        extra = timedelta(seconds=1)
    year_text = match["year"] or match["dayyear"]
    if year_text == "-000000":
        return None, False  # ECMAScript forbids minus zero as an expanded year
    year = int(year_text)
    if not _JS_FIRST_YEAR <= year <= _JS_LAST_YEAR:
        return None, False  # past ECMAScript's time range: the reference's Invalid Date
    # The year leads the value. datetime holds years 1..9999 only: a year outside them is read with a
    # stand-in of the same leap-ness (so month and day are still checked) and then placed before or
    # after every instant Python can hold, which is the verdict against any real now.
    stand_in = f"{year:04d}" if 1 <= year <= 9999 else ("2000" if _leap(year) else "2001")
    normal = stand_in + normal[len(year_text):]
    try:
        # isoparse truncates fractions beyond microseconds and rolls 24:00:00 to the next
        # day's midnight; it refuses impossible dates such as 2026-02-30.
        parsed = isoparse(normal)
    except (ValueError, OverflowError):
        return None, False
    naive = match["day"] is not None and match["hm"] is not None and match["tz"] is None
    if not 1 <= year <= 9999:
        return (_EARLIEST if year < 1 else _LATEST), naive
    offset = parsed.utcoffset() or timedelta(0)
    try:
        return (parsed.replace(tzinfo=None) - offset + extra).replace(tzinfo=timezone.utc), naive
    except OverflowError:
        # Within a day of datetime's range: the instant exists, Python cannot hold it. Clamping keeps
        # the verdict right (year 9999 in a western zone is still the far future).
        return (_LATEST if extra - offset > timedelta(0) else _EARLIEST), naive


def _leap(year: int) -> bool:
    # The proleptic Gregorian rule, which ECMAScript applies to every year (year 0 is a leap year).
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def parse_expires_at(value: str) -> datetime | None:
    """Read an ``expiresAt`` value as an aware UTC datetime.

    Accepted forms are those the reference's date parser reads as ISO 8601: ``YYYY``, ``YYYY-MM``,
    ``YYYY-MM-DD``, optionally followed by ``T`` (or a space) and ``HH:MM``, ``HH:MM:SS`` or
    ``HH:MM:SS.fraction``, and a zone ``Z``, ``±HH:MM`` or ``±HHMM``; and two ISO 8601 forms the
    reference reads as no date (never expiring), read here as the instant they name: a zone ``±HH``
    and a comma before the fraction (``11:00:00,5``). ``t`` and ``z`` may be lowercase. The year is
    four digits or ECMAScript's expanded ``±YYYYYY`` (``+002026``; ``-000000`` is refused, as
    ECMAScript does). A year Python cannot hold (0 and earlier, or after 9999) reads as
    the earliest or latest instant Python can hold, which keeps the verdict against any real now:
    a year before 1 has expired, one after 9999 has not. Beyond ECMAScript's own range (years before
    -271821 or after 275760) the value is not a date, as for the reference. A value without a zone
    is read as UTC (the reference reads a date-time without a zone as host-local time, which makes
    its verdict depend on where it runs; a date alone it reads as UTC midnight, as here). Fractions
    beyond microseconds are truncated; a leap second ``…:60`` is the next second; ``24:00:00`` is the
    next day's midnight.

    Also read, as the reference reads them: HTTP's dates (RFC 9110), that is the ``Expires`` header's
    ``Mon, 01 Jun 2026 11:00:00 GMT`` and its obsolete forms ``Monday, 01-Jun-26 11:00:00 GMT``
    (RFC 850; also with a four-digit year, as cookies write it) and ``Mon Jun  1 11:00:00 2026``
    (asctime, which is UTC: the reference reads it as host-local time); RFC 5322's date-time that
    the first is a profile of (no weekday, ``1 Jun``, no seconds, a ``+0200`` zone, ``UT``,
    ``EST``/``EDT``, ``CST``/``CDT``, ``MST``/``MDT``, ``PST``/``PDT``, a two-digit year: 00-49 are
    2000-2049, 50-99 are 1950-1999); and JavaScript's ``Date.prototype.toString`` form
    ``Mon Jun 01 2026 11:00:00 GMT+0200 (Central European Summer Time)``. Names may be in any case;
    the weekday is not checked against the date (the reference does not check it).

    Args:
        value: the ``expiresAt`` string.

    Returns:
        The instant in UTC, or ``None`` when the value is not such a date: impossible dates
        (``2026-02-30``, ``31 Jun 2026``), surrounding whitespace, ISO week dates, the empty string,
        the forms only a JavaScript engine's own heuristics read (``2026/06/01``, ``June 1, 2026``),
        anything else (README: "How `expiresAt` is read").
    """
    if not isinstance(value, str):
        return None
    return _read(value)[0]


def current_time(now: Clock) -> datetime:
    """The instant ``now`` names, as an aware UTC datetime (see :data:`Clock`).

    Raises:
        TypeError: ``now`` is not a datetime and does not return one.
    """
    current = now() if callable(now) else now
    if current is None:
        return datetime.now(timezone.utc)
    if not isinstance(current, datetime):
        raise TypeError(f"now must be a datetime or return one, got {type(current).__name__}")
    if current.tzinfo is None or current.utcoffset() is None:
        return current.replace(tzinfo=timezone.utc)
    return current.astimezone(timezone.utc)


def judge_expiry(interrupt: Interrupt, current: datetime) -> bool:
    """Whether ``interrupt`` has expired at ``current`` (UTC), warning as :func:`is_expired` does.

    :func:`is_expired` for a caller that reads the clock once for many interrupts (the resume rules).
    """
    value = interrupt.expires_at
    if value is None:
        return False
    instant, naive = _read(value) if isinstance(value, str) else (None, False)
    if instant is None:
        # (the agent's strings quoted cut short: a warning line is no place for a megabyte of expiresAt)
        warn("IR-18", f"interrupt {quoted_name(interrupt.id)}: expiresAt {quoted_name(value)} is not a date; it "
             "never expires", once=("expiresAt", str(interrupt.id), repr(value)))
        return False
    if naive:
        warn("IR-17", f"interrupt {quoted_name(interrupt.id)}: expiresAt {quoted_name(value)} names no zone; read "
                      "as UTC (the reference reads it as host-local time)",
             once=("expiresAt", str(interrupt.id), repr(value)))
    return instant <= current


def is_expired(interrupt: Interrupt, now: Clock = None) -> bool:
    """Whether ``interrupt`` has expired at ``now``: its ``expiresAt`` is now or earlier.

    ``expiresAt`` is read by :func:`parse_expires_at`. An interrupt without one never expires. A value
    that is not a date never expires either (IR-18) and gives one warning naming the interrupt; so
    does a date-time without a zone, which is read as UTC (IR-17). Warnings go to the active
    :func:`agui_client.wire.sink.collect_warnings` sink (once per interrupt id and value), or else through
    :mod:`warnings` as :class:`~agui_client.errors.AguiWarning` (whose default filter shows each
    distinct message once per calling location).

    Args:
        interrupt: the interrupt to judge.
        now: the current time: a datetime (naive means UTC), a callable returning one, or ``None``
            for the current UTC time.

    Returns:
        ``True`` when the interrupt can no longer be answered, only abandoned.
    """
    return judge_expiry(interrupt, current_time(now))
