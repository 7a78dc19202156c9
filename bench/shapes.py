"""What a compiled shape's miss costs (``python -m bench.shapes``): one TEXT_MESSAGE_CONTENT read by its
decoder when its shape is live (the hit), compiled on an allowance, read by the one function for all shapes
once the allowance is spent (by the reader, and as a session's decoder reads it: ``decode_value`` under
the spent allowance), and brought back from rest. Best of five, microseconds an event (see ``agui_client.wire.shapes``).
"""

from __future__ import annotations

import itertools
import time
import timeit
from collections.abc import Callable
from typing import Any

from agui_client.wire import codec, shapes

KEYS = ("type", "messageId", "delta", "timestamp", "rawEvent", "metadata")
VALUES = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "d", "timestamp": 1, "rawEvent": 1,
          "metadata": {}}


def _best(read: Callable[[], Any], number: int) -> float:
    return min(timeit.repeat(read, number=number, repeat=5)) / number * 1e6


def main() -> None:
    reader = codec._READERS["TEXT_MESSAGE_CONTENT"]
    objects = [{key: VALUES[key] for key in order} for order in itertools.permutations(KEYS)]
    codec._derived.clear_shapes()
    hit = objects[0]
    shapes.charged(shapes.Allowance(), reader, hit)
    print(f"hit (shape live)                          {_best(lambda: reader(hit), 50_000):8.2f} us")

    started = time.perf_counter()
    for value in objects[1:41]:
        shapes.charged(shapes.Allowance(), reader, value)
    print(f"miss, compiled on an allowance            {(time.perf_counter() - started) / 40 * 1e6:8.0f} us")

    spent, value = shapes.Allowance(0), objects[500]
    generic = _best(lambda: shapes.charged(spent, reader, value), 20_000)
    print(f"miss, allowance spent (generic read)      {generic:8.2f} us")

    decoded = _best(lambda: codec.decode_value(value, None, None, spent), 20_000)
    print(f"  the same, as a session decodes it       {decoded:8.2f} us")

    live, resting = shapes.MAX_LIVE_SHAPES, shapes.MAX_RESTING_SHAPES
    shapes.MAX_LIVE_SHAPES = 1  # two shapes in turn: each sends the other to rest, and is brought back
    try:
        a, b = objects[600], objects[601]
        shapes.charged(shapes.Allowance(), reader, a)
        shapes.charged(shapes.Allowance(), reader, b)

        def in_turn() -> None:
            reader(a)
            reader(b)
        print(f"miss, brought back from rest              {_best(in_turn, 20_000) / 2:8.2f} us")
    finally:
        shapes.MAX_LIVE_SHAPES, shapes.MAX_RESTING_SHAPES = live, resting
        codec._derived.clear_shapes()


if __name__ == "__main__":
    main()
