"""The thread-store contract, run against every store: MemoryStore, SqliteStore, RedisStore, PostgresStore.

Each store must give the same answers: the same versions, the same errors with the same attributes.
Redis runs twice, with a bytes client and with a ``decode_responses=True`` client.

Here the round trip, compare-and-set and claims; the records themselves, bad data, delete and close in
test_store_records.py; what one kind does of its own in test_store_kinds.py and test_store_postgres.py.
The backends and their fixtures are backendkit.py's.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from backendkit import (
    interrupted_thread,
    plain,
    small,
)

from agui_client.core.fold import ThreadState
from agui_client.errors import AguiError, ConcurrentResume, StoreError
from agui_client.stores import (
    STORE_FORMAT_VERSION,
    StoredThread,
    ThreadStore,
)

__all__: list[str] = []


# --------------------------------------------------------------------------------------------------
# Round trip
# --------------------------------------------------------------------------------------------------


def test_store_satisfies_the_protocol(store: ThreadStore) -> None:
    assert isinstance(store, ThreadStore)


def test_saved_thread_loads_back_equal_with_its_open_interrupts(store: ThreadStore) -> None:
    thread = interrupted_thread()
    version = store.save("thread-1", thread.dump(), expected_version=None)

    stored = store.load("thread-1")

    assert version == 1
    assert plain(stored) == StoredThread(thread_id="thread-1", version=1, data=thread.dump(), claim=None,
                                  format=STORE_FORMAT_VERSION)
    back = ThreadState.load(stored.data)
    assert back.messages == thread.messages
    assert back.state == thread.state
    assert back.open_interrupts == thread.open_interrupts
    assert [i.id for i in back.open_interrupts] == ["int-1", "int-2"]
    assert back.interrupted_run_id == "run-7"
    assert back.thread_id == "thread-1"


def test_missing_thread_loads_as_none(store: ThreadStore) -> None:
    assert store.load("nobody") is None


def test_loaded_data_is_the_callers_own_copy(store: ThreadStore) -> None:
    store.save("t", small(1), expected_version=None)
    first = store.load("t")
    assert first is not None
    first.data["messages"].clear()

    again = store.load("t")

    assert again is not None
    assert again.data == small(1)


def test_each_write_raises_the_version_by_one(store: ThreadStore) -> None:
    versions = [store.save("t", small(1), expected_version=None)]
    versions.append(store.save("t", small(2), expected_version=versions[-1]))
    versions.append(store.claim("t", expected_version=versions[-1], owner="a"))
    versions.append(store.release("t", claimed_version=versions[-1], owner="a"))
    versions.append(store.save("t", small(3), expected_version=versions[-1]))

    assert versions == [1, 2, 3, 4, 5]
    stored = store.load("t")
    assert stored is not None
    assert (stored.version, stored.data) == (5, small(3))


def test_threads_are_kept_apart(store: ThreadStore) -> None:
    store.save("a", small(1), expected_version=None)
    store.save("b", small(2), expected_version=None)
    store.save("b", small(3), expected_version=1)

    a, b = store.load("a"), store.load("b")

    assert a is not None and b is not None
    assert (a.version, a.data) == (1, small(1))
    assert (b.version, b.data) == (2, small(3))


# --------------------------------------------------------------------------------------------------
# Compare-and-set
# --------------------------------------------------------------------------------------------------


def test_creating_an_existing_thread_is_refused(store: ThreadStore) -> None:
    store.save("t", small(1), expected_version=None)
    store.save("t", small(2), expected_version=1)

    with pytest.raises(ConcurrentResume) as caught:
        store.save("t", small(9), expected_version=None)

    assert (caught.value.thread_id, caught.value.expected_version, caught.value.actual_version) == ("t", 0, 2)
    stored = store.load("t")
    assert stored is not None
    assert (stored.version, stored.data) == (2, small(2))


def test_save_with_a_stale_version_is_refused_and_changes_nothing(store: ThreadStore) -> None:
    store.save("t", small(1), expected_version=None)
    store.save("t", small(2), expected_version=1)

    with pytest.raises(ConcurrentResume) as caught:
        store.save("t", small(9), expected_version=1)

    assert (caught.value.thread_id, caught.value.expected_version, caught.value.actual_version) == ("t", 1, 2)
    stored = store.load("t")
    assert stored is not None
    assert (stored.version, stored.data, stored.claim) == (2, small(2), None)


def test_save_with_a_version_from_the_future_is_refused(store: ThreadStore) -> None:
    store.save("t", small(1), expected_version=None)

    with pytest.raises(ConcurrentResume) as caught:
        store.save("t", small(9), expected_version=2)

    assert (caught.value.expected_version, caught.value.actual_version) == (2, 1)


def test_save_of_a_thread_that_is_not_stored_is_refused(store: ThreadStore) -> None:
    with pytest.raises(ConcurrentResume) as caught:
        store.save("t", small(1), expected_version=3)

    assert (caught.value.thread_id, caught.value.expected_version, caught.value.actual_version) == ("t", 3, None)
    assert store.load("t") is None


def test_a_lost_race_is_an_agui_error_and_not_a_store_error(store: ThreadStore) -> None:
    store.save("t", small(1), expected_version=None)

    with pytest.raises(AguiError) as caught:
        store.claim("t", expected_version=7, owner="a")

    assert type(caught.value) is ConcurrentResume


# --------------------------------------------------------------------------------------------------
# Claims
# --------------------------------------------------------------------------------------------------


def test_claim_keeps_the_data_and_records_the_owner(store: ThreadStore) -> None:
    store.save("t", small(1), expected_version=None)

    version = store.claim("t", expected_version=1, owner="replica-a")

    stored = store.load("t")
    assert version == 2
    assert plain(stored) == StoredThread(thread_id="t", version=2, data=small(1), claim="replica-a",
                                  format=STORE_FORMAT_VERSION)


def test_second_claim_of_the_same_version_is_refused(store: ThreadStore) -> None:
    store.save("t", small(1), expected_version=None)
    store.claim("t", expected_version=1, owner="a")

    with pytest.raises(ConcurrentResume) as stale:
        store.claim("t", expected_version=1, owner="b")

    assert (stale.value.expected_version, stale.value.actual_version) == (1, 2)
    stored = store.load("t")
    assert stored is not None
    assert (stored.version, stored.claim) == (2, "a")


def test_claim_of_a_claimed_thread_at_its_current_version_is_refused(store: ThreadStore) -> None:
    store.save("t", small(1), expected_version=None)
    store.claim("t", expected_version=1, owner="a")

    with pytest.raises(ConcurrentResume) as held:
        store.claim("t", expected_version=2, owner="b")

    assert (held.value.expected_version, held.value.actual_version) == (2, 2)
    stored = store.load("t")
    assert stored is not None
    assert (stored.version, stored.claim) == (2, "a")


def test_the_claim_holder_cannot_claim_twice_either(store: ThreadStore) -> None:
    store.save("t", small(1), expected_version=None)
    store.claim("t", expected_version=1, owner="a")

    with pytest.raises(ConcurrentResume):
        store.claim("t", expected_version=2, owner="a")


def test_claim_of_a_thread_that_is_not_stored_is_refused(store: ThreadStore) -> None:
    with pytest.raises(ConcurrentResume) as caught:
        store.claim("t", expected_version=1, owner="a")

    assert caught.value.actual_version is None
    assert store.load("t") is None


def test_a_claim_without_a_version_creates_the_thread_claimed_at_version_0(store: ThreadStore) -> None:
    created = store.claim("t", expected_version=None, owner="a", data=small(1))

    claimed = plain(store.load("t"))
    saved = store.save("t", small(2), expected_version=created)
    stored = plain(store.load("t"))
    assert (created, claimed) == (0, StoredThread(thread_id="t", version=0, data=small(1), claim="a",
                                                  format=STORE_FORMAT_VERSION))
    assert (saved, stored) == (1, StoredThread(thread_id="t", version=1, data=small(2), claim=None,
                                               format=STORE_FORMAT_VERSION))


def test_a_creating_claim_of_a_thread_that_exists_is_refused_and_changes_nothing(store: ThreadStore) -> None:
    store.save("saved", small(1), expected_version=None)
    store.claim("claimed", expected_version=None, owner="a", data=small(1))

    with pytest.raises(ConcurrentResume) as saved:
        store.claim("saved", expected_version=None, owner="b", data=small(2))
    with pytest.raises(ConcurrentResume) as claimed:
        store.claim("claimed", expected_version=None, owner="b", data=small(2))
    with pytest.raises(ConcurrentResume) as created:
        store.save("claimed", small(2), expected_version=None)

    assert [(c.value.thread_id, c.value.expected_version, c.value.actual_version) for c in (saved, claimed, created)] \
        == [("saved", 0, 1), ("claimed", 0, 0), ("claimed", 0, 0)]
    assert plain(store.load("saved")) == StoredThread(thread_id="saved", version=1, data=small(1), claim=None,
                                               format=STORE_FORMAT_VERSION)
    assert plain(store.load("claimed")) == StoredThread(thread_id="claimed", version=0, data=small(1), claim="a",
                                                 format=STORE_FORMAT_VERSION)


def test_releasing_a_creating_claim_leaves_the_thread_at_version_1_unclaimed(store: ThreadStore) -> None:
    store.claim("t", expected_version=None, owner="a", data=small(1))

    released = store.release("t", claimed_version=0, owner="a")

    assert (released, plain(store.load("t"))) == (1, StoredThread(thread_id="t", version=1, data=small(1), claim=None,
                                                           format=STORE_FORMAT_VERSION))
    assert store.claim("t", expected_version=1, owner="b") == 2


def test_a_claim_sent_again_by_its_owner_is_recognised_and_writes_nothing(store: ThreadStore) -> None:
    # The owner's claim landed but its reply was lost: sent again, it finds itself (the same version
    # back, nothing written) instead of being refused. Nobody else's claim is recognised, and a claim
    # the owner knows it holds (asked for from the version it made) stays refused.
    store.save("t", small(1), expected_version=None)
    store.claim("t", expected_version=1, owner="a")
    store.claim("new", expected_version=None, owner="a", data=small(1))

    again = store.claim("t", expected_version=1, owner="a")
    created_again = store.claim("new", expected_version=None, owner="a", data=small(2))
    with pytest.raises(ConcurrentResume) as other:
        store.claim("t", expected_version=1, owner="b")
    with pytest.raises(ConcurrentResume) as held:
        store.claim("t", expected_version=2, owner="a")

    assert (again, created_again) == (2, 0)
    assert plain(store.load("t")) == StoredThread(thread_id="t", version=2, data=small(1), claim="a",
                                           format=STORE_FORMAT_VERSION)
    assert plain(store.load("new")) == StoredThread(thread_id="new", version=0, data=small(1), claim="a",
                                             format=STORE_FORMAT_VERSION)
    assert [(c.value.expected_version, c.value.actual_version) for c in (other, held)] == [(1, 2), (2, 2)]
    assert store.save("t", small(3), expected_version=again) == 3


def test_a_claim_takes_data_exactly_when_it_creates_the_thread(store: ThreadStore) -> None:
    store.save("t", small(1), expected_version=None)

    with pytest.raises(ValueError):
        store.claim("new", expected_version=None, owner="a")
    with pytest.raises(ValueError):
        store.claim("t", expected_version=1, owner="a", data=small(2))
    with pytest.raises(StoreError):
        store.claim("new", expected_version=None, owner="a", data={"bad": {1, 2}})

    assert store.load("new") is None
    assert plain(store.load("t")) == StoredThread(thread_id="t", version=1, data=small(1), claim=None,
                                           format=STORE_FORMAT_VERSION)


def test_release_makes_the_thread_claimable_again(store: ThreadStore) -> None:
    store.save("t", small(1), expected_version=None)
    claimed = store.claim("t", expected_version=1, owner="a")

    released = store.release("t", claimed_version=claimed, owner="a")

    after_release = plain(store.load("t"))
    assert (released, after_release) == (3, StoredThread(thread_id="t", version=3, data=small(1), claim=None,
                                                          format=STORE_FORMAT_VERSION))
    assert store.claim("t", expected_version=3, owner="b") == 4
    stored = store.load("t")
    assert stored is not None
    assert stored.claim == "b"


def test_release_by_someone_who_does_not_hold_the_claim_is_refused(store: ThreadStore) -> None:
    store.save("t", small(1), expected_version=None)
    claimed = store.claim("t", expected_version=1, owner="a")

    with pytest.raises(ConcurrentResume) as caught:
        store.release("t", claimed_version=claimed, owner="b")

    assert (caught.value.expected_version, caught.value.actual_version) == (2, 2)
    stored = store.load("t")
    assert stored is not None
    assert (stored.version, stored.claim) == (2, "a")


def test_release_of_an_unclaimed_thread_is_refused(store: ThreadStore) -> None:
    store.save("t", small(1), expected_version=None)

    with pytest.raises(ConcurrentResume) as caught:
        store.release("t", claimed_version=1, owner="a")

    assert caught.value.actual_version == 1
    stored = store.load("t")
    assert stored is not None
    assert stored.version == 1


def test_release_after_the_thread_moved_on_is_refused(store: ThreadStore) -> None:
    store.save("t", small(1), expected_version=None)
    claimed = store.claim("t", expected_version=1, owner="a")
    store.save("t", small(2), expected_version=claimed)

    with pytest.raises(ConcurrentResume) as caught:
        store.release("t", claimed_version=claimed, owner="a")

    assert (caught.value.expected_version, caught.value.actual_version) == (2, 3)


def test_save_by_the_claim_holder_clears_the_claim(store: ThreadStore) -> None:
    store.save("t", small(1), expected_version=None)
    claimed = store.claim("t", expected_version=1, owner="a")

    saved = store.save("t", small(2), expected_version=claimed)

    stored = store.load("t")
    assert plain(stored) == StoredThread(thread_id="t", version=saved, data=small(2), claim=None,
                                          format=STORE_FORMAT_VERSION)
    assert saved == 3
    assert store.claim("t", expected_version=3, owner="b") == 4


def test_an_empty_owner_is_refused(store: ThreadStore) -> None:
    store.save("t", small(1), expected_version=None)

    with pytest.raises(ValueError):
        store.claim("t", expected_version=1, owner="")

    stored = store.load("t")
    assert stored is not None
    assert (stored.version, stored.claim) == (1, None)


@pytest.fixture
def eager_thread_switching() -> Iterator[None]:
    """Switch threads every microsecond, so interleavings a missing lock would allow actually happen."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


@pytest.mark.usefixtures("eager_thread_switching")
def test_racing_claims_of_one_version_admit_exactly_one(store: ThreadStore) -> None:
    """16 threads load the same version and claim it at once, 50 times over: one wins each time."""
    workers, rounds = 16, 50
    barrier = threading.Barrier(workers)

    def contend(thread_id: str, worker: int) -> tuple[str, int | None]:
        # The barrier lines the loads up; a broken one raises rather than hangs (a watchdog, not a timing).
        barrier.wait(timeout=60)
        stored = store.load(thread_id)
        assert stored is not None
        try:
            store.claim(thread_id, expected_version=stored.version, owner=f"w{worker}")
        except ConcurrentResume as exc:
            return "lost", exc.actual_version
        return "won", None

    with ThreadPoolExecutor(max_workers=workers) as pool:
        for n in range(rounds):
            thread_id = f"race-{n}"
            store.save(thread_id, small(n), expected_version=None)
            results = list(pool.map(contend, [thread_id] * workers, range(workers)))

            winners = [w for w, (outcome, _) in enumerate(results) if outcome == "won"]
            assert len(winners) == 1, f"round {n}: {len(winners)} claims succeeded"
            assert {actual for outcome, actual in results if outcome == "lost"} == {2}
            stored = store.load(thread_id)
            assert stored is not None
            assert (stored.version, stored.claim, stored.data) == (2, f"w{winners[0]}", small(n))


@pytest.mark.usefixtures("eager_thread_switching")
def test_racing_creating_claims_of_one_new_thread_admit_exactly_one(store: ThreadStore) -> None:
    """16 threads claim a thread id nobody holds at once, 50 times over: one creates it each time."""
    workers, rounds = 16, 50
    barrier = threading.Barrier(workers)

    def contend(thread_id: str, worker: int) -> tuple[str, int | None]:
        barrier.wait(timeout=60)  # (a watchdog, not a timing)
        try:
            store.claim(thread_id, expected_version=None, owner=f"w{worker}", data=small(worker))
        except ConcurrentResume as exc:
            return "lost", exc.actual_version
        return "won", None

    with ThreadPoolExecutor(max_workers=workers) as pool:
        for n in range(rounds):
            thread_id = f"new-{n}"
            results = list(pool.map(contend, [thread_id] * workers, range(workers)))

            winners = [w for w, (outcome, _) in enumerate(results) if outcome == "won"]
            assert len(winners) == 1, f"round {n}: {len(winners)} creating claims succeeded"
            assert {actual for outcome, actual in results if outcome == "lost"} == {0}
            stored = store.load(thread_id)
            assert stored is not None
            assert (stored.version, stored.claim, stored.data) == (0, f"w{winners[0]}", small(winners[0]))


@pytest.mark.usefixtures("eager_thread_switching")
def test_racing_saves_of_one_version_admit_exactly_one(store: ThreadStore) -> None:
    workers, rounds = 8, 10
    barrier = threading.Barrier(workers)
    store.save("t", small(0), expected_version=None)

    def contend(worker: int, expected: int) -> bool:
        barrier.wait(timeout=60)
        try:
            store.save("t", small(worker), expected_version=expected)
        except ConcurrentResume:
            return False
        return True

    with ThreadPoolExecutor(max_workers=workers) as pool:
        for n in range(rounds):
            wins = list(pool.map(contend, range(workers), [n + 1] * workers))

            assert wins.count(True) == 1
            stored = store.load("t")
            assert stored is not None
            assert (stored.version, stored.data) == (n + 2, small(wins.index(True)))
