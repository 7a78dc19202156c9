"""The store tests' own fixture. Their servers, ``redis_url`` and ``postgres_dsn``, are the whole
suite's session fixtures (``tests/conftest.py``, started by ``tests/serverkit.py``)."""

from __future__ import annotations

import pytest
from serverkit import free_port

__all__: list[str] = []


@pytest.fixture
def closed_port() -> int:
    """A port on 127.0.0.1 with nothing listening on it (for "the server is unreachable" cases)."""
    return free_port()
