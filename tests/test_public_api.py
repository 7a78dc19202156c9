"""The public surface: ``__all__`` is exact, the sync and async shells match, extras stay optional.

These tests pin deliberate API decisions (STYLE §3.4, §3.6, anti-patterns 14 and 17): a name is public
because it is listed, every sync method has an async twin with the same parameters, and the core
package imports without the ``cli``/``testing``/``redis`` extras.
"""

from __future__ import annotations
import __future__

import importlib
import inspect
import subprocess
import sys
import textwrap
import types
from typing import Any

import pytest

import agui_client

#: Names DESIGN.md fixes: docs, examples and outside checks import them from ``agui_client``.
DESIGN_NAMES = [
    "decode_event", "encode", "ThreadState", "replay", "RunResult", "ResumeBuilder", "is_expired",
    "AgentClient", "AsyncAgentClient", "Thread", "AsyncThread", "RunStream", "AsyncRunStream",
    "RunAgentInput", "Tool", "Context", "Interrupt", "ResumeEntry", "UserMessage", "AssistantMessage",
    "ToolCall", "TextMessageContentEvent", "RunFinishedEvent", "RunFinishedInterruptOutcome", "UnknownEvent",
    "AguiError", "TransportError", "HTTPStatusError", "IdleTimeout", "ProtocolError", "DecodeError",
    "SequenceError", "LimitExceeded", "StreamEnded", "RunFailed", "ResumeRefused", "UncoveredInterrupts",
    "ExpiredInterruptAnswered", "UnknownInterrupt", "DuplicateResumeEntry", "InvalidResumePayload",
    "NothingToResume", "ConcurrentResume",
]

#: The sync/async pairs whose public surfaces must be identical.
PAIRS = [
    (agui_client.AgentClient, agui_client.AsyncAgentClient),
    (agui_client.Thread, agui_client.AsyncThread),
    (agui_client.RunStream, agui_client.AsyncRunStream),
    (agui_client.LoopStream, agui_client.AsyncLoopStream),
]

#: Extras that ``import agui_client`` must never need.
EXTRAS = ("rich", "uvicorn", "redis", "fastapi", "starlette")


def test_all_lists_no_name_twice() -> None:
    assert len(agui_client.__all__) == len(set(agui_client.__all__))


def test_every_name_in_all_is_importable_from_the_package() -> None:
    missing = [name for name in agui_client.__all__ if not hasattr(agui_client, name)]

    assert missing == []


def test_the_package_re_exports_every_wire_type_and_error() -> None:
    # The wire types are star-imported module by module (so type checkers see them; CI type-checks
    # tests/typing/user_script.py): a types module added to agui_client.types and not here would be
    # listed in __all__ without being importable from the package.
    import agui_client.errors
    import agui_client.types

    missing = (set(agui_client.types.__all__) | set(agui_client.errors.__all__)) - set(agui_client.__all__)
    assert missing == set()
    unbound = [name for name in agui_client.types.__all__ if getattr(agui_client, name, None)
               is not getattr(agui_client.types, name)]
    assert unbound == []


def test_all_holds_no_private_name() -> None:
    private = [name for name in agui_client.__all__ if name.startswith("_") and name != "__version__"]

    assert private == []


def test_all_is_exactly_the_public_namespace() -> None:
    public = {
        name
        for name, value in vars(agui_client).items()
        if not name.startswith("_")
        # Submodules are attributes of a package whether or not they are exported.
        and not isinstance(value, types.ModuleType)
        # ``from __future__ import annotations`` leaves a compiler flag behind, not an API.
        and not isinstance(value, __future__._Feature)
    }

    assert public == set(agui_client.__all__) - {"__version__"}


def test_the_names_design_fixes_are_exported() -> None:
    missing = [name for name in DESIGN_NAMES if name not in agui_client.__all__]

    assert missing == []


def test_every_exported_exception_is_an_agui_error() -> None:
    strays = [
        name
        for name in agui_client.__all__
        if isinstance(getattr(agui_client, name), type)
        and issubclass(getattr(agui_client, name), BaseException)
        and not issubclass(getattr(agui_client, name), Warning)
        and not issubclass(getattr(agui_client, name), agui_client.AguiError)
    ]

    assert strays == []


@pytest.mark.parametrize(("module", "names"), [
    ("agui_client.testing", ["ScriptedAgent", "serve", "probe", "aprobe", "ProbeReport", "RecordingTransport",
                             "AsyncRecordingTransport", "RecordedAgent", "RecordingMismatch"]),
    ("agui_client.stores", ["MemoryStore", "SqliteStore", "RedisStore", "PostgresStore", "ListingStore",
                            "MAX_LISTING_PAGE"]),
    ("agui_client.ag_ui", ["to_ag_ui", "from_ag_ui"]),
    ("agui_client.terminal", ["inert_text", "inert_name", "InertDeltas", "NAME_CHARS"]),
])
def test_subpackages_export_the_names_design_fixes(module: str, names: list[str]) -> None:
    imported = importlib.import_module(module)

    assert [name for name in names if name not in getattr(imported, "__all__", ())] == []
    assert [name for name in names if not hasattr(imported, name)] == []


def _public_methods(cls: type) -> dict[str, Any]:
    members: dict[str, Any] = {}
    for name in dir(cls):
        if name.startswith("_") and name != "__init__":
            continue
        members[name] = inspect.getattr_static(cls, name)
    return members


def _parameters(member: Any) -> list[tuple[str, Any, Any]] | str:
    """Names, kinds and defaults of a callable's parameters (annotations differ by design: sync vs async)."""
    if isinstance(member, property):
        return "property"
    if isinstance(member, (staticmethod, classmethod)):
        member = member.__func__
    if not callable(member):
        return f"attribute {type(member).__name__}"
    signature = inspect.signature(member)
    return [(p.name, p.kind, p.default) for p in signature.parameters.values()]


@pytest.mark.parametrize(("sync_cls", "async_cls"), PAIRS, ids=lambda cls: cls.__name__)
def test_sync_and_async_shells_have_the_same_public_names(sync_cls: type, async_cls: type) -> None:
    assert sorted(_public_methods(sync_cls)) == sorted(_public_methods(async_cls))


@pytest.mark.parametrize(("sync_cls", "async_cls"), PAIRS, ids=lambda cls: cls.__name__)
def test_sync_and_async_shells_take_the_same_parameters(sync_cls: type, async_cls: type) -> None:
    sync_members = _public_methods(sync_cls)
    async_members = _public_methods(async_cls)

    differing = {
        name: (_parameters(sync_members[name]), _parameters(async_members[name]))
        for name in sync_members.keys() & async_members.keys()
        if _parameters(sync_members[name]) != _parameters(async_members[name])
    }

    assert differing == {}


@pytest.mark.parametrize(("sync_cls", "async_cls", "sync_protocol", "async_protocol"), [
    (agui_client.AgentClient, agui_client.AsyncAgentClient, ("__enter__", "__exit__"), ("__aenter__", "__aexit__")),
    (agui_client.RunStream, agui_client.AsyncRunStream, ("__iter__",), ("__aiter__",)),
    (agui_client.LoopStream, agui_client.AsyncLoopStream, ("__iter__",), ("__aiter__",)),
], ids=["client", "run-stream", "loop-stream"])
def test_each_shell_speaks_its_own_protocol(
    sync_cls: type, async_cls: type, sync_protocol: tuple[str, ...], async_protocol: tuple[str, ...]
) -> None:
    assert all(hasattr(sync_cls, name) for name in sync_protocol)
    assert all(hasattr(async_cls, name) for name in async_protocol)
    assert not any(hasattr(async_cls, name) for name in sync_protocol)


def test_async_methods_that_do_io_are_coroutines() -> None:
    io_methods = {
        agui_client.AsyncAgentClient: ["close", "load_thread", "thread_ids"],
        agui_client.AsyncThread: ["run", "run_until_done", "release_claim", "reload"],
    }

    not_coroutines = [
        f"{cls.__name__}.{name}"
        for cls, names in io_methods.items()
        for name in names
        if not inspect.iscoroutinefunction(getattr(cls, name))
    ]

    assert not_coroutines == []


def _run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60)


def test_importing_the_package_pulls_in_no_extra() -> None:
    # httpx itself imports rich when rich is installed (for its own CLI), so what counts is what
    # agui_client adds on top of its dependencies.
    completed = _run_python(f"""
        import sys
        import httpx, attrs, cattrs, dateutil, jsonpatch, jsonschema
        before = set(sys.modules)
        import agui_client
        added = set(sys.modules) - before
        print(sorted(m for m in added if m.split(".")[0] in {EXTRAS!r}))
    """)

    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "[]"


def test_the_package_imports_and_works_without_the_extras_installed() -> None:
    completed = _run_python(f"""
        import sys
        from importlib.abc import MetaPathFinder

        class NotInstalled(MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in {EXTRAS!r}:
                    raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
                return None

        sys.meta_path.insert(0, NotInstalled())
        import agui_client
        with agui_client.AgentClient("http://127.0.0.1:9/agent") as client:
            thread = client.thread()
        print(sorted(m for m in sys.modules if m.split(".")[0] in {EXTRAS!r}))
    """)

    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "[]"
