"""A SqliteStore writer SIGKILLed at every statement of an append, and of the compaction it triggers.

``step_crash_writer_sqlite.py`` appends one known change to a thread that holds a record's data and
two changes, and SIGKILLs itself just before SQLite runs statement K, or just after the call that
ran it returned (K counted by the connection's trace callback). The test runs K = 1, 2, ... until
the writer finishes without reaching K. After every kill a fresh store opens the file and finds:

* the thread is exactly the data before the append or after it (a model built with
  ``apply_changes``), at the version that goes with it: never torn, never half-folded;
* ``load`` succeeds (the head and the parts agree);
* once a kill leaves the append in place, every later K does too, and once a kill leaves the
  changes folded, every later K does too (the steps only move forward);
* the thread goes on: a claim and a next append land, and load returns the model with them.
"""

from __future__ import annotations

import copy
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from backendkit import small
from step_crash_writer_sqlite import policy
from test_incremental_record import run_change
from zygote import Zygote

from agui_client.stores import SqliteStore, apply_changes

__all__: list[str] = []

WRITER = Path(__file__).with_name("step_crash_writer_sqlite.py")
THREAD_ID = "step-thread"
#: The two changes the record holds before the append; the append's change is the third.
EARLIER = [run_change(1), run_change(2)]
CHANGE = run_change(3)
#: More statements than an append and a compaction take together: the loop must end before this.
MAX_STEPS = 40


def prepare(path: Path, *, without_id: bool = False) -> dict[str, Any]:
    """A record of data plus two appended changes (version 3), with no record id if ``without_id`` (as
    an earlier release made it); returns the data it loads as."""
    with SqliteStore(path, compaction=policy(False)) as store:
        store.save(THREAD_ID, small(1), expected_version=None)
        for version, change in enumerate(EARLIER, start=1):
            store.append(THREAD_ID, change, expected_version=version)
    if without_id:
        with closing(sqlite3.connect(path, isolation_level=None)) as conn:
            conn.execute("UPDATE agui_threads SET record_id = NULL")
    return apply_changes(small(1), copy.deepcopy(EARLIER))


@pytest.fixture
def writers(tmp_path: Path) -> Iterator[Zygote]:
    """The writers, each forked from one zygote (``zygote.py``): a kill costs a fork, not an interpreter."""
    with Zygote(WRITER, tmp_path / "writers.err") as zygote:
        yield zygote


def run_writer(writers: Zygote, path: Path, *, kill_at: int, when: str, compact: bool) -> tuple[int, list[str]]:
    config = {"path": str(path), "thread_id": THREAD_ID, "change": CHANGE, "compact": compact,
              "kill_at": kill_at, "when": when}
    returncode, lines = writers.run(config)
    assert returncode in (0, -9), writers.stderr.read_text()
    return returncode, [line.rstrip("\n") for line in lines]


@pytest.mark.parametrize("when", ["before", "after"])
@pytest.mark.parametrize("compact, without_id", [(False, False), (True, False), (True, True)],
                         ids=["append", "append+compaction", "append+compaction-of-a-record-without-an-id"])
def test_a_writer_killed_at_any_statement_leaves_the_thread_before_or_after(
    tmp_path: Path, writers: Zygote, when: str, compact: bool, without_id: bool
) -> None:
    outcomes: list[tuple[int, int]] = []  # (append landed, changes folded) per kill
    for kill_at in range(1, MAX_STEPS):
        path = tmp_path / f"threads-{kill_at}.db"
        before = prepare(path, without_id=without_id)
        after = apply_changes(copy.deepcopy(before), [copy.deepcopy(CHANGE)])

        returncode, lines = run_writer(writers, path, kill_at=kill_at, when=when, compact=compact)

        with SqliteStore(path, compaction=policy(False)) as store:
            stored = store.load(THREAD_ID)
            assert stored is not None, f"K={kill_at}"
            landed = stored.version == 4
            assert (stored.version, stored.data) in ((3, before), (4, after)), f"K={kill_at}: {lines[-1:]}"
            assert stored.claim is None
            assert stored.changes == (3 if landed else 2) or (compact and landed and stored.changes == 0)
            outcomes.append((int(landed), int(stored.changes == 0)))

            claimed = store.claim(THREAD_ID, expected_version=stored.version, owner="next")
            nxt = {**run_change(9), "messagesFrom": len(stored.data["messages"])}
            version = store.append(THREAD_ID, nxt, expected_version=claimed)
            again = store.load(THREAD_ID)
            assert again is not None and (again.version, again.claim) == (stored.version + 2, None)
            assert again.data == apply_changes(copy.deepcopy(stored.data), [nxt]) and version == again.version

        if returncode == 0:
            break
        assert lines[-1] == f"step {kill_at} " + lines[-1].split(" ", 2)[2], f"K={kill_at}: killed elsewhere"
    else:
        pytest.fail(f"the writer never finished within {MAX_STEPS} statements")

    # The last run finished: it reached no kill, and its statements are the whole append.
    steps = [line.split(" ", 2)[2].split()[0] for line in lines if line.startswith("step ")]
    assert lines[-1] == "done 4" and len(outcomes) == len(steps) + 1
    # (the schema cookie, the head, the change part, the head)
    append = ["BEGIN", "PRAGMA", "SELECT", "INSERT", "UPDATE", "COMMIT"]
    # (the read, outside any transaction; then the cookie, the head, part 0, the changes: the fold holds no lock)
    compaction = ["SELECT", "BEGIN", "PRAGMA", "UPDATE", "UPDATE", "DELETE", "COMMIT"]
    if without_id:  # (its parts read again under the lock, to be the very ones folded)
        compaction.insert(3, "SELECT")
    assert steps == append + (compaction if compact else [])
    # The steps only move forward: the append lands at its COMMIT, the fold at the compaction's.
    assert outcomes == sorted(outcomes)
    assert outcomes[-1] == (1, int(compact))
    assert (0, 0) in outcomes and (1, 0) in outcomes  # (with a compaction: killed between its transactions)
