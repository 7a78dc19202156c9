"""A real redis-server and a real PostgreSQL server on 127.0.0.1, for the suite's session fixtures.

``tests/conftest.py`` binds ``redis_url`` and ``postgres_dsn`` once, for the whole suite: each server
starts the first time a test asks for it and stops when the session ends, so a full run starts at
most one of each whichever folders its store tests live in. (A fixture bound in a test module is a
definition of that module's own: pytest started a server for each module that bound one, three
PostgreSQL servers and three redis-servers in one full run.) Tests stay independent on the one
server by naming what they write: each makes tables, or Redis key prefixes, of its own (a uuid in the
name), as they must on a server ``AGUI_TEST_POSTGRES_DSN`` names.

There is no fake: the Redis store's promise rests on the server running its Lua script atomically,
the PostgreSQL store's on the server's row locks, which only real servers can show. When
``redis-server`` or PostgreSQL's binaries are missing, those tests fail (never skip), with the command
that installs them.

PostgreSQL: ``AGUI_TEST_POSTGRES_DSN`` names a server to use instead; otherwise ``initdb`` makes a
cluster in a temporary folder and ``postgres`` serves it on a free 127.0.0.1 port. PostgreSQL refuses
to run as root, so when the tests run as root the cluster belongs to the ``postgres`` user (Debian's
package makes it), or else ``nobody``.

Beside them, what the tests of several files need of a server or of the connections to one, kept once
here: a free port, a raw agent's request read whole, httpcore's pools under a client, and the text an
agent sends when it cuts a character between two deltas.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import pytest

__all__ = ["POSTGRES_DSN_VARIABLE", "SURROGATE_HALVES", "drain_log", "free_port", "httpcore_pools", "postgres_server",
           "read_request", "redis_server"]

INSTALL_HINT = "install it: `apt-get install -y redis-server` (Debian/Ubuntu) or `brew install redis` (macOS)"
POSTGRES_INSTALL_HINT = ("install it: `apt-get install -y postgresql` (Debian/Ubuntu) "
                         "or `brew install postgresql` (macOS)")
POSTGRES_DSN_VARIABLE = "AGUI_TEST_POSTGRES_DSN"

#: A text message an agent slicing text by UTF-16 code unit sends: "café 😀!" with its emoji cut between
#: two deltas, each half a lone surrogate's JSON escape (as SSE frames, for a ``ScriptedAgent`` script).
SURROGATE_HALVES = (b'data: {"type":"TEXT_MESSAGE_START","messageId":"m1","role":"assistant"}\n\n'
                    b'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"caf\\u00e9 \\ud83d"}\n\n'
                    b'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"\\ude00!"}\n\n'
                    b'data: {"type":"TEXT_MESSAGE_END","messageId":"m1"}\n\n')


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listened on a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def read_request(read: Callable[[], bytes]) -> tuple[bytes, bytes]:
    """One HTTP/1.1 request read whole by a raw agent, as (head, body by its Content-Length), from
    ``read`` (a blocking read of at least a byte: ``lambda: conn.recv(65536)``, or a TLS read)."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += read()
    head, _, body = data.partition(b"\r\n\r\n")
    length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), 0)
    while len(body) < length:
        body += read()
    return head, body


def httpcore_pools(http: Any) -> list[Any]:
    """httpcore's connection pools under the httpx client ``http`` (its private attributes): every
    shard's when the agent client made ``http`` itself, else the one pool of a client passed in (or of
    httpx's pool through the environment's proxy)."""
    transport = http._transport
    if hasattr(transport, "_shards"):
        return [shard.transport._pool for shard in transport._shards]
    return [transport._pool]


def held_connections(pool: Any) -> list[Any]:
    """The connections of httpcore's ``pool`` a request still holds (neither idle nor closed): after a run
    ended, one left here never goes back (its socket open, a capped pool's place lost)."""
    return [c for c in pool._connections if not c.is_idle() and not c.is_closed()]


def drain_log(stream: IO[str]) -> None:
    """Read a child's log to its end, so that the child never blocks on a full pipe (run it in a thread)."""
    for _ in stream:
        pass


def _start_logged(command: list[str], ready: str, name: str, **popen: Any) -> tuple[subprocess.Popen[str], int]:
    """Start ``command`` (``{port}`` in it is a free port) and return it once its log says ``ready``.

    Waits on the server's own log (a pipe) rather than polling with sleeps. Another process may grab
    the port between ``free_port()`` and the bind, so a server that exits early is retried on a new port.
    """
    log: list[str] = []
    for _attempt in range(5):
        port = free_port()
        server = subprocess.Popen([part.replace("{port}", str(port)) for part in command],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **popen)
        assert server.stdout is not None
        log = []
        for line in server.stdout:
            log.append(line)
            if ready in line:
                return server, port
        server.wait()
        server.stdout.close()
    pytest.fail(f"{name} did not start:\n" + "".join(log[-20:]), pytrace=False)


@contextlib.contextmanager
def _running(server: subprocess.Popen[str], stop_signal: signal.Signals) -> Iterator[None]:
    """Drain the server's log while the block runs; then stop it with ``stop_signal`` and wait for it."""
    assert server.stdout is not None
    drain = threading.Thread(target=drain_log, args=(server.stdout,), daemon=True)
    drain.start()
    try:
        yield
    finally:
        server.send_signal(stop_signal)
        server.wait(timeout=60)
        drain.join(timeout=30)
        server.stdout.close()


@contextlib.contextmanager
def redis_server(directory: Path) -> Iterator[str]:
    """``redis://127.0.0.1:<port>/0`` of a redis-server started in ``directory``, stopped on exit."""
    executable = shutil.which("redis-server")
    if executable is None:
        if os.environ.get("CI"):
            pytest.fail(f"redis-server is not on PATH, and CI must run the Redis store tests; {INSTALL_HINT}",
                        pytrace=False)
        pytest.fail(f"the Redis store tests need a real redis-server on PATH; {INSTALL_HINT}", pytrace=False)
    server, port = _start_logged(
        [executable, "--port", "{port}", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", str(directory), "--daemonize", "no", "--logfile", ""],
        "Ready to accept connections", "redis-server")
    url = f"redis://127.0.0.1:{port}/0"
    # SIGTERM: redis-server exits at once (nothing to save: --save "" and no append-only file).
    with _running(server, signal.SIGTERM):
        # (imported here: the interop venvs load this module through tests/conftest.py without the redis extra)
        import redis

        with redis.Redis.from_url(url) as client:
            assert client.ping() is True
        yield url


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


@contextlib.contextmanager
def postgres_server() -> Iterator[str]:
    """A libpq DSN of a PostgreSQL server: ``AGUI_TEST_POSTGRES_DSN``, or one started here (``initdb``
    into a temporary folder; stopped and the folder removed on exit)."""
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
        server, port = _start_logged(
            [str(binaries / "postgres"), "-D", str(data), "-p", "{port}", "-c", "listen_addresses=127.0.0.1",
             # No Unix socket (its default folder may not exist or be writable); TCP on loopback only.
             "-c", "unix_socket_directories=", "-c", "max_connections=200", "-c", "logging_collector=off"],
            "database system is ready to accept connections", "PostgreSQL", cwd=data, **_as(user))
        # SIGINT, PostgreSQL's "fast" shutdown, ends the clients; SIGTERM ("smart") would wait for them.
        with _running(server, signal.SIGINT):
            yield f"host=127.0.0.1 port={port} user=agui dbname=postgres"
    finally:
        shutil.rmtree(folder, ignore_errors=True)
