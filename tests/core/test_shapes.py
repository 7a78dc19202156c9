"""Compiled shapes are charged to the response that brings them and kept in a bounded cache
(``wire.shapes``): a response of endless new shapes spends its own allowance, never another response's
chance to have its new shapes compiled, and what the process keeps stays bounded however many come.

Every test starts from no compiled shape (``fresh_shapes``): what earlier tests read changes nothing.
"""

from __future__ import annotations

import collections
import gc
import itertools
import json
import tracemalloc

import pytest
from wirekit import content_cache

from agui_client import RunSession
from agui_client.wire import codec, shapes
from agui_client.wire.sink import WarningSink

#: A TEXT_MESSAGE_CONTENT's keys: every order of all six is a shape of its own (720 of them).
KEYS = ("type", "messageId", "delta", "timestamp", "rawEvent", "metadata")
VALUES = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "x", "timestamp": 1, "rawEvent": {"r": 1},
          "metadata": {"k": 1}}
#: What an ordinary agent sends, a shape none of the hostile ones has.
ORDINARY = ("type", "messageId", "delta", "timestamp")
HOSTILE = list(itertools.permutations(KEYS))
#: Sent between two hostile shapes: the front-end reads an object of the keys of the shape its type came
#: in last, in any order, without looking its shape up, so the same six keys twice in a row are no miss.
BETWEEN = ("type", "messageId", "delta")


def _hostile(orders: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    return [shape for order in orders for shape in (order, BETWEEN)]


def _response(run: str, orders: list[tuple[str, ...]]) -> list[bytes]:
    contents = [{key: VALUES[key] for key in order} for order in orders]
    events = [{"type": "RUN_STARTED", "threadId": "t", "runId": run},
              {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"}, *contents,
              {"type": "TEXT_MESSAGE_END", "messageId": "m1"}, {"type": "RUN_FINISHED", "threadId": "t", "runId": run}]
    return [json.dumps(event, separators=(",", ":")).encode() for event in events]


def _fold(payloads: list[bytes], *, events: bool) -> RunSession:
    session = RunSession(events=events)
    if events:
        for payload in payloads:
            session.feed_payload(payload)
    else:
        session.fold_read(payloads)
    assert session.end().text == "x" * (len(payloads) - 4)
    return session


@pytest.mark.parametrize("events", [False, True], ids=["front-end", "decoder"])
def test_an_ordinary_responses_new_shape_is_compiled_after_a_response_of_endless_new_shapes(
    fresh_shapes: None, events: bool,
) -> None:
    cache = content_cache(events)
    _fold(_response("r1", _hostile(HOSTILE[:200])), events=events)  # 201 new shapes: more than any budget
    # The hostile response paid for what it compiled, every class together, and no more: the rest were
    # read by the one function for all shapes (and folded all the same: _fold checks the text).
    assert sum(each.compiled for each in codec._derived.caches) == shapes.SHAPES_PER_RESPONSE
    assert cache.compiled + cache.declined == 201 and cache.declined > 150
    spent = (cache.compiled, cache.declined)

    _fold(_response("r2", [ORDINARY] * 5), events=events)

    assert ORDINARY in cache.live  # compiled, on the ordinary response's own allowance
    assert (cache.compiled, cache.declined) == (spent[0] + 1, spent[1])  # not one of its events read generically


def test_the_compiled_shapes_stay_bounded_and_a_shape_in_use_is_never_compiled_again(fresh_shapes: None) -> None:
    cache = content_cache(False)
    _fold(_response("r0", [ORDINARY]), events=False)
    ordinary = cache.live[ORDINARY]
    gc.collect()
    tracemalloc.start()
    try:
        held: list[int] = []
        # Responses of new shapes without end, each within its allowance, an ordinary one after every
        # second: 56 shapes compiled between its reads, so its shape is sent to rest each time and brought
        # back by its next read.
        step = shapes.SHAPES_PER_RESPONSE - 4
        for n, start in enumerate(range(0, len(HOSTILE), step)):
            _fold(_response(f"h{n}", _hostile(HOSTILE[start:start + step])), events=False)
            assert len(cache.live) <= shapes.MAX_LIVE_SHAPES and len(cache.resting) <= shapes.MAX_RESTING_SHAPES
            if n % 2:
                _fold(_response(f"o{n}", [ORDINARY] * 3), events=False)
                assert cache.live[ORDINARY] is ordinary  # brought back, never dropped nor compiled again
                gc.collect()
                held.append(tracemalloc.get_traced_memory()[0])
    finally:
        tracemalloc.stop()
    assert (cache.compiled, cache.declined) == (len(HOSTILE) + 2, 0)  # (and BETWEEN, and the ordinary shape)
    assert cache.restored > 0 and cache.dropped > 600
    assert len(cache.live) + len(cache.resting) == shapes.MAX_LIVE_SHAPES + shapes.MAX_RESTING_SHAPES
    # Memory: what the first rounds held is all the last ones hold (the cache full from the third round).
    assert max(held[2:]) - min(held[2:]) < 64 * 1024, held


def test_a_read_outside_any_response_pays_for_its_own_new_shapes(fresh_shapes: None) -> None:
    """``decode_event`` called directly is a response of its own: one call of many new shapes (a snapshot
    of as many message shapes) spends its allowance, and the next call's new shape is compiled."""
    reader = codec._READERS["TEXT_MESSAGE_CONTENT"]
    cache = codec._derived.cache_of(reader)
    assert cache is not None
    for order in HOSTILE[:100]:
        codec.decode_event({key: VALUES[key] for key in order})
    assert (cache.compiled, cache.declined) == (100, 0)
    assert len(cache.live) == shapes.MAX_LIVE_SHAPES
    user = codec._derived.cache_of(codec._derived.reader(codec.msg.UserMessage))
    assert user is not None
    many = [{"role": "user", "content": "c", **{key: "n" for key in order}}
            for order in itertools.permutations(("id", "name", "encryptedValue"))]
    codec.decode_event({"type": "MESSAGES_SNAPSHOT", "messages": [{**m, "id": f"u{i}"} for i, m in enumerate(many)]})
    assert user.compiled == len(many)

    codec.decode_event({key: VALUES[key] for key in ORDINARY})
    assert ORDINARY in cache.live


def test_a_new_shape_met_with_no_allowance_in_force_asks_for_one() -> None:
    """A reader called outside any read that pays (here, directly) compiles nothing: it raises ``NewShape``,
    a ``Fallback``, so that a caller that knows nothing of allowances reads the checked way."""
    reader = codec._READERS["TEXT_MESSAGE_CONTENT"]
    odd = {key: VALUES[key] for key in reversed(KEYS)}
    cache = codec._derived.cache_of(reader)
    assert cache is not None
    cache.live.pop(tuple(odd), None)
    cache.resting.pop(tuple(odd), None)
    with pytest.raises(shapes.NewShape) as raised:
        reader(odd)
    assert isinstance(raised.value, codec.Fallback)
    assert tuple(odd) not in cache.live
    built = shapes.charged(shapes.Allowance(1), reader, odd)
    assert built == codec.decode_event(odd) and tuple(odd) in cache.live


@pytest.mark.parametrize("events", [False, True], ids=["front-end", "decoder"])
def test_a_response_past_its_allowance_reads_each_new_shape_once(fresh_shapes: None, events: bool) -> None:
    """A new shape met once the response's allowance is spent is declined: its object is read once, by the
    one function for all shapes. Before, the decoder (and, a round later, the front-end) read it, met the
    shape with no allowance in force, and read it again under the allowance only to be declined (its shape
    judged twice)."""
    cache = content_cache(events)
    judged: list[tuple[str, ...]] = []
    plain = cache._plain

    def judge(shape: tuple[str, ...]) -> bool:
        judged.append(shape)
        return plain(shape)

    cache._plain = judge
    sent = _hostile(HOSTILE[:80])
    _fold(_response("r1", sent), events=events)
    assert cache.compiled + cache.declined == 81 and cache.declined > 40
    declined = {shape for shape in sent if shape not in cache.live}
    assert len(declined) == cache.declined
    # (a shape compiled is met twice, before and after the allowance is put in force; one declined, once)
    assert collections.Counter(judged) == {shape: 1 if shape in declined else 2 for shape in set(sent)}


def test_a_thinking_event_read_as_reasoning_pays_for_its_shape_as_every_event_does(fresh_shapes: None) -> None:
    """A pre-1.0 ``THINKING_*`` payload carrying its id is read as its ``REASONING_*`` event on the path every
    event takes: a new shape compiled on the allowance in force, or declined once it is spent. Before, the
    new shape sent it to the checked path, and nothing was compiled or charged."""
    sink = WarningSink()
    reader = codec._READERS["REASONING_MESSAGE_CONTENT"]
    cache = codec._derived.cache_of(reader)
    assert cache is not None
    allowance = codec.Allowance()
    old = {"type": "THINKING_TEXT_MESSAGE_CONTENT", "messageId": "r1", "delta": "hm"}
    event = codec.decode_value(old, sink, None, allowance)
    assert tuple(old) in cache.live and allowance.left == shapes.SHAPES_PER_RESPONSE - 1
    assert cache.compiled == 1
    assert [w.code for w in sink.items] == ["RS-09"]
    assert event == codec.decode_value({**old, "type": "REASONING_MESSAGE_CONTENT"})

    spent = codec.Allowance(0)
    codec.decode_value({"delta": "hm", "messageId": "r1", "type": "THINKING_TEXT_MESSAGE_CONTENT"}, sink, None, spent)
    assert (cache.compiled, cache.declined) == (1, 1)
