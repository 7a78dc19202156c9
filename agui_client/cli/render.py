"""How the CLI shows a run: tokens as they arrive, tool calls, reasoning, state, interrupts, errors.

Two outputs share one renderer: :class:`RichOutput` (colours, a spinner, panels) on a terminal, and
:class:`PlainOutput` (plain ASCII-marked lines, flushed as they are written) when stdout is not a
terminal or with ``--plain``, so the same view reads well in scripts and CI logs. Both write through
:mod:`agui_client.cli.terminal`, so nothing an agent sent can act on the terminal.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import IO, Any, TypeVar

from rich.console import Console, Group, RenderableType
from rich.json import JSON as RichJSON
from rich.panel import Panel
from rich.prompt import Confirm, InvalidResponse, Prompt
from rich.status import Status
from rich.table import Table
from rich.text import Text

from .._codes import documented
from ..core.expiry import parse_expires_at
from ..core.fold import ThreadState, sum_usage
from ..core.result import RunResult
from ..errors import AguiError, HTTPStatusError, ProtocolError, ResumeRefused, StreamWarning
from ..terminal import InertDeltas
from ..wire.types import events as ev
from ..wire.types import messages as msg
from ..wire.types.run import Interrupt, TokenUsage
from . import forms
from .stopping import held_signals
from .terminal import SafeConsole, ascii_named, named, one_line, safe_text, some_lines, unmixed, visible

__all__ = [
    "answer_text",
    "bounded",
    "json_lines",
    "json_renderable",
    "Output",
    "RichOutput",
    "PlainOutput",
    "make_output",
    "ConsoleAsker",
    "EventRenderer",
    "render_interrupt",
    "render_error",
    "render_warnings",
    "render_run_end",
    "render_messages",
    "render_summary",
    "usage_text",
    "last_assistant_text",
    "ERROR_CHARS",
    "see",
    "with_see",
]


class Output:
    """Where the view is written; tracks whether the cursor is in the middle of a line."""

    plain = True

    def __init__(self) -> None:
        self._mid_line = False
        #: The tokens of the open line made inert as they come (the public class a user's chat app streams
        #: through): it remembers the last character shown, which judges a joiner the next token starts
        #: with, and holds a token's final CR.
        self._tokens = InertDeltas()

    # -- what subclasses implement -------------------------------------------------------------------

    def _write(self, text: str, style: str) -> None:
        raise NotImplementedError

    def panel(self, title: str, lines: Sequence[str], *, style: str = "", body: RenderableType | None = None) -> None:
        """A titled block: a rich panel, or a heading and indented lines."""
        raise NotImplementedError

    def json(self, value: Any, *, indent: str = "  ") -> None:
        """A JSON value, pretty-printed."""
        raise NotImplementedError

    def start_waiting(self, message: str) -> None:
        """Show that the CLI is waiting (a spinner on a terminal)."""

    def stop_waiting(self) -> None:
        """Take the waiting indicator away (idempotent)."""

    # -- shared ---------------------------------------------------------------------------------------

    def inline(self, text: str, style: str = "") -> None:
        """Write ``text`` where the cursor is (a token).

        A token's final CR waits for the next token: a CRLF split between two tokens is one line
        end, where each token on its own would show a bare CR (``\\r``) and then a newline.
        """
        shown = self._tokens.feed(text)
        if shown:
            self._write(shown, style)
            self._mid_line = not shown.endswith("\n")

    def line(self, text: str = "", style: str = "") -> None:
        """Write ``text`` on a line of its own."""
        self.end_line()
        self._write(text + "\n", style)

    def end_line(self) -> None:
        """Finish the current line, if one is open."""
        held = self._tokens.end()  # (a bare CR after all: shown; the next token starts a line)
        if held:
            self._write(held, "")
            self._mid_line = True
        if self._mid_line:
            self._write("\n", "")
            self._mid_line = False

    def ended_by_input(self) -> None:
        """The open line was ended by the person's Enter (a terminal echoes it): nothing to finish."""
        self._mid_line = False
        self._tokens.end()  # (a CR held from before the prompt is dropped: the Enter ended the line)

    def mark(self, rich: str, plain: str) -> str:
        """The marker for this output: ``rich`` on a terminal, ``plain`` (ASCII) otherwise."""
        return plain if self.plain else rich


class PlainOutput(Output):
    """Plain, colourless text, flushed as written."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        super().__init__()
        self.stream = stream if stream is not None else sys.stdout

    def _write(self, text: str, style: str) -> None:
        self.stream.write(visible(text))  # (the plain way out: nothing the agent sent acts on the terminal)
        self.stream.flush()

    def panel(self, title: str, lines: Sequence[str], *, style: str = "", body: RenderableType | None = None) -> None:
        self.line(f"== {title} ==")
        for text in lines:
            # A line of the agent's text that goes on over several is indented under its first: a line end
            # in it cannot start a line that reads as the panel's own ("  id: …") or a heading ("== …").
            self.line(f"  {text}".replace("\n", "\n    ") if text else "")

    def json(self, value: Any, *, indent: str = "  ") -> None:
        for text in json_lines(value):
            self.line(indent + text)


class RichOutput(Output):
    """A rich console: styles, a spinner while waiting, panels."""

    plain = False

    def __init__(self, console: SafeConsole) -> None:
        super().__init__()
        self.console = console
        self._status: Status | None = None

    def _write(self, text: str, style: str) -> None:
        self.stop_waiting()
        self.console.print(safe_text(text, style), end="", soft_wrap=True)

    def panel(self, title: str, lines: Sequence[str], *, style: str = "", body: RenderableType | None = None) -> None:
        self.end_line()
        self.stop_waiting()
        content: RenderableType = body if body is not None else safe_text("\n".join(lines))
        self.console.print(Panel(content, title=safe_text(title, f"bold {style}".strip()),
                                 title_align="left", border_style=style or "blue", expand=False))

    def json(self, value: Any, *, indent: str = "  ") -> None:
        self.end_line()
        self.stop_waiting()
        self.console.print(json_renderable(value))

    def start_waiting(self, message: str) -> None:
        self.stop_waiting()
        # (the spinner is a live display: Ctrl-C waits while it starts or stops, see cli.stopping)
        with held_signals():
            self._status = self.console.status(safe_text(message, "dim"), spinner="dots")
            self._status.start()

    def stop_waiting(self) -> None:
        if self._status is None:
            return
        with held_signals():
            status, self._status = self._status, None
            status.stop()


#: The most lines of a JSON value (the shared state) shown, and the most characters of each: the agent's
#: state may be megabytes, or one string of a megabyte (``--json`` and ``agui replay --json`` write it whole).
JSON_LINES = 200
JSON_LINE_CHARS = 2000


def json_lines(value: Any) -> list[str]:
    """``value`` as indented JSON lines, at most ``JSON_LINES`` of at most ``JSON_LINE_CHARS`` characters
    each, and a line counting what was left out."""
    text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    lines = text.split("\n", JSON_LINES)
    more = lines.pop().count("\n") + 1 if len(lines) > JSON_LINES else 0
    shown = [bounded(line, JSON_LINE_CHARS) for line in lines]
    return shown + ([f"... ({more} more lines)"] if more else [])


def json_renderable(value: Any) -> RenderableType:
    """``value`` as rich shows JSON (highlighted), or as the bounded lines of :func:`json_lines` when
    it is longer than they show."""
    lines = json_lines(value)
    if len(lines) <= JSON_LINES and not any(len(line) > JSON_LINE_CHARS for line in lines):
        return RichJSON.from_data(value, indent=2, default=str)
    return safe_text("\n".join(lines))


def make_output(*, plain: bool, stream: IO[str] | None = None) -> Output:
    """A plain output, or a rich one on ``stream`` (stdout by default)."""
    if plain:
        return PlainOutput(stream)
    return RichOutput(SafeConsole(file=stream, soft_wrap=False))


_T = TypeVar("_T")


def _said(answer: object) -> str:
    # (a default the agent's schema gave, taken as the answer: on one line, cut as the answer echo is)
    if isinstance(answer, bool):
        return "yes" if answer else "no"
    said = unmixed(str(answer))
    # (not cut by one_line, whose ``\n`` for a line end takes two characters: ``bounded`` cuts, and counts)
    return bounded(one_line(said, 2 * len(said)), ANSWER_CHARS)


def _say_invalid(console: Console, error: InvalidResponse) -> None:
    # rich's own "please enter …" notes are markup strings (never the agent's text), and the CLI's
    # console reads no markup: they are parsed here, where their origin is known.
    message = error.message
    console.print(Text.from_markup(message) if isinstance(message, str) else message)


#: The most choices a prompt lists.
_PROMPT_CHOICES = 20


def _short(text: str) -> bool:
    """Whether a prompt may show ``text`` (a choice, a default the agent's schema gave) as it is: short, on
    one line, and nothing in it a name would escape (two choices must never read the same)."""
    return ascii_named(text, 60) == text


class _Ask(Prompt):
    """rich's text and choice prompt, its notes styled on a console that reads no markup."""

    def on_validate_error(self, value: str, error: InvalidResponse) -> None:
        _say_invalid(self.console, error)


class _YesNo(Confirm):
    """``[y/n]`` that also takes the words people type: ``yes``/``no`` in any case."""

    def process_response(self, value: str) -> bool:
        word = value.strip().lower()
        if word in ("yes", "no"):
            return word == "yes"
        return super().process_response(value)

    def on_validate_error(self, value: str, error: InvalidResponse) -> None:
        _say_invalid(self.console, error)


class ConsoleAsker:
    """Asks with rich prompts on ``console`` (an :class:`~agui_client.cli.forms.Asker`).

    With ``piped`` (answers piped into stdin), each answer read is shown after its question, as a
    terminal would echo it, and once the input ends every further question takes its default (an
    optional one is skipped); a question that needs an answer then ends the conversation
    (``EOFError``), with nothing sent.
    """

    def __init__(self, console: SafeConsole, *, piped: bool = False) -> None:
        self.console = console
        self.piped = piped
        self.ended = False

    def ask_bool(self, label: str, *, default: bool | None) -> bool:
        prompt = safe_text(label, "bold")
        if default is None:
            return self._ask(lambda: _YesNo.ask(prompt, console=self.console), None, prompt)
        return self._ask(lambda: _YesNo.ask(prompt, console=self.console, default=default), default, prompt)

    def ask_choice(self, label: str, choices: Sequence[str], *, default: str | None) -> str:
        prompt = safe_text(label, "bold")
        # rich lists the choices in the prompt: not a schema's thousands, nor one whose line ends would
        # break the prompt (the interrupt's panel lists the first of them, on one line each)
        show = len(choices) <= _PROMPT_CHOICES and all(map(_short, choices))
        if default is None:
            return self._ask(lambda: _Ask.ask(prompt, console=self.console, choices=list(choices), show_choices=show),
                             None, prompt)
        return self._ask(lambda: _Ask.ask(prompt, console=self.console, choices=list(choices), default=default,
                                          show_choices=show, show_default=_short(default)), default, prompt)

    def ask_text(self, label: str, *, default: str | None) -> str:
        prompt = safe_text(label, "bold")
        if default is None:
            return self._ask(lambda: _Ask.ask(prompt, console=self.console), "", prompt)
        return self._ask(lambda: _Ask.ask(prompt, console=self.console, default=default,
                                          show_default=_short(default)), default, prompt)

    def _ask(self, ask: Callable[[], _T], at_end: _T | None, prompt: Text) -> _T:
        if not self.ended:
            try:
                answer = ask()
            except EOFError:
                if not self.piped:
                    raise
                self.ended = True
            else:
                if self.piped:
                    self.console.print(safe_text(_said(answer), "dim"))
                return answer
        else:
            self.console.print(prompt, end=" ")
        if at_end is None:
            raise EOFError  # (a question with no default: the conversation ends here)
        said = _said(at_end)
        note = f"{said} (input ended: the default)" if said else "(input ended: left out)"
        self.console.print(safe_text(note, "dim"))
        return at_end

    def say(self, text: str) -> None:
        self.console.print(safe_text(text, "red"))



# --------------------------------------------------------------------------------------------------
# Events
# --------------------------------------------------------------------------------------------------

_MAX_INLINE = 160


class EventRenderer:
    """Turns a run's events into the view, as they arrive."""

    def __init__(self, out: Output, state: ThreadState | None = None) -> None:
        self.out = out
        self.state = state
        self._lane: tuple[str, str] | None = None
        self._tool_names: dict[str, str] = {}
        self._subagents: dict[str, str] = {}

    def close(self) -> None:
        """End any line left open (a message the stream cut off)."""
        self.out.end_line()
        self._lane = None

    def event(self, event: ev.Event | ev.UnknownEvent) -> None:
        """Show one event."""
        out = self.out
        match event:
            case ev.RunStartedEvent(run_id=run_id):
                out.line(f"{out.mark('▶', '>')} run {named(run_id)} started", "dim")
            case ev.TextMessageStartEvent(message_id=mid, role=role, subagent_run_id=sub):
                self._open(("text", mid), self._speaker(role, sub), "bold cyan")
            case ev.TextMessageContentEvent(message_id=mid, delta=delta, subagent_run_id=sub):
                self._continue(("text", mid), self._speaker(None, sub), "bold cyan")
                out.inline(delta)
            case ev.TextMessageEndEvent(message_id=mid):
                self._close(("text", mid))
            case ev.ReasoningMessageStartEvent(message_id=mid):
                self._open(("reasoning", mid), "thinking: ", "dim italic")
            case ev.ReasoningMessageContentEvent(message_id=mid, delta=delta):
                self._continue(("reasoning", mid), "thinking: ", "dim italic")
                out.inline(delta, "dim italic")
            case ev.ReasoningMessageEndEvent(message_id=mid):
                self._close(("reasoning", mid))
            case ev.ReasoningEncryptedValueEvent(subtype=subtype, entity_id=entity):
                out.line(f"(encrypted reasoning for {named(subtype)} {named(entity)})", "dim")
            case ev.ReasoningStartEvent() | ev.ReasoningEndEvent():
                pass
            case ev.ToolCallStartEvent(tool_call_id=cid, tool_call_name=name, subagent_run_id=sub):
                self._tool_names[cid] = name = named(name)
                who = f"[{named(self._subagents.get(sub, sub))}] " if sub else ""
                self._open(("tool", cid), f"{who}{out.mark('⚙', 'tool:')} {name} ", "bold yellow")
            case ev.ToolCallArgsEvent(tool_call_id=cid, delta=delta):
                self._continue(("tool", cid), f"{out.mark('⚙', 'tool:')} {self._tool_names.get(cid) or named(cid)} ",
                               "bold yellow")
                out.inline(delta, "yellow")
            case ev.ToolCallEndEvent(tool_call_id=cid):
                self._close(("tool", cid))
            case ev.ToolCallResultEvent(tool_call_id=cid, content=content):
                name = self._tool_name(cid)
                self._break()
                out.line(f"  {out.mark('↳', '->')} {name} returned {_clip(_content_text(content))}", "green")
            case ev.StateSnapshotEvent(snapshot=snapshot):
                self._break()
                out.line(f"state: snapshot {_shape(snapshot)}", "magenta")
            case ev.StateDeltaEvent(delta=delta):
                self._break()
                out.line(f"state: {_ops(delta)}", "magenta")
            case ev.MessagesSnapshotEvent(messages=messages):
                self._break()
                out.line(f"messages: snapshot of {len(messages)} message(s)", "magenta")
            case ev.ActivitySnapshotEvent(activity_type=kind, content=content):
                self._break()
                out.line(f"activity {named(kind)}: {_clip(_compact(content), 100)}", "blue")
            case ev.ActivityDeltaEvent(activity_type=kind, patch=patch):
                self._break()
                out.line(f"activity {named(kind)}: {_ops(patch)}", "blue")
            case ev.StepStartedEvent(step_name=name):
                self._break()
                out.line(f"step {named(name)} started", "dim")
            case ev.StepFinishedEvent(step_name=name):
                self._break()
                out.line(f"step {named(name)} finished", "dim")
            case ev.SubagentStartedEvent(subagent_run_id=sub, name=name, description=description):
                self._subagents[sub] = name
                self._break()
                out.line(f"subagent {named(name)} started" + (f": {_clip(description, 300)}" if description else ""),
                         "blue")
            case ev.SubagentFinishedEvent(subagent_run_id=sub, result=result, outcome=outcome):
                self._break()
                status = getattr(outcome, "TYPE", "success")
                shown = f" {_clip(_compact(result), 100)}" if result is not None else ""
                out.line(f"subagent {named(self._subagents.get(sub, sub))} finished ({status}){shown}", "blue")
            case ev.SubagentErrorEvent(subagent_run_id=sub, message=message, code=code):
                self._break()
                out.line(f"subagent {named(self._subagents.get(sub, sub))} failed: {bounded(some_lines(message))}"
                         + (with_see(f" (code {named(code)})", code) if code else ""), "red")
            case ev.CustomEvent(name=name, value=value):
                self._break()
                out.line(f"custom {named(name)}: {_clip(_compact(value), 100)}", "dim")
            case ev.RawEvent(source=source):
                self._break()
                out.line(f"raw event{f' from {named(source)}' if source else ''}", "dim")
            case ev.RunFinishedEvent(outcome=outcome):
                self._break()
                kind = getattr(outcome, "TYPE", "success")
                out.line(f"{out.mark('■', '=')} run finished: {kind}", "bold green" if kind == "success" else "bold")
            case ev.RunErrorEvent(message=message, code=code):
                self._break()
                out.panel("RUN_ERROR", [bounded(some_lines(message)) + (with_see(f" (code {named(code)})", code)
                                                                         if code else "")],
                          style="red")
            case ev.UnknownEvent(type=kind):
                self._break()
                out.line(f"unknown event {named(kind)} (ignored)", "dim")
            case _:
                self._break()
                out.line(f"{type(event).__name__}", "dim")

    def _tool_name(self, call_id: str) -> str:
        if call_id in self._tool_names:
            return self._tool_names[call_id]
        call = self.state.tool_call(call_id) if self.state is not None else None
        return named(call.function.name if call is not None else call_id)

    def _speaker(self, role: str | None, subagent: str | None) -> str:
        if subagent:
            return f"[{named(self._subagents.get(subagent, subagent))}] "
        return f"{role or 'assistant'}: "

    def _open(self, lane: tuple[str, str], prefix: str, style: str) -> None:
        self.out.end_line()
        self.out.inline(prefix, style)
        self._lane = lane

    def _continue(self, lane: tuple[str, str], prefix: str, style: str) -> None:
        if self._lane != lane:
            self._open(lane, prefix + "... ", style)

    def _close(self, lane: tuple[str, str]) -> None:
        if self._lane == lane:
            self.out.end_line()
            self._lane = None

    def _break(self) -> None:
        self.out.end_line()
        self._lane = None


def _content_text(content: str | Sequence[msg.ContentPart]) -> str:
    if isinstance(content, str):
        return content
    return " ".join(getattr(part, "text", f"<{getattr(part, 'TYPE', 'part')}>") for part in content)


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _clip(text: str, limit: int = _MAX_INLINE) -> str:
    text = text.replace("\r\n", "\n").replace("\n", " ")  # (one line; a CRLF is one line end, not a bare CR)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _shape(value: Any) -> str:
    if isinstance(value, Mapping):
        keys = list(value)
        shown = ", ".join(named(str(k), 60) for k in keys[:6]) + (", ..." if len(keys) > 6 else "")
        return f"({len(keys)} key(s): {shown})" if keys else "(empty object)"
    if isinstance(value, list):
        return f"(list of {len(value)})"
    return f"({_clip(_compact(value), 60)})"


def _ops(patch: Iterable[Any]) -> str:
    ops = list(patch)
    paths = list(dict.fromkeys(str(op.get("path", "?")) for op in ops if isinstance(op, Mapping)))
    shown = ", ".join(named(path, 60) for path in paths[:5]) + (", ..." if len(paths) > 5 else "")
    return f"{len(ops)} op{'s' if len(ops) != 1 else ''} on {shown}" if paths else f"{len(ops)} ops"


# --------------------------------------------------------------------------------------------------
# Interrupts, results, errors
# --------------------------------------------------------------------------------------------------


def render_interrupt(out: Output, interrupt: Interrupt, state: ThreadState | None,
                     now: datetime | None = None) -> None:
    """Show an interrupt: its reason, message, tool call, expiry and the answer its schema asks for.

    On a terminal the items are two columns, so a long message or field description wraps under its
    own text, not under the labels.
    """
    # Here the person decides: every name is shown in ASCII (a Cyrillic letter in a tool's name cannot
    # pass for the Latin one), and in the agent's prose each word that mixes ASCII with look-alikes of it
    # shows them escaped (``ascii_named``, ``unmixed``).
    items: list[tuple[str, str]] = [("id:", ascii_named(interrupt.id))]
    if interrupt.message:
        # (the question, whole as a person would read it, up to a bound: a megabyte would fill the screen)
        items.append(("message:", bounded(some_lines(unmixed(interrupt.message), QUESTION_LINES), QUESTION_CHARS)))
    if interrupt.tool_call_id is not None:
        call = state.tool_call(interrupt.tool_call_id) if state is not None else None
        if call is not None:
            items.append(("tool call:", f"{ascii_named(call.function.name)} "
                                        f"{_clip(unmixed(call.function.arguments or '{}'))}"))
        else:
            items.append(("tool call:", ascii_named(interrupt.tool_call_id)))
    if interrupt.subagent_run_id is not None:
        items.append(("subagent:", ascii_named(interrupt.subagent_run_id)))
    if interrupt.expires_at is not None:
        items.append(("expires at:", f"{named(interrupt.expires_at)}{_until(interrupt.expires_at, now)}"))
    schema = interrupt.response_schema
    form = forms.fields(schema)
    rows: list[tuple[str, str]] = []
    if schema is None:
        items.append(("answer:", "any JSON (no responseSchema)"))
    elif form is None:
        items.append(("answer schema:", _clip(unmixed(_compact(schema)))))
    else:
        title = schema.get("title")
        heading = "answer" + (f" ({one_line(unmixed(title))})" if isinstance(title, str) else "") + ":"
        for field in form:
            rows.append((field.shown, forms.describe(field)
                         + (f"  - {one_line(unmixed(field.description), 300)}" if field.description else "")))
    lines = [f"{label} {value}" for label, value in items]
    body: RenderableType | None = None
    if rows:
        width = max(len(name) for name, _ in rows)
        lines += [heading, *(f"  {name.ljust(width)}  {text}" for name, text in rows)]
        body = Group(_grid(items, 0), safe_text(heading), _grid(rows, 2))
    else:
        body = _grid(items, 0)
    out.panel(f"interrupt: {ascii_named(interrupt.reason)}", lines, style="yellow", body=body)


def _grid(rows: Sequence[tuple[str, str]], indent: int) -> Table:
    """Two columns, the second wrapping under itself."""
    grid = Table.grid(padding=(0, 2 if indent else 1))
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    for label, text in rows:
        grid.add_row(safe_text(" " * indent + label), safe_text(text))
    return grid


def _until(expires_at: str, now: datetime | None) -> str:
    when = parse_expires_at(expires_at)
    if when is None:
        return " (unreadable: never expires)"
    current = now if now is not None else datetime.now(timezone.utc)
    seconds = int((when - current).total_seconds())
    if seconds <= 0:
        return " (expired)"
    minutes, rest = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    if days:
        return f" (in {days} d {hours} h)"
    if hours:
        return f" (in {hours} h {minutes} min)"
    return f" (in {minutes} min {rest} s)" if minutes else f" (in {rest} s)"


def usage_text(entries: Iterable[TokenUsage], runs: int | None = None) -> str:
    """``236 tokens (160 in, 76 out, 22 reasoning) over 2 runs``, or ``not reported``."""
    total = sum_usage(entries)
    parts = [f"{value} {name}" for name, value in (("in", total.input_tokens), ("out", total.output_tokens),
                                                   ("reasoning", total.reasoning_tokens),
                                                   ("cached", total.cached_input_tokens)) if value]
    if total.total_tokens is None and not parts:
        return "not reported"
    head = f"{total.total_tokens} tokens" if total.total_tokens is not None else "tokens"
    text = head + (f" ({', '.join(parts)})" if parts else "")
    if runs is not None:
        text += f" over {runs} run{'s' if runs != 1 else ''}"
    return text


def last_assistant_text(state: ThreadState) -> str | None:
    """The text of the thread's last assistant message that has text."""
    for message in reversed(state.messages):
        if isinstance(message, msg.AssistantMessage) and message.content and message.subagent_run_id is None:
            return message.content
    return None


def see(code: object) -> str | None:
    """The hint that ends a line showing ``code``, ``(see: agui explain IR-30)``; ``None`` when the package
    does not document the code (an agent's own ``RUN_ERROR`` code): nothing points at a page that is not."""
    entry = documented(code)
    return None if entry is None else f"(see: agui explain {entry.code})"


def with_see(text: str, code: object) -> str:
    """``text`` ended with :func:`see`'s hint for ``code``, when there is one."""
    hint = see(code)
    return text if hint is None else f"{text} {hint}"


def render_warnings(out: Output, warnings: Sequence[StreamWarning], limit: int = 5) -> None:
    """Show the first warnings of a run, each ending with where its code is explained."""
    for warning in warnings[:limit]:
        out.line(with_see(f"warning: {one_line(str(warning), 1000)}", warning.code), "yellow")
    if len(warnings) > limit:
        out.line(f"... and {len(warnings) - limit} more warning(s)", "yellow")


def render_run_end(out: Output, result: RunResult, runner: str) -> None:
    """What a run's events did not show: its first warnings, a run the legacy bridge read as an
    interrupt, and the frontend tool calls left for the application (``runner`` does not run them)."""
    render_warnings(out, result.warnings)
    if result.bridged:
        out.line(f"the run ended as success after the producer asked with CUSTOM events: read as an interrupt "
                 f"(--legacy-interrupts {result.bridged})", "yellow")
    if result.pending_tool_call_ids:
        pending = result.pending_tool_calls
        shown = [f"{named(c.function.name)}({one_line(c.function.arguments or '', 300)})"
                 for c in pending[:_PROBLEMS_SHOWN]]
        shown = shown or [named(i) for i in result.pending_tool_call_ids[:_PROBLEMS_SHOWN]]
        more = max(len(pending), len(result.pending_tool_call_ids)) - len(shown)
        calls = ", ".join(shown) + (f" and {more} more" if more > 0 else "")
        out.line(f"the agent left frontend tool call(s) for the application: {calls} ({runner} does not run them)",
                 "yellow")


#: The longest explanation from an error body shown (the body itself is a bounded excerpt).
ERROR_DETAIL_CHARS = 2000


def _error_detail(payload: Any) -> str | None:
    """The explanation in a JSON error body: ``detail`` (FastAPI, a recording's 409), ``message`` or
    ``error.message``, with ``code`` when there is one; ``None`` when there is none as text."""
    if not isinstance(payload, dict):
        return None
    error = payload.get("error")
    found = next((value for value in (payload.get("detail"), payload.get("message"),
                                      error.get("message") if isinstance(error, dict) else error)
                  if isinstance(value, str) and value.strip()), None)
    if found is None:
        return None
    code = payload.get("code")
    text = found if len(found) <= ERROR_DETAIL_CHARS else found[:ERROR_DETAIL_CHARS - 3] + "..."
    shown = isinstance(code, str | int) and not isinstance(code, bool)
    return text + (with_see(f" (code {named(str(code))})", code) if shown else "")


#: The most characters of an error's message shown (its lines are bounded too, by ``some_lines``): a
#: message quotes the agent's words, bounded each, but an exception from elsewhere may quote anything.
ERROR_CHARS = 4000


def bounded(text: str, limit: int = ERROR_CHARS) -> str:
    """``text`` cut at ``limit`` characters, with a count of the rest."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text) - limit} more characters)"


#: The most lines and characters of an interrupt's message shown in its panel (``--json`` keeps it whole).
QUESTION_LINES = 200
QUESTION_CHARS = 20_000

#: The longest answer echoed (``answer to i1: {...}``): a default the agent's schema gave may be megabytes.
ANSWER_CHARS = 300


def answer_text(payload: Any) -> str:
    """An answer as the CLI echoes it before sending: its JSON, on one line, cut at ``ANSWER_CHARS`` (a
    word mixing ASCII with look-alikes of it shows them escaped, as the question did)."""
    return bounded(unmixed(json.dumps(payload, ensure_ascii=False)), ANSWER_CHARS)


#: The most problems of a refused answer listed under its message.
_PROBLEMS_SHOWN = 10


def render_error(out: Output, exc: BaseException, *, at: str | None = None) -> None:
    """An error in a panel, saying where: event index, type and rule for a protocol error (``at``: where,
    in words, said instead of its event: a recording cut before its run's end says what it ends after)."""
    if isinstance(exc, ProtocolError):
        where = [(f"event #{exc.index}" if exc.index is not None else None) if at is None else at,
                 named(exc.event_type) if exc.event_type else None,
                 f"rule {exc.rule}" if exc.rule else None, f"at {named(exc.pointer)}" if exc.pointer else None,
                 f"run {named(exc.run_id)}" if exc.run_id else None]
        lines = [", ".join(p for p in where if p), bounded(some_lines(exc.detail)), see(exc.rule) or ""]
        out.panel(f"protocol error ({type(exc).__name__})", [line for line in lines if line], style="red")
    elif isinstance(exc, HTTPStatusError):
        detail = _error_detail(exc.payload)
        if detail is None:
            lines = [bounded(str(exc))]
        else:
            # The agent's own explanation, whole and as text: the message's one-line excerpt of the
            # JSON body cuts it at 200 characters, quotes escaped (a recording's 409 names the difference
            # after the request it quotes).
            message = str(exc)
            quoted = message.rfind(": " + exc.body.strip().replace("\n", " ")[:20]) if exc.body.strip() else -1
            lines = [message[:quoted] if quoted > 0 else message, detail]
            if quoted > 0 and exc.hint:
                lines.append(exc.hint)  # (it ended the message, after the excerpt cut off above)
        if exc.retry_after is not None:
            lines.append(f"retry after {exc.retry_after:g} s")
        out.panel(f"HTTP {exc.status_code}", lines, style="red")
    elif isinstance(exc, ResumeRefused):
        lines = [bounded(str(exc))]
        # (the message names ten interrupts; an agent may raise thousands, each with its own problem)
        more = [f"{named(interrupt_id)}: {one_line(problem, 1000)}" for interrupt_id, problems in exc.errors.items()
                for problem in problems if problem not in lines[0]]
        lines += more[:_PROBLEMS_SHOWN]
        if len(more) > _PROBLEMS_SHOWN:
            lines.append(f"... and {len(more) - _PROBLEMS_SHOWN} more")
        hint = see(getattr(exc, "code", None))
        out.panel(f"answer refused ({type(exc).__name__})", lines + ([hint] if hint else []), style="red")
    elif isinstance(exc, AguiError):
        hint = see(getattr(exc, "code", None))
        out.panel(type(exc).__name__, [bounded(some_lines(str(exc)))] + ([hint] if hint else []), style="red")
    else:
        out.panel("error", [bounded(some_lines(f"{type(exc).__name__}: {exc}"))], style="red")


def render_messages(out: Output, state: ThreadState) -> None:
    """The thread's messages, one line or block each (a replay's readable view)."""
    if not state.messages:
        out.line("(no messages)", "dim")
    for message in state.messages:
        match message:
            case msg.UserMessage(content=content) | msg.SystemMessage(content=content) | \
                    msg.DeveloperMessage(content=content):
                out.line(f"{message.ROLE}: {_content_text(content)}", "bold")
            case msg.AssistantMessage(content=content, tool_calls=calls, subagent_run_id=sub):
                record = state.subagents.get(sub) if sub else None
                who = f"[{named(record.name if record is not None else sub)}]" if sub else "assistant:"
                if content:
                    out.line(f"{who} {content}", "cyan")
                for call in calls or ():
                    out.line(f"  {out.mark('⚙', 'tool:')} {named(call.function.name)} "
                             f"{_clip(call.function.arguments or '{}')}", "yellow")
            case msg.ToolMessage(content=content, tool_call_id=cid, error=error):
                answered = state.tool_call(cid)
                name = named(answered.function.name if answered is not None else cid)
                text = f"failed: {_clip(error)}" if error else f"returned {_clip(_content_text(content))}"
                out.line(f"  {out.mark('↳', '->')} {name} {text}", "green")
            case msg.ReasoningMessage(content=content):
                out.line(f"thinking: {_clip(content, 300)}", "dim italic")
            case msg.ActivityMessage(activity_type=kind, content=content):
                out.line(f"activity {named(kind)}: {_clip(_compact(content), 100)}", "blue")
            case _:
                out.line(bounded(repr(message)), "dim")


def _table(rows: Sequence[tuple[str, str]]) -> Table:
    """A two-column key/value table."""
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    for key, value in rows:
        table.add_row(key, value)
    return table


def render_summary(out: Output, title: str, rows: Sequence[tuple[str, str]], state: Any = None,
                   *, show_state: bool = True) -> None:
    """A summary block: key/value rows, then the shared state as JSON."""
    if out.plain or not isinstance(out, RichOutput):
        out.panel(title, [f"{k}: {v}" for k, v in rows])
        if show_state:
            out.line("  state:")
            out.json(state, indent="    ")
        return
    parts: list[RenderableType] = [_table(rows)]
    if show_state:
        parts += [Text("state:", style="bold"), json_renderable(state)]
    out.panel(title, [], style="green", body=Group(*parts))
