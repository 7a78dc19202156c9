"""The ``agui`` command's reference (docs/cli.md, and the chat and probe pages) matches its parser.

Every option of every command is documented on the command's page, and every option a table of
docs/cli.md gives a command is one the command has: a flag added without a line, or a line left for
a flag taken away, fails here. The exit statuses the page lists are the ones ``agui --help`` names.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from agui_client.cli.app import build_parser

DOCS = Path(__file__).parent.parent / "docs"
#: The commands documented on a page of their own; the others have a section of docs/cli.md.
OWN_PAGES = {"chat": "chat.md", "probe": "probe.md"}
OPTION = re.compile(r"(?<![\w-])(-[A-Za-z]|--[a-z][a-z-]*)(?![\w-])")


def _commands() -> dict[str, argparse.ArgumentParser]:
    (commands,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(commands.choices)


def _options(parser: argparse.ArgumentParser) -> list[tuple[str, ...]]:
    """Each option's spellings (``-m``, ``--message``), but ``--help``."""
    return [tuple(a.option_strings) for a in parser._actions if a.option_strings and "--help" not in a.option_strings]


def _cli_sections() -> dict[str, str]:
    """docs/cli.md's options tables, by command: the first cell of each row of its ``## agui ...`` sections."""
    page = (DOCS / "cli.md").read_text(encoding="utf-8")
    tables: dict[str, str] = {}
    for heading, body in re.findall(r"^## (agui .*?)\n(.*?)(?=^## |\Z)", page, flags=re.S | re.M):
        cells = "\n".join(row.split("|")[1] for row in body.splitlines() if row.startswith("| `"))
        for command in re.findall(r"agui (\w+)", heading):
            tables[command] = cells
    return tables


def test_every_option_of_every_command_is_documented_on_its_page() -> None:
    tables = _cli_sections()
    missing = []
    for command, parser in _commands().items():
        text = (DOCS / OWN_PAGES[command]).read_text(encoding="utf-8") if command in OWN_PAGES else tables[command]
        documented = set(OPTION.findall(text))
        missing += [f"agui {command} {'/'.join(spellings)}" for spellings in _options(parser)
                    if not documented & set(spellings)]
    assert missing == []


def test_every_option_the_cli_page_gives_a_command_is_one_it_has() -> None:
    commands = _commands()
    unknown = []
    for command, cells in _cli_sections().items():
        has = {spelling for spellings in _options(commands[command]) for spelling in spellings}
        unknown += [f"agui {command} {option}" for option in OPTION.findall(cells) if option not in has]
    assert unknown == []


def test_the_help_names_the_exit_statuses_the_page_lists() -> None:
    page = (DOCS / "cli.md").read_text(encoding="utf-8")
    listed = re.findall(r"^\| `(\d+)` \|", page.split("## Exit statuses")[1], flags=re.M)
    said = build_parser().epilog or ""
    assert listed == ["0", "1", "2", "130", "143"]
    assert all(re.search(rf"\b{status} ", said.split("exit status:")[1]) for status in listed)
    assert "Ctrl-D" in said and "docs/cli.md" in said
