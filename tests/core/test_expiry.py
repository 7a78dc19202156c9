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

from agui_client.wire.sink import collect_warnings
from agui_client.errors import AguiWarning
from agui_client.core.interrupts import is_expired, parse_expires_at
from agui_client.types.run import Interrupt

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


@pytest.mark.parametrize("value", UNREADABLE)
def test_unreadable_values_never_expire_and_warn_once_naming_the_interrupt(value: str) -> None:
    assert parse_expires_at(value) is None
    with pytest.warns(AguiWarning) as record:
        # Even at the end of time: an unreadable value never expires (IR-18).
        assert is_expired(interrupt(value, id="ask-42"), datetime.max) is False
    assert len(record) == 1
    assert "ask-42" in str(record[0].message)


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
