"""AG-UI 1.0 wire types: frozen attrs classes with snake_case attributes.

They know nothing of JSON: ``agui_client.codec`` maps them to and from the camelCase wire.
"""

from __future__ import annotations

from .base import *  # noqa: F403 - the submodules' __all__ are the public surface
from .base import __all__ as _base_all
from .capabilities import *  # noqa: F403
from .capabilities import __all__ as _cap_all
from .events import *  # noqa: F403
from .events import __all__ as _events_all
from .messages import *  # noqa: F403
from .messages import __all__ as _messages_all
from .run import *  # noqa: F403
from .run import __all__ as _run_all

__all__ = [*_base_all, *_messages_all, *_run_all, *_events_all, *_cap_all]
