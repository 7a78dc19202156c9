"""One HTTP exchange of a run, as both shells and the run protocol see it: the request body and the
response handle.

Sans-IO: the body is bytes made from a ``RunAgentInput``; the handle is a record the transport fills
in (framing warnings, whether the request was written whole, the redactor made from the request as
sent). ``client.py`` writes and reads the exchange; the run protocol (``standing.py``) decides from
the handle what a failure means for the thread's claim; neither imports the other.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

import attrs

from ..errors import StreamWarning
from ..wire import codec
from ..wire.jsonio import dump_json
from ..wire.types.run import PROTOCOL_VERSION, RunAgentInput
from .budget import MemoryBudget
from .patch import MAX_PATCH_OPS
from .redact import Redactor
from .schema import DEFAULT_MAX_SCHEMA_STEPS

__all__ = ["Check", "StreamHandle", "opening_stage", "request_body"]

T = TypeVar("T")


@attrs.frozen(slots=True)
class Check(Generic[T]):
    """A resume's answers judged (``judge()``: the entries, or ``None``; it raises to send nothing), made
    where the shell makes CPU work: a sync shell at once, the async one in a worker thread when ``costly``.

    ``judge`` reads the answers, the caller's builder and the open interrupts (only read: the fold
    replaces them, never changes them in place), nothing else of the thread's (the loop's other tasks
    may read and change it meanwhile). ``costly``: it checks answers
    against ``responseSchema`` s, which may spend up to the client's ``max_schema_steps`` (seconds of
    CPU); a check without schemas stays where it is asked for (a thread hop costs more than it).
    """

    judge: Callable[[], T]
    costly: bool


class StreamHandle:
    """What a stream yields besides payloads: the decoder's framing warnings, as they are found."""

    def __init__(self) -> None:
        self.warnings: list[StreamWarning] = []
        # Whether the request may have reached the agent. httpx's own transports report (httpcore's
        # ``trace``) when the whole request is written: until then it has not. Any other transport
        # (an injected one, a mock) reports nothing, so the request counts as sent once handed over.
        self.sent = False
        #: Removes the request's credentials from text the agent sent (set once the request is sent):
        #: what the run reports goes through it.
        self.redactor = Redactor()
        #: Asked before a request is sent again (``max_retries``), after the wait: raises to send nothing
        #: more (a resume's answers judged again: an interrupt may have expired while the retry waited).
        self.before_resend: Check[None] | None = None
        #: The run's budget of what its events may make the thread hold (``max_run_memory``): charged by
        #: the client as it reads the body, checked by the session before it folds each read.
        self.budget: MemoryBudget | None = None
        #: The most operations one of the run's patches may hold (``max_patch_ops``), set by the client
        #: when the run starts, for the session that folds it.
        self.max_patch_ops: int | None = MAX_PATCH_OPS
        #: The most steps the schemas of the run's interrupts may buy a resume (``max_schema_steps``), set
        #: by the client when the run starts, for the session that folds it.
        self.max_schema_steps: int | None = DEFAULT_MAX_SCHEMA_STEPS

    def trace(self, name: str, info: Mapping[str, Any]) -> None:
        """httpcore's ``trace`` extension: marks the request sent once it is written whole."""
        if name.endswith(".send_request_body.complete"):
            self.sent = True


#: The steps of httpcore's ``trace`` extension that open a connection, as their names end before the stage
#: (after the prefix of the connection's kind: ``connection.``, ``proxy.`` …): the connect (to the agent or to
#: a proxy), the wait before a connect is tried again, the TLS handshake (to the agent, to a proxy, or to the
#: agent through a proxy's tunnel).
_OPENING_STEPS = (".connect_tcp", ".connect_unix_socket", ".retry", ".start_tls")


def opening_stage(name: str) -> str | None:
    """The stage (``started``, ``complete``, ``failed``) of the step httpcore's ``trace`` extension names by
    ``name`` (``connection.connect_tcp.started``) when the step opens a connection; else ``None``."""
    step, _, stage = name.rpartition(".")
    return stage if step.endswith(_OPENING_STEPS) else None


def request_body(run_input: RunAgentInput) -> bytes:
    """The encoded request: ``run_input`` as JSON bytes, with the protocol version this client speaks.

    Raises:
        UnencodableValue: the input holds itself (``state["self"] = state``); ``pointer`` says where in
            the body (``/state/self``), found as the standard library's encoder meets the cycle.
        TypeError, ValueError, OverflowError: a value JSON cannot hold (the thread refuses those first,
            naming where they are).
    """
    if run_input.protocol_version is None:
        run_input = attrs.evolve(run_input, protocol_version=PROTOCOL_VERSION)
    if not run_input.messages:
        return dump_json(codec.encode(run_input), shallow=True)
    # Every run sends the whole thread: its messages are built directly, the converter's output.
    wire = codec.encode(attrs.evolve(run_input, messages=()))
    wire["messages"] = codec.encode_messages(run_input.messages)
    # (shallow: the caller's state may hold itself, which orjson would write round to its depth limit)
    return dump_json(wire, shallow=True)
