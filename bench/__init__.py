"""agui_client's performance suite: ``python -m bench`` (see bench/README.md).

``bench.run`` is the suite, ``bench.servers`` its loopback HTTP servers, ``bench.profiling`` a
profiling helper; ``bench.gen`` generates the streams and ``bench/bench_decode.py`` times the codec
alone.
"""
