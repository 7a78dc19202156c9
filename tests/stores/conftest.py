"""A real redis-server and a real PostgreSQL server on 127.0.0.1 for the store tests, each started
once per session, and only when a test asks for it.

There is no fake: the Redis store's promise rests on the server running its Lua script atomically,
the PostgreSQL store's on the server's row locks, which only real servers can show. When
``redis-server`` or PostgreSQL's binaries are missing, those tests fail (never skip), with the command
that installs them.

PostgreSQL: ``AGUI_TEST_POSTGRES_DSN`` names a server to use instead (each test makes its own tables
in it); otherwise ``initdb`` makes a cluster in a temporary folder and ``postgres`` serves it on a free
127.0.0.1 port. PostgreSQL refuses to run as root, so when the tests run as root the cluster belongs
to the ``postgres`` user (Debian's package makes it), or else ``nobody``.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

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


# --------------------------------------------------------------------------------------------------
# PostgreSQL
# --------------------------------------------------------------------------------------------------

POSTGRES_INSTALL_HINT = ("install it: `apt-get install -y postgresql` (Debian/Ubuntu) "
                         "or `brew install postgresql` (macOS)")
POSTGRES_DSN_VARIABLE = "AGUI_TEST_POSTGRES_DSN"


def postgres_binaries() -> Path | None:
    """The folder holding ``initdb`` and ``postgres``: on the PATH, else Debian's newest
    ``/usr/lib/postgresql/<version>/bin`` (the package keeps them off the PATH)."""
    on_path = shutil.which("initdb")
    if on_path is not None and (Path(on_path).resolve().parent / "postgres").exists():
        return Path(on_path).resolve().parent
    found = [Path(p) for p in glob.glob("/usr/lib/postgresql/*/bin") if (Path(p) / "initdb").exists()]
    found.sort(key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0)
    return found[-1] if found else None


def _server_user() -> pwd.struct_passwd | None:
    """Whom the server runs as: this user, unless that is root (which PostgreSQL refuses)."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    pytest.fail("the tests run as root, and there is no `postgres` or `nobody` user to run PostgreSQL as",
                pytrace=False)


def _as(user: pwd.struct_passwd | None) -> dict[str, Any]:
    """``subprocess`` arguments that run a command as ``user`` (nothing, for this user)."""
    return {} if user is None else {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}


def _start_postgres(binaries: Path, data: Path, user: pwd.struct_passwd | None
                    ) -> tuple[subprocess.Popen[str], int, list[str]]:
    """Start ``postgres`` on a free port; returns it once it logged that it accepts connections.

    Waits on the server's own log (a pipe), as for Redis; a port taken between ``free_port()`` and the
    bind makes the server exit, and it is retried on another.
    """
    log: list[str] = []
    for _attempt in range(5):
        port = free_port()
        server = subprocess.Popen(
            [str(binaries / "postgres"), "-D", str(data), "-p", str(port), "-c", "listen_addresses=127.0.0.1",
             # No Unix socket (its default folder may not exist or be writable); TCP on loopback only.
             "-c", "unix_socket_directories=", "-c", "max_connections=200", "-c", "logging_collector=off"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=data, **_as(user),
        )
        assert server.stdout is not None
        log = []
        for line in server.stdout:
            log.append(line)
            if "database system is ready to accept connections" in line:
                return server, port, log
        server.wait()
        server.stdout.close()
    pytest.fail("PostgreSQL did not start:\n" + "".join(log[-20:]), pytrace=False)


@pytest.fixture(scope="session")
def postgres_dsn() -> Iterator[str]:
    """A libpq DSN of a PostgreSQL server: ``AGUI_TEST_POSTGRES_DSN``, or one this session started
    (``initdb`` into a temporary folder, stopped and removed at the end)."""
    given = os.environ.get(POSTGRES_DSN_VARIABLE)
    if given:
        yield given
        return
    binaries = postgres_binaries()
    if binaries is None:
        where = "CI must run the PostgreSQL store tests" if os.environ.get("CI") else \
            "the PostgreSQL store tests need a real PostgreSQL server"
        pytest.fail(f"no initdb on PATH or under /usr/lib/postgresql/*/bin, and {where} "
                    f"(or set {POSTGRES_DSN_VARIABLE}); {POSTGRES_INSTALL_HINT}", pytrace=False)
    user = _server_user()
    # Not under pytest's own temporary folder: as root that is private to root, and the server's
    # user could not reach its cluster (nor under a TMPDIR root may have made private: /tmp then).
    folder = Path(tempfile.mkdtemp(prefix="agui-postgres-", dir=None if user is None else "/tmp"))
    data = folder / "data"
    data.mkdir(mode=0o700)
    if user is not None:
        os.chown(folder, user.pw_uid, user.pw_gid)
        os.chown(data, user.pw_uid, user.pw_gid)
    try:
        # --no-sync: the cluster is thrown away at the end; the server itself keeps fsync on, so
        # every commit the tests rely on is as durable as in production.
        done = subprocess.run(
            [str(binaries / "initdb"), "-D", str(data), "-U", "agui", "--auth=trust", "-E", "UTF8",
             "--no-locale", "--no-sync"],
            capture_output=True, text=True, cwd=folder, timeout=120, **_as(user),
        )
        if done.returncode != 0:
            pytest.fail(f"initdb failed ({done.returncode}):\n{done.stdout}{done.stderr}", pytrace=False)
        server, port, _log = _start_postgres(binaries, data, user)
        assert server.stdout is not None
        drain = threading.Thread(target=_drain, args=(server.stdout,), daemon=True)
        drain.start()
        try:
            yield f"host=127.0.0.1 port={port} user=agui dbname=postgres"
        finally:
            # SIGTERM: PostgreSQL's "smart" shutdown waits for clients; SIGINT ("fast") ends them.
            server.send_signal(2)
            server.wait(timeout=60)
            drain.join(timeout=30)
            server.stdout.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
