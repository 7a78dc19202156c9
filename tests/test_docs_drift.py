"""What the documentation says about the code is what the code is: modules, names and limits.

The docs are what other SDK authors copy, and the code moves under them: modules are split and
renamed, a limit changes, a submodule becomes public. These checks are the cheap ones that a reader
would otherwise be the first to run: every module docs/architecture.md names exists and every module
of the package is named there; every ``agui_client.…`` name a page writes resolves; a name a page's
code imports is on an API page; and the numbers the pages give for the main limits (the client's,
the stores', the probe's, the CLI's) are the constants' (each expected phrase is built from its
constant, so changing the constant fails here until the pages say the new number).
"""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path
from typing import Any

import pytest

import agui_client
from agui_client._answers import ERROR_BODY_LIMIT, ERROR_JSON_LIMIT
from agui_client._client_base import DEFAULT_CONNECT_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_RUN_BYTES, MAX_REDIRECTS
from agui_client._inert import MESSAGE_LINES, NAME_CHARS, QUOTED_CHARS
from agui_client.core import budget, patch, schema
from agui_client.core.legacy import MAX_ASKS
from agui_client.core.plan import MAX_SECONDS, MIN_SECONDS
from agui_client.core.redact import MIN_ANYWHERE
from agui_client.core.retry import BACKOFF_CAP, DEFAULT_MAX_RETRIES, DEFAULT_RETRY_BACKOFF, RETRY_AFTER_CAP
from agui_client.core.session import DEFAULT_MAX_EVENT_BYTES
from agui_client.stores import PostgresStore, SqliteStore
from agui_client.stores.base import MAX_LISTING_PAGE, MAX_THREAD_ID_BYTES, Compaction
from agui_client.telemetry import LINKS_KEPT
from agui_client.testing.probe_checks import KEPT_PER_RUN
from agui_client.testing.probing import DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_RUN_TIMEOUT
from agui_client.wire.jsonio import DEFAULT_MAX_DEPTH
from agui_client.wire.sink import WARNINGS_PER_CODE
from agui_client.wire.values import KEY_CHARS

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "agui_client"
DOCS = ROOT / "docs"
ARCHITECTURE = DOCS / "architecture.md"
#: The pages a reader copies from: the site, the README and the folders' own READMEs.
PAGES = sorted(DOCS.rglob("*.md")) + [ROOT / "README.md", ROOT / "examples" / "README.md",
                                      ROOT / "tools" / "README.md", ROOT / "bench" / "README.md"]


def _group(parts: list[str]) -> set[str]:
    """The modules one first cell names: ``a/b.py, c.py`` is ``a/b.py`` and ``a/c.py``; ``_async/, _sync/x.py``
    is both folders' ``x.py``; a folder alone (``cli/``) is the folder."""
    names: set[str] = set()
    folder, bare = "", []
    for part in parts:
        if part.endswith("/"):
            bare.append(part)
        elif "/" in part:
            folder, file = part.rsplit("/", 1)
            folder += "/"
            names |= {part, *(earlier + file for earlier in bare)}
            bare = []
        else:
            names.add(folder + part)
    return names | set(bare)


def named_modules() -> set[str]:
    """Every module path (relative to agui_client/) docs/architecture.md names: the first column of its
    tree and the first cell of each of its tables' rows."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    tree = text.split("```\nagui_client/\n", 1)[1].split("```", 1)[0]
    names: set[str] = set()
    for line in tree.splitlines():
        first = re.match(r"\s+((?:[\w./]+, )*[\w./]+)", line)  # the path column, up to the first space
        if first:
            names |= _group(first.group(1).split(", "))
    for line in text.splitlines():
        if line.startswith("| `"):
            names |= _group(re.findall(r"`([^`]+)`", line.split("|")[1]))
    return names


def test_every_module_the_architecture_page_names_exists() -> None:
    missing = sorted(name for name in named_modules() if not (PACKAGE / name).exists())

    assert not missing, f"docs/architecture.md names modules that do not exist: {missing}"


def _table_folders() -> set[str]:
    """The folders a table row of docs/architecture.md names whole (``types/``: the public path of the
    wire types), which stand for every module in them."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    return {name for line in text.splitlines() if line.startswith("| `")
            for name in _group(re.findall(r"`([^`]+)`", line.split("|")[1])) if name.endswith("/")}


def test_every_module_of_the_package_is_named_on_the_architecture_page() -> None:
    named = named_modules()
    whole = _table_folders()
    modules = sorted(str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob("*.py"))
    # A subpackage's __init__.py is named with its folder, or with a module of the folder the page names.
    unnamed = [module for module in modules if module not in named
               and not any(module.startswith(folder) for folder in whole)
               and not (module.endswith("/__init__.py") and any(name.startswith(module[: -len("__init__.py")])
                                                               for name in named))]

    assert not unnamed, f"modules docs/architecture.md does not name: {unnamed}"


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            value: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:]:
            if not hasattr(value, part):
                return False
            value = getattr(value, part)
        return True
    return False


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_agui_client_name_a_page_writes_exists(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    # (a link to a page, ``api/agui_client.md``, and the relay's frame type ``agui_client.thread``/
    # ``agui_client.error`` in quotes are not names of the package)
    written = set(re.findall(r"(?<![\w./\"])(agui_client(?:\.[A-Za-z_]\w*)+)(?![\w\"])", text))
    unknown = sorted(name for name in written if not name.endswith(".md") and not _resolves(name))

    assert not unknown, f"{page.relative_to(ROOT)} names what the package does not have: {unknown}"


def _documented_modules() -> set[str]:
    """The modules an API page renders (``::: module``)."""
    return {found for page in (DOCS / "api").glob("*.md")
            for found in re.findall(r"^::: (agui_client(?:\.\w+)*)$", page.read_text(encoding="utf-8"), flags=re.M)}


@pytest.mark.parametrize("page", [page for page in PAGES if page.name != "codes.md"],
                         ids=lambda page: str(page.relative_to(ROOT)))
def test_every_name_a_page_imports_is_on_an_api_page(page: Path) -> None:
    # (docs/codes.md reaches inside the package on purpose, to trigger a code where no public call does)
    documented = _documented_modules()
    imported = re.findall(r"^from (agui_client(?:\.\w+)*) import (?:\(([^)]*)\)|([^\n#]+))",
                          page.read_text(encoding="utf-8"), flags=re.M)
    undocumented = sorted(f"{module}.{name}" for module, *lists in imported
                          for name in (word.split(" as ")[0].strip() for word in "".join(lists).split(","))
                          if name and name not in agui_client.__all__
                          and not (module in documented and name in getattr(importlib.import_module(module),
                                                                            "__all__", ())))

    assert not undocumented, f"{page.relative_to(ROOT)} imports names no API page shows: {undocumented}"


def size(value: float) -> str:
    """A byte count as the pages write it: ``16 MiB``, ``1 GiB``, ``2 KiB``."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if value >= scale and value % scale == 0:
            return f"{value // scale:,.0f} {unit}"
    return f"{value:,.0f} bytes"


def number(value: float) -> str:
    """A count as the pages write it (``20,000``), a whole float without its ``.0`` (``60``)."""
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:g}"


def _default(function: Any, parameter: str) -> Any:
    return inspect.signature(function).parameters[parameter].default


#: (page, phrase): each phrase states a constant; its number is the constant's.
STATED = [
    ("README.md", f"connect timeout {number(DEFAULT_CONNECT_TIMEOUT)} s"),
    ("README.md", f"idle timeout {number(DEFAULT_IDLE_TIMEOUT)} s between bytes"),
    ("README.md", f"{size(DEFAULT_MAX_EVENT_BYTES)} per event"),
    ("README.md", f"{size(DEFAULT_MAX_RUN_BYTES)} by default, counted after"),
    ("README.md", f"{size(DEFAULT_MAX_RUN_BYTES)} of body a run, {size(budget.DEFAULT_MAX_RUN_MEMORY)} of memory"),
    ("README.md", f"JSON nesting {DEFAULT_MAX_DEPTH}"),
    ("README.md", f"error bodies cut\nat {size(ERROR_BODY_LIMIT)} (a JSON one parsed from up to "
                  f"{size(ERROR_JSON_LIMIT)})"),
    ("README.md", f"{number(patch.MAX_PATCH_OPS)} operations a JSON Patch (`max_patch_ops`)"),
    ("README.md", f"{size(patch.DEFAULT_RUN_COPY_ALLOWANCE)} of units a run, "
                  f"{size(patch.DEFAULT_RESPONSE_COPY_ALLOWANCE)} a response"),
    ("README.md", f"same origin only, at most {MAX_REDIRECTS})"),
    ("README.md", f"shorter\nthan {MIN_ANYWHERE} characters"),
    ("docs/http.md", f"`max_run_memory` ({size(budget.DEFAULT_MAX_RUN_MEMORY)}"),
    ("docs/http.md", f"`max_patch_ops` ({number(patch.MAX_PATCH_OPS)}"),
    ("docs/http.md", f"(`idle_timeout=`, {number(DEFAULT_IDLE_TIMEOUT)} s)"),
    ("docs/http.md", f"`max_retries` ({DEFAULT_MAX_RETRIES} by default"),
    ("docs/http.md", f"up to {number(RETRY_AFTER_CAP)} s (`core.retry.RETRY_AFTER_CAP`)"),
    ("docs/http.md", f"`retry_backoff` ({number(DEFAULT_RETRY_BACKOFF)} s\nby default)"),
    ("docs/http.md", f"doubling with each try up to {number(BACKOFF_CAP)} s"),
    ("docs/http.md", f"the {MAX_REDIRECTS + 1}th hop (`MAX_REDIRECTS` is {MAX_REDIRECTS})"),
    ("docs/codes.md", f"a response keeps at most {number(WARNINGS_PER_CODE)} warnings of one code"),
    ("docs/codes.md", f"`max_event_bytes` ({size(DEFAULT_MAX_EVENT_BYTES)} by default)"),
    ("docs/codes.md", f"`max_run_bytes` ({size(DEFAULT_MAX_RUN_BYTES)} by default"),
    ("docs/codes.md", f"`max_run_memory` ({size(budget.DEFAULT_MAX_RUN_MEMORY)} by default)"),
    ("docs/codes.md", f"({number(patch.MAX_PATCH_OPS)} by default, `agui_client.core.patch.MAX_PATCH_OPS`"),
    ("docs/codes.md", f"a run's patches may copy some {size(patch.DEFAULT_RUN_COPY_ALLOWANCE)} in all"),
    ("docs/codes.md", f"deeper than {patch.MAX_DEPTH} levels"),
    ("docs/codes.md", f"nested deeper than {DEFAULT_MAX_DEPTH} levels"),
    ("docs/codes.md", f"{budget.STRUCTURE_COST} bytes for each `[`, `{{`, `,` and `:`"),
    ("docs/codes.md", f"{size(budget.ENTITY_COST)} for each message, tool call, run, subagent and step"),
    ("docs/codes.md", f"{budget.COPY_COST} bytes for each unit of the copy allowance"),
    ("docs/codes.md", f"an event of {size(budget.PARSED_LARGE)} or more is also charged"),
    ("docs/codes.md", f"{budget.PARSE_COST} bytes for each `[`, `{{`, `,` and `:` it holds and "
                      f"{budget.PARSE_BYTE_COST} bytes for each of its bytes"),
    ("docs/codes.md", f"{budget.WIDE} bytes for a four-byte UTF-8 character (an emoji)"),
    ("docs/codes.md", f"{budget.WIDE_BMP} for raw UTF-8 of the BMP"),
    ("docs/codes.md", f"{budget.WIDE_LATIN1} for a `\\u00XX` escape of a Latin-1 character"),
    ("docs/codes.md", f"More than {number(schema.MAX_SCHEMA_VALUES)} JSON values or "
                      f"{number(schema.MAX_SCHEMA_TEXT)} characters"),
    ("docs/codes.md", f"Nested more than {schema.MAX_SCHEMA_DEPTH} levels"),
    ("docs/cli.md", f"(default {DEFAULT_MAX_RUN_BYTES // 2**20}M; past it, [RUN-BYTES]"),
    ("docs/cli.md", f"(default {budget.DEFAULT_MAX_RUN_MEMORY // 2**20}M; past it, [RUN-MEMORY]"),
    ("docs/cli.md", f"(default {patch.MAX_PATCH_OPS}; a longer one is refused whole"),
    ("docs/cli.md", f"(default {number(DEFAULT_IDLE_TIMEOUT)}; past it, `IdleTimeout`)"),
    ("docs/cli.md", f"(default {DEFAULT_MAX_RETRIES}; see [retries]"),
    ("docs/start/web-backend.md", f"`max_run_memory` ({size(budget.DEFAULT_MAX_RUN_MEMORY)})"),
    ("docs/start/web-backend.md", f"`max_run_bytes` ({size(DEFAULT_MAX_RUN_BYTES)})"),
    ("docs/start/web-backend.md", f"`idle_timeout` ({number(DEFAULT_IDLE_TIMEOUT)} s)"),
    ("docs/start/web-backend.md", f"(the default, {size(DEFAULT_MAX_EVENT_BYTES)},"),
    ("docs/start/script.md", f"`ConnectTimeout` (`timeout=`, {number(DEFAULT_CONNECT_TIMEOUT)} s)"),
    ("docs/stores.md", f"`SqliteStore(path, *, timeout={_default(SqliteStore, 'timeout')}, compaction=None)`"),
    ("docs/stores.md", f'`PostgresStore(dsn, *, table="{_default(PostgresStore, "table")}", '
                       f'connect_timeout={_default(PostgresStore, "connect_timeout")}, compaction=None)`'),
    ("docs/stores.md", f"folds once the changes reach {size(Compaction().min_bytes)} and the data's size, or "
                       f"{number(Compaction().max_changes)} changes"),
    ("docs/stores.md", f"to {number(MAX_LISTING_PAGE)} (`MAX_LISTING_PAGE`)"),
    ("docs/stores.md", f"at most {number(MAX_THREAD_ID_BYTES)} bytes of UTF-8"),
    ("docs/opentelemetry.md", f"(the last {number(LINKS_KEPT)})"),
    ("docs/probe.md", f"`run_timeout` ({number(DEFAULT_RUN_TIMEOUT)} s by default"),
    ("docs/probe.md", f"`max_response_bytes` ({size(DEFAULT_MAX_RESPONSE_BYTES)} by\ndefault)"),
    ("docs/probe.md", f"the report keeps the first {KEPT_PER_RUN} protocol\nerrors"),
]


@pytest.mark.parametrize(("page", "phrase"), STATED, ids=[f"{page}:{phrase[:40]}" for page, phrase in STATED])
def test_a_limit_the_docs_state_is_the_constant(page: str, phrase: str) -> None:
    # Line breaks in the page are as in the phrase; a phrase split elsewhere is a change to either.
    text = re.sub(r"[ \t]*\n[ \t]*", "\n", (ROOT / page).read_text(encoding="utf-8"))

    assert phrase in text, f"{page} no longer says {phrase!r}: a limit changed, or its sentence did"


def test_the_chat_page_lists_each_slash_command_the_chat_knows() -> None:
    from agui_client.cli.chat import COMMANDS, QUIT  # (the cli extra: only this check needs rich)

    table = (DOCS / "chat.md").read_text(encoding="utf-8").split("## Commands", 1)[1].split("\n## ", 1)[0]
    rows = set(re.findall(r"^\| `(/[a-z]+)", table, flags=re.M))
    named = set(re.findall(r"`(/[a-z]+)`", table))

    assert rows == {command.split()[0] for command in COMMANDS}
    assert set(QUIT) <= named, "a spelling of /quit the page does not give"


def test_every_attribute_a_client_holds_is_described_in_its_docstring() -> None:
    # (the API page shows a class's properties and methods by name; a plain attribute the pages tell
    # readers to use, ``client.http.cookies``, ``client.telemetry is None``, is only in the docstring)
    with agui_client.AgentClient("http://127.0.0.1:9/") as client:
        held = sorted(name for name in vars(client) if not name.startswith("_"))
    described = set(re.findall(r"^ {8}(\w+):", agui_client.AgentClient.__doc__ or "", flags=re.M))

    assert [name for name in held if name not in described] == []


def test_the_bounds_the_cli_pages_state_are_the_constants() -> None:
    # (the cli extra's modules: only this check needs rich)
    from agui_client.cli import chatview, render

    stated = [
        ("docs/chat.md", f"rendered up to {size(chatview.MARKDOWN_CHARS)} in all"),
        ("docs/chat.md", f"up to {size(chatview.MARKDOWN_WRITTEN)} written to the terminal"),
        ("docs/chat.md", f"and {chatview.BLOCK_CHARS} for each block"),
        ("docs/chat.md", f"the redraws of a run write up to {size(chatview.LIVE_WRITTEN)} to the terminal"),
        ("docs/chat.md", f"block nested {chatview.MARKDOWN_MAX_LEVEL} levels deep or more"),
        ("docs/chat.md", f"drawing that took 0.2 s waits {0.2 * (1 / chatview.REDRAW_SHARE - 1):.1f} s "
                         "before the next"),
        ("docs/chat.md", f"first {chatview.TABLE_ROWS} rows and {chatview.TABLE_COLUMNS} columns"),
        ("docs/chat.md", f"a name longer than {NAME_CHARS} characters is cut"),
        ("docs/chat.md", f"past {QUOTED_CHARS} characters with the digest"),
        ("docs/chat.md", f"cut past {KEY_CHARS} characters"),
        ("docs/chat.md", f"an error message ({MESSAGE_LINES} lines, {number(render.ERROR_CHARS)} characters)"),
        ("docs/chat.md", f"message ({render.QUESTION_LINES} lines, {number(render.QUESTION_CHARS)} characters)"),
        ("docs/chat.md", f"the shared state ({render.JSON_LINES} lines of at most "
                         f"{number(render.JSON_LINE_CHARS)} characters)"),
        ("docs/chat.md", f"echoes ({render.ANSWER_CHARS} characters)"),
        ("docs/cli.md", f"at least {MIN_SECONDS:g} ({MIN_SECONDS * 1000:g} ms,"),
        ("docs/cli.md", f"at most {number(MAX_SECONDS)} (about 31 years)"),
        ("docs/legacy-interrupts.md", f"At most {MAX_ASKS} `on_interrupt` events of a run are kept"),
        ("docs/legacy-interrupts.md", f"when more than {MAX_ASKS} questions were asked"),
    ]
    pages = {page: re.sub(r"[ \t]*\n[ \t]*", " ", (ROOT / page).read_text(encoding="utf-8")) for page, _ in stated}

    assert [(page, phrase) for page, phrase in stated if phrase not in pages[page]] == []
