"""The suite starts at most one redis-server and one PostgreSQL server per session, and two sessions
at once share no folder.

A session fixture is one per *definition*: a module that binds ``redis_url`` or ``postgres_dsn``
itself (even to the very function ``tests/conftest.py`` defines) gets a server of its own, started
again for its tests and kept until the session ends. That is how one full run came to start three of
each; here the servers are the root conftest's alone, and this reads every test module to keep it so.

Sessions run side by side (a developer's, an editor's, a second checkout's) stay apart as long as the
default temporary folder is pytest's: each session takes a new numbered folder under
``pytest-of-<user>`` and holds a lock file in it, and the clean-up of old folders passes over locked
ones. A fixed ``--basetemp`` in the project's options would make every session empty the same folder
at its start, under the feet of any other still running.
"""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
SERVER_FIXTURES = {"redis_url", "postgres_dsn"}
SERVER_STARTS = {"redis_server", "postgres_server"}


def _module_level_names(tree: ast.Module) -> set[str]:
    """Names a module binds at its top level (functions, classes, assignments, imports)."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(name.id for target in targets for name in ast.walk(target) if isinstance(name, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return names


def _called(tree: ast.Module) -> set[str]:
    """The plain names a module calls or enters anywhere."""
    return {node.func.id for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}


# Parsed once for the three tests that read them: the test tree is large (about a second to parse).
@functools.cache
def _sources() -> dict[str, ast.Module]:
    """Every test module's syntax tree, by its path under ``tests/`` (the interop group aside)."""
    return {path.relative_to(TESTS).as_posix(): ast.parse(path.read_text(encoding="utf-8"))
            for path in sorted(TESTS.rglob("*.py")) if "interop" not in path.parts}


def test_only_the_root_conftest_binds_the_server_fixtures() -> None:
    sources = _sources()
    binders = {name: sorted(SERVER_FIXTURES & _module_level_names(tree)) for name, tree in sources.items()}
    assert {name: found for name, found in binders.items() if found} == {"conftest.py": sorted(SERVER_FIXTURES)}


def test_the_root_conftest_binds_them_for_the_session() -> None:
    tree = _sources()["conftest.py"]
    scopes = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in SERVER_FIXTURES:
            (decorator,) = node.decorator_list
            assert isinstance(decorator, ast.Call)
            scopes[node.name] = {keyword.arg: ast.literal_eval(keyword.value) for keyword in decorator.keywords}
    assert scopes == {"redis_url": {"scope": "session"}, "postgres_dsn": {"scope": "session"}}


def test_only_the_root_conftest_starts_a_server() -> None:
    starters = {name: sorted(SERVER_STARTS & _called(tree)) for name, tree in _sources().items()}
    assert {name: found for name, found in starters.items() if found} == {"conftest.py": sorted(SERVER_STARTS)}


def test_the_projects_pytest_options_leave_each_session_its_own_temporary_folder(
        pytestconfig: pytest.Config) -> None:
    # (the project's own options only: a --basetemp given on the command line is that run's choice)
    assert not [word for word in pytestconfig.getini("addopts") if word.startswith("--basetemp")]
    # "none" keeps no folder, and then pytest locks none: another session's clean-up may remove it.
    assert pytestconfig.getini("tmp_path_retention_policy") != "none"
    assert int(pytestconfig.getini("tmp_path_retention_count")) > 0


def test_the_root_conftest_loads_without_the_store_extras() -> None:
    # The interop venvs install `.[testing]` only, and their pytest loads tests/conftest.py (and with it
    # serverkit): a store client imported at module level there stopped the interop group at collection.
    script = ("import sys\n"
              "for name in ('redis', 'psycopg', 'orjson'):\n"
              "    sys.modules[name] = None\n"
              f"sys.path.insert(0, {str(TESTS)!r})\n"
              "import conftest, serverkit\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=TESTS.parent, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
