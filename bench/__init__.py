"""agui_client's performance suite: ``python -m bench`` (see bench/README.md).

``bench.run`` is the suite, ``bench.servers`` its loopback HTTP servers, ``bench.profiling`` a
profiling helper; ``bench.gen`` generates the streams and ``bench/bench_decode.py`` times the codec
alone.
"""

import gc


def freeze_setup() -> None:
    """Collect, then freeze the heap left (imports, streams, servers' handles), for a smoke run.

    The measures collect garbage before each sample; on a heap frozen here a collection walks only what
    the samples made (microseconds) instead of every object the imports made (about 30 ms a collection,
    and a tiny run makes over a hundred). A full run does not freeze: its collections, and any that
    land inside a timed sample, walk the whole heap as they did when its history was measured.
    """
    gc.collect()
    gc.freeze()
