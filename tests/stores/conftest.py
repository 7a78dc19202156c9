"""The store tests' own fixtures. Their servers, ``redis_url`` and ``postgres_dsn``, are the whole
suite's session fixtures (``tests/conftest.py``, started by ``tests/serverkit.py``).

``backend`` (each store kind in turn, a test's own fresh store), ``durable_backend``, ``store``,
``pg_table`` and ``raw_redis`` are defined in ``backendkit.py`` and offered here to every store test,
rather than restated in each file that runs its cases against every kind."""

from __future__ import annotations

import pytest
from backendkit import backend, durable_backend, pg_table, prefix, raw_redis, store  # noqa: F401 (offered to every store test: see above)
from serverkit import free_port

__all__: list[str] = []


@pytest.fixture
def closed_port() -> int:
    """A port on 127.0.0.1 with nothing listening on it (for "the server is unreachable" cases)."""
    return free_port()
