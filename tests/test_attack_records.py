"""Attacks by what the client reads back rather than what an agent streams: a thread record another
replica (or another tool) wrote into the store, and the location an error or a warning names.

A store is shared by the replicas of a service, so a record may hold what none of this release's
writers would: a claim owner holding an escape sequence or a megabyte, a head field of the wrong
type, a subagent or a run id whose key is text meant for a terminal. Each test below writes such a
record by hand (SQLite, as the CLI's ``--thread-file``; the rules are the ones every store shares) and
checks that the refusal is typed, names the thread and the field, quotes what it found escaped and
short, and leaves the record as it was. A thread file may also bring code: a trigger on the store's
tables, run by every write, is refused when the file is opened. The last two check the location every
error and warning names (run, event type, pointer) for the same two faults, through a run on a real
server and through Python's own warning display. Each failed before its fix (CHANGELOG,
"Twenty-third round").
"""

from __future__ import annotations

import re
import sqlite3
import sys
import uuid
import warnings
from pathlib import Path
from typing import Any

import pytest
import redis
from ag_ui.core import ResumeEntry as Browsers
from clikit import agui_here
from wirekit import request_body, sse

from agui_client import AguiWarning, ConcurrentResume, StoreError, StreamWarning, ThreadState, decode_event
from agui_client.ag_ui import from_ag_ui
from agui_client.stores import RedisStore, SqliteStore
from agui_client.wire.sink import WARNINGS_PER_CODE

#: OSC 52 (write the clipboard), a screen clear, a bidi override and a Hangul filler (which ``repr``
#: leaves as it is): what a terminal obeys or a reader cannot see.
HOSTILE = "\x1b]52;c;ZXZpbA==\x07\x1b[2J\u202eowner\u3164"
#: A character no message may carry raw: C0 (but newline) and C1 controls, bidi, zero-width, fillers.
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\u3164]")
#: What a message may take whatever a record or an agent holds (the words of the message, and each
#: quoted value cut at 500 characters).
MESSAGE_CHARS = 2_000


def _shown_safely(text: str) -> None:
    assert RAW.search(text) is None, text[:300]
    assert len(text) < MESSAGE_CHARS, len(text)


def _thread_file(tmp_path: Path, data: dict[str, Any] | None = None) -> Path:
    path = tmp_path / "threads.db"
    with SqliteStore(path) as store:
        store.save("t", data if data is not None else {"messages": []}, expected_version=None)
    return path


def _set_head(path: Path, field: str, value: Any) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute(f"UPDATE agui_threads SET {field} = ? WHERE thread_id = 't'", (value,))
    conn.close()


def _agent(received: list[Any]) -> Any:
    """An agent that notes each request and answers nothing useful: the refusals below send none."""
    async def app(scope: Any, receive: Any, send: Any) -> None:
        received.append(scope["path"])
        await send({"type": "http.response.start", "status": 500, "headers": []})
        await send({"type": "http.response.body", "body": b"", "more_body": False})
    return app


# --------------------------------------------------------------------------------------------------
# 1. A claim another writer stored
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("claim", [HOSTILE, HOSTILE * 50_000], ids=["controls", "a-megabyte"])
def test_a_forged_claim_is_quoted_as_an_id_in_every_refusal(drive: Any, served: Any, tmp_path: Path,
                                                            claim: str) -> None:
    # The release named the owner raw: OSC 52 went to the terminal of whoever printed the traceback.
    # The run's refusal quoted it whole, a megabyte of message.
    path = _thread_file(tmp_path)
    _set_head(path, "claim", claim)
    received: list[Any] = []
    endpoint = served(_agent(received))
    with SqliteStore(path) as store, drive.client(endpoint.url, store=store) as client:
        thread = client.thread("t")
        refusals = []
        for act in (thread.release_claim, lambda: thread.run("hi")):
            with pytest.raises(ConcurrentResume) as caught:
                act()
            refusals.append(caught.value)
        stored = store.load("t")
    for refused in refusals:
        assert refused.thread_id == "t"
        assert "claimed by" in str(refused)
        _shown_safely(str(refused))
    assert received == []  # (nothing sent under another writer's claim)
    assert stored is not None and stored.claim == claim and stored.version == 1  # (left as it was)


def test_a_forged_claim_in_redis_is_quoted_as_an_id(redis_url: str) -> None:
    # The replica's case: the claim read back by the Redis write script, judged by the shared rule.
    prefix = f"agui:attack-records:{uuid.uuid4().hex}:"
    with redis.Redis.from_url(redis_url) as raw, RedisStore(redis_url, prefix=prefix) as store:
        store.save("t", {"messages": []}, expected_version=None)
        raw.hset(prefix + "t", "claim", HOSTILE * 50_000)
        with pytest.raises(ConcurrentResume) as caught:
            store.claim("t", expected_version=1, owner="me")
        store.delete("t")
    assert caught.value.thread_id == "t" and caught.value.actual_version == 1
    _shown_safely(str(caught.value))


# --------------------------------------------------------------------------------------------------
# 2. A head of the wrong type: named, quoted short
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("field", "value", "said"), [
    ("version", b"v" * 5_000_000, "version"),
    ("format", HOSTILE * 50_000, "format"),
    ("claim", HOSTILE.encode() * 100_000, "claim"),
    ("record_id", HOSTILE.encode() * 100_000, "record id"),
], ids=["version", "format", "claim", "record-id"])
def test_a_damaged_head_names_its_field_and_quotes_it_short(tmp_path: Path, field: str, value: Any,
                                                           said: str) -> None:
    # The release said "version, format or claim is damaged" and quoted all three whole: 5 MB of bytes'
    # repr in the message (and in every log line that printed it), controls and all.
    path = _thread_file(tmp_path)
    _set_head(path, field, value)
    with SqliteStore(path) as store:
        for act in (lambda: store.load("t"), lambda: store.claim("t", expected_version=1, owner="me"),
                    lambda: store.save("t", {"messages": []}, expected_version=1)):
            with pytest.raises(StoreError) as caught:
                act()
            assert caught.value.thread_id == "t"
            assert f"{said} is damaged" in str(caught.value)
            _shown_safely(str(caught.value))


# --------------------------------------------------------------------------------------------------
# 3. A record's keys in the pointer an error names
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("data", "pointer"), [
    ({"subagents": {HOSTILE: 5}}, "/subagents/"),
    ({"subagents": {"s": {"subagent_run_id": "s", "name": "n", HOSTILE: 1}}}, "/subagents/s/"),
    ({"usageByRun": {HOSTILE: 5}}, "/usageByRun/"),
    ({"subagents": {"s" * 1_000_000: 5}}, "/subagents/sss"),
    ({"openInterruptsVia": HOSTILE * 50_000}, "openInterruptsVia"),
], ids=["subagent-id", "subagent-field", "usage-run-id", "subagent-id-of-a-megabyte", "bridge-name"])
def test_a_records_keys_are_escaped_and_cut_in_the_error_naming_them(drive: Any, tmp_path: Path,
                                                                     data: dict[str, Any], pointer: str) -> None:
    # The pointer was written as the record spelled its keys: an escape sequence went raw into the
    # StoreError, and a key of a megabyte made a megabyte of message.
    path = _thread_file(tmp_path, {"messages": [], **data})
    with SqliteStore(path) as store, drive.client("http://127.0.0.1:9/agent", store=store) as client:
        with pytest.raises(StoreError) as caught:
            client.thread("t")
    assert caught.value.thread_id == "t"
    assert "cannot be read" in str(caught.value) and pointer in str(caught.value)
    _shown_safely(str(caught.value))


# --------------------------------------------------------------------------------------------------
# 3b. Code the file brings: a trigger on the store's tables
# --------------------------------------------------------------------------------------------------

#: A trigger whose query never ends: every write to the heads (every claim) ran it for ever, in a
#: thread no caller can cancel (the async shells run the store in a worker thread).
ENDLESS = ("CREATE TRIGGER spin AFTER UPDATE ON agui_threads BEGIN SELECT count(*) FROM (WITH RECURSIVE "
           "n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT x FROM n); END")
#: A trigger that undoes every claim: two replicas resuming the same interrupts both sent.
UNCLAIM = ("CREATE TRIGGER unclaim AFTER UPDATE OF claim ON Agui_Threads BEGIN "
           "UPDATE agui_threads SET claim = NULL WHERE thread_id = NEW.thread_id; END")


def _with_trigger(tmp_path: Path, trigger: str) -> Path:
    path = _thread_file(tmp_path)
    with sqlite3.connect(path) as conn:
        conn.execute(trigger)
    conn.close()
    return path


def _stored_as_it_was(path: Path, trigger: str) -> None:
    with sqlite3.connect(path) as conn:
        head = conn.execute("SELECT version, claim FROM agui_threads WHERE thread_id = 't'").fetchone()
        triggers = [name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")]
    conn.close()
    assert head == (1, None) and triggers == [trigger]


@pytest.mark.parametrize(("trigger", "name"), [(ENDLESS, "spin"), (UNCLAIM, "unclaim")], ids=["endless", "unclaim"])
def test_a_thread_file_whose_tables_carry_a_trigger_is_refused_when_opened(tmp_path: Path, trigger: str,
                                                                           name: str) -> None:
    # (the release opened it, and the first claim ran the trigger: for ever, or undoing the claim)
    path = _with_trigger(tmp_path, trigger)
    with pytest.raises(StoreError) as refused:
        SqliteStore(path)
    assert f"triggers '{name}'" in str(refused.value) and "not an agui_client store" in str(refused.value)
    _stored_as_it_was(path, name)


def test_agui_run_on_a_thread_file_with_a_trigger_stops_before_sending(served: Any, tmp_path: Path) -> None:
    # (the release claimed, the trigger undid the claim, and the turn went to the agent unguarded)
    path = _with_trigger(tmp_path, UNCLAIM)
    received: list[Any] = []
    endpoint = served(_agent(received))
    ran = agui_here("run", endpoint.url, "-m", "hi", "--thread-file", str(path), "--thread-id", "t")
    assert ran.returncode == 2, ran
    assert "triggers 'unclaim'" in ran.stderr
    assert received == []
    _stored_as_it_was(path, "unclaim")


# --------------------------------------------------------------------------------------------------
# 4. The location every warning and error names
# --------------------------------------------------------------------------------------------------


def _answering(body: bytes) -> Any:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        await request_body(receive)  # (the request, read whole and let go)
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")]})
        await send({"type": "http.response.body", "body": body, "more_body": False})
    return app


def test_a_runs_warnings_name_the_agents_keys_and_types_escaped(drive: Any, served: Any) -> None:
    # "[UK-03] run 'r', event #1, TEXT_MESSAGE_START, at /<ESC>]52;..." : the detail was escaped, the
    # location not; an unknown type was written raw the same way.
    long_key = "k" * 200_000
    body = sse(
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant", HOSTILE: 1, long_key: 2},
        {"type": "X" + HOSTILE},
        {"type": "TEXT_MESSAGE_END", "messageId": "m"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
    )
    endpoint = served(_answering(body))
    with drive.client(endpoint.url) as client:
        result = client.thread("t").run("hi")
    assert result.outcome == "success"
    found = {(w.code, w.pointer, w.event_type) for w in result.warnings}
    # (the attributes keep what the agent sent, as they came)
    assert ("UK-03", "/" + HOSTILE, "TEXT_MESSAGE_START") in found
    assert ("UK-03", "/" + long_key, "TEXT_MESSAGE_START") in found
    assert ("UK-02", None, "X" + HOSTILE) in found
    for warning in result.warnings:
        # (the location as an id is shown, Hangul filler escaped; the detail quotes a key by repr(),
        # which escapes every control and format character)
        location, _, detail = str(warning).partition(": ")
        _shown_safely(location)
        assert RAW.search(detail.replace("\u3164", "")) is None and len(detail) < MESSAGE_CHARS, detail[:300]
    # A run id is quoted as an id is: repr() leaves a Hangul filler as it is.
    assert str(StreamWarning(code="UK-03", message="m", run_id="r\u3164")).startswith("[UK-03] run 'r\\u3164'")


def test_a_warning_outside_a_run_reaches_pythons_display_escaped(tmp_path: Path) -> None:
    # Outside a run a decoding warning goes through warnings.warn, which Python prints to stderr: a
    # stored message's unknown key, or an event decoded by hand, put OSC 52 on the terminal.
    path = _thread_file(tmp_path, {"messages": [{"id": "m", "role": "user", "content": "x", HOSTILE: 1}],
                                   "openInterrupts": [{"id": "i", "reason": "r", HOSTILE: 1}]})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with SqliteStore(path) as store:
            stored = store.load("t")
        assert stored is not None
        thread = ThreadState.load(stored.data)
        decode_event({"type": "RUN_STARTED", "threadId": "t", "runId": "r", HOSTILE: 1})
        decode_event({"type": "Q" + HOSTILE})
    assert thread.messages[0].id == "m" and [i.id for i in thread.open_interrupts] == ["i"]
    shown = [warnings.formatwarning(w.message, w.category, w.filename, w.lineno) for w in caught
             if issubclass(w.category, AguiWarning)]
    assert len(shown) == 4
    for text in shown:
        assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text, text


def test_warnings_outside_a_run_keep_a_bounded_part_of_memory() -> None:
    # A relay crossing each browser's resume entries with from_ag_ui: a key of its own in each request
    # was a new text for Python's warning registry, kept for the life of the process, and a new line on
    # stderr (20,000 requests held 16 MB). Past WARNINGS_PER_CODE distinct ones, one says so.
    def registered() -> int:
        return sum(len(getattr(module, "__warningregistry__", None) or ()) for module in list(sys.modules.values()))

    shown: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        warnings.showwarning = lambda message, *_, **__: shown.append(str(message))
        before = registered()
        for k in range(WARNINGS_PER_CODE + 500):
            entry = from_ag_ui(Browsers.model_validate({"interruptId": "i", "status": "cancelled", f"k{k}": 1}))
            assert entry.interrupt_id == "i"
        grown = registered() - before
    assert len(shown) == WARNINGS_PER_CODE + 1 and all("[UK-03]" in text for text in shown)
    assert shown[-1].endswith("outside a run: further new ones are not shown)")
    assert grown <= WARNINGS_PER_CODE + 2, grown
