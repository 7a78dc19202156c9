"""The ``agui`` command: ``agui demo | chat | run URL | replay DIR|FILE | verify DIR|FILE | probe URL | serve |
explain CODE``.

The CLI needs the ``cli`` extra (rich, and uvicorn for the demo agent). The core package never
imports this module's dependencies: ``main()`` checks for rich first and prints an install hint,
exiting 2, when it is missing.
"""

from __future__ import annotations

import logging
import sys
import traceback
import warnings
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["main"]

# The environment's proxy URLs, as httpx reads them (their userinfo is a credential).
_PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")

INSTALL_HINT = "The agui command needs the CLI extra: pip install 'agui-client[cli]'"


def main(argv: Sequence[str] | None = None) -> int:
    """The ``agui`` entry point; returns the exit status (0 ok, 1 failed, 2 usage, 130 Ctrl-C, 143 SIGTERM)."""
    try:
        import rich  # noqa: F401 - only checking that the extra is installed
    except ImportError:
        print(INSTALL_HINT, file=sys.stderr)
        return 2
    from .._closing import closes_guarded
    from .app import run_cli
    from .render import bounded
    from .stopping import TERMINATED_STATUS, Terminated, held_signals, sigterm_as_interrupt
    from .terminal import InertLogHandler, read_typed_text, some_lines, visible

    read_typed_text()
    for stream in (sys.stdout, sys.stderr):
        # A terminal that cannot show a character (PYTHONIOENCODING=ascii, an old console) gets a "?"
        # for it, not a UnicodeEncodeError from the middle of a conversation.
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="replace")
    # The library's warnings (the agui_client logger) go to stderr as Python's last-resort handler
    # would write them, made inert: a record may quote what the agent sent. So do uvicorn's, which
    # `agui serve` and `agui demo` run: the traceback of a fault in the app may quote a request's path or
    # body, which anyone who can reach the port chooses.
    log_handler = InertLogHandler()
    loggers = [logging.getLogger(name) for name in ("agui_client", "uvicorn")]
    for logger in loggers:
        logger.addHandler(log_handler)
    try:
        # SIGTERM stops the command as Ctrl-C does, then ends it (agui_client.cli.stopping says why); neither
        # cuts the client's close of an answer, wherever it comes
        with sigterm_as_interrupt(), closes_guarded(held_signals), warnings.catch_warnings():
            warnings.showwarning = _shown_warning(warnings.showwarning)
            return run_cli(argv)
    except Terminated:
        print("\nterminated", file=sys.stderr)
        return TERMINATED_STATUS
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
    except EOFError:
        # Ctrl-D (or the end of piped input) at a prompt: the conversation stops where it is; open
        # interrupts stay open (a thread file keeps them for `agui run --resume`).
        print("\ninput ended: nothing more was sent", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`agui replay x | head`); nothing more to say, and nobody to say it to.
        sys.stderr.close()
        return 1
    except Exception:
        # A fault nobody foresaw: its message may quote what the agent sent, so the traceback goes
        # out as inert as everything else the CLI prints (Python's own would write it raw).
        # Bounded too: the message (its last line) may quote a megabyte.
        # The credentials the command line gave (-H values, a URL's userinfo and secret query values)
        # are replaced first: the fault may quote a request, and a traceback is what people paste.
        redact = _argv_redactor(sys.argv[1:] if argv is None else argv)
        sys.stderr.write(visible(bounded(some_lines(redact(traceback.format_exc()), 200), 20_000)) + "\n")
        return 1
    finally:
        for logger in loggers:
            logger.removeHandler(log_handler)


def _shown_warning(python_s: Callable[..., None]) -> Callable[..., None]:
    """``warnings.showwarning`` for the command: the package's own warnings (a stored thread's repair, a
    record's unknown field) as one line for the person at the terminal, ``warning: [CODE] ... (see: agui
    explain CODE)``, not Python's ``FILE:LINE: AguiWarning: ...``, whose place is inside the command's
    code; every other warning as Python shows it."""
    from ..errors import AguiWarning
    from .render import bounded, with_see
    from .terminal import one_line

    def shown(message: Warning | str, category: type[Warning], filename: str, lineno: int,
              file: Any = None, line: str | None = None) -> None:
        if not (isinstance(message, AguiWarning) and issubclass(category, AguiWarning)):
            python_s(message, category, filename, lineno, file, line)
            return
        text = with_see(f"warning: {bounded(one_line(str(message), 1000))}", message.code)
        print(text, file=file if file is not None else sys.stderr)

    return shown


def _argv_redactor(argv: Sequence[str]) -> Callable[[str], str]:
    """The redactor of the credentials a command line gives: each ``-H``/``--header`` value (named as the
    client names sensitive headers) and each URL's userinfo and secret query values, the proxy URLs of
    the environment (which the CLI sends through) among them."""
    import os

    from ..core.redact import Redactor

    headers: list[tuple[str, str]] = []
    urls = [os.environ[name] for name in _PROXY_VARIABLES if os.environ.get(name)]
    args = list(argv)
    for at, arg in enumerate(args):
        # (argparse takes any start of ``--header`` that names no other option for it: ``--head``)
        option, equals, given = arg.partition("=")
        long = len(option) > 3 and "--header".startswith(option)
        if (arg == "-H" or (long and not equals)) and at + 1 < len(args):
            value = args[at + 1]
        elif long and equals:
            value = given
        elif arg.startswith("-H") and len(arg) > 2:
            value = arg[2:]
        else:
            if "://" in arg:
                urls.append(arg)
            continue
        name, _sep, rest = value.partition(":")
        headers.append((name, rest))
    return Redactor.of(headers, urls).text
