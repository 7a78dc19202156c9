"""The AG-UI 1.0 wire types: the public path of :mod:`agui_client.wire.types`.

Every name here (and in ``agui_client.types.events``, ``.messages``, ``.run``, ``.capabilities``,
``.base``) is the class defined in ``agui_client.wire.types``; the names are also importable from
``agui_client`` itself.
"""

from __future__ import annotations

# The sums name the defining modules, whose lists are literal: the documentation build reads them statically.
from ..wire.types import base as _base
from ..wire.types import capabilities as _capabilities
from ..wire.types import events as _events
from ..wire.types import messages as _messages
from ..wire.types import run as _run
from .base import *  # noqa: F403
from .capabilities import *  # noqa: F403
from .events import *  # noqa: F403
from .messages import *  # noqa: F403
from .run import *  # noqa: F403

__all__: list[str] = []
__all__ += _base.__all__
__all__ += _messages.__all__
__all__ += _run.__all__
__all__ += _events.__all__
__all__ += _capabilities.__all__
