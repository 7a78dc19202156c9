"""The legacy bridge through the public API, against recorded ag-ui-langgraph streams served on 127.0.0.1.

``tests/data/legacy/`` holds what the real producer (the interop graph, ``tests/interop``) sent for an
interrupted run and its resume, recorded by ``tests/interop/record_legacy.py``: answered (approved,
rejected), abandoned (cancelled), and the ``lean`` endpoint (no ``rawEvent``, so no LangGraph id).
A ``ScriptedAgent`` plays run ``n`` of a case from ``<case>-n.sse`` (the recorded thread and run ids
replaced by the request's); ``<case>.requests.json`` is what the client sent the real producer, so
the body sent here is compared with it. Every test body runs through both shells (``drive``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from clikit import agui_process

import agui_client as ag
from agui_client.core.legacy import ASKS_NOT_KEPT, CUSTOM_ASKED, MAX_ASKS
from agui_client.stores import SqliteStore
from agui_client.testing import ScriptedAgent

DATA = Path(__file__).resolve().parent.parent / "data" / "legacy"
UTC = timezone.utc

APPROVAL_SCHEMA = {"type": "object", "required": ["approved"],
                   "properties": {"approved": {"type": "boolean"}, "reason": {"type": "string"}}}


def recorded(name: str, run_input: Any) -> bytes:
    """The recording ``name``, its thread and run ids made the request's."""
    text = (DATA / name).read_text(encoding="utf-8")
    first = json.loads(text.split("\n", 1)[0][len("data:"):])
    return text.replace(first["threadId"], run_input.thread_id).replace(first["runId"], run_input.run_id).encode()


def requests_of(case: str) -> list[dict[str, Any]]:
    """What the client sent the real producer in the recorded case."""
    loaded: list[dict[str, Any]] = json.loads((DATA / f"{case}.requests.json").read_text(encoding="utf-8"))
    return loaded


def producer(case: str) -> ScriptedAgent:
    """Plays the recorded case: run 1 raises the interrupt, run 2 answers the resume."""
    return ScriptedAgent([lambda run_input: recorded(f"{case}-1.sse", run_input),
                          lambda run_input: recorded(f"{case}-2.sse", run_input)], stateless=True)


def first_turn(case: str) -> ag.UserMessage:
    """The recorded user turn (its id is the one the recorded snapshots name)."""
    sent = requests_of(case)[0]["messages"][0]
    return ag.UserMessage(id=sent["id"], content=sent["content"])


def native_id(case: str) -> str:
    """LangGraph's interrupt id, as the recorded CUSTOM event's rawEvent carries it."""
    for line in (DATA / f"{case}-1.sse").read_text(encoding="utf-8").splitlines():
        if line.startswith("data:") and '"on_interrupt"' in line:
            found: str = json.loads(line[5:])["rawEvent"]["id"]
            return found
    raise AssertionError(f"no on_interrupt in {case}-1.sse")


def last_event(name: str) -> dict[str, Any]:
    """The last event of a recording."""
    lines = [line for line in (DATA / name).read_text(encoding="utf-8").splitlines() if line.startswith("data:")]
    found: dict[str, Any] = json.loads(lines[-1][5:])
    return found


def gated_call(case: str) -> str:
    """The tool call the recorded interrupt gates."""
    for line in (DATA / f"{case}-1.sse").read_text(encoding="utf-8").splitlines():
        if line.startswith("data:") and '"TOOL_CALL_START"' in line:
            found: str = json.loads(line[5:])["toolCallId"]
            return found
    raise AssertionError(f"no tool call in {case}-1.sse")


# --------------------------------------------------------------------------------------------------
# without the bridge: a warning, nothing else
# --------------------------------------------------------------------------------------------------

def test_without_the_bridge_a_legacy_pause_is_a_success_with_a_warning(drive: Any, served: Any) -> None:
    endpoint = served(producer("approved"))
    with drive.client(endpoint.url) as client:
        thread = client.thread()
        result = thread.run(first_turn("approved"))

        assert result.outcome == "success" and result.interrupts == () and result.bridged is None
        (warning,) = result.warnings
        assert warning.code == CUSTOM_ASKED
        assert warning.event_type == "RUN_FINISHED" and warning.index == result.events - 1
        assert warning.run_id == result.run_id
        assert "emit_interrupt_outcome=True" in warning.message and "legacy_interrupts='langgraph'" in warning.message
        # Nothing else changes: the gated call is pending, nothing is open, a resume list is refused.
        assert result.pending_tool_call_ids == (gated_call("approved"),)
        assert thread.open_interrupts == () and thread.state.open_interrupts_via is None
        with pytest.raises(ag.NothingToResume):
            thread.run(resume=[ag.ResumeEntry(interrupt_id=native_id("approved"), status="cancelled")])
    assert len(endpoint.received) == 1


# --------------------------------------------------------------------------------------------------
# with the bridge: raised, answered, abandoned
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("case", "answer", "tool_said"), [
    ("approved", {"approved": True}, "deleted /srv/x"),
    ("rejected", {"approved": False, "reason": "not today"}, "rejected: not today"),
    ("cancelled", None, "cancelled"),
])
def test_a_bridged_interrupt_is_answered_or_abandoned_in_the_producers_channel(
        drive: Any, served: Any, case: str, answer: Any, tool_said: str) -> None:
    endpoint = served(producer(case))
    with drive.client(endpoint.url, legacy_interrupts="langgraph") as client:
        thread = client.thread()
        first = thread.run(first_turn(case))

        # The wire said success (a bare RUN_FINISHED); the bridge reports the interrupt outcome.
        assert last_event(f"{case}-1.sse").keys() == {"type", "threadId", "runId"}  # a bare RUN_FINISHED
        assert first.outcome == "interrupt" and first.bridged == "langgraph" and first.warnings == ()
        assert first.pending_tool_call_ids == ()  # (none on the interrupt outcome)
        (interrupt,) = first.interrupts
        assert interrupt.id == native_id(case)  # LangGraph's own id, from the event's rawEvent
        assert interrupt.reason == "tool_approval" and interrupt.message == "Delete /srv/x?"
        assert interrupt.tool_call_id == gated_call(case)
        assert interrupt.response_schema == APPROVAL_SCHEMA
        assert interrupt.metadata is not None
        assert interrupt.metadata["langgraph"]["raw"]["toolCallId"] == gated_call(case)
        assert thread.open_interrupts == first.interrupts and thread.state.open_interrupts_via == "langgraph"

        builder = thread.resume_builder()
        if answer is None:
            builder.abandon(interrupt.id)
        else:
            builder.answer(interrupt.id, answer)
        second = thread.run(resume=builder)

    sent = endpoint.received[1].body
    assert "resume" not in sent  # never in both channels
    assert sent["forwardedProps"] == requests_of(case)[1]["forwardedProps"]  # what the real producer was sent
    expected = answer if answer is not None else {"__agui_cancelled__": True, "interrupt_id": interrupt.id}
    assert sent["forwardedProps"] == {"command": {"resume": expected}}
    assert second.outcome == "success" and second.bridged is None and second.warnings == ()
    assert thread.open_interrupts == () and thread.state.open_interrupts_via is None
    assert second.text == f"tool said: {tool_said}"
    (tool,) = [m for m in thread.state.messages if isinstance(m, ag.ToolMessage)]
    assert tool.tool_call_id == gated_call(case) and tool.content == tool_said


def test_without_a_raw_event_the_bridge_names_the_interrupt_after_the_run(drive: Any, served: Any) -> None:
    endpoint = served(producer("lean"))
    with drive.client(endpoint.url, legacy_interrupts="langgraph") as client:
        thread = client.thread()
        first = thread.run(first_turn("lean"))
        (interrupt,) = first.interrupts
        assert interrupt.id == f"{first.run_id}:on_interrupt:0"
        assert interrupt.metadata is not None and interrupt.metadata["langgraph"]["id"] is None
        assert interrupt.response_schema == APPROVAL_SCHEMA
        second = thread.run(resume=thread.resume_builder().answer(interrupt.id, {"approved": True}))

    assert endpoint.received[1].body["forwardedProps"] == {"command": {"resume": {"approved": True}}}
    assert "resume" not in endpoint.received[1].body
    assert second.outcome == "success" and second.text == "tool said: deleted /srv/x"


# --------------------------------------------------------------------------------------------------
# the resume rules, unchanged: refused before anything is sent
# --------------------------------------------------------------------------------------------------

def test_an_incomplete_answer_is_refused_before_anything_is_sent(drive: Any, served: Any) -> None:
    endpoint = served(producer("approved"))
    with drive.client(endpoint.url, legacy_interrupts="langgraph") as client:
        thread = client.thread()
        (interrupt,) = thread.run(first_turn("approved")).interrupts

        with pytest.raises(ag.UncoveredInterrupts) as uncovered:
            thread.run("never mind")
        assert uncovered.value.ids == (interrupt.id,)
        with pytest.raises(ag.UncoveredInterrupts):
            thread.run(resume=[])  # an empty list covers nothing either
        with pytest.raises(ag.InvalidResumePayload) as invalid:
            thread.run(resume=thread.resume_builder().answer(interrupt.id, {"approved": "yes"}))
        assert invalid.value.ids == (interrupt.id,)
        with pytest.raises(ag.UnknownInterrupt):
            thread.run(resume=[ag.ResumeEntry(interrupt_id=interrupt.id, status="resolved", payload={"approved": True}),
                               ag.ResumeEntry(interrupt_id="another", status="cancelled")])
        with pytest.raises(ag.ResumeRefused) as both:
            # The caller's own command.resume next to the bridge's: one answer, one channel.
            thread.run(resume=thread.resume_builder().answer(interrupt.id, {"approved": True}),
                       forwarded_props={"command": {"resume": {"approved": True}}})
        assert both.value.problems == {"legacy-channel": (interrupt.id,)}

        assert len(endpoint.received) == 1
        assert thread.open_interrupts == (interrupt,)
        # The caller's other forwarded props travel next to the answer.
        thread.run(resume=thread.resume_builder().answer(interrupt.id, {"approved": True}),
                   forwarded_props={"streamSubgraphs": False, "command": {"goto": None}})
    assert endpoint.received[1].body["forwardedProps"] == {
        "streamSubgraphs": False, "command": {"goto": None, "resume": {"approved": True}}}


def on_interrupt(value: Any, **extra: Any) -> Callable[[Any], list[dict[str, Any]]]:
    """A legacy pause with the given on_interrupt value (sent as JSON text, as the adapter sends it)."""
    def step(run_input: Any) -> list[dict[str, Any]]:
        ids = {"threadId": run_input.thread_id, "runId": run_input.run_id}
        return [{"type": "RUN_STARTED", **ids},
                {"type": "CUSTOM", "name": "on_interrupt", "value": json.dumps(value), **extra},
                {"type": "RUN_FINISHED", **ids}]
    return step


def test_an_expired_bridged_interrupt_can_only_be_abandoned(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent([on_interrupt({"message": "Still there?", "expiresAt": "2026-01-01T00:00:00Z"},
                                                  rawEvent={"id": "lg-1"})], cycle=True, stateless=True))
    later = datetime(2026, 6, 1, tzinfo=UTC)
    with drive.client(endpoint.url, legacy_interrupts="langgraph", clock=lambda: later) as client:
        thread = client.thread()
        (interrupt,) = thread.run("hi").interrupts
        assert interrupt.expires_at == "2026-01-01T00:00:00Z" and interrupt.message == "Still there?"
        with pytest.raises(ag.ExpiredInterruptAnswered):
            thread.run(resume=[ag.ResumeEntry(interrupt_id="lg-1", status="resolved", payload="yes")])
        assert len(endpoint.received) == 1
        thread.run(resume=thread.resume_builder().abandon("lg-1"))
    assert endpoint.received[1].body["forwardedProps"] == {
        "command": {"resume": {"__agui_cancelled__": True, "interrupt_id": "lg-1"}}}


def test_the_legacy_channel_cannot_carry_a_null_answer(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent([on_interrupt("Go ahead?")], cycle=True, stateless=True))
    with drive.client(endpoint.url, legacy_interrupts="langgraph") as client:
        thread = client.thread()
        (interrupt,) = thread.run("hi").interrupts
        assert interrupt.message == "Go ahead?" and interrupt.response_schema is None
        with pytest.raises(ag.InvalidResumePayload) as refused:
            thread.run(resume=thread.resume_builder().answer(interrupt.id))  # no payload: LangGraph would ask again
        assert refused.value.ids == (interrupt.id,) and interrupt.id in refused.value.errors
        assert len(endpoint.received) == 1
        # A text answer goes as JSON text: the adapter parses text that is JSON ("true" would become true).
        thread.run(resume=thread.resume_builder().answer(interrupt.id, "true"))
    assert endpoint.received[1].body["forwardedProps"] == {"command": {"resume": '"true"'}}


def asks(*extras: dict[str, Any]) -> Callable[[Any], list[dict[str, Any]]]:
    """A legacy pause asking one question per item of ``extras`` (each event's own fields: its value, its
    rawEvent), the run's id put where an item says ``{run}``."""
    def step(run_input: Any) -> list[dict[str, Any]]:
        ids = {"threadId": run_input.thread_id, "runId": run_input.run_id}
        made = [json.loads(json.dumps(extra).replace("{run}", run_input.run_id)) for extra in extras]
        return [{"type": "RUN_STARTED", **ids}, *({"type": "CUSTOM", "name": "on_interrupt", **e} for e in made),
                {"type": "RUN_FINISHED", **ids}]
    return step


def test_an_id_made_from_the_run_never_merges_a_question_into_another(drive: Any, served: Any) -> None:
    # The id made for a question without LangGraph's id (`<runId>:on_interrupt:<n>`) was the id another
    # question's rawEvent gave: "one per id, the first" then dropped the second question unseen, and an
    # answer meant for the first could reach the graph for the second. LangGraph's ids stay as sent; a
    # made id steps aside, and a truly repeated LangGraph id is still one question (the first).
    endpoint = served(ScriptedAgent([asks({"value": json.dumps({"message": "Rename x?"}),
                                           "rawEvent": {"id": "{run}:on_interrupt:1"}},
                                          {"value": json.dumps({"message": "Delete /srv/x?"})},
                                          {"value": json.dumps({"message": "Rename y?"}), "rawEvent": {"id": "lg-2"}},
                                          {"value": json.dumps({"message": "Rename z?"}), "rawEvent": {"id": "lg-2"}})],
                                    stateless=True))
    with drive.client(endpoint.url, legacy_interrupts="langgraph") as client:
        thread = client.thread()
        result = thread.run("hi")

    run_id = result.run_id
    assert [(i.message, i.id) for i in result.interrupts] == [
        ("Rename x?", f"{run_id}:on_interrupt:1"), ("Delete /srv/x?", f"{run_id}:on_interrupt:1~1"),
        ("Rename y?", "lg-2")]
    assert thread.open_interrupts == result.interrupts
    assert result.interrupts[1].metadata == {"langgraph": {"raw": {"message": "Delete /srv/x?"}, "id": None}}


def test_questions_past_the_kept_number_are_said_not_dropped_unseen(drive: Any, served: Any) -> None:
    # Past MAX_ASKS the events were counted and not bridged, and the count was said only by the warning
    # a run without the bridge gets: with it, the questions past the 64th vanished without a word.
    count = MAX_ASKS + 6
    endpoint = served(ScriptedAgent([asks(*({"value": json.dumps({"message": f"q{n}"}), "rawEvent": {"id": f"lg-{n}"}}
                                            for n in range(count)))], stateless=True))
    with drive.client(endpoint.url, legacy_interrupts="langgraph") as client:
        result = client.thread().run("hi")

    assert result.outcome == "interrupt" and len(result.interrupts) == MAX_ASKS
    [warning] = result.warnings
    assert warning.code == ASKS_NOT_KEPT and warning.event_type == "RUN_FINISHED"
    assert warning.index == count + 1 and warning.pointer == "/outcome" and warning.run_id == result.run_id
    assert f"{count} CUSTOM 'on_interrupt'" in warning.message and f"the first {MAX_ASKS}" in warning.message


# --------------------------------------------------------------------------------------------------
# a store round trip
# --------------------------------------------------------------------------------------------------

def test_bridged_interrupts_survive_a_store_round_trip(drive: Any, served: Any, tmp_path: Path) -> None:
    endpoint = served(producer("rejected"))
    with drive.client(endpoint.url, legacy_interrupts="langgraph", store=SqliteStore(tmp_path / "t.db")) as client:
        thread = client.thread()
        first = thread.run(first_turn("rejected"))
        thread_id = thread.id

    # Another process, even one without the bridge, resumes through the channel the interrupts came from.
    with drive.client(endpoint.url, store=SqliteStore(tmp_path / "t.db")) as other:
        again = other.load_thread(thread_id)
        assert again.open_interrupts == first.interrupts
        assert again.state.open_interrupts_via == "langgraph"
        (interrupt,) = again.open_interrupts
        with pytest.raises(ag.UncoveredInterrupts):
            again.run("never mind")
        second = again.run(resume=again.resume_builder().answer(interrupt.id, {"approved": False,
                                                                                "reason": "not today"}))
    assert endpoint.received[1].body["forwardedProps"] == requests_of("rejected")[1]["forwardedProps"]
    assert "resume" not in endpoint.received[1].body
    assert second.outcome == "success" and second.text == "tool said: rejected: not today"


def test_two_interrupts_a_record_gives_one_langgraph_id_are_refused_not_one_answer_lost(
        drive: Any, served: Any, tmp_path: Path) -> None:
    # Several answers travel as a map from LangGraph's id to the answer. A record whose open interrupts
    # give one LangGraph id twice (written by hand, or by another tool) made one key of two: the first
    # answer was overwritten by the second and never sent, while the resume counted both as given.
    endpoint = served(ScriptedAgent([asks({"value": '"Rename x?"', "rawEvent": {"id": "lg-1"}},
                                          {"value": '"Delete /srv/x?"', "rawEvent": {"id": "lg-2"}})],
                                    cycle=True, stateless=True))
    store = SqliteStore(tmp_path / "t.db")
    with drive.client(endpoint.url, legacy_interrupts="langgraph", store=store) as client:
        thread = client.thread()
        thread.run("hi")
        thread_id = thread.id
    stored = store.load(thread_id)
    assert stored is not None
    data = json.loads(json.dumps(stored.data))
    data["openInterrupts"][1]["metadata"]["langgraph"]["id"] = "lg-1"
    store.save(thread_id, data, expected_version=stored.version)

    with drive.client(endpoint.url, store=SqliteStore(tmp_path / "t.db")) as other:
        again = other.load_thread(thread_id)
        with pytest.raises(ag.ResumeRefused) as refused:
            again.run(resume=again.resume_builder().answer("lg-1", {"rename": True}).answer("lg-2", {"delete": False}))

    assert refused.value.problems == {"legacy-channel": ("lg-1", "lg-2")}
    assert "'lg-1'" in str(refused.value) and len(endpoint.received) == 1  # (nothing was sent)


# --------------------------------------------------------------------------------------------------
# the CLI's --legacy-interrupts
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("later", [False, True], ids=["one-process", "resumed-by-a-second-process"])
def test_agui_run_with_legacy_interrupts_answers_in_the_producers_channel(served: Any, tmp_path: Path,
                                                                          later: bool) -> None:
    endpoint = served(producer("approved"))
    if later:
        # The first process leaves the bridged interrupt open in the thread file; the second, without
        # the flag, answers it where the producer reads answers: the record says which bridge read it.
        db = str(tmp_path / "threads.db")
        first = agui_process("run", endpoint.url, "-m", "delete the file", "--legacy-interrupts", "langgraph",
                             "--thread-file", db)
        assert first.returncode == 0, first.stderr
        assert "read as an interrupt (--legacy-interrupts langgraph)" in first.stdout
        assert "leaving the interrupt(s) open" in first.stdout and len(endpoint.received) == 1
        done = agui_process("run", endpoint.url, "--thread-file", db, "--resume", "--answer", '{"approved": true}')
    else:
        done = agui_process("run", endpoint.url, "-m", "delete the file", "--legacy-interrupts", "langgraph",
                            "--answer", '{"approved": true}')
        assert "read as an interrupt (--legacy-interrupts langgraph)" in done.stdout

    assert done.returncode == 0, done.stderr
    assert len(endpoint.received) == 2
    resumed = endpoint.received[1].body
    assert resumed["forwardedProps"] == requests_of("approved")[1]["forwardedProps"] == {
        "command": {"resume": {"approved": True}}}
    assert "resume" not in resumed
    assert "deleted /srv/x" in done.stdout


def test_agui_run_without_the_flag_says_how_to_bridge_and_sends_nothing_more(served: Any) -> None:
    endpoint = served(producer("approved"))
    done = agui_process("run", endpoint.url, "-m", "delete the file", "--answer", '{"approved": true}')

    assert done.returncode == 0, done.stderr
    assert CUSTOM_ASKED in done.stdout + done.stderr
    assert "read as an interrupt" not in done.stdout
    assert len(endpoint.received) == 1
    refused = agui_process("run", endpoint.url, "--legacy-interrupts", "nonsense", "-m", "x")
    assert refused.returncode == 2 and "invalid choice: 'nonsense'" in refused.stderr
