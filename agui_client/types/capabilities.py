"""The public path of :mod:`agui_client.wire.types.capabilities`."""

from __future__ import annotations

from ..wire.types.capabilities import *  # noqa: F403
from ..wire.types.capabilities import __all__ as __all__
