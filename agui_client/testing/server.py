"""``serve(app)``: run an ASGI app under uvicorn on a loopback port, in a background thread."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from types import TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import uvicorn

__all__ = ["Server", "serve"]


class Server(str):
    """A running server: its base URL (a ``str``), and a context manager (sync and async) that stops it.

    Being the URL itself, it goes wherever a URL does (``AgentClient(serve(app))``); ``with serve(app)
    as url:`` stops the server at the end of the block.

    Attributes:
        url: the base URL, ``http://127.0.0.1:<port>/``; the scripted agent answers on any path.
        host: the address it listens on.
        port: the port it listens on.
    """

    host: str
    port: int
    url: str
    _server: uvicorn.Server
    _thread: threading.Thread
    _errors: list[BaseException]

    def __new__(cls, *, host: str, port: int, server: uvicorn.Server, thread: threading.Thread,
                errors: list[BaseException]) -> Server:
        url = f"http://{f'[{host}]' if ':' in host else host}:{port}/"
        self = super().__new__(cls, url)
        self.host = host
        self.port = port
        self.url = url
        self._server = server
        self._thread = thread
        self._errors = errors
        return self

    def __repr__(self) -> str:
        return f"<Server {self.url} {'running' if self.running else 'stopped'}>"

    @property
    def running(self) -> bool:
        """Whether the server thread is still alive."""
        return self._thread.is_alive()

    @property
    def thread(self) -> threading.Thread:
        """The thread the server runs in."""
        return self._thread

    def stop(self, timeout: float = 10.0) -> None:
        """Stop accepting connections, let open responses finish, and join the thread; idempotent.

        Responses still streaming are given the server's graceful-shutdown time, then cancelled.

        Raises:
            RuntimeError: the thread did not end within ``timeout`` seconds.
        """
        self._server.should_exit = True
        self._thread.join(timeout)
        if self._thread.is_alive():
            self._server.force_exit = True
            self._thread.join(timeout)
        if self._thread.is_alive():
            raise RuntimeError(f"the server at {self.url} did not stop within {2 * timeout} s")
        if self._errors:
            raise RuntimeError(f"the server at {self.url} failed") from self._errors.pop(0)

    def __enter__(self) -> Server:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    async def __aenter__(self) -> Server:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        import anyio.to_thread

        # Joining the thread blocks, so it must not run on the caller's event loop.
        await anyio.to_thread.run_sync(self.stop)


class _Paced:
    """The app, giving the event loop a turn after each piece of a response body it sends.

    uvicorn's ``send`` returns without waiting while the socket takes the bytes, so an app streaming
    a long response never lets the loop run: a client that went away is not noticed (uvicorn learns
    it in ``connection_lost``, a callback the loop must get round to), every later write fails, and
    asyncio logs ``socket.send() raised exception.`` for each one past the fifth. With a turn after
    each piece the disconnect lands at once: uvicorn drops what follows, and the app's ``receive``
    reports ``http.disconnect``. A client leaving a stream early is ordinary, not an error to log.
    """

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return

        async def paced(message: Any) -> None:
            await send(message)
            if message.get("type") == "http.response.body" and message.get("more_body"):
                await asyncio.sleep(0)

        await self.app(scope, receive, paced)


def serve(app: Any, *, host: str = "127.0.0.1", port: int = 0, graceful_timeout: int = 3,
          startup_timeout: float = 10.0) -> Server:
    """Start ``app`` under uvicorn in a background thread and return once it accepts connections.

    The socket is bound here, so ``port=0`` picks a free port that :attr:`Server.url` reports.
    uvicorn runs with log level ``warning``, no access log, lifespan off, h11 and asyncio; a client
    that leaves a response early is noticed at once and not logged.

    Args:
        app: an ASGI 3 application (a :class:`~agui_client.testing.ScriptedAgent`, a FastAPI app ...).
        host: the address to listen on.
        port: the port; ``0`` for any free one.
        graceful_timeout: seconds :meth:`Server.stop` lets streaming responses finish before cancelling them.
        startup_timeout: seconds to wait for the server to come up.

    Returns:
        The running :class:`Server`; use it as ``with serve(app) as server:`` (or ``async with``).

    Raises:
        ImportError: uvicorn is not installed (``pip install 'agui-client[testing]'``).
        OSError: the address cannot be bound.
        RuntimeError: the server failed to start.

    Example::

        from agui_client import AgentClient
        from agui_client.testing import ScriptedAgent, serve

        with serve(ScriptedAgent.chat("Hi!")) as server:  # a free port of 127.0.0.1, stopped at the end
            with AgentClient(server.url) as client:
                print(client.thread().run("hello").text)  # Hi!
    """
    try:
        import uvicorn
    except ImportError as exc:
        raise ImportError("agui_client.testing.serve() runs the app under uvicorn, which is not installed: "
                          "pip install 'agui-client[testing]'", name="uvicorn") from exc

    class _Uvicorn(uvicorn.Server):
        def __init__(self, config: uvicorn.Config) -> None:
            super().__init__(config)
            self.ready = threading.Event()

        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            self.ready.set()

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, so asyncio sets TCP_NODELAY on accepted connections (else ~40 ms per keep-alive reply).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    bound_port: int = sock.getsockname()[1]
    config = uvicorn.Config(_Paced(app), host=host, port=bound_port, log_level="warning", log_config=None,
                            access_log=False, lifespan="off", interface="asgi3", http="h11", ws="none", loop="asyncio",
                            timeout_graceful_shutdown=graceful_timeout)
    server = _Uvicorn(config)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            server.run(sockets=[sock])
        except BaseException as exc:  # noqa: B036 - reported to the caller instead of dying unseen in the thread
            errors.append(exc)
        finally:
            sock.close()

    thread = threading.Thread(target=run, name=f"agui-testing-server:{bound_port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + startup_timeout
    # Polled rather than one long wait so that a thread that died during startup is noticed at once.
    while not server.ready.wait(0.01):
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            thread.join(5)
            cause = errors[0] if errors else None
            raise RuntimeError(f"the server on {host}:{bound_port} failed to start") from cause
    return Server(host=host, port=bound_port, server=server, thread=thread, errors=errors)
