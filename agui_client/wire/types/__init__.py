"""AG-UI 1.0 wire types: frozen attrs classes with snake_case attributes.

They know nothing of JSON: ``agui_client.wire.codec`` maps them to and from the camelCase wire. Their public
path is ``agui_client.types`` (and every name is also importable from ``agui_client``).
"""

from __future__ import annotations

# Each submodule's ``__all__`` is the list of its public names; this package re-exports them all (mypy
# reads the ``+=`` lines below as the static list it needs for re-exports).
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
