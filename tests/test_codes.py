"""Every code the package can show a user has a section in docs/codes.md, and each section's example
triggers its code.

The codes are found in the source: string constants given as ``code=`` or ``rule=``, as the first
argument of a ``warn``/``_warning`` call, or bound to a module-level ``*_CODE``-style constant the
package reads them from; plus ``SchemaFault`` codes and the ``…/AGUI303`` codes whose rule comes
from a patch failure. Each section of docs/codes.md (``## CODE {#anchor}``) holds one example: a
fenced ``jsonl`` or ``sse`` stream, replayed with ``agui_client.replay``, or a ``python`` snippet, run
here; the example must produce its code (a warning, an error's ``rule``/``code``, or printed).
"""

from __future__ import annotations

import ast
import contextlib
import functools
import io
import json
import re
import warnings
from pathlib import Path
from typing import Any

import pytest

import agui_client
from agui_client.core.schema import SCHEMA_FAULTS
from tools.codes import SECTION  # (what a section's heading is: the script's rule, one for both)

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "agui_client"
PAGE = ROOT / "docs" / "codes.md"
RULES_PAGE = ROOT / "docs" / "rules.md"

EXAMPLE = re.compile(r"<!-- trigger -->\n```(?P<kind>jsonl|sse|python)\n(?P<body>.*?)\n```", re.S)
# Module constants that hold a code the package emits (the constant is what the code passes on).
CODE_CONSTANTS = re.compile(r"^(NOT_AN_EVENT|NO_TYPE|MALFORMED|CUSTOM_ASKED|TOOL_ASKED|ASKS_NOT_KEPT|MISMATCH_CODE)$")
WARN_CALLS = ("warn", "_warn", "_warning")
RULE_CODE = re.compile(r"(?:LC|CL|ST|TX|TC|SP|MS|AC|RS|SA|IR|TU|PV|TR|UK)-\d{2}(?:/AGUI\d{3})?")
RULE_ID = re.compile(r"\b(?:LC|CL|ST|TX|TC|SP|MS|AC|RS|SA|IR|TU|PV|TR|UK)-\d{2}\b")


def _constants(node: ast.AST) -> list[Any]:
    """The string constants an expression can evaluate to (both arms of a conditional)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.IfExp):
        return _constants(node.body) + _constants(node.orelse)
    if isinstance(node, ast.JoinedStr):
        tail = node.values[-1]
        if isinstance(tail, ast.Constant) and isinstance(tail.value, str) and tail.value.startswith("/AGUI"):
            return [("dynamic", tail.value)]
    return []


def _patch_rules() -> set[str]:
    """The rules a patch failure can carry besides SP-06 (which the fold always reports as its own code)."""
    tree = ast.parse((PACKAGE / "core" / "patch.py").read_text(encoding="utf-8"))
    return {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and re.fullmatch(r"SP-\d{2}", node.value)} - {"SP-06"}


def _rule_constants(tree: ast.AST) -> list[str]:
    """Rule-shaped constants that are values (in tables, tuples, assignments), not compared against or defaults."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            skip |= {id(child) for child in ast.walk(node)}
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            skip |= {id(child) for default in node.args.defaults + node.args.kw_defaults if default is not None
                     for child in ast.walk(default)}
    return [node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and id(node) not in skip and RULE_CODE.fullmatch(node.value)]


# Scanned once per session: the scan parses and walks the whole package (a second or more), and the
# source does not change while the tests run.
@functools.cache
def emitted_codes() -> frozenset[str]:
    """Every code the package's source can emit (see the module docstring for where they come from)."""
    codes: set[str] = set(SCHEMA_FAULTS)
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        # (patch.py's rules reach a user only inside the fold's SP-06/AGUI302, …/AGUI303 and AC-05 codes)
        found: list[Any] = list(_rule_constants(tree)) if path.name != "patch.py" else []
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                if name in WARN_CALLS and node.args:
                    found += _constants(node.args[0])
                for keyword in node.keywords:
                    if keyword.arg in ("code", "rule"):
                        found += _constants(keyword.value)
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                target = node.targets[0].id
                if CODE_CONSTANTS.match(target):
                    found += _constants(node.value)
                elif target == "_CONTINUATION_RULE" and isinstance(node.value, ast.Dict):
                    for value in node.value.values:
                        found += _constants(value)
        for item in found:
            if isinstance(item, tuple):
                codes |= {rule + item[1] for rule in _patch_rules()}
            else:
                codes.add(item)
    return frozenset(codes)


def sections() -> dict[str, tuple[str, str]]:
    """code -> (anchor, section text)."""
    text = PAGE.read_text(encoding="utf-8")
    heads = list(SECTION.finditer(text))
    return {head["code"]: (head["anchor"], text[head.end():heads[i + 1].start() if i + 1 < len(heads) else len(text)])
            for i, head in enumerate(heads)}


SECTIONS = sections()


def test_the_scan_finds_the_codes_we_know_of() -> None:
    # (a guard on the scanner itself: if these vanish, it has stopped seeing the places codes come from)
    codes = emitted_codes()
    assert {"LC-01/AGUI001", "TR-09/AGUI502", "UK-05/AGUI504", "AGUI501", "BOM", "UTF16-SURROGATE", "MS-01",
            "TU-04", "SP-07/AGUI303", "LEGACY-CUSTOM-INTERRUPT", "recording_mismatch", "unknown_interrupt",
            "not-json", "not-a-schema", "IR-18", "TX-13"} <= codes
    assert not [code for code in codes if re.fullmatch(r"B\d{3}|.*/B\d{3}", code)], "bug-catalogue ids are not codes"


def test_every_code_the_package_emits_has_a_section() -> None:
    missing = sorted(emitted_codes() - set(SECTIONS))
    assert not missing, f"codes without a section in docs/codes.md: {missing}"


def test_every_section_is_a_code_the_package_emits() -> None:
    stale = sorted(set(SECTIONS) - emitted_codes())
    assert not stale, f"sections of docs/codes.md for codes nothing emits: {stale}"


def test_anchors_are_the_codes_spelled_for_a_url() -> None:
    for code, (anchor, _) in SECTIONS.items():
        assert anchor == re.sub(r"[^a-z0-9]+", "-", code.lower()).strip("-"), code


def test_every_rule_id_the_package_cites_has_an_anchor_on_the_rules_page() -> None:
    cited: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        cited |= set(RULE_ID.findall(path.read_text(encoding="utf-8")))
    anchors = set(re.findall(r'<a id="([a-z]{2}-\d{2})"></a>', RULES_PAGE.read_text(encoding="utf-8")))
    missing = sorted(rule for rule in cited if rule.lower() not in anchors)
    assert not missing, f"rule ids cited in agui_client without an entry in docs/rules.md: {missing}"


def _seen(kind: str, body: str) -> tuple[set[str], str]:
    """Run an example: the exact codes it produced, and any text it printed or raised."""
    codes: set[str] = set()
    text: list[str] = []
    if kind in ("jsonl", "sse"):
        try:
            result = agui_client.replay(body + "\n", format=kind)  # type: ignore[arg-type]
        except agui_client.ProtocolError as exc:
            codes.add(str(exc.rule))
            if exc.result is not None:
                codes |= {w.code for w in exc.result.warnings}
        else:
            codes |= {w.code for w in result.warnings}
        return codes, ""
    out = io.StringIO()
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(out):
        warnings.simplefilter("always")
        try:
            exec(compile(body, f"<{PAGE.name} example>", "exec"), {"__name__": "__codes_example__"})
        except Exception as exc:  # the example's error is what it shows
            codes |= {str(getattr(exc, attr)) for attr in ("rule", "code") if getattr(exc, attr, None)}
            text.append(str(exc))
    text += [str(w.message) for w in caught]
    text.append(out.getvalue())
    return codes, "\n".join(text)


@pytest.mark.parametrize("code", sorted(SECTIONS))
def test_the_example_triggers_its_code(code: str) -> None:
    _, section = SECTIONS[code]
    examples = list(EXAMPLE.finditer(section))
    assert len(examples) == 1, f"{code}: one <!-- trigger --> example per section"
    codes, text = _seen(examples[0]["kind"], examples[0]["body"])
    token = re.compile(r"(?<![\w/-])" + re.escape(code) + r"(?![\w/-])")
    assert code in codes or token.search(text), f"{code}: the example produced {sorted(codes)} {text[-500:]!r}"


def test_the_package_carries_the_sections_of_the_page_as_the_script_makes_them() -> None:
    # agui explain and an error's doc read agui_client/codes.json (the installed package has no docs/);
    # docs/codes.md is the one source, so the copy must be what `python -m tools.codes` makes of it now.
    from tools import codes

    made = codes.made(PAGE.read_text(encoding="utf-8"))
    assert (PACKAGE / "codes.json").read_text(encoding="utf-8") == made, (
        "agui_client/codes.json is not what python -m tools.codes makes of docs/codes.md: run the script")
    assert [entry["code"] for entry in codes.entries(PAGE.read_text(encoding="utf-8"))] == list(SECTIONS)


def test_the_script_check_reports_a_copy_out_of_date_and_writes_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from tools import codes

    (tmp_path / "docs").mkdir()
    (tmp_path / "agui_client").mkdir()
    (tmp_path / codes.PAGE).write_text("## X-01 {#x-01}\n\n**Meant.** Text.\n", encoding="utf-8")
    monkeypatch.setattr(codes, "ROOT", tmp_path)

    assert codes.main(["--check"]) == 1 and not (tmp_path / codes.TARGET).exists()
    assert codes.main([]) == 0 and codes.main(["--check"]) == 0
    assert json.loads((tmp_path / codes.TARGET).read_text(encoding="utf-8"))["codes"] == [
        {"code": "X-01", "anchor": "x-01", "group": "", "text": "**Meant.** Text."}]
    assert capsys.readouterr().err == "agui_client/codes.json: out of date\nagui_client/codes.json: written\n"
