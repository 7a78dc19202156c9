"""The layers of ``docs/architecture.md``, checked from the imports themselves.

``core/`` and ``wire/`` are sans-IO and import nothing above them; ``client.py`` and ``thread.py``, the two
shells, do not import each other at run time (``thread.py`` names the clients for type checking only).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "agui_client"
#: What may be imported from each sans-IO layer, besides the standard library and third parties.
BELOW = {"core": ("core", "wire", "errors", "_inert", "_version"), "wire": ("wire", "errors", "_version")}


def _runtime_imports(path: Path) -> list[str]:
    """The package modules ``path`` imports at run time (``if TYPE_CHECKING:`` blocks left out), as
    paths from the package root (``core.flow``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(child) for inner in node.body for child in ast.walk(inner))
    here = path.relative_to(PACKAGE).with_suffix("").parts
    found = []
    for node in ast.walk(tree):
        if id(node) in skipped or not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = list(here[:len(here) - node.level])
            target = ".".join([*base, *(node.module.split(".") if node.module else [])])
            found.append(target)
        elif node.module and node.module.startswith("agui_client"):
            found.append(node.module.removeprefix("agui_client").lstrip("."))
    return found


@pytest.mark.parametrize("layer", sorted(BELOW))
def test_a_sans_io_layer_imports_nothing_above_it(layer: str) -> None:
    offending = {}
    for path in sorted((PACKAGE / layer).rglob("*.py")):
        above = [m for m in _runtime_imports(path) if m.split(".")[0] not in BELOW[layer]]
        if above:
            offending[str(path.relative_to(PACKAGE))] = above
    assert offending == {}


def test_the_two_shells_do_not_import_each_other_at_run_time() -> None:
    assert [m for m in _runtime_imports(PACKAGE / "thread.py") if m == "client"] == []
    assert "thread" in _runtime_imports(PACKAGE / "client.py")  # (one way only: the client makes threads)


def test_the_cli_starts_without_the_testing_kits_server_and_agent() -> None:
    # `agui chat` and `agui run` never serve anything unless asked (`--demo`); the kit's package is
    # imported a name at a time, so reading a recording or building the probe's parser does not pull
    # in the scripted agent, its scenarios or the server.
    import subprocess
    import sys

    code = ("import sys, agui_client.cli.app, agui_client.testing as kit; kit.RecordingTransport; "
            "print(sorted(m for m in sys.modules if m.startswith('agui_client.testing.')))")
    loaded = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    for module in ("agent", "scenarios", "server", "recorded"):
        assert f"agui_client.testing.{module}'" not in loaded, loaded
    assert "agui_client.testing.recording'" in loaded, loaded


def test_every_name_of_the_testing_kit_is_found_where_it_lives() -> None:
    import importlib

    import agui_client.testing as kit

    assert sorted(kit.__all__) == sorted(kit._HOMES)
    for name, home in kit._HOMES.items():
        assert getattr(kit, name) is getattr(importlib.import_module(f"agui_client.testing.{home}"), name)
    assert set(kit.__all__) <= set(dir(kit))
    with pytest.raises(AttributeError) as refused:
        kit.Nothing  # noqa: B018
    assert "no attribute 'Nothing'" in str(refused.value)


#: Modules whose names other modules take: each such name must be in the module's ``__all__``.
SHARED = ("client", "_pool")


def test_what_other_modules_take_from_the_client_and_its_pool_is_in_their_all() -> None:
    # The CLI took ``check_url`` and ``own_transport`` from client.py, which listed neither: a private
    # helper of one module was another's dependency. What a module takes from these is their API.
    import importlib

    taken = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        here = path.relative_to(PACKAGE).with_suffix("").parts
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom) or not node.level:
                continue
            target = ".".join([*here[:len(here) - node.level], *(node.module.split(".") if node.module else [])])
            if target in SHARED and here != (target,):
                listed = importlib.import_module(f"agui_client.{target}").__all__
                taken += [f"{'/'.join(here)}: {target}.{a.name}" for a in node.names if a.name not in listed]
    assert taken == []


def test_no_test_checks_an_error_by_a_match_pattern() -> None:
    # STYLE.md: a test asserts on what the error carries (its code, run, field, interrupt ids) or on its
    # str, never with ``pytest.raises(..., match=...)``: a regular expression searched anywhere in the
    # message let a test pass on a word the message held for another reason, and read as a riddle.
    tests = Path(__file__).resolve().parent
    found = []
    for path in sorted(tests.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call) or not any(k.arg == "match" for k in node.keywords):
                continue
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
            if name == "raises":
                found.append(f"{path.relative_to(tests)}:{node.lineno}")
    assert found == []
