"""Streams written as the AG-UI SDKs in other languages write them (``--gen sdkwire:SEED:N``).

``producers.py``, ``families.py`` and ``integrations.py`` draw *what* producers send and in which order,
and write every event with Python's ``json.dumps``. Servers built on the SDKs in other languages send
the same conversations in other bytes. Read from those SDKs' sources (the ag-ui repository's ``sdks/``
folder; none of their code is copied), each writer has habits of its own:

- **Go** (``sdks/community/go``): ``encoding/json`` escapes ``<``, ``>``, ``&`` as ``\\u003c`` …, U+2028
  and U+2029 as escapes, and writes U+FFFD for what is not UTF-8 (``pkg/encoding/json``); ``omitempty``
  drops a nil JSON Patch ``value`` and an empty ``from`` (``core/events/state_events.go``), a nil role
  and an empty name; events built from maps come out with sorted keys (``CUSTOM``, ``BaseEvent.ToJSON``);
  the SSE writer puts ``id: TYPE_TIMESTAMP`` before each ``data:`` line and writes an error as
  ``event: error`` carrying a ``CUSTOM`` event with ``data`` and no ``name`` or ``value``
  (``pkg/encoding/sse/writer.go``).
- **Java** (``sdks/community/java``): records written by Jackson with its default inclusion, so every
  optional field is there as an explicit ``null`` (``rawEvent``, ``parentMessageId``, ``result``,
  ``outcome``, an interrupt's ``message``, ``toolCallId`` …); ``SseEventEncoder`` splits the serialiser's
  output on newlines into one ``data:`` line each (a pretty-printing ``ObjectMapper``: one event over
  many lines).
- **Kotlin** (``sdks/community/kotlin``, ``AgUiJson.kt``): ``encodeDefaults = true`` and
  ``explicitNulls = false``: defaults written (a ``TEXT_MESSAGE_START`` always has its role, a success
  outcome is written ``{"type":"success"}``), nulls omitted; the class discriminator first (``type``,
  a message's ``role``), a tool call's ``"type":"function"`` last (``Types.kt``).
- **Rust** (``sdks/community/rust``, ``ag-ui-core/src/event.rs``): ``timestamp`` is an ``f64``, written
  ``1780000000000.0``; the event enum knows only the ``THINKING_*`` reasoning events and a
  ``RUN_FINISHED`` without an ``outcome``; serde writes the tag first and integral doubles as ``2.0``.
- **.NET** (``sdks/dotnet``, ``AGUIJsonSerializerContext.cs``, ``SseEventStreamFormatter.cs``):
  System.Text.Json's default encoder escapes every non-ASCII character (``\\u00E9``, an astral one as
  its UTF-16 pair ``\\uD83D\\uDE00``, upper-case hex) and ``<>&'+`"`` (``\\u0022``); nulls are omitted;
  every event may carry a ``metadata`` object (``Events/BaseEvent.cs``).
- **Ruby** (``sdks/community/ruby``, ``util.rb``): ``as_json`` deletes nils from every hash *and array*
  of the event but for its opaque members (snapshots, patches, ``value``, ``responseSchema``, metadata),
  and camel-cases every key it reaches, a ``RUN_FINISHED.result``'s own keys included; ``Time`` becomes
  integer milliseconds; Ruby's integers have no bound.
- **Dart** (``sdks/community/dart``, ``encoder/encoder.dart``): ``jsonEncode`` writes doubles as ``2.0``;
  ``data: JSON`` and a blank line.

Framing that servers of any language write, each valid SSE: CRLF or a lone CR ending lines, a comment
heartbeat after the last event, a last event without its blank line (or without a line end), a byte
order mark, no space after ``data:``.

``QUIRKS`` lists each habit, where it was read, and a short stream that shows it alone (written once
per run as ``w-quirk-NAME``). ``SHAPES`` are the dialects: each draws one realistic conversation (text,
reasoning, a tool call and its result, a state snapshot and deltas, an interrupt resumed by the next
run) and writes it as that SDK writes it; ``resume-chain`` writes ``integrations.resume_chain``'s turns
across requests in a drawn dialect. ``streams(seed, count)`` yields ``(name, lines, input, framing)``:
``lines`` are JSON texts written here (``hostile.dump_lines`` keeps them verbatim), ``framing`` names an
SSE framing of ``frame`` or is None (JSONL).
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from . import integrations
from .families import _Model, shaped_streams
from .producers import _P, Event

Line = str


# ---------------------------------------------------------------------------------------------------
# Writing JSON as each SDK writes it


def _plain(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _go(text: str) -> str:
    # encoding/json: HTML-safe escapes, the JavaScript line separators escaped, a lone surrogate (no UTF-8) as U+FFFD
    text = "".join("\ufffd" if "\ud800" <= ch <= "\udfff" else ch for ch in text)
    out = json.dumps(text, ensure_ascii=False)
    for ch, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        out = out.replace(ch, esc)
    return out


SHORT = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}


def _dotnet(text: str) -> str:
    # System.Text.Json's default JavaScriptEncoder: ASCII but the HTML-sensitive characters, the rest as \uXXXX
    out = []
    for ch in text:
        if ch in SHORT:
            out.append(SHORT[ch])
        elif " " <= ch <= "~" and ch not in "\"<>&'+`":
            out.append(ch)
        elif ord(ch) > 0xFFFF:
            high, low = divmod(ord(ch) - 0x10000, 0x400)
            out.append(f"\\u{0xD800 + high:04X}\\u{0xDC00 + low:04X}")
        else:
            out.append(f"\\u{ord(ch):04X}")
    return '"' + "".join(out) + '"'


@dataclass(frozen=True)
class Writer:
    """How one SDK writes a JSON value: its string escapes, member order, indentation."""

    string: Callable[[str], str] = _plain
    order: str = "given"  # "given", "sorted" (Go maps, nlohmann), "tag-first" (serde, kotlinx), "tag-last"
    indent: int | None = None

    def dump(self, value: Any, level: int = 0) -> str:
        if isinstance(value, str):
            return self.string(value)
        if isinstance(value, bool) or value is None or isinstance(value, (int, float)):
            return json.dumps(value)
        pad, inner = ("", "") if self.indent is None else ("\n" + " " * self.indent * level,
                                                          "\n" + " " * self.indent * (level + 1))
        colon = ":" if self.indent is None else ": "
        if isinstance(value, list):
            if not value:
                return "[]"
            return "[" + ",".join(inner + self.dump(v, level + 1) for v in value) + pad + "]"
        keys = list(value)
        if self.order == "sorted":
            keys.sort()
        elif self.order in ("tag-first", "tag-last") and "function" not in value:
            # (the discriminator of a tagged class: an event, outcome, message or part; a tool call's "type"
            # is a plain member and stays where its SDK declares it)
            tags = [k for k in ("type", "role") if k in value and isinstance(value[k], str)][:1]
            rest = [k for k in keys if k not in tags]
            keys = [*tags, *rest] if self.order == "tag-first" else [*rest, *tags]
        if not keys:
            return "{}"
        return "{" + ",".join(inner + self.string(k) + colon + self.dump(value[k], level + 1) for k in keys) + pad + "}"


# ---------------------------------------------------------------------------------------------------
# What each SDK does to an event before writing it


def _java(event: Event, rng: random.Random) -> Event:
    # Jackson's default inclusion: an optional member never set is written null (only those the
    # reference and we read as absent, UK-06; a null elsewhere fails both runs, see QUIRKS)
    out = {**event, "rawEvent": event.get("rawEvent")}
    if event["type"] == "TOOL_CALL_START":
        out.setdefault("parentMessageId", None)
    if event["type"] == "RUN_FINISHED":
        out.setdefault("result", None)
        out.setdefault("outcome", None)
    return out


def _java_interrupt_nulls(event: Event, rng: random.Random) -> Event:
    out = _java(event, rng)
    outcome = out.get("outcome")
    if isinstance(outcome, dict) and outcome.get("type") == "interrupt":
        out["outcome"] = {**outcome, "interrupts": [
            {"id": i["id"], "reason": i["reason"], "message": i.get("message"), "toolCallId": i.get("toolCallId"),
             "responseSchema": i.get("responseSchema"), "expiresAt": i.get("expiresAt"),
             "metadata": i.get("metadata")} for i in outcome["interrupts"]]}
    return out


def _go_event(event: Event, rng: random.Random) -> Event:
    out = dict(event)
    for key in ("delta", "patch"):
        if out["type"] in ("STATE_DELTA", "ACTIVITY_DELTA") and isinstance(out.get(key), list):
            # omitempty: a nil value and an empty from are not written (a null value: the op is refused)
            out[key] = [{k: v for k, v in op.items() if (k, v) not in (("value", None), ("from", ""))}
                        for op in out[key]]
    if out["type"] == "TEXT_MESSAGE_START" and rng.random() < 0.5:
        out.pop("role", None)  # *string left nil: the role is the default, assistant
    return out


def _kotlin(event: Event, rng: random.Random) -> Event:
    out = dict(event)
    if out["type"] == "TEXT_MESSAGE_START":
        out.setdefault("role", "assistant")
    if out["type"] == "RUN_FINISHED" and "outcome" not in out:
        out["outcome"] = {"type": "success"}
    if out["type"] == "MESSAGES_SNAPSHOT":
        out["messages"] = [_kotlin_message(m) for m in out["messages"]]
    return out


def _kotlin_message(message: dict[str, Any]) -> dict[str, Any]:
    if "toolCalls" not in message:
        return message
    # (ToolCall.callType is declared after the constructor's members: "type" comes last)
    calls = [{"id": c["id"], "function": c["function"], "type": c.get("type", "function")}
             for c in message["toolCalls"]]
    return {**message, "toolCalls": calls}


THINKING = {"REASONING_START": "THINKING_START", "REASONING_END": "THINKING_END",
            "REASONING_MESSAGE_START": "THINKING_TEXT_MESSAGE_START",
            "REASONING_MESSAGE_CONTENT": "THINKING_TEXT_MESSAGE_CONTENT",
            "REASONING_MESSAGE_END": "THINKING_TEXT_MESSAGE_END"}


def _rust(event: Event, rng: random.Random) -> Event | None:
    kind = event["type"]
    if kind in THINKING:
        # ag-ui-core's enum has the old THINKING_* events only, which carry no ids
        out = {"type": THINKING[kind], **({"delta": event["delta"]} if "delta" in event else {})}
        return out
    if kind in ("REASONING_ENCRYPTED_VALUE", "REASONING_MESSAGE_CHUNK", "ACTIVITY_SNAPSHOT", "ACTIVITY_DELTA"):
        return None  # (no such event in that enum)
    if kind == "RUN_FINISHED":
        return {k: v for k, v in event.items() if k != "outcome"}
    return dict(event)


def _dotnet_event(event: Event, rng: random.Random) -> Event:
    out = dict(event)
    if rng.random() < 0.2:
        out["metadata"] = {"agent": "dotnet", "seq": rng.randint(0, 99)}
    return out


OPAQUE = {"snapshot", "delta", "patch", "value", "event", "responseSchema", "metadata", "payload", "content",
          "parameters", "state"}


def _ruby_compact(value: Any, key: str = "") -> Any:
    """Ruby's ``deep_compact`` then ``deep_transform_keys_to_camel``, both stopping at opaque members."""
    if key in OPAQUE:
        return value
    if isinstance(value, dict):
        return {_camel(k): _ruby_compact(v, k) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_ruby_compact(v) for v in value if v is not None]
    return value


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest) if rest else key


def _ruby(event: Event, rng: random.Random) -> Event:
    return _ruby_compact(event)  # type: ignore[no-any-return]


def _same(event: Event, rng: random.Random) -> Event:
    return dict(event)


@dataclass(frozen=True)
class Dialect:
    """One SDK's writing: how it changes an event, how it writes the JSON, how it frames it."""

    sdk: str
    source: str  # where in the ag-ui repository the habit was read
    rewrite: Callable[[Event, random.Random], Event | None]
    writer: Writer
    framings: tuple[str, ...]  # drawn per stream; "jsonl" is no framing
    floats: bool = False  # integral numbers of the state written as doubles (2.0)
    interrupts: bool = True  # the SDK can write an interrupt outcome
    stamp: Callable[[int], Any] = int


DIALECTS: dict[str, Dialect] = {
    "go": Dialect("Go", "sdks/community/go/pkg/encoding/sse/writer.go", _go_event, Writer(_go),
                  ("go-ids", "go-ids", "jsonl")),
    "java": Dialect("Java", "sdks/community/java/ag-ui/server/.../SseEventEncoder.java", _java,
                    Writer(order="tag-last"),
                    ("java-pretty", "lf", "jsonl")),
    "java-interrupt-nulls": Dialect("Java", "sdks/community/java/ag-ui/core/.../interrupt/Interrupt.java",
                                    _java_interrupt_nulls, Writer(order="tag-last"), ("lf", "jsonl")),
    "kotlin": Dialect("Kotlin", "sdks/community/kotlin/library/core/.../types/AgUiJson.kt", _kotlin,
                      Writer(order="tag-first"), ("lf", "jsonl")),
    "rust": Dialect("Rust", "sdks/community/rust/crates/ag-ui-core/src/event.rs", _rust, Writer(order="tag-first"),
                    ("lf", "jsonl"), floats=True, interrupts=False),
    "dotnet": Dialect(".NET", "sdks/dotnet/src/AGUI.Formatting/SseEventStreamFormatter.cs", _dotnet_event,
                      Writer(_dotnet, order="tag-first"), ("lf", "jsonl")),
    "ruby": Dialect("Ruby", "sdks/community/ruby/lib/ag_ui_protocol/util.rb", _ruby, Writer(), ("lf", "jsonl")),
    "dart": Dialect("Dart", "sdks/community/dart/lib/src/encoder/encoder.dart", _same, Writer(), ("lf", "jsonl"),
                    floats=True),
    "community": Dialect("any", "SSE framing servers write", _same, Writer(),
                         ("crlf", "cr", "heartbeat-tail", "no-final-blank", "no-final-newline", "bom", "nospace")),
}


# ---------------------------------------------------------------------------------------------------
# SSE framing


FRAMINGS = ("lf", "go-ids", "java-pretty", "crlf", "cr", "heartbeat-tail", "no-final-blank", "no-final-newline", "bom",
            "nospace")


def frame(lines: list[Line], style: str) -> str:
    """Written JSON ``lines`` (one event each, perhaps over several lines) as an SSE body framed in ``style``."""
    def data(line: str, prefix: str = "data: ") -> str:
        return "".join(f"{prefix}{part}\n" for part in line.split("\n"))

    if style == "go-ids":
        out = []
        for line in lines:
            event = json.loads(line)
            ident = f"id: {event['type']}_{event['timestamp']}\n" if "timestamp" in event else ""
            name = "event: error\n" if event["type"] == "CUSTOM" and "data" in event else ""
            out.append(name + ident + data(line) + "\n")
        return "".join(out)
    if style == "crlf":
        return "".join(data(line).replace("\n", "\r\n") + "\r\n" for line in lines)
    if style == "cr":
        return "".join(data(line).replace("\n", "\r") + "\r" for line in lines)
    if style == "heartbeat-tail":
        return "".join(data(line) + "\n" for line in lines) + ": heartbeat\n\n"
    if style == "no-final-blank":
        return "".join(data(line) + "\n" for line in lines)[:-1]
    if style == "no-final-newline":
        return "".join(data(line) + "\n" for line in lines)[:-2]
    if style == "bom":
        return "\ufeff" + "".join(data(line) + "\n" for line in lines)
    if style == "nospace":
        return "".join(data(line, "data:") + "\n" for line in lines)
    return "".join(data(line) + "\n" for line in lines)  # lf, java-pretty (the lines hold the newlines)


def render(events: list[Event], dialect: Dialect, rng: random.Random, pretty: bool = False) -> list[Line]:
    """``events`` as ``dialect`` writes them (an event it has no form for is left out)."""
    writer = Writer(dialect.writer.string, dialect.writer.order, 2) if pretty else dialect.writer
    out = []
    for event in events:
        rewritten = dialect.rewrite(event, rng)
        if rewritten is not None:
            out.append(writer.dump(rewritten))
    return out


# ---------------------------------------------------------------------------------------------------
# One conversation


TEXTS = ["Sure — here's the plan.", "Done 👍 <b>bold</b> & more", "Résumé: café, naïve, 𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
         "Line one\nline two\ttabbed \"quoted\" a/b \\ back", "家族 🧑\u200d💻 \u2028 sep", "1 + 1 = 2 'single'"]


def conversation(p: _P, dialect: Dialect) -> list[Event]:
    """Two or three runs of one thread: reasoning, text, a call and its result, state, an interrupt resumed."""
    rng = p.rng
    ev: list[Event] = []
    seed_state: dict[str, Any] = {"title": rng.choice(TEXTS), "items": [1, 2, 3], "price": 10, "ratio": 0.5,
                                  "flags": {"a": True, "b": None}, "path/with~": "x"}
    if dialect.floats:
        seed_state.update(price=10.0, items=[1.0, 2, 3.0])
    model = _Model(rng, seed_state)
    history: list[dict[str, Any]] = []
    interrupts: list[dict[str, Any]] = []
    for n in range(rng.randint(2, 3)):
        run = p.id("run")
        extra: dict[str, Any] = {}
        if interrupts:
            resume = integrations._answers(p, interrupts)
            extra["input"] = {"threadId": p.thread, "runId": run, "messages": copy.deepcopy(history), "state": {},
                              "tools": [], "context": [], "forwardedProps": {}, "resume": resume}
        ev.append(p.started(run, **extra))
        if n == 0:
            ev.append(p.ev("STATE_SNAPSHOT", snapshot=copy.deepcopy(model.doc)))
        if rng.random() < 0.6:
            r, span = p.id("reason"), p.id("span")
            ev.append(p.ev("REASONING_START", messageId=span))
            ev.append(p.ev("REASONING_MESSAGE_START", messageId=r, role="reasoning"))
            ev += [p.ev("REASONING_MESSAGE_CONTENT", messageId=r, delta=d) for d in p.cut(rng.choice(TEXTS))]
            ev.append(p.ev("REASONING_MESSAGE_END", messageId=r))
            if rng.random() < 0.4:
                ev.append(p.ev("REASONING_ENCRYPTED_VALUE", subtype="message", entityId=r, encryptedValue="enc+/=="))
            ev.append(p.ev("REASONING_END", messageId=span))
        m = p.id("msg")
        content = rng.choice(TEXTS)
        ev += p.text(m, content)
        history.append({"id": m, "role": "assistant", "content": content})
        calls = []
        if rng.random() < 0.7:
            c = p.id("call")
            limit = rng.choice([3, 10.0 if dialect.floats else 10])
            args = {"query": rng.choice(TEXTS), "limit": limit, "tags": ["a", "b"]}
            ev += p.call(c, rng.choice(["search", "lookup_order"]), args, m if rng.random() < 0.7 else None)
            calls.append(c)
            if rng.random() < 0.6:
                ev.append(p.result(c, p.id("tool"), json.dumps({"hits": 2, "first": rng.choice(TEXTS)},
                                                                ensure_ascii=False)))
                calls.pop()
        ev.append(p.ev("STATE_DELTA", delta=model.patch(rng.randint(1, 4))))
        if rng.random() < 0.3:
            ev.append(p.ev("STATE_SNAPSHOT", snapshot=copy.deepcopy(model.doc)))
        if rng.random() < 0.2:
            ev.append(p.ev("CUSTOM", name="progress", value={"pct": rng.randint(0, 100), "note": rng.choice(TEXTS)}))
        interrupts = []
        last = n == 2 or rng.random() < 0.3
        if dialect.interrupts and not last and rng.random() < 0.7:
            interrupts = integrations._interrupts(p, calls, None, True)
            ev.append(p.finished(run, {"type": "interrupt", "interrupts": interrupts}))
        elif rng.random() < 0.1:
            ev.append(p.ev("RUN_ERROR", message=rng.choice(["rate limited", "tool failed: <timeout>"]), code="E1"))
            break
        else:
            # (a result only on the stream's last run: one followed by another run's end is the documented
            # runs-*-after-success-result, which families.py's runs-thread meets already)
            result = rng.choice([None, {"final_answer": content, "source_ids": [1, None, 2]}, [n, None], "ok"]) \
                if last else None
            ev.append(p.finished(run, result=result) if result is not None else p.finished(run))
        if last:
            break
    return ev


def _shape(name: str) -> Callable[[_P], tuple[list[Line], None, str | None]]:
    dialect = DIALECTS[name]

    def build(p: _P) -> tuple[list[Line], None, str | None]:
        if name == "rust":
            p.stamp = False  # (an f64 timestamp is refused here: one quirk stream shows it, QUIRKS)
        elif name in ("java", "go", "java-interrupt-nulls"):  # (their events are stamped when built)
            p.stamp = True
        events = conversation(p, dialect)
        framing = p.rng.choice(dialect.framings)
        return render(events, dialect, p.rng, pretty=framing == "java-pretty"), None, \
            None if framing == "jsonl" else framing

    return build


SHAPES = {name: _shape(name) for name in DIALECTS}


def resume_chain(seed: int, n: int) -> list[tuple[str, list[Event], dict[str, Any]]]:
    """``integrations.resume_chain``'s turns (interrupts resumed across requests), written in one drawn dialect."""
    rng = random.Random(f"{seed}:sdkwire-chain:{n}")
    name = rng.choice([d for d in DIALECTS if DIALECTS[d].interrupts and d != "java-interrupt-nulls"])
    return [(f"w-chain-{name}-s{seed}.{n}-k{k}", render(events, DIALECTS[name], rng), inp)  # type: ignore[misc]
            for k, (_, events, inp) in enumerate(integrations.resume_chain(seed, n))]


# ---------------------------------------------------------------------------------------------------
# The quirks one by one


S = {"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"}
F = {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1"}
TEXT = [{"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "Café 😀 <b>&</b> a/b \u2028"},
        {"type": "TEXT_MESSAGE_END", "messageId": "m1"}]


def _lines(events: list[Event], writer: Writer = Writer()) -> list[Line]:
    return [writer.dump(e) for e in events]


@dataclass(frozen=True)
class Quirk:
    """One writing habit: the SDK, where it was read, a stream showing it alone, and how we read that stream.

    ``accepted`` and ``code``: whether our client folds the stream to its end, and the code it warns with
    (accepted) or fails with (refused), as docs/codes.md promises; the reference's verdict is the
    differential's to compare (the same, but where ``documented`` names the golden stream that says why not).
    """

    name: str
    sdk: str
    source: str
    lines: list[Line]
    framing: str | None = None
    accepted: bool = True
    code: str | None = None
    documented: str | None = None


GO, JAVA = "sdks/community/go/pkg/", "sdks/community/java/ag-ui/"
RUST, DOTNET = "sdks/community/rust/crates/ag-ui-core/src/", "sdks/dotnet/src/"
CALL_SNAPSHOT = {"type": "MESSAGES_SNAPSHOT", "messages": [
    {"id": "a1", "role": "assistant",
     "toolCalls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
    {"id": "tm1", "role": "tool", "toolCallId": "c1"}]}

QUIRKS = [
    Quirk("go-html-escapes", "Go", GO + "encoding/json/json_encoder.go (encoding/json)",
          _lines([S, *TEXT, F], Writer(_go))),
    Quirk("go-sorted-keys", "Go", GO + "encoding/sse/writer.go (CustomEvent.ToJSON: a map)",
          _lines([S, *TEXT, {"type": "CUSTOM", "name": "n", "value": {"z": 1, "a": 2}}, F], Writer(order="sorted"))),
    Quirk("go-sse-ids", "Go", GO + "encoding/sse/writer.go (createSSEFrame)",
          _lines([{**e, "timestamp": 1780000000000 + i} for i, e in enumerate([S, *TEXT, F])]), "go-ids"),
    Quirk("go-error-event", "Go", GO + "encoding/sse/writer.go (WriteErrorEvent)",
          _lines([S, *TEXT, {"data": {"error": True, "message": "boom", "request_id": ""},
                              "timestamp": 1780000000000, "type": "CUSTOM"}, F]), "go-ids", False, "UK-05"),
    Quirk("go-patch-value-omitted", "Go", GO + "core/events/state_events.go (Value any omitempty)",
          _lines([S, {"type": "STATE_SNAPSHOT", "snapshot": {"a": 1}},
                  {"type": "STATE_DELTA", "delta": [{"op": "replace", "path": "/a"}]}, F]), None, False, "UK-05"),
    Quirk("go-role-omitted", "Go", GO + "core/events/message_events.go (Role *string omitempty)",
          _lines([S, {"type": "TEXT_MESSAGE_START", "messageId": "m1"}, *TEXT[1:], F])),
    Quirk("go-tool-content-omitted", "Go", GO + "core/types/types.go (Content any omitempty)",
          _lines([S, CALL_SNAPSHOT, F]), None, False, "UK-05"),
    Quirk("java-legacy-nulls", "Java", JAVA + "core/.../event/*.java (records, Jackson's default inclusion)",
          _lines([{**S, "rawEvent": None}, {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "f",
                                             "parentMessageId": None, "rawEvent": None},
                  {"type": "TOOL_CALL_END", "toolCallId": "c1", "rawEvent": None},
                  {**F, "result": None, "outcome": None, "rawEvent": None}]), code="UK-06"),
    Quirk("java-timestamp-null", "Java", JAVA + "core/.../event/Event.java (Long timestamp())",
          _lines([{**S, "timestamp": None}, F]), None, False, "UK-05"),
    Quirk("java-interrupt-nulls", "Java", JAVA + "core/.../interrupt/Interrupt.java",
          _lines([S, {**F, "outcome": {"type": "interrupt", "interrupts": [
              {"id": "i1", "reason": "approval", "message": None, "toolCallId": None, "responseSchema": None,
               "expiresAt": None, "metadata": None}]}}]), None, False, "UK-05", "interrupt-fields-null"),
    Quirk("java-pretty-data-lines", "Java", JAVA + "server/.../SseEventEncoder.java (one data: line per line)",
          _lines([S, *TEXT, F], Writer(indent=2)), "lf"),
    Quirk("kotlin-defaults", "Kotlin", "sdks/community/kotlin/library/core/.../types/Types.kt, AgUiJson.kt",
          _lines([S, {"type": "MESSAGES_SNAPSHOT", "messages": [{"role": "assistant", "id": "a1", "toolCalls": [
              {"id": "c1", "function": {"name": "f", "arguments": "{}"}, "type": "function"}]}]},
                  {**F, "outcome": {"type": "success"}}], Writer(order="tag-first"))),
    Quirk("rust-timestamp-f64", "Rust", RUST + "event.rs (timestamp: Option<f64>)",
          ['{"type":"RUN_STARTED","timestamp":1780000000000.0,"threadId":"t1","runId":"r1"}',
           '{"type":"RUN_FINISHED","timestamp":1780000000001.0,"threadId":"t1","runId":"r1"}'],
          # (SSE-framed, so no hostile variant is drawn from it: refused at its first event here, every
          # variant would differ in whatever the mutation added)
          "lf", False, "UK-05", "timestamp-integral-float"),
    Quirk("rust-thinking-events", "Rust", RUST + "event.rs (EventType: THINKING_* only)",
          _lines([S, {"type": "THINKING_START"}, {"type": "THINKING_TEXT_MESSAGE_START"},
                  {"type": "THINKING_TEXT_MESSAGE_CONTENT", "delta": "why"}, {"type": "THINKING_TEXT_MESSAGE_END"},
                  {"type": "THINKING_END"}, F]), code="RS-09"),
    Quirk("integral-doubles", "Rust, Dart, Ruby", "serde_json, jsonEncode, JSON.generate (2.0 for a double)",
          _lines([S, {"type": "STATE_SNAPSHOT", "snapshot": {"n": 1.0, "m": [2.0, -0.0], "big": 1e21}},
                  {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/k", "value": 3.0}]}, F])),
    Quirk("dotnet-escapes", ".NET", DOTNET + "AGUI.Formatting/SseEventStreamFormatter.cs (JavaScriptEncoder.Default)",
          _lines([S, *TEXT, F], Writer(_dotnet))),
    Quirk("dotnet-astral-split", ".NET", DOTNET + "AGUI.Formatting/SseEventStreamFormatter.cs (UTF-16 escapes)",
          _lines([S, TEXT[0]]) + ['{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"a\\uD83D"}',
                                  '{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"\\uDE00b"}']
          + _lines([TEXT[2], F])),
    Quirk("dotnet-event-metadata", ".NET", DOTNET + "AGUI.Abstractions/Events/BaseEvent.cs (Metadata)",
          _lines([S, {"type": "STATE_SNAPSHOT", "snapshot": {"a": 1}, "metadata": {"agent": "dotnet"}}, F])),
    Quirk("ruby-compacted-result", "Ruby", "sdks/community/ruby/lib/ag_ui_protocol/util.rb (deep_compact, camelize)",
          _lines([S, {**F, "result": _ruby_compact({"final_answer": "x", "ids": [1, None, 2]})}])),
    Quirk("big-integer", "Ruby, C++ (nlohmann)", "sdks/community/ruby/lib/ag_ui_protocol/util.rb (Integer)",
          _lines([S, {"type": "STATE_SNAPSHOT", "snapshot": {"n": 18446744073709551616}}, F]),
          documented="state-snapshot-integer-beyond-double"),
    Quirk("snake-case-field", "hand-written encoders (Dart reads raw_event)",
          "sdks/community/dart/lib/src/events/events.dart",
          _lines([S, {"type": "STATE_SNAPSHOT", "snapshot": {}, "raw_event": {"a": 1}}, F]), code="UK-03"),
    Quirk("enum-lower-case", "hand-written encoders", "(no SDK of the repository)",
          _lines([S, {"type": "text_message_start", "messageId": "m1", "role": "assistant"}, F]), code="UK-02"),
    *[Quirk(f"sse-{style}", "any", "SSE framing", _lines([S, *TEXT, F]), style)
      for style in ("crlf", "cr", "heartbeat-tail", "no-final-blank", "no-final-newline", "bom", "nospace")],
]


def quirks() -> Iterator[tuple[str, list[Line], None, str | None]]:
    """Each quirk's own stream, ``w-quirk-NAME``."""
    for quirk in QUIRKS:
        yield f"w-quirk-{quirk.name}", quirk.lines, None, quirk.framing


# ---------------------------------------------------------------------------------------------------


# Dialects and quirks that meet a difference the golden tests document: judged as that golden stream.
DOCUMENTED = {"java-interrupt-nulls": "interrupt-fields-null",
              **{f"quirk-{q.name}": q.documented for q in QUIRKS if q.documented}}


def documented(name: str) -> str | None:
    """The golden stream whose documented difference the stream ``name`` (or a variant of it) may show."""
    if not name.startswith("w-"):
        return None
    base = name[2:].split("~", 1)[0].removesuffix(".sse")  # (an SSE stream is named by its file)
    return DOCUMENTED.get(base) or DOCUMENTED.get(base.rsplit("-s", 1)[0])


def streams(seed: int, count: int, only: list[str] | None = None
            ) -> Iterator[tuple[str, list[Event], dict[str, Any] | None, str | None]]:
    """The quirks' streams, then ``count`` conversations in every dialect, then ``count`` resume chains."""
    if not only:
        yield from quirks()  # type: ignore[misc]
    yield from shaped_streams("w", SHAPES, ("resume-chain", resume_chain), seed, count, only)
