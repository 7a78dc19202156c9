"""What an AG-UI endpoint does around its answer, for the scripted and the recorded agent alike.

The ASGI plumbing both test agents share: the lifespan protocol, ``POST`` only, the request body read
as a ``RunAgentInput`` (``400`` when it is not one) and a plain HTTP answer written (:func:`respond`).
What each agent answers is its own module's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any

from ..errors import ProtocolError
from ..wire.codec import decode
from ..wire.jsonio import dump_json, parse_json
from ..wire.sink import collect_warnings
from ..wire.types.run import RunAgentInput
from .script import Respond

__all__ = ["Receive", "Scope", "Send", "accept_run", "encode_headers", "respond"]

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


def encode_headers(headers: Mapping[str, str]) -> list[tuple[bytes, bytes]]:
    """A script's response headers as ASGI sends them: names lower-cased, both encoded as Latin-1."""
    return [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers.items()]


async def respond(send: Send, reply: Respond) -> None:
    """Send ``reply`` whole: its status, its headers (a content type chosen from its body unless it
    names one) and its body, with its length."""
    body = reply.body
    if isinstance(body, bytes):
        data, content_type = body, "application/octet-stream"
    elif isinstance(body, str):
        data, content_type = body.encode(), "text/plain; charset=utf-8"
    else:
        data, content_type = dump_json(body), "application/json"
    extra = encode_headers(reply.headers)
    # (a Content-Type given among the headers is the one meant: sent beside the default, the client read the
    # first, the default, and a test of an HTML error page saw text/plain)
    if not any(name == b"content-type" for name, _value in extra):
        extra.insert(0, (b"content-type", (reply.content_type or content_type).encode("latin-1")))
    headers = [*extra, (b"content-length", str(len(data)).encode())]
    await send({"type": "http.response.start", "status": reply.status, "headers": headers})
    await send({"type": "http.response.body", "body": data, "more_body": False})


async def _read_body(receive: Receive) -> bytes:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


async def accept_run(scope: Scope, receive: Receive, send: Send) -> tuple[RunAgentInput, list[str]] | None:
    """What an AG-UI endpoint does before it answers (the scripted and the recorded agent alike):
    lifespan events, POST only (405 otherwise), the body read as a ``RunAgentInput`` (400 when it is
    not one). Returns the input and the decoder's warnings about it, or ``None`` when this call has
    already answered."""
    if scope["type"] == "lifespan":
        await _lifespan(receive, send)
        return None
    if scope["type"] != "http":
        return None
    if scope["method"] != "POST":
        await respond(send, Respond(status=405, body={"detail": "an AG-UI agent answers POST only"},
                                    headers={"allow": "POST"}))
        return None
    body = await _read_body(receive)
    try:
        with collect_warnings() as sink:
            run_input = decode(parse_json(body), RunAgentInput)
    except ProtocolError as exc:
        await respond(send, Respond(status=400, body={"detail": f"not a RunAgentInput: {exc}"}))
        return None
    return run_input, [w.message for w in sink.items]


async def _lifespan(receive: Receive, send: Send) -> None:
    # Under a server that runs the lifespan protocol there is nothing to set up or tear down.
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
