"""Shared by the interop tests: serving a producer's ASGI app on loopback, and recording the wire."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any


class Recorder:
    """ASGI middleware keeping each exchange's request body and SSE response body."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.exchanges: list[dict[str, Any]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        record: dict[str, Any] = {"path": scope["path"], "request": b"", "response": b"", "status": None}
        self.exchanges.append(record)

        async def recv() -> Any:
            message = await receive()
            if message["type"] == "http.request":
                record["request"] += message.get("body", b"")
            return message

        async def snd(message: Any) -> None:
            if message["type"] == "http.response.start":
                record["status"] = message["status"]
            elif message["type"] == "http.response.body":
                record["response"] += message.get("body", b"")
            await send(message)

        await self.app(scope, recv, snd)

    def request(self, index: int = -1) -> dict[str, Any]:
        return json.loads(self.exchanges[index]["request"])

    def events(self, index: int = -1) -> list[dict[str, Any]]:
        body = self.exchanges[index]["response"].decode("utf-8")
        return [json.loads(line[5:]) for line in body.splitlines() if line.startswith("data:")]


@contextlib.contextmanager
def serve(app: Any) -> Iterator[str]:
    """Run ``app`` under uvicorn on 127.0.0.1 (a free port) in a thread; yield its base URL."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(15)
        sock.close()
