"""The sans-IO core: everything a run means, with no sockets, clocks or threads.

``session`` composes ``chunks`` -> ``verify`` -> ``fold`` for one response and makes its ``result``;
``interrupts`` judges the resume rules before anything is sent; ``flow`` is the run protocol a thread
follows (claim, send, fold, save, release), written once for both shells, over its ``standing`` in the
store and yielding ``effects`` the shells carry out; ``patch`` applies JSON Patch in place.
"""
