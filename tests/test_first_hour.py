"""The mistakes of a first hour with agui_client, each met with a message that says what to do: a
misspelt command or option, an agent's URL that reaches nothing (a closed port, a name that does not
resolve, https:// to a plain-HTTP agent), an agent that wants credentials.

The CLI is run as ``agui`` runs (clikit); the library against real servers on 127.0.0.1, through both
shells.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from clikit import agui_here

import agui_client as ag
from agui_client.testing import Respond, ScriptedAgent


def test_agui_alone_shows_the_help_as_a_usage_error() -> None:
    done = agui_here()

    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith("usage: agui [-h] [--version] COMMAND ...\n\nA command line client for AG-UI 1.0")
    assert "  demo      a conversation with the bundled scripted agent" in done.stderr
    assert "exit status: 0 done" in done.stderr


def test_a_misspelt_command_is_refused_naming_the_one_meant() -> None:
    done = agui_here("rn", "http://127.0.0.1:9/agent")

    assert done.returncode == 2
    assert done.stderr.splitlines()[-1].endswith("invalid choice: 'rn' (choose from 'demo', 'run', 'replay', "
                                                 "'verify', 'probe', 'serve', 'chat', 'explain'); "
                                                 "did you mean run?")


def test_a_word_like_no_command_gets_only_the_list() -> None:
    done = agui_here("launch")

    assert done.returncode == 2
    assert done.stderr.splitlines()[-1].endswith("'chat', 'explain')")


def test_a_misspelt_option_is_refused_under_the_commands_usage_naming_the_one_meant() -> None:
    # argparse leaves an argument a command does not know to the top parser, which showed
    # `usage: agui [-h] [--version] COMMAND ...`: none of the options the user was looking for.
    done = agui_here("run", "--mesage", "hi", "http://127.0.0.1:9/agent")

    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert lines[0].startswith("usage: agui run [-h] [-m MESSAGE]")
    assert lines[-1] == ("agui run: error: unrecognized arguments: --mesage (did you mean --message?) "
                         "http://127.0.0.1:9/agent")


def test_an_option_given_a_value_with_equals_is_matched_by_its_name() -> None:
    done = agui_here("chat", "--threadfile=t.db")

    assert done.returncode == 2
    assert done.stderr.splitlines()[0].startswith("usage: agui chat ")
    assert done.stderr.splitlines()[-1] == ("agui chat: error: unrecognized arguments: --threadfile=t.db "
                                            "(did you mean --thread-file?)")


def test_an_extra_argument_is_refused_by_the_command_it_was_given_to() -> None:
    done = agui_here("verify", "a.jsonl", "b.jsonl")

    assert done.returncode == 2
    assert done.stderr.splitlines() == ["usage: agui verify [-h] [--json] [--plain] DIR|FILE",
                                        "agui verify: error: unrecognized arguments: b.jsonl"]


def test_a_misspelt_choice_of_an_option_names_the_one_meant() -> None:
    done = agui_here("run", "http://127.0.0.1:9/agent", "--legacy-interrupts", "langgrph")

    assert done.returncode == 2
    assert done.stderr.splitlines()[-1].endswith("invalid choice: 'langgrph' (choose from 'langgraph'); "
                                                 "did you mean langgraph?")


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A port of 127.0.0.1 that refuses connections: bound, so nothing else takes it, and not listening."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield held.getsockname()[1]


def _unreachable(drive: Any, url: str) -> ag.TransportError:
    with drive.client(url) as client, pytest.raises(ag.TransportError) as caught:
        client.thread().run("hi")
    assert caught.value.request_sent is False
    return caught.value


def test_a_port_nothing_listens_on_asks_whether_the_agent_runs_there(drive: Any, closed_port: int) -> None:
    refused = _unreachable(drive, f"http://127.0.0.1:{closed_port}/agent")

    assert str(refused).startswith(f"could not reach http://127.0.0.1:{closed_port}/agent: ConnectError: ")
    assert str(refused).endswith(" (is the agent running, and listening on this host and port?)")


@pytest.fixture
def unresolvable(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A name, ``agent.invalid``, that the resolver refuses as a real one refuses a name it cannot find,
    and the list of the times it was asked.

    The machine's resolver is not asked: the suite reaches nothing beyond 127.0.0.1, and a resolver's
    answer for a name depends on the network it can reach. Both
    shells ask ``socket.getaddrinfo``: the sync one directly, asyncio's loop through its executor, which
    looks the function up in the module at each call, so one patch covers them and everything between
    the URL and the error is the client's own path.
    """
    real = socket.getaddrinfo
    asked: list[str] = []

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host != "agent.invalid":
            return real(host, *args, **kwargs)
        asked.append(host)
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return asked


def test_a_host_name_that_does_not_resolve_is_said_to_be_one(drive: Any, unresolvable: list[str]) -> None:
    unresolved = _unreachable(drive, "http://agent.invalid/run")

    assert str(unresolved).endswith(" (the host name does not resolve: is it spelt right?)")
    assert unresolvable == ["agent.invalid"]  # (the client asked the resolver, which refused the name)


def test_https_to_a_plain_http_agent_asks_for_http(drive: Any, served: Callable[[Any], Any]) -> None:
    endpoint = served(ScriptedAgent.chat())

    plain = _unreachable(drive, endpoint.url.replace("http://", "https://", 1))

    assert str(plain).endswith(" (the agent answered without TLS: is its URL http://, not https://?)")
    assert endpoint.agent.request_count == 0


def test_agui_run_says_what_to_check_when_nothing_listens(closed_port: int) -> None:
    done = agui_here("run", f"http://127.0.0.1:{closed_port}/agent", "-m", "hi")

    assert done.returncode == 1
    assert done.stdout.splitlines()[-1].endswith("(is the agent running, and listening on this host and port?)")


_NONE_SENT = ("the agent wants credentials and none were sent: send them in a header (headers= on the client, "
              "-H 'NAME: VALUE' on agui's command line)")
_REFUSED = "the agent refused the credentials sent: are they right, and meant for this agent?"


@pytest.mark.parametrize("status", [401, 403])
def test_a_401_or_403_without_credentials_says_how_to_send_them(
        drive: Any, served: Callable[[Any], Any], status: int) -> None:
    endpoint = served(ScriptedAgent([Respond(status=status, body={"error": "missing api key"})]))

    with drive.client(endpoint.url) as client, pytest.raises(ag.HTTPStatusError) as caught:
        client.thread().run("hi")

    assert caught.value.hint == _NONE_SENT
    assert str(caught.value).endswith(f': {{"error":"missing api key"}} ({_NONE_SENT})')
    assert caught.value.body == '{"error":"missing api key"}'


@pytest.mark.parametrize("status", [401, 403])
def test_a_401_or_403_to_credentials_sent_asks_whether_they_are_right(
        drive: Any, served: Callable[[Any], Any], status: int) -> None:
    endpoint = served(ScriptedAgent([Respond(status=status, body="no")]))

    with drive.client(endpoint.url, headers={"Authorization": "Bearer k-1"}) as client, \
            pytest.raises(ag.HTTPStatusError) as caught:
        client.thread().run("hi")

    assert caught.value.hint == _REFUSED
    assert "k-1" not in str(caught.value)


def test_credentials_an_http_client_of_ones_own_adds_count_as_sent(drive: Any, served: Callable[[Any], Any]) -> None:
    endpoint = served(ScriptedAgent([Respond(status=401, body="no")]))
    http = drive.http_client(auth=httpx.BasicAuth("user", "pa55"))

    with drive.client(endpoint.url, http_client=http) as client, pytest.raises(ag.AuthenticationError) as caught:
        client.thread().run("hi")

    assert caught.value.hint == _REFUSED


def test_agui_run_says_how_to_send_credentials_to_an_agent_that_wants_them(served: Callable[[Any], Any]) -> None:
    endpoint = served(ScriptedAgent([Respond(status=401, body={"detail": "Not authenticated"})]))

    done = agui_here("run", endpoint.url, "-m", "hi")

    assert done.returncode == 1
    assert done.stdout.splitlines()[-3:] == [f"  HTTP 401 Unauthorized from POST {endpoint.url}",
                                             "  Not authenticated", f"  {_NONE_SENT}"]


_NGINX_404 = ("<html>\r\n<head><title>404 Not Found</title>\n<style>body { color: red }</style></head>\r\n"
              "<body>\r\n<!-- a comment --><center><h1>404 Not Found</h1></center>\r\n<hr><center>nginx &amp; co"
              "</center>\r\n<script>alert(1)</script></body>\r\n</html>\r\n")


def test_an_html_error_page_is_quoted_as_its_words(drive: Any, served: Callable[[Any], Any]) -> None:
    # A web server's or a proxy's page for the wrong path: its markup quoted raw buried the words that say
    # what went wrong; .body keeps the page as it came.
    endpoint = served(ScriptedAgent([Respond(status=404, body=_NGINX_404, content_type="text/html")]))

    with drive.client(endpoint.url) as client, pytest.raises(ag.HTTPStatusError) as caught:
        client.thread().run("hi")

    assert str(caught.value) == (f"HTTP 404 Not Found from POST {endpoint.url}: 404 Not Found 404 Not Found nginx & co "
                                 "(is this the agent's endpoint? AG-UI runs are POSTed to the URL the agent serves "
                                 "them on)")
    assert caught.value.body == _NGINX_404


def test_an_html_page_spelling_a_credential_in_entities_is_quoted_redacted(
        drive: Any, served: Callable[[Any], Any]) -> None:
    spelt = "".join(f"&#{ord(c)};" for c in "s3cr3t-t0ken-9")
    endpoint = served(ScriptedAgent([Respond(status=502, body=f"<p>you sent {spelt}</p>", content_type="text/html")]))

    with drive.client(endpoint.url, headers={"Authorization": "Bearer s3cr3t-t0ken-9"}) as client, \
            pytest.raises(ag.HTTPStatusError) as caught:
        client.thread().run("hi")

    assert str(caught.value).endswith(": you sent [redacted]")


_RETRIES_OFF = ("the agent served nothing and asks to be tried again: max_retries= on the client (--max-retries N on "
                "agui's command line) sends the request again by itself")


@pytest.mark.parametrize("answer", [Respond(status=429, body="slow down"),
                                    Respond(status=503, body="maintenance", headers={"Retry-After": "2"})],
                         ids=["429", "503-retry-after"])
def test_an_answer_a_retry_would_have_sent_again_names_the_setting(
        drive: Any, served: Callable[[Any], Any], answer: Respond) -> None:
    endpoint = served(ScriptedAgent([answer]))

    with drive.client(endpoint.url) as client, pytest.raises(ag.HTTPStatusError) as caught:
        client.thread().run("hi")

    assert caught.value.hint == _RETRIES_OFF
    assert str(caught.value).endswith(f": {answer.body} ({_RETRIES_OFF})")
    assert endpoint.agent.request_count == 1


@pytest.mark.parametrize("answer", [Respond(status=503, body="upstream reset"),
                                    Respond(status=429, body="come back tomorrow", headers={"Retry-After": "86400"}),
                                    Respond(status=500, body="down")], ids=["503", "429-a-day", "500"])
def test_an_answer_no_retry_would_send_again_gets_no_such_hint(
        drive: Any, served: Callable[[Any], Any], answer: Respond) -> None:
    endpoint = served(ScriptedAgent([answer]))

    with drive.client(endpoint.url) as client, pytest.raises(ag.HTTPStatusError) as caught:
        client.thread().run("hi")

    assert caught.value.hint is None
    assert str(caught.value).endswith(f": {answer.body}")


def test_retries_spent_get_no_such_hint(drive: Any, served: Callable[[Any], Any]) -> None:
    endpoint = served(ScriptedAgent([Respond(status=429, body="slow down", headers={"Retry-After": "0"})] * 2))

    with drive.client(endpoint.url, max_retries=1) as client, pytest.raises(ag.HTTPStatusError) as caught:
        client.thread().run("hi")

    assert caught.value.hint is None and caught.value.tries == 2
    assert str(caught.value).endswith(": slow down (after 2 tries)")


@pytest.mark.parametrize("command", ["replay", "verify", "serve"])
def test_a_recording_cut_before_its_last_answer_says_so(served: Callable[[Any], Any], tmp_path: Path,
                                                        command: str) -> None:
    # A process killed between writing a request and its answer's head leaves NN.request.json alone:
    # reading said "cannot read .../02.sse: No such file or directory", naming the file but not why.
    endpoint = served(ScriptedAgent.demo())
    assert agui_here("run", endpoint.url, "-m", "delete staging", "--yes", "--record", str(tmp_path)).returncode == 0
    for answer in ("02.sse", "02.response.json"):
        (tmp_path / answer).unlink()
    json.loads((tmp_path / "02.request.json").read_text())  # (the request itself is whole)

    done = agui_here(command, str(tmp_path))

    assert done.returncode == 2
    assert done.stderr.strip() == (f"agui {command}: {tmp_path / '02.request.json'} has no response beside it "
                                   "(02.sse): the recording stopped during that run, before its answer came "
                                   "(move 02.request.json away to read the runs before it)")
    (tmp_path / "02.request.json").rename(tmp_path / "later.json")  # (as the message says)
    if command != "serve":  # (which then serves, until stopped: RecordedAgent's test reads that folder)
        assert agui_here(command, str(tmp_path)).returncode == 0
