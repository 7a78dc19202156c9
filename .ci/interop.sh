#!/usr/bin/env bash
# Interop group: agui_client against real third-party AG-UI producers (pydantic-ai's AG-UI adapter,
# ag-ui-langgraph; then Agent Framework's in .venv-interop-af, below). Runs in its own venv,
# .venv-interop, so the main dev environment stays light.
# Everything is pinned in tests/interop/requirements.txt; see tests/interop/NOTES.md.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=.venv-interop
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip
# The package from this tree (with the `testing` extra), the pinned producers, and the test runner
# (pytest, pytest-timeout for the project's `timeout` ini option, anyio for the async tests).
"$VENV/bin/python" -m pip install -q --disable-pip-version-check \
  -e '.[testing]' -r tests/interop/requirements.txt

# No tracing or telemetry from the producer stacks: the tests talk to 127.0.0.1 only.
export LANGSMITH_TRACING=false LANGCHAIN_TRACING_V2=false LANGCHAIN_TRACING=false
export OTEL_SDK_DISABLED=true

# `-m interop` selects this group even if the project's addopts deselect it for the main run; the
# project's addopts already hold -q (a second -q would hide the "N passed" closing line).
"$VENV/bin/python" -m pytest tests/interop -p no:cacheprovider -p no:langsmith_plugin -m interop \
  --ignore=tests/interop/test_agent_framework.py

# Second group: Microsoft Agent Framework's AG-UI adapter, in a venv of its own, .venv-interop-af
# (agent-framework-ag-ui requires ag-ui-protocol<0.2, the group above pins 1.0.0). Built the same way,
# pinned in tests/interop/requirements-af.txt.
VENV_AF=.venv-interop-af
if [ ! -x "$VENV_AF/bin/python" ]; then
  python3 -m venv "$VENV_AF"
fi
"$VENV_AF/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip
"$VENV_AF/bin/python" -m pip install -q --disable-pip-version-check \
  -e '.[testing]' -r tests/interop/requirements-af.txt
exec "$VENV_AF/bin/python" -m pytest tests/interop/test_agent_framework.py -p no:cacheprovider -m interop
