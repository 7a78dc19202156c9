"""httpx's and httpcore's log lines without the secrets an exchange carries.

httpx logs every request at INFO with its whole URL (``HTTP Request: POST https://bob:pw@…?token=…``),
so an application that turns INFO logging on wrote the URL's credentials to its logs: a filter on httpx's
logger (:class:`HttpxLogFilter`) shows that URL as ``displayed_url`` does, and the answer's reason phrase,
which closes the line, without the run's credentials and at most ``QUOTED_CHARS`` long.

httpcore, under httpx, logs each step of an exchange at DEBUG when its loggers are on (``httpcore.http11``,
``httpcore.connection`` …), the response's head among them as it came::

    receive_response_headers.complete return_value=(b'HTTP/1.1', 200, b'OK', [(b'set-cookie', b'sid=…'), …])

so an application debugging its HTTP wrote the session cookie an agent set, or a credential of the
request that the agent echoed in a header, to its logs. A filter on those loggers (put there by the
first client made, as for httpx's own request line) replaces, in every line:

* the value of each header whose name is sensitive (``core.redact.is_sensitive``: ``Set-Cookie``,
  ``WWW-Authenticate``, any name holding token, key, session …, and the names any client of the
  process marked with ``sensitive_headers``);
* the credentials of the exchange being sent in this thread or task (its redactor, set by the client
  around its send with :func:`exchange`), wherever they appear.

Nothing is done while those loggers are off: httpcore makes no line then, so the filter never runs.

Under httpx's HTTP/2 (an ``http_client`` made with ``http2=True``), h2 codes each head with hpack, whose
loggers (``hpack.hpack``, ``hpack.table``) write at DEBUG every header it codes, the request's
``Authorization`` among them::

    Adding (b'authorization', b'Bearer sk-…') to the header table, sensitive:False, huffman:True
    Evicting b'authorization': b'Bearer sk-…' from the header table

and each header block whole (``Encoded header block to b'…'``, ``Decoding b'…'``), Huffman-coded, which
anyone can decode and no search for a secret's forms finds. A filter on those loggers
(:class:`HpackLogFilter`) knows each line by its template (hpack 3's and 4's, which writes a header
added as ``Adding %s=%s …``): it replaces the value of each sensitive header, in every form, and
every header block by its length; a line of a template it does not know keeps only its numbers (each
other argument shown as its type and size). Then the credentials of the exchange are taken out as for
httpcore. (h2 itself writes only to the logger its configuration names, none under httpcore, which
configures it.)
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar

import httpx

from ._inert import quoted
from .core.redact import MARK, Redactor, displayed_url, is_sensitive

__all__ = ["HPACK_LINES", "HPACK_LOGGERS", "HTTPCORE_LOGGERS", "HttpxLogFilter", "HttpcoreLogFilter", "HpackLogFilter",
           "exchange", "filter_http_logs", "unfilter_collected", "unfilter_names"]

#: httpcore's loggers (a filter on a parent logger does not see its children's lines).
HTTPCORE_LOGGERS = ("httpcore.connection", "httpcore.http11", "httpcore.http2", "httpcore.proxy", "httpcore.socks")

#: hpack's loggers: h2's header coder, under httpx's HTTP/2 (its package writes to no other).
HPACK_LOGGERS = ("hpack.hpack", "hpack.table")

#: The redactor of the exchange this thread or task is sending (``None``: none of ours).
_EXCHANGE: ContextVar[Redactor | None] = ContextVar("agui_client_log_redactor", default=None)

# One header as httpcore writes it: ``(b'name', b'value')`` (a value holding a quote is written between
# the other quotes, its own backslashes and quotes escaped). An escape and any other character are told
# apart by their first one, so a hostile value cannot make the search backtrack.
_HEADER = re.compile(r"""\(b(?P<q1>['"])(?P<name>[^'"\\]*)(?P=q1), """
                     r"""b(?P<q2>['"])(?P<value>(?:\\.|(?!(?P=q2))[^\\])*)(?P=q2)\)""")


@contextmanager
def exchange(redactor: Redactor) -> Iterator[None]:
    """Have httpcore's lines in this thread or task, until the block ends, redacted by ``redactor`` too."""
    token = _EXCHANGE.set(redactor)
    try:
        yield
    finally:
        _EXCHANGE.reset(token)


class HttpcoreLogFilter(logging.Filter):
    """On httpcore's loggers (see the module's docstring); ``marked`` gives the names the clients marked
    sensitive, all of them."""

    def __init__(self, marked: Callable[[], frozenset[str]]) -> None:
        super().__init__()
        self._marked = marked

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            text = record.getMessage()
        except Exception:  # (a record whose arguments do not fit its format: logging reports it itself)
            return True
        shown = _HEADER.sub(self._header, text) if "(b" in text else text
        redactor = _EXCHANGE.get()
        if redactor is not None:
            shown = redactor.text(shown)
        if shown != text:
            record.msg, record.args = shown, None
        return True

    def _header(self, match: re.Match[str]) -> str:
        if not is_sensitive(match["name"], self._marked()):
            return match[0]
        return f"(b{match['q1']}{match['name']}{match['q1']}, b'{MARK}')"


class HpackLogFilter(HttpcoreLogFilter):
    """On hpack's loggers (see the module's docstring): each line recognised by its template, which says
    what each argument is (:data:`HPACK_LINES`): a header's value replaced when its name is sensitive, a
    header block shown as its length, a number kept. A line of any other template (a version of hpack
    that writes a new one), or whose arguments are not what its template says, keeps only its numbers:
    each other argument is shown as its type and size. Then what :class:`HttpcoreLogFilter` does."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if args:
            roles = HPACK_LINES.get(record.msg) if isinstance(record.msg, str) else None
            shown = self._shown(args, roles) if isinstance(args, tuple) else None
            record.args = shown if shown is not None else _withheld_all(args)
        return super().filter(record)

    def _shown(self, args: tuple[object, ...], roles: tuple[str, ...] | None) -> tuple[object, ...] | None:
        """``args`` as a line of the template whose ``roles`` they fill, or ``None`` when they do not fit it."""
        if roles is None or len(roles) != len(args):
            return None
        shown: list[object] = []
        for n, (role, arg) in enumerate(zip(roles, args, strict=True)):
            if role == "number":
                if not isinstance(arg, _NUMBERS):
                    return None
                shown.append(arg)
            elif role == "block":
                shown.append(f"<a header block of {len(arg)} bytes>" if isinstance(arg, _BYTES) else _withheld(arg))
            elif role == "header":
                if not (isinstance(arg, tuple) and len(arg) == 2):
                    return None
                shown.append(arg if not self._sensitive(arg[0]) else (arg[0], MARK.encode()))
            elif role == "value":  # (the value after its name, the argument before it)
                shown.append(MARK.encode() if self._sensitive(args[n - 1]) else arg)
            else:  # a header's name
                if not isinstance(arg, (*_BYTES, str)):
                    return None
                shown.append(arg)
        return tuple(shown)

    def _sensitive(self, name: object) -> bool:
        # (a name hpack has not decoded, or of no known type, is taken as sensitive)
        if isinstance(name, str):
            return is_sensitive(name, self._marked())
        if isinstance(name, _BYTES):
            return is_sensitive(bytes(name).decode("latin-1"), self._marked())
        return True


#: What hpack gives a header's name, a value or a block as.
_BYTES = (bytes, bytearray, memoryview)
_NUMBERS = (int, float)

#: hpack's log lines (its versions 3 and 4), by template: what each argument is. ``number``: shown;
#: ``block``: a header block, every header of a head Huffman-coded, which no search for a secret's forms
#: reads (shown as its length); ``header``: a ``(name, value)`` pair; ``name`` then ``value``: a header
#: given as two arguments. A value is replaced when its name is sensitive.
HPACK_LINES: dict[str, tuple[str, ...]] = {
    "Encoding %d with %d bits": ("number", "number"),
    "Decoded %d, consumed %d bytes": ("number", "number"),
    "Resizing header table to %d from %d": ("number", "number"),
    "Encoded header block to %s": ("block",),
    "Decoding %s": ("block",),
    "Adding %s to the header table, sensitive:%s, huffman:%s": ("header", "number", "number"),
    "Adding %s=%s to the header table, sensitive:%s, huffman:%s": ("name", "value", "number", "number"),
    "Decoded %s, consumed %d": ("header", "number"),
    "Decoded %s, total consumed %d bytes, indexed %s": ("header", "number", "number"),
    "Evicting %s: %s from the header table": ("name", "value"),
}


def _withheld(arg: object) -> object:
    """An argument of a line not recognised: a number as it is; anything else as its type and size."""
    if isinstance(arg, _NUMBERS) or arg is None:
        return arg
    size = f" of {len(arg)}" if isinstance(arg, (*_BYTES, str, tuple, list)) else ""
    return f"<{type(arg).__name__}{size} withheld>"


def _withheld_all(args: object) -> tuple[object, ...] | dict[str, object]:
    if isinstance(args, Mapping):
        return {str(key): _withheld(value) for key, value in args.items()}
    return tuple(_withheld(arg) for arg in args) if isinstance(args, tuple) else (_withheld(args),)


class HttpxLogFilter(logging.Filter):
    """On httpx's logger: its request line's URL shown as :func:`~agui_client.core.redact.displayed_url`
    does: no userinfo, the value of each sensitive query parameter replaced, the names any client marked
    (``sensitive_headers``) among them (a log record does not say which client sent it). Other records
    pass unchanged.

    A name is marked while a client that marked it is open: each client's names are counted in when it is
    made and out when it closes, or when it is collected unclosed. Kept for the life of the process
    instead, a service making a client per tenant, each marking names of its own, grew the set without end
    and went on hiding, in every later client's lines, the values of names only a closed client held
    secret."""

    def __init__(self) -> None:
        super().__init__()
        #: The names the open clients marked sensitive, all of them.
        self.marked: frozenset[str] = frozenset()
        self._counts: dict[str, int] = {}  # name -> how many open clients marked it
        self._lock = threading.Lock()
        # The names of clients collected while the lock was held, given back by whoever holds it next.
        self._collected: list[frozenset[str]] = []

    def mark(self, names: frozenset[str]) -> None:
        """Hide the values of query parameters called ``names`` too (until :meth:`unmark` gives them back)."""
        if not names and not self._collected:
            return
        with self._lock:  # (clients made at once in several threads must not lose each other's names)
            for name in names:
                self._counts[name] = self._counts.get(name, 0) + 1
            self._settle()

    def unmark(self, names: frozenset[str]) -> None:
        """Give back one :meth:`mark` of ``names`` (a client closing): a name no open client marks is shown."""
        if not names and not self._collected:
            return
        with self._lock:
            self._count_out(names)
            self._settle()

    def unmark_collected(self, names: frozenset[str]) -> None:
        """:meth:`unmark`, for a client the garbage collector took unclosed: never waits for the lock.

        The collector runs wherever an allocation finds it due, in any thread, and so also inside
        :meth:`mark` or :meth:`unmark` (their set of names is an allocation): waiting there for the
        lock, which is not reentrant, its own thread held, hung that thread for good. Taken when free;
        else left to whoever holds it, who gives the names back before letting it go (or, collected
        in its last step, the next client made or closed does)."""
        if not names:
            return
        if not self._lock.acquire(blocking=False):
            self._collected.append(names)  # (one call, atomic: no lock needed to leave them)
            return
        try:
            self._count_out(names)
            self._settle()
        finally:
            self._lock.release()

    def _count_out(self, names: frozenset[str]) -> None:
        for name in names:
            count = self._counts.get(name, 0) - 1
            if count > 0:
                self._counts[name] = count
            else:
                self._counts.pop(name, None)

    def _settle(self) -> None:
        """With the lock held: give back the names left by clients collected meanwhile; set :attr:`marked`."""
        while True:
            while self._collected:
                self._count_out(self._collected.pop())
            self.marked = frozenset(self._counts)
            if not self._collected:
                return

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if not (isinstance(args, tuple) and len(args) > 1 and isinstance(args[1], httpx.URL)
                and str(record.msg).startswith("HTTP Request:")):
            return True
        redactor = _EXCHANGE.get()  # (the line is written while the run's request is sent: its redactor)
        url = displayed_url(str(args[1]), marked=self.marked) if args[1].userinfo or args[1].query else str(args[1])
        if redactor is not None:
            # A redirect followed goes where the agent said: a Location echoing a credential of the request
            # in its path or under a query name nothing marks (``?from=<the key>``) is this line's URL.
            url = redactor.text(url)
        if url != str(args[1]):
            args = (args[0], url, *args[2:])
        if len(args) == 5 and isinstance(args[4], str) and args[4]:
            # The answer's reason phrase, as the agent wrote it: it may repeat a credential of the request,
            # or be as long as a head may be.
            reason = quoted(redactor.text(args[4]) if redactor is not None else args[4])
            if reason != args[4]:
                args = (*args[:4], reason)
        record.args = args
        return True


_HTTPX_FILTER = HttpxLogFilter()
_HTTPCORE_FILTER = HttpcoreLogFilter(lambda: _HTTPX_FILTER.marked)
_HPACK_FILTER = HpackLogFilter(lambda: _HTTPX_FILTER.marked)


def filter_http_logs(marked: frozenset[str]) -> None:
    """Put the filters on httpx's, httpcore's and hpack's loggers (once, whichever client comes first),
    hiding the values of ``marked`` names too (every client made calls it with the names it marked)."""
    _HTTPX_FILTER.mark(marked)
    for name, log_filter in (("httpx", _HTTPX_FILTER), *((name, _HTTPCORE_FILTER) for name in HTTPCORE_LOGGERS),
                             *((name, _HPACK_FILTER) for name in HPACK_LOGGERS)):
        logger = logging.getLogger(name)
        if log_filter not in logger.filters:
            logger.addFilter(log_filter)


def unfilter_names(marked: frozenset[str]) -> None:
    """Give back the names a client marked with :func:`filter_http_logs`, as it closes (the filters stay)."""
    _HTTPX_FILTER.unmark(marked)


def unfilter_collected(marked: frozenset[str]) -> None:
    """:func:`unfilter_names` for a client collected unclosed (its finalizer): never waits for a lock."""
    _HTTPX_FILTER.unmark_collected(marked)
