"""The connection options every talking command shares (``run``, ``demo``, ``chat``; ``probe`` takes
``-H`` and ``--timeout`` with the same meaning), and the client they make: ``-H/--header``,
``--timeout``, ``--idle-timeout``, ``--max-run-bytes``, ``--max-run-memory``, ``--max-patch-ops``,
``--max-schema-steps``, ``--max-retries``, ``--legacy-interrupts`` and ``--record DIR``;
and :func:`stored_thread_ids`, the threads a ``--thread-file`` holds.

``--timeout`` bounds each run as a whole (the client's ``run_timeout``, and the connect timeout when
that is shorter); ``--idle-timeout`` bounds the silence between bytes (keep-alive comments count);
``--max-run-bytes`` bounds what one run's response may bring (the client's ``max_run_bytes``);
``--max-run-memory`` what it may make the thread hold, as estimated while it is read (``max_run_memory``);
``--max-patch-ops`` the operations one of its patches may hold (``max_patch_ops``);
``--max-schema-steps`` the work its interrupts' ``responseSchema`` s may buy a resume (``max_schema_steps``);
``--max-retries`` is the client's ``max_retries`` (a request the agent certainly did not act on, sent again).
A recording client sends through the client's own transport, inside the recorder: the run's deadline,
the budget of the answer's head and the dropping of the agent's cookies hold with ``--record`` as without it.
Header values are sent and never printed: the client redacts them from whatever it reports.
"""

from __future__ import annotations

import argparse
import contextlib
import math
from collections.abc import Sequence

import httpx

from .._pool import own_transport
from ..client import (
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_RUN_BYTES,
    DEFAULT_MAX_RUN_MEMORY,
    AgentClient,
    check_url,
)
from ..core.headers import checked_headers
from ..core.legacy import LEGACY_BRIDGES
from ..core.patch import MAX_PATCH_OPS
from ..core.plan import MAX_SECONDS, MIN_SECONDS
from ..core.retry import DEFAULT_MAX_RETRIES
from ..core.schema import DEFAULT_MAX_SCHEMA_STEPS
from ..errors import InvalidHeader, StoreError
from ..stores import MAX_LISTING_PAGE, ListingStore, ThreadStore
from ..testing.recording import RecordingTransport
from .converse import UsageProblem
from .terminal import LISTED, listed

__all__ = ["add_connection_options", "add_record_option", "parse_headers", "open_client", "recorder_for",
           "MAX_SECONDS", "MIN_SECONDS", "seconds", "retries", "byte_count", "stored_thread_ids"]

#: ``--max-run-bytes`` suffixes (powers of 1,024, as the library's own sizes are given).
_UNITS = {"": 1, "k": 2**10, "kib": 2**10, "m": 2**20, "mib": 2**20, "g": 2**30, "gib": 2**30}


def add_record_option(parser: argparse.ArgumentParser) -> None:
    """``--record DIR``."""
    parser.add_argument("--record", metavar="DIR",
                        help="keep each run's request body and response (NN.request.json, NN.response.json, "
                             "NN.sse) in DIR, continuing its numbering; header values are never written")


def add_connection_options(parser: argparse.ArgumentParser, *, headers: bool = True) -> None:
    """``-H/--header``, ``--timeout``, ``--idle-timeout``, ``--max-run-bytes``, ``--max-run-memory``,
    ``--max-patch-ops``, ``--max-schema-steps``, ``--max-retries``, ``--legacy-interrupts`` and ``--record``."""
    if headers:
        parser.add_argument("-H", "--header", action="append", default=[], metavar="'NAME: VALUE'",
                            help="a request header (repeatable); values are sent, never printed")
    parser.add_argument("--timeout", type=seconds, metavar="SECONDS",
                        help="the longest one run may take, from its request to its last event (default: no limit)")
    parser.add_argument("--idle-timeout", type=seconds, metavar="SECONDS", default=DEFAULT_IDLE_TIMEOUT,
                        help=f"the longest silence between bytes (default {DEFAULT_IDLE_TIMEOUT:g})")
    parser.add_argument("--max-run-bytes", type=byte_count, metavar="SIZE", default=DEFAULT_MAX_RUN_BYTES,
                        help="the most bytes one run's response may bring, as 1048576, 64K, 512M or 2G, or none "
                             f"(default {DEFAULT_MAX_RUN_BYTES // 2**20}M)")
    parser.add_argument("--max-run-memory", type=byte_count, metavar="SIZE", default=DEFAULT_MAX_RUN_MEMORY,
                        help="the most one run's response may make the thread hold, as estimated while it is "
                             "read, as 64M, 512M or 2G, or none "
                             f"(default {DEFAULT_MAX_RUN_MEMORY // 2**20}M)")
    parser.add_argument("--max-patch-ops", type=operations, metavar="N", default=MAX_PATCH_OPS,
                        help="the most operations one state or activity patch may hold, or none; a longer one "
                             f"is refused whole, SP-06 (default {MAX_PATCH_OPS})")
    parser.add_argument("--max-schema-steps", type=operations, metavar="N", default=DEFAULT_MAX_SCHEMA_STEPS,
                        help="the most steps (about half a microsecond each) checking answers against one "
                             "response's responseSchemas may take, or none; a response whose schemas would buy "
                             f"more is refused, SCHEMA-STEPS (default {DEFAULT_MAX_SCHEMA_STEPS})")
    parser.add_argument("--max-retries", type=retries, metavar="N", default=DEFAULT_MAX_RETRIES,
                        help="send a run's request again, N times at most, when the agent certainly did not act "
                             "on it: no connection, or a 429 or 503 answer (default 0; see docs/http.md)")
    parser.add_argument("--legacy-interrupts", choices=LEGACY_BRIDGES, metavar="PRODUCER",
                        help="read a pre-1.0 producer's interrupts as 1.0 ones and answer them where it reads "
                             f"answers ({', '.join(LEGACY_BRIDGES)}; see docs/legacy-interrupts.md)")
    add_record_option(parser)


# The shortest and longest timeout an option takes are the client's own (``checked_seconds``), checked
# here too so that a value past them is a usage problem (exit 2) rather than the client's ValueError.


def seconds(text: str) -> float:
    """An argparse ``type``: a finite number of seconds from :data:`MIN_SECONDS` to :data:`MAX_SECONDS`."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give a positive number of seconds")
    if value < MIN_SECONDS:
        raise argparse.ArgumentTypeError(f"{text!r}: give at least {MIN_SECONDS} seconds (1 ms: the shortest "
                                         "wait a socket can keep)")
    if value > MAX_SECONDS:
        raise argparse.ArgumentTypeError(f"{text!r}: give at most {MAX_SECONDS:,.0f} seconds (about 31 years)")
    return value


def retries(text: str) -> int:
    """An argparse ``type``: a whole number, 0 or more (``--max-retries``)."""
    if not text.strip().isdecimal() or not text.strip().isascii():
        raise argparse.ArgumentTypeError(f"{text!r}: give a whole number, 0 or more")
    return int(text)


def operations(text: str) -> int | None:
    """An argparse ``type``: a whole number, 1 or more, or ``none`` for no bound (``--max-patch-ops``,
    ``--max-schema-steps``)."""
    cleaned = text.strip().lower()
    if cleaned == "none":
        return None
    if not cleaned.isdecimal() or not cleaned.isascii() or int(cleaned) <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give a whole number, 1 or more, or none")
    return int(cleaned)


def byte_count(text: str) -> int | None:
    """An argparse ``type``: a positive number of bytes, with an optional K, M or G (powers of 1,024), or
    ``none`` for no bound."""
    cleaned = text.strip().lower()
    if cleaned == "none":
        return None
    digits = cleaned.rstrip("kmgib")
    unit = _UNITS.get(cleaned[len(digits):].strip())
    if unit is None or not digits.strip().isdecimal() or int(digits) <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give a positive number of bytes (as 1048576, 64K, 512M, "
                                         "2G) or none")
    return int(digits) * unit


def recorder_for(url: str) -> RecordingTransport:
    """A stopped recorder around the transport the client would send ``url``'s runs through itself."""
    return RecordingTransport(inner=own_transport(url))


def parse_headers(values: Sequence[str]) -> dict[str, str]:
    """``['Name: value', ...]`` as a mapping.

    Raises:
        UsageProblem: a value is not ``Name: value``, or one HTTP cannot carry (the value itself is not
            quoted back).
    """
    headers: dict[str, str] = {}
    for value in values:
        name, sep, rest = value.partition(":")
        if not sep or not name.strip():
            # (the text is not quoted back: a header given without its colon may be a credential)
            raise UsageProblem("-H expects 'Name: value', " + ("got text without a colon" if not sep
                                                              else "got an empty name"))
        headers[name.strip()] = rest.strip()
    try:
        checked_headers(headers)  # (as the client checks them when it is made: here before anything starts)
    except InvalidHeader as exc:
        raise UsageProblem(f"-H: {exc}") from None
    return headers


def open_client(stack: contextlib.ExitStack, url: str, args: argparse.Namespace, *,
                store: ThreadStore | None = None, recorder: RecordingTransport | None = None) -> AgentClient:
    """An ``AgentClient`` for ``url`` with the options in ``args``, closed with ``stack``.

    ``recorder``: the transport to send through (a command that starts and stops recording while it
    runs, as ``chat``'s ``/record`` does, passes a stopped one); ``--record DIR`` starts it at DIR. Without
    it, a recorder is made only for ``--record``.
    """
    try:  # (the HTTP client is always the CLI's own, recorder or not: http:// or https:// only)
        check_url(url, own_http=True)
    except ValueError as exc:  # (a URL no run could reach: said before anything is asked or sent)
        raise UsageProblem(str(exc)) from None
    headers = parse_headers(getattr(args, "header", None) or ())
    run_timeout: float | None = getattr(args, "timeout", None)
    idle = getattr(args, "idle_timeout", None) or DEFAULT_IDLE_TIMEOUT
    connect = min(DEFAULT_CONNECT_TIMEOUT, run_timeout) if run_timeout is not None else DEFAULT_CONNECT_TIMEOUT
    http: httpx.Client | None = None
    record = getattr(args, "record", None)
    if record is not None or recorder is not None:
        transport = recorder if recorder is not None else recorder_for(url)
        if record is not None:
            try:
                transport.start(record)
            except OSError as exc:
                raise UsageProblem(f"cannot record into {record}: {exc.strerror or exc}") from exc
        http = stack.enter_context(httpx.Client(transport=transport))
    return stack.enter_context(AgentClient(url, headers=headers, store=store, http_client=http, timeout=connect,
                                           idle_timeout=idle, run_timeout=run_timeout,
                                           max_run_bytes=getattr(args, "max_run_bytes", DEFAULT_MAX_RUN_BYTES),
                                           max_run_memory=getattr(args, "max_run_memory", DEFAULT_MAX_RUN_MEMORY),
                                           max_patch_ops=getattr(args, "max_patch_ops", MAX_PATCH_OPS),
                                           max_schema_steps=getattr(args, "max_schema_steps",
                                                                    DEFAULT_MAX_SCHEMA_STEPS),
                                           legacy_interrupts=getattr(args, "legacy_interrupts", None),
                                           max_retries=getattr(args, "max_retries", DEFAULT_MAX_RETRIES)))


def stored_thread_ids(store: ThreadStore, path: str, flag: str) -> list[str]:
    """The ids of the threads a ``--thread-file`` holds (``store``, opened on ``path``), when it holds none
    or one: the commands go on with a new thread or that one. Several make the person pick with ``flag``.

    Raises:
        UsageProblem: the file holds several threads (the message names a few), or cannot be read.
    """
    assert isinstance(store, ListingStore)  # (the --thread-file's SqliteStore)
    try:
        # (the first page only: enough to tell none, one or several apart, and to name a few)
        ids = store.thread_ids(limit=MAX_LISTING_PAGE)
    except StoreError as exc:
        raise UsageProblem(f"cannot list the threads in {path}: {exc}") from exc
    if len(ids) > 1:
        full = len(ids) >= MAX_LISTING_PAGE  # (a full page: how many more is not known)
        names = listed(ids[:LISTED]) + " and more" if full else listed(ids)
        raise UsageProblem(f"{path} holds {len(ids)}{' or more' if full else ''} threads; pick one with {flag}: "
                           f"{names}")
    return ids
