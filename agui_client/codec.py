"""Temporary: the old module path, kept while branches in flight still import it (removed in this release)."""

from .wire.codec import (
    decode as decode,
)
from .wire.codec import (
    decode_event as decode_event,
)
from .wire.codec import (
    decode_value as decode_value,
)
from .wire.codec import (
    encode as encode,
)
from .wire.jsonio import (
    _DIGITS_ONLY as _DIGITS_ONLY,
)
from .wire.jsonio import (
    _LONG_DIGIT_RUN as _LONG_DIGIT_RUN,
)
from .wire.jsonio import (
    _has_float as _has_float,
)
from .wire.jsonio import (
    _orjson as _orjson,
)
from .wire.jsonio import dump_json as dump_json
from .wire.jsonio import json_problem as json_problem
from .wire.jsonio import parse_json as parse_json
from .wire.sink import collect_warnings as collect_warnings
from .wire.sink import warn as _warn  # (imported under its old name by branches in flight)

__all__ = ["_warn"]
