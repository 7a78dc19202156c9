"""``PostgresStore`` and tables carrying a trigger or a rule it did not make (``STORE-SCHEMA`` in
docs/codes.md), on the session's real PostgreSQL server.

Before: the store opened such tables and its writes ran what they carried. A trigger that clears the
claim let a second replica claim a thread the first held (both then send the same resume); a rule
that drops every inserted change row lost each run's append while the head moved on. Now the store
refuses, when it opens the tables, any trigger or rule on them but PostgreSQL's own (a foreign key's
triggers), naming them quoted as ids and never their code, with nothing changed.

The twenty-fourth round's way out: ``trusted_objects`` names the triggers and rules the operator vouches
for (an audit trigger), compared exactly; they open and run with the store's writes while any other is
still refused, and a trusted name on neither table is a ``STORE-TRUSTED-ABSENT`` warning (a misspelt
name beside the real trigger is a refusal that says so). Before, the audit trigger could not be opened
at all and the keyword did not exist.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from storekit import refused_open

from agui_client._inert import quoted_name
from agui_client.errors import AguiWarning, StoreError
from agui_client.stores import PostgresStore
from agui_client.testing import ScriptedAgent

__all__: list[str] = []

#: A trigger name no message may show raw: it is quoted as an id.
HOSTILE_NAME = "unclaim\x1b[2J\u202e"


@pytest.fixture
def table(postgres_dsn: str) -> Iterator[str]:
    """A fresh thread table, made by a store and holding thread 't'; afterwards its tables are dropped,
    and the trigger functions a test made for them (``_unclaim``'s, ``_audit``'s), which a table's drop
    leaves in the session's database."""
    import psycopg
    from psycopg import sql

    name = f"agui_schema_{uuid.uuid4().hex}"
    with PostgresStore(postgres_dsn, table=name) as store:
        store.save("t", {"n": 1}, expected_version=None)
    yield name
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}, {}, {} CASCADE").format(
            sql.Identifier(name), sql.Identifier(f"{name}_changes"), sql.Identifier(f"{name}_audit")))
        conn.execute(sql.SQL("DROP FUNCTION IF EXISTS {}, {}").format(
            sql.Identifier(f"{name}_unclaim"), sql.Identifier(f"{name}_audited")))


def _run(postgres_dsn: str, *statements: str) -> None:
    import psycopg

    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement.encode())


def _catalog(postgres_dsn: str, table: str) -> Any:
    """What a refusal must leave as it was: the tables' triggers and rules, the layout comment, the head."""
    import psycopg

    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        tables = (table, f"{table}_changes")
        return (conn.execute("SELECT tgname FROM pg_trigger WHERE NOT tgisinternal AND tgrelid::regclass::text"
                             " IN (%s, %s) ORDER BY 1", tables).fetchall(),
                conn.execute("SELECT rulename FROM pg_rules WHERE tablename IN (%s, %s) ORDER BY 1", tables).fetchall(),
                conn.execute("SELECT obj_description(to_regclass(%s), 'pg_class')", (table,)).fetchone(),
                conn.execute(f'SELECT version, claim FROM "{table}"').fetchall())


def _unclaim(table: str) -> list[str]:
    # (a BEFORE UPDATE trigger: every claim is written without its owner, so the next replica's claim wins too)
    return [f'CREATE FUNCTION "{table}_unclaim"() RETURNS trigger LANGUAGE plpgsql AS '
            "$$ BEGIN NEW.claim := NULL; RETURN NEW; END $$",
            f'CREATE TRIGGER "{HOSTILE_NAME}" BEFORE UPDATE ON "{table}" FOR EACH ROW '
            f'EXECUTE FUNCTION "{table}_unclaim"()']


def _lose_changes(table: str) -> list[str]:
    # (a rule on the change table: every appended change is dropped while the head moves on)
    return [f'CREATE RULE lose_changes AS ON INSERT TO "{table}_changes" DO INSTEAD NOTHING']


@pytest.mark.parametrize(("made", "said", "hidden"), [
    (_unclaim, f"the triggers {quoted_name(HOSTILE_NAME, 40)}", "NEW.claim"),
    (_lose_changes, "the rules 'lose_changes'", "INSTEAD NOTHING"),
], ids=["trigger", "rule"])
def test_a_trigger_or_a_rule_on_the_store_tables_is_refused_at_open(postgres_dsn: str, table: str, made: Any,
                                                                    said: str, hidden: str) -> None:
    _run(postgres_dsn, *made(table))
    before = _catalog(postgres_dsn, table)

    refused = refused_open(lambda: PostgresStore(postgres_dsn, table=table))

    assert refused.code == "STORE-SCHEMA" and refused.thread_id is None
    assert said in str(refused) and "agui_client does not make" in str(refused), str(refused)
    assert hidden not in str(refused) and "\x1b" not in str(refused)
    assert _catalog(postgres_dsn, table) == before


def test_a_foreign_key_to_the_thread_table_is_postgresql_own_and_opens(postgres_dsn: str, table: str) -> None:
    # (a foreign key puts internal triggers on the table it references: those are not the file's code)
    _run(postgres_dsn, f'CREATE TABLE "{table}_audit" (thread_id TEXT REFERENCES "{table}" (thread_id))')
    with PostgresStore(postgres_dsn, table=table) as store:
        assert store.claim("t", expected_version=1, owner="me") == 2


#: The operator's audit trigger's name, as the trusted_objects in these tests spell it.
AUDIT = "audit_threads"


def _audit(table: str) -> list[str]:
    # (an operator's audit trail: every head row as each write left it, copied into a table of its own)
    return [f'CREATE TABLE "{table}_audit" (thread_id TEXT, version BIGINT, claim TEXT, op TEXT)',
            f'CREATE FUNCTION "{table}_audited"() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN '
            f'INSERT INTO "{table}_audit" VALUES (NEW.thread_id, NEW.version, NEW.claim, TG_OP); RETURN NULL; END $$',
            f'CREATE TRIGGER {AUDIT} AFTER INSERT OR UPDATE ON "{table}" FOR EACH ROW '
            f'EXECUTE FUNCTION "{table}_audited"()']


def _audited(postgres_dsn: str, table: str, thread_id: str) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        return conn.execute(f'SELECT op, version, claim IS NOT NULL FROM "{table}_audit" WHERE thread_id = %s'
                            " ORDER BY version", (thread_id,)).fetchall()


def test_a_trusted_audit_trigger_opens_and_runs_with_every_write_of_a_run(drive: Any, served: Any,
                                                                          postgres_dsn: str, table: str) -> None:
    _run(postgres_dsn, *_audit(table))
    endpoint = served(ScriptedAgent.chat())

    with PostgresStore(postgres_dsn, table=table, trusted_objects=(AUDIT,)) as store, \
            drive.client(endpoint.url, store=store) as client:
        thread = client.thread("r")
        thread.run("hi")
        thread.run("again")
        stored = store.load("r")

    assert stored is not None and len(endpoint.received) == 2
    rows = _audited(postgres_dsn, table, "r")
    # Each turn: a claim (the first one creates the row), then the run's changes with the claim let go.
    assert rows[0][0] == "INSERT" and rows[0][2] is True
    assert [claimed for _op, _version, claimed in rows] == [True, False, True, False]
    assert rows[-1][1] == stored.version and stored.claim is None


def test_an_untrusted_trigger_beside_a_trusted_one_is_still_refused(postgres_dsn: str, table: str) -> None:
    _run(postgres_dsn, *_audit(table), *_unclaim(table))
    before = _catalog(postgres_dsn, table)

    refused = refused_open(lambda: PostgresStore(postgres_dsn, table=table, trusted_objects=(AUDIT,)))

    said = str(refused)
    assert refused.code == "STORE-SCHEMA"
    assert f"the triggers {quoted_name(HOSTILE_NAME, 40)}," in said and AUDIT not in said, said
    assert _catalog(postgres_dsn, table) == before


def test_a_misspelt_trusted_name_leaves_the_trigger_refused_and_says_so(postgres_dsn: str, table: str) -> None:
    _run(postgres_dsn, *_audit(table))

    refused = refused_open(lambda: PostgresStore(postgres_dsn, table=table, trusted_objects=("audit_thread",)))

    said = str(refused)
    assert refused.code == "STORE-SCHEMA" and f"the triggers '{AUDIT}'" in said
    assert "trusted_objects names 'audit_thread', found on none of them" in said, said


def test_a_trusted_name_on_neither_table_is_warned_about_and_the_store_opens(postgres_dsn: str, table: str) -> None:
    with pytest.warns(AguiWarning) as warned, \
            PostgresStore(postgres_dsn, table=table, trusted_objects=(AUDIT, "Audit_Threads")) as store:
        assert store.claim("t", expected_version=1, owner="me") == 2

    (said,) = [str(w.message) for w in warned]
    assert said.startswith("[STORE-TRUSTED-ABSENT]") and table in said, said
    assert f"'Audit_Threads', '{AUDIT}', but no trigger or rule" in said, said


def test_trusted_objects_given_as_one_string_is_refused_before_connecting(closed_port: int) -> None:
    # (a string is a collection of letters: "audit" would trust objects named a, u, d ...)
    with pytest.raises(ValueError) as caught:
        PostgresStore(f"host=127.0.0.1 port={closed_port} dbname=none", trusted_objects=AUDIT)

    assert f"not the single string '{AUDIT}'" in str(caught.value)


def _head(postgres_dsn: str, table: str, thread_id: str) -> Any:
    import psycopg

    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        return conn.execute(f'SELECT version, claim FROM "{table}" WHERE thread_id = %s', (thread_id,)).fetchone()


@pytest.mark.parametrize(("made", "said", "dropped"), [
    (_unclaim, f"the triggers {quoted_name(HOSTILE_NAME, 40)}", 'DROP TRIGGER "{name}" ON "{table}"'),
    (_lose_changes, "the rules 'lose_changes'", 'DROP RULE lose_changes ON "{table}_changes"'),
], ids=["trigger", "rule"])
def test_a_trigger_or_rule_added_after_open_is_refused_at_the_next_claim_with_nothing_sent(
        drive: Any, served: Any, postgres_dsn: str, table: str, made: Any, said: str, dropped: str) -> None:
    # Before: looked at only when a store opened the tables, a trigger added later ran inside every claim
    # of a store already open (this one clears each claim: a second replica's claim then wins too), and a
    # rule on the change table dropped the run's save. Every claim's own statement now asks whether the
    # tables carry one; the claim is refused, and nothing sent, by a store opened before it was added,
    # for a thread it holds and for a new one.
    endpoint = served(ScriptedAgent.chat())
    with PostgresStore(postgres_dsn, table=table) as store, drive.client(endpoint.url, store=store) as client:
        thread = client.thread("r")
        thread.run("hi")
        held = _head(postgres_dsn, table, "r")
        _run(postgres_dsn, *made(table))
        with pytest.raises(StoreError) as later:
            thread.run("again")
        with pytest.raises(StoreError) as created:
            client.thread("new").run("hi")
        sent = len(endpoint.received)
        _run(postgres_dsn, dropped.format(name=HOSTILE_NAME, table=table))
        thread.run("once dropped")

    assert sent == 1 and len(endpoint.received) == 2
    for refused, thread_id in ((later.value, "r"), (created.value, "new")):
        text = str(refused)
        assert (refused.code, refused.thread_id) == ("STORE-SCHEMA", thread_id)
        assert f"{said}, added after the store opened them" in text, text
        assert "NEW.claim" not in text and "INSTEAD" not in text and "\x1b" not in text
    assert held == (1, None)
    assert _head(postgres_dsn, table, "new") is None
    assert _head(postgres_dsn, table, "r") == (3, None)


def test_a_trusted_trigger_added_after_open_lets_the_claims_go_on(
        drive: Any, served: Any, postgres_dsn: str, table: str) -> None:
    endpoint = served(ScriptedAgent.chat())
    with pytest.warns(AguiWarning), PostgresStore(postgres_dsn, table=table, trusted_objects=(AUDIT,)) as store, \
            drive.client(endpoint.url, store=store) as client:
        _run(postgres_dsn, *_audit(table))
        client.thread("r").run("hi")
        client.thread("r2").run("hi")

    assert len(endpoint.received) == 2
    assert [claimed for _op, _version, claimed in _audited(postgres_dsn, table, "r")] == [True, False]


def _rows(postgres_dsn: str, table: str) -> Any:
    """Every head and change row of the store's tables, and what the audit trigger recorded (if made)."""
    import psycopg

    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        audited = conn.execute("SELECT to_regclass(%s)", (f'"{table}_audit"',)).fetchone()
        return (conn.execute(f'SELECT * FROM "{table}" ORDER BY thread_id').fetchall(),
                conn.execute(f'SELECT * FROM "{table}_changes" ORDER BY thread_id, seq').fetchall(),
                audited is not None and audited[0] is not None
                and conn.execute(f'SELECT * FROM "{table}_audit"').fetchall())


@pytest.mark.parametrize(("made", "said", "dropped", "on_thread_table"), [
    (_audit, f"the triggers '{AUDIT}'", f'DROP TRIGGER {AUDIT} ON "{{table}}"', True),
    (_lose_changes, "the rules 'lose_changes'", 'DROP RULE lose_changes ON "{table}_changes"', False),
], ids=["trigger", "rule"])
def test_every_write_refuses_a_trigger_or_rule_added_after_open_and_writes_nothing(
        postgres_dsn: str, table: str, made: Any, said: str, dropped: str, on_thread_table: bool) -> None:
    # Before: only a claim asked whether the tables carried code added after the store opened them, so
    # until the next claim a save, an append (the rule dropped its change while the head moved on), a
    # release, a thread's creation and a delete ran it. Each write's own statement now asks too. A
    # release asks about the thread table alone, the only one it writes: code on the change table alone
    # lets it give the claim back (it runs none), and the run's save is still refused.
    with PostgresStore(postgres_dsn, table=table) as store:
        store.append("t", {"messagesFrom": 0}, expected_version=1)
        assert store.claim("t", expected_version=2, owner="me") == 3
        _run(postgres_dsn, *made(table))
        before = _rows(postgres_dsn, table)
        writes = {
            "save": lambda: store.save("t", {"n": 2}, expected_version=3),
            "append": lambda: store.append("t", {"messagesFrom": 1}, expected_version=3),
            "delete": lambda: store.delete("t"),
        }
        refusals = []
        for operation, write in writes.items():
            with pytest.raises(StoreError) as caught:
                write()
            refusals.append((operation, "t", caught.value))
        with pytest.raises(StoreError) as created:
            store.save("new", {"n": 1}, expected_version=None)
        refusals.append(("save", "new", created.value))
        after = _rows(postgres_dsn, table)
        if on_thread_table:
            with pytest.raises(StoreError) as caught:
                store.release("t", claimed_version=3, owner="me")
            refusals.append(("release", "t", caught.value))
            _run(postgres_dsn, dropped.format(table=table))
        released = store.release("t", claimed_version=3, owner="me")
        released_rows = _rows(postgres_dsn, table)

    for operation, thread_id, refused in refusals:
        text = str(refused)
        assert (refused.code, refused.thread_id) == ("STORE-SCHEMA", thread_id), text
        assert f"{said}, added after the store opened them" in text and f"the {operation} wrote nothing" in text, text
        assert "INSTEAD" not in text and "INSERT INTO" not in text
    assert after == before and before[2] in (False, [])  # (nothing written, and the trigger never ran)
    assert released == 4
    # (the release wrote the head alone: the change rows are the ones before it)
    assert released_rows[1] == before[1]
