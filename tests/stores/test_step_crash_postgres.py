"""An append to a PostgresStore killed at every step leaves the thread before it or after it, never between.

``step_crash_writer_postgres.py`` appends one run's change to a thread that already holds some, and
SIGKILLs itself at statement K (just before it is sent, or just after its reply), for K = 1, 2, ...
until a writer finishes its append without reaching K. Twice: for an append alone (one statement),
and for an append that triggers a compaction (the append, then the load of the thread, folded with no
lock held, then one transaction of the conditional folding update; a kill after the update's reply
lands before the transaction's commit, so the fold is lost with it); and once more for a record without an
id, whose fold's transaction first locks the row and reads it again. After every kill a fresh store must load
the thread as exactly the data before the append
or exactly the data after it (built here with ``apply_changes``), at the version that goes with it;
and the thread must take the next claim, release and append as usual.

The append is one autocommitted statement, so which of the two a kill leaves is known for each step:
before it, the append has not happened; after it, it has; and the compaction, whether it committed or
not, never shows in what a load returns (only in how many changes it folds).

A last case loses an append's reply (a proxy lets it commit and cuts the connection before the answer):
the store must not send it again.
"""

from __future__ import annotations

import copy
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import step_crash_writer_postgres
from step_crash_writer_postgres import change
from zygote import Zygote

from agui_client.stores import PostgresStore, apply_changes

__all__: list[str] = []

THREAD_ID = "step-crash"


@pytest.fixture
def table(postgres_dsn: str) -> Iterator[str]:
    import psycopg
    from psycopg import sql

    name = f"agui_step_{uuid.uuid4().hex}"
    yield name
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}, {}").format(sql.Identifier(name),
                                                                   sql.Identifier(f"{name}_changes")))


@pytest.fixture
def writers(tmp_path: Path) -> Iterator[Zygote]:
    """The writers, each forked from one zygote (``zygote.py``): a kill costs a fork, not an interpreter."""
    with Zygote(Path(step_crash_writer_postgres.__file__), tmp_path / "writers.err") as zygote:
        yield zygote


def run_writer(writers: Zygote, config: dict[str, Any]) -> int | None:
    """Run one writer; the steps it took when it finished, ``None`` when it killed itself."""
    returncode, lines = writers.run(config)
    if returncode == -signal.SIGKILL:
        assert lines == []
        return None
    # (the writers so far all finished or were killed without a word on stderr)
    assert (returncode, writers.stderr.read_text()) == (0, ""), writers.stderr.read_text()
    return int("".join(lines).split()[1])


@pytest.mark.parametrize("compact, without_id", [(False, False), (True, False), (True, True)],
                         ids=["append", "append+compaction", "append+compaction-of-a-record-without-an-id"])
@pytest.mark.parametrize("when", ["before", "after"])
def test_an_append_killed_at_any_statement_leaves_the_thread_before_or_after_it(
        postgres_dsn: str, table: str, writers: Zygote, compact: bool, without_id: bool, when: str) -> None:
    import psycopg
    from psycopg import sql

    with PostgresStore(postgres_dsn, table=table) as store:
        store.save(THREAD_ID, {"messages": [{"id": "u0", "role": "user", "content": "hi"}]}, expected_version=None)
        for turn in (1, 2):
            store.append(THREAD_ID, change(turn), expected_version=turn)
    if without_id:  # (a record an earlier release made: its compaction locks the row and reads it again)
        with psycopg.connect(postgres_dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("UPDATE {} SET record_id = NULL").format(sql.Identifier(table)))
    turn = 3
    outcomes: list[tuple[int, str, int]] = []
    steps: int | None = None
    for kill_at in range(1, 20):
        with PostgresStore(postgres_dsn, table=table) as store:
            before = store.load(THREAD_ID)
        assert before is not None
        after = apply_changes(copy.deepcopy(before.data), [change(turn)])
        config = {"dsn": postgres_dsn, "table": table, "thread_id": THREAD_ID, "turn": turn, "compact": compact,
                  "kill_at": kill_at, "when": when}

        steps = run_writer(writers, config)

        with PostgresStore(postgres_dsn, table=table) as store:
            stored = store.load(THREAD_ID)
            assert stored is not None
            if (stored.version, stored.data) == (before.version, before.data):
                outcome = "before"
            else:
                assert (stored.version, stored.data) == (before.version + 1, after), f"torn at step {kill_at}"
                outcome = "after"
            assert stored.claim is None
            outcomes.append((kill_at, outcome, stored.changes))
            # The thread goes on: a claim, a release and the next turn's append all land.
            claimed = store.claim(THREAD_ID, expected_version=stored.version, owner="next")
            released = store.release(THREAD_ID, claimed_version=claimed, owner="next")
            turn = len(stored.data["messages"])
            version = store.append(THREAD_ID, change(turn), expected_version=released)
            again = store.load(THREAD_ID)
            assert again is not None
            assert (again.version, again.data) == (version, apply_changes(copy.deepcopy(stored.data), [change(turn)]))
            turn += 1
        if steps is not None:
            break

    # The append is one statement; its compaction two more: the load it folds (no lock held while it
    # folds) and the folding update, conditional on the version, change count and record id loaded;
    # for a record without an id, two more in the update's transaction: the row's lock and its read.
    assert steps == (1 if not compact else 5 if without_id else 3)
    landed = [outcome for _, outcome, _ in outcomes[:-1]]
    assert landed == (["after"] * steps if when == "after" else ["before"] + ["after"] * (steps - 1))
    assert outcomes[-1][1] == "after"
    if compact:
        # Folded only once the transaction committed: when the writer finished (a kill even after the
        # folding update's reply lands before the commit, and the fold rolls back).
        folded = [kill_at for kill_at, _, changes in outcomes if changes == 0]
        assert folded == [steps + 1]


def test_an_append_whose_reply_was_lost_is_not_sent_again(postgres_dsn: str, table: str) -> None:
    # The append reaches the server and commits; its reply is lost with the connection. Sent again it
    # would be refused by its own landing, so the store reports the lost connection (StoreError) and
    # the writer finds its change, once, when it loads the thread.
    from psycopg.conninfo import conninfo_to_dict, make_conninfo
    from test_lost_reply import ClaimCutter, Wire

    from agui_client.errors import ConcurrentResume, StoreError

    appends = Wire(claim=lambda data: b"INSERT INTO" in data and b"_changes" in data,
                   answered=lambda data: b"Z\x00\x00\x00\x05" in data)
    cutter = ClaimCutter(int(conninfo_to_dict(postgres_dsn).get("port") or 5432), appends)
    try:
        with PostgresStore(postgres_dsn, table=table) as direct:
            direct.save(THREAD_ID, {"messages": [{"id": "u0", "role": "user", "content": "hi"}]},
                        expected_version=None)
            with PostgresStore(make_conninfo(postgres_dsn, host="127.0.0.1", port=str(cutter.port)),
                               table=table) as cut:
                cutter.cut_next_claim()
                with pytest.raises(StoreError) as caught:
                    cut.append(THREAD_ID, change(1), expected_version=1)
                stored = cut.load(THREAD_ID)
            with pytest.raises(ConcurrentResume):
                direct.append(THREAD_ID, change(1), expected_version=1)
    finally:
        cutter.close()

    assert cutter.cuts == 1
    assert not isinstance(caught.value, ConcurrentResume) and caught.value.thread_id == THREAD_ID
    assert stored is not None and (stored.version, stored.changes) == (2, 1)
    assert [m["id"] for m in stored.data["messages"]] == ["u0", "a1"]
