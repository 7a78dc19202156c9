"""What the client logs of a store's error goes through the run's redactor.

A store of the application's own may say anything in its errors: the thread it was handed (an agent
may have echoed the caller's token into a message), or a credential it shares with the agent's
endpoint. Two failures are logged rather than raised, so the caller never sees them to redact: a
claim that failed (the claim may be held; the run raises the store's error, and the log line says
how to take it up) and a claim that could not be given back after the run failed (the run's own error
is raised). Both lines carry the store's text, and must not carry the credential of the request.

A real agent on 127.0.0.1 runs the thread through both shells; the store is a ``MemoryStore`` whose
claim or release fails quoting the request's bearer token and API key.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

import agui_client as ag
from agui_client.stores import MemoryStore
from agui_client.testing import Finish, Respond, ScriptedAgent, Start

__all__: list[str] = []

MARK = "[redacted]"
TOKEN = "sk-live-6f1c2b9e8d7a4c3b"
API_KEY = "ak_9c1d2e7f0a55bb"
HEADERS = {"Authorization": f"Bearer {TOKEN}", "X-Api-Key": API_KEY}


class QuotingStore(MemoryStore):
    """A store of the application's own whose ``failing`` write fails with an error quoting the credential
    it shares with the agent's endpoint (as a store behind the same API gateway would)."""

    def __init__(self, failing: str) -> None:
        super().__init__()
        self.failing = failing

    def claim(self, thread_id: str, **arguments: Any) -> int:
        if self.failing == "claim":
            raise ag.StoreError(f"PUT /threads/{thread_id}/claim with Authorization: Bearer {TOKEN} "
                                f"(x-api-key {API_KEY}): 503 from the thread service")
        return super().claim(thread_id, **arguments)

    def release(self, thread_id: str, **arguments: Any) -> int:
        if self.failing == "release":
            raise ag.StoreError(f"POST /threads/{thread_id}/release as {TOKEN}: 503 from the thread service")
        return super().release(thread_id, **arguments)


def _logged(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records
            if record.name == "agui_client" and record.levelno >= logging.WARNING]


@pytest.mark.parametrize("headers_of", ["client", "run"])
def test_a_failed_claims_log_line_hides_the_credential_the_stores_error_quotes(
        drive: Any, served: Any, caplog: pytest.LogCaptureFixture, headers_of: str) -> None:
    # Nothing was sent yet: the redactor is the one of the request the client would send, with the
    # client's headers or the run's own.
    endpoint = served(ScriptedAgent([[Start(), Finish()]]))
    store = QuotingStore("claim")
    client_headers, run_headers = (HEADERS, None) if headers_of == "client" else (None, HEADERS)

    with caplog.at_level(logging.WARNING, logger="agui_client"), \
            drive.client(endpoint.url, store=store, headers=client_headers) as client:
        thread = client.thread("t1")
        with pytest.raises(ag.StoreError):
            thread.run("hello", headers=run_headers)

    lines = _logged(caplog)
    assert endpoint.agent.request_count == 0
    assert len(lines) == 1 and "the store failed while claiming it" in lines[0]
    assert MARK in lines[0] and "503 from the thread service" in lines[0]
    assert TOKEN not in lines[0] and API_KEY not in lines[0]


def test_a_failed_release_after_a_failed_run_logs_the_stores_error_without_the_credential(
        drive: Any, served: Any, caplog: pytest.LogCaptureFixture) -> None:
    # The request went out and failed (HTTP 500): the claim is given back, the store fails, and the run's
    # own error is raised while the store's is logged, through the redactor of the request sent.
    endpoint = served(ScriptedAgent([Respond(status=500, body="broke")]))
    store = QuotingStore("release")

    with caplog.at_level(logging.WARNING, logger="agui_client"), \
            drive.client(endpoint.url, store=store, headers=HEADERS) as client:
        thread = client.thread("t1")
        with pytest.raises(ag.HTTPStatusError):
            thread.run("hello")

    lines = [line for line in _logged(caplog) if "could not release its claim" in line]
    assert endpoint.agent.request_count == 1
    assert len(lines) == 1 and MARK in lines[0] and "503 from the thread service" in lines[0]
    assert TOKEN not in lines[0]
