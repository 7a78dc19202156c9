"""The wire: AG-UI's JSON, SSE framing and the typed objects they become (sans-IO).

``jsonio`` parses and writes JSON defensively, ``records`` reads and writes the stores' records on
its proofs, and ``slices`` reads a large object's array a slice at a time; ``sse`` frames event
streams; ``codec`` turns wire JSON into the frozen attrs types of ``agui_client.types`` and back, with
the fast paths ``derive`` generates from those types.
"""
