"""The effects of the run protocol: what ``core/flow.py`` asks of the outside world, and what a shell
sends back for each.

The protocol is sans-IO: each step that needs a store, the network or the caller is yielded as one of
these records, and a shell (``Thread``, ``AsyncThread``, or a test pumping by hand) carries it out,
sending back the answer or throwing in what the outside raised. They are the whole vocabulary between
the protocol and its shells, so both sides import them from here and neither from the other:

====================  ==============================================  ==================================
effect                what the shell does                             what it sends back
====================  ==============================================  ==================================
``Write``             ``store.<op>(thread_id, **arguments)``          the version the store returns
``Load``              ``store.load(thread_id)``                       the ``StoredThread`` or ``None``
``Send``              POST the plan's body, open the response         nothing
``RECEIVE``           read the next network read's payloads           a list of payloads; ``None`` at end
``Close``             leave the response as ``with`` leaves it        nothing (what closing raised is
                      (on ``error``, or normally)                     thrown in, replacing ``error``)
``Hand``              give the caller a stream pumping ``receive``    whether it was read to its end
                      and wait for the caller's block to end          (or the block's exception)
a list of events      hand them to the caller, one by one             nothing
``Invoke``            call a tool handler (awaiting it when async)    its output
``Run``               run once more (the tool loop)                   the ``RunResult``
``Check``             judge a resume's answers (the async shell in a  what ``judge()`` returns
                      worker thread when it checks schemas)
====================  ==============================================  ==================================
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from typing import Any, Literal, TypeVar

import attrs

from ..wire.types import messages as msg
from .exchange import Check, StreamHandle
from .plan import MessageInput, Plan
from .result import RunResult

__all__ = ["Flow", "Write", "Load", "Send", "RECEIVE", "Close", "Hand", "Invoke", "Run", "Check"]

T = TypeVar("T")
#: A step of the protocol: yields effects, is sent their answers, returns its result.
Flow = Generator[Any, Any, T]


@attrs.frozen(slots=True)
class Write:
    """Write to the store: ``store.<op>(thread_id, **arguments)``; the answer is the version it returns,
    which the shell also makes the conversation's ``_version`` (even when interrupted mid-write)."""

    op: Literal["claim", "save", "append", "release"]
    arguments: Mapping[str, Any]


@attrs.frozen(slots=True)
class Load:
    """Read the thread's record from the store; the answer is a ``StoredThread`` or ``None``."""


@attrs.frozen(slots=True)
class Send:
    """POST the plan's body and open the response, reporting into ``handle``."""

    plan: Plan
    handle: StreamHandle


class _Receive:
    __slots__ = ()

    def __repr__(self) -> str:
        return "RECEIVE"


#: Read on: the answer is the next network read's payloads, or ``None`` when the response is over.
RECEIVE = _Receive()


@attrs.frozen(slots=True)
class Close:
    """Leave the response as a ``with`` block is left: on ``error``, or normally when it is ``None``."""

    error: BaseException | None


@attrs.frozen(slots=True)
class Hand:
    """Give the caller a stream of the run's events (the shell pumps ``receive`` as the caller reads)
    and wait until the caller's block ends: the answer is whether the stream was read to its end, or
    the block's exception is thrown in."""

    receive: Flow[RunResult]


@attrs.frozen(slots=True)
class Invoke:
    """Call the tool handler for ``call`` (and await what it returns, where the shell can)."""

    call: msg.ToolCall


@attrs.frozen(slots=True)
class Run:
    """Run the thread once more with ``message`` and ``arguments`` (the tool loop's next step)."""

    message: MessageInput
    arguments: Mapping[str, Any]
