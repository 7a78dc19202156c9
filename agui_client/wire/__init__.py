"""The wire: AG-UI's JSON, SSE framing and the typed objects they become (sans-IO).

``jsonio`` parses and writes JSON defensively; ``sse`` frames event streams; ``codec`` turns wire
JSON into the frozen attrs types of ``agui_client.types`` and back, with the fast paths ``derive``
generates from those types.
"""
