"""The documentation of every code the package shows, as the installed package carries it.

A code a user meets (an error's ``rule`` or ``code``, a warning's ``[CODE]``) is documented in a section
of ``docs/codes.md``; the installed package has no ``docs/`` folder, so it carries those sections in
``codes.json`` beside this module, made from the page by ``python -m tools.codes`` (a test fails when the
two differ). The page stays the one source: its examples are run by the tests, and the site shows it.

Read on first use only (an error's ``doc``, ``agui explain``): a hundred kilobytes no run needs.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from attrs import frozen

__all__ = ["CodeEntry", "PAGE", "all_entries", "documented", "explain_hint", "looked_up"]

#: The page of the documentation the entries come from (each entry's ``anchor`` is a place in it).
PAGE = "codes.md"


@frozen(kw_only=True)
class CodeEntry:
    """One code's section of the page: its code, its anchor there, the group it stands under and its text
    (Markdown: what the code means, an example that triggers it, what to do)."""

    code: str
    anchor: str
    group: str
    text: str


@functools.cache
def _entries() -> dict[str, CodeEntry]:
    """Every documented code, in the page's order."""
    with Path(__file__).with_name("codes.json").open(encoding="utf-8") as file:
        listed = json.load(file)["codes"]
    return {entry["code"]: CodeEntry(**entry) for entry in listed}


def all_entries() -> list[CodeEntry]:
    """Every documented code's section, in the page's order."""
    return list(_entries().values())


def documented(code: object) -> CodeEntry | None:
    """The section of ``code`` (as the package spells it), or ``None`` when the page has none: no code, or
    one the package does not document (an agent's own ``RUN_ERROR`` code)."""
    return _entries().get(code) if isinstance(code, str) else None


@functools.cache
def _by_name() -> dict[str, list[CodeEntry]]:
    """Each spelling a person may type, in any case, to its sections: the whole code, and each of the
    two names a rule's code joins (``LC-01/AGUI001``: ``LC-01`` and ``AGUI001``; ``TX-02`` names two)."""
    names: dict[str, list[CodeEntry]] = {}
    for entry in _entries().values():
        for name in {entry.code, *entry.code.split("/")}:
            names.setdefault(name.casefold(), []).append(entry)
    return names


def looked_up(given: str) -> list[CodeEntry]:
    """The sections ``given`` names, in any case (``lc-01``, ``AGUI001``, ``store-schema``); none when it
    names no code."""
    return list(_by_name().get(given.strip().casefold(), []))


def explain_hint(code: object) -> str | None:
    """Where ``code`` is documented, as an error's ``doc`` says it (``agui explain IR-30 (codes.md#ir-30)``),
    or ``None`` when it is not."""
    entry = documented(code)
    return None if entry is None else f"agui explain {entry.code} ({PAGE}#{entry.anchor})"
