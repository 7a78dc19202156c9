"""A code a user meets leads to its page: ``agui explain CODE``, the CLI's ``(see: agui explain CODE)``
hints, and the library's ``doc`` on the errors and warnings that carry a code.

The package carries docs/codes.md's sections (``agui_client/codes.json``, made by ``python -m
tools.codes``; ``tests/test_codes.py`` checks the two agree). The CLI runs in this process where the
point is what it prints (``clikit.agui_here``: piped, ``NO_COLOR``), and on a real pseudo-terminal where
the terminal is the point (drawn Markdown, the width, ``NO_COLOR`` with a terminal).
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path
from typing import Any

import pexpect
import pytest
from clikit import AGUI, ENV, agui_here, agui_process, screen_text
from rich.cells import cell_len

from agui_client import AguiWarning, ProtocolError, RunFailed, StoreError, ThreadState, replay
from agui_client.stores import SqliteStore
from agui_client.testing import Finish, ScriptedAgent, Start
from agui_client.types import RunErrorEvent, RunFinishedEvent, TextMessageContentEvent, UserMessage
from agui_client.wire.sink import warn

__all__: list[str] = []

ROOT = Path(__file__).resolve().parent.parent
#: A colour in an SGR escape sequence (a foreground or background, of 8, 256 or 16 million colours).
COLOUR = re.compile(r"\x1b\[(?:[0-9]+;)*(?:3[0-8]|4[0-8]|9[0-7]|10[0-7])(?:;[0-9]+)*m")
SECTION = re.compile(r"^## (?P<code>\S+) \{#(?P<anchor>[a-z0-9-]+)\}$", re.M)


def _section(code: str) -> str:
    """The text of ``code``'s section of docs/codes.md, as the page has it (its trigger marker left out)."""
    page = (ROOT / "docs" / "codes.md").read_text(encoding="utf-8")
    heads = list(SECTION.finditer(page))
    [at] = [n for n, head in enumerate(heads) if head["code"] == code]
    body = page[heads[at].end():heads[at + 1].start() if at + 1 < len(heads) else len(page)]
    return body.split("\n<h2 ")[0].replace("<!-- trigger -->\n", "").strip()


# --------------------------------------------------------------------------------------------------
# agui explain
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("given", ["LC-01/AGUI001", "lc-01/agui001", "lc-01", "AGUI001", " Lc-01 "])
def test_explain_prints_the_codes_section_in_any_case_and_by_either_half(given: str) -> None:
    shown = agui_here("explain", given)

    assert shown.returncode == 0, shown.stderr
    head, _, text = shown.stdout.partition("\n\n")
    assert head == "LC-01/AGUI001\nRun life cycle (codes.md#lc-01-agui001)"
    assert text.rstrip("\n") == _section("LC-01/AGUI001")


def test_explain_of_a_half_two_codes_share_prints_both() -> None:
    shown = agui_here("explain", "tx-02")

    assert shown.returncode == 0, shown.stderr
    assert re.findall(r"^TX-02/AGUI\d{3}$", shown.stdout, re.M) == ["TX-02/AGUI101", "TX-02/AGUI102"]


@pytest.mark.parametrize(("given", "meant"), [("STORE-SCHEMX", "STORE-SCHEMA"), ("not_json", "not-json"),
                                              ("uk-5", "UK-05")])
def test_a_misspelt_code_is_refused_naming_the_one_meant(given: str, meant: str) -> None:
    refused = agui_here("explain", given)

    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr == f"agui explain: no code {given} is documented; did you mean {meant}?\n"


def test_a_code_given_with_escapes_is_refused_inert() -> None:
    refused = agui_here("explain", "\x1b]0;owned\x07")

    assert refused.returncode == 2 and "\x1b" not in refused.stderr and "\x07" not in refused.stderr
    assert "is documented" in refused.stderr


def test_explain_without_a_code_lists_every_code_by_group() -> None:
    listed = agui_here("explain")

    assert listed.returncode == 0
    codes = re.findall(r"^  (\S+)$", listed.stdout, re.M)
    page = (ROOT / "docs" / "codes.md").read_text(encoding="utf-8")
    assert codes == [head["code"] for head in SECTION.finditer(page)]
    assert "\nTesting kit\n" in listed.stdout


@pytest.mark.parametrize("no_color", [False, True], ids=["colour", "NO_COLOR"])
def test_explain_on_a_narrow_terminal_draws_the_section_within_the_width(no_color: bool) -> None:
    env = {**ENV, "TERM": "xterm-256color"}
    if not no_color:
        env.pop("NO_COLOR")
    child = pexpect.spawn(AGUI[0], [*AGUI[1:], "explain", "IR-30"], env=env, encoding="utf-8",
                          dimensions=(200, 40), timeout=30)
    raw = child.read()
    child.close()

    assert child.exitstatus == 0, raw
    lines = screen_text(raw).split("\n")
    assert lines[0] == "IR-30" and max(cell_len(line) for line in lines) <= 40
    words = " ".join(" ".join(lines).split())
    # drawn as Markdown (the bold markers gone), every word of the section there
    assert "**" not in words and "What to do. Nothing is refused; validate that field yourself if it matters." in words
    # (NO_COLOR takes the colours, the example's highlighting among them; bold and dim are styles it leaves)
    assert bool(COLOUR.search(raw)) is not no_color


# --------------------------------------------------------------------------------------------------
# the hints the CLI's errors and warnings end with
# --------------------------------------------------------------------------------------------------


def test_a_protocol_error_of_a_run_ends_with_the_hint(served: Any) -> None:
    endpoint = served(ScriptedAgent([[Start(), TextMessageContentEvent(message_id="m", delta="hi"), Finish()]]))

    failed = agui_here("run", endpoint.url, "-m", "hi")

    assert failed.returncode == 1
    assert "rule TX-02/AGUI101" in failed.stdout
    assert failed.stdout.endswith("\n  (see: agui explain TX-02/AGUI101)\n"), failed.stdout


def test_a_warning_of_a_run_ends_with_the_hint(served: Any) -> None:
    endpoint = served(ScriptedAgent([[Start(), RunFinishedEvent(thread_id="elsewhere", run_id="other")]]))

    done = agui_here("run", endpoint.url, "-m", "hi")

    assert done.returncode == 0, done.stderr
    line = [line for line in done.stdout.splitlines() if line.startswith("warning: [LC-07/AGUI008]")][0]
    assert line.endswith(" (see: agui explain LC-07/AGUI008)")


def test_a_run_error_ends_with_the_hint_when_its_code_is_documented(served: Any) -> None:
    exhausted = served(ScriptedAgent([]))  # (no step: the agent answers RUN_ERROR script_exhausted)
    busy = served(ScriptedAgent([[Start(), RunErrorEvent(message="overloaded", code="busy")]]))

    documented = agui_here("run", exhausted.url, "-m", "hi")
    undocumented = agui_here("run", busy.url, "-m", "hi")

    assert documented.returncode == undocumented.returncode == 1
    assert "(code script_exhausted) (see: agui explain script_exhausted)" in documented.stdout
    # (an agent's own code: no page to point at)
    assert "(code busy)" in undocumented.stdout and "agui explain" not in undocumented.stdout


def test_verify_ends_its_findings_with_the_hint(tmp_path: Path) -> None:
    capture = tmp_path / "bad.jsonl"
    capture.write_text(json.dumps({"type": "TEXT_MESSAGE_START", "messageId": "m"}) + "\n", encoding="utf-8")

    found = agui_here("verify", str(capture))

    assert found.returncode == 1
    assert "(see: agui explain LC-01/AGUI001; each rule above likewise: agui explain CODE)\n" in found.stdout


def test_a_store_refusal_with_a_code_ends_with_the_hint(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "threads.db"
    SqliteStore(str(path)).close()
    with sqlite3.connect(path) as db:
        db.execute("CREATE INDEX spent ON agui_threads (length(zeroblob(1000000)))")

    refused = agui_here("run", "http://127.0.0.1:9/agent", "-m", "hi", "--thread-file", str(path))

    assert refused.returncode == 2
    assert refused.stderr.rstrip("\n").endswith("(see: agui explain STORE-SCHEMA)"), refused.stderr


def test_a_python_warning_the_command_meets_is_one_line_ending_with_the_hint(served: Any, tmp_path: Path) -> None:
    # A stored thread repeating a message id loads with a repair (MS-01), said through Python's warnings:
    # the command showed it as Python does, "FILE:LINE: AguiWarning: ...", the place inside its own code.
    path = tmp_path / "threads.db"
    store = SqliteStore(str(path))
    record = ThreadState(thread_id="t", messages=[UserMessage(id="u1", content="hi")]).dump()
    record["messages"] = record["messages"] * 2
    store.save("t", record, expected_version=None)
    store.close()
    endpoint = served(ScriptedAgent.chat("ok"))

    done = agui_process("run", endpoint.url, "-m", "again", "--thread-file", str(path))

    assert done.returncode == 0, done.stderr
    [line] = [line for line in done.stderr.splitlines() if "MS-01" in line]
    assert line.startswith("warning: [MS-01] at /messages/1/id: ") and line.endswith(" (see: agui explain MS-01)")


# --------------------------------------------------------------------------------------------------
# the library: ``doc``
# --------------------------------------------------------------------------------------------------


def test_a_protocol_error_of_a_live_run_names_its_page_in_doc(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent([[Start(), TextMessageContentEvent(message_id="m", delta="hi"), Finish()]]))

    with drive.client(endpoint.url) as client, pytest.raises(ProtocolError) as raised:
        client.thread().run("hi")

    assert raised.value.doc == "agui explain TX-02/AGUI101 (codes.md#tx-02-agui101)"
    assert "agui explain" not in str(raised.value)  # (str() stays the message it was)


def test_a_run_warning_names_its_page_in_doc(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent([[Start(), RunFinishedEvent(thread_id="elsewhere", run_id="other")]]))

    with drive.client(endpoint.url) as client:
        result = client.thread().run("hi")

    warning = [w for w in result.warnings if w.code == "LC-07/AGUI008"][0]
    assert warning.doc == "agui explain LC-07/AGUI008 (codes.md#lc-07-agui008)"


def test_a_failed_run_names_the_page_of_a_documented_code_only(drive: Any, served: Any) -> None:
    exhausted = served(ScriptedAgent([]))
    busy = served(ScriptedAgent([[Start(), RunErrorEvent(message="overloaded", code="busy")]]))

    with drive.client(exhausted.url) as client, pytest.raises(RunFailed) as documented:
        client.thread().run("hi").raise_for_outcome()
    with drive.client(busy.url) as client, pytest.raises(RunFailed) as undocumented:
        client.thread().run("hi").raise_for_outcome()

    assert documented.value.doc == "agui explain script_exhausted (codes.md#script-exhausted)"
    assert undocumented.value.doc is None


def test_a_python_warning_and_a_store_error_name_their_pages_in_doc(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "threads.db"
    SqliteStore(str(path)).close()
    with sqlite3.connect(path) as db:
        db.execute("CREATE INDEX spent ON agui_threads (length(zeroblob(1000000)))")
    with pytest.raises(StoreError) as refused:
        SqliteStore(str(path))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warn("UK-03", "an unknown field")
    [shown] = [w.message for w in caught if isinstance(w.message, AguiWarning)]

    assert refused.value.doc == "agui explain STORE-SCHEMA (codes.md#store-schema)"
    assert (shown.code, shown.doc) == ("UK-03", "agui explain UK-03 (codes.md#uk-03)")
    assert (AguiWarning("no code here").code, AguiWarning("no code here").doc) == (None, None)


def test_an_error_without_a_code_has_no_doc() -> None:
    with pytest.raises(ProtocolError) as raised:
        replay('{"type":"TEXT_MESSAGE_START","messageId":"m"}\n')
    assert raised.value.doc == "agui explain LC-01/AGUI001 (codes.md#lc-01-agui001)"
    raised.value.rule = None
    assert raised.value.doc is None
    assert StoreError("the store is closed", closed=True).doc is None

