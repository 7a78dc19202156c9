"""The public path of :mod:`agui_client.wire.types.messages`."""

from __future__ import annotations

from ..wire.types.messages import *  # noqa: F403
from ..wire.types.messages import __all__ as __all__
