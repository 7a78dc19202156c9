"""The TLS context of the shards: one for all of a transport's shards (:func:`one_context`), and for the
default settings one a process (:func:`_default_context`), not one loaded per shard or per client.
"""

from __future__ import annotations

import os
import ssl
import threading
from typing import Any

import httpx

__all__ = ["one_context"]


def one_context(options: dict[str, Any]) -> dict[str, Any]:
    """``options`` with their TLS settings made into the one ``ssl.SSLContext`` every shard uses.

    httpx makes a context for each transport it builds, loading the CA bundle each time: 22-43 ms of
    the event loop on a 2-core machine, for plain HTTP too, paid by the run that opened each new shard
    (every eighth concurrent run of a backend). One context serves every connection of every shard, as
    it serves every connection of one pool. Given a context already, ``options`` are returned as they are.
    """
    if isinstance(options.get("verify"), ssl.SSLContext):
        return options
    verify, cert, trust_env = options.get("verify", True), options.get("cert"), options.get("trust_env", True)
    if verify is True and cert is None:
        context = _default_context(bool(trust_env), bool(options.get("http2", False)))
    else:
        context = httpx.create_ssl_context(verify=verify, cert=cert, trust_env=trust_env)
    return {**{name: value for name, value in options.items() if name != "cert"}, "verify": context}


#: The default TLS contexts made so far, by what makes one differ (:func:`_default_context`).
_DEFAULT_CONTEXTS: dict[tuple[object, ...], ssl.SSLContext] = {}
_DEFAULT_CONTEXTS_LOCK = threading.Lock()


def _default_context(trust_env: bool, http2: bool) -> ssl.SSLContext:
    """The process's one context for the default TLS settings (the CA bundle httpx trusts, or the one
    ``SSL_CERT_FILE`` or ``SSL_CERT_DIR`` names when the environment is trusted).

    Each client made its own, loading the bundle again (22-55 ms, for plain HTTP too, at a client's first
    run): a script or a backend making a client per request paid it every time. A context is shared only
    by connections that set it alike: httpcore sets its ALPN protocols at each TLS connect, from the
    transport's ``http2``, so that is part of the key, as are the environment's names. A bundle changed on
    disk while the process runs is read by clients of the next process (or give ``verify`` a context).
    """
    named = (os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR")) if trust_env else (None, None)
    key = (trust_env, http2, *named)
    with _DEFAULT_CONTEXTS_LOCK:
        context = _DEFAULT_CONTEXTS.get(key)
        if context is None:
            context = _DEFAULT_CONTEXTS[key] = httpx.create_ssl_context(trust_env=trust_env)
        return context
