"""A real redis-server on 127.0.0.1 for the store tests, started once per session.

There is no fake: the Redis store's promise rests on the server running its Lua script atomically,
which only a real server can show. When ``redis-server`` is missing the Redis tests fail (never
skip), with the command that installs it.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest
import redis

__all__: list[str] = []

INSTALL_HINT = "install it: `apt-get install -y redis-server` (Debian/Ubuntu) or `brew install redis` (macOS)"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listened on a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture
def closed_port() -> int:
    """A port on 127.0.0.1 with nothing listening on it (for "the server is unreachable" cases)."""
    return free_port()


def _drain(stream: IO[str]) -> None:
    # Keeps reading the server's log so it can never block on a full pipe.
    for _ in stream:
        pass


def _start(executable: str, directory: Path) -> tuple[subprocess.Popen[str], int, list[str]]:
    """Start redis-server on a free port; returns it once it logged that it accepts connections.

    Waits on the server's own log (a pipe) rather than polling with sleeps. Another process may grab
    the port between ``free_port()`` and the bind, so a server that exits early is retried on a new port.
    """
    log: list[str] = []
    for _attempt in range(5):
        port = free_port()
        server = subprocess.Popen(
            [executable, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(directory), "--daemonize", "no", "--logfile", ""],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        assert server.stdout is not None
        log = []
        for line in server.stdout:
            log.append(line)
            if "Ready to accept connections" in line:
                return server, port, log
        server.wait()
        server.stdout.close()
    pytest.fail("redis-server did not start:\n" + "".join(log[-20:]), pytrace=False)


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``redis://127.0.0.1:<port>/0`` of a redis-server this session started (and stops at the end)."""
    executable = shutil.which("redis-server")
    if executable is None:
        if os.environ.get("CI"):
            pytest.fail(f"redis-server is not on PATH, and CI must run the Redis store tests; {INSTALL_HINT}",
                        pytrace=False)
        pytest.fail(f"the Redis store tests need a real redis-server on PATH; {INSTALL_HINT}", pytrace=False)
    server, port, _log = _start(executable, tmp_path_factory.mktemp("redis"))
    assert server.stdout is not None
    drain = threading.Thread(target=_drain, args=(server.stdout,), daemon=True)
    drain.start()
    url = f"redis://127.0.0.1:{port}/0"
    try:
        with redis.Redis.from_url(url) as client:
            assert client.ping() is True
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)
        drain.join(timeout=30)
        server.stdout.close()
