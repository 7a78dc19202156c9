"""agui_client: a Python client for agents that speak AG-UI 1.0.

Everything common is importable from here: the wire types, the codec, the sans-IO pipeline
(``ThreadState``, ``RunSession``, ``replay``), the interrupt rules (``ResumeBuilder``, ``is_expired``),
the HTTP shells (``AgentClient``, ``AsyncAgentClient``) and the error tree.
"""

from __future__ import annotations

# The errors and wire types are re-exported whole. The wire types are star-imported from the modules that
# define them: a star import of the agui_client.types package, whose list is a sum of theirs, left them
# invisible to mypy (`from agui_client import Interrupt` failed; CI type-checks tests/typing/user_script.py).
from . import errors as _errors
from ._version import __version__
from .client import AgentClient, AsyncAgentClient
from .core.expiry import is_expired, parse_expires_at
from .core.fold import RunErrorInfo, StepRecord, SubagentRecord, ThreadState, parsed_arguments
from .core.interrupts import AnswerProblem, ResumeBuilder, check_answer, check_resume
from .core.replaying import replay
from .core.result import RunResult
from .core.session import RunSession
from .errors import *  # noqa: F403
from .telemetry import Telemetry
from .thread import AsyncLoopStream, AsyncRunStream, AsyncThread, LoopStream, RunStream, Thread
from .wire import types as _types
from .wire.codec import decode_event, encode
from .wire.types.base import *  # noqa: F403
from .wire.types.capabilities import *  # noqa: F403
from .wire.types.events import *  # noqa: F403
from .wire.types.messages import *  # noqa: F403
from .wire.types.run import *  # noqa: F403

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
    "LoopStream",
    "AsyncLoopStream",
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
    "check_answer",
    "AnswerProblem",
    "is_expired",
    "parse_expires_at",
    "Telemetry",
]
__all__ += _errors.__all__
__all__ += _types.__all__
