"""The finish of a close httpcore left cut (``_closing.finish_sync_close``), run after every close of a run's
response, leaves alone a connection its close gave back whole.

A connection closed whole is back in the pool, and another request may take it at any moment. The finish
looked at whether another request held the connection, then at whether the connection was in the middle
of an answer: a request that took it between the two looks was found "in the middle of an answer nobody
holds", and its connection was closed under it (its read failed, ``Bad file descriptor``). The moment is
reached by a hook on the connection's ``is_idle``, which starts that other request there (a real server on
127.0.0.1).
"""

from __future__ import annotations

import threading
from typing import Any

import httpx

from agui_client._closing import finish_sync_close
from agui_client.testing import Finish, Gate, ScriptedAgent, Start, Wait, text_message

#: The longest a wait of this test may take before the test fails (a hang, not a slow machine).
BOUND = 10.0


def run_input(run_id: str) -> dict[str, Any]:
    return {"threadId": "t", "runId": run_id, "messages": [], "tools": [], "context": [], "state": None,
            "forwardedProps": None}


def test_a_connection_another_request_took_after_a_whole_close_is_left_to_it(served: Any, gate: Gate) -> None:
    endpoint = served(ScriptedAgent([[Start(), Finish()],
                                     [Start(), Wait(gate), *text_message("m", "after the gate"), Finish()]]))
    other: dict[str, Any] = {}
    started = threading.Event()

    with httpx.Client(limits=httpx.Limits(max_connections=1), timeout=BOUND) as http:
        def second_request() -> None:
            try:
                other["response"] = http.send(http.build_request("POST", endpoint.url, json=run_input("r2")),
                                              stream=True)
            except BaseException as exc:  # (the test says what it was)
                other["error"] = exc
            started.set()

        first = http.send(http.build_request("POST", endpoint.url, json=run_input("r1")), stream=True)
        first.read()
        first.close()  # (whole: its connection idle in the pool again)
        (pooled,) = http._transport._pool.connections  # type: ignore[attr-defined]
        connection = pooled._connection
        is_idle = connection.is_idle

        def taken_meanwhile() -> bool:
            # (the moment: another request takes the idle connection and is answered on it, then the look;
            # the pool itself looks too, from that request's thread, as it hands the connection out)
            if threading.current_thread() is finishing and not started.is_set():
                threading.Thread(target=second_request, daemon=True).start()
                assert started.wait(BOUND), "the second request never got its answer's head"
            return bool(is_idle())

        finishing = threading.current_thread()
        connection.is_idle = taken_meanwhile
        try:
            finish_sync_close(first)
        finally:
            del connection.is_idle
        if not started.is_set():
            second_request()
        assert "error" not in other, other.get("error")
        gate.open()
        second = other["response"]
        body = second.read()
        second.close()

    assert second.status_code == 200
    assert b'"type":"RUN_FINISHED"' in body  # (read to its end on the connection it was answered on)
