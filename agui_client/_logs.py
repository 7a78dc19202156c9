"""httpcore's DEBUG trace without the secrets an exchange carries.

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
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from .core.redact import MARK, Redactor, is_sensitive

__all__ = ["HTTPCORE_LOGGERS", "HttpcoreLogFilter", "exchange", "filter_httpcore_log"]

#: httpcore's loggers (a filter on a parent logger does not see its children's lines).
HTTPCORE_LOGGERS = ("httpcore.connection", "httpcore.http11", "httpcore.http2", "httpcore.proxy", "httpcore.socks")

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
    """See the module's docstring; ``marked`` gives the names the clients marked sensitive, all of them."""

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


def filter_httpcore_log(log_filter: logging.Filter) -> None:
    """Put ``log_filter`` on httpcore's loggers (once each; every client made calls it)."""
    for name in HTTPCORE_LOGGERS:
        logger = logging.getLogger(name)
        if log_filter not in logger.filters:
            logger.addFilter(log_filter)
