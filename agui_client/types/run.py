"""The public path of :mod:`agui_client.wire.types.run`."""

from __future__ import annotations

from ..wire.types.run import *  # noqa: F403
from ..wire.types.run import __all__ as __all__
