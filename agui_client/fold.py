"""Temporary: the old module path, kept while branches in flight still import it (removed in this release)."""

from .core.fold import ThreadState as ThreadState
from .core.fold import parsed_arguments as parsed_arguments
from .core.fold import sum_usage as sum_usage
