"""The transport errors are httpx's too: ``except httpx.HTTPStatusError`` catches an error status, and
``.request`` / ``.response`` are there as httpx sets them, the request's credentials replaced.

The mapping is ``docs/errors-httpx.md``'s table; a real loopback server answers every case here, through
both shells.
"""

from __future__ import annotations

import gzip
import json
import socket
from typing import Any

import httpx
import pytest

import agui_client as ag
from agui_client._answers import ERROR_BODY_LIMIT
from agui_client.testing import Gate, Respond, ScriptedAgent, Start, Wait

TOKEN = "sk-live-7f3a9b2c1d0e"
MARK = "[redacted]"

#: docs/errors-httpx.md's table: each of ours, and the httpx class it also is.
MAPPING = [
    (ag.TransportError, httpx.HTTPError),
    (ag.HTTPStatusError, httpx.HTTPStatusError),
    (ag.AuthenticationError, httpx.HTTPStatusError),
    (ag.ConnectTimeout, httpx.ConnectTimeout),
    (ag.IdleTimeout, httpx.TimeoutException),
    (ag.RunTimeout, httpx.TimeoutException),
]


@pytest.mark.parametrize(("ours", "theirs"), MAPPING, ids=[m[0].__name__ for m in MAPPING])
def test_each_transport_error_is_the_matching_httpx_error(ours: type, theirs: type) -> None:
    assert issubclass(ours, theirs) and issubclass(ours, ag.TransportError) and issubclass(ours, ag.AguiError)


def test_an_error_status_is_never_an_httpx_request_error() -> None:
    # (an application's "retry on RequestError" must not send again a request the agent answered)
    assert not issubclass(ag.HTTPStatusError, httpx.RequestError)
    assert not issubclass(ag.TransportError, httpx.RequestError)


def test_a_protocol_error_is_no_httpx_error() -> None:
    assert not issubclass(ag.ProtocolError, httpx.HTTPError)


def test_an_error_status_caught_as_httpx_has_the_request_and_the_read_response(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent([Respond(status=503, body={"detail": "overloaded"}, headers={"retry-after": "2"})]))

    with drive.client(endpoint.url, headers={"Authorization": f"Bearer {TOKEN}", "X-Tenant": "acme"}) as client:
        with pytest.raises(httpx.HTTPStatusError) as caught:
            client.thread().run("hi")

    error = caught.value
    assert isinstance(error, ag.HTTPStatusError)
    # ours, kept
    assert (error.status_code, error.payload, error.retry_after) == (503, {"detail": "overloaded"}, 2.0)
    # httpx's
    assert error.response.status_code == 503
    assert error.response.json() == {"detail": "overloaded"}
    assert error.response.headers["retry-after"] == "2"
    assert error.request.method == "POST"
    assert str(error.request.url) == endpoint.url
    assert json.loads(error.request.content)["messages"][0]["content"] == "hi"
    assert error.request.headers["authorization"] == MARK
    assert error.request.headers["x-tenant"] == "acme"  # (not a secret: kept)
    assert error.response.request is error.request
    assert TOKEN not in str(error) and TOKEN not in repr(error)


def test_the_response_holds_the_bounded_excerpt_already_read(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent([Respond(status=500, body="x" * (ERROR_BODY_LIMIT * 10))]))

    with drive.client(endpoint.url) as client:
        with pytest.raises(httpx.HTTPStatusError) as caught:
            client.thread().run("hi")

    response = caught.value.response
    assert response.is_stream_consumed and response.text == "x" * ERROR_BODY_LIMIT
    assert isinstance(caught.value, ag.HTTPStatusError) and response.text == caught.value.body


def test_a_compressed_error_body_reads_as_text(drive: Any, served: Any) -> None:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 502,
                    "headers": [(b"content-type", b"text/plain"), (b"content-encoding", b"gzip")]})
        await send({"type": "http.response.body", "body": gzip.compress(b"bad gateway, try later")})

    endpoint = served(app)
    with drive.client(endpoint.url) as client:
        with pytest.raises(httpx.HTTPStatusError) as caught:
            client.thread().run("hi")

    assert caught.value.response.text == "bad gateway, try later"
    assert "content-encoding" not in caught.value.response.headers


@pytest.mark.parametrize("own", [True, False])
def test_an_echoed_credential_is_replaced_in_the_response_body_and_headers(drive: Any, served: Any, own: bool) -> None:
    # ``own``: the client's own httpx client, whose transport drops the agent's Set-Cookie before anyone
    # sees it; a client you pass keeps it, shown redacted.
    async def app(scope: Any, receive: Any, send: Any) -> None:
        authorization = dict(scope["headers"])[b"authorization"]
        await send({"type": "http.response.start", "status": 401,
                    "headers": [(b"content-type", b"text/plain"), (b"x-echo", authorization),
                                (b"set-cookie", b"session=abcdef0123456789")]})
        await send({"type": "http.response.body", "body": b"refused: " + authorization})

    endpoint = served(app)
    http = None if own else drive.http_client()
    with drive.client(endpoint.url, headers={"Authorization": f"Bearer {TOKEN}"}, http_client=http) as client:
        with pytest.raises(httpx.HTTPStatusError) as caught:
            client.thread().run("hi")

    response = caught.value.response
    assert isinstance(caught.value, ag.AuthenticationError)
    assert response.text == f"refused: {MARK}"
    assert response.headers["x-echo"] == MARK
    assert response.headers.get_list("set-cookie") == ([] if own else [MARK])
    assert TOKEN not in repr(caught.value) and TOKEN not in str(caught.value)


def test_a_connection_refused_is_an_httpx_error_with_the_request(drive: Any) -> None:
    with socket.socket() as sock:  # (a port nobody listens on: bound, never listening)
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/agent?api_key={TOKEN}"
        with drive.client(url, headers={"Authorization": f"Bearer {TOKEN}"}) as client:
            with pytest.raises(httpx.HTTPError) as caught:
                client.thread().run("hi")

    error = caught.value
    assert isinstance(error, ag.TransportError) and error.request_sent is False
    assert error.request.headers["authorization"] == MARK
    assert TOKEN not in str(error.request.url) and "api_key" in str(error.request.url)
    assert TOKEN not in str(error) and TOKEN not in repr(error)


def test_an_idle_timeout_is_an_httpx_timeout_with_the_request(drive: Any, served: Any, gate: Gate) -> None:
    endpoint = served(ScriptedAgent([[Start(), Wait(gate, timeout=60)]]))

    with drive.client(endpoint.url, idle_timeout=0.2) as client:
        with pytest.raises(httpx.TimeoutException) as caught:
            client.thread().run("hi")

    assert isinstance(caught.value, ag.IdleTimeout)
    assert str(caught.value.request.url) == endpoint.url


def test_a_run_timeout_is_an_httpx_timeout(drive: Any, served: Any, gate: Gate) -> None:
    endpoint = served(ScriptedAgent([[Start(), Wait(gate, timeout=60)]]))

    with drive.client(endpoint.url, idle_timeout=60, run_timeout=0.2) as client:
        with pytest.raises(httpx.TimeoutException) as caught:
            client.thread().run("hi")

    assert isinstance(caught.value, ag.RunTimeout)
    assert caught.value.request.method == "POST"


def test_an_error_built_by_hand_has_a_response_and_no_request() -> None:
    error = ag.HTTPStatusError("HTTP 500", status_code=500, body="down")

    assert (error.response.status_code, error.response.text) == (500, "down")
    with pytest.raises(RuntimeError):  # (httpx's own answer for a request never set)
        error.request  # noqa: B018


def test_the_request_loses_userinfo_marked_headers_and_secret_query_values(drive: Any, served: Any) -> None:
    endpoint = served(ScriptedAgent([Respond(status=500, body="down")]))
    url = endpoint.url.replace("http://", "http://alice:pa55-w0rd-long@") + f"?token={TOKEN}&lang=en"

    with drive.client(url, headers={"X-Tenant": "tenant-secret-77"}, sensitive_headers=["x-tenant"]) as client:
        with pytest.raises(httpx.HTTPStatusError) as caught:
            client.thread().run("hi")

    request = caught.value.request
    shown = f"{request.url} {request.headers.multi_items()!r}"
    assert request.headers["x-tenant"] == MARK and request.headers["authorization"] == MARK  # (the Basic auth)
    assert "pa55-w0rd-long" not in shown and "tenant-secret-77" not in shown and TOKEN not in shown
    assert request.url.host == "127.0.0.1" and request.url.params["lang"] == "en"
