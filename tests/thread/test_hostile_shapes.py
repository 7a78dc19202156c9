"""One hostile agent's endless new shapes leave another agent's new shapes compiled, through both shells
(``Thread.run()`` and ``stream()``) against two ScriptedAgents served by uvicorn on 127.0.0.1: each run's
response pays for its own (``wire.shapes``).
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from wirekit import content_cache

from agui_client import TextMessageContentEvent
from agui_client.testing import Finish, ScriptedAgent, Start
from agui_client.wire import codec, shapes

KEYS = ("type", "messageId", "delta", "timestamp", "rawEvent", "metadata")
VALUES = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "x", "timestamp": 1, "rawEvent": {"r": 1},
          "metadata": {"k": 1}}
ORDINARY = ("type", "messageId", "delta", "timestamp")
#: (between two hostile shapes: the front-end reads the keys of its type's last shape, in any order, without
#: looking the shape up)
BETWEEN = ("type", "messageId", "delta")


def _step(orders: list[tuple[str, ...]], message_id: str = "m1") -> list[Any]:
    contents = [{key: VALUES[key] if key != "messageId" else message_id for key in order} for order in orders]
    return [Start(), {"type": "TEXT_MESSAGE_START", "messageId": message_id, "role": "assistant"}, *contents,
            {"type": "TEXT_MESSAGE_END", "messageId": message_id}, Finish()]


@pytest.mark.parametrize("quiet", [True, False], ids=["run", "stream"])
def test_a_hostile_agents_new_shapes_leave_an_ordinary_agents_new_shapes_compiled(
    drive: Any, served: Any, fresh_shapes: None, quiet: bool,
) -> None:
    orders = list(itertools.permutations(KEYS))
    hostile = [[shape for order in orders[n * 150:(n + 1) * 150] for shape in (order, BETWEEN)] for n in range(3)]
    hostile_agent = served(ScriptedAgent([_step(shapes_, f"h{n}") for n, shapes_ in enumerate(hostile)]))
    ordinary_agent = served(ScriptedAgent([_step([ORDINARY] * 4)]))
    cache = content_cache(not quiet)

    with drive.client(hostile_agent.url) as client:
        thread = client.thread()
        for n in range(3):  # three responses, 450 new shapes (and BETWEEN): each response pays for its own
            if quiet:
                assert thread.run().text == "x" * len(hostile[n])
            else:
                with thread.stream() as stream:
                    deltas = [event.delta for event in stream if isinstance(event, TextMessageContentEvent)]
                assert "".join(deltas) == "x" * len(hostile[n])
    assert cache.compiled <= 3 * shapes.SHAPES_PER_RESPONSE and cache.compiled + cache.declined == 3 * 150 + 1
    assert len(cache.live) <= shapes.MAX_LIVE_SHAPES and len(cache.resting) <= shapes.MAX_RESTING_SHAPES
    declined = cache.declined

    # The ordinary agent is read the way the hostile one was: by the same cache, the one the hostile
    # responses churned (read by run() when they were streamed, it would meet the front-end's, which they
    # never touched, and prove nothing of the decoder's).
    with drive.client(ordinary_agent.url) as client:
        thread = client.thread()
        if quiet:
            assert thread.run().text == "xxxx"
        else:
            with thread.stream() as stream:
                deltas = [event.delta for event in stream if isinstance(event, TextMessageContentEvent)]
            assert "".join(deltas) == "xxxx"

    assert ORDINARY in cache.live  # compiled on the ordinary response's allowance
    assert cache.declined == declined  # none of the ordinary agent's events read by the one generic function


def test_a_large_snapshot_of_shapes_not_compiled_is_read_once(
    drive: Any, served: Any, fresh_shapes: None, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A MESSAGES_SNAPSHOT past SLICED_MIN is read slice by slice. Its messages come in 120 key orders, more
    # than a response's allowance compiles, so some shapes are met that are not compiled. The read must not
    # start over when it meets one (it did: the whole payload was read a second time under the allowance,
    # for every such snapshot, since a shape the allowance declined is never kept).
    orders = list(itertools.permutations(("id", "role", "content", "name", "metadata")))
    whole = {"role": "user", "content": "some words " * 6, "name": "someone", "metadata": {"k": 1}}
    messages = [{key: f"m{n}" if key == "id" else whole[key] for key in orders[n % len(orders)]} for n in range(5_000)]
    snapshot = {"type": "MESSAGES_SNAPSHOT", "messages": messages}
    endpoint = served(ScriptedAgent([[Start(), snapshot, snapshot, Finish()]]))
    reads: list[int] = []
    read_slices = codec.read_slices

    def counted(data: Any, *args: Any) -> Any:
        reads.append(len(data))
        return read_slices(data, *args)

    monkeypatch.setattr(codec, "read_slices", counted)
    with drive.client(endpoint.url) as client:
        thread = client.thread()
        with thread.stream() as stream:
            snapshots = [event for event in stream if type(event).__name__ == "MessagesSnapshotEvent"]

    assert len(snapshots) == 2 and all(len(event.messages) == 5_000 for event in snapshots)
    assert [type(m).__name__ for m in thread.state.messages[:2]] == ["UserMessage", "UserMessage"]
    assert len(reads) == 2 and min(reads) >= codec.SLICED_MIN  # each large snapshot read once, slice by slice
