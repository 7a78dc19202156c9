"""The web backend page's snippet (docs/start/web-backend.md) runs as written, with its two addresses
pointed at a ScriptedAgent and at this session's redis-server: a browser's two turns on one thread,
relayed as SSE, the second continuing the first from Redis."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

from agui_client.testing import ScriptedAgent, serve

PAGE = Path(__file__).parent.parent.parent / "docs" / "start" / "web-backend.md"


def test_the_web_backend_page_relays_two_turns_of_one_thread_through_redis(redis_url: str) -> None:
    # (the first snippet; the page's "Forwarding each user's credential" one runs in tests/test_run_headers.py)
    snippet = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)[0]
    assert "http://agent:9000/" in snippet and "redis://redis:6379/0" in snippet

    agent = ScriptedAgent.chat("noted")
    with serve(agent) as server:
        code = snippet.replace("http://agent:9000/", server.url).replace("redis://redis:6379/0", redis_url)
        names: dict[str, Any] = {"__name__": "__docs__"}
        exec(compile(code, str(PAGE), "exec"), names)

        async def browser() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
            try:
                first = [_event(line) async for line in names["chat"](None, "hello")]
                thread_id = first[0]["threadId"]
                second = [_event(line) async for line in names["chat"](thread_id, "and again")]
                return first, second
            finally:
                await names["client"].close()

        first, second = asyncio.run(browser())
        asked = agent.requests[-1]

    assert [first[0]["type"], first[-1]["type"]] == ["RUN_STARTED", "RUN_FINISHED"]
    assert [second[0]["type"], second[-1]["type"]] == ["RUN_STARTED", "RUN_FINISHED"]
    assert second[0]["threadId"] == first[0]["threadId"]
    # (the second turn went out with the first's history, read back from Redis)
    assert [m.content for m in asked.messages] == ["hello", "noted", "and again"]


def _event(line: str) -> dict[str, Any]:
    assert line.startswith("data: ") and line.endswith("\n\n"), line
    event: dict[str, Any] = json.loads(line[len("data: "):])
    return event
