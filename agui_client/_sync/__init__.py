"""The sync shells: each module but ``thread_io.py`` generated from ``agui_client/_async/`` (do not edit:
edit the async source and run ``python -m tools.unasync``); ``thread_io.py`` is written by hand."""
