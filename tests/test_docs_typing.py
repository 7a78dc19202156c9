"""The documentation's Python, copied into a user's script, passes ``mypy --strict``.

A reader copies a snippet into code their CI type-checks. The other doc tests run the snippets; this
one type-checks them, so a snippet that works but indexes an optional value
(``interrupt.response_schema["required"]``), reads an attribute of ``agui_client``'s error through
httpx's class, or asks every event for a ``TYPE`` that an ``UnknownEvent`` has not, fails here rather
than in the reader's CI. A fragment gets the names its page's prose introduces, declared with their
types, as the reader's own code would have them. The snippets' own functions may be unannotated (the
docs keep them short); their bodies are still checked.

docs/codes.md is checked too: a snippet that builds a value no typed program would (a schema that is
no schema) takes it as ``Any``, as a value from the wire is typed.

Left out, with why: docs/opentelemetry.md (the OTLP exporter package is not installed here),
docs/probe.md (it imports the reader's own agent).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from mypy import api

ROOT = Path(__file__).parent.parent

#: Each checked page, and the names its fragments use that the prose introduces (none: complete programs).
PAGES = {
    "README.md": "",
    "docs/start/script.md": "",
    "docs/start/tests.md": "",
    "docs/start/chat-app.md": "",
    "docs/start/web-backend.md": "",
    "docs/concepts/threads-and-runs.md": "",
    "docs/stores.md": "",
    "docs/streaming.md": "from agui_client import Thread\nthread: Thread\n",
    "docs/answers.md": "from agui_client import Interrupt\ninterrupt: Interrupt\n",
    "docs/errors-httpx.md": "url: str\ntoken: str\n",
    "docs/http.md": "from agui_client import AgentClient\nurl: str\n",
    "docs/recordings.md": "url: str\n",
    "docs/legacy-interrupts.md": "url: str\n",
    "docs/ag-ui-interop.md": "",
    "docs/codes.md": "",
}


def test_the_docs_snippets_pass_mypy_strict(tmp_path: Path) -> None:
    files = []
    for page, given in PAGES.items():
        blocks = re.findall(r"```python\n(.*?)```", (ROOT / page).read_text(encoding="utf-8"), flags=re.S)
        assert blocks, page
        for n, block in enumerate(blocks):
            # (the names first, then the snippet: a line number past the preamble is the snippet's own)
            path = tmp_path / f"{re.sub(r'[^a-z]+', '_', page.lower())}{n}.py"
            path.write_text(given + block, encoding="utf-8")
            files.append(str(path))

    # mypy raises the process's recursion limit for good (to 2**14); the suite's later tests must meet
    # the limit they were written for (a payload nested past 1,000 levels parses under the raised one).
    limit = sys.getrecursionlimit()
    try:
        out, err, status = api.run(["--strict", "--allow-untyped-defs", "--allow-incomplete-defs",
                                    "--check-untyped-defs", "--no-error-summary",
                                    "--cache-dir", str(tmp_path / "cache"), *files])
    finally:
        sys.setrecursionlimit(limit)

    assert out == "", out  # (each error: the file named after its page and snippet, the line, what is wrong)
    assert (status, err) == (0, "")

