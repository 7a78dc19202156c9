"""The ``agui`` command line: ``demo``, ``chat``, ``run``, ``replay``, ``verify``, ``serve``, ``probe`` and ``explain``.

Exit statuses: 0 done (a run that stopped at an interrupt left open on purpose included), 1 the agent
or the recording failed (``RUN_ERROR``, a protocol error, an unreachable agent, findings), 2 a usage
problem (bad arguments, an unreadable file, an answer the interrupt's schema refuses), 130 Ctrl-C (or
Ctrl-D at a question of ``demo`` or ``run``; ``chat`` and ``serve`` end with 0), 143 SIGTERM (every command:
:mod:`agui_client.cli.stopping`). ``docs/cli.md`` documents every command's options and these statuses.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import shlex
import sys
import uuid
from collections.abc import Sequence
from typing import Any

from .._version import __version__
from ..core.redact import displayed_url
from ..core.result import RunResult
from ..errors import AguiError, ResumeRefused, StoreError
from ..stores import SqliteStore, ThreadStore
from ..thread import Thread
from . import chat
from .converse import AnswerPolicy, Conversation, UsageProblem, near
from .explain import add_explain_parser, explain_command
from .forms import answer_parts, typed_json
from .options import add_connection_options, open_client, parse_headers, stored_thread_ids
from .probe import add_probe_parser, probe_command
from .recordings import THREAD_LINE_KIND, Unreadable, replay_command, verify_command
from .render import (
    ERROR_CHARS,
    ConsoleAsker,
    Output,
    PlainOutput,
    RichOutput,
    bounded,
    last_assistant_text,
    make_output,
    render_error,
    render_summary,
    usage_text,
    with_see,
)
from .stopping import Terminated
from .terminal import SafeConsole, json_text, listed, named, some_lines, typed_text, visible

__all__ = ["build_parser", "run_cli"]

DEMO_MESSAGE = "Please delete the staging environment, we do not use it any more."

_EPILOG = """\
examples:
  agui demo                          talk to the bundled demo agent and answer its approval
  agui demo --yes                    the same, approving with the schema's defaults
  agui chat                          a multi-turn chat with the bundled demo agent (or: agui chat URL)
  agui run http://localhost:8000/agent -m "hi" --thread-file t.db
  agui run http://localhost:8000/agent --thread-file t.db --resume --yes
  agui run URL -m "hi" --record rec/ keep the request and the response of each run in rec/
  agui replay rec/                   fold a recording (a folder, or one .sse/.jsonl file) into its thread
  agui verify capture.jsonl          list every protocol error and warning in a recording
  agui probe http://localhost:8000/agent --prompt "Delete staging" --junit probe.xml
                                     check the agent against the interrupt rules (for its CI)
  agui serve rec/ --port 9000        serve a recording back as an agent (agui serve demo: the demo agent)
  agui explain IR-30                 what a warning or error code means and what to do

exit status: 0 done, 1 the agent or the recording failed, 2 usage or unreadable input, 130 Ctrl-C (or Ctrl-D
at a question), 143 SIGTERM; chat and serve end with 0 on Ctrl-C. Every option and status: docs/cli.md
"""


class _Parser(argparse.ArgumentParser):
    """argparse's parser, its usage, help and error messages written inert and bounded: an error quotes
    the value given (``invalid choice: '…'``), which may have been pasted from what an agent wrote."""

    def _print_message(self, message: str, file: Any = None) -> None:
        if message:
            (file if file is not None else sys.stderr).write(visible(bounded(message, ERROR_CHARS)))

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        # A misspelt command (`agui rn`) or choice: argparse lists every choice; the near one is named
        # too, as a shell's "did you mean" does, so the fix is read rather than worked out.
        try:
            super()._check_value(action, value)
        except argparse.ArgumentError as exc:
            meant = near(value, action.choices or ())
            if not meant:
                raise
            raise argparse.ArgumentError(action, f"{exc.message}; did you mean {meant}?") from None


class _CommandParser(_Parser):
    """The parser of one command (``agui run``): an argument it does not know is refused under its own
    usage, naming the option meant when the one given is a misspelling of it. argparse leaves such an
    argument to the top parser, whose usage (``agui [-h] [--version] COMMAND ...``) shows none of the
    command's options."""

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: argparse.Namespace | None = None) -> tuple[argparse.Namespace, list[str]]:
        parsed, extras = super().parse_known_args(args, namespace)
        if extras:
            options = [name for name in self._option_string_actions if name.startswith("--")]
            meant = [f"{extra} (did you mean {close}?)"
                     if extra.startswith("-") and (close := near(extra.partition("=")[0], options)) else extra
                     for extra in extras]
            self.error(f"unrecognized arguments: {' '.join(meant)}")
        return parsed, extras


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``agui`` command."""
    parser = _Parser(
        prog="agui", description="A command line client for AG-UI 1.0 agents.", epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"agui {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=_CommandParser)

    demo = commands.add_parser("demo", help="a conversation with the bundled scripted agent (an approval flow)",
                               description="Start the bundled ScriptedAgent on 127.0.0.1, ask it to delete an "
                                           "environment, answer its approval interrupt, and show the result.")
    demo.add_argument("--url", help="talk to an already running demo agent instead of starting one")
    demo.add_argument("-m", "--message", default=DEMO_MESSAGE, type=typed_text, help="the first user message")
    _answer_options(demo)
    add_connection_options(demo, headers=False)
    demo.add_argument("--plain", action="store_true", help="plain, colourless output (default when not a terminal)")

    run = commands.add_parser("run", help="talk to any AG-UI endpoint",
                              description="Send a run to an AG-UI endpoint, render it, and answer its interrupts. "
                                          "With --thread-file the thread (open interrupts included) is kept in a "
                                          "SQLite file, so a later `--resume` continues it from another shell.")
    run.add_argument("url", metavar="URL", help="the agent's endpoint")
    run.add_argument("-m", "--message", type=typed_text, help="the user message to send")
    add_connection_options(run)
    run.add_argument("--thread-file", metavar="FILE", help="keep the thread in this SQLite file")
    # (--thread: as agui chat spells it)
    run.add_argument("--thread-id", "--thread", dest="thread_id", metavar="ID", type=typed_text,
                     help="the thread id (default: the only thread in --thread-file, else a new one)")
    run.add_argument("--state", metavar="JSON", type=typed_text,
                     help="the shared state to send (replaces the thread's)")
    run.add_argument("--resume", action="store_true", help="answer the thread's open interrupts and continue")
    run.add_argument("--json", action="store_true",
                     help="print the events as JSON lines, then one line with the thread's final wire form, "
                          f'marked {{"kind": "{THREAD_LINE_KIND}", ...}} (agui replay skips it)')
    _answer_options(run)
    run.add_argument("--plain", action="store_true", help="plain, colourless output (default when not a terminal)")

    replay = commands.add_parser("replay", help="fold a recording and show the thread it leaves",
                                 description="Read a recording folder (--record DIR: every run of the thread, each "
                                             "request's messages and state with its response), or one SSE "
                                             "capture or JSON lines file (FILE, or - for stdin; the `agui run "
                                             "--json` output included), fold it as a live run would, and show the "
                                             "messages, state, outcome and open interrupts. Exit 1 when the "
                                             "recording breaks the protocol.")
    replay.add_argument("file", metavar="DIR|FILE", help="the recording folder or file (- for stdin)")
    replay.add_argument("--json", action="store_true", help="print ThreadState.to_wire() plus the outcome as JSON")
    replay.add_argument("--plain", action="store_true", help="plain, colourless output")

    verify = commands.add_parser("verify", help="list every protocol error and warning in a recording",
                                 description="Run the verifier over a whole recording and list every finding with "
                                             "its event index, the line and byte offset of the event in the file, "
                                             "its type and rule. Exit 0 when there are no errors (warnings "
                                             "allowed), 1 with errors, 2 when the input is unreadable.")
    verify.add_argument("file", metavar="DIR|FILE",
                        help="the recording folder (--record DIR: each run verified in the thread it continued) "
                             "or file (- for stdin)")
    verify.add_argument("--json", action="store_true", help="print the findings as JSON")
    verify.add_argument("--plain", action="store_true", help="plain, colourless output")
    add_probe_parser(commands)

    served = commands.add_parser("serve", help="serve the demo agent or a recording on 127.0.0.1",
                                 description="Run the bundled demo agent (demo) or a recording folder (DIR, as "
                                             "--record writes it: each request answered with the recorded "
                                             "response, in order; a request that does not match the recording "
                                             "gets HTTP 409 naming the difference) on 127.0.0.1, print its URL, "
                                             "and serve until Ctrl-C.")
    served.add_argument("what", nargs="?", default="demo", metavar="demo|DIR",
                        help="the demo agent (default) or a recording folder")
    served.add_argument("--port", type=int, default=0, help="the port (default: any free one)")

    chat.add_parser(commands)
    add_explain_parser(commands)
    return parser


def _answer_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--answer", metavar="[ID=]JSON", action="append", type=typed_text,
                       help="answer interrupt ID with this JSON payload (repeatable); a bare JSON answers every "
                            "interrupt no ID=JSON names; an ID holding '=' is written as a JSON string: "
                            "'\"a=b\"={\"ok\": true}'")
    group.add_argument("-y", "--yes", action="store_true",
                       help="answer with the schema's defaults, approved: true, and true for a required boolean "
                            "(a constant or a one-value enum as it is); a required field of any other kind "
                            "without a default is refused (exit 2, nothing sent): give it with --answer ID=JSON")
    group.add_argument("--abandon", action="store_true", help="abandon the interrupts instead of answering")
    group.add_argument("--ask", action="store_true",
                       help="put the questions even when stdin is not a terminal (answers piped in, one per line)")
    parser.add_argument("--abandon-expired", action="store_true",
                        help="with --yes or --answer, abandon an interrupt that has expired (saying so) instead "
                             "of stopping with exit status 1")


def run_cli(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` and run the command; returns the exit status."""
    parser = build_parser()
    if not (sys.argv[1:] if argv is None else argv):
        # `agui` alone is how a newcomer asks what it does: the help answers that, where argparse's
        # "the following arguments are required: COMMAND" does not (still a usage error: status 2).
        parser.print_help(sys.stderr)
        return 2
    args = parser.parse_args(argv)
    plain = bool(getattr(args, "plain", False)) or not _isatty(sys.stdout)
    as_json = bool(getattr(args, "json", False))
    # In JSON mode stdout carries data only; everything for people goes to stderr.
    out = PlainOutput(sys.stderr) if as_json else make_output(plain=plain)
    try:
        if args.command == "demo":
            return _demo(args, out, plain)
        if args.command == "run":
            return _run(args, out, plain)
        if args.command == "chat":
            return chat.chat_command(args, out)
        if args.command == "replay":
            return replay_command(out, args.file, as_json=as_json)
        if args.command == "probe":
            return probe_command(out, args, headers=parse_headers(args.header or ()))
        if args.command == "serve":
            return _serve(args, out)
        if args.command == "explain":
            return explain_command(out, args.code)
        return verify_command(out, args.file, as_json=as_json)
    except (UsageProblem, Unreadable, StoreError) as exc:
        out.end_line()
        # (it may quote a file or a stored thread: bounded as an error panel is)
        PlainOutput(sys.stderr).line(with_see(f"agui {args.command}: {bounded(some_lines(str(exc)))}",
                                              getattr(exc, "code", None)))
        return 2
    except ResumeRefused as exc:
        render_error(out, exc)
        return 2
    except AguiError as exc:
        render_error(out, exc)
        return 1
    finally:
        out.stop_waiting()
        out.end_line()


# --------------------------------------------------------------------------------------------------
# demo and run
# --------------------------------------------------------------------------------------------------


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _policy(args: argparse.Namespace, *, can_ask: bool, fallback: AnswerPolicy) -> AnswerPolicy:
    if args.answer is not None:
        return _answers_policy(args.answer, abandon_expired=args.abandon_expired)
    if args.yes:
        return AnswerPolicy(mode="yes", abandon_expired=args.abandon_expired)
    if args.abandon:
        return AnswerPolicy(mode="abandon")
    return AnswerPolicy(mode="ask") if can_ask else fallback


def _answers_policy(values: Sequence[str], *, abandon_expired: bool) -> AnswerPolicy:
    """``--answer`` values: ``ID=JSON`` per interrupt, and at most one bare ``JSON`` for the rest.

    A value that is JSON as a whole is a bare answer (``{"a=b": 1}`` included); otherwise it names its
    interrupt as :func:`~agui_client.cli.forms.answer_parts` reads it (``ID=JSON``, or ``"a=b"=JSON``
    for an id holding ``=``).
    """
    answers: dict[str, Any] = {}
    bare: list[Any] = []
    for text in values:
        try:
            bare.append(typed_json(text))
            continue
        except ValueError:
            pass
        parts = answer_parts(text)
        if parts is None or not parts[0].strip():
            raise _not_json("--answer", text)  # (not JSON and not ID=JSON: say why as JSON)
        interrupt_id, payload = parts
        if interrupt_id in answers:
            raise UsageProblem(f"--answer names interrupt {interrupt_id} twice")
        answers[interrupt_id] = _json_argument(f"--answer {interrupt_id}=", payload)
    if len(bare) > 1:
        raise UsageProblem("--answer JSON (without ID=) is given more than once; name the interrupts: --answer ID=JSON")
    return AnswerPolicy(mode="answer", payload=bare[0] if bare else None, has_payload=bool(bare), answers=answers,
                        abandon_expired=abandon_expired)


def _json_argument(option: str, text: str) -> Any:
    try:
        return typed_json(text)
    except ValueError as exc:
        raise UsageProblem(f"{option} is not JSON: {exc}") from None


def _not_json(option: str, text: str) -> UsageProblem:
    """The refusal of ``text``, which is not JSON, saying why."""
    try:
        typed_json(text)
    except ValueError as exc:
        return UsageProblem(f"{option} is not JSON: {exc}")
    return UsageProblem(f"{option} is not JSON")  # pragma: no cover - only asked for text that is not


def _asker(out: Output, plain: bool) -> ConsoleAsker:
    piped = not _isatty(sys.stdin)
    if isinstance(out, RichOutput):
        return ConsoleAsker(out.console, piped=piped)
    # Questions go where the person sees them: stdout on a terminal, stderr when stdout is piped.
    return ConsoleAsker(SafeConsole(stderr=not _isatty(sys.stdout), no_color=plain), piped=piped)


def _demo(args: argparse.Namespace, out: Output, plain: bool) -> int:
    policy = _policy(args, can_ask=args.ask or _isatty(sys.stdin), fallback=AnswerPolicy(
        mode="yes", note="stdin is not a terminal: answering as with --yes (the schema's defaults, approved: true; "
                         "--ask reads answers piped in)"))
    with contextlib.ExitStack() as stack:
        url = args.url
        if url is None:
            from ..testing import ScriptedAgent, serve

            server = stack.enter_context(serve(ScriptedAgent.demo()))
            url = server.url
            out.line(f"demo agent (agui_client.testing.ScriptedAgent.demo) listening on {url}", "dim")
        client = open_client(stack, url, args)
        thread = client.thread()
        conversation = Conversation(thread, out, policy=policy, asker=_asker(out, plain))
        out.line(f"you: {args.message}", "bold green")
        result = conversation.start(args.message)
        _finish(out, conversation, result, thread)
        return _status(out, conversation, result.outcome, args)


def _run(args: argparse.Namespace, out: Output, plain: bool) -> int:
    as_json = bool(args.json)
    state = _json_argument("--state", args.state) if args.state is not None else None
    if args.resume and args.thread_file is None:
        raise UsageProblem("--resume needs --thread-file (the thread whose interrupts to answer)")
    if args.ask and as_json:
        raise UsageProblem("--ask puts questions to a person; --json output is for programs (use --answer)")
    can_ask = not as_json and (args.ask or _isatty(sys.stdin))
    policy = _policy(args, can_ask=can_ask, fallback=AnswerPolicy(
        mode="stop", note="no --answer, --yes or --abandon"
        + (" and stdin is not a terminal (--ask reads answers piped in)" if not as_json else "")
        + ": leaving the interrupt(s) open"))
    with contextlib.ExitStack() as stack:
        store: ThreadStore | None = None
        if args.thread_file is not None:
            store = stack.enter_context(SqliteStore(args.thread_file))
        thread_id, is_new = _thread_id(args, store)
        client = open_client(stack, args.url, args, store=store)
        thread = client.thread(thread_id)
        if args.thread_file is not None:
            out.line(f"thread {named(thread.id)} ({'new, ' if is_new else ''}kept in {args.thread_file})", "dim")
        if thread.open_interrupts and not args.resume:
            waiting = len(thread.open_interrupts)
            raise UsageProblem(f"thread {named(thread.id)} is waiting on {waiting} interrupt(s); "
                               "add --resume (with --answer JSON, --yes or --abandon) to answer them")
        message = args.message
        if message is None and not args.resume and can_ask:
            message = _asker(out, plain).ask_text("you", default=None) or None
        if message is None and not args.resume and args.state is None:
            # (a run without a new message is the protocol's to allow; but `echo hi | agui run URL` sent one
            # without a word said about the line piped in, which is read only with --ask)
            # (--ask is refused beside --json: the advice names only what works there)
            out.line("no message given: the run carries none" + (
                "" if can_ask else " (give one with -m TEXT)" if as_json
                else " (give one with -m TEXT; a message piped in is read with --ask)"), "yellow")
        conversation = Conversation(thread, out, policy=policy, asker=_asker(out, plain) if can_ask else None,
                                    json_lines=sys.stdout if as_json else None)
        result: RunResult | None
        if args.resume:
            result = conversation.resume(args.message)  # None: nothing sent, the interrupts stay open
        else:
            if message is not None and not as_json:
                out.line(f"you: {message}", "bold green")
            result = conversation.start(message, state=state, has_state=args.state is not None)
        outcome = result.outcome if result is not None else None
        if as_json:
            # Marked as what it is (first key), so `agui replay` of this output skips it.
            print(json_text({"kind": THREAD_LINE_KIND, **thread.state.to_wire(), "threadId": thread.id,
                             "outcome": outcome}))
        else:
            _finish(out, conversation, result, thread, thread_file=args.thread_file)
        if conversation.stopped_at_interrupt:
            _how_to_continue(out, args, thread)
        return _status(out, conversation, outcome, args)


def _status(out: Output, conversation: Conversation, outcome: str | None, args: argparse.Namespace) -> int:
    """The exit status, after saying what the command could not do as asked."""
    unused = conversation.unused_answers()
    if unused:
        out.line(f"--answer named interrupt(s) {listed(unused)} that were not open: not used", "yellow")
    if conversation.failure is not None:
        out.line(f"agui {args.command}: {conversation.failure}", "bold red")
        return 1
    return 1 if outcome == "error" else 0


def _serve(args: argparse.Namespace, out: Output) -> int:
    from ..testing import RecordedAgent, ScriptedAgent, serve

    app: Any
    if args.what == "demo":
        app, what = ScriptedAgent.demo(), "the demo agent (agui_client.testing.ScriptedAgent.demo)"
    else:
        try:
            app = RecordedAgent(args.what)
        except ValueError as exc:
            raise Unreadable(str(exc)) from None
        what = f"the recording {args.what} ({len(app)} exchange(s), in order; thread {named(app.thread_id)})"
    if not 0 <= args.port <= 65535:
        raise UsageProblem(f"--port {args.port} is not a port number")
    try:
        server = serve(app, port=args.port)
    except OSError as exc:
        raise UsageProblem(f"cannot listen on 127.0.0.1:{args.port}: {exc.strerror or exc}") from None
    with server:
        out.line(f"serving {what} at {server.url}", "bold")
        out.line("Ctrl-C stops", "dim")
        out.end_line()
        sys.stdout.flush()
        try:
            while server.running:
                server.thread.join(1.0)  # (in steps: Ctrl-C reaches the main thread between them)
        except Terminated:
            raise
        except KeyboardInterrupt:
            out.line("stopped", "dim")
    if isinstance(app, RecordedAgent) and app.mismatches:
        out.line(f"{len(app.mismatches)} request(s) did not match the recording and were refused (409)", "yellow")
    return 0


def _thread_id(args: argparse.Namespace, store: ThreadStore | None) -> tuple[str, bool]:
    if args.thread_id is not None:
        known = store is not None and store.load(args.thread_id) is not None
        return args.thread_id, not known
    if store is None:
        return str(uuid.uuid4()), True
    ids = stored_thread_ids(store, args.thread_file, "--thread-id")
    if len(ids) == 1:
        return ids[0], False
    if args.resume:
        raise UsageProblem(f"{args.thread_file} holds no thread to resume")
    return str(uuid.uuid4()), True


def _finish(out: Output, conversation: Conversation, result: RunResult | None, thread: Thread,
            *, thread_file: str | None = None) -> None:
    state = thread.state
    final = last_assistant_text(state)
    runs = conversation.runs
    rows = [("thread", named(thread.id) + (f" (in {thread_file})" if thread_file else "")),
            ("outcome", str(result.outcome) if result is not None else "nothing sent")]
    if result is not None and result.error is not None:
        rows.append(("error", bounded(some_lines(result.error.message))
                     + (with_see(f" (code {named(result.error.code)})", result.error.code)
                        if result.error.code else "")))
    if final is not None:
        rows.append(("final message", final))
    if state.open_interrupts:
        rows.append(("open interrupts", listed(i.id for i in state.open_interrupts)))
    rows.append(("usage", usage_text((u for r in runs for u in r.usage), runs=len(runs))))
    render_summary(out, "summary", rows, state.state)


def _how_to_continue(out: Output, args: argparse.Namespace, thread: Thread) -> None:
    if args.thread_file is None:
        out.line("the thread lived in this process only; run with --thread-file FILE to answer it later", "yellow")
        return
    out.line("to answer later: " + " ".join(map(_quote, (
        "agui", "run", displayed_url(args.url), "--thread-file", args.thread_file, "--thread-id", thread.id,
        "--resume", "--yes"))) + "   (or --answer [ID=]JSON / --abandon)", "yellow")


#: The longest word the command to copy writes whole (a thread id past it is left for the reader to give).
_SHELL_WORD_CHARS = 1000


def _quote(text: str) -> str:
    """``text`` as a shell word to copy: as ``shlex.quote`` writes it when :func:`named` would show it as it
    is; else in ``$'…'`` with the escapes ``named`` writes, which bash, zsh and ksh read back to the same
    text (the terminal shows nothing hidden, and the command still names the exact thread)."""
    shown = named(text, _SHELL_WORD_CHARS)
    if shown == text:
        return shlex.quote(text)
    if len(shown) > _SHELL_WORD_CHARS:
        return f"<the id, {len(text)} characters: agui run --json shows it>"
    # (a shell reads \xNN as a byte: U+0080-U+00FF are written \u00NN, which it reads as the character)
    shown = _LATIN1_ESCAPE.sub(lambda found: found.group() if found.group(1) == "\\" else "\\u00" + found.group(1)[1:],
                               shown)
    return "$'" + shown.replace("'", "\\'") + "'"


#: A doubled backslash (kept as it is) or the escape of a character U+0080-U+00FF, in what ``named`` wrote.
_LATIN1_ESCAPE = re.compile(r"\\(\\|x[89a-f][0-9a-f])")

