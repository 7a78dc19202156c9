"""The AG-UI 1.0 wire types: the public path of :mod:`agui_client.wire.types`.

Every name here (and in ``agui_client.types.events``, ``.messages``, ``.run``, ``.capabilities``,
``.base``) is the class defined in ``agui_client.wire.types``; the names are also importable from
``agui_client`` itself.
"""

from __future__ import annotations

from . import base, capabilities, events, messages, run
from .base import *  # noqa: F403
from .capabilities import *  # noqa: F403
from .events import *  # noqa: F403
from .messages import *  # noqa: F403
from .run import *  # noqa: F403

__all__: list[str] = []
__all__ += base.__all__
__all__ += messages.__all__
__all__ += run.__all__
__all__ += events.__all__
__all__ += capabilities.__all__
