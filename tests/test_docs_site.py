"""The documentation site builds in strict mode, and its API reference shows every public name."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import agui_client
import agui_client.ag_ui
import agui_client.stores
import agui_client.terminal
import agui_client.testing

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return out


@pytest.mark.parametrize(("module", "page"), [(agui_client, "agui_client"), (agui_client.stores, "stores"),
                                              (agui_client.testing, "testing"),
                                              (agui_client.terminal, "terminal"), (agui_client.ag_ui, "ag_ui")])
def test_the_api_reference_shows_every_public_name(site: Path, module: ModuleType, page: str) -> None:
    html = (site / "api" / page / "index.html").read_text(encoding="utf-8")
    prefix = re.escape(module.__name__)
    # (a name shown under its defining module counts too: agui_client.testing.probe is a module and a function)
    shown = set(re.findall(r'id="' + prefix + r'\.(?:[A-Za-z_][A-Za-z0-9_]*\.)?([A-Za-z_][A-Za-z0-9_]*)"', html))
    missing = sorted(set(module.__all__) - shown)
    assert not missing, f"public names missing from docs/api/{page}.md: {missing}"


def test_every_code_page_section_is_an_anchor_of_the_built_site(site: Path) -> None:
    html = (site / "codes" / "index.html").read_text(encoding="utf-8")
    sections = re.findall(r"^## \S+ \{#([a-z0-9-]+)\}$", (ROOT / "docs" / "codes.md").read_text(encoding="utf-8"),
                          flags=re.M)
    assert sections and all(f'id="{anchor}"' in html for anchor in sections)


@pytest.mark.parametrize("cls", [agui_client.Thread, agui_client.AsyncThread, agui_client.AgentClient,
                                 agui_client.AsyncAgentClient, agui_client.RunStream, agui_client.AsyncRunStream,
                                 agui_client.LoopStream, agui_client.AsyncLoopStream,
                                 agui_client.ResumeBuilder], ids=lambda c: c.__name__)
def test_the_api_reference_shows_every_method_and_property_of_the_classes_a_user_holds(site: Path, cls: type) -> None:
    # (a thread's resume_builder, state and add_tool_result come from a base class outside the public API:
    # without inherited members listed in docs/api/agui_client.md, its page never showed them)
    html = (site / "api" / "agui_client" / "index.html").read_text(encoding="utf-8")
    members = {name for name in dir(cls) if not name.startswith("_")
               and (callable(getattr(cls, name)) or isinstance(getattr(cls, name), property))}

    missing = sorted(name for name in members if f'id="agui_client.{cls.__name__}.{name}"' not in html)

    assert not missing, f"{cls.__name__} members missing from docs/api/agui_client.md: {missing}"
