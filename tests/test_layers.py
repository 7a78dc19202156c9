"""The layers of ``docs/architecture.md``, checked from the imports themselves.

``core/`` and ``wire/`` are sans-IO and import nothing above them; ``client.py`` and the thread shells
(``thread.py``, ``_async/``, ``_sync/``) do not import each other at run time (the threads name the
clients for type checking only).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "agui_client"
#: What may be imported from each sans-IO layer, besides the standard library and third parties. (``_inert``
#: is the one quoting rule, on the standard library alone: ``errors`` imports it too, and a decoder's
#: messages quote the agent's ids by it.)
BELOW = {"core": ("core", "wire", "errors", "_inert", "_version"),
         "wire": ("wire", "errors", "_inert", "_version")}


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
        elif node.module and node.module.startswith("agui_client"):
            target = node.module.removeprefix("agui_client").lstrip(".")
        else:
            continue
        if node.module is None or node.module == "agui_client":
            # (``from . import jsonio`` imports the module jsonio: the package alone would hide which)
            found.extend(".".join(filter(None, [target, alias.name])) for alias in node.names)
        else:
            found.append(target)
    return found


@pytest.mark.parametrize("layer", sorted(BELOW))
def test_a_sans_io_layer_imports_nothing_above_it(layer: str) -> None:
    offending = {}
    for path in sorted((PACKAGE / layer).rglob("*.py")):
        above = [m for m in _runtime_imports(path) if m.split(".")[0] not in BELOW[layer]]
        if above:
            offending[str(path.relative_to(PACKAGE))] = above
    assert offending == {}


#: The modules of the thread shells: the public ``thread.py``, the async source and the generated sync twin.
THREAD_SHELLS = ["thread.py", "_async/thread.py", "_async/thread_io.py", "_sync/thread.py", "_sync/thread_io.py"]


def test_the_two_shells_do_not_import_each_other_at_run_time() -> None:
    for name in THREAD_SHELLS:
        assert [m for m in _runtime_imports(PACKAGE / name) if m.endswith("client")] == [], name
    # (one way only: each client makes its shell's threads)
    assert "_async.thread" in _runtime_imports(PACKAGE / "_async/client.py")
    assert "_sync.thread" in _runtime_imports(PACKAGE / "_sync/client.py")


def test_the_sync_thread_shell_imports_nothing_of_the_async_one() -> None:
    # The sync shell is generated from the async source, not built on it: it imports its own hand-written
    # hooks (``_sync/thread_io.py``), so an asyncio-only helper cannot reach the sync client by import.
    for path in sorted((PACKAGE / "_sync").glob("*.py")):
        assert [m for m in _runtime_imports(path) if m.startswith("_async")] == [], path.name


#: The run protocol's modules, each importing none after it: the effects are the vocabulary between the
#: protocol and its shells, the standing in the store speaks it, and the conversation stands on both.
RUN_PROTOCOL = ["core/effects.py", "core/standing.py", "core/flow.py"]
#: The JSON text modules, the same way: JSON's Python values, the writing back that jsonio's proofs
#: use, how deep a text nests (judged for the parsers, which it does not know), the parsers and their
#: proofs, then the two readers built on them (stored records, a large object's array slice by slice),
#: neither of which the parsers know.
JSON_TEXT = ["wire/values.py", "wire/writeback.py", "wire/depth.py", "wire/jsonio.py", "wire/records.py",
             "wire/slices.py"]
#: When an interrupt expires is read and judged without the resume rules, which ask it.
RESUME_RULES = ["core/expiry.py", "core/interrupts.py"]
#: The scripted agent's modules: what a script is made of, the endpoint both test agents share (the
#: recorded agent stands on it without the scripted one), then the agent that plays a script.
SCRIPTED_AGENT = ["testing/script.py", "testing/endpoint.py", "testing/agent.py"]
#: The sequence rules: the phase table (data), the id rules that take its step, the verifier built on both.
SEQUENCE_RULES = ["core/phases.py", "core/id_rules.py", "core/verify.py"]
#: The code derived from the wire types: the policy it is derived under, the writers, then the readers
#: (which build their objects as the writers' constructors do).
DERIVED_CODE = ["wire/policy.py", "wire/writers.py", "wire/derive.py"]
#: The clients' own pool: the send's bounds, the shared TLS context and the finish of a close cut short
#: know nothing of the rest; the connections keep the bounds; the wake at a client's close finds the sync
#: connections being opened; the sharded transports stand on them all.
OWN_POOL = ["_deadline.py", "_tls.py", "_closing.py", "_connections.py", "_wakes.py", "_pool.py"]
#: The redaction: how a secret may be written escaped knows nothing of which secrets there are.
REDACTION = ["core/escapes.py", "core/redact.py"]
#: The session names what it reports by the events the agent sent, a naming that knows no session; the
#: fast front-end's routes, which the session is built on, the reading of the deprecated THINKING_*
#: events, which it hands the decoder, the holding of a refused RUN_FINISHED's interrupts and the
#: warnings of a response that is not what its request expects know no session either.
SESSION = ["core/naming.py", "core/front.py", "core/thinking.py", "core/held.py", "core/expectations.py",
           "core/session.py"]
#: The schema checker: patterns and metaschema tables know nothing of a check; the running check charges
#: its steps, the guarded keywords charge it, the dialects are built of those keywords, and ``check``
#: runs a dialect.
SCHEMA_CHECK = ["core/regex.py", "core/metaschema.py", "core/schema_steps.py", "core/schema_keywords.py",
                "core/schema_dialects.py", "core/schema.py"]


@pytest.mark.parametrize("chain", [RUN_PROTOCOL, JSON_TEXT, RESUME_RULES, SCRIPTED_AGENT, SEQUENCE_RULES, DERIVED_CODE,
                                   OWN_POOL, REDACTION, SESSION, SCHEMA_CHECK],
                         ids=["run-protocol", "json-text", "resume-rules", "scripted-agent", "sequence-rules",
                              "derived-code", "own-pool", "redaction", "session", "schema-check"])
def test_a_chain_of_modules_imports_one_way(chain: list[str]) -> None:
    for n, name in enumerate(chain):
        later = [m.replace("/", ".").removesuffix(".py") for m in chain[n + 1:]]
        assert [m for m in _runtime_imports(PACKAGE / name) if m in later] == [], name


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


def test_what_a_module_takes_from_another_is_in_that_modules_all() -> None:
    # The CLI took ``check_url`` and ``own_transport`` from client.py, which listed neither: a private
    # helper of one module was another's dependency. What a module takes from another of the package is
    # that module's API, so its ``__all__`` lists it (submodules aside: they are not names a module defines).
    import importlib

    taken = []
    for path in sorted(PACKAGE.rglob("*.py")):
        here = _module_name(path)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom) or (source := _imported_module(path, node)) in (None, here):
                continue
            listed = getattr(importlib.import_module(f"agui_client.{source}".rstrip(".")), "__all__", ())
            taken += [f"{path.relative_to(PACKAGE)}: {source}.{a.name}" for a in node.names
                      if a.name != "*" and not a.name.startswith("__") and a.name not in listed
                      and not _is_module(f"{source}.{a.name}")]
    assert taken == []


def test_no_test_checks_an_error_or_a_warning_by_a_match_pattern() -> None:
    # STYLE.md: a test asserts on what the error carries (its code, run, field, interrupt ids) or on its
    # str, never with ``pytest.raises(..., match=...)``: a regular expression searched anywhere in the
    # message let a test pass on a word the message held for another reason, and read as a riddle.
    # The same for a warning: ``pytest.warns(..., match=...)`` passed when any one warning matched,
    # whatever else was warned; the test asserts on the recorded warnings' str instead.
    tests = Path(__file__).resolve().parent
    found = []
    for path in sorted(tests.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call) or not any(k.arg == "match" for k in node.keywords):
                continue
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
            if name in ("raises", "warns"):
                found.append(f"{path.relative_to(tests)}:{node.lineno}")
    assert found == []


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _imported_module(path: Path, node: ast.ImportFrom) -> str | None:
    """The package module ``node`` imports from, as a path from the package root, or ``None`` outside it."""
    if node.level:
        here = _module_name(path).split(".") if _module_name(path) else []
        package = here if path.name == "__init__.py" else here[:-1]
        base = package[:len(package) - (node.level - 1)]
        return ".".join([*base, *(node.module.split(".") if node.module else [])])
    if node.module and (node.module == "agui_client" or node.module.startswith("agui_client.")):
        return node.module.removeprefix("agui_client").lstrip(".")
    return None


def _own_private_names(tree: ast.Module) -> set[str]:
    """The ``_`` names a module gives itself: its top-level bindings, what its class bodies define, the
    names in its ``__slots__``, and the attributes its methods set on ``self`` or ``cls``."""
    own: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            own.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            own.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            own.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    own.add(item.name)
                elif isinstance(item, (ast.Assign, ast.AnnAssign)):
                    targets = item.targets if isinstance(item, ast.Assign) else [item.target]
                    own.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
                    if any(isinstance(t, ast.Name) and t.id == "__slots__" for t in targets) and item.value:
                        own.update(c.value for c in ast.walk(item.value)
                                   if isinstance(c, ast.Constant) and isinstance(c.value, str))
        elif (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
              and isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
            own.add(node.attr)
    return own


def _private_names_taken(path: Path, defined_elsewhere: set[str]) -> list[str]:
    """Where the module at ``path`` takes a ``_`` name another package module defines (see the test below)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = _module_name(path)
    own = _own_private_names(tree)
    foreign: dict[str, str] = {}  # (local name -> the package module or module's name it is bound to)
    taken = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (source := _imported_module(path, node)) is not None:
            for alias in node.names:
                if _private(alias.name) and source != here and not _is_module(f"{source}.{alias.name}"):
                    taken.append(f"{node.lineno}: from {source or 'agui_client'} import {alias.name}")
                foreign[alias.asname or alias.name] = f"{source}.{alias.name}".lstrip(".")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("agui_client"):
                    foreign[alias.asname or alias.name.split(".")[0]] = alias.name
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "setattr")
                and len(node.args) > 1 and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str) and _private(node.args[1].value)):
            # (spelled as a string: ``getattr(client, "_unsent_redactor", None)`` reaches as ``.`` does)
            node = ast.Attribute(value=node.args[0], attr=node.args[1].value, lineno=node.lineno)
        if not isinstance(node, ast.Attribute) or not _private(node.attr):
            continue
        owner = node.value
        if isinstance(owner, ast.Name) and owner.id in foreign:
            taken.append(f"{node.lineno}: {foreign[owner.id]}.{node.attr}")
        elif not (isinstance(owner, ast.Name) and owner.id in ("self", "cls")) and node.attr not in own \
                and node.attr in defined_elsewhere:
            taken.append(f"{node.lineno}: {ast.unparse(node)}")
    return taken


def _is_module(dotted: str) -> bool:
    path = PACKAGE.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def test_no_module_takes_a_private_name_of_another() -> None:
    """STYLE.md: a name another module needs is its module's API, so no module of the package takes a
    ``_`` name (dunders aside) that another of its modules defines. Taking one means any of:

    - importing it (``from .base import _check_page``; importing from a private module such as
      ``_pool`` is fine, the names it lists are its API, but not its own ``_`` names);
    - reaching it through a package module or a name imported from one (``schema._pointer``,
      ``ResumeBuilder._check_target``);
    - reaching it through any other object (``session._fail``, ``stream._result``) when the module
      itself defines no ``_`` name of that spelling: an object's private attributes are read only by
      the module whose class gives them (its top-level names, class bodies, ``__slots__`` and what its
      methods set on ``self``/``cls``).

    What a class reaches through ``self``/``cls`` is its own, inherited members included (``Thread``
    uses the hooks of ``Conversation``, the sans-IO half it is built on); private names of the standard
    library and of third parties (``sys._getframe``) are not the package's to rename.
    """
    paths = sorted(PACKAGE.rglob("*.py"))
    owns = {path: _own_private_names(ast.parse(path.read_text(encoding="utf-8"))) for path in paths}
    taken = {}
    for path in paths:
        elsewhere = set().union(*(names for other, names in owns.items() if other != path))
        found = _private_names_taken(path, {name for name in elsewhere if _private(name)})
        if found:
            taken[str(path.relative_to(PACKAGE))] = found
    assert taken == {}


def test_the_optional_orjson_is_imported_in_one_module() -> None:
    # jsonio and values each tried the import and kept their own fallback: whether orjson is there was
    # decided twice, and a test taking the standard library's path had to know both places.
    # (every way of writing it: ``import orjson``, ``from orjson import loads``, ``import_module("orjson")``)
    def imports_orjson(node: ast.AST) -> bool:
        if isinstance(node, ast.Import):
            return any(alias.name.split(".")[0] == "orjson" for alias in node.names)
        if isinstance(node, ast.ImportFrom):
            return node.level == 0 and (node.module or "").split(".")[0] == "orjson"
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            named = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
            return named in ("import_module", "__import__") and str(node.args[0].value).split(".")[0] == "orjson"
        return False

    importing = [str(path.relative_to(PACKAGE)) for path in sorted(PACKAGE.rglob("*.py"))
                 for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))) if imports_orjson(node)]
    assert importing == ["wire/values.py"]
