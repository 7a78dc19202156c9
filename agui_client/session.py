"""Temporary: the old module path, kept while branches in flight still import it (removed in this release)."""

from .core.session import (
    DEFAULT_MAX_EVENT_BYTES as DEFAULT_MAX_EVENT_BYTES,
)
from .core.session import (
    RunResult as RunResult,
)
from .core.session import (
    RunSession as RunSession,
)
from .core.session import (
    replay as replay,
)
from .core.session import (
    replay_events as replay_events,
)
