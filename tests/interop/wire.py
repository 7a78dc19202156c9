"""Shared by the interop tests: serving a producer's ASGI app on loopback, and recording the wire."""

from __future__ import annotations

import contextlib
import json
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
    """Run ``app`` under uvicorn on 127.0.0.1 (a free port) in a thread; yield its base URL.

    The package's own testing server, which waits on uvicorn's start-up instead of polling for it.
    """
    from agui_client.testing import serve as serve_app

    with serve_app(app) as server:
        yield server.url.rstrip("/")  # (the producers' routes are appended: "/agent")
