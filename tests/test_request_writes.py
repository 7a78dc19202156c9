"""A request whose body never left whole (hardening issue 17, item 4).

An agent (or a proxy) that resets the connection after the first kilobyte of a large body has not
received the request: a resume that met it must say so (``request_sent=False``) and give the thread
back, as a connect failure does, instead of holding the claim as if the agent may have acted. httpx's
own transports report when the whole body is written (httpcore's ``trace``); a reset before then is
such a case, whatever exception httpx raises for it.
"""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator
from typing import Any

import pytest

import agui_client as ag
from agui_client.stores import MemoryStore
from agui_client.testing import Finish, ScriptedAgent, Start

#: A payload big enough that its body cannot fit in the loopback socket's buffers before the reset.
BIG = "x" * (8 * 2**20)


class Resetter:
    """A TCP server on 127.0.0.1 that reads 1 KiB of each request (or, ``whole``, all of it), then resets
    the connection (RST) without answering."""

    def __init__(self, *, whole: bool = False) -> None:
        self._whole = whole
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}/agent"
        self.connections = 0
        self.received = 0
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self._listener.accept()
            except OSError:
                return  # (closed)
            self.connections += 1
            with connection:
                taken = b""
                while len(taken) < self._wanted(taken):
                    chunk = connection.recv(65536 if self._whole else 1024 - len(taken))
                    if not chunk:
                        break
                    taken += chunk
                self.received += len(taken)
                # SO_LINGER with a zero timeout: close() sends a reset, not an orderly end.
                connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    def _wanted(self, taken: bytes) -> int:
        if not self._whole:
            return 1024
        head, found, _ = taken.partition(b"\r\n\r\n")
        if not found:
            return len(taken) + 1
        length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length:"))
        return len(head) + 4 + length

    def close(self) -> None:
        try:
            self._listener.shutdown(socket.SHUT_RDWR)  # (wakes the accept() the thread is blocked in)
        except OSError:
            pass
        self._listener.close()
        self._thread.join()


@pytest.fixture
def resetter() -> Iterator[Resetter]:
    server = Resetter()
    yield server
    server.close()


@pytest.fixture
def whole_resetter() -> Iterator[Resetter]:
    server = Resetter(whole=True)
    yield server
    server.close()


def _interrupted(*ids: str) -> Finish:
    return Finish(outcome=ag.RunFinishedInterruptOutcome(
        interrupts=tuple(ag.Interrupt(id=i, reason="approval") for i in ids)))


def _resumed_through(drive: Any, endpoint: Any, resetter: Resetter,
                     store: MemoryStore) -> tuple[str, pytest.ExceptionInfo[ag.TransportError]]:
    """A thread interrupted by the real agent, resumed with a large answer through ``resetter``."""
    with drive.client(endpoint.url, store=store) as client:
        thread = client.thread()
        thread.run("hi")
        thread_id = thread.id
    with drive.client(resetter.url, store=store) as reset:
        thread = reset.thread(thread_id)
        with pytest.raises(ag.TransportError) as caught:
            thread.run(resume=thread.resume_builder().answer("ask-1", BIG))
    return thread_id, caught


def test_a_resume_whose_body_was_cut_off_says_it_was_not_sent_and_gives_the_thread_back(
    drive: Any, served: Any, resetter: Resetter
) -> None:
    endpoint = served(ScriptedAgent([[Start(), _interrupted("ask-1")], [Start(), Finish()]]))
    store = MemoryStore()
    thread_id, caught = _resumed_through(drive, endpoint, resetter, store)

    assert resetter.connections == 1 and resetter.received == 1024  # (the body went no further)
    error = caught.value
    assert error.request_sent is False
    assert "not written whole" in str(error)
    assert not getattr(error, "claim_held", False)
    stored = store.load(thread_id)
    assert stored is not None and stored.claim is None  # given back, as after a connect failure

    # Nothing reached the agent, so answering again (here, to the real agent) is no second send.
    with drive.client(endpoint.url, store=store) as client:
        thread = client.thread(thread_id)
        result = thread.run(resume=thread.resume_builder().answer("ask-1", "go"))
    assert result.outcome == "success"
    assert endpoint.agent.request_count == 2


def test_a_request_cut_off_while_written_is_never_sent_again_by_a_retry(drive: Any, resetter: Resetter) -> None:
    # Nothing reached the agent whole, but the connection was made: retries send again only a request
    # whose connection failed, so the write that failed is raised at once, whatever max_retries says.
    with drive.client(resetter.url, max_retries=2, retry_backoff=0) as client:
        with pytest.raises(ag.TransportError) as caught:
            client.thread().run(BIG)

    assert caught.value.request_sent is False and caught.value.tries == 1
    assert resetter.connections == 1


def test_a_resume_written_whole_before_the_connection_was_reset_keeps_its_claim(
    drive: Any, served: Any, whole_resetter: Resetter
) -> None:
    # The other side of the rule: a body written whole may have been acted on, so the claim stays.
    endpoint = served(ScriptedAgent([[Start(), _interrupted("ask-1")]]))
    store = MemoryStore()
    thread_id, caught = _resumed_through(drive, endpoint, whole_resetter, store)

    assert whole_resetter.received > len(BIG)
    assert caught.value.request_sent is True and getattr(caught.value, "claim_held", False) is True
    stored = store.load(thread_id)
    assert stored is not None and stored.claim is not None
