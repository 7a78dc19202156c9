"""A claim whose reply is lost: the server ran it, the connection dropped before the answer came back.

A small TCP proxy on 127.0.0.1 stands between the client and the session's real redis-server (or
PostgreSQL server). It forwards everything, except that, when told to, it lets a claim (the store's
script called with the ``claim`` operation; the claim's ``UPDATE``, or the ``INSERT`` of a new
thread's row) reach the server and run to its commit, throws the reply away and cuts the client's
connection, as a network fault would. The server then holds the claim, under the writer's owner token,
while the writer never learnt it holds it, so it sent nothing.

* Cut once: the store sends the claim again on a fresh connection, once (the proxy counts the claims
  the server ran: two), the claim is recognised as its owner's, and the run goes on as if nothing
  happened (one request reaches the agent).
* Cut, and the server unreachable for a while: the run fails with ``StoreError`` (nothing sent) and
  the record stays claimed. Another writer is refused (``ConcurrentResume``); once it is back, the
  writer's own next run (directly, or after ``reload()``) takes its claim up and sends, once.

Both shells run every case (``drive``), against both stores.
"""

from __future__ import annotations

import socket
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

import agui_client as ag
from agui_client.stores import PostgresStore, RedisStore, ThreadStore
from agui_client.testing import Finish, Respond, ScriptedAgent, Start

__all__: list[str] = []

class Wire(NamedTuple):
    """How a claim and its answer look on one server's wire."""

    #: Does this chunk from the client carry a claim?
    claim: Callable[[bytes], bool]
    #: Does this chunk from the server hold the end of the claim's answer (so it ran, and committed)?
    answered: Callable[[bytes], bool]


#: Redis: the script's first argument is the operation, as a RESP bulk string; an array is the
#: script's answer (a "-" error, NOSCRIPT say, means it never ran).
REDIS_WIRE = Wire(claim=lambda data: b"$5\r\nclaim\r\n" in data, answered=lambda data: data.startswith(b"*"))
#: PostgreSQL: the statement's text travels in its Parse message every time (the store prepares no
#: statements): the claim's conditional UPDATE (``claim = $n``: an append's sets ``claim = NULL``), or
#: the INSERT of a thread's first write (its ``ON CONFLICT (thread_id) DO NOTHING``: an append's insert
#: of its change row names another conflict), which on the cut connection is always the first turn's
#: claim. ReadyForQuery ("Z", length 5) ends the answer, after the commit.
POSTGRES_WIRE = Wire(claim=lambda data: b"version + 1, claim = $" in data
                     or b"ON CONFLICT (thread_id) DO NOTHING" in data,
                     answered=lambda data: b"Z\x00\x00\x00\x05" in data)


class ClaimCutter:
    """A TCP proxy in front of a store's server that can lose the reply to a claim.

    ``cut_next_claim(then_down=...)``: the next claim reaches the server and runs; its reply is dropped
    and the client's connection closed (``cuts`` counts them). With ``then_down`` every connection is
    closed as soon as it is accepted from then on, until :meth:`bring_up`.
    """

    def __init__(self, target_port: int, wire: Wire) -> None:
        self._target = ("127.0.0.1", target_port)
        self._wire = wire
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._armed = False
        self._then_down = False
        self._down = False
        self.cuts = 0
        #: Claims sent to the server, and the claim scripts Redis did not run for want of the script
        #: (``NOSCRIPT``: redis-py then loads it and sends the claim again): claims run = the difference.
        self.claims = 0
        self.unrun = 0
        self._sockets: list[socket.socket] = []
        self._threads = [threading.Thread(target=self._accept, daemon=True)]
        self._threads[0].start()

    def cut_next_claim(self, *, then_down: bool = False) -> None:
        with self._lock:
            self._armed, self._then_down = True, then_down

    def bring_up(self) -> None:
        with self._lock:
            self._down = False

    def close(self) -> None:
        # Closing a listening socket does not wake a thread blocked in accept() on Linux (it would wait
        # out the join below): shutting it down does.
        try:
            self._listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # (not listening any more)
        self._listener.close()
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            _shut(sock)
        for thread in list(self._threads):
            thread.join(10)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # (closed)
            with self._lock:
                down = self._down
            if down:
                _shut(client)
                continue
            server = socket.create_connection(self._target)
            doomed = threading.Event()
            with self._lock:
                self._sockets += [client, server]
            for pump, source, sink in ((self._upstream, client, server), (self._downstream, server, client)):
                thread = threading.Thread(target=pump, args=(source, sink, doomed), daemon=True)
                thread.start()
                self._threads.append(thread)

    def _upstream(self, client: socket.socket, server: socket.socket, doomed: threading.Event) -> None:
        try:
            while data := client.recv(65536):
                if self._wire.claim(data):
                    with self._lock:
                        self.claims += 1
                        if self._armed:
                            self._armed = False
                            doomed.set()
                server.sendall(data)
        except OSError:
            pass
        _shut(client, server)

    def _downstream(self, server: socket.socket, client: socket.socket, doomed: threading.Event) -> None:
        try:
            while data := server.recv(65536):
                if data.startswith(b"-NOSCRIPT"):
                    with self._lock:
                        self.unrun += 1
                if doomed.is_set() and self._wire.answered(data):
                    with self._lock:
                        self.cuts += 1
                        self._down = self._then_down
                    break
                client.sendall(data)
        except OSError:
            pass
        _shut(client, server)


def _shut(*sockets: socket.socket) -> None:
    for sock in sockets:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        sock.close()


class Stores(NamedTuple):
    """Two ways to one store: ``direct()`` to the server, ``cut()`` through the cutter."""

    direct: Callable[[], ThreadStore]
    cut: Callable[[], ThreadStore]
    cutter: ClaimCutter


@pytest.fixture(params=["redis", "postgres"])
def stores(request: pytest.FixtureRequest) -> Iterator[Stores]:
    if request.param == "redis":
        url: str = request.getfixturevalue("redis_url")
        proxy = ClaimCutter(int(url.rsplit(":", 1)[1].split("/")[0]), REDIS_WIRE)
        prefix = f"agui:cut:{uuid.uuid4().hex}:"
        made = Stores(direct=lambda: RedisStore(url, prefix=prefix),
                      cut=lambda: RedisStore(f"redis://127.0.0.1:{proxy.port}/0", prefix=prefix), cutter=proxy)
    else:
        dsn: str = request.getfixturevalue("postgres_dsn")
        params = conninfo_to_dict(dsn)
        proxy = ClaimCutter(int(params.get("port") or 5432), POSTGRES_WIRE)
        table = f"agui_cut_{uuid.uuid4().hex}"
        cut_dsn = make_conninfo(dsn, host="127.0.0.1", port=str(proxy.port))
        # The table exists before the cut store opens, so its opening (which may create it) sends no INSERT.
        PostgresStore(dsn, table=table).close()
        made = Stores(direct=lambda: PostgresStore(dsn, table=table),
                      cut=lambda: PostgresStore(cut_dsn, table=table), cutter=proxy)
    try:
        yield made
    finally:
        proxy.close()


def _agent(turn: str) -> ScriptedAgent:
    asks = Finish(outcome=ag.RunFinishedInterruptOutcome(interrupts=(ag.Interrupt(id="ask-1", reason="approval"),)))
    return ScriptedAgent([[Start(), asks], [Start(), Finish()]] if turn == "resume" else [[Start(), Finish()]])


def _attempt(thread: Any, turn: str) -> dict[str, Any]:
    if turn == "resume":
        return {"resume": thread.resume_builder().answer("ask-1", "go")}
    return {"message": "the first turn"}


@pytest.mark.parametrize("turn", ["first", "resume"])
def test_a_claim_whose_reply_was_lost_once_is_sent_again_and_recognised(
    drive: Any, served: Any, stores: Stores, turn: str
) -> None:
    endpoint = served(_agent(turn))
    thread_id, cutter = "t", stores.cutter

    with stores.direct() as direct, stores.cut() as cut_store, \
            drive.client(endpoint.url, store=direct) as setup, drive.client(endpoint.url, store=cut_store) as client:
        if turn == "resume":
            setup.thread(thread_id).run("hello")
        before = endpoint.agent.request_count
        writer = client.thread(thread_id)
        claims = cutter.claims - cutter.unrun
        cutter.cut_next_claim()
        result = writer.run(**_attempt(writer, turn))
        stored = direct.load(thread_id)

    # (sent once more, as docs/stores.md says: the cut one ran, and the one sent again found it)
    assert cutter.cuts == 1 and cutter.claims - cutter.unrun - claims == 2
    assert result.outcome == "success" and endpoint.agent.request_count == before + 1
    assert stored is not None and (stored.version, stored.claim) == ((1, None) if turn == "first" else (3, None))


@pytest.mark.parametrize("then", ["run again", "reload and run"])
@pytest.mark.parametrize("turn", ["first", "resume"])
def test_a_claim_whose_reply_was_lost_is_taken_up_by_its_owner_and_refused_to_others(
    drive: Any, served: Any, stores: Stores, turn: str, then: str
) -> None:
    endpoint = served(_agent(turn))
    thread_id, cutter = "t", stores.cutter

    with stores.direct() as direct, stores.cut() as cut_store, \
            drive.client(endpoint.url, store=direct) as elsewhere, \
            drive.client(endpoint.url, store=cut_store) as client:
        if turn == "resume":
            elsewhere.thread(thread_id).run("hello")
        loaded = direct.load(thread_id)
        before = endpoint.agent.request_count
        writer = client.thread(thread_id)
        cutter.cut_next_claim(then_down=True)
        with pytest.raises(ag.StoreError):
            writer.run(**_attempt(writer, turn))
        held = direct.load(thread_id)
        sent_while_held = endpoint.agent.request_count
        other = elsewhere.thread(thread_id)
        with pytest.raises(ag.ConcurrentResume) as refused:
            other.run(**_attempt(other, turn))
        cutter.bring_up()
        if then == "reload and run":
            writer.reload()
        result = writer.run(**_attempt(writer, turn))
        stored = direct.load(thread_id)
        with pytest.raises(ag.ConcurrentResume):
            other.run(**_attempt(other, turn))  # (still refused: its copy is stale now)

    claimed_at = 0 if loaded is None else loaded.version + 1
    assert cutter.cuts == 1
    assert held is not None and held.version == claimed_at and held.claim is not None
    assert (sent_while_held, refused.value.thread_id) == (before, thread_id)
    assert result.outcome == "success" and endpoint.agent.request_count == before + 1
    assert endpoint.agent.requests[-1].run_id == result.run_id
    assert stored is not None and (stored.version, stored.claim) == (claimed_at + 1, None)


def test_a_claim_taken_up_and_then_held_after_a_resume_is_not_taken_again_after_reload(
    drive: Any, served: Any, stores: Stores
) -> None:
    # Once the owner took its lost claim up and sent under it, the claim is one it knows it holds: a
    # resume that may have reached the agent keeps it, and a reload() must not pass it off as lost.
    asks = Finish(outcome=ag.RunFinishedInterruptOutcome(interrupts=(ag.Interrupt(id="ask-1", reason="approval"),)))
    endpoint = served(ScriptedAgent([[Start(), asks], Respond(status=500, body="broke"), [Start(), Finish()]]))
    thread_id, cutter = "t", stores.cutter

    with stores.direct() as direct, stores.cut() as cut_store, \
            drive.client(endpoint.url, store=direct) as elsewhere, \
            drive.client(endpoint.url, store=cut_store) as client:
        elsewhere.thread(thread_id).run("hello")
        writer = client.thread(thread_id)
        cutter.cut_next_claim(then_down=True)
        with pytest.raises(ag.StoreError):
            writer.run(**_attempt(writer, "resume"))
        cutter.bring_up()
        with pytest.raises(ag.HTTPStatusError):
            writer.run(**_attempt(writer, "resume"))
        sent = endpoint.agent.request_count
        writer.reload()
        with pytest.raises(ag.ConcurrentResume):
            writer.run(**_attempt(writer, "resume"))
        stored = direct.load(thread_id)

    assert (sent, endpoint.agent.request_count) == (2, 2)
    assert stored is not None and stored.claim is not None
