"""The retry policy (``core/retry.py``), sans-IO: which failures are sent again, and the waits between tries."""

from __future__ import annotations

import ssl
import threading
from typing import Any

import pytest

import agui_client as ag
from agui_client.core.retry import BACKOFF_CAP, RETRY_AFTER_CAP, retry_reason, verdict

NO_DEADLINE: dict[str, Any] = {"max_retries": 5, "backoff": 0.5, "retry_after": None, "remaining": None}


def _refused() -> ag.TransportError:
    return ag.TransportError("could not reach the agent", request_sent=False)


def test_the_backoff_doubles_from_its_base_up_to_the_cap() -> None:
    waits = [verdict("x", tries=tries, jitter=0.0, **{**NO_DEADLINE, "max_retries": 10}).wait for tries in range(1, 8)]

    # (the cap as docs/http.md states it, 8 s, not only as the constant says it)
    assert waits == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0] and BACKOFF_CAP == 8.0


def test_jitter_shortens_a_backoff_by_up_to_half_and_never_a_retry_after() -> None:
    assert verdict("x", tries=3, jitter=0.999, **NO_DEADLINE).wait == pytest.approx(1.0, abs=0.01)
    assert verdict("x", tries=3, jitter=0.999, **{**NO_DEADLINE, "retry_after": 7.0}).wait == 7.0


def test_no_retry_is_left_after_max_retries_tries_more() -> None:
    assert verdict("x", tries=2, jitter=0.0, **{**NO_DEADLINE, "max_retries": 2}).wait == 1.0
    refused = verdict("x", tries=3, jitter=0.0, **{**NO_DEADLINE, "max_retries": 2})
    assert refused.wait is None and refused.reason == "x; no retries left (max_retries=2)"


def test_a_retry_after_is_waited_up_to_the_cap_and_not_past_it() -> None:
    assert verdict("x", tries=1, jitter=0.0, **{**NO_DEADLINE, "retry_after": RETRY_AFTER_CAP}).wait == RETRY_AFTER_CAP
    assert verdict("x", tries=1, jitter=0.0, **{**NO_DEADLINE, "retry_after": RETRY_AFTER_CAP + 1}).wait is None


def test_a_wait_ending_past_the_deadline_is_not_made() -> None:
    assert verdict("x", tries=1, jitter=0.0, **{**NO_DEADLINE, "remaining": 0.6}).wait == 0.5
    assert verdict("x", tries=1, jitter=0.0, **{**NO_DEADLINE, "remaining": 0.5}).wait is None


@pytest.mark.parametrize(("status", "retried"), [(429, True), (503, True), (408, False), (500, False),
                                                 (502, False), (504, False), (401, False)])
def test_only_429_and_503_are_statuses_to_retry(status: int, retried: bool) -> None:
    error = ag.HTTPStatusError("no", status_code=status, retry_after=1.0)

    assert (retry_reason(error, connect_failed=False) is not None) is retried


def test_a_503_is_retried_only_with_a_retry_after_and_a_429_without_one_too() -> None:
    # (a proxy's 503 for an upstream that failed mid-request has none, and the agent may have acted)
    assert retry_reason(ag.HTTPStatusError("no", status_code=503), connect_failed=False) is None
    assert retry_reason(ag.HTTPStatusError("no", status_code=503, retry_after=0.0), connect_failed=False) == "HTTP 503"
    assert retry_reason(ag.HTTPStatusError("no", status_code=429), connect_failed=False) == "HTTP 429"


def test_a_failure_is_retried_only_when_the_connection_itself_failed_without_tls() -> None:
    assert retry_reason(_refused(), connect_failed=True) == "connection failed"
    assert retry_reason(ag.ConnectTimeout("slow", timeout=1.0), connect_failed=True) == (
        "no connection within the connect timeout")
    assert retry_reason(_refused(), connect_failed=False) is None  # (a write that failed, a bad URL)
    assert retry_reason(ag.TransportError("reset", request_sent=True), connect_failed=True) is None
    assert retry_reason(ag.RunTimeout("over", timeout=1.0, request_sent=False), connect_failed=True) is None
    tls = _refused()
    try:
        try:
            raise ssl.SSLCertVerificationError("certificate verify failed")
        except ssl.SSLError as exc:
            raise OSError("handshake") from exc
    except OSError as exc:
        tls.__cause__ = exc
    assert retry_reason(tls, connect_failed=True) is None


def test_a_backoff_far_past_the_cap_is_the_cap_not_an_overflow() -> None:
    # (2 ** 1024 is no float: max_retries=2000 raised OverflowError at the 1025th try in place of the run's error)
    many = {**NO_DEADLINE, "max_retries": 5000}
    assert verdict("x", tries=1500, jitter=0.0, **many).wait == BACKOFF_CAP
    assert verdict("x", tries=1500, jitter=0.0, **{**many, "backoff": 0.0}).wait == 0.0


def test_a_cause_chain_that_loops_is_judged_and_not_walked_for_ever() -> None:
    # An exception may be its own cause's context (raised while handling what it caused): the walk for a
    # TLS failure behind a refused connection must end, and find none in such a loop.
    first, second = OSError("refused"), OSError("while handling")
    first.__context__, second.__cause__ = second, first
    error = _refused()
    error.__cause__ = first
    judged: list[str | None] = []
    walker = threading.Thread(target=lambda: judged.append(retry_reason(error, connect_failed=True)), daemon=True)

    walker.start()
    walker.join(timeout=10)

    assert judged == ["connection failed"]
