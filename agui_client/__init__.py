"""agui_client: a Python client for agents that speak AG-UI 1.0.

Everything common is importable from here: the wire types, the codec, the sans-IO pipeline
(``ThreadState``, ``RunSession``, ``replay``), the interrupt rules (``ResumeBuilder``, ``is_expired``),
the HTTP shells (``AgentClient``, ``AsyncAgentClient``) and the error tree.
"""

from __future__ import annotations

from ._version import __version__
from .client import AgentClient, AsyncAgentClient
from .codec import decode_event, encode
from .errors import *  # noqa: F403
from .errors import __all__ as _errors_all
from .fold import RunErrorInfo, StepRecord, SubagentRecord, ThreadState, parsed_arguments
from .interrupts import ResumeBuilder, check_resume, is_expired, parse_expires_at
from .session import RunResult, RunSession, replay
from .thread import AsyncRunStream, AsyncThread, RunStream, Thread
from .types import *  # noqa: F403
from .types import __all__ as _types_all

__all__ = [
    "__version__",
    "decode_event",
    "encode",
    "AgentClient",
    "AsyncAgentClient",
    "Thread",
    "AsyncThread",
    "RunStream",
    "AsyncRunStream",
    "ThreadState",
    "RunSession",
    "RunResult",
    "RunErrorInfo",
    "StepRecord",
    "SubagentRecord",
    "replay",
    "parsed_arguments",
    "ResumeBuilder",
    "check_resume",
    "is_expired",
    "parse_expires_at",
    *_errors_all,
    *_types_all,
]
