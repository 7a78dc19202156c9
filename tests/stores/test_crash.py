"""A writer killed with SIGKILL at random points never leaves a torn or a lost thread.

``crash_writer.py`` saves one interrupted thread in a loop, with growing data, and reports every
write that returned. It is killed with SIGKILL (no cleanup, no flush, no atexit) after a number of
writes drawn from a seeded RNG, in one of three ways, also drawn:

* the test kills it on reading a ``saved`` report (the kill lands in the next data build or save);
* the test kills it on reading a ``begin`` report (the kill lands early in the save);
* the writer kills itself a seeded delay of 0 to 3 ms after a ``begin`` (a save takes about a
  millisecond), so kills also land deep inside the save: mid-transaction, in the commit, in a WAL
  checkpoint, between a Redis request and its reply.

Then a new store object loads the thread and checks that it is

* whole: its checksum matches, and it is exactly the data the writer built for its ``seq``;
* consistent: the version matches the data (the version the save was meant to create, one more if a
  claim was taken, two more if a dead writer's claim was released);
* durable: never older than the last version any writer reported as saved.

Each writer is a child forked from one zygote that imported it once (``zygote.py``): a process of
its own, opening its own store, for the price of a fork. The next writer continues from what it
finds (releasing a claim a killed writer left), so each of the 20 kills per store also tests
recovery from the previous one.
"""

from __future__ import annotations

import random
import signal
import uuid
from pathlib import Path
from typing import Any

import crash_writer
import pytest
from crash_writer import checksum, open_store, thread_data
from zygote import Zygote

from agui_client.core.fold import ThreadState
from agui_client.stores import StoredThread

__all__: list[str] = []

KILLS = 20
MAX_SAVES_BEFORE_KILL = 25
THREAD_ID = "crash-thread"


def run_until_killed(writers: Zygote, config: dict[str, Any], *, saves: int, on: str) -> list[str]:
    """Fork a writer and have it SIGKILLed once it reported ``saves`` writes.

    ``on`` is ``"saved"`` or ``"begin"`` (the test kills it on reading the next such line) or
    ``"timer"`` (the writer kills itself, ``config["kill_delay"]`` after the next ``begin``).
    Returns every line it printed, including any it got out between the kill decision and its death:
    those writes were reported too, so they must be durable as well.
    """
    if on == "timer":
        config = {**config, "kill_after": saves}
    saved = 0

    def kill_on(line: str) -> bool:
        nonlocal saved
        word = line.split()[0]
        saved += word == "saved"
        return saved >= saves and word == on

    code, lines = writers.run(config, kill_on=kill_on)
    assert code == -signal.SIGKILL, f"the writer exited {code}:\n{writers.stderr.read_text()}"
    return lines


def check_whole_and_durable(stored: StoredThread | None, *, reported: int, owners: set[str]) -> None:
    """The loaded thread is one complete write, and no older than the newest reported one."""
    assert stored is not None, "the thread vanished"
    crash = stored.data["crash"]
    seq, expected = crash["seq"], crash["expectedVersion"]
    assert crash["checksum"] == checksum(stored.data), f"torn data at version {stored.version}"
    assert stored.data == thread_data(seq, thread_id=THREAD_ID, expected_version=expected)
    if stored.claim is None:
        # Saved (expected), or claimed and then released by the next writer (expected + 2).
        assert stored.version in (expected, expected + 2), (stored.version, expected)
    else:
        assert (stored.version, stored.claim in owners) == (expected + 1, True)
    assert stored.version >= reported, f"version {reported} was reported saved, but the store holds {stored.version}"
    thread = ThreadState.load(stored.data)
    assert [i.id for i in thread.open_interrupts] == [f"int-{seq}-a", f"int-{seq}-b"]


# Twenty killed writers per store; a generous watchdog for a loaded machine, not a timing.
@pytest.mark.timeout(600)
@pytest.mark.parametrize("kind", ["sqlite", "redis", "postgres"])
def test_a_killed_writer_leaves_a_whole_durable_thread(kind: str, request: pytest.FixtureRequest,
                                                        tmp_path: Path) -> None:
    if kind == "sqlite":
        target = str(tmp_path / "crash.db")
    elif kind == "postgres":
        target = request.getfixturevalue("postgres_dsn")
    else:
        target = request.getfixturevalue("redis_url")
    config: dict[str, Any] = {"kind": kind, "target": target, "prefix": f"agui:crash:{uuid.uuid4().hex}:",
                              "table": f"agui_crash_{uuid.uuid4().hex}", "thread_id": THREAD_ID}
    rng = random.Random(f"crash-{kind}")
    reported = 0
    owners: set[str] = set()
    seqs: list[int] = []
    # One zygote forks the twenty writers (zygote.py): a kill costs a fork, not an interpreter start.
    with Zygote(Path(crash_writer.__file__), tmp_path / "writers.err") as writers:
        for kill in range(KILLS):
            owner = f"writer-{kill}"
            owners.add(owner)
            writer = {**config, "owner": owner, "seed": rng.randrange(2**32), "kill_delay": rng.uniform(0, 0.003)}
            lines = run_until_killed(writers, writer, saves=rng.randint(1, MAX_SAVES_BEFORE_KILL),
                                     on=rng.choice(["saved", "begin", "timer", "timer"]))
            # A last line cut short by the kill (no newline) names no version we can hold the store to.
            reported = max([reported, *(int(line.split()[1]) for line in lines
                                        if line.startswith("saved ") and line.endswith("\n"))])

            with open_store(config) as reader:
                stored = reader.load(THREAD_ID)

            check_whole_and_durable(stored, reported=reported, owners=owners)
            assert stored is not None
            seqs.append(stored.data["crash"]["seq"])

    # Each writer continued from its predecessor's thread: the data kept growing across kills.
    assert seqs == sorted(seqs)
    assert seqs[-1] >= KILLS
