"""The incremental record (issue 21): a run's save appends what it changed instead of rewriting the thread.

Run against every store that has ``append``: the same compare-and-set as ``save``, a load that hands
out the whole thread (the record's data with its changes folded in, in order), a compaction that
folds them into the data without changing the version or what a load returns, and records of the
earlier format (data only) that load as they are and are written in the current format next time.
A seeded model test drives random writes against ``apply_changes`` applied to a plain dict.
"""

from __future__ import annotations

import copy
import random
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from backendkit import (
    Backend,
    open_backend,
    raw_redis,  # noqa: F401 (the fixture the Redis backends use)
    small,
)

from agui_client.errors import ConcurrentResume, StoreError
from agui_client.stores import STORE_FORMAT_VERSION, Compaction, IncrementalStore, RedisStore, apply_changes
from agui_client.stores.base import encode_data

__all__: list[str] = []

#: The stores with ``append``; each store's branch adds its kind here as it gains one.
INCREMENTAL_KINDS = ["memory", "sqlite", "redis", "redis-decoded", "postgres"]
#: Fold after every third change, whatever its size.
EVERY_THIRD = Compaction(min_bytes=1 << 40, ratio=1e9, max_changes=3)
#: Never fold (within a test).
NEVER = Compaction(min_bytes=1 << 40, ratio=1e9, max_changes=1 << 30)


@pytest.fixture(params=INCREMENTAL_KINDS)
def inc(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    yield from open_backend(request.param, request, tmp_path)


def _store(backend: Backend, compaction: Compaction = NEVER) -> IncrementalStore:
    assert backend.compacting is not None, "a store with append takes compaction="
    store = backend.compacting(compaction)
    assert isinstance(store, IncrementalStore)
    return store


def run_change(n: int) -> dict[str, Any]:
    """One run's changes, the way ThreadState.changes() writes them: messages appended, fields set."""
    return {
        "messagesFrom": n,
        "messages": [{"id": f"a{n}", "role": "assistant", "content": f"answer {n} caf\u00e9 \U0001f600"}],
        "set": {"lastRunId": f"run-{n}", "lastOutcome": "success", "state": {"turn": n}},
        "merge": {"usageByRun": {f"run-{n}": [{"inputTokens": n}]}},
    }


def test_an_append_is_a_save_of_what_changed(inc: Backend) -> None:
    store = _store(inc)
    base = small(1)
    store.save("t", base, expected_version=None)

    version = store.append("t", run_change(1), expected_version=1)
    stored = store.load("t")

    assert version == 2
    assert stored is not None
    assert stored.version == 2 and stored.claim is None and stored.changes == 1
    assert stored.format == STORE_FORMAT_VERSION
    assert stored.data == apply_changes(copy.deepcopy(base), [run_change(1)])
    assert [m["id"] for m in stored.data["messages"]] == ["u1", "a1"]


def test_appends_fold_in_their_order_and_each_load_is_a_fresh_copy(inc: Backend) -> None:
    store = _store(inc)
    store.save("t", small(1), expected_version=None)
    for n in range(1, 6):
        store.append("t", run_change(n), expected_version=n)

    first = store.load("t")
    assert first is not None
    first.data["messages"].clear()
    second = store.load("t")

    assert second is not None
    assert [m["id"] for m in second.data["messages"]] == ["u1", "a1", "a2", "a3", "a4", "a5"]
    assert second.data["lastRunId"] == "run-5"
    assert second.data["state"] == {"turn": 5}
    assert set(second.data["usageByRun"]) == {f"run-{n}" for n in range(1, 6)}


def test_an_append_replaces_messages_from_where_the_run_changed_them(inc: Backend) -> None:
    store = _store(inc)
    store.save("t", small(1), expected_version=None)
    store.append("t", run_change(1), expected_version=1)
    # A run that rewrote the assistant message (a snapshot) and added one: the list is cut at 1.
    rewrite = {"messagesFrom": 1, "messages": [{"id": "a1", "role": "assistant", "content": "redone"},
                                               {"id": "a9", "role": "assistant", "content": "more"}],
               "unset": ["lastOutcome"]}
    store.append("t", rewrite, expected_version=2)

    stored = store.load("t")

    assert stored is not None
    assert [(m["id"], m.get("content")) for m in stored.data["messages"][1:]] == [("a1", "redone"), ("a9", "more")]
    assert "lastOutcome" not in stored.data


def test_an_append_with_a_stale_version_is_refused_and_changes_nothing(inc: Backend) -> None:
    store = _store(inc)
    store.save("t", small(1), expected_version=None)
    store.append("t", run_change(1), expected_version=1)
    before = store.load("t")

    with pytest.raises(ConcurrentResume) as caught:
        store.append("t", run_change(2), expected_version=1)

    assert (caught.value.expected_version, caught.value.actual_version) == (1, 2)
    assert store.load("t") == before


def test_an_append_to_a_thread_that_is_not_stored_is_refused(inc: Backend) -> None:
    store = _store(inc)

    with pytest.raises(ConcurrentResume) as caught:
        store.append("t", run_change(1), expected_version=3)

    assert caught.value.actual_version is None
    assert store.load("t") is None


def test_an_append_by_the_claim_holder_clears_the_claim(inc: Backend) -> None:
    store = _store(inc)
    store.save("t", small(1), expected_version=None)
    claimed = store.claim("t", expected_version=1, owner="replica-a")

    version = store.append("t", run_change(1), expected_version=claimed)
    stored = store.load("t")

    assert stored is not None
    assert (stored.version, stored.claim) == (version, None) == (3, None)


def test_an_append_onto_a_creating_claim_makes_version_1(inc: Backend) -> None:
    # The first turn of a new thread: its record is created claimed (version 0), the run appends.
    store = _store(inc)
    store.claim("t", expected_version=None, owner="replica-a", data=small(1))

    version = store.append("t", run_change(1), expected_version=0)

    stored = store.load("t")
    assert version == 1
    assert stored is not None and stored.claim is None
    assert [m["id"] for m in stored.data["messages"]] == ["u1", "a1"]


def test_claims_and_releases_keep_the_appended_changes(inc: Backend) -> None:
    store = _store(inc)
    store.save("t", small(1), expected_version=None)
    store.append("t", run_change(1), expected_version=1)
    claimed = store.claim("t", expected_version=2, owner="replica-a")
    released = store.release("t", claimed_version=claimed, owner="replica-a")

    stored = store.load("t")

    assert stored is not None
    assert stored.version == released == 4
    assert [m["id"] for m in stored.data["messages"]] == ["u1", "a1"]


def test_changes_that_are_not_json_are_refused_and_change_nothing(inc: Backend) -> None:
    store = _store(inc)
    store.save("t", small(1), expected_version=None)

    with pytest.raises(StoreError) as caught:
        store.append("t", {"set": {"state": float("nan")}}, expected_version=1)

    stored = store.load("t")
    assert caught.value.thread_id == "t"
    assert stored is not None and stored.version == 1 and stored.data == small(1)


def test_a_save_after_appends_writes_the_whole_thread_again(inc: Backend) -> None:
    store = _store(inc)
    store.save("t", small(1), expected_version=None)
    store.append("t", run_change(1), expected_version=1)

    store.save("t", small(7), expected_version=2)
    stored = store.load("t")

    assert stored is not None
    assert (stored.version, stored.changes, stored.data) == (3, 0, small(7))


def test_a_compaction_folds_the_changes_without_changing_version_or_data(inc: Backend) -> None:
    store = _store(inc, EVERY_THIRD)
    store.save("t", small(1), expected_version=None)
    expected = small(1)
    seen_changes = []
    for n in range(1, 8):
        store.append("t", run_change(n), expected_version=n)
        apply_changes(expected, [run_change(n)])
        stored = store.load("t")
        assert stored is not None
        assert (stored.version, stored.data) == (n + 1, expected)
        seen_changes.append(stored.changes)

    # Folded as the third change lands: 1, 2, then 0 again.
    assert seen_changes == [1, 2, 0, 1, 2, 0, 1]


def test_a_record_of_the_earlier_format_loads_and_is_written_in_the_current_one(inc: Backend) -> None:
    store = _store(inc)
    store.save("t", small(1), expected_version=None)
    inc.set_raw("t", "format", 1)  # (a format-1 record: data, no changes)

    loaded = store.load("t")
    version = store.append("t", run_change(1), expected_version=1)
    after = store.load("t")

    assert loaded is not None and (loaded.format, loaded.data) == (1, small(1))
    assert version == 2
    assert after is not None and after.format == STORE_FORMAT_VERSION
    assert inc.raw_format("t") == STORE_FORMAT_VERSION
    assert [m["id"] for m in after.data["messages"]] == ["u1", "a1"]


def test_a_record_of_a_newer_format_is_not_appended_to(inc: Backend) -> None:
    store = _store(inc)
    store.save("t", small(1), expected_version=None)
    inc.set_raw("t", "format", STORE_FORMAT_VERSION + 1)

    with pytest.raises(StoreError) as caught:
        store.append("t", run_change(1), expected_version=1)

    assert caught.value.thread_id == "t"
    assert inc.raw_format("t") == STORE_FORMAT_VERSION + 1


def test_racing_appends_from_one_version_land_exactly_once(inc: Backend) -> None:
    store = _store(inc)
    store.save("t", small(1), expected_version=None)
    stores = [store, *(_store_again(inc) for _ in range(3))]
    start = threading.Barrier(len(stores))
    outcomes: list[str] = []

    def append(i: int) -> None:
        start.wait()
        try:
            stores[i].append("t", {**run_change(10 + i), "messagesFrom": 1}, expected_version=1)
            outcomes.append(f"won {i}")
        except ConcurrentResume:
            outcomes.append("lost")

    workers = [threading.Thread(target=append, args=(i,)) for i in range(len(stores))]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()

    won = [o for o in outcomes if o.startswith("won")]
    stored = store.load("t")
    assert len(won) == 1 and outcomes.count("lost") == len(stores) - 1
    assert stored is not None and stored.version == 2
    winner = int(won[0].split()[1])
    assert [m["id"] for m in stored.data["messages"]] == ["u1", f"a{10 + winner}"]


def _store_again(backend: Backend) -> IncrementalStore:
    store = backend.reopen()
    assert isinstance(store, IncrementalStore)
    return store


@pytest.mark.parametrize("seed", range(4))
def test_random_writes_match_a_model_of_the_record(inc: Backend, seed: int) -> None:
    rng = random.Random(seed)
    store = _store(inc, Compaction(min_bytes=0, ratio=rng.choice([0.0, 0.5, 2.0]), max_changes=rng.randint(2, 6)))
    store.save("t", small(0), expected_version=None)
    model, version, held = small(0), 1, False
    for step in range(60):
        choice = rng.random()
        if choice < 0.6:
            change = run_change(step) if rng.random() < 0.7 else {
                "messagesFrom": rng.randint(0, len(model["messages"])),
                "messages": [{"id": f"r{step}", "role": "user", "content": "x" * rng.randint(0, 300)}],
                "set": {"state": {"s": step}}, "merge": {"subagents": {f"s{step % 3}": {"status": "done"}}}}
            if change["messagesFrom"] > len(model["messages"]):
                change["messagesFrom"] = len(model["messages"])
            version = store.append("t", change, expected_version=version)
            apply_changes(model, [copy.deepcopy(change)])
        elif choice < 0.7:
            model = small(step)
            version = store.save("t", model, expected_version=version)
        elif held:
            version = store.release("t", claimed_version=version, owner="o")
        else:
            version = store.claim("t", expected_version=version, owner="o")
        held = choice >= 0.7 and not held
        stored = store.load("t")
        assert stored is not None
        assert (stored.version, stored.data) == (version, model), f"seed {seed} step {step}"


@pytest.mark.parametrize("damaged", [{"unset": [[1]]}, {"messagesFrom": 5, "messages": []}, {"merge": {"state": 1}},
                                     {"set": [1]}])
def test_a_change_that_cannot_be_folded_is_a_store_error_naming_the_thread(inc: Backend, damaged: Any) -> None:
    # (a foreign writer's, or a damaged one: JSON, but not a change this release can fold)
    store = _store(inc)
    store.save("t", small(1), expected_version=None)
    store.append("t", damaged, expected_version=1)

    with pytest.raises(StoreError) as caught:
        store.load("t")

    assert caught.value.thread_id == "t"
    assert "a stored change cannot be read" in str(caught.value)


def test_a_compaction_folds_without_a_lock_and_a_write_meanwhile_wins(
        inc: Backend, monkeypatch: pytest.MonkeyPatch) -> None:
    # The fold (decode, apply, encode: long on a big thread) holds no lock: another writer's append to
    # the very thread lands while it runs (before, it waited for the fold: SQLite's lock is the whole
    # file's). The compaction then finds the thread moved on and folds nothing; nothing is lost.
    import importlib

    store = _store(inc, EVERY_THIRD)
    module = importlib.import_module(type(store).__module__)
    other = _store_again(inc)
    fold = module.compacted
    meanwhile: list[object] = []
    started: list[bool] = []

    def folding(thread_id: str, text: Any, changes: Any, **options: Any) -> Any:
        # (once: the append meanwhile may fold too, when its store is this one, as MemoryStore's is)
        if not started:
            started.append(True)
            landed = threading.Event()

            def append() -> None:
                try:
                    meanwhile.append(other.append("t", run_change(4), expected_version=4))
                except Exception as exc:  # noqa: BLE001 (reported below)
                    meanwhile.append(exc)
                landed.set()

            threading.Thread(target=append, daemon=True).start()
            if not landed.wait(20):
                meanwhile.append("the append waited for the fold")
        return fold(thread_id, text, changes, **options)

    monkeypatch.setattr(module, "compacted", folding)
    store.save("t", small(1), expected_version=None)
    expected = small(1)
    for n in range(1, 4):
        store.append("t", run_change(n), expected_version=n)
        apply_changes(expected, [run_change(n)])
    apply_changes(expected, [run_change(4)])
    stored = store.load("t")

    assert meanwhile[:1] == [5]
    assert stored is not None
    # (a fold that wrote over the append meanwhile would have lost its change)
    assert (stored.version, stored.data) == (5, expected)
    # Unfolded: the stale fold was skipped (a MemoryStore's other writer is this store, which folded
    # after its own append).
    assert stored.changes == (0 if other is store else 4)
    # The next append's compaction folds the four and the fifth.
    monkeypatch.setattr(module, "compacted", fold)
    store.append("t", run_change(5), expected_version=5)
    folded = store.load("t")
    assert folded is not None
    assert (folded.version, folded.data) == (6, apply_changes(expected, [run_change(5)]))
    assert folded.changes == (1 if other is store else 0)


def _without_record_id(backend: Backend, thread_id: str) -> None:
    # What a replica of an earlier release leaves: a record with no id (an empty field, in Redis).
    if isinstance(backend.store, RedisStore):
        backend.set_raw(thread_id, "record", "")
    else:
        backend.set_raw(thread_id, "record_id", None)


def _again(n: int) -> dict[str, Any]:
    """A run's changes to the thread made again (its own fields, so a fold of the old one shows)."""
    return {**run_change(n), "set": {"lastRunId": f"again-{n}", "state": {"made": "again", "turn": n}}}


def test_a_compaction_never_folds_a_record_without_an_id_over_one_made_again_meanwhile(
        inc: Backend, monkeypatch: pytest.MonkeyPatch) -> None:
    # Records an earlier release made have no id, nor have the ones a replica of that release still
    # running makes (mixed releases): the version, the change count and "no id" were then all a
    # compaction compared. A thread deleted and made again while the fold ran, and brought up to the
    # same version and change count, took the old thread's fold over its own data.
    import importlib

    store = _store(inc, EVERY_THIRD)
    other = _store_again(inc)
    module = importlib.import_module(type(store).__module__)
    fold = module.compacted
    started: list[bool] = []

    def folding(thread_id: str, text: Any, changes: Any, **options: Any) -> Any:
        if not started:
            started.append(True)
            other.delete("t")
            other.save("t", small(9), expected_version=None)
            _without_record_id(inc, "t")
            for n in range(1, 4):
                other.append("t", _again(n), expected_version=n)
        return fold(thread_id, text, changes, **options)

    monkeypatch.setattr(module, "compacted", folding)
    store.save("t", small(1), expected_version=None)
    _without_record_id(inc, "t")
    for n in range(1, 4):  # (the third append's fold runs while the thread is made again)
        store.append("t", run_change(n), expected_version=n)
    stored = store.load("t")

    assert started == [True]
    assert stored is not None and (stored.version, stored.record_id) == (4, None)
    assert stored.data == apply_changes(small(9), [_again(n) for n in range(1, 4)])
    # A record without an id is still folded when nothing moved under its fold.
    monkeypatch.setattr(module, "compacted", fold)
    store.append("t", _again(4), expected_version=4)
    folded = store.load("t")
    # (a MemoryStore's other writer is this store, which folded the three after its own third append)
    assert folded is not None and (folded.version, folded.changes) == (5, 1 if other is store else 0)
    assert folded.data == apply_changes(small(9), [_again(n) for n in range(1, 5)])


@pytest.mark.parametrize("seed", range(2))
def test_a_thread_appended_to_never_holds_more_unfolded_changes_than_the_policy_allows(inc: Backend, seed: int) -> None:
    # What Compaction bounds (one writer, so no fold is skipped): after every append the changes left
    # unfolded are fewer than max_changes and, in bytes, under max(min_bytes, ratio x the data as last
    # written whole). A thread cannot grow without being folded; min_bytes only lets a short thread's
    # changes wait (until max_changes of them), and a single change larger than min_bytes and the data
    # is folded by the append that adds it.
    rng = random.Random(seed)
    policy = Compaction(min_bytes=2000, ratio=1.0, max_changes=6)
    store = _store(inc, policy)
    store.save("t", small(0), expected_version=None)
    states, appended = [small(0)], []
    for n in range(1, 40):
        change = {**run_change(n), "set": {"state": {"pad": "x" * rng.choice([10, 100, 900, 5000])}}}
        store.append("t", change, expected_version=n)
        appended.append(len(encode_data("t", change)))
        states.append(apply_changes(copy.deepcopy(states[-1]), [change]))
        stored = store.load("t")
        assert stored is not None and stored.data == states[-1]
        unfolded = stored.changes
        data_bytes = len(encode_data("t", states[n - unfolded]))
        change_bytes = sum(appended[n - unfolded:])
        assert unfolded < policy.max_changes, (n, unfolded)
        assert change_bytes < max(policy.min_bytes, policy.ratio * data_bytes), (n, change_bytes, data_bytes)
