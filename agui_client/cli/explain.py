"""``agui explain CODE``: a code's section of the documentation, in the terminal.

Every code the CLI shows (an error's rule, a warning's ``[CODE]``) ends its line with ``(see: agui explain
CODE)``; this command prints that code's section of ``docs/codes.md`` (what it means, an example that
triggers it, what to do) from the copy the package carries (:mod:`agui_client._codes`). A code is found
in any case, and by either name a rule's code joins (``lc-01`` and ``AGUI001`` both find
``LC-01/AGUI001``); a misspelt one is refused with the code it is closest to, as a misspelt command is.
Without a code, it lists them all by group.

On a terminal the section is drawn as Markdown (wrapped to the width, colourless under ``NO_COLOR``);
piped, it is written as the Markdown it is, which reads as text. Either way through the CLI's escapers.
"""

from __future__ import annotations

from typing import Any

from .._codes import PAGE, CodeEntry, all_entries, looked_up
from .converse import UsageProblem, near
from .render import Output, RichOutput
from .terminal import named

__all__ = ["add_explain_parser", "explain_command"]


def add_explain_parser(commands: Any) -> None:
    """Add ``agui explain`` to the CLI's subcommands."""
    explain = commands.add_parser("explain", help="show what a warning or error code means and what to do",
                                  description="Print the documentation of a code the CLI or the library shows "
                                              "(LC-01/AGUI001, IR-30, STORE-SCHEMA, not-json ...): what it means, "
                                              "an example that triggers it, and what to do. Any case; either half "
                                              "of a rule's code. Without CODE, list every code.")
    explain.add_argument("code", nargs="?", metavar="CODE", help="the code, as a message showed it")
    explain.add_argument("--plain", action="store_true", help="the Markdown as text, colourless")


def explain_command(out: Output, given: str | None) -> int:
    """Print the section(s) ``given`` names (every code when ``None``); exit status 0, or 2 for no such code."""
    if given is None:
        _list(out)
        return 0
    entries = looked_up(given)
    if not entries:
        meant = _near(given)
        raise UsageProblem(f"no code {named(given)} is documented" + (
            f"; did you mean {meant}?" if meant else " (agui explain lists every code)"))
    for at, entry in enumerate(entries):
        if at:
            out.line()
        _show(out, entry)
    return 0


def _near(given: str) -> str | None:
    """The code (or half of one) ``given`` is most likely a misspelling of, compared in any case."""
    names = {name.casefold(): name for entry in all_entries() for name in (entry.code, *entry.code.split("/"))}
    meant = near(given.strip().casefold(), names)
    return names[meant] if meant is not None else None


def _show(out: Output, entry: CodeEntry) -> None:
    out.line(entry.code, "bold")
    out.line(f"{entry.group} ({PAGE}#{entry.anchor})", "dim")
    out.line()
    if isinstance(out, RichOutput):
        # (imported here, as the chat does: markdown-it's import time would be every command's)
        from .mdview import AnswerMarkdown

        out.console.print(AnswerMarkdown(entry.text, hyperlinks=False))
        return
    for line in entry.text.split("\n"):
        out.line(line)


def _list(out: Output) -> None:
    group = None
    for entry in all_entries():
        if entry.group != group:
            if group is not None:
                out.line()
            group = entry.group
            out.line(group, "bold")
        out.line(f"  {entry.code}")
    out.end_line()
    out.line("agui explain CODE shows one", "dim")

