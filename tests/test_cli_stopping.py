"""Ctrl-C and SIGTERM at the moments that were not safe to stop at, through a real pseudo-terminal.

Each case drives a real ``agui`` process against a scripted agent served from this process, which holds
its answer at a gate, and sends the signal once the program's output shows it reached the moment (no
sleeps). A Ctrl-C inside rich's ``Live.stop()`` cannot be timed from outside: there the process runs a
small script (:data:`INSIDE_LIVE_STOP`, test code) that wraps rich's refresh thread's ``stop`` so that
the process sends itself SIGINT right after it, in the middle of ``Live.stop()``, at the Nth stop.
Also: a second Ctrl-C as httpcore closes the answer the first one cut (patched in the same way), Ctrl-C
twice at once, SIGTERM in ``chat`` and ``run``, Ctrl-C in the middle of the save at a run's end (and
the next ``agui chat`` on the same thread file), and Ctrl-C at ``agui run --resume``'s form.
What every case checks: no traceback, the cursor shown again at the end, nothing of a live display
drawn after it stopped, the documented exit status, and the thread as its store says.
"""

from __future__ import annotations

import contextlib
import io
import re
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pexpect
from clikit import YES_NO_ASKED, agui_process, on_terminal, screen_text

from agui_client.stores import SqliteStore, StoredThread
from agui_client.testing import Finish, Gate, Respond, ScriptedAgent, Start, Wait, text_message
from agui_client.types import TextMessageContentEvent, TextMessageEndEvent, TextMessageStartEvent

#: The cursor hidden (a live display starting) or shown again (one stopping).
CURSOR = re.compile(r"\x1b\[\?25([lh])")

#: A Ctrl-C in the middle of ``Live.stop()``: after the display's refresh thread was told to stop, before
#: the display gave the cursor and the console's hook back. ``argv[1]``: at which stop (1 the spinner's).
INSIDE_LIVE_STOP = '''
import signal
import sys

import rich.live

from agui_client.cli import main

AT = int(sys.argv[1])
stops = 0
stop = rich.live._RefreshThread.stop


def stop_then_ctrl_c(self):
    global stops
    stop(self)
    stops += 1
    if stops == AT:
        signal.raise_signal(signal.SIGINT)


rich.live._RefreshThread.stop = stop_then_ctrl_c
sys.exit(main(sys.argv[2:]))
'''


def _agui(*args: str) -> contextlib.AbstractContextManager[tuple[pexpect.spawn, io.StringIO]]:
    """``agui ARGS`` on a pseudo-terminal, as :func:`clikit.on_terminal` runs a program."""
    return on_terminal(["-m", "agui_client.cli", *args])


def _cursor_shown_at_the_end(raw: str) -> bool:
    marks = CURSOR.findall(raw)
    return not marks or marks[-1] == "h"


def _two_blocks(gate: Gate) -> list[Any]:
    """A run that streams one finished block and the start of a second, then waits at ``gate``."""
    return [Start(), TextMessageStartEvent(message_id="m0"),
            TextMessageContentEvent(message_id="m0", delta="First block.\n\nSecond"),
            TextMessageContentEvent(message_id="m0", delta=" block goes on.\n\n"),
            Wait(gate), TextMessageEndEvent(message_id="m0"), Finish()]


def _stop_at(script: Path, at: int,
             *args: str) -> contextlib.AbstractContextManager[tuple[pexpect.spawn, io.StringIO]]:
    script.write_text(INSIDE_LIVE_STOP, encoding="utf-8")
    return on_terminal([str(script), str(at), *args])


def _turn(child: pexpect.spawn, line: str, answer: str) -> None:
    """Say ``line`` at the chat's prompt: ``answer`` comes, then the prompt again."""
    child.sendline(line)
    child.expect(answer)
    child.expect("you: ")


def _quit(child: pexpect.spawn) -> None:
    """Leave the chat at its prompt, and wait for the process to end."""
    child.sendline("/quit")
    child.expect(pexpect.EOF)


def _check_ended(child: pexpect.spawn, raw: str, status: int, *about: object) -> None:
    """The process ended with ``status``, wrote no traceback, and showed the cursor again at its end."""
    assert child.exitstatus == status, (*about, child.signalstatus, screen_text(raw))
    assert "Traceback" not in raw, about
    assert _cursor_shown_at_the_end(raw), about


def _only_thread(path: str | Path) -> StoredThread | None:
    """The one thread the thread file at ``path`` holds, as its store loads it."""
    with SqliteStore(str(path)) as store:
        (thread_id,) = store.thread_ids()
        return store.load(thread_id)


def test_ctrl_c_inside_a_live_displays_stop_cancels_the_chats_turn_and_leaves_nothing_drawn(
        served: Callable[[Any], Any], gate: Gate, tmp_path: Path) -> None:
    # Stop 1 is the spinner's ("waiting for the agent..."), stop 2 the redrawn tail's (at "Second block").
    for at in (1, 2):
        endpoint = served(ScriptedAgent([_two_blocks(gate), [Start(), *text_message("m1", "Next answer."), Finish()]]))
        thread_file = tmp_path / f"chat{at}.db"
        with _stop_at(tmp_path / "stop.py", at, "chat", endpoint.url, "--thread-file", str(thread_file)) as (
                child, screen):
            child.expect("you: ")
            child.sendline("hello")
            child.expect(r"turn cancelled \(Ctrl-C\)")
            child.expect("the thread is as saved after its last complete run")
            child.expect("you: ")
            cancelled = screen.getvalue()
            _turn(child, "again", "Next answer.")
            _quit(child)

        raw = screen.getvalue()
        _check_ended(child, raw, 0, at)
        after = screen_text(cancelled[cancelled.index("turn cancelled"):])
        # Nothing of the stopped display is drawn again under the lines that follow it.
        assert "waiting for the agent" not in after and "Second" not in after, (at, after)
        assert _cursor_shown_at_the_end(cancelled), at
        # The next turn sent a consistent history, and the file holds it.
        assert [m["content"] for m in endpoint.received[1].body["messages"]] == ["again"]
        stored = _only_thread(thread_file)
        assert stored is not None and stored.claim is None
        assert [m["content"] for m in stored.data["messages"]] == ["again", "Next answer."]


def test_ctrl_c_inside_the_spinners_stop_ends_agui_run_with_130_and_the_cursor_shown(
        served: Callable[[Any], Any], gate: Gate, tmp_path: Path) -> None:
    endpoint = served(ScriptedAgent([_two_blocks(gate)]))
    with _stop_at(tmp_path / "stop.py", 1, "run", endpoint.url, "-m", "hi") as (child, screen):
        child.expect("interrupted")
        child.expect(pexpect.EOF)

    raw = screen.getvalue()
    _check_ended(child, raw, 130)
    assert "waiting for the agent" not in screen_text(raw[raw.index("interrupted"):])
    assert endpoint.agent.wait_until(lambda agent: bool(agent.disconnects))  # (the response was closed)


# --------------------------------------------------------------------------------------------------
# A second Ctrl-C while the first one's close of the response runs
# --------------------------------------------------------------------------------------------------

#: The second Ctrl-C lands as httpcore closes the first response: the first, pressed while the chat waits
#: in a read, makes httpcore close the answer there, and its connection starts letting go of the answer
#: (after the answer was marked closed, so that no later close of it does anything).
SECOND_CTRL_C_IN_THE_CLOSE = '''
import signal
import sys

from httpcore._sync.http11 import HTTP11Connection

from agui_client.cli import main

let_go = HTTP11Connection._response_closed
closes = 0


def a_second_ctrl_c_then_let_go(self):
    global closes
    closes += 1
    if closes == 1:
        signal.raise_signal(signal.SIGINT)
    let_go(self)


HTTP11Connection._response_closed = a_second_ctrl_c_then_let_go
sys.exit(main(sys.argv[1:]))
'''


def test_a_second_ctrl_c_while_the_response_closes_still_lets_the_connection_go(
        served: Callable[[Any], Any], gate: Gate, tmp_path: Path) -> None:
    endpoint = served(ScriptedAgent([_two_blocks(gate), [Start(), *text_message("m1", "Next answer."), Finish()]]))
    script = tmp_path / "second.py"
    script.write_text(SECOND_CTRL_C_IN_THE_CLOSE, encoding="utf-8")
    with on_terminal([str(script), "chat", endpoint.url]) as (child, screen):
        child.expect("you: ")
        child.sendline("hello")
        child.expect("Second")  # (the response now waits at the gate)
        child.sendintr()
        child.expect(r"turn cancelled \(Ctrl-C\)")
        child.expect("you: ")
        # The connection was closed while the chat still runs (cut short, it stayed open until the process ended).
        assert endpoint.agent.wait_until(lambda agent: bool(agent.disconnects))
        _turn(child, "again", "Next answer.")
        _quit(child)

    raw = screen.getvalue()
    _check_ended(child, raw, 0)
    assert screen_text(raw).count("turn cancelled") == 1
    assert [m["content"] for m in endpoint.received[1].body["messages"]] == ["again"]


#: A Ctrl-C in the middle of the library's close of an answer outside the stream's exit (which ``left_whole``
#: holds): entering the stream, the close of an answer the agent refused (HTTP 503) before the error is
#: raised. Wrapped: httpx's ``Response.close`` as the library's ``close_response`` calls it; the process sends
#: itself SIGINT as the close begins, and says so on stderr once the close went on to its end.
CTRL_C_IN_A_CLOSE = '''
import signal
import sys

import httpx

from agui_client.cli import main

close = httpx.Response.close


def ctrl_c_as_it_closes(self):
    if sys._getframe(1).f_code.co_name != "close_response":
        return close(self)
    signal.raise_signal(signal.SIGINT)
    close(self)
    print("the close went on to its end", file=sys.stderr, flush=True)


httpx.Response.close = ctrl_c_as_it_closes
sys.exit(main(sys.argv[1:]))
'''


def test_ctrl_c_as_a_refused_answer_is_closed_entering_the_stream_waits_for_the_close(
        served: Callable[[Any], Any], tmp_path: Path) -> None:
    """The library holds no signal; the CLI holds Ctrl-C and SIGTERM around every close of an answer the
    client makes (``agui_client._closing.closes_guarded``), not only around the stream's exit. Before, a
    Ctrl-C there cut the close (httpx marks an answer closed first, and no later close finished it)."""
    endpoint = served(ScriptedAgent([Respond(status=503, body="busy")]))
    script = tmp_path / "close.py"
    script.write_text(CTRL_C_IN_A_CLOSE, encoding="utf-8")
    with on_terminal([str(script), "run", endpoint.url, "-m", "hi"]) as (child, screen):
        child.expect("interrupted")
        child.expect(pexpect.EOF)

    raw = screen.getvalue()
    _check_ended(child, raw, 130)
    assert "the close went on to its end" in screen_text(raw)


def test_ctrl_c_twice_fast_during_a_streaming_answer_cancels_the_turn_once(
        served: Callable[[Any], Any], gate: Gate, tmp_path: Path) -> None:
    endpoint = served(ScriptedAgent([_two_blocks(gate)]))
    thread_file = tmp_path / "chat.db"
    with _agui("chat", endpoint.url, "--thread-file", str(thread_file)) as (child, screen):
        child.expect("you: ")
        child.sendline("hello")
        child.expect("Second")
        child.sendintr()
        child.sendintr()
        child.expect(r"turn cancelled \(Ctrl-C\)")
        # The second press is the same request (dropped while the turn is put back), or, once it is, leaves
        # as at the prompt: either way, the chat ends with 0 after one cancellation.
        if child.expect(["you: ", "bye"]) == 0:
            child.sendline("/quit")
        child.expect(pexpect.EOF)

    raw = screen.getvalue()
    _check_ended(child, raw, 0)
    assert screen_text(raw).count("turn cancelled") == 1
    assert endpoint.agent.wait_until(lambda agent: bool(agent.disconnects))
    with SqliteStore(str(thread_file)) as store:
        stored = [store.load(i) for i in store.thread_ids()]
    # (the only run never completed: nothing of it is kept, and nothing holds the thread)
    assert all(s is not None and s.claim is None and not s.data.get("messages") for s in stored), stored


# --------------------------------------------------------------------------------------------------
# SIGTERM
# --------------------------------------------------------------------------------------------------


def test_sigterm_mid_turn_ends_the_chat_with_143_the_thread_as_saved(
        served: Callable[[Any], Any], gate: Gate, tmp_path: Path) -> None:
    endpoint = served(ScriptedAgent([[Start(), *text_message("m0", "First answer."), Finish()], _two_blocks(gate)]))
    thread_file = tmp_path / "chat.db"
    with _agui("chat", endpoint.url, "--thread-file", str(thread_file)) as (child, screen):
        child.expect("you: ")
        _turn(child, "hello", "First answer.")
        child.sendline("more")
        child.expect("Second")
        child.kill(signal.SIGTERM)
        child.expect(r"turn cancelled \(SIGTERM\)")
        child.expect("terminated")
        child.expect(pexpect.EOF)

    raw = screen.getvalue()
    _check_ended(child, raw, 143)
    assert "bye" not in screen_text(raw)
    assert endpoint.agent.wait_until(lambda agent: bool(agent.disconnects))
    stored = _only_thread(thread_file)
    assert stored is not None and stored.claim is None
    assert [m["content"] for m in stored.data["messages"]] == ["hello", "First answer."]


def test_sigterm_mid_run_ends_agui_run_with_143(served: Callable[[Any], Any], gate: Gate) -> None:
    endpoint = served(ScriptedAgent([_two_blocks(gate)]))
    with _agui("run", endpoint.url, "-m", "hi") as (child, screen):
        child.expect("Second")
        child.kill(signal.SIGTERM)
        child.expect("terminated")
        child.expect(pexpect.EOF)

    _check_ended(child, screen.getvalue(), 143)
    assert endpoint.agent.wait_until(lambda agent: bool(agent.disconnects))


# --------------------------------------------------------------------------------------------------
# Ctrl-C during the store's save at a run's end
# --------------------------------------------------------------------------------------------------

#: Ctrl-C during the chat's first write to the thread file (the save at its first run's end): ``before``
#: the transaction commits (after its statements ran), or just ``after``.
CTRL_C_IN_THE_SAVE = '''
import signal
import sys

from agui_client.cli import main
from agui_client.stores.sqlite import SqliteStore

WHEN = sys.argv[1]
write = SqliteStore._write
transaction = SqliteStore._transaction
saves = []
cutting = []


def first_save(self, thread_id, operation, **kwargs):
    # (a new thread is claimed, empty, as its first run starts: the save, or append, is the run's end)
    if operation in ("save", "append") and not saves:
        saves.append(operation)
        cutting.append(True)
    try:
        return write(self, thread_id, operation, **kwargs)
    finally:
        cutting.clear()


def cut(self, conn, thread_id, body):
    if not cutting:
        return transaction(self, conn, thread_id, body)
    cutting.clear()
    if WHEN == "after":
        done = transaction(self, conn, thread_id, body)
        signal.raise_signal(signal.SIGINT)
        return done

    def then_ctrl_c(conn):
        done = body(conn)
        signal.raise_signal(signal.SIGINT)
        return done

    return transaction(self, conn, thread_id, then_ctrl_c)


SqliteStore._write = first_save
SqliteStore._transaction = cut
sys.exit(main(sys.argv[2:]))
'''


def test_ctrl_c_during_the_save_at_a_runs_end_keeps_the_run_whole_or_not_at_all(
        served: Callable[[Any], Any], tmp_path: Path) -> None:
    script = tmp_path / "save.py"
    script.write_text(CTRL_C_IN_THE_SAVE, encoding="utf-8")
    for when in ("before", "after"):
        # (the agent plays a step by the runs the request's history holds: the same answer either way)
        endpoint = served(ScriptedAgent([[Start(), *text_message("m0", "An answer."), Finish()],
                                         [Start(), *text_message("m1", "An answer."), Finish()]]))
        thread_file = tmp_path / f"{when}.db"
        chat = ["chat", endpoint.url, "--thread-file", str(thread_file), "--thread", "t-1"]
        with on_terminal([str(script), when, *chat]) as (child, screen):
            child.expect("you: ")
            child.sendline("hello")
            child.expect(r"turn cancelled \(Ctrl-C\)")
            child.expect("you: ")
            _quit(child)
        _check_ended(child, screen.getvalue(), 0, when)
        with SqliteStore(str(thread_file)) as store:
            stored = store.load("t-1")
        kept = [m["content"] for m in (stored.data["messages"] if stored is not None else [])]
        # Whole or not at all; here whole: the run had ended when Ctrl-C came, and it is kept as docs/cli.md says.
        assert kept == ["hello", "An answer."], when
        assert stored is not None and stored.claim is None
        # The next chat on the same thread file goes on from there, and its run is saved.
        with _agui(*chat) as (child, screen):
            child.expect("you: ")
            _turn(child, "again", "An answer.")
            _quit(child)
        assert child.exitstatus == 0, (when, screen_text(screen.getvalue()))
        assert [m["content"] for m in endpoint.received[1].body["messages"]] == [*kept, "again"], when
        with SqliteStore(str(thread_file)) as store:
            stored = store.load("t-1")
        assert stored is not None and stored.claim is None
        assert [m["content"] for m in stored.data["messages"]] == [*kept, "again", "An answer."], when


# --------------------------------------------------------------------------------------------------
# Ctrl-C at the resume's form
# --------------------------------------------------------------------------------------------------


def test_ctrl_c_at_agui_runs_resume_form_sends_nothing_and_a_later_resume_answers(
        served: Callable[[Any], Any], tmp_path: Path) -> None:
    endpoint = served(ScriptedAgent.demo())
    db = str(tmp_path / "t.db")
    first = agui_process("run", endpoint.url, "-m", "Remove the qa environment", "--thread-file", db)
    assert first.returncode == 0 and "leaving the interrupt(s) open" in first.stdout, first.stderr
    with _agui("run", endpoint.url, "--thread-file", db, "--resume") as (child, screen):
        child.expect(YES_NO_ASKED)  # (the form's first question, whole: the read has started)
        child.sendintr()
        child.expect("interrupted")
        child.expect(pexpect.EOF)

    _check_ended(child, screen.getvalue(), 130)
    assert len(endpoint.received) == 1  # (nothing was sent)
    stored = _only_thread(db)
    assert stored is not None and stored.claim is None and len(stored.data["openInterrupts"]) == 1
    later = agui_process("run", endpoint.url, "--thread-file", db, "--resume", "--yes")
    assert later.returncode == 0 and re.search(r"Done: the \w+ environment is deleted", later.stdout), later.stderr
    assert [entry["status"] for entry in endpoint.received[1].body["resume"]] == ["resolved"]


def test_sigterm_stops_agui_serve_with_143() -> None:
    with _agui("serve", "demo") as (child, screen):
        child.expect("Ctrl-C stops")
        child.kill(signal.SIGTERM)
        child.expect("terminated")
        child.expect(pexpect.EOF)

    assert child.exitstatus == 143, (child.signalstatus, screen_text(screen.getvalue()))
    assert "Traceback" not in screen.getvalue()


def test_sigterm_held_behind_a_ctrl_c_still_ends_the_command() -> None:
    """Ctrl-C then SIGTERM, both while a display starts or stops: the command ends as terminated.

    Each held signal is raised again after the block; the first handler that raises ends the delivery.
    Ctrl-C's ``KeyboardInterrupt`` raised first lost the SIGTERM, and ``agui chat`` (where Ctrl-C only
    cancels the turn) went on after a service manager asked it to stop. Run in this process: the signals
    are raised by the test itself, in the main thread, where the CLI's handlers work.
    """
    from agui_client.cli.stopping import Terminated, held_signals, sigterm_as_interrupt

    ended: BaseException | None = None
    with sigterm_as_interrupt():
        try:
            with held_signals():
                signal.raise_signal(signal.SIGINT)
                signal.raise_signal(signal.SIGTERM)
        except KeyboardInterrupt as exc:
            ended = exc
    assert type(ended) is Terminated


#: A prompt's read with a signal whose C handler ran after the prompt was written, while the main thread
#: was about to read (or reading): the main thread blocks SIGUSR1, so the kernel hands it to a helper thread
#: (which unblocks it), where Python's C handler notes it; the main thread's read is not interrupted, as a
#: read begun just after a Ctrl-C was not. The helper sends it when the test, having seen the prompt,
#: sends SIGUSR2 (which it waits for). ``Stop`` from the handler must end the read, with no key pressed.
SIGNAL_BEFORE_THE_READ = '''
import os
import signal
import sys
import threading

from agui_client.cli.terminal import SafeConsole


class Stop(Exception):
    pass


def stop(signum, frame):
    raise Stop


signal.signal(signal.SIGUSR1, stop)
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1, signal.SIGUSR2})


def helper():
    signal.sigwait({signal.SIGUSR2})
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGUSR1})
    os.kill(os.getpid(), signal.SIGUSR1)


threading.Thread(target=helper, daemon=True).start()
try:
    SafeConsole().input("question? ")
except Stop:
    print("stopped before any key")
    sys.exit(7)
print("read a line")
'''


def test_a_signal_noted_before_a_prompts_read_began_ends_the_read() -> None:
    """Python notices a signal in a read only when it interrupts the read's system call; one that came
    between the prompt and the read was handled once Enter was pressed (``agui run --resume``'s question
    sat there with ``^C`` shown). The read now begins only once the terminal has input or the
    interpreter's signal wake-up descriptor says a signal came (``stopping.wait_for_input``)."""
    with on_terminal(["-c", SIGNAL_BEFORE_THE_READ]) as (child, screen):
        child.expect_exact("question? ")
        child.kill(signal.SIGUSR2)
        child.expect_exact("stopped before any key", timeout=20)
        child.expect(pexpect.EOF)
    assert child.exitstatus == 7, screen_text(screen.getvalue())
