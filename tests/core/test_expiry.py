"""How ``expiresAt`` is read and judged (bad-inputs.md section N; IR-17, IR-18)."""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agui_client.core.expiry import is_expired, parse_expires_at
from agui_client.core.interrupts import check_resume
from agui_client.errors import AguiWarning, ExpiredInterruptAnswered
from agui_client.types.run import Interrupt, ResumeEntry
from agui_client.wire.sink import collect_warnings

__all__: list[str] = []

UTC = timezone.utc
#: The clock the section N examples assume.
NOW = datetime(2026, 11, 30, tzinfo=UTC)


def interrupt(expires_at: object, id: str = "i1") -> Interrupt:
    return Interrupt(id=id, reason="approval", expires_at=expires_at)  # type: ignore[arg-type]


@contextmanager
def host_zone(zone: str) -> Iterator[None]:
    """Run with the process's local zone set to ``zone``: a reading that leaked local time would move."""
    saved = os.environ.get("TZ")
    os.environ["TZ"] = zone
    time.tzset()
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = saved
        time.tzset()


# value, the instant it names (UTC), expired at NOW
READABLE = [
    pytest.param("2026-04-20T17:00:00Z", datetime(2026, 4, 20, 17, tzinfo=UTC), True, id="B245-z-past"),
    pytest.param("2026-12-01T00:00:00Z", datetime(2026, 12, 1, tzinfo=UTC), False, id="z-future"),
    pytest.param("2026-04-20", datetime(2026, 4, 20, tzinfo=UTC), True, id="B247-date-only-midnight-utc"),
    pytest.param("2026-11-30", NOW, True, id="date-only-today-is-now"),
    pytest.param("2026-12-01", datetime(2026, 12, 1, tzinfo=UTC), False, id="date-only-tomorrow"),
    pytest.param("1970-01-01T00:00:00Z", datetime(1970, 1, 1, tzinfo=UTC), True, id="B250-epoch"),
    pytest.param("9999-12-31T23:59:59Z", datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC), False, id="B251-9999"),
    pytest.param("2016-12-31T23:59:60Z", datetime(2017, 1, 1, tzinfo=UTC), True, id="B253-leap-second"),
    pytest.param("2026-12-01T10:00:00+05:30", datetime(2026, 12, 1, 4, 30, tzinfo=UTC), False, id="B254-plus-0530"),
    pytest.param("2026-12-01T10:00:00+0530", datetime(2026, 12, 1, 4, 30, tzinfo=UTC), False, id="B254-compact"),
    pytest.param("2026-11-30T04:00:00+05:30", datetime(2026, 11, 29, 22, 30, tzinfo=UTC), True,
                 id="offset-past-in-utc"),
    pytest.param("2026-11-29T20:00:00-05:00", datetime(2026, 11, 30, 1, tzinfo=UTC), False,
                 id="negative-offset-future-in-utc"),
    pytest.param("2026-04-20T17:00:00-00:00", datetime(2026, 4, 20, 17, tzinfo=UTC), True, id="minus-zero"),
    pytest.param("2026-04-20T17:00:00+05", datetime(2026, 4, 20, 12, tzinfo=UTC), True, id="hours-only-offset"),
    pytest.param("2026-04-20T17:00:00z", datetime(2026, 4, 20, 17, tzinfo=UTC), True, id="B255-lowercase-z"),
    pytest.param("2026-04-20t17:00:00z", datetime(2026, 4, 20, 17, tzinfo=UTC), True, id="lowercase-t"),
    pytest.param("2026-04-20T17:00:00.123456789Z", datetime(2026, 4, 20, 17, 0, 0, 123456, tzinfo=UTC), True,
                 id="B257-nanoseconds-truncated"),
    pytest.param("2026-11-30T00:00:00.000Z", NOW, True, id="B263-millis-equal-now"),
    pytest.param("2026-11-30T00:00:00.001Z", NOW + timedelta(milliseconds=1), False, id="one-ms-after-now"),
    pytest.param("2026-04-20T24:00:00Z", datetime(2026, 4, 21, tzinfo=UTC), True, id="B258-hour-24-rolls-over"),
    pytest.param("2026-11-29T24:00:00Z", NOW, True, id="hour-24-rolls-onto-now"),
    pytest.param("2026-04-20 17:00Z", datetime(2026, 4, 20, 17, tzinfo=UTC), True, id="space-separator-no-seconds"),
    pytest.param("2027", datetime(2027, 1, 1, tzinfo=UTC), False, id="year-only"),
    pytest.param("2026-04", datetime(2026, 4, 1, tzinfo=UTC), True, id="year-month"),
]


@pytest.mark.parametrize(("value", "instant", "expired"), READABLE)
def test_readable_values_name_their_utc_instant_and_expire_when_now_or_earlier(
    value: str, instant: datetime, expired: bool
) -> None:
    assert parse_expires_at(value) == instant
    assert is_expired(interrupt(value), NOW) is expired


UNREADABLE = [
    pytest.param("", id="B249-empty"),
    pytest.param("2026-02-30T00:00:00Z", id="B259-feb-30"),
    pytest.param(" 2026-04-20T17:00:00Z ", id="B261-padded"),
    pytest.param("2026-04-20T17:00:00Z\n", id="trailing-newline"),
    pytest.param("2026-W16-1", id="B262-iso-week"),
    pytest.param("next tuesday", id="garbage"),
    pytest.param("20260420T170000Z", id="basic-format"),
    pytest.param("2026-04-20T17Z", id="hour-only"),
    pytest.param("2026-04-20T24:00:01Z", id="hour-24-not-midnight"),
    pytest.param("2026-04-20T17:00:00+24:00", id="offset-out-of-range"),
    pytest.param("2026-04-20x17:00:00Z", id="odd-separator"),
    pytest.param("٢٠٢٦-04-20", id="non-ascii-digits"),
    pytest.param("-000000-01-01T00:00:00Z", id="minus-zero-expanded-year"),
    pytest.param("+0020260-04-20", id="seven-digit-year"),
    pytest.param("+2026-04-20", id="signed-four-digit-year"),
    pytest.param("002026-04-20", id="unsigned-six-digit-year"),
    pytest.param("+002026-02-30T00:00:00Z", id="expanded-year-feb-30"),
    pytest.param("+010100-02-29", id="far-future-feb-29-of-a-common-year"),
    pytest.param("+275761-01-01T00:00:00Z", id="after-ecmascript-range"),
    pytest.param("-271822-01-01T00:00:00Z", id="before-ecmascript-range"),
    pytest.param("1970-01-01T00:00:00ZZ", id="double-zone"),
]


def test_unreadable_value_warns_once_per_sink_with_rule_ir18() -> None:
    with collect_warnings() as sink:
        is_expired(interrupt("soon", id="ask-1"), NOW)
        is_expired(interrupt("soon", id="ask-1"), NOW)
        is_expired(interrupt("soon", id="ask-2"), NOW)
    assert [w.code for w in sink.items] == ["IR-18", "IR-18"]
    assert "ask-1" in sink.items[0].message and "ask-2" in sink.items[1].message


def test_unreadable_value_warning_is_shown_once_under_the_default_filter() -> None:
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("default")
        for _ in range(3):
            is_expired(interrupt("soon", id="ask-default"), NOW)
    assert len(record) == 1
    assert record[0].category is AguiWarning


def test_a_non_string_value_never_expires_and_warns() -> None:
    assert parse_expires_at(1234567890) is None  # type: ignore[arg-type]
    with pytest.warns(AguiWarning):
        assert is_expired(interrupt(1234567890), datetime.max) is False


def test_absent_expiry_never_expires_and_does_not_warn() -> None:
    assert is_expired(interrupt(None), datetime.max.replace(tzinfo=UTC)) is False


def test_leap_second_reads_as_the_next_second_without_warning() -> None:
    # B253: filterwarnings=error turns any warning here into a failure.
    leap = interrupt("2016-12-31T23:59:60Z")
    assert is_expired(leap, datetime(2016, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)) is False
    assert is_expired(leap, datetime(2017, 1, 1, tzinfo=UTC)) is True


def test_leap_second_in_another_zone_is_also_the_next_second() -> None:
    assert parse_expires_at("2017-01-01T05:29:60+05:30") == datetime(2017, 1, 1, tzinfo=UTC)


def test_naive_timestamp_is_read_as_utc_and_warns() -> None:
    # B246: the reference reads it as host-local time; we read UTC so the verdict does not move.
    value = "2026-11-30T00:00:00"
    with collect_warnings() as sink:
        assert is_expired(interrupt(value, id="ask-naive"), NOW) is True
        assert is_expired(interrupt(value, id="ask-naive"), NOW - timedelta(microseconds=1)) is False
    assert [w.code for w in sink.items] == ["IR-17"]
    assert "ask-naive" in sink.items[0].message
    assert parse_expires_at(value) == NOW


@pytest.mark.parametrize("zone", ["UTC", "Asia/Kolkata", "America/New_York"])
def test_naive_timestamp_verdict_does_not_depend_on_the_host_zone(zone: str) -> None:
    with host_zone(zone):
        assert parse_expires_at("2026-11-30T00:00:00") == NOW
        assert parse_expires_at("2026-11-30") == NOW


def test_date_only_does_not_warn() -> None:
    with collect_warnings() as sink:
        assert is_expired(interrupt("2026-11-30"), NOW) is True
    assert sink.items == []


def test_expiry_equal_to_now_is_expired_and_a_microsecond_earlier_is_not() -> None:
    exact = interrupt("2026-11-30T00:00:00Z")
    assert is_expired(exact, NOW) is True
    assert is_expired(exact, NOW - timedelta(microseconds=1)) is False


def test_now_may_be_a_callable_read_at_each_judgement() -> None:
    clock = iter([NOW - timedelta(seconds=1), NOW])
    exact = interrupt("2026-11-30T00:00:00Z")
    assert is_expired(exact, lambda: next(clock)) is False
    assert is_expired(exact, lambda: next(clock)) is True


@pytest.mark.parametrize("zone", ["UTC", "Asia/Kolkata", "America/New_York"])
def test_naive_now_is_utc_wherever_the_host_is(zone: str) -> None:
    exact = interrupt("2026-11-30T00:00:00Z")
    with host_zone(zone):
        assert is_expired(exact, datetime(2026, 11, 30)) is True
        assert is_expired(exact, datetime(2026, 11, 29, 23, 59, 59)) is False


def test_aware_now_in_another_zone_is_compared_in_utc() -> None:
    ist = timezone(timedelta(hours=5, minutes=30))
    exact = interrupt("2026-11-30T00:00:00Z")
    assert is_expired(exact, datetime(2026, 11, 30, 5, 30, tzinfo=ist)) is True
    assert is_expired(exact, datetime(2026, 11, 30, 5, 29, tzinfo=ist)) is False


def test_default_now_is_the_current_time() -> None:
    assert is_expired(interrupt("1970-01-01T00:00:00Z")) is True
    assert is_expired(interrupt("9999-12-31T23:59:59Z")) is False


def test_now_of_the_wrong_type_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        is_expired(interrupt("2026-01-01"), "2026-01-01")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        is_expired(interrupt("2026-01-01"), lambda: 0)  # type: ignore[arg-type, return-value]


@pytest.mark.parametrize(("value", "instant"), [
    pytest.param("+002026-04-20T17:00:00Z", datetime(2026, 4, 20, 17, tzinfo=UTC), id="expanded-year"),
    pytest.param("+002027-01-01", datetime(2027, 1, 1, tzinfo=UTC), id="expanded-year-future-date"),
    pytest.param("+002026", datetime(2026, 1, 1, tzinfo=UTC), id="expanded-year-only"),
    pytest.param("-000001-01-01T00:00:00Z", datetime.min.replace(tzinfo=UTC), id="negative-year"),
    pytest.param("0000-01-01T00:00:00Z", datetime.min.replace(tzinfo=UTC), id="year-zero"),
    pytest.param("0000-01-01", datetime.min.replace(tzinfo=UTC), id="year-zero-date"),
    pytest.param("+000000-02-29", datetime.min.replace(tzinfo=UTC), id="year-zero-is-a-leap-year"),
    pytest.param("-271821-04-20T00:00:00Z", datetime.min.replace(tzinfo=UTC), id="ecmascript-first-year"),
    pytest.param("+010000-01-01T00:00:00Z", datetime.max.replace(tzinfo=UTC), id="year-10000"),
    pytest.param("+275760-09-13T00:00:00Z", datetime.max.replace(tzinfo=UTC), id="ecmascript-last-year"),
])
def test_ecmascript_years_are_read_as_the_reference_reads_them(value: str, instant: datetime) -> None:
    # Years Python cannot hold are read as its earliest or latest instant: before or after any real now.
    assert parse_expires_at(value) == instant
    assert is_expired(interrupt(value), NOW) is (instant <= NOW)
    if instant in (datetime.min.replace(tzinfo=UTC), datetime.max.replace(tzinfo=UTC)):
        # The verdict holds against the earliest and the latest now Python can express.
        for now in (datetime(1, 1, 1, 0, 0, 1, tzinfo=UTC), datetime(9999, 12, 31, tzinfo=UTC)):
            assert is_expired(interrupt(value), now) is (instant <= NOW)


def test_instants_beyond_pythons_range_keep_their_verdict() -> None:
    # 9999-12-31T23:59:59-01:00 is after datetime.max in UTC; 0001-01-01T00:00:00+01:00 is before min.
    late = interrupt("9999-12-31T23:59:59-01:00")
    early = interrupt("0001-01-01T00:00:00+01:00")
    assert is_expired(late, datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)) is False
    assert is_expired(early, datetime(1, 1, 1, tzinfo=UTC)) is True
    assert is_expired(interrupt("9999-12-31T23:59:60Z"), NOW) is False


offsets = st.integers(min_value=-(23 * 60 + 59), max_value=23 * 60 + 59).map(
    lambda minutes: timezone(timedelta(minutes=minutes)))


@given(
    instant=st.datetimes(min_value=datetime(2, 1, 1), max_value=datetime(9998, 12, 31), timezones=offsets),
    compact=st.booleans(),
)
def test_any_iso_timestamp_round_trips_and_expires_exactly_at_its_instant(instant: datetime, compact: bool) -> None:
    text = instant.isoformat()
    if compact:
        text = text[:-3] + text[-2:]  # +05:30 -> +0530
    assert parse_expires_at(text) == instant
    assert is_expired(interrupt(text), instant) is True
    assert is_expired(interrupt(text), instant - timedelta(microseconds=1)) is False


@given(instant=st.datetimes(min_value=datetime(1000, 1, 1), max_value=datetime(9998, 12, 31)))
def test_z_suffix_and_naive_now_agree(instant: datetime) -> None:
    text = instant.isoformat() + "Z"
    assert is_expired(interrupt(text), instant) is True
    assert is_expired(interrupt(text), instant - timedelta(microseconds=1)) is False


@given(value=st.text(max_size=40))
def test_no_string_crashes_the_judgement(value: str) -> None:
    with collect_warnings():
        verdict = is_expired(interrupt(value), NOW)
    instant = parse_expires_at(value)
    assert verdict is (instant is not None and instant <= NOW)


# HTTP's dates (the Expires header's forms), RFC 5322's and JavaScript's toString form: value, instant, expired
# at NOW. Each instant is the one the reference reads (checked under Node 20 with TZ=UTC), except where the
# id says "differs" (README, "How `expiresAt` is read").
HTTP_DATES = [
    pytest.param("Mon, 01 Jun 2026 11:00:00 GMT", datetime(2026, 6, 1, 11, tzinfo=UTC), True, id="imf-fixdate"),
    pytest.param("Tue, 01 Dec 2026 11:00:00 GMT", datetime(2026, 12, 1, 11, tzinfo=UTC), False,
                 id="imf-fixdate-future"),
    pytest.param("Monday, 01-Jun-26 11:00:00 GMT", datetime(2026, 6, 1, 11, tzinfo=UTC), True, id="rfc850"),
    pytest.param("Tuesday, 01-Dec-26 11:00:00 GMT", datetime(2026, 12, 1, 11, tzinfo=UTC), False,
                 id="rfc850-future"),
    pytest.param("Monday, 01-Jun-50 11:00:00 GMT", datetime(1950, 6, 1, 11, tzinfo=UTC), True,
                 id="rfc850-year-50-is-1950"),
    pytest.param("Mon, 01-Jun-2026 11:00:00 GMT", datetime(2026, 6, 1, 11, tzinfo=UTC), True,
                 id="cookie-four-digit-year"),
    pytest.param("Mon Jun  1 11:00:00 2026", datetime(2026, 6, 1, 11, tzinfo=UTC), True, id="asctime-differs-utc"),
    pytest.param("Tue Dec  1 11:00:00 2026", datetime(2026, 12, 1, 11, tzinfo=UTC), False,
                 id="asctime-future-differs-utc"),
    pytest.param("Mon Jun 1 11:00:00 2026", datetime(2026, 6, 1, 11, tzinfo=UTC), True, id="asctime-one-space"),
    pytest.param("Mon, 01 Jun 2026 11:00:00 +0200", datetime(2026, 6, 1, 9, tzinfo=UTC), True, id="rfc5322-offset"),
    pytest.param("Mon, 30 Nov 2026 01:00:00 +0200", datetime(2026, 11, 29, 23, tzinfo=UTC), True,
                 id="rfc5322-offset-past-in-utc"),
    pytest.param("Sun, 29 Nov 2026 20:00:00 -0500", datetime(2026, 11, 30, 1, tzinfo=UTC), False,
                 id="rfc5322-negative-offset-future-in-utc"),
    pytest.param("Mon, 01 Jun 2026 11:00:00 -0000", datetime(2026, 6, 1, 11, tzinfo=UTC), True, id="rfc5322-minus-0"),
    pytest.param("Mon, 01 Jun 2026 11:00:00 EST", datetime(2026, 6, 1, 16, tzinfo=UTC), True, id="rfc5322-est"),
    pytest.param("Mon, 01 Jun 2026 11:00:00 PDT", datetime(2026, 6, 1, 18, tzinfo=UTC), True, id="rfc5322-pdt"),
    pytest.param("Mon, 01 Jun 2026 11:00:00 UT", datetime(2026, 6, 1, 11, tzinfo=UTC), True, id="rfc5322-ut"),
    pytest.param("01 Jun 2026 11:00 GMT", datetime(2026, 6, 1, 11, tzinfo=UTC), True, id="rfc5322-no-weekday-seconds"),
    pytest.param("Mon, 1 Jun 26 11:00:00 GMT", datetime(2026, 6, 1, 11, tzinfo=UTC), True,
                 id="rfc5322-one-digit-day-two-digit-year"),
    pytest.param("mon, 30 nov 2026 00:00:00 gmt", NOW, True, id="lowercase-equal-to-now"),
    pytest.param("Mon, 30 Nov 2026 00:00:01 GMT", NOW + timedelta(seconds=1), False, id="a-second-after-now"),
    pytest.param("Tue, 01 Jun 2026 11:00:00 GMT", datetime(2026, 6, 1, 11, tzinfo=UTC), True,
                 id="weekday-not-checked"),
    pytest.param("Mon, 01 Jun 2026 11:00:60 GMT", datetime(2026, 6, 1, 11, 1, tzinfo=UTC), True,
                 id="leap-second-differs-next-second"),
    pytest.param("Mon Jun 01 2026 11:00:00 GMT+0200 (Central European Summer Time)",
                 datetime(2026, 6, 1, 9, tzinfo=UTC), True, id="javascript-tostring"),
    pytest.param("Tue Dec 01 2026 11:00:00 GMT-0500", datetime(2026, 12, 1, 16, tzinfo=UTC), False,
                 id="javascript-tostring-no-zone-name"),
]


@pytest.mark.parametrize(("value", "instant", "expired"), HTTP_DATES)
def test_http_dates_name_their_utc_instant_and_expire_when_now_or_earlier(
    value: str, instant: datetime, expired: bool
) -> None:
    # filterwarnings=error: a form read as a date gives no warning.
    assert parse_expires_at(value) == instant
    assert is_expired(interrupt(value), NOW) is expired


@pytest.mark.parametrize("zone", ["UTC", "Asia/Kolkata", "America/New_York"])
def test_asctime_is_utc_wherever_the_host_is(zone: str) -> None:
    # An HTTP-date is UTC by definition; the reference reads asctime as host-local time.
    with host_zone(zone):
        assert parse_expires_at("Mon Nov 30 00:00:00 2026") == NOW


def test_an_expired_http_date_refuses_a_resolved_answer_and_lets_it_be_abandoned() -> None:
    # The item-12 defect: read as no date, the interrupt never expired and its answer was sent.
    asked = Interrupt(id="approve", reason="approval", expires_at="Mon, 01 Jun 2026 11:00:00 GMT")
    with pytest.raises(ExpiredInterruptAnswered) as caught:
        check_resume([asked], [ResumeEntry(interrupt_id="approve", status="resolved", payload=True)], now=NOW)
    assert caught.value.ids == ("approve",)
    check_resume([asked], [ResumeEntry(interrupt_id="approve", status="cancelled")], now=NOW)


UNREADABLE_HTTP = [
    pytest.param("Mon, 31 Jun 2026 11:00:00 GMT", id="jun-31-differs"),
    pytest.param("Mon, 30 Feb 2026 11:00:00 GMT", id="feb-30-differs"),
    pytest.param(" Mon, 01 Jun 2026 11:00:00 GMT", id="leading-space-differs"),
    pytest.param("Mon, 01 Jun 2026 11:00:00 GMT ", id="trailing-space-differs"),
    pytest.param("Mon,  01 Jun 2026 11:00:00 GMT", id="two-spaces-differs"),
    pytest.param("Mon, 01 Jun 2026 11:00:00", id="no-zone-differs"),
    pytest.param("Mon, 01 Jun 2026 11:00:00 CET", id="zone-name-rfc5322-lacks"),
    pytest.param("Mon, 01 Jun 2026 11:00:00 A", id="military-zone"),
    pytest.param("Mon, 01 Jun 2026 11:00:00 +0260", id="offset-minutes-out-of-range-differs"),
    pytest.param("Mon, 01 Jun 2026 24:00:00 GMT", id="hour-24-differs"),
    pytest.param("Mon, 01 Jun 2026 11:00:61 GMT", id="second-61-differs"),
    pytest.param("Mon, 01 Jun 126 11:00:00 GMT", id="three-digit-year-differs"),
    pytest.param("Sat, 01 Jan 0000 00:00:00 GMT", id="year-0000-differs"),
    pytest.param("Mun, 01 Jun 2026 11:00:00 GMT", id="no-such-weekday-differs"),
    pytest.param("Mon, 01 Jux 2026 11:00:00 GMT", id="no-such-month"),
    pytest.param("Mon, 01 Jun 2026 11:00:00 GMT+0200", id="gmt-and-offset-differs"),
    pytest.param("Mon, ٠١ Jun 2026 11:00:00 GMT", id="non-ascii-digits-differs"),
    pytest.param("Mon, 01 Jun 2026 11:00:00 ＧＭＴ", id="fullwidth-zone"),
    pytest.param("ſun, 01 Jun 2026 11:00:00 GMT", id="long-s-is-not-s-differs"),
    pytest.param("2026/06/01 11:00:00", id="slashes-differs"),
    pytest.param("06/01/2026", id="us-date-differs"),
    pytest.param("June 1, 2026", id="written-out-differs"),
    pytest.param("1780311600", id="epoch-seconds"),
]


@pytest.mark.parametrize("value", UNREADABLE + UNREADABLE_HTTP)
def test_unreadable_values_never_expire_and_warn_once_naming_the_interrupt(value: str) -> None:
    assert parse_expires_at(value) is None
    with collect_warnings() as sink:
        # Even at the end of time: an unreadable value never expires (IR-18).
        assert is_expired(interrupt(value, id="ask-42"), datetime.max) is False
    assert [w.code for w in sink.items] == ["IR-18"]
    assert "ask-42" in sink.items[0].message
    # Without a sink, the same one warning reaches Python's warnings.
    with pytest.warns(AguiWarning) as record:
        assert is_expired(interrupt(value, id="ask-42"), datetime.max) is False
    assert len(record) == 1
    assert "ask-42" in str(record[0].message)
