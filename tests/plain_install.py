"""What a plain ``pip install agui-client`` (no extras) gives: run with that install's Python.

    python tests/plain_install.py                  # in a venv holding the package without extras (.ci/run)
    python tests/plain_install.py --block-extras   # anywhere: the extras' modules made unimportable first

It runs every README snippet whose install line names no extra (``# pip install agui-client``),
checks that each prints something, that ``agui_client.testing.serve()`` refuses with an
``ImportError`` naming ``agui-client[testing]``, and that the package carries the documentation of its
codes (``codes.json``, which ``agui explain`` and every error's ``doc`` read: the wheel is built from
a list of files, and the source tree has it whether or not the wheel does), each code found by the
package's lookup. Without ``--block-extras`` the package must be the installed one, not this source
tree. Plain Python only: the plain install has no pytest. Exits 1 with what failed.
"""

from __future__ import annotations

import contextlib
import io
import re
import sys
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"
#: The modules the extras bring (cli, testing, redis, fast); the package must work without them.
EXTRA_MODULES = ("uvicorn", "rich", "redis", "orjson", "fastapi", "starlette")
PLAIN = "# pip install agui-client\n"


def snippets() -> list[str]:
    """The README's Python snippets, each as written."""
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def plain_snippets() -> list[str]:
    """The snippets whose install line names no extra."""
    return [s for s in snippets() if s.startswith(PLAIN)]


def codes_problems(*, installed: bool) -> list[str]:
    """What is wrong with the documentation of the codes the package carries: the file missing or empty, a
    code its lookup does not find (by either name of a rule's code, in any case), an error's ``doc`` that
    does not point at its section. ``installed``: the package must not be this source tree."""
    import json

    import agui_client
    from agui_client import SchemaFault
    from agui_client._codes import looked_up

    package = Path(agui_client.__file__).resolve().parent
    # (the source tree's own package folder: a venv made inside the checkout, as .ci/run makes
    # .venv-plain, holds the installed one below the checkout too)
    if installed and package == (README.parent / "agui_client").resolve():
        return [f"agui_client was imported from the source tree ({package}), not from the installed package"]
    carried = package / "codes.json"
    if not carried.is_file():
        return [f"the installed package carries no codes.json (looked in {package})"]
    listed = json.loads(carried.read_text(encoding="utf-8"))["codes"]
    problems = [] if listed else ["codes.json lists no code"]
    for entry in listed:
        for name in entry["code"].split("/"):
            if entry not in [vars_of(found) for found in looked_up(name.lower())]:
                problems.append(f"the lookup does not find {entry['code']} by {name.lower()!r}")
    said = SchemaFault(code="over-budget", reason="checking needs more work than allowed").doc
    if said != "agui explain over-budget (codes.md#over-budget)":
        problems.append(f"a schema fault's doc does not point at its section: {said!r}")
    return problems


def vars_of(entry: object) -> dict[str, str]:
    """A looked-up entry as the file lists it."""
    return {name: getattr(entry, name) for name in ("code", "anchor", "group", "text")}


def main(argv: list[str]) -> int:
    if "--block-extras" in argv:
        for name in EXTRA_MODULES:
            sys.modules[name] = None  # type: ignore[assignment]  # (import raises ImportError)
    failures: list[str] = []
    plain = plain_snippets()
    if not plain:
        failures.append("the README has no snippet that needs no extra")
    for n, snippet in enumerate(plain):
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                exec(compile(snippet, f"{README}:plain-snippet-{n}", "exec"), {"__name__": "__readme__"})
        except Exception as exc:  # noqa: BLE001 - reported, with the snippet, as a failure
            failures.append(f"snippet {n} failed: {type(exc).__name__}: {exc}\n{snippet}")
            continue
        if not out.getvalue().strip():
            failures.append(f"snippet {n} printed nothing\n{snippet}")

    failures += codes_problems(installed="--block-extras" not in argv)

    from agui_client.testing import ScriptedAgent, serve

    try:
        server = serve(ScriptedAgent.demo())
    except ImportError as exc:
        if "agui-client[testing]" not in str(exc):
            failures.append(f"serve() without uvicorn: the ImportError does not name the extra: {exc}")
    else:
        server.stop()
        failures.append("serve() ran without uvicorn (is this a plain install?)")

    for failure in failures:
        print(failure, file=sys.stderr)
    print(f"plain install: {len(plain)} snippet(s) run, serve() and the codes checked, {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
