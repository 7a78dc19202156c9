"""agui_client: a Python client for agents that speak AG-UI 1.0."""

from __future__ import annotations

from ._version import __version__
from .codec import decode_event, encode
from .errors import *  # noqa: F403
from .errors import __all__ as _errors_all
from .types import *  # noqa: F403
from .types import __all__ as _types_all

__all__ = ["__version__", "decode_event", "encode", *_errors_all, *_types_all]
