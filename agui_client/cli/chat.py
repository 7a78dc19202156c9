"""``agui chat [URL]``: a multi-turn terminal chat with any AG-UI agent (the bundled demo by default).

Each turn streams into the terminal: the answer rendered as Markdown as it arrives (finished blocks
printed once, only the unfinished tail redrawn in place, so a long message costs what it is long),
reasoning shown dimmed and folded to one line ("thought for N s") once the answer starts, tool calls
with their arguments and results (a JSON array of objects as a table), subagents labelled, state
changes and activities in one line each, and the turn's token usage at its end. When the agent stops
to ask, each interrupt's ``responseSchema`` becomes a form (checked field by field and as a whole, and
asked again after an answer it refuses; a required yes/no field opens it, and a "no" the schema
accepts on its own skips the rest).

Ctrl-C during a turn cancels the turn: the response is closed and the thread goes back to what was
saved after its last complete run, so the next turn sends a consistent history; pressed again while
that is done, it is the same request. Ctrl-C or Ctrl-D at the prompt leaves. SIGTERM cancels the turn
as Ctrl-C does, then ends the chat (:mod:`agui_client.cli.stopping`). The slash commands are listed in
:data:`COMMANDS`.

Everything the agent sends reaches the terminal through :mod:`agui_client.cli.terminal` (the console
is a :class:`~agui_client.cli.terminal.SafeConsole`, plain output is made visible), and so does a
transcript written by ``/export``.

This module is the chat loop, its slash commands and the ``/export`` transcript; how a turn's events
are drawn is :mod:`agui_client.cli.chatview`'s (:class:`ChatView`, listed here too).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import uuid
from collections.abc import Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.text import Text

from ..client import AgentClient
from ..core.fold import ThreadState
from ..core.interrupts import ResumeBuilder
from ..core.redact import displayed_url
from ..core.result import RunResult
from ..errors import AguiError, ExpiredInterruptAnswered, InvalidResumePayload
from ..stores import SqliteStore, ThreadStore
from ..thread import Thread
from ..wire.types import messages as msg
from ..wire.types.run import Interrupt
from . import forms
from .chatview import ChatView, parts_text, tool_name
from .options import add_connection_options, open_client, parse_headers, recorder_for, stored_thread_ids
from .render import (
    ConsoleAsker,
    Output,
    RichOutput,
    answer_text,
    render_error,
    render_interrupt,
    render_messages,
    render_run_end,
    usage_text,
)
from .stopping import Terminated, held_signals, left_whole, wait_for_input
from .terminal import SafeConsole, ascii_named, json_text, named, safe_text, typed_text, visible

if TYPE_CHECKING:
    from ..testing.recording import RecordingTransport

__all__ = ["COMMANDS", "QUIT", "add_parser", "chat_command", "Chat", "ChatView", "transcript"]

#: The slash commands, as ``/help`` lists them.
COMMANDS: dict[str, str] = {
    "/help": "this list",
    "/new": "start a new thread (the current one stays in --thread-file)",
    "/state": "show the thread's shared state",
    "/messages": "show the thread's messages",
    "/export FILE.md": "write the conversation as a Markdown transcript",
    "/record DIR": "keep each later request and response in DIR (NN.request.json, NN.response.json, NN.sse); "
                   "/record off stops",
    "/quit": "leave (so do /exit, /q, and Ctrl-D and Ctrl-C at the prompt)",
}
#: The spellings of ``/quit`` the chat takes (the others are what other chats' users type out of habit).
QUIT = ("/quit", "/exit", "/q")

_DESCRIPTION = """\
A multi-turn chat in the terminal. Without URL, the bundled demo agent (ScriptedAgent.demo) is
started on 127.0.0.1. Answers are rendered as Markdown as they stream; interrupts are answered in a
form built from their responseSchema. Ctrl-C during a turn cancels the turn; Ctrl-C or Ctrl-D at the
prompt leaves. Type /help in the chat for its commands."""


def add_parser(commands: Any) -> None:
    """Add the ``chat`` subcommand to the ``agui`` parser's subcommands."""
    chat = commands.add_parser("chat", help="a multi-turn chat in the terminal (the bundled demo agent by default)",
                               description=_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    chat.add_argument("url", nargs="?", metavar="URL", help="the agent's endpoint (default: the bundled demo agent)")
    chat.add_argument("--thread-file", metavar="FILE", help="keep the thread in this SQLite file (and go on with it)")
    chat.add_argument("--thread", "--thread-id", dest="thread_id", metavar="ID", type=typed_text,
                      help="the thread id (default: the only thread in --thread-file, else a new one)")
    add_connection_options(chat)
    chat.add_argument("--plain", action="store_true", help="plain, colourless output (default when not a terminal)")


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def chat_command(args: argparse.Namespace, out: Output) -> int:
    """Run ``agui chat`` with parsed ``args``; returns the exit status (0 when the person leaves)."""
    parse_headers(args.header)  # (a bad -H is a usage problem before the demo agent starts)
    with contextlib.ExitStack() as stack:
        url = args.url
        if url is None:
            from ..testing import ScriptedAgent, serve

            url = stack.enter_context(serve(ScriptedAgent.demo())).url
            out.line(f"demo agent (agui_client.testing.ScriptedAgent.demo) listening on {url}", "dim")

        store: ThreadStore | None = None
        if args.thread_file is not None:
            store = stack.enter_context(SqliteStore(args.thread_file))
        # Always through a recorder, stopped unless --record started it: /record starts it later.
        recorder = recorder_for(url)
        client = open_client(stack, url, args, store=store, recorder=recorder)
        thread = client.thread(_thread_id(args, store))
        chat = Chat(client, thread, out, url=url, recorder=recorder, recording=args.record,
                    thread_file=args.thread_file)
        return chat.loop()
    raise AssertionError("unreachable")  # (for mypy: the with block returns)


def _thread_id(args: argparse.Namespace, store: ThreadStore | None) -> str:
    if args.thread_id is not None:
        return str(args.thread_id)
    if store is None:
        return str(uuid.uuid4())
    ids = stored_thread_ids(store, args.thread_file, "--thread")
    return ids[0] if ids else str(uuid.uuid4())


# --------------------------------------------------------------------------------------------------
# The conversation
# --------------------------------------------------------------------------------------------------


class Chat:
    """The chat loop: prompt, slash commands, turns (streamed, interrupts answered), cancellation.

    Args:
        client: the client (its store keeps the threads).
        thread: the thread to go on with.
        out: the view (rich on a terminal, plain otherwise).
        url: the agent's URL, for the banner and the transcript.
        recorder: the transport that ``/record`` starts and stops.
        recording: the folder ``recorder`` is recording into already, if any.
        thread_file: the SQLite file the threads are kept in, if any (for messages only).
        asker: asks the interrupt forms (a :class:`~agui_client.cli.render.ConsoleAsker` by default).
    """

    def __init__(self, client: AgentClient, thread: Thread, out: Output, *, url: str,
                 recorder: RecordingTransport | None = None, recording: str | None = None,
                 thread_file: str | None = None, asker: forms.Asker | None = None) -> None:
        self.client = client
        self.thread = thread
        self.out = out
        self.url = displayed_url(url)  # (for the screen and transcripts: no credentials)
        self.recorder = recorder
        self.recording = recording
        self.thread_file = thread_file
        piped = not _isatty(sys.stdin)
        console = out.console if isinstance(out, RichOutput) else SafeConsole(no_color=True)
        self.asker: forms.Asker = asker if asker is not None else ConsoleAsker(console, piped=piped)
        self._piped = piped
        #: Answers given to interrupts, by the number of messages the thread held then (for /export).
        self.answers: list[tuple[int, str]] = []

    # -- the loop ---------------------------------------------------------------------------------------

    def loop(self) -> int:
        """Chat until the person leaves; returns 0."""
        self._banner()
        while True:
            if self.thread.open_interrupts:
                self.out.line(f"the agent is waiting for {len(self.thread.open_interrupts)} answer(s): press Enter "
                              "to answer, or type a message to abandon the question(s) and send it", "yellow")
            try:
                line = self._prompt()
            except Terminated:
                raise
            except (EOFError, KeyboardInterrupt):
                self.out.line()
                self.out.line("bye", "dim")
                return 0
            text = line.strip()
            if text.startswith("/") and not text.startswith("//"):
                if not self.command(text):
                    return 0
                continue
            if text.startswith("//"):
                text = text[1:]  # (a message that starts with a slash)
            if not text and not self.thread.open_interrupts:
                continue
            try:
                self.turn(text or None)
            except EOFError:
                self.out.line("input ended: nothing more was sent", "dim")
                return 0
            except Terminated:
                raise
            except KeyboardInterrupt:
                # Ctrl-C in the moment after a turn was settled (or a slash command's work): as at the prompt.
                self.out.line()
                self.out.line("bye", "dim")
                return 0

    def _banner(self) -> None:
        thread = self.thread
        kept = f", kept in {self.thread_file}" if self.thread_file else ""
        told = f"; {len(thread.state.messages)} message(s) so far (/messages)" if thread.state.messages else ""
        self.out.line(f"chat with {self.url} - thread {named(thread.id)}{kept}{told}", "dim")
        if self.recording is not None:
            self.out.line(f"recording into {self.recording}", "dim")
        self.out.line("type a message; /help lists the commands; Ctrl-C cancels a turn; Ctrl-D leaves", "dim")

    def _prompt(self) -> str:
        out = self.out
        out.end_line()
        if isinstance(out, RichOutput):
            out.stop_waiting()
            line = out.console.input(Text("you: ", style="bold green"))
            if self._piped:
                # Read from a pipe, nothing echoed it: shown once, where a terminal would have.
                out.console.print(safe_text(line))
            return line
        out.inline("you: ", "bold green")
        wait_for_input(sys.stdin)  # (a Ctrl-C before the read begins is not left until Enter)
        line = sys.stdin.readline()
        if not line:
            raise EOFError
        if self._piped:
            out.inline(line.rstrip("\n"))  # (as above)
            out.end_line()
        else:
            out.ended_by_input()
        return line

    # -- slash commands ---------------------------------------------------------------------------------

    def command(self, text: str) -> bool:
        """Carry out a slash command; ``False`` when it is ``/quit``."""
        name, _, rest = text.partition(" ")
        argument = rest.strip()
        out = self.out
        if name in QUIT:
            out.line("bye", "dim")
            return False
        if name == "/help":
            width = max(len(key) for key in COMMANDS)
            for key, meaning in COMMANDS.items():
                out.line(f"  {key.ljust(width)}  {meaning}")
            out.line("  a message that starts with / is sent with //", "dim")
        elif name == "/new":
            self.thread = self.client.thread()
            self.answers = []
            out.line(f"new thread {named(self.thread.id)}", "bold")
        elif name == "/state":
            out.json(self.thread.state.state)
        elif name == "/messages":
            render_messages(out, self.thread.state)
        elif name == "/export":
            self._export(argument)
        elif name == "/record":
            self._record(argument)
        else:
            out.line(f"unknown command {name}: /help lists them", "yellow")
        return True

    def _export(self, argument: str) -> None:
        if not argument:
            self.out.line("/export needs a file name: /export chat.md", "yellow")
            return
        path = Path(argument).expanduser()
        text = transcript(self.thread.state, url=self.url, thread_id=self.thread.id, answers=self.answers)
        try:
            path.write_text(text, encoding="utf-8")
        except OSError as exc:
            self.out.line(f"cannot write {argument}: {exc.strerror or exc}", "red")
            return
        self.out.line(f"exported {len(self.thread.state.messages)} message(s) to {path}", "bold")

    def _record(self, argument: str) -> None:
        recorder = self.recorder
        if recorder is None:
            self.out.line("recording is not available here", "yellow")
        elif argument in ("", "off", "stop"):
            recorder.stop()
            where, self.recording = self.recording, None
            self.out.line(f"stopped recording into {where}" if where else "not recording (/record DIR starts)", "bold")
        else:
            try:
                recorder.start(argument)
            except OSError as exc:
                self.out.line(f"cannot record into {argument}: {exc.strerror or exc}", "red")
                return
            self.recording = argument
            self.out.line(f"recording each request into {argument} (NN.request.json, NN.response.json, NN.sse)", "bold")

    # -- a turn ---------------------------------------------------------------------------------------

    def turn(self, message: str | None) -> list[RunResult]:
        """Send ``message`` (``None``: answer the open interrupts) and go on until the agent is done.

        Open interrupts are answered first when ``message`` is ``None``, abandoned (and said so)
        when a message is sent. Returns the turn's runs. Ctrl-C cancels the turn (see the module
        docstring); an error is shown, and the thread put back as for a cancellation.
        """
        runs: list[RunResult] = []
        resuming = False
        answered = len(self.answers)
        try:
            builder: ResumeBuilder | None = None
            interrupts = self.thread.open_interrupts
            if interrupts:
                builder = self._answers(interrupts) if message is None else self._abandon_all(interrupts)
            resuming = builder is not None
            result = self._stream(message, builder, runs)
            answered = len(self.answers)  # (given in a run that completed: kept)
            while result.outcome == "interrupt" and (interrupts := self.thread.open_interrupts):
                resuming = False
                builder = self._answers(interrupts)
                resuming = True
                result = self._stream(None, builder, runs)
                answered = len(self.answers)
        except KeyboardInterrupt as exc:
            # Ctrl-C pressed again while the turn is put back is the same request (dropped); SIGTERM
            # (Terminated) ends the chat once the thread is put back.
            with held_signals(drop_interrupt=True):
                self.out.line()
                why = "SIGTERM" if isinstance(exc, Terminated) else "Ctrl-C"
                self.out.line(f"turn cancelled ({why})" + (
                    ": the agent may have acted on your answers; the chat lets go of the thread so that they can be "
                    "given again" if resuming else ""), "yellow")
                del self.answers[answered:]  # (their run did not complete: the transcript keeps none of them)
                self._restore()
                self._usage(runs, "cancelled")
            if isinstance(exc, Terminated):
                raise
            return runs
        except AguiError as exc:
            render_error(self.out, exc)
            del self.answers[answered:]
            self._restore()
            self._usage(runs, "failed")
            return runs
        self._usage(runs, runs[-1].outcome if runs else None)
        return runs

    def _restore(self) -> None:
        """Put the thread back to what its store holds: the thread after its last complete run."""
        before = len(self.thread.state.messages)
        try:
            self.thread.release_claim()  # (a resume cut after its request went out keeps its claim)
            self.thread.reload()
        except AguiError as exc:
            render_error(self.out, exc)
            return
        after = len(self.thread.state.messages)
        dropped = f"; the unfinished turn ({before - after} message(s)) was not kept" if before > after else ""
        self.out.line(f"the thread is as saved after its last complete run{dropped}", "dim")

    def _stream(self, message: str | None, resume: ResumeBuilder | None, runs: list[RunResult]) -> RunResult:
        out = self.out
        view = ChatView(out, self.thread.state)
        out.start_waiting("waiting for the agent...")
        cancelled: KeyboardInterrupt | None = None
        try:
            # (left whole: a second Ctrl-C while the response closes waits until the run is settled)
            with left_whole(self.thread.stream(message, resume=resume)) as events:
                try:
                    for event in events:
                        view.event(event)
                except KeyboardInterrupt as exc:
                    # Ctrl-C while the run streams leaves the stream as a `break` would: the response is
                    # closed and the result is the streaming API's incomplete run (outcome None, a TR-16
                    # warning), not an interruption the library reports on its own (it would log that a
                    # resume keeps its claim; the chat says so in its words and lets go, in turn()).
                    cancelled = exc
            result = events.result
        finally:
            with held_signals():  # (a Ctrl-C between the two would leave the tail's live display drawn)
                out.stop_waiting()
                view.close()
        if cancelled is not None:
            raise cancelled  # (the turn is cancelled: its TR-16 warning is this, said once, in turn())
        runs.append(result)
        render_run_end(out, result, "the chat")
        return result

    def _usage(self, runs: list[RunResult], outcome: str | None) -> None:
        """The turn's end: how it ended, and the tokens its complete runs reported."""
        if not runs:
            if outcome is not None:
                self.out.line(f"({outcome})", "dim")
            return
        usage = usage_text((u for r in runs for u in r.usage), runs=len(runs))
        self.out.line(f"({outcome}; {'usage ' + usage if usage.startswith('not') else usage})", "dim")

    # -- interrupts -----------------------------------------------------------------------------------

    def _abandon_all(self, interrupts: Sequence[Interrupt]) -> ResumeBuilder:
        builder = self.thread.resume_builder()
        for interrupt in interrupts:
            builder.abandon(interrupt.id)
            self.out.line(f"abandoned interrupt {named(interrupt.id)} (a new message was sent instead)", "yellow")
        return builder

    def _answers(self, interrupts: Sequence[Interrupt]) -> ResumeBuilder:
        """Ask for an answer to each of ``interrupts`` (the thread's open ones, read once for the turn:
        each read copies every schema, and the forms only read them; asking whether several were open,
        per answer, copied them all again, 182,400 copies for 300 interrupts)."""
        builder = self.thread.resume_builder()
        expired = set(builder.expired)
        several = len(interrupts) > 1
        for interrupt in interrupts:
            render_interrupt(self.out, interrupt, self.thread.state)
            if interrupt.id in expired:
                self.out.line(f"interrupt {named(interrupt.id)} has expired and cannot be answered: abandoning it",
                              "yellow")
                builder.abandon(interrupt.id)
                continue
            payload = self._ask(interrupt, several)
            if payload is _EXPIRED:
                self.out.line(f"interrupt {named(interrupt.id)} expired while you answered: abandoning it", "yellow")
                builder.abandon(interrupt.id)
                continue
            builder.answer(interrupt.id, payload)
            said = answer_text(payload)
            which = f" to {ascii_named(interrupt.id)}" if several else ""
            self.out.line(f"answer{which}: {said}", "bold")
            self.answers.append((len(self.thread.state.messages), f"answer to {named(interrupt.reason)}: {said}"))
        return builder

    def _ask(self, interrupt: Interrupt, several: bool) -> Any:
        """The person's answer, asked until the schema accepts it (Ctrl-C gives up, with the turn);
        ``several``: whether other interrupts are open too."""
        # (the id is in the panel above; named here only when several questions are open at once)
        which = f" to {ascii_named(interrupt.id)}" if several else ""
        self.out.line(f"Your answer{which} (empty input takes the default shown):", "bold")
        while True:
            payload = forms.ask_payload(interrupt.response_schema, self.asker, gate=True)
            try:
                forms.judge_alone(interrupt, payload, max_schema_steps=self.thread.client.max_schema_steps)
            except ExpiredInterruptAnswered:
                return _EXPIRED
            except InvalidResumePayload as exc:
                for problem in exc.errors.get(interrupt.id, (str(exc),)):
                    self.asker.say(f"not accepted: {problem}")
                if getattr(self.asker, "ended", False):
                    raise EOFError from None  # (piped answers ran out: asking again would ask nobody, forever)
                self.out.line("once more:", "bold")
                continue
            return payload


_EXPIRED: Any = object()



# --------------------------------------------------------------------------------------------------
# /export
# --------------------------------------------------------------------------------------------------


def transcript(state: ThreadState, *, url: str, thread_id: str, answers: Sequence[tuple[int, str]] = (),
               now: datetime | None = None) -> str:
    """The thread as a Markdown transcript: each message under its speaker, tool calls and results,
    reasoning in a folded ``<details>``, the answers given to interrupts, and the shared state.

    ``answers`` are ``(position, text)`` pairs: ``text`` goes after the first ``position`` messages.
    Every string from the agent is made :func:`~agui_client.cli.terminal.visible`, so printing the
    file to a terminal is as safe as the chat itself.
    """
    when = (now or datetime.now(timezone.utc)).strftime("%Y-%m-%d %H:%M:%SZ")
    parts = ["# agui chat transcript", "", f"- agent: {visible(url)}", f"- thread: {visible(named(thread_id))}",
             f"- exported: {when}", ""]
    notes = sorted(answers)
    index = 0
    names = {sub: record.name for sub, record in state.subagents.items()}
    for position, message in enumerate(state.messages):
        while index < len(notes) and notes[index][0] <= position:
            parts += [f"> {visible(notes[index][1])}", ""]
            index += 1
        parts += list(_message_markdown(message, state, names))
    for _, text in notes[index:]:
        parts += [f"> {visible(text)}", ""]
    if not state.messages:
        parts += ["_(no messages)_", ""]
    # (json_text, not json.dumps: ensure_ascii=False would write the C1 controls and bidi characters
    # of the agent's state raw, which JSON only escapes below U+0020)
    parts += ["## State", "", *_fenced(json_text(state.state, indent=2, default=str), "json"), ""]
    return "\n".join(parts)


def _message_markdown(message: msg.Message, state: ThreadState, names: dict[str, str]) -> Iterator[str]:
    match message:
        case msg.UserMessage(content=content):
            yield from ("## You", "", visible(_text(content)), "")
        case msg.SystemMessage(content=content) | msg.DeveloperMessage(content=content):
            yield from (f"## {message.ROLE}", "", visible(_text(content)), "")
        case msg.AssistantMessage(content=content, tool_calls=calls, subagent_run_id=sub):
            yield from (f"## {visible(named(names.get(sub, sub)))} (subagent)" if sub else "## Agent", "")
            if content:
                yield from (visible(content), "")
            for call in calls or ():
                yield f"- tool call `{visible(named(call.function.name))}`"
                yield from ("", *_fenced(visible(call.function.arguments or "{}"), "json"), "")
        case msg.ToolMessage(content=content, tool_call_id=cid, error=error):
            name = tool_name(state, cid)
            yield f"- `{visible(named(name))}` " + ("failed: " + visible(error) if error else "returned:")
            if not error:
                yield from ("", *_fenced(visible(_text(content))), "")
            else:
                yield ""
        case msg.ReasoningMessage(content=content):
            yield from ("<details><summary>reasoning</summary>", "", visible(content), "", "</details>", "")
        case msg.ActivityMessage(activity_type=kind, content=content):
            shown = visible(json.dumps(content, ensure_ascii=False))
            yield from (f"- activity {visible(named(kind))}: `{shown}`", "")
        case _:
            yield from (f"- {visible(type(message).__name__)}", "")


def _text(content: Any) -> str:
    return content if isinstance(content, str) else parts_text(content)


def _fenced(text: str, language: str = "") -> list[str]:
    # A fence longer than any run of backticks inside, so the content cannot close it.
    run = 0
    longest = 0
    for char in text:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    fence = "`" * max(3, longest + 1)
    return [fence + language, text, fence]
