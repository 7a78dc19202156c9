"""Every Python snippet of the README runs as written, against the bundled ScriptedAgent."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

README = Path(__file__).parent.parent / "README.md"
SNIPPETS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_the_readme_opens_with_the_two_commands() -> None:
    first = README.read_text().split("```sh\n", 1)[1].split("```", 1)[0].strip().splitlines()
    assert len(first) == 2
    assert "agui demo" in first[0]
    assert "pytest" in first[1]


@pytest.mark.parametrize("snippet", SNIPPETS, ids=[f"snippet-{i}" for i in range(len(SNIPPETS))])
def test_readme_snippet_runs(snippet: str) -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(snippet, str(README), "exec"), {"__name__": "__readme__"})
    assert out.getvalue().strip(), "every snippet prints what it shows"
