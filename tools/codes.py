"""Write the package's copy of the code pages: ``python -m tools.codes`` (``--check`` only compares).

``docs/codes.md`` is the one source of what each code means: the site shows it, and
``tests/test_codes.py`` runs the example of each of its sections. The installed package carries no
``docs/`` folder, so ``agui explain CODE`` and an error's ``doc`` read ``agui_client/codes.json``, which
this script makes from the page: each ``## CODE {#anchor}`` section, in the page's order, with the group
it stands under (the ``<h2>`` before it) and its text (the example's ``<!-- trigger -->`` marker left
out). ``tests/test_codes.py`` fails when the checked-in file is not what the script makes now: edit the
page, then run the script.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

__all__ = ["ROOT", "PAGE", "TARGET", "entries", "made", "main"]

ROOT = Path(__file__).resolve().parent.parent
PAGE = "docs/codes.md"
TARGET = "agui_client/codes.json"

SECTION = re.compile(r"^## (?P<code>\S+) \{#(?P<anchor>[a-z0-9-]+)\}$", re.M)
_GROUP = re.compile(r'^<h2 id="[a-z0-9-]+">(?P<title>[^<]+)</h2>$', re.M)
_MARKER = re.compile(r"^<!-- trigger -->\n", re.M)


def entries(page: str) -> list[dict[str, Any]]:
    """The sections of ``page`` (the text of docs/codes.md): code, anchor, group and text of each."""
    heads = list(SECTION.finditer(page))
    found = []
    for at, head in enumerate(heads):
        end = heads[at + 1].start() if at + 1 < len(heads) else len(page)
        body = page[head.end():end]
        next_group = _GROUP.search(body)
        if next_group is not None:
            body = body[:next_group.start()]
        groups = list(_GROUP.finditer(page, 0, head.start()))
        found.append({"code": head["code"], "anchor": head["anchor"],
                      "group": groups[-1]["title"] if groups else "",
                      "text": _MARKER.sub("", body).strip()})
    return found


def made(page: str) -> str:
    """The file the script writes for ``page``: JSON, one section to a line."""
    lines = [json.dumps(entry, ensure_ascii=False) for entry in entries(page)]
    return '{"source": "' + PAGE + '", "codes": [\n' + ",\n".join(lines) + "\n]}\n"


def main(argv: list[str] | None = None) -> int:
    """Write agui_client/codes.json (or, with ``--check``, say whether it differs from what the script makes)."""
    parser = argparse.ArgumentParser(prog="python -m tools.codes", description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when the file is out of date")
    arguments = parser.parse_args(argv)
    text = made((ROOT / PAGE).read_text(encoding="utf-8"))
    path = ROOT / TARGET
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return 0
    if not arguments.check:
        path.write_text(text, encoding="utf-8")
    print(f"{TARGET}: {'out of date' if arguments.check else 'written'}", file=sys.stderr)
    return 1 if arguments.check else 0


if __name__ == "__main__":
    sys.exit(main())
