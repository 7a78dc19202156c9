"""``PostgresStore`` and a trigger added to its tables while it is open (``STORE-SCHEMA`` in docs/codes.md),
on the session's real PostgreSQL server: at the moments the twenty-sixth round left open.

Each test's triggers write into a spy table (which table, which level, which operation), so "it ran in no
write" is read from the server, not inferred. The moments are reached through gates the code under test
does not know of: a trusted trigger's notice (a delete between its two statements), the compaction
policy's decision (between an append and its fold), the agent's reply (between a run's claim and its
save).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import attrs
import pytest
from backendkit import FoldsNow, small

from agui_client.errors import StoreError
from agui_client.stores import PostgresStore
from agui_client.testing import ScriptedAgent

__all__: list[str] = []


@attrs.frozen
class Tables:
    """A store's tables made for one test, and the spy its triggers write into."""

    dsn: str
    name: str

    @property
    def changes(self) -> str:
        return f"{self.name}_changes"

    def run(self, *statements: str) -> None:
        import psycopg

        with psycopg.connect(self.dsn, autocommit=True) as conn:
            for statement in statements:
                conn.execute(statement.encode())

    def query(self, statement: str, *params: Any) -> list[tuple[Any, ...]]:
        import psycopg

        with psycopg.connect(self.dsn, autocommit=True) as conn:
            return conn.execute(statement.encode(), params).fetchall()

    def spy_on(self, table: str, prefix: str = "spy") -> list[str]:
        """Two triggers on ``table`` that record every time they run: one for each statement (PostgreSQL
        fires it before the statement reads a row) and one for each row."""
        return [f'CREATE TRIGGER {prefix}_statement BEFORE INSERT OR UPDATE OR DELETE ON "{table}" '
                f'FOR EACH STATEMENT EXECUTE FUNCTION "{self.name}_spy"()',
                f'CREATE TRIGGER {prefix}_row AFTER INSERT OR UPDATE OR DELETE ON "{table}" '
                f'FOR EACH ROW EXECUTE FUNCTION "{self.name}_spy"()']

    def spied(self) -> list[tuple[Any, ...]]:
        return self.query(f'SELECT * FROM "{self.name}_spy"')

    def rows(self) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        """Every head row and every change row."""
        return (self.query(f'SELECT * FROM "{self.name}" ORDER BY thread_id'),
                self.query(f'SELECT * FROM "{self.changes}" ORDER BY thread_id, seq'))


@pytest.fixture
def tables(postgres_dsn: str) -> Iterator[Tables]:
    """A store's fresh tables holding thread 't' (version 1), a spy table and the spy's trigger function;
    all dropped afterwards (a table's drop leaves the function behind)."""
    made = Tables(postgres_dsn, f"agui_added_{uuid.uuid4().hex}")
    with PostgresStore(postgres_dsn, table=made.name) as store:
        store.save("t", {"n": 1}, expected_version=None)
    made.run(f'CREATE TABLE "{made.name}_spy" (tab TEXT, level TEXT, op TEXT)',
             f'CREATE FUNCTION "{made.name}_spy"() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN '
             f'INSERT INTO "{made.name}_spy" VALUES (TG_TABLE_NAME, TG_LEVEL, TG_OP); RETURN NULL; END $$')
    yield made
    made.run(f'DROP TABLE IF EXISTS "{made.name}", "{made.changes}", "{made.name}_spy" CASCADE',
             f'DROP FUNCTION IF EXISTS "{made.name}_spy"(), "{made.name}_noted"()')


@pytest.mark.parametrize("on_changes", [False, True], ids=["thread-table", "change-table"])
def test_a_statement_level_trigger_added_after_open_runs_in_no_write(tables: Tables, on_changes: bool) -> None:
    # Before: each write's statement asked its question in its WHERE, which PostgreSQL evaluates as it
    # reads rows, after a statement's BEFORE ... FOR EACH STATEMENT triggers have fired: the write was
    # refused, and the trigger had run inside it (any query, the spy's insert here). The question now
    # fails the statement before its write runs at all. On the change table alone, a release (which
    # writes the thread table only) lands and runs nothing.
    with PostgresStore(tables.dsn, table=tables.name) as store:
        store.append("t", {"messagesFrom": 0}, expected_version=1)
        assert store.claim("t", expected_version=2, owner="me") == 3
        tables.run(*tables.spy_on(tables.changes if on_changes else tables.name))
        before = tables.rows()
        writes: dict[str, Callable[[], object]] = {
            "save": lambda: store.save("t", {"n": 2}, expected_version=3),
            "append": lambda: store.append("t", {"messagesFrom": 1}, expected_version=3),
            "delete": lambda: store.delete("t"),
            "claim": lambda: store.claim("new", expected_version=None, owner="me", data={"n": 0}),
        }
        if not on_changes:
            writes["release"] = lambda: store.release("t", claimed_version=3, owner="me")
        refused = {}
        for operation, write in writes.items():
            with pytest.raises(StoreError) as caught:
                write()
            refused[operation] = caught.value
        after = tables.rows()
        released = store.release("t", claimed_version=3, owner="me") if on_changes else None

    for operation, error in refused.items():
        assert (error.code, error.thread_id) == ("STORE-SCHEMA", "new" if operation == "claim" else "t"), error
        assert "the triggers 'spy_row', 'spy_statement', added after the store opened them" in str(error), error
        assert f"the {operation} wrote nothing" in str(error)
    assert after == before
    assert tables.spied() == []
    assert released == (4 if on_changes else None)


def test_a_trigger_added_on_the_change_table_between_a_deletes_two_statements_is_refused_by_the_second(
        tables: Tables, monkeypatch: pytest.MonkeyPatch) -> None:
    # Before: a delete's second statement (the change rows) asked nothing: a trigger added on the change
    # table after its first statement ran in it, and the head's delete committed with it. The gate is an
    # audit trigger the operator trusts on the thread table: its notice reaches the store's connection
    # while the delete's first statement runs, and the test then adds the spy's triggers on the change
    # table from another session, committed before the second statement starts.
    import psycopg

    tables.run(f'CREATE FUNCTION "{tables.name}_noted"() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN '
               "RAISE NOTICE 'agui-test: head deleted'; RETURN OLD; END $$",
               f'CREATE TRIGGER noted BEFORE DELETE ON "{tables.name}" FOR EACH ROW '
               f'EXECUTE FUNCTION "{tables.name}_noted"()')
    added: list[str] = []

    def add_spy(notice: Any) -> None:
        if notice.message_primary == "agui-test: head deleted" and not added:
            added.append(notice.message_primary)
            tables.run(*tables.spy_on(tables.changes))

    connect = psycopg.connect

    def connect_noting(*args: Any, **kwargs: Any) -> Any:
        conn = connect(*args, **kwargs)
        conn.add_notice_handler(add_spy)
        return conn

    # (from the store's open: the delete takes a connection the store keeps)
    monkeypatch.setattr(psycopg, "connect", connect_noting)
    with PostgresStore(tables.dsn, table=tables.name, trusted_objects=("noted",)) as store:
        store.append("t", {"messagesFrom": 0}, expected_version=1)
        before = tables.rows()
        with pytest.raises(StoreError) as caught:
            store.delete("t")
        after = tables.rows()
        tables.run(f'DROP TRIGGER spy_statement ON "{tables.changes}"', f'DROP TRIGGER spy_row ON "{tables.changes}"')
        store.delete("t")
        gone = tables.rows()

    assert added, "the delete's first statement never ran the trusted trigger"
    refused = caught.value
    assert (refused.code, refused.thread_id) == ("STORE-SCHEMA", "t"), refused
    assert "the triggers 'spy_row', 'spy_statement', added after" in str(refused) and "the delete wrote nothing" in str(
        refused), refused
    assert after == before and before[1]  # (the head's delete rolled back with the refused second statement)
    assert tables.spied() == []
    assert gone == ([], [])


def test_a_trigger_added_between_an_append_and_its_compaction_is_refused_by_the_compaction(
        tables: Tables, caplog: pytest.LogCaptureFixture) -> None:
    # The append lands before the policy is asked; the fold that follows is a write of its own, which asks
    # the tables' question in its own statement (no test reached it before: no write sat between the two).
    policy = FoldsNow(first=lambda: tables.run(*tables.spy_on(tables.name)))
    with PostgresStore(tables.dsn, table=tables.name, compaction=policy) as store, \
            caplog.at_level(logging.DEBUG, logger="agui_client.stores"):
        store.save("c", small(1), expected_version=None)
        version = store.append("c", {"set": {"state": {"n": 2}}}, expected_version=1)
        stored = store.load("c")
        with pytest.raises(StoreError) as next_append:
            store.append("c", {"set": {"state": {"n": 3}}}, expected_version=2)

    assert version == 2 and policy.asked == [1]
    assert stored is not None and (stored.version, stored.changes, stored.data["state"]) == (2, 1, {"n": 2})
    assert tables.spied() == []
    skipped = [r.getMessage() for r in caplog.records if "compaction of thread 'c' skipped" in r.getMessage()]
    assert len(skipped) == 1 and "added after the store opened them" in skipped[0], skipped
    assert "the compaction wrote nothing" in skipped[0]
    assert next_append.value.code == "STORE-SCHEMA"


@pytest.mark.parametrize("on_changes", [False, True], ids=["thread-table", "change-table"])
def test_a_trigger_added_during_a_run_refuses_its_save_sends_nothing_twice_and_names_the_trigger(
        drive: Any, served: Any, tables: Tables, on_changes: bool) -> None:
    # The agent's reply is the gate: the run's claim has landed when the request reaches it, and its
    # save comes after the reply. The save is refused (STORE-SCHEMA, the agent's answer in the error).
    # On the thread table the release is refused too (it would run the trigger): the claim stays held
    # until the trigger is dropped or trusted, then thread.release_claim() gives it back. On the change
    # table alone the release lands (it writes the thread table only) and the claim is given back at once.
    spied_table = tables.changes if on_changes else tables.name

    def reply(run_input: Any) -> str:
        if "during" in str(run_input.messages[-1].content):
            tables.run(*tables.spy_on(spied_table))
        return "done"

    endpoint = served(ScriptedAgent.chat(reply))
    with PostgresStore(tables.dsn, table=tables.name) as store, drive.client(endpoint.url, store=store) as client:
        thread = client.thread("r")
        thread.run("before")
        with pytest.raises(StoreError) as caught:
            thread.run("during")
        held = tables.query(f'SELECT version, claim IS NOT NULL FROM "{tables.name}" WHERE thread_id = %s', "r")
        sent = len(endpoint.received)
        tables.run(f'DROP TRIGGER spy_statement ON "{spied_table}"', f'DROP TRIGGER spy_row ON "{spied_table}"')
        thread.release_claim()
        thread.run("after")
        stored = store.load("r")

    refused = caught.value
    assert (refused.code, refused.thread_id, refused.agent_answered) == ("STORE-SCHEMA", "r", True), refused
    assert "the triggers 'spy_row', 'spy_statement', added after the store opened them" in str(refused), refused
    assert "thread.release_claim() gives it back once they are gone" in str(refused), refused
    assert refused.result is not None and refused.result.messages[-1].content == "done"
    assert tables.spied() == []
    # (the first run's creating claim made version 0 and its save 1; the second run claimed 2, and a
    # release, when it lands, makes 3)
    assert held == ([(3, False)] if on_changes else [(2, True)]), held
    assert sent == 2 and len(endpoint.received) == 3
    assert stored is not None
    said = [m["content"] for m in stored.data["messages"] if m["role"] == "user"]
    assert said == ["before", "during", "after"]
