"""The yardstick of ``python -m bench.concurrency``: an AG-UI consumer the way one is written by hand.

``httpx.AsyncClient.stream`` + ``aiter_lines()`` + ``ag_ui.core``'s pydantic ``TypeAdapter(Event)`` +
a fold into plain dicts with ``jsonpatch``: what Python AG-UI consumers do today. It verifies
nothing (no sequence rules, no ids checked against the run, no size limit, no store) and copies the
state on every patch (``jsonpatch.apply_patch`` without ``in_place``). It is here to be measured
beside ``agui_client``, not used: it is no part of the package (``ag-ui-protocol`` and ``jsonpatch``
come with the ``dev`` extra).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import jsonpatch
from ag_ui.core import Event
from pydantic import TypeAdapter

__all__ = ["HandwrittenThread", "EVENT"]

EVENT: TypeAdapter[Any] = TypeAdapter(Event)


class HandwrittenThread:
    """One conversation's state as plain dicts, folded from events."""

    def __init__(self, thread_id: str) -> None:
        self.thread_id = thread_id
        self.messages: list[dict[str, Any]] = []
        self.by_id: dict[str, dict[str, Any]] = {}
        self.state: Any = {}
        self.status = "idle"

    def _message(self, message_id: str, role: str = "assistant") -> dict[str, Any]:
        message = self.by_id.get(message_id)
        if message is None:
            message = {"id": message_id, "role": role, "content": ""}
            self.by_id[message_id] = message
            self.messages.append(message)
        return message

    def apply(self, event: Any) -> None:
        kind = event.type
        if kind == "TEXT_MESSAGE_CONTENT":
            self._message(event.message_id)["content"] += event.delta
        elif kind == "TEXT_MESSAGE_START":
            self._message(event.message_id, event.role)
        elif kind == "TOOL_CALL_START":
            parent = self._message(event.parent_message_id or event.tool_call_id)
            parent.setdefault("toolCalls", []).append(
                {"id": event.tool_call_id, "type": "function", "function": {"name": event.tool_call_name,
                                                                              "arguments": ""}})
        elif kind == "TOOL_CALL_ARGS":
            for message in reversed(self.messages):
                for call in message.get("toolCalls", ()):
                    if call["id"] == event.tool_call_id:
                        call["function"]["arguments"] += event.delta
                        break
                else:
                    continue
                break
        elif kind == "TOOL_CALL_RESULT":
            self._message(event.message_id, "tool").update(content=event.content, toolCallId=event.tool_call_id)
        elif kind == "STATE_SNAPSHOT":
            self.state = event.snapshot
        elif kind == "STATE_DELTA":
            self.state = jsonpatch.apply_patch(self.state, event.delta)
        elif kind == "MESSAGES_SNAPSHOT":
            self.messages = [m.model_dump(by_alias=True, exclude_none=True) for m in event.messages]
            self.by_id = {m["id"]: m for m in self.messages}
        elif kind == "RUN_STARTED":
            self.status = "running"
        elif kind == "RUN_FINISHED":
            self.status = "finished"
        elif kind == "RUN_ERROR":
            self.status = "error"

    async def stream(self, http: httpx.AsyncClient, url: str, run_id: str) -> AsyncIterator[Any]:
        """POST a run and yield its events, each folded before it is yielded."""
        body = {"threadId": self.thread_id, "runId": run_id, "messages": [], "tools": [], "context": [],
                "state": self.state, "forwardedProps": {}}
        async with http.stream("POST", url, json=body, headers={"Accept": "text/event-stream"}) as response:
            response.raise_for_status()
            async for line in response.aiter_lines():
                if line.startswith("data:"):
                    event = EVENT.validate_json(line[5:])
                    self.apply(event)
                    yield event

    async def run(self, http: httpx.AsyncClient, url: str, run_id: str) -> int:
        """POST a run and fold it to the end; the number of events."""
        count = 0
        async for _ in self.stream(http, url, run_id):
            count += 1
        return count
