"""OpenTelemetry: a span per run, the trace context on the request, a few metrics, nothing secret.

Every run here goes to a real ``ScriptedAgent`` on 127.0.0.1 through both shells (``drive``), reporting
to the SDK's in-memory span exporter and metric reader. What the library does without the SDK, and
without the API installed, runs in a fresh interpreter (the global providers can be set once only).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

import agui_client as ag
from agui_client.stores import MemoryStore
from agui_client.testing import Finish, Respond, ScriptedAgent, Start, text_message
from agui_client.types import TokenUsage

TOKEN = "sk-live-5e6f7a8b9c0d"
SECRET_TEXT = "my card number is 4111 1111 1111 1111"


class Recorded:
    """The SDK's in-memory exporter and reader behind one :class:`ag.Telemetry`."""

    def __init__(self, *, record_content: bool = False) -> None:
        self.exporter = InMemorySpanExporter()
        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.telemetry = ag.Telemetry(tracer_provider=tracer_provider,
                                      meter_provider=MeterProvider(metric_readers=[self.reader]),
                                      record_content=record_content)

    def runs(self) -> list[ReadableSpan]:
        return [span for span in self.exporter.get_finished_spans() if span.name == "agui.run"]

    def points(self, name: str) -> list[tuple[dict[str, Any], Any]]:
        """Each data point of metric ``name``: its attributes and its value (a histogram's count)."""
        data = self.reader.get_metrics_data()
        found = []
        for resource in data.resource_metrics if data is not None else ():
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name == name:
                        for point in metric.data.data_points:
                            value = point.count if hasattr(point, "count") else point.value
                            found.append((dict(point.attributes or {}), value))
        return found


@pytest.fixture
def otel() -> Iterator[Recorded]:
    yield Recorded()


def everything_recorded(span: ReadableSpan) -> str:
    """Every attribute and event of ``span`` as one text (to look for what must not be there)."""
    parts = [repr(dict(span.attributes or {})), str(span.status.description)]
    parts += [f"{event.name} {dict(event.attributes or {})!r}" for event in span.events]
    return "\n".join(parts)


def chat(reply: str = "Hello there", usage: tuple[TokenUsage, ...] | None = None) -> ScriptedAgent:
    return ScriptedAgent([[Start(), *text_message("m1", reply), {"type": "CUSTOM", "name": "x", "value": 1,
                                                                 "unexpected": True}, Finish(usage=usage)]])


def test_a_run_is_one_client_span_with_its_ids_outcome_events_warnings_and_usage(
        drive: Any, served: Any, otel: Recorded) -> None:
    endpoint = served(chat(usage=(TokenUsage(provider="a", input_tokens=12, output_tokens=5),
                                  TokenUsage(provider="b", input_tokens=3))))

    with drive.client(endpoint.url, telemetry=otel.telemetry) as client:
        thread = client.thread()
        result = thread.run("hi")

    [span] = otel.runs()
    attributes = dict(span.attributes or {})
    assert span.kind is SpanKind.CLIENT and span.status.status_code is StatusCode.UNSET
    assert attributes["agui.thread.id"] == thread.id
    assert attributes["agui.run.id"] == result.run_id
    assert attributes["agui.run.outcome"] == "success"
    assert attributes["agui.run.events"] == result.events > 0
    assert attributes["agui.run.interrupts"] == 0
    assert (attributes["gen_ai.usage.input_tokens"], attributes["gen_ai.usage.output_tokens"]) == (15, 5)
    warned = Counter(w.code for w in result.warnings)
    assert warned  # (the unexpected field is a warning: the test cannot pass on an empty count)
    assert attributes["agui.run.warnings"] == len(result.warnings)
    assert {code: attributes[f"agui.run.warnings.{code}"] for code in warned} == dict(warned)
    assert attributes["server.address"] == "127.0.0.1"


def test_the_request_carries_the_runs_trace_context(drive: Any, served: Any, otel: Recorded) -> None:
    endpoint = served(chat())

    with drive.client(endpoint.url, telemetry=otel.telemetry) as client:
        client.thread().run("hi")

    [span] = otel.runs()
    [request] = endpoint.received
    version, trace_id, parent_id, flags = request.headers["traceparent"].split("-")
    assert version == "00" and int(flags, 16) & 1  # (sampled)
    assert int(trace_id, 16) == span.context.trace_id and int(parent_id, 16) == span.context.span_id


def test_the_run_span_is_a_child_of_the_applications_current_span(drive: Any, served: Any, otel: Recorded) -> None:
    endpoint = served(chat())
    tracer = otel.telemetry._tracer

    with drive.client(endpoint.url, telemetry=otel.telemetry) as client:
        with tracer.start_as_current_span("handle-request") as outer:
            client.thread().run("hi")

    [span] = otel.runs()
    assert span.parent is not None and span.parent.span_id == outer.get_span_context().span_id
    assert span.context.trace_id == outer.get_span_context().trace_id


def test_a_streamed_run_is_recorded_when_the_stream_ends(drive: Any, served: Any, otel: Recorded) -> None:
    endpoint = served(chat())

    with drive.client(endpoint.url, telemetry=otel.telemetry) as client:
        with client.thread().stream("hi") as stream:
            seen = sum(1 for _ in stream)

    [span] = otel.runs()
    assert span.attributes is not None
    assert (span.attributes["agui.run.outcome"], span.attributes["agui.run.events"]) == ("success", seen)
    assert "traceparent" in endpoint.received[0].headers


def test_a_stream_left_early_is_abandoned(drive: Any, served: Any, otel: Recorded) -> None:
    endpoint = served(chat("one two three four five"))

    with drive.client(endpoint.url, telemetry=otel.telemetry) as client:
        with client.thread().stream("hi") as stream:
            next(iter(stream))

    [span] = otel.runs()
    assert span.attributes is not None and span.attributes["agui.run.outcome"] == "abandoned"
    assert otel.points("agui.client.runs") == [({"agui.run.outcome": "abandoned"}, 1)]


def test_a_stream_whose_block_raises_after_the_end_keeps_the_runs_outcome(
        drive: Any, served: Any, otel: Recorded) -> None:
    endpoint = served(chat())

    with drive.client(endpoint.url, telemetry=otel.telemetry) as client:
        with pytest.raises(KeyError), client.thread().stream("hi") as stream:
            list(stream)
            raise KeyError("the caller's own")

    [span] = otel.runs()
    assert span.attributes is not None and span.attributes["agui.run.outcome"] == "success"
    assert span.status.status_code is StatusCode.UNSET


def test_each_run_of_the_tool_loop_is_a_span(drive: Any, served: Any, otel: Recorded) -> None:
    endpoint = served(ScriptedAgent.frontend_tool("confirm_choice"))

    with drive.client(endpoint.url, telemetry=otel.telemetry) as client:
        thread = client.thread(tool_handlers={"confirm_choice": lambda question: "blue"})
        result = thread.run_until_done("pick one")

    spans = otel.runs()
    assert result.outcome == "success" and len(spans) == len(endpoint.received) == 2
    assert [dict(s.attributes or {})["agui.run.outcome"] for s in spans] == ["success", "success"]
    assert [r.headers["traceparent"].split("-")[2] for r in endpoint.received] == \
        [f"{s.context.span_id:016x}" for s in spans]


def test_the_tool_loops_runs_are_children_of_one_loop_span(drive: Any, served: Any, otel: Recorded) -> None:
    # (a trace shows the loop's runs, and the handlers' own spans between them, as one piece of work)
    endpoint = served(ScriptedAgent.frontend_tool("confirm_choice"))
    tracer = otel.telemetry._tracer

    with drive.client(endpoint.url, telemetry=otel.telemetry) as client:
        def handler(question: str) -> str:
            with tracer.start_as_current_span("the handler's own work"):
                return "blue"
        thread = client.thread(tool_handlers={"confirm_choice": handler})
        with tracer.start_as_current_span("the application's request") as outer:
            thread.run_until_done("pick one", max_steps=5)
        after = thread.run("and now")  # (outside the loop: no loop span around it)

    finished = otel.exporter.get_finished_spans()
    (loop,) = [s for s in finished if s.name == "agui.tool_loop"]
    (own,) = [s for s in finished if s.name == "the handler's own work"]
    runs = otel.runs()
    assert after.outcome == "success" and len(runs) == 3
    assert loop.parent is not None and loop.parent.span_id == outer.get_span_context().span_id
    assert [r.parent.span_id if r.parent else None for r in runs[:2]] == [loop.context.span_id] * 2
    assert own.parent is not None and own.parent.span_id == loop.context.span_id
    assert runs[2].parent is None
    assert dict(loop.attributes or {}) == {"agui.thread.id": thread.id, "agui.tool_loop.max_steps": 5,
                                           "agui.tool_loop.outcome": "success"}


def test_the_streamed_tool_loop_makes_the_spans_run_until_done_makes(drive: Any, served: Any, otel: Recorded) -> None:
    # (the loop's span is current only while the loop works: the runs and the handlers' own spans are
    # its children, the caller's code between the events is not; a loop left early is abandoned)
    endpoint = served(ScriptedAgent.frontend_tool("confirm_choice"))
    tracer = otel.telemetry._tracer

    with drive.client(endpoint.url, telemetry=otel.telemetry) as client:
        def handler(question: str) -> str:
            with tracer.start_as_current_span("the handler's own work"):
                return "blue"
        thread = client.thread(tool_handlers={"confirm_choice": handler})
        with tracer.start_as_current_span("the application's request") as outer:
            with thread.stream_until_done("pick one", max_steps=5) as loop:
                for event in loop:
                    if isinstance(event, ag.RunFinishedEvent):
                        with tracer.start_as_current_span("the caller's own work"):
                            pass
        with thread.stream_until_done("pick another") as left:
            pass

    finished = otel.exporter.get_finished_spans()
    streamed, abandoned = [s for s in finished if s.name == "agui.tool_loop"]
    (own,) = [s for s in finished if s.name == "the handler's own work"]
    callers = [s for s in finished if s.name == "the caller's own work"]
    runs = otel.runs()
    assert loop.result.outcome == "success" and left.result.outcome is None and len(runs) == 3
    assert streamed.parent is not None and streamed.parent.span_id == outer.get_span_context().span_id
    assert [r.parent.span_id if r.parent else None for r in runs] == \
        [streamed.context.span_id] * 2 + [abandoned.context.span_id]
    assert own.parent is not None and own.parent.span_id == streamed.context.span_id
    assert len(callers) == 2 and {c.parent.span_id if c.parent else None for c in callers} == \
        {outer.get_span_context().span_id}
    assert dict(streamed.attributes or {}) == {"agui.thread.id": thread.id, "agui.tool_loop.max_steps": 5,
                                               "agui.tool_loop.outcome": "success"}
    assert dict(abandoned.attributes or {})["agui.tool_loop.outcome"] == "abandoned"
    assert [r.headers["traceparent"].split("-")[2] for r in endpoint.received] == \
        [f"{s.context.span_id:016x}" for s in runs]


def test_each_tool_loop_of_one_thread_is_its_own_span(drive: Any, served: Any, otel: Recorded) -> None:
    endpoint = served(ScriptedAgent.frontend_tool("confirm_choice"))

    with drive.client(endpoint.url, telemetry=otel.telemetry) as client:
        thread = client.thread(tool_handlers={"confirm_choice": lambda question: "blue"})
        thread.run_until_done("pick one")
        thread.run_until_done("pick another")

    loops = [s for s in otel.exporter.get_finished_spans() if s.name == "agui.tool_loop"]
    runs = otel.runs()
    assert len(loops) == 2 and loops[0].context.span_id != loops[1].context.span_id
    assert [r.parent.span_id if r.parent else None for r in runs] == \
        [loops[0].context.span_id] * 2 + [loops[1].context.span_id] * 2


def test_a_tool_loop_that_fails_fails_its_span(drive: Any, served: Any, otel: Recorded) -> None:
    endpoint = served(ScriptedAgent([Respond(status=500, body="down")]))

    with drive.client(endpoint.url, telemetry=otel.telemetry) as client:
        thread = client.thread(tool_handlers={"confirm_choice": lambda question: "blue"})
        with pytest.raises(ag.HTTPStatusError):
            thread.run_until_done("pick one")

    (loop,) = [s for s in otel.exporter.get_finished_spans() if s.name == "agui.tool_loop"]
    attributes = dict(loop.attributes or {})
    assert (attributes["agui.tool_loop.outcome"], attributes["error.type"]) == ("failed", "HTTPStatusError")
    assert loop.status.status_code is StatusCode.ERROR


def test_the_agents_ids_and_codes_on_a_span_are_capped_in_number_and_length(
        drive: Any, served: Any, otel: Recorded) -> None:
    from agui_client.types import Interrupt, RunErrorEvent, RunFinishedInterruptOutcome

    asked = tuple(Interrupt(id=f"{n:03d}-" + "i" * 300, reason="input") for n in range(40))
    asking = served(ScriptedAgent([[Start(), Finish(outcome=RunFinishedInterruptOutcome(interrupts=asked))]]))
    failing = served(ScriptedAgent([[Start(), RunErrorEvent(message="no", code="c" * 5000)]]))

    for endpoint in (asking, failing):
        with drive.client(endpoint.url, telemetry=otel.telemetry) as client:
            client.thread().run("hi")

    by_outcome = {attributes["agui.run.outcome"]: attributes
                  for attributes in (dict(span.attributes or {}) for span in otel.runs())}
    first, second = by_outcome["interrupt"], by_outcome["error"]
    ids = first["agui.run.interrupt_ids"]
    assert first["agui.run.interrupts"] == 40  # the count stays whole
    assert len(ids) == 32 and [i[:3] for i in ids] == [f"{n:03d}" for n in range(32)]
    assert all(len(i) == 128 and i.endswith("…") for i in ids)
    assert second["agui.run.error.code"] == "c" * 127 + "…"


def test_token_usage_a_64_bit_attribute_cannot_hold_is_left_off_the_span(
        drive: Any, served: Any, otel: Recorded) -> None:
    # Each entry stays within the schema's bound (2^53 - 1), but the span carries their sum: 1,025 of
    # them passed 2^63 - 1, the most an OTLP integer attribute (an int64) holds, so an exporter could not
    # encode the span. Left off, as a count the agent did not report is; the result keeps the entries.
    most = 2**53 - 1
    endpoint = served(chat(usage=(*(TokenUsage(provider=f"p{n}", input_tokens=most) for n in range(1025)),
                                  TokenUsage(provider="last", input_tokens=1, output_tokens=7))))

    with drive.client(endpoint.url, telemetry=otel.telemetry) as client:
        result = client.thread().run("hi")

    [span] = otel.runs()
    attributes = dict(span.attributes or {})
    assert result.total_usage.input_tokens == 1025 * most + 1 > 2**63 - 1
    assert "gen_ai.usage.input_tokens" not in attributes
    assert attributes["gen_ai.usage.output_tokens"] == 7
    assert all(-2**63 <= value < 2**63 for value in attributes.values() if type(value) is int)


def test_each_retry_is_an_event_on_the_runs_one_span(drive: Any, served: Any, otel: Recorded) -> None:
    busy = Respond(status=503, body={"detail": SECRET_TEXT}, headers={"Retry-After": "0"})
    endpoint = served(ScriptedAgent([busy, busy, [Start(), Finish()]]))

    with drive.client(endpoint.url, telemetry=otel.telemetry, max_retries=2,
                      headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        client.thread().run("hi")

    [span] = otel.runs()  # (one run, however many requests it took)
    retries = [dict(e.attributes or {}) for e in span.events if e.name == "agui.run.retry"]
    assert retries == [
        {"agui.retry.attempt": 2, "agui.retry.wait": 0.0, "agui.retry.reason": "HTTP 503",
         "http.response.status_code": 503},
        {"agui.retry.attempt": 3, "agui.retry.wait": 0.0, "agui.retry.reason": "HTTP 503",
         "http.response.status_code": 503},
    ]
    assert span.attributes is not None and span.attributes["agui.run.outcome"] == "success"
    assert SECRET_TEXT not in everything_recorded(span) and TOKEN not in everything_recorded(span)


def test_an_error_status_fails_the_span_with_its_type_and_status_code(drive: Any, served: Any, otel: Recorded) -> None:
    endpoint = served(ScriptedAgent([Respond(status=503, body={"detail": SECRET_TEXT})]))

    with drive.client(endpoint.url, telemetry=otel.telemetry, headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        with pytest.raises(ag.HTTPStatusError):
            client.thread().run("hi")

    [span] = otel.runs()
    attributes = dict(span.attributes or {})
    assert attributes["agui.run.outcome"] == "failed"
    assert (attributes["error.type"], attributes["http.response.status_code"]) == ("HTTPStatusError", 503)
    assert span.status.status_code is StatusCode.ERROR
    assert SECRET_TEXT not in everything_recorded(span) and TOKEN not in everything_recorded(span)
    assert otel.points("agui.client.runs") == [({"agui.run.outcome": "failed", "error.type": "HTTPStatusError"}, 1)]
    assert [value for _, value in otel.points("agui.client.run.duration")] == [1]


def test_a_protocol_error_is_a_span_event_saying_where(drive: Any, served: Any, otel: Recorded) -> None:
    endpoint = served(ScriptedAgent([[Start(), {"type": "TEXT_MESSAGE_CONTENT", "messageId": "nope",
                                                "delta": SECRET_TEXT}]]))

    with drive.client(endpoint.url, telemetry=otel.telemetry) as client:
        with pytest.raises(ag.ProtocolError) as caught:
            client.thread().run("hi")

    [span] = otel.runs()
    [event] = [e for e in span.events if e.name == "agui.protocol_error"]
    error = caught.value
    assert dict(event.attributes or {}) == {
        "error.type": type(error).__name__, "agui.rule": error.rule, "agui.run.id": error.run_id,
        "agui.event.index": error.index, "agui.event.type": error.event_type,
        **({"agui.event.pointer": error.pointer} if error.pointer is not None else {})}
    assert error.rule is not None and error.index == 1
    assert span.attributes is not None and span.attributes["agui.run.outcome"] == "failed"
    assert error.result is not None and span.attributes["agui.run.events"] == error.result.events
    assert SECRET_TEXT not in everything_recorded(span)


def test_a_protocol_error_events_strings_are_cut_like_every_other_string_the_agent_chose(
        drive: Any, served: Any, otel: Recorded) -> None:
    long_id = "r" * 5000  # (the agent echoes the run id: a span must not grow with it)
    endpoint = served(ScriptedAgent([[Start(), {"type": "TEXT_MESSAGE_CONTENT", "messageId": "nope", "delta": "x"}]]))

    with drive.client(endpoint.url, telemetry=otel.telemetry) as client:
        with pytest.raises(ag.ProtocolError) as caught:
            client.thread().run("hi", run_id=long_id)

    [span] = otel.runs()
    [event] = [e for e in span.events if e.name == "agui.protocol_error"]
    attributes = dict(event.attributes or {})
    assert caught.value.run_id == long_id
    assert attributes["agui.run.id"] == "r" * 127 + "…"
    assert all(len(v) <= 128 for v in attributes.values() if isinstance(v, str))


def test_a_refused_resume_is_a_span_event_with_its_kind_and_ids_and_a_refusal(
        drive: Any, served: Any, otel: Recorded) -> None:
    endpoint = served(ScriptedAgent.interrupts(2))

    with drive.client(endpoint.url, telemetry=otel.telemetry) as client:
        thread = client.thread()
        thread.run("book it")
        with pytest.raises(ag.UncoveredInterrupts):
            thread.run(resume=thread.resume_builder().answer("interrupt-1", {"answer": "yes"}))

    first, refused = otel.runs()
    [event] = [e for e in refused.events if e.name == "agui.resume.refused"]
    assert dict(event.attributes or {}) == {"agui.resume.refusal.kind": "uncovered",
                                            "error.type": "UncoveredInterrupts",
                                            "agui.resume.refusal.interrupt_ids": ("interrupt-2",)}
    assert refused.attributes is not None and refused.attributes["agui.run.outcome"] == "refused"
    assert first.attributes is not None and first.attributes["agui.run.interrupts"] == 2
    assert first.attributes["agui.run.interrupt_ids"] == ("interrupt-1", "interrupt-2")
    assert otel.points("agui.client.refusals") == [({"agui.refusal.kind": "uncovered"}, 1)]
    assert len(endpoint.received) == 1  # (nothing sent)


def test_a_resume_links_to_the_run_it_continues(drive: Any, served: Any, otel: Recorded) -> None:
    endpoint = served(ScriptedAgent.interrupts(1))

    with drive.client(endpoint.url, telemetry=otel.telemetry) as client:
        thread = client.thread()
        interrupted = thread.run("book it")
        resumed = thread.run(resume=thread.resume_builder().answer("interrupt-1", {"answer": "yes"}))

    first, second = otel.runs()
    assert resumed.outcome == "success"
    assert first.attributes is not None and first.attributes["agui.run.outcome"] == "interrupt"
    assert second.attributes is not None and second.attributes["agui.run.resumes"] == interrupted.run_id
    assert second.attributes["agui.run.resuming"] is True
    [link] = second.links
    assert (link.context.trace_id, link.context.span_id) == (first.context.trace_id, first.context.span_id)


def test_a_resume_from_another_client_of_the_same_telemetry_links_too(served: Any, otel: Recorded) -> None:
    # (a web backend making a client per request: the link map is the Telemetry's)
    endpoint = served(ScriptedAgent.interrupts(1))
    store = ag.AgentClient(endpoint.url).store
    with ag.AgentClient(endpoint.url, store=store, telemetry=otel.telemetry) as client:
        thread_id = client.thread().id
        client.thread(thread_id).run("book it")
    with ag.AgentClient(endpoint.url, store=store, telemetry=otel.telemetry) as client:
        thread = client.thread(thread_id)
        thread.run(resume=thread.resume_builder().answer("interrupt-1", {"answer": "yes"}))

    first, second = otel.runs()
    assert [link.context.span_id for link in second.links] == [first.context.span_id]


def test_metrics_count_runs_by_outcome_and_the_events_received(drive: Any, served: Any, otel: Recorded) -> None:
    endpoint = served(chat())

    with drive.client(endpoint.url, telemetry=otel.telemetry) as client:
        results = [client.thread().run("hi") for _ in range(3)]

    assert otel.points("agui.client.runs") == [({"agui.run.outcome": "success"}, 3)]
    assert otel.points("agui.client.run.duration") == [({"agui.run.outcome": "success"}, 3)]
    assert otel.points("agui.client.events") == [({}, sum(r.events for r in results))]


def test_no_message_text_or_header_value_is_recorded_by_default(drive: Any, served: Any, otel: Recorded) -> None:
    endpoint = served(chat(reply=f"you said {SECRET_TEXT}"))

    with drive.client(endpoint.url, telemetry=otel.telemetry, headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        client.thread().run(SECRET_TEXT)

    [span] = otel.runs()
    assert SECRET_TEXT not in everything_recorded(span) and TOKEN not in everything_recorded(span)
    assert span.events == ()


def test_record_content_adds_the_messages_text_but_never_a_header_value(drive: Any, served: Any) -> None:
    otel = Recorded(record_content=True)
    endpoint = served(chat(reply="the reply"))

    with drive.client(endpoint.url, telemetry=otel.telemetry, headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        client.thread().run(SECRET_TEXT)

    [span] = otel.runs()
    events = {event.name: dict(event.attributes or {}) for event in span.events}
    assert events["agui.run.input"] == {"agui.message.role": "user", "agui.message.content": SECRET_TEXT}
    assert events["agui.run.output"] == {"agui.message.content": "the reply"}
    assert TOKEN not in everything_recorded(span)


#: A bearer token of 40 token characters: a piece of 16 or more of them is as good as the token.
LONG_TOKEN = "tokQ7vX2mR9kL4pW8nZ3jB6hT1yF5cD0sGaE4uJx"


def cut_at_the_limit(recorded: str, whole: str) -> str:
    """The text kept before the marker of a text cut to at most 4,095 characters, checked against the whole."""
    kept, marker, count = recorded.rpartition("… [")
    assert marker and count.endswith(" characters cut]"), recorded[-40:]
    assert 4090 <= len(recorded) <= 4095 and whole.startswith(kept)  # (at most: the count may be a digit shorter)
    assert len(kept) + int(count.removesuffix(" characters cut]")) == len(whole)
    return kept


def test_recorded_content_is_cut_to_its_limit_with_a_marker_of_how_much_was_cut(drive: Any, served: Any) -> None:
    # A reply of 12,000 characters, a RUN_ERROR message and a new message of 9,000 went on the span
    # whole: larger than a backend keeps, cut there with no word of it, or the span refused.
    otel = Recorded(record_content=True)
    reply = " ".join(f"w{n:05d}" for n in range(1_700))
    message = "m" * 9_000
    endpoint = served(ScriptedAgent([[Start(), *text_message("m1", reply),
                                      {"type": "RUN_ERROR", "message": "e" * 20_000, "code": "TOO_LONG"}]]))

    with drive.client(endpoint.url, telemetry=otel.telemetry) as client:
        result = client.thread().run(message)

    [span] = otel.runs()
    events = {event.name: dict(event.attributes or {}) for event in span.events}
    assert len(result.text) > 4095
    cut_at_the_limit(events["agui.run.output"]["agui.message.content"], result.text)
    cut_at_the_limit(events["agui.run.input"]["agui.message.content"], message)
    cut_at_the_limit((span.attributes or {})["agui.run.error.message"], "e" * 20_000)


def test_a_token_the_limit_cuts_in_half_leaves_no_piece_of_itself_on_the_span(drive: Any, served: Any) -> None:
    # The agent echoes the caller's token in its reply just where the length limit falls. Cut before
    # it was redacted, the reply would keep the token's first 20 characters, which the redactor no
    # longer knows as the token: the reply is redacted whole, then cut.
    otel = Recorded(record_content=True)
    words = [f"w{n:05d}" for n in range(1_700)]
    # (the token starts 20 characters before where the cut falls: 4,071 for a text of 10,000 or more)
    before = " ".join(words)[:4051]
    reply = f"{before}{LONG_TOKEN} " + " ".join(words)
    endpoint = served(ScriptedAgent([[Start(), *text_message("m1", reply), Finish()]]))

    with drive.client(endpoint.url, telemetry=otel.telemetry,
                      headers={"Authorization": f"Bearer {LONG_TOKEN}"}) as client:
        result = client.thread().run("hi")

    [span] = otel.runs()
    recorded = everything_recorded(span)
    assert LONG_TOKEN in result.text  # (the conversation is kept as the agent wrote it)
    output = {event.name: dict(event.attributes or {}) for event in span.events}["agui.run.output"]
    kept = cut_at_the_limit(output["agui.message.content"], result.text.replace(LONG_TOKEN, "[redacted]"))
    assert kept.startswith(before.split(" ")[0]) and not any(
        LONG_TOKEN[at:at + 16] in recorded for at in range(len(LONG_TOKEN) - 15))


def test_telemetry_false_records_nothing_and_sends_no_trace_context(drive: Any, served: Any) -> None:
    endpoint = served(chat())

    with drive.client(endpoint.url, telemetry=False) as client:
        assert client.telemetry is None
        client.thread().run("hi")

    assert "traceparent" not in endpoint.received[0].headers


def _run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60)


def test_the_global_providers_are_used_by_default_and_nothing_happens_before_an_sdk_is_set() -> None:
    completed = _run_python("""
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        import agui_client as ag
        from agui_client.testing import ScriptedAgent, serve

        agent = ScriptedAgent.chat()
        seen = []

        async def app(scope, receive, send):
            if scope["type"] == "http":
                seen.append(dict(scope["headers"]).get(b"traceparent"))
            await agent(scope, receive, send)

        with serve(app) as url, ag.AgentClient(url) as client:
            client.thread().run("before")            # (the API alone: no-op)
            exporter = InMemorySpanExporter()
            provider = TracerProvider()
            provider.add_span_processor(SimpleSpanProcessor(exporter))
            trace.set_tracer_provider(provider)
            client.thread().run("after")             # (the SDK set: the same client reports)
        print([s.name for s in exporter.get_finished_spans()])
        print([header is not None for header in seen])
    """)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.splitlines() == ["['agui.run']", "[False, True]"]


def test_without_opentelemetry_installed_a_client_runs_with_no_telemetry() -> None:
    completed = _run_python("""
        import sys
        from importlib.abc import MetaPathFinder

        class NotInstalled(MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] == "opentelemetry":
                    raise ModuleNotFoundError(f"No module named {name!r}", name=name)
                return None

        sys.meta_path.insert(0, NotInstalled())
        import agui_client as ag
        from agui_client.testing import ScriptedAgent, serve

        with serve(ScriptedAgent.chat()) as url, ag.AgentClient(url) as client:
            print(client.telemetry, client.thread().run("hi").outcome)
        for attempt in (lambda: ag.Telemetry(), lambda: ag.AgentClient(url, telemetry=True)):
            try:
                attempt()
            except ImportError as exc:
                print("ImportError:", exc)
        print(sorted(m for m in sys.modules if m.startswith("opentelemetry")))
    """)
    assert completed.returncode == 0, completed.stderr
    lines = completed.stdout.splitlines()
    assert lines[0] == "None success"
    assert lines[1:3] == ["ImportError: agui_client's telemetry needs OpenTelemetry's API: pip install "
                          "'agui-client[otel]' (opentelemetry-api)"] * 2
    assert lines[3] == "[]"


def test_importing_the_package_imports_no_opentelemetry() -> None:
    completed = _run_python("""
        import sys
        import agui_client
        print(sorted(m for m in sys.modules if m.startswith("opentelemetry")))
    """)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "[]"


def test_a_streamed_loops_error_caught_in_its_block_is_the_loops_spans(drive: Any, served: Any, otel: Recorded) -> None:
    # The loop's claim before its handler is refused (a replica ran meanwhile) and the caller catches
    # the error inside the block: the block leaves quietly, and the loop's span still says how it ended.
    endpoint = served(ScriptedAgent.frontend_tool("confirm_choice"))

    with drive.client(endpoint.url, telemetry=otel.telemetry, store=MemoryStore()) as client:
        thread = client.thread(tool_handlers={"confirm_choice": lambda question: "blue"})
        with thread.stream_until_done("pick one") as loop:
            try:
                for event in loop:
                    if isinstance(event, ag.RunFinishedEvent):
                        client.thread(thread.id).run("a replica's turn")
            except ag.ConcurrentResume:
                pass

    (span,) = [s for s in otel.exporter.get_finished_spans() if s.name == "agui.tool_loop"]
    attributes = dict(span.attributes or {})
    assert (attributes["agui.tool_loop.outcome"], attributes["error.type"]) == ("refused", "ConcurrentResume")
    assert len(loop.results) == 1


class _QuotingStore(MemoryStore):
    """A store whose backend refuses every write and quotes what it was given, as a driver's error quoting
    the row it could not write does (here the reply, which echoes the caller's token)."""

    def save(self, thread_id: str, data: Any, **options: Any) -> int:
        raise ag.StoreError(f"the backend refused the row {json.dumps(data, default=str)}", thread_id=thread_id)

    def append(self, thread_id: str, changes: Any, **options: Any) -> int:
        raise ag.StoreError(f"the backend refused the row {json.dumps(changes, default=str)}", thread_id=thread_id)


def test_the_recorded_stack_trace_is_redacted_then_cut_keeping_its_end(drive: Any, served: Any) -> None:
    # The stack trace went on the span whole: it quotes the error's message and its causes', the agent's
    # or a backend's words of any length, past what a backend keeps.
    otel = Recorded(record_content=True)
    reply = f"{LONG_TOKEN} " * 300
    endpoint = served(ScriptedAgent([[Start(), *text_message("m1", reply), Finish()]]))

    with drive.client(endpoint.url, telemetry=otel.telemetry, store=_QuotingStore(),
                      headers={"Authorization": f"Bearer {LONG_TOKEN}"}) as client:
        with pytest.raises(ag.StoreError) as caught:
            client.thread().run("hi")

    [span] = otel.runs()
    [exception] = [dict(event.attributes or {}) for event in span.events if event.name == "exception"]
    stack = exception["exception.stacktrace"]
    assert isinstance(stack, str) and 4090 <= len(stack) <= 4095
    count, marker, kept = stack.partition(" characters cut] …")
    said = str(caught.value)
    assert len(said) > 8000 and LONG_TOKEN in said  # (the error itself keeps its message as raised)
    assert marker and count.startswith("[") and kept.endswith(said.replace(LONG_TOKEN, "[redacted]")[-200:] + "\n")
    assert "[redacted]" in kept
    recorded = everything_recorded(span)
    assert not any(LONG_TOKEN[at:at + 8] in recorded for at in range(len(LONG_TOKEN) - 7))
