"""Every place text leaves the client, audited once more for the caller's credentials (the eighteenth round).

Each test holds a channel an earlier audit (``test_secrets.py``, ``test_attack_charsets.py``,
``test_attack_audit.py``) left open: a cookie list whose first pair is the session, the exceptions
under httpx's own in a traceback, an error copied or pickled, and the traceback the CLI prints for a
fault nobody foresaw.
"""

from __future__ import annotations

import builtins
import copy
import errno
import importlib
import pickle
import threading
import traceback
from typing import Any

import attrs
import httpx
import pytest
from serverkit import free_port

import agui_client as ag
from agui_client.core.redact import Redactor, exception_chain, redact_exception

# (Python 3.11's, or the backport anyio brings to 3.10)
_GROUP: Any = getattr(builtins, "ExceptionGroup", None) or importlib.import_module("exceptiongroup").ExceptionGroup

MARK = "[redacted]"
TOKEN = "sk-live-2B3c4D5e6F7a8b9C"
SESSION = "s3ss-9f8e7d6c5b4a"
QUERY_KEY = "qk-0a1b2c3d4e5f6a7b"
PASSWORD = "pa55-w0rd-long-4321"
PROXY_PASSWORD = "pr0xy-pass-8765"
SECRETS = (TOKEN, SESSION, QUERY_KEY, PASSWORD, PROXY_PASSWORD)


def _found(text: str) -> list[str]:
    return [secret for secret in SECRETS if secret in text]


def _printed(error: BaseException) -> str:
    """What a traceback of ``error`` prints, and its repr and attributes."""
    return "".join(traceback.format_exception(error)) + repr(error) + repr(vars(error))


def _run_refused(drive: Any, refuse: Any) -> ag.TransportError:
    """The error of a run sent, with credentials in its URL, through a transport that raises as ``refuse``."""
    url = f"http://bob:{PASSWORD}@127.0.0.1:9/run?api_key={QUERY_KEY}"
    with drive.client(url, http_client=drive.mock(refuse)) as client:
        with pytest.raises(ag.TransportError) as caught:
            client.thread().run("hi")
    return caught.value


def test_a_cookie_whose_first_pair_is_the_session_has_that_value_redacted_alone(drive: Any, served: Any) -> None:
    # "session=…; theme=dark" was taken for a credential after a scheme ("session=…;"), so only the whole
    # value and "dark" were looked for: an agent echoing the session value alone showed it.
    async def app(scope: Any, receive: Any, send: Any) -> None:
        cookie = dict(scope["headers"])[b"cookie"].decode()
        session = cookie.split(";")[0].partition("=")[2]
        await send({"type": "http.response.start", "status": 403, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": f"unknown session {session}".encode()})

    endpoint = served(app)
    with drive.client(endpoint.url, headers={"Cookie": f"session={SESSION}; theme=dark"}) as client:
        with pytest.raises(ag.HTTPStatusError) as caught:
            client.thread().run("hi")

    assert caught.value.body == f"unknown session {MARK}"
    assert _found(_printed(caught.value)) == []


def test_the_exceptions_under_httpxs_error_are_redacted_to_the_end_of_the_chain(drive: Any) -> None:
    # httpx's error was redacted, as the cause a traceback prints; what it was raised from, or while
    # handling, was printed as it came (a transport quoting the URL it could not reach, userinfo and all).
    # (a fault only a transport makes: no server on 127.0.0.1 raises inside the client's transport)
    def refuse(request: httpx.Request) -> httpx.Response:
        try:
            try:
                raise OSError(errno.ECONNREFUSED, f"refused by {request.url}", str(request.url))
            except OSError:
                raise ValueError(f"while reaching {request.url}")  # noqa: B904 - (raised while handling: the context)
        except ValueError as handling:
            note = ConnectionError(f"retried {request.url}")
            note.add_note(f"last tried {request.url}")
            raise httpx.ConnectError("refused", request=request) from _GROUP("tries", [handling, note])

    error = _run_refused(drive, refuse)

    printed = _printed(error)
    assert "OSError" in printed and "ValueError" in printed and "ConnectionError" in printed
    assert _found(printed) == []
    assert f"?api_key={MARK}" in printed


@attrs.frozen(auto_exc=True)
class _Refused(Exception):
    """A transport's own error, as ``attrs`` writes one: frozen, its fields in slots."""

    detail: str


class _Sealed(Exception):
    """An exception whose class runs code on every attribute set, and refuses it."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        object.__setattr__(self, "where", message)

    def __setattr__(self, name: str, value: Any) -> None:
        raise RuntimeError(f"{type(self).__name__} is sealed")


def _held_by_httpx(error: BaseException) -> str:
    """What the httpx errors in ``error``'s chain hold of the request they failed on: its URL and headers."""
    return "".join(f"{link.request.url} {link.request.headers.multi_items()}" for link in exception_chain(error)
                   if isinstance(link, httpx.HTTPError) and link._request is not None)


def _silent_after_start(scope: Any, receive: Any, send: Any) -> Any:
    async def app() -> None:
        await receive()  # (the request)
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
        await send({"type": "http.response.body", "more_body": True,
                    "body": b'data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\n'})
        await receive()  # (silent until the client, its idle timeout past, hangs up)
    return app()


@pytest.mark.parametrize("failure", ["refused", "silent"])
def test_httpxs_error_under_ours_holds_the_request_redacted(drive: Any, served: Any, failure: str) -> None:
    # The error's own ``.request`` was the redacted copy, but httpx's error kept as its cause still held the
    # request as sent: its URL's userinfo and secret query values and every header, the credential too.
    # Code reading ``error.__cause__.request`` (an error reporter walking the chain) got them, and so did
    # whoever unpickled the error (a worker process handing it back).
    if failure == "refused":  # (a port nothing listens on: httpx's ConnectError, raised while sending)
        url, expected = f"http://127.0.0.1:{free_port()}/agent", ag.TransportError
    else:  # (an agent silent mid-stream: httpx's ReadTimeout, raised while reading)
        url, expected = served(_silent_after_start).url, ag.IdleTimeout
    url = url.replace("http://", f"http://bob:{PASSWORD}@") + f"?api_key={QUERY_KEY}"
    with drive.client(url, headers={"Authorization": f"Bearer {TOKEN}"}, idle_timeout=0.2) as client:
        with pytest.raises(expected) as caught:
            client.thread().run("hi")

    error = caught.value
    held = _held_by_httpx(error.__cause__)
    assert held and _found(held) == [] and f"api_key={MARK}" in held
    assert "('authorization', '[redacted]')" in held
    assert _found(pickle.dumps(error).decode("latin-1")) == []


def test_a_frozen_slotted_exception_under_httpxs_error_is_redacted_not_raised(drive: Any) -> None:
    # Walking the chain set each link's attributes: a frozen attrs exception refused, and its
    # FrozenInstanceError replaced the run's TransportError (so did the error of a class whose
    # __setattr__ raises); its slotted field was never looked at.
    # A UnicodeError's message is made of its reason, as an OSError's is of its strerror.
    def refuse(request: httpx.Request) -> httpx.Response:
        try:
            raise UnicodeDecodeError("utf-8", b"\xff", 0, 1, f"in {request.url}")
        except UnicodeDecodeError:
            try:
                raise _Refused(f"no route to {request.url}")  # noqa: B904 - (raised while handling: the context)
            except _Refused:
                try:
                    raise _Sealed(f"gave up on {request.url}")  # noqa: B904 - (as above)
                except _Sealed as sealed:
                    raise httpx.ConnectError("refused", request=request) from sealed

    error = _run_refused(drive, refuse)

    printed = _printed(error)
    assert "_Refused" in printed and "UnicodeDecodeError" in printed and "_Sealed" in printed
    assert _found(printed) == []
    # (the slotted field itself, which code handling the error reads, not only the message made of it)
    chain, link = [], error.__cause__
    while link is not None:
        chain.append(link)
        link = link.__cause__ or link.__context__
    refused = [e for e in chain if isinstance(e, _Refused)]
    assert len(refused) == 1 and _found(refused[0].detail) == [] and MARK in refused[0].detail


def test_an_error_is_copied_and_pickled_as_it_was_redacted(drive: Any, served: Any) -> None:
    # copy.copy() and pickle.loads() called the error's constructor with its args alone, which lack its
    # keyword-only arguments: both raised TypeError (a worker process could not hand its error back).
    async def app(scope: Any, receive: Any, send: Any) -> None:
        echoed = dict(scope["headers"])[b"authorization"]
        await send({"type": "http.response.start", "status": 401, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": b"refused " + echoed})

    endpoint = served(app)
    with drive.client(endpoint.url + f"?api_key={QUERY_KEY}", headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        with pytest.raises(ag.AuthenticationError) as caught:
            client.thread().run("hi")

    error = caught.value
    pickled = pickle.dumps(error)
    assert _found(pickled.decode("latin-1")) == []
    for twin in (copy.copy(error), copy.deepcopy(error), pickle.loads(pickled)):
        assert type(twin) is ag.AuthenticationError
        assert (str(twin), twin.status_code, twin.body, twin.url) == (str(error), 401, f"refused {MARK}", error.url)
        assert twin.response.text == error.response.text and twin.request.headers["authorization"] == MARK
        assert _found(_printed(twin)) == []


def test_an_unforeseen_faults_traceback_in_the_cli_has_no_credential_of_its_command_line(
        monkeypatch: Any, capsys: Any) -> None:
    # A fault nobody foresaw printed its traceback as it came (made inert, cut): one quoting the request
    # the CLI built showed the -H values, the URL's userinfo and secret query value, and the proxy's password.
    from agui_client import cli
    from agui_client.cli import app

    url = f"http://bob:{PASSWORD}@127.0.0.1:9/run?api_key={QUERY_KEY}"
    proxy = f"http://proxy-user:{PROXY_PASSWORD}@127.0.0.1:3128"  # (the CLI sends through the environment's)

    def fault(argv: Any) -> int:
        raise RuntimeError(f"cannot send to {url} with Bearer {TOKEN} and session={SESSION} through {proxy}")

    monkeypatch.setattr(app, "run_cli", fault)
    monkeypatch.setenv("HTTPS_PROXY", proxy)
    assert cli.main(["run", url, "-H", f"Authorization: Bearer {TOKEN}", f"--header=Cookie: session={SESSION}",
                     "-m", "hi"]) == 1
    printed = capsys.readouterr().err
    assert "Traceback" in printed and "RuntimeError: cannot send to" in printed
    assert _found(printed) == []


@pytest.mark.parametrize("given", [["--head", f"Authorization: Bearer {TOKEN}"],
                                   [f"--hea=Authorization: Bearer {TOKEN}"],
                                   [f"-HAuthorization: Bearer {TOKEN}"]])  # (and -H with its value attached)
def test_an_unforeseen_faults_traceback_has_no_header_given_by_an_abbreviated_option(
        monkeypatch: Any, capsys: Any, given: list[str]) -> None:
    # argparse takes any unambiguous start of --header for it, as the CLI's parser does: the traceback's
    # redactor read only -H and --header, and showed the value given after --head.
    from agui_client import cli
    from agui_client.cli import app

    def fault(argv: Any) -> int:
        assert app.build_parser().parse_args(argv).header == [f"Authorization: Bearer {TOKEN}"]
        raise RuntimeError(f"cannot send with Bearer {TOKEN}")

    monkeypatch.setattr(app, "run_cli", fault)
    assert cli.main(["run", "http://127.0.0.1:9/run", *given, "-m", "hi"]) == 1
    printed = capsys.readouterr().err
    assert "RuntimeError: cannot send with [redacted]" in printed
    assert _found(printed) == []


def test_a_response_header_named_after_the_credential_is_shown_redacted(drive: Any, served: Any) -> None:
    # The error's .response had each header's value redacted but not its name: an agent echoing the key
    # as a header's name ("x-sk-live-…: 1", a valid HTTP token) handed it to whoever logged the headers.
    async def app(scope: Any, receive: Any, send: Any) -> None:
        key = dict(scope["headers"])[b"x-api-key"]
        await send({"type": "http.response.start", "status": 400,
                    "headers": [(b"content-type", b"text/plain"), (b"x-" + key, b"1"), (b"x-echo", key)]})
        await send({"type": "http.response.body", "body": b"bad request"})

    endpoint = served(app)
    with drive.client(endpoint.url, headers={"X-Api-Key": TOKEN}) as client:
        with pytest.raises(ag.HTTPStatusError) as caught:
            client.thread().run("hi")

    headers = caught.value.response.headers
    assert headers[f"x-{MARK}"] == "1" and headers["x-echo"] == MARK
    assert _found(repr(headers.raw) + _printed(caught.value)) == []


@pytest.mark.parametrize("dsn", [
    f"host=127.0.0.1 port=1 user=app password=s3cret {PASSWORD}",  # (a password holding an unquoted space)
    f"postgresql://app:{PASSWORD}@127.0.0.1:1/app?sslmode={PASSWORD}",
])
def test_a_postgres_store_error_quotes_no_part_of_the_dsns_password(dsn: str) -> None:
    # libpq quotes the part of a DSN it could not read ('missing "=" after "pa55-…"'): the store's error,
    # and psycopg's kept as its cause, showed it (the comment said libpq never names the password).
    from agui_client.stores.postgres import PostgresStore

    with pytest.raises(ag.StoreError) as caught:
        PostgresStore(dsn, connect_timeout=1)  # (it makes its table: the first connection is made here)

    printed = _printed(caught.value)
    assert MARK in str(caught.value) and _found(printed) == [] and "s3cret" not in printed


def test_a_recording_writes_an_unknown_content_coding_without_the_credential(tmp_path: Any, served: Any) -> None:
    # NN.response.json names a coding the recorder does not undo: it was written as the agent sent it,
    # lower-cased, so an agent echoing the key there put it in a file made to be committed.
    from agui_client.testing import RecordingTransport

    async def app(scope: Any, receive: Any, send: Any) -> None:
        key = dict(scope["headers"])[b"x-api-key"]
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream"), (b"content-encoding", b"x-" + key)]})
        await send({"type": "http.response.body", "body": b"data: {}\n\n"})

    endpoint = served(app)
    with httpx.Client(transport=RecordingTransport(tmp_path)) as http, \
            ag.AgentClient(endpoint.url, http_client=http, headers={"X-Api-Key": TOKEN}, telemetry=False) as client:
        with pytest.raises(ag.ProtocolError):
            client.thread().run("hi")

    assert (tmp_path / "01.response.json").read_text().rstrip() == (
        f'{{"status": 200, "contentType": "text/event-stream", "contentEncoding": "x-{MARK}"}}')


@pytest.mark.parametrize("echo", [TOKEN.upper(), TOKEN.lower().replace("sk-", "SK-")])
def test_a_long_credential_echoed_in_another_case_is_redacted(drive: Any, served: Any, echo: str) -> None:
    # The redactor's plain search was already case-blind, its pattern was not: an agent that folds what it
    # quotes to one case (a header name, a path) gave away all but the case of each letter.
    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 403, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": f"key {echo} refused".encode()})

    endpoint = served(app)
    with drive.client(endpoint.url, headers={"X-Api-Key": TOKEN}) as client:
        with pytest.raises(ag.HTTPStatusError) as caught:
            client.thread().run("hi")

    assert caught.value.body == f"key {MARK} refused"
    assert TOKEN.lower() not in _printed(caught.value).lower()


def test_a_chain_of_exceptions_that_loops_is_redacted_once_round_and_the_walk_ends() -> None:
    # An exception raised while handling the one it caused: each is the other's context. The walk
    # redacts both and stops, rather than going round for ever.
    first, second = ValueError(f"token {PASSWORD}"), OSError(f"closing after {PASSWORD}")
    first.__context__, second.__context__ = second, first
    walked: list[BaseException] = []
    walker = threading.Thread(
        target=lambda: walked.append(redact_exception(first, Redactor([PASSWORD]).text)), daemon=True)

    walker.start()
    walker.join(timeout=10)

    assert walked == [first]
    assert str(first) == f"token {MARK}" and str(second) == f"closing after {MARK}"


class _Slotted(Exception):
    """A library's exception keeping a field in a slot (one slot may be named by a string alone)."""

    __slots__ = "detail"


class _MoreSlotted(_Slotted):
    """A subclass of it with a slot of its own."""

    __slots__ = ("more",)


def test_the_slots_of_an_exceptions_base_classes_are_redacted_too() -> None:
    # A field kept in a base class's slot (an exception subclassing a library's slotted one), and a
    # __slots__ given as one string, which is one name and not its letters.
    error = _MoreSlotted("failed")
    error.detail, error.more = f"sent {PASSWORD}", f"with {PASSWORD}"

    redact_exception(error, Redactor([PASSWORD]).text)

    assert (error.detail, error.more) == (f"sent {MARK}", f"with {MARK}")
