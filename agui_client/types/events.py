"""The public path of :mod:`agui_client.wire.types.events`."""

from __future__ import annotations

from ..wire.types.events import *  # noqa: F403
from ..wire.types.events import __all__ as __all__
