"""What a newcomer meets first: the objects they print, a client used after it was closed, the CLI's
spelling of the thread option.

Every object a user holds in a script (the client, a thread, a stream, a resume builder) prints as
what it is about, never as ``<... object at 0x...>``, and never with a credential. Against the bundled
ScriptedAgent on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from clikit import agui_here

import agui_client as ag
from agui_client.stores import SqliteStore
from agui_client.testing import Disconnect, Gate, Respond, ScriptedAgent, Start, Wait, serve, text_message


def test_a_client_prints_its_agent_url_without_credentials_and_its_store() -> None:
    client = ag.AgentClient("https://bob:pa55word@agent.example/run?token=tok-123&v=2", headers={"X-Api-Key": "k-9"},
                            sensitive_headers=["v"])

    shown = repr(client)
    client.close()

    assert shown == "<AgentClient url='https://agent.example/run?token=[redacted]&v=[redacted]' store=MemoryStore>"
    assert repr(client).endswith(" closed>")


def test_an_async_client_prints_the_same_way(tmp_path: Any) -> None:
    async def main() -> tuple[str, str]:
        async with ag.AsyncAgentClient("http://127.0.0.1:9/agent", store=SqliteStore(tmp_path / "t.db")) as client:
            opened = repr(client)
        return opened, repr(client)

    opened, closed = asyncio.run(main())

    assert opened == "<AsyncAgentClient url='http://127.0.0.1:9/agent' store=SqliteStore>"
    assert closed == "<AsyncAgentClient url='http://127.0.0.1:9/agent' store=SqliteStore closed>"


def test_a_thread_a_stream_and_a_builder_print_where_the_conversation_stands() -> None:
    with serve(ScriptedAgent.interrupts(2)) as server, ag.AgentClient(server.url) as client:
        thread = client.thread("ticket-1")
        assert repr(thread) == "<Thread id='ticket-1' version=None messages=0 open_interrupts=[]>"

        with thread.stream("Plan the trip", run_id="r1") as stream:
            assert repr(stream) == "<RunStream thread_id='ticket-1' run_id='r1' streaming>"
            result = stream.get_final_result()
        assert repr(stream) == "<RunStream thread_id='ticket-1' run_id='r1' ended outcome='interrupt'>"
        first, second = (i.id for i in result.interrupts)
        assert repr(thread) == (f"<Thread id='ticket-1' version={thread.version} "
                                f"messages={len(thread.state.messages)} open_interrupts={[first, second]!r}>")

        # The folded state prints as the thread does: counts and ids, never the agent's text or state.
        assert repr(thread.state) == (f"<ThreadState thread_id='ticket-1' runs=1 messages={len(thread.state.messages)} "
                                      f"open_interrupts={[first, second]!r} pending_tool_calls=[]>")
        assert "Plan the trip" not in repr(thread.state)

        builder = thread.resume_builder().answer(first, {"answer": "yes"})
        assert repr(builder) == (f"<ResumeBuilder thread_id='ticket-1' run_id='r1' answered={[first]!r} "
                                 f"abandoned=[] uncovered={[second]!r}>")
        builder.abandon(second)
        assert "answered=" in repr(builder) and f"abandoned={[second]!r} uncovered=[]>" in repr(builder)
        assert "yes" not in repr(builder)  # (the payloads are never shown)


def test_a_builder_made_by_hand_prints_as_unbound() -> None:
    interrupts = [ag.Interrupt(id=f"i{n}", reason="input") for n in range(12)]

    builder = ag.ResumeBuilder(interrupts).answer("i0", {"x": 1})

    assert repr(builder).startswith("<ResumeBuilder unbound answered=['i0'] abandoned=[] uncovered=['i1', ")
    assert repr(builder).endswith(", ...] (1 more)>")  # (a long list is cut, as a refusal's is)


def test_a_failed_stream_prints_as_failed() -> None:
    with serve(ScriptedAgent([[ag.RunStartedEvent(thread_id="t", run_id="r")]])) as server, \
            ag.AgentClient(server.url) as client:
        thread = client.thread("t")
        with pytest.raises(ag.StreamEnded):
            with thread.stream("hi", run_id="r") as stream:
                stream.get_final_result()

    assert repr(stream) == "<RunStream thread_id='t' run_id='r' failed (StreamEnded)>"


def test_an_async_thread_and_stream_print_as_the_sync_ones_do() -> None:
    async def main(url: str) -> list[str]:
        async with ag.AsyncAgentClient(url) as client:
            thread = await client.load_thread("t-async")
            async with thread.stream("hi", run_id="r1") as stream:
                await stream.get_final_result()
            return [repr(thread), repr(stream)]

    with serve(ScriptedAgent.chat()) as server:
        thread_shown, stream_shown = asyncio.run(main(server.url))

    assert thread_shown.startswith("<AsyncThread id='t-async' version=") and "open_interrupts=[]>" in thread_shown
    assert stream_shown == "<AsyncRunStream thread_id='t-async' run_id='r1' ended outcome='success'>"


def test_a_closed_client_says_it_is_closed_rather_than_that_its_store_is() -> None:
    client = ag.AgentClient("http://127.0.0.1:9/agent")
    client.close()

    with pytest.raises(RuntimeError) as refused:
        client.thread()
    assert "this AgentClient is closed: make a new one, or use it inside its `with`" in str(refused.value)
    with pytest.raises(RuntimeError) as refused:
        client.load_thread("t1")
    assert "this AgentClient is closed" in str(refused.value)


def test_a_closed_async_client_says_so_too() -> None:
    async def main() -> None:
        async with ag.AsyncAgentClient("http://127.0.0.1:9/agent") as client:
            pass
        with pytest.raises(RuntimeError) as refused:
            await client.load_thread()
        assert str(refused.value).startswith("this AsyncAgentClient is closed: ")
        assert str(refused.value).endswith(" its `async with` block")
        with pytest.raises(RuntimeError) as refused:
            client.thread()
        assert "this AsyncAgentClient is closed" in str(refused.value)

    asyncio.run(main())


def test_agui_run_takes_thread_as_agui_chat_does(served: Callable[[Any], Any]) -> None:
    endpoint = served(ScriptedAgent.chat())

    done = agui_here("run", endpoint.url, "-m", "hi", "--thread", "my-thread")

    assert done.returncode == 0, done.stderr
    assert endpoint.received[0].body["threadId"] == "my-thread"


def test_run_until_done_names_itself_and_where_tool_handlers_go_for_a_keyword_run_does_not_take() -> None:
    agent = ScriptedAgent.frontend_tool("confirm_choice")
    with serve(agent) as server, ag.AgentClient(server.url) as client:
        thread = client.thread()
        with pytest.raises(TypeError) as refused:
            thread.run_until_done("Pick one", tool_handlers={"confirm_choice": lambda question: "a"})
        assert str(refused.value).startswith(
            "run_until_done() got unexpected keyword argument(s) ['tool_handlers'] (the handlers are the thread's: "
            "client.thread(tool_handlers=...)); it takes message, max_steps and run()'s keywords: resume, tools, ")
        assert str(refused.value).endswith("run_timeout, headers")  # (run()'s keywords, whatever they are between)

        # (nothing was sent; the keywords run() takes still pass through)
        assert agent.request_count == 0
        thread = client.thread(tool_handlers={"confirm_choice": lambda question: "a"})
        assert thread.run_until_done("Pick one", run_timeout=30, context=[]).outcome == "success"
        assert agent.request_count == 2


def test_the_async_run_until_done_refuses_the_same_way() -> None:
    async def main(url: str) -> None:
        async with ag.AsyncAgentClient(url) as client:
            thread = await client.load_thread()
            with pytest.raises(TypeError) as refused:
                await thread.run_until_done("hi", timeout=3)
            assert str(refused.value).startswith("run_until_done() got unexpected keyword argument(s) ['timeout'];")

    agent = ScriptedAgent.chat()
    with serve(agent) as server:
        asyncio.run(main(server.url))
    assert agent.request_count == 0


def test_a_protocol_error_repr_says_where_as_its_str_does() -> None:
    agent = ScriptedAgent([[ag.RunStartedEvent(thread_id="t", run_id="r"), *text_message("m1", "Hi")]])
    with serve(agent) as server, ag.AgentClient(server.url) as client:
        with pytest.raises(ag.StreamEnded) as caught:
            client.thread("t").run("hi", run_id="r")

    assert repr(caught.value) == ("StreamEnded(\"run 'r', event #4, [LC-04/AGUI003]: the stream ended without "
                                  "RUN_FINISHED or RUN_ERROR\")")
    assert caught.value.result is not None and caught.value.result.text == "Hi"


def test_a_builder_used_twice_is_refused_saying_its_interrupts_were_answered() -> None:
    agent = ScriptedAgent.demo()
    with serve(agent) as server, ag.AgentClient(server.url) as client:
        thread = client.thread()
        asked = thread.run("Delete the staging database", run_id="r1")
        builder = thread.resume_builder().answer(asked.interrupts[0].id, {"approved": True})
        assert thread.run(resume=builder, run_id="r2").outcome == "success"

        with pytest.raises(ag.MisdirectedResume) as caught:
            thread.run(resume=builder)  # (kept, and sent again)

    assert str(caught.value) == ("resume refused, nothing was sent: the builder was made for the interrupts of run "
                                 "'r1', and the thread waits on none now (run 'r2', after it, answered or abandoned "
                                 "them) (make a new one with thread.resume_builder())")
    assert agent.request_count == 2


def test_a_claim_lost_to_another_writer_says_nothing_was_sent_and_how_to_catch_up() -> None:
    agent = ScriptedAgent.chat()
    with serve(agent) as server, ag.AgentClient(server.url) as client:
        first, second = client.thread("t"), client.thread("t")  # (two objects, as two replicas would hold)
        first.run("hello")

        with pytest.raises(ag.ConcurrentResume) as caught:
            second.run("hello too")

        assert str(caught.value).endswith(". Nothing was sent: thread.reload() catches up with the stored thread, "
                                          "then run again")
        assert agent.request_count == 1
        second.reload()  # (and the advice holds)
        assert second.run("hello too").outcome == "success"


@pytest.mark.parametrize("status", [404, 405])
def test_a_404_or_405_asks_whether_the_url_is_the_agents_endpoint(served: Callable[[Any], Any], status: int) -> None:
    endpoint = served(ScriptedAgent([Respond(status=status, body={"detail": "Not Found"})]))

    with ag.AgentClient(endpoint.url) as client, pytest.raises(ag.HTTPStatusError) as caught:
        client.thread().run("hi")

    assert str(caught.value).endswith(': {"detail":"Not Found"} (is this the agent\'s endpoint? AG-UI runs are '
                                      "POSTed to the URL the agent serves them on)")
    assert caught.value.body == '{"detail":"Not Found"}'  # (the attributes keep what the agent said, alone)
    assert caught.value.hint == ("is this the agent's endpoint? AG-UI runs are POSTed to the URL the agent serves "
                                 "them on")


def test_agui_run_keeps_the_endpoint_hint_when_it_shows_a_json_404_whole(served: Callable[[Any], Any]) -> None:
    # FastAPI's answer to a wrong path: the CLI shows its JSON detail on a line of its own, cutting the
    # message before the excerpt of the body, and the hint that ended the message was cut with it.
    endpoint = served(ScriptedAgent([Respond(status=404, body={"detail": "Not Found"})]))

    done = agui_here("run", endpoint.url, "-m", "hi", "--plain")

    assert done.returncode == 1
    assert done.stdout.splitlines()[-3:] == [
        f"  HTTP 404 Not Found from POST {endpoint.url}", "  Not Found",
        "  is this the agent's endpoint? AG-UI runs are POSTed to the URL the agent serves them on"]


def test_another_status_gets_no_such_hint(served: Callable[[Any], Any]) -> None:
    endpoint = served(ScriptedAgent([Respond(status=500, body="down")]))

    with ag.AgentClient(endpoint.url) as client, pytest.raises(ag.HTTPStatusError) as caught:
        client.thread().run("hi")

    assert str(caught.value).endswith(" from POST " + endpoint.url + ": down")


def test_an_idle_timeout_names_the_setting_that_ended_the_run_and_what_to_do(
        drive: Any, served: Callable[[Any], Any], gate: Gate) -> None:
    # A model thinking before its first token is as silent as a dead agent: the message says which
    # bound ended the run, so the caller can tell whether to wait longer (it said "no bytes ... for
    # 0.3s" alone, which names no setting).
    endpoint = served(ScriptedAgent([[Start(), Wait(gate, timeout=30)]]))

    with drive.client(endpoint.url, idle_timeout=0.3) as client, pytest.raises(ag.IdleTimeout) as caught:
        client.thread().run("hi")
    gate.open()

    assert caught.value.timeout == 0.3
    assert str(caught.value).endswith(f"no bytes from {endpoint.url} for 0.3s: that is the client's idle_timeout; "
                                      "raise it for an agent that works longer without sending (a keep-alive "
                                      "comment also resets the wait)")


INCOMPLETE = "ASGI callable returned without completing response."


def _cut_on_purpose() -> None:
    agent = ScriptedAgent([[ag.RunStartedEvent(thread_id="t", run_id="r"), Disconnect()]])
    with serve(agent) as server, ag.AgentClient(server.url) as client:
        with pytest.raises(ag.StreamEnded):
            client.thread("t").run("hi", run_id="r")


def test_a_disconnect_step_cuts_the_stream_without_the_server_logging_an_error(
        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        _cut_on_purpose()

    # (uvicorn logs before it closes the connection, so a record would be here by now)
    assert [r.getMessage() for r in caplog.records if r.name == "uvicorn.error"] == []


def test_another_app_that_leaves_a_response_incomplete_is_still_logged(caplog: pytest.LogCaptureFixture) -> None:
    async def broken(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": b"half", "more_body": True})

    _cut_on_purpose()  # (an agent has cut a response on purpose in this process: the filter is installed)
    with caplog.at_level(logging.WARNING), serve(broken) as server:
        with pytest.raises(httpx.RemoteProtocolError):
            httpx.get(server.url)

    assert INCOMPLETE in [r.getMessage() for r in caplog.records if r.name == "uvicorn.error"]


@pytest.mark.parametrize(("url", "said"), [
    ("localhost:8000/agent?token=abc", "has no scheme: write it as http://localhost:8000/agent?token=[redacted]"),
    ("", "is empty"),
    ("ftp://agent.example/run", "must start with http:// or https://, not ftp://"),
    ("http:///agent", "has no host: http:///agent"),
    ("http://agent.example:port/", "cannot be read: Invalid port: 'port'"),
    ("http://agent.example:99999/", "has port 99999: a port is 1 to 65535"),
    (" http://agent.example/", "starts or ends with a blank"),
    ("http:/agent.example/run", "has no scheme (http:// or https://)"),
])
@pytest.mark.parametrize("shell", ["sync", "async"])
def test_a_url_no_run_could_reach_is_refused_when_the_client_is_made(url: str, said: str, shell: str) -> None:
    # httpx refuses such a URL only when a request goes out: at the first run, as a transport failure,
    # after a thread was claimed. The client says so at once, without the URL's secrets.
    with pytest.raises(ValueError) as caught:
        if shell == "sync":
            ag.AgentClient(url)
        else:
            asyncio.run(_made(url))
    assert str(caught.value).startswith("the agent's URL ")
    assert said in str(caught.value)
    assert "abc" not in str(caught.value)


async def _made(url: str) -> None:
    ag.AsyncAgentClient(url)


def test_httpxs_reason_is_left_out_where_it_could_quote_a_password() -> None:
    # (a password holding "/" makes httpx read part of it as the port, and quote it)
    with pytest.raises(ValueError) as caught:
        ag.AgentClient("https://user:s3cr3t/x@agent.example/")
    assert str(caught.value) == "the agent's URL cannot be read"


@pytest.mark.parametrize("url", ["http://[::1]:8080/agent", "http://localhost", "https://a.example/x?y=1#f"])
def test_urls_people_use_are_accepted(url: str) -> None:
    ag.AgentClient(url).close()


def test_a_relative_url_goes_to_the_http_clients_base_url_as_httpx_sends_it() -> None:
    agent = ScriptedAgent.chat()
    with serve(agent) as server, httpx.Client(base_url=server.url.rsplit("/", 1)[0]) as http, \
            ag.AgentClient("/" + server.url.rsplit("/", 1)[1], http_client=http) as client:
        assert client.thread().run("hi").outcome == "success"
    assert agent.request_count == 1
    with httpx.Client() as http, pytest.raises(ValueError) as caught:  # (no base_url: nowhere to go)
        ag.AgentClient("/agent", http_client=http)
    assert str(caught.value) == "the agent's URL has no scheme (http:// or https://)"


def test_a_client_given_its_own_http_client_may_use_another_scheme() -> None:
    # (its transports may be mounted for any scheme; a URL without a host is still refused)
    with httpx.Client() as http:
        ag.AgentClient("unix+http://agent.sock/run", http_client=http).close()
        with pytest.raises(ValueError) as refused:
            ag.AgentClient("http:///agent", http_client=http)
        assert "has no host" in str(refused.value)


@pytest.mark.parametrize("command", ["run", "chat"])
def test_agui_says_a_url_without_a_scheme_is_not_one_before_anything_starts(command: str) -> None:
    done = agui_here(command, "agent.example/run?api_key=hush")

    assert done.returncode == 2
    assert done.stderr.strip() == (f"agui {command}: the agent's URL has no scheme: write it as "
                                   "http://agent.example/run?api_key=[redacted] (or https://)")
    assert "chat with" not in done.stdout and "hush" not in done.stdout + done.stderr
