"""The async shells, the one source of the sync ones.

Each module here but ``thread_io.py`` is the source ``python -m tools.unasync`` rewrites into its sync
twin in ``agui_client/_sync/`` (``async``/``await`` dropped, async names mapped to their sync twins:
see ``tools/unasync.py``). ``thread_io.py`` is hand-written on each side: what the two shells really do
differently (a store call in a worker thread, a cancellation waited out, a Ctrl-C held).
"""
