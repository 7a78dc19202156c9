"""Set-up as a new user meets it: every README snippet names the install it needs, those that need no
extra run without any, ``serve()`` without uvicorn names its extra, the README's streaming snippet is
the one CI type-checks, and the bundled server does not log a client that leaves a stream early."""

from __future__ import annotations

import logging
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agui_client.testing import Finish, ScriptedAgent, Start, text_message

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
SNIPPETS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)
INSTALL = re.compile(r"# pip install (agui-client|'agui-client\[([a-z,]+)\]')\n")


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)


@pytest.mark.parametrize("snippet", SNIPPETS, ids=[f"snippet-{i}" for i in range(len(SNIPPETS))])
def test_every_readme_snippet_opens_with_the_install_it_needs(snippet: str) -> None:
    found = INSTALL.match(snippet)

    assert found is not None, snippet.splitlines()[0]
    extras = set(found.group(2).split(",")) if found.group(2) else set()
    if "agui_client.testing" in snippet:
        assert "testing" in extras
    if "agui_client.stores import RedisStore" in snippet:
        assert "redis" in extras


def test_the_snippets_that_name_no_extra_run_without_any() -> None:
    # The same script CI runs in a venv holding the package without extras; here the extras' modules
    # are made unimportable instead.
    done = subprocess.run([sys.executable, str(ROOT / "tests" / "plain_install.py"), "--block-extras"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)

    assert done.returncode == 0, done.stderr
    assert re.search(r"plain install: [1-9]\d* snippet\(s\) run, serve\(\) and the codes checked, 0 failure",
                     done.stdout)


def test_serve_without_uvicorn_raises_an_import_error_naming_the_extra() -> None:
    done = run_python(
        "import sys\n"
        "sys.modules['uvicorn'] = None\n"
        "from agui_client.testing import ScriptedAgent, serve\n"
        "try:\n"
        "    serve(ScriptedAgent.demo())\n"
        "except ImportError as exc:\n"
        "    print(type(exc).__name__, exc.name, '|', exc)\n")

    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ImportError uvicorn |")
    assert "pip install 'agui-client[testing]'" in done.stdout


def test_the_readme_streaming_snippet_is_the_file_ci_type_checks() -> None:
    # .ci/run runs mypy --strict on tests/typing/readme_streaming.py: it must be the README's snippet.
    [streaming] = [s for s in SNIPPETS if "text_stream" in s]

    assert (ROOT / "tests" / "typing" / "readme_streaming.py").read_text(encoding="utf-8") == streaming
    assert "stream.result" in streaming and "get_final_result()" in streaming


def test_a_client_leaving_a_stream_early_is_not_logged_by_the_bundled_server(
        drive: Any, served: Any, caplog: pytest.LogCaptureFixture) -> None:
    # A long response: once the client is gone every write the server makes fails; uvicorn must learn
    # of it at once (and drop the rest) instead of asyncio logging each failed socket.send().
    endpoint = served(ScriptedAgent([[Start(), *text_message("m1", "word " * 3000), Finish()]] * 3))

    with caplog.at_level(logging.DEBUG), drive.client(endpoint.url) as client:
        for n in range(3):
            with client.thread().stream("hi") as stream:
                next(iter(stream))
            assert endpoint.agent.wait_until(lambda a, n=n: len(a.disconnects) > n, timeout=10)

    noisy = [r for r in caplog.records if r.levelno >= logging.WARNING and r.name.split(".")[0] in
             ("asyncio", "uvicorn")]
    assert [r.getMessage() for r in noisy] == []
    assert not any(r.exc_info for r in caplog.records)
    assert len(endpoint.agent.disconnects) == 3
