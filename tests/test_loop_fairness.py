"""One hostile agent beside honest runs on one event loop: what it can take from them.

A web backend holds many runs open on one asyncio loop with one ``AsyncAgentClient``; every event is
decoded and folded on that loop. ``python -m bench.hostile`` measures how long one hostile stream holds
the loop; these prove the behaviour the measurement rests on by counting (the turns another task gets
while the hostile run is read, the containers walked), never by timing.
"""

from __future__ import annotations

import asyncio
import gc
import json
import sys
import zlib
from typing import Any

import anyio
import httpx
import pytest
import uvloop

import agui_client as ag
from agui_client._inflate import INFLATE_STEP
from agui_client.core.fold import streams
from agui_client.core.fold.streams import MAX_ARGUMENT_CONTAINERS
from agui_client.stores import MemoryStore, SqliteStore
from agui_client.testing import Finish, Gate, ScriptedAgent, Start, Wait, text_message
from agui_client.types import RunFinishedEvent, TextMessageContentEvent
from agui_client.wire import depth as nesting
from agui_client.wire import jsonio
from agui_client.wire.depth import containers_outside_strings
from agui_client.wire.jsonio import DEFAULT_MAX_DEPTH

START = b'data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\n'
FINISH = b'data: {"type":"RUN_FINISHED","threadId":"t","runId":"r"}\n\n'
OPEN = b'data: {"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant"}\n\n'
DELTA = b'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"x"}\n\n'
CLOSE = b'data: {"type":"TEXT_MESSAGE_END","messageId":"m"}\n\n'


def already_received(pieces: list[bytes]) -> httpx.MockTransport:
    """A transport answering with ``pieces`` as the reads of an SSE body all received already: they follow
    each other with no wait (a socket holding them returns each read at once), which a real server cannot
    promise."""

    class Arrived(httpx.AsyncByteStream):
        async def __aiter__(self) -> Any:
            for piece in pieces:
                yield piece  # (no await between them)

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=Arrived())

    return httpx.MockTransport(answer)


def _answer(body: bytes, headers: tuple[tuple[bytes, bytes], ...] = ()) -> Any:
    """An ASGI agent answering with ``body``, sent in one piece."""
    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream"), *headers]})
        await send({"type": "http.response.body", "body": body, "more_body": False})
    return app


def _coded(body: bytes) -> Any:
    """An ASGI agent answering with ``body`` gzip-coded, sent in one piece (a few kilobytes on the wire)."""
    return _answer(zlib.compress(body, 9, wbits=31), ((b"content-encoding", b"gzip"),))


class _OtherRun:
    """Another task on the loop, counting the turns it gets (what any other run on the loop gets: one
    at each pass of the loop), from the block's start to its end."""

    def __init__(self) -> None:
        self.turns = 0
        self._stop = asyncio.Event()

    async def _run(self) -> None:
        while not self._stop.is_set():
            self.turns += 1
            await asyncio.sleep(0)

    async def __aenter__(self) -> _OtherRun:
        self._task = asyncio.create_task(self._run())
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self._stop.set()
        await self._task


def test_a_gzip_read_that_inflates_to_megabytes_lets_other_tasks_run_between_its_pieces(served: Any) -> None:
    # 4 MiB of one-character deltas is some 4 KiB of gzip: one or two reads, 64 pieces of INFLATE_STEP.
    body = START + OPEN + DELTA * (4 * 2**20 // len(DELTA)) + CLOSE + FINISH
    pieces = len(body) // INFLATE_STEP
    endpoint = served(_coded(body))

    async def main() -> tuple[list[int], str | None]:
        seen: list[int] = []
        async with _OtherRun() as other, ag.AsyncAgentClient(endpoint.url) as client:
            async with client.thread("t").stream("hi", run_id="r") as stream:
                async for event in stream:
                    if type(event) is TextMessageContentEvent:
                        seen.append(other.turns)
        return seen, stream.result.outcome

    seen, outcome = asyncio.run(main())

    assert outcome == "success" and len(seen) == 4 * 2**20 // len(DELTA)
    # The other task ran between the pieces of each read: the deltas were read in as many stretches as
    # there are pieces (before, one stretch per network read: a read's megabytes held the loop whole).
    assert len(set(seen)) >= pieces - 1, (len(set(seen)), pieces)


@pytest.mark.parametrize(("depth", "refused"), [(DEFAULT_MAX_DEPTH, False), (DEFAULT_MAX_DEPTH + 1, True)])
def test_a_payload_dense_with_containers_has_its_depth_counted_in_its_text_not_walked(
        monkeypatch: pytest.MonkeyPatch, depth: int, refused: bool) -> None:
    # 2,000 arrays nested ``depth`` deep side by side (the top-level object is one more level): a
    # container every two bytes, eight million of them in an event of 16 MiB, which a walk took four
    # seconds of the loop over. Too deep for orjson to write back, so its writer cannot vouch for it.
    nest = b"[" * (depth - 2) + b"]" * (depth - 2)  # (inside the event object and the snapshot array)
    payload = b'{"type":"STATE_SNAPSHOT","snapshot":[' + b",".join([nest] * 2000) + b"]}"
    walked: list[int] = []
    walk = nesting._depth_exceeds
    monkeypatch.setattr(nesting, "_depth_exceeds", lambda value, limit: walked.append(limit) or walk(value, limit))

    if refused:
        with pytest.raises(ag.LimitExceeded) as caught:
            jsonio.parse_json(payload)
        assert caught.value.limit == DEFAULT_MAX_DEPTH
    else:
        assert len(jsonio.parse_json(payload)["snapshot"]) == 2000
    assert walked == []  # (before: the value walked, container by container)

    # A payload of few containers among many bytes is still walked (its walk is the cheaper).
    sparse = b'{"type":"CUSTOM","name":"x","value":[' + b'"' + b"x" * 100_000 + b'",' + nest + b"]}"
    if refused:
        with pytest.raises(ag.LimitExceeded):
            jsonio.parse_json(sparse)
    else:
        jsonio.parse_json(sparse)
    assert walked == [DEFAULT_MAX_DEPTH]


@pytest.mark.parametrize(("depth", "refused"), [(DEFAULT_MAX_DEPTH, False), (DEFAULT_MAX_DEPTH + 1, True)])
def test_a_payload_dense_with_members_has_its_depth_counted_in_its_text_not_walked(
        monkeypatch: pytest.MonkeyPatch, depth: int, refused: bool) -> None:
    # One flat list of a million numbers holds two containers in 2 MiB, so the walk was judged the
    # cheaper; it looks at every member (7 million of them in a 13 MiB snapshot: 0.26-0.5 s of the
    # loop), where the choice and the text's bracket count take 30 ms. A lone surrogate keeps orjson from
    # writing the value back, and a nest beside it from vouching for the depth by its bracket count.
    nest = b"[" * (depth - 2) + b"]" * (depth - 2)  # (inside the event object and the snapshot)
    payload = (b'{"type":"STATE_SNAPSHOT","snapshot":{"s":"\\ud800","a":[' + b",".join([b"1"] * 1_000_000)
               + b'],"b":' + nest + b"}}")
    walked: list[int] = []
    walk = nesting._depth_exceeds
    monkeypatch.setattr(nesting, "_depth_exceeds", lambda value, limit: walked.append(limit) or walk(value, limit))

    if refused:
        with pytest.raises(ag.LimitExceeded) as caught:
            jsonio.parse_json(payload)
        assert caught.value.limit == DEFAULT_MAX_DEPTH
    else:
        assert len(jsonio.parse_json(payload)["snapshot"]["a"]) == 1_000_000
    assert walked == []  # (before: the value walked, member by member)

    # Members that are strings cost the count a piece each, more than the walk: those are walked.
    strings = (b'{"type":"STATE_SNAPSHOT","snapshot":{"s":"\\ud800","a":[' + b",".join([b'"ab"'] * 100_000)
               + b'],"b":' + nest + b"}}")
    if refused:
        with pytest.raises(ag.LimitExceeded):
            jsonio.parse_json(strings)
    else:
        jsonio.parse_json(strings)
    assert walked == [DEFAULT_MAX_DEPTH]


def test_a_gzip_run_cancelled_between_its_pieces_leaves_nothing_behind_and_the_others_go_on(served: Any) -> None:
    # A web framework cancels the handler whose browser left: here, while the hostile run is between the
    # pieces of one read (the await the loop's turn added), with an honest run streaming beside it.
    hostile_body = START + OPEN + DELTA * (4 * 2**20 // len(DELTA)) + CLOSE + FINISH
    hostile = served(_coded(hostile_body))
    gate = Gate()
    honest = served(ScriptedAgent([[Start(), *text_message("m", "honest words"), Wait(gate, timeout=10), Finish()]]))
    store = MemoryStore()

    async def main() -> tuple[int, BaseException, str | None]:
        seen = 0
        reading = asyncio.Event()

        async def hostile_run(client: ag.AsyncAgentClient) -> None:
            nonlocal seen
            async with client.thread("hostile").stream("hi", run_id="r") as stream:
                async for event in stream:
                    if type(event) is TextMessageContentEvent:
                        seen += 1
                        reading.set()

        async with httpx.AsyncClient() as http, \
                ag.AsyncAgentClient(hostile.url, http_client=http, store=store) as client, \
                ag.AsyncAgentClient(honest.url, http_client=http, store=store) as other:
            beside = asyncio.create_task(other.thread("honest").run("hi"))
            await asyncio.to_thread(gate.wait_reached, 10)
            task = asyncio.create_task(hostile_run(client))
            await asyncio.wait_for(reading.wait(), 10)
            task.cancel()
            caught = (await asyncio.gather(task, return_exceptions=True))[0]
            gate.open()
            honest_result = await asyncio.wait_for(beside, 10)
            assert honest_result.outcome == "success" and honest_result.text == "honest words"
            assert len(http._transport._pool._requests) == 0  # type: ignore[attr-defined]
            # The thread is not claimed: its next turn goes out (and reads the whole body this time).
            again = await client.load_thread("hostile")
            outcome = (await again.run("again", run_id="r")).outcome
        return seen, caught, outcome

    seen, caught, outcome = asyncio.run(main())

    assert isinstance(caught, asyncio.CancelledError)
    assert 0 < seen < 4 * 2**20 // len(DELTA)  # (cancelled mid-read: before, the read was folded whole)
    stored = store.load("hostile")
    assert outcome == "success" and stored is not None and stored.claim is None


def test_the_save_after_a_run_is_a_loop_step_of_its_own_not_one_with_the_fold_of_its_last_read(served: Any) -> None:
    # A MemoryStore is called on the loop; the save of a large state is work of its own (it is encoded
    # whole). Sent in one piece, the run's last read holds its last event and the end of the body.
    body = START + OPEN + DELTA * 10 + CLOSE + FINISH
    endpoint = served(_answer(body))
    store = MemoryStore()

    async def main() -> tuple[int, list[int]]:
        saved_at: list[int] = []
        save = store.save
        last = -1
        async with _OtherRun() as other:

            def watched(thread_id: str, data: Any, **options: Any) -> int:
                saved_at.append(other.turns)
                return save(thread_id, data, **options)

            store.save = watched  # type: ignore[method-assign]  # (on the instance: still called on the loop)
            async with ag.AsyncAgentClient(endpoint.url, store=store) as client:
                async with client.thread("t").stream("hi", run_id="r") as stream:
                    async for event in stream:
                        if type(event) is not RunFinishedEvent:  # (handed over after the save)
                            last = other.turns
        return last, saved_at

    last, saved_at = asyncio.run(main())

    assert len(saved_at) == 1
    assert saved_at[0] > last  # (the other task ran between the fold of the run's last read and its save)


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_the_turn_before_an_in_memory_save_lets_the_tasks_of_timers_already_due_run_first(
        served: Any, loop: str) -> None:
    # A task waiting on a timer (a ticker, a heartbeat, a deadline's check) whose time came while the
    # run's last read was folded runs before the save, not after it: the turn before the save used to
    # queue the save ahead of every timer already due, so the loop went on from the fold into the save.
    # (Each loop orders its timers and its ready callbacks itself: both are run.)
    endpoint = served(_answer(START + OPEN + DELTA * 10 + CLOSE + FINISH))
    store = MemoryStore()

    async def main() -> list[str]:
        running = asyncio.get_running_loop()
        order: list[str] = []
        due: asyncio.Future[None] = running.create_future()

        async def woken_by_the_timer() -> None:
            await due
            order.append("the timer's task")

        waiting = asyncio.create_task(woken_by_the_timer())
        save = store.save

        def watched(thread_id: str, data: Any, **options: Any) -> int:
            order.append("the save")
            return save(thread_id, data, **options)

        store.save = watched  # type: ignore[method-assign]  # (on the instance: still called on the loop)
        async with ag.AsyncAgentClient(endpoint.url, store=store) as client:
            async with client.thread("t").stream("hi", run_id="r") as stream:
                async for event in stream:
                    if type(event) is ag.types.TextMessageEndEvent:
                        # (due already: the rest of the read, the run's end, is folded in this same step)
                        running.call_at(running.time() - 1.0, due.set_result, None)
        await waiting
        return order

    factory = {"asyncio": asyncio.SelectorEventLoop, "uvloop": uvloop.Loop}[loop]
    assert anyio.run(main, backend_options={"loop_factory": factory}) == ["the timer's task", "the save"]


def test_a_run_read_in_pieces_and_saved_in_memory_under_trio() -> None:
    # The async client runs under trio too (docs/http.md). The whole turn of the loop between the pieces
    # of a read and before an in-memory save asked for asyncio's running loop: under trio a run failed
    # there, RuntimeError "no running event loop", its save not made.
    pieces = [START + OPEN + DELTA * 5, DELTA * 5, DELTA * 5 + CLOSE + FINISH]

    store = MemoryStore()

    async def main() -> str:
        async with httpx.AsyncClient(transport=already_received(pieces)) as http:
            async with ag.AsyncAgentClient("http://agent.test/", http_client=http, store=store) as client:
                result = await client.thread("t").run("hi", run_id="r")
        return result.text

    assert anyio.run(main, backend="trio") == "x" * 15
    loaded = store.load("t")
    assert loaded is not None and loaded.data["messages"][-1]["content"] == "x" * 15


def test_a_run_saved_to_a_store_in_a_worker_thread_under_trio(tmp_path: Any) -> None:
    # A store other than an in-memory one is called in a worker thread (``in_worker``), which asked for
    # asyncio's executor: under trio every such call failed (RuntimeError "no running event loop"), the
    # thread's first load before anything was sent.
    store = SqliteStore(tmp_path / "threads.db")

    async def main() -> tuple[str, int | None]:
        async with httpx.AsyncClient(transport=already_received([START + OPEN + DELTA * 3 + CLOSE + FINISH])) as http:
            async with ag.AsyncAgentClient("http://agent.test/", http_client=http, store=store) as client:
                thread = client.thread("t")
                result = await thread.run("hi", run_id="r")
                return result.text, thread.version

    try:
        text, version = anyio.run(main, backend="trio")
        loaded = store.load("t")
    finally:
        store.close()
    assert text == "xxx"
    assert loaded is not None and loaded.version == version and loaded.claim is None
    assert [m["content"] for m in loaded.data["messages"]] == ["hi", "xxx"]


def _cancelled_before_its_save(url: str, store: MemoryStore, *, close_store: bool = False
                               ) -> tuple[BaseException | None, bool, int | None]:
    """Run thread "t" to its last event, cancel it in the turn before its save (closing ``store`` first
    if asked); return what the task ended with, whether it reads as cancelled, and the thread's version."""
    async def main() -> tuple[BaseException | None, bool, int | None]:
        ended = asyncio.Event()  # (the consumer saw the last event before the terminal one)

        async def run(thread: ag.AsyncThread) -> None:
            async with thread.stream("hi", run_id="r") as stream:
                async for event in stream:
                    if type(event) is ag.types.TextMessageEndEvent:
                        ended.set()

        async with ag.AsyncAgentClient(url, store=store) as client:
            thread = client.thread("t")
            task = asyncio.create_task(run(thread))
            await ended.wait()  # (the run's next turn away is the one before its save)
            if close_store:
                store.close()
            task.cancel()
            caught = (await asyncio.gather(task, return_exceptions=True))[0]
            return caught, task.cancelled(), thread.version

    return asyncio.run(main())


def test_a_run_cancelled_in_the_turn_before_its_save_is_saved_whole_and_unclaimed(served: Any) -> None:
    # The turn before an in-memory store's write is a new await point: a cancellation that comes there
    # lets the write land first (as one in a worker thread does), so the thread is saved and let go.
    endpoint = served(_answer(START + OPEN + DELTA * 10 + CLOSE + FINISH))
    store = MemoryStore()

    caught, _, version = _cancelled_before_its_save(endpoint.url, store)

    stored = store.load("t")
    assert isinstance(caught, asyncio.CancelledError)
    assert stored is not None and stored.claim is None and stored.version == version
    assert [m.content for m in ag.ThreadState.load(stored.data).messages] == ["hi", "x" * 10]


def test_a_run_cancelled_in_the_turn_before_its_save_is_cancelled_even_when_the_write_then_fails(served: Any) -> None:
    # An application shutting down closes its store and cancels the handlers still running. The write
    # the turn lets land first then fails: the caller must still see its cancellation (as it does when
    # the write runs in a worker thread), not the store's error in its place, which would pass for an
    # ordinary failure and leave the task, or the timeout around it, believing it was not cancelled.
    endpoint = served(_answer(START + OPEN + DELTA * 10 + CLOSE + FINISH))

    caught, cancelled, _ = _cancelled_before_its_save(endpoint.url, MemoryStore(), close_store=True)

    assert isinstance(caught, asyncio.CancelledError), repr(caught)
    assert cancelled


@pytest.mark.parametrize("events", [False, True])
def test_a_large_event_is_decoded_and_folded_without_the_collector_walking_it_while_it_is_made(events: bool) -> None:
    # 20,000 arrays nested 20 deep side by side, 800 KiB: 400,000 containers made in one go, which the
    # collector (run every few hundred new containers) walked again and again while they were made.
    nest = b"[" * 20 + b"]" * 20
    payload = b'{"type":"STATE_SNAPSHOT","snapshot":[' + b",".join([nest] * 20_000) + b"]}"
    session = ag.RunSession(events=events)
    session.feed_payload(START[6:-2])
    collections: list[int] = []

    def watch(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections.append(info["generation"])

    gc.callbacks.append(watch)
    try:
        session.feed_payload(payload)
        during = len(collections)  # (read before anything else is made: the collector runs again now)
        assert gc.isenabled()  # (started again)
        assert during == 0  # (before: one every 700 new containers)
        gc.disable()  # a caller's own choice is kept
        session.feed_payload(b'{"type":"STATE_SNAPSHOT","snapshot":[' + b",".join([nest] * 20_000) + b"]}")
        assert not gc.isenabled()
    finally:
        gc.enable()
        gc.callbacks.remove(watch)
    assert len(session.state.state) == 20_000


def test_the_collector_is_started_again_when_an_interrupt_lands_just_after_it_was_paused() -> None:
    # A Ctrl-C (KeyboardInterrupt) is raised between any two lines: one that landed after the collector
    # was paused and before the code that starts it again was guarded left it off for the rest of the
    # process, which then never freed a reference cycle again. A trace function raising at the first
    # line the collector is off stands in for the signal.
    session = ag.RunSession()
    session.feed_payload(START[6:-2])
    payload = b'{"type":"STATE_SNAPSHOT","snapshot":{"pad":"' + b"x" * 100_000 + b'"}}'
    code = ag.RunSession.feed_payload.__code__
    interrupted: list[int] = []

    def trace(frame: Any, event: str, arg: Any) -> Any:
        if frame.f_code is not code:
            return None
        if event == "line" and not gc.isenabled() and not interrupted:
            interrupted.append(frame.f_lineno)
            raise KeyboardInterrupt
        return trace

    assert gc.isenabled()
    sys.settrace(trace)
    try:
        session.feed_payload(payload)
    except KeyboardInterrupt:
        pass
    finally:
        sys.settrace(None)
        stopped = not gc.isenabled()
        gc.enable()
    assert interrupted  # (the interrupt landed while the collector was paused)
    assert not stopped  # (before: it stayed off)


@pytest.mark.parametrize(("brackets", "judged"),
                         [(MAX_ARGUMENT_CONTAINERS, True), (MAX_ARGUMENT_CONTAINERS + 1, False)])
def test_tool_arguments_dense_with_containers_are_not_parsed_past_the_bound(
        monkeypatch: pytest.MonkeyPatch, brackets: int, judged: bool) -> None:
    # A call's arguments are many small deltas, parsed whole at its end: 32 MiB of ``[],[],…`` held the
    # loop 3.6 s at TOOL_CALL_END (the run's 256 MiB would have taken some 5 GiB).
    arguments = "[" + ",".join(["[]"] * (brackets - 1)) + "]"
    pieces = [arguments[i:i + 60_000] for i in range(0, len(arguments), 60_000)]
    parsed: list[int] = []
    judge = streams.is_json
    monkeypatch.setattr(streams, "is_json", lambda text: parsed.append(len(text)) or judge(text))
    lines = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
             {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "f"},
             *({"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": piece} for piece in pieces),
             {"type": "TOOL_CALL_END", "toolCallId": "c"}, {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}]

    result = ag.replay(lines)

    call = result.state.tool_call("c")
    assert call is not None and call.function.arguments == arguments  # (kept as sent either way)
    if judged:
        assert parsed == [len(arguments)] and result.warnings == ()
        assert len(ag.parsed_arguments(call)) == brackets - 1
    else:
        assert parsed == []  # (before: parsed, and found JSON)
        assert [w.code for w in result.warnings] == ["TC-06/AGUI204"] and "not judged" in result.warnings[0].message
        assert ag.parsed_arguments(call) is None


def _called(arguments: str) -> ag.RunResult:
    pieces = [arguments[i:i + 60_000] for i in range(0, len(arguments), 60_000)]
    return ag.replay([{"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
                      {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "write_file"},
                      *({"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": piece} for piece in pieces),
                      {"type": "TOOL_CALL_END", "toolCallId": "c"},
                      {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}])


def test_tool_arguments_whose_brackets_are_inside_strings_are_parsed() -> None:
    # A coding agent's write_file carries a file's text, JSON or code, in one string: its brackets are
    # no containers and cost nothing to parse. Counted as containers, a 2 MiB data file (150,000 of
    # them) reached the tool's handler as None, with a warning that its arguments were not judged.
    text = json.dumps([{"id": i, "tags": ["a\\"], "note": 'say "hi"'} for i in range(75_000)])
    arguments = json.dumps({"path": "data.json", "content": text})
    assert arguments.count("[") + arguments.count("{") > MAX_ARGUMENT_CONTAINERS

    result = _called(arguments)

    call = result.state.tool_call("c")
    assert call is not None and result.warnings == ()  # (before: TC-06/AGUI204, "not judged")
    assert ag.parsed_arguments(call) == {"path": "data.json", "content": text}  # (before: None)


@pytest.mark.parametrize("first", ['"a\\\\"', '"a\\"b"', '"\\\\\\""'])
def test_escapes_in_a_string_hide_no_container_from_the_count(first: str) -> None:
    # An escaped backslash before a closing quote, an escaped quote, and both: a string that seemed to
    # run on would hide the containers after it.
    arguments = "[" + first + "," + ",".join(["[]"] * (MAX_ARGUMENT_CONTAINERS + 1)) + "]"
    assert json.loads(arguments)[0] == json.loads(first)

    result = _called(arguments)

    call = result.state.tool_call("c")
    assert call is not None and ag.parsed_arguments(call) is None
    assert [w.code for w in result.warnings] == ["TC-06/AGUI204"] and "not judged" in result.warnings[0].message


@pytest.mark.parametrize("first", ['"a\\\\"', '"a\\"b"', '"\\\\\\""', '"[{\\u005b"', '"' + "[" * 40_000 + '"'])
def test_the_depth_check_and_the_arguments_bound_take_strings_out_by_one_rule(first: str) -> None:
    # The fold split at unescaped quotes and the depth check stripped strings by a pattern: two rules
    # for one question. Both now read the text's quotes and brackets a step at a time, for text and for
    # bytes alike (a string of 40,000 brackets runs across steps of 16 KiB).
    text = '{"k":[' + first + ',[{}]],"' + first[1:] + ':[]}'
    assert json.loads(text)  # (JSON whose strings hold quotes, backslashes and brackets)
    assert containers_outside_strings(text) == containers_outside_strings(text.encode()) == 5  # ({ [ [ { [)
    assert nesting._text_depth(text.encode()) == 4  # ({ [ [ {)


def test_arguments_of_more_strings_than_the_count_takes_out_are_not_parsed() -> None:
    # Taking out 200,000 strings costs what parsing them does: a hostile agent's ["{","{",…] is not
    # parsed, as [[],[],…] is not.
    arguments = "[" + ",".join(['"{"'] * (2 * MAX_ARGUMENT_CONTAINERS + 1)) + "]"

    result = _called(arguments)

    call = result.state.tool_call("c")
    assert call is not None and ag.parsed_arguments(call) is None
    assert [w.code for w in result.warnings] == ["TC-06/AGUI204"]


def test_reads_that_arrive_without_a_wait_let_other_tasks_run_between_them() -> None:
    # A transport whose reads never wait (what a socket holding megabytes already received does: the
    # read returns at once) hands the run one read after another. Each read's events are folded on
    # the loop; without a turn between reads, one stream of tiny events held it for all of them. A
    # mock transport makes "already received" certain, which a real server cannot promise.
    read = START + OPEN + DELTA * 2_000 + CLOSE + FINISH
    chunks = [read[i:i + 8192] for i in range(0, len(read), 8192)]

    async def main() -> tuple[list[int], str | None]:
        seen: list[int] = []
        async with _OtherRun() as other, httpx.AsyncClient(transport=already_received(chunks)) as http:
            async with ag.AsyncAgentClient("http://agent.test/", http_client=http) as client:
                async with client.thread("t").stream("hi", run_id="r") as stream:
                    async for event in stream:
                        if type(event) is TextMessageContentEvent:
                            seen.append(other.turns)
        return seen, stream.result.outcome

    seen, outcome = asyncio.run(main())

    assert outcome == "success" and len(seen) == 2_000
    # The other task ran between the reads: the deltas were seen in about as many stretches as there
    # are reads (before, in one stretch: the whole body held the loop).
    assert len(set(seen)) >= len(chunks) - 2, (len(set(seen)), len(chunks))


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_the_turn_between_pieces_lets_the_tasks_of_timers_already_due_run_before_the_next_piece(loop: str) -> None:
    # A task waiting on a timer (a ticker, a heartbeat, a deadline's check) whose time came while one
    # piece of a run was folded runs before the next piece is, not after it: the turn between pieces
    # used to queue the reading task's next step ahead of every timer already due, so the loop went on
    # from one piece's fold into the next one's. Reads already received (they never wait) make three
    # pieces that follow each other without a wait of their own.
    pieces = [START + OPEN + DELTA * 5, DELTA * 5, DELTA * 5 + CLOSE + FINISH]

    async def main() -> tuple[int, int, str | None]:
        running = asyncio.get_running_loop()
        deltas = 0
        due: asyncio.Future[None] = running.create_future()
        seen_by_the_timer: list[int] = []

        async def woken_by_the_timer() -> None:
            await due
            seen_by_the_timer.append(deltas)

        waiting = asyncio.create_task(woken_by_the_timer())
        async with httpx.AsyncClient(transport=already_received(pieces)) as http:
            async with ag.AsyncAgentClient("http://agent.test/", http_client=http) as client:
                async with client.thread("t").stream("hi", run_id="r") as stream:
                    async for event in stream:
                        if type(event) is TextMessageContentEvent:
                            if deltas == 0:
                                # (due already: the rest of the first piece is folded in this same step)
                                running.call_at(running.time() - 1.0, due.set_result, None)
                            deltas += 1
        await waiting
        return seen_by_the_timer[0], deltas, stream.result.outcome

    factory = {"asyncio": asyncio.SelectorEventLoop, "uvloop": uvloop.Loop}[loop]
    seen, deltas, outcome = anyio.run(main, backend_options={"loop_factory": factory})

    assert outcome == "success" and deltas == 15
    assert seen == 5  # (the first piece's deltas only; before: 10 on uvloop, 15 on asyncio: the whole run)
