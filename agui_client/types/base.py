"""The public path of :mod:`agui_client.wire.types.base`."""

from __future__ import annotations

from ..wire.types.base import *  # noqa: F403
from ..wire.types.base import __all__ as __all__
