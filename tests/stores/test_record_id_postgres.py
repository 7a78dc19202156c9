"""Record ids through a real run on PostgreSQL: a thread object holding a thread deleted and made again
under its id, up to the version it holds, is refused before it sends, and the id it names is the one
in the row's ``record_id`` column."""

from __future__ import annotations

from typing import Any

import pytest
from test_store_contract import _pg, pg_table  # noqa: F401 (pg_table: the fixture)

import agui_client as ag
from agui_client.stores import PostgresStore
from agui_client.testing import ScriptedAgent

__all__: list[str] = []


def test_a_thread_deleted_and_made_again_on_postgres_refuses_the_stale_copy(
        drive: Any, served: Any, postgres_dsn: str, pg_table: str) -> None:  # noqa: F811
    endpoint = served(ScriptedAgent.chat("noted"))

    with PostgresStore(postgres_dsn, table=pg_table) as store, drive.client(endpoint.url, store=store) as client:
        old = client.thread()
        old.run("the old thread")
        old_row = _pg(postgres_dsn, f"SELECT record_id FROM {pg_table}")
        store.delete(old.id)
        new = client.thread(old.id)
        new.run("the new thread")
        new_row = _pg(postgres_dsn, f"SELECT version, record_id FROM {pg_table}")
        assert (old.version, new.version) == (1, 1)
        with pytest.raises(ag.ConcurrentResume, match="deleted and created again"):
            old.run("stale")
        sent = endpoint.agent.request_count
        after = _pg(postgres_dsn, f"SELECT version, claim, record_id FROM {pg_table}")
        old.reload()
        stored = store.load(new.id)

    assert sent == 2
    assert old_row[0][0] is not None and new_row[0][1] is not None and old_row[0][0] != new_row[0][1]
    assert after == [(1, None, new_row[0][1])]  # (nothing written by the stale copy: not even a claim)
    assert stored is not None and stored.record_id == new_row[0][1]
    assert [m["content"] for m in stored.data["messages"]][0] == "the new thread"
    assert old.state.messages == new.state.messages
