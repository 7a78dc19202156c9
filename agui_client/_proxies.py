"""The environment's proxies, read the way httpx reads them.

httpx gives the proxies named by ``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY`` and ``NO_PROXY`` only to
a client made without a transport of its own. The client's connections are a transport of its own (the
shards of ``_pool``, which hold the bounds on the answer's head), so it must know itself whether httpx
would send a URL through a proxy: when it would, the client's own transport is httpx's, given that
proxy (``_pool.own_transport``), and the CLI's recorder wraps it.

That answer must be httpx's, not merely close to it. A host the client thinks ``NO_PROXY`` exempts, but
httpx would proxy, is reached directly on a network that only lets the proxy out. So the rules below
are httpx's, written out (they follow curl's reading of ``NO_PROXY``), and ``tests/test_proxies.py``
checks them against httpx's own routing on a table of environments and URLs:

- the proxies come from :func:`urllib.request.getproxies`, as httpx takes them (on macOS and Windows it
  also reads the system's settings): ``http``, ``https`` and ``all``, a bare host meaning ``http://``;
- ``NO_PROXY=*`` turns every proxy off;
- each other ``NO_PROXY`` entry exempts: a URL pattern as written (``http://example.com``); an IPv4 or
  IPv6 address or ``localhost`` exactly; any other name as a domain and its subdomains (``example.com``
  exempts ``example.com`` and ``a.example.com``, not ``badexample.com``; ``.example.com`` exempts
  ``a.example.com`` but not ``example.com``); a port, if given, must match;
- the most specific pattern decides: one with a port before one without, a longer host first, then a
  longer scheme. An entry of ``NO_PROXY`` that httpx could not parse (httpx refuses to make a client at
  all then) is passed over here.
"""

from __future__ import annotations

import base64
import ipaddress
import re
import urllib.request
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

import httpx

__all__ = ["environment_proxy", "proxy_credentials"]


@dataclass(frozen=True)
class _Route:
    """One pattern of the environment's proxy table, and the proxy it names (``None``: go directly)."""

    scheme: str  # ("" for any scheme)
    host: re.Pattern[str] | None  # (None for any host)
    host_length: int
    port: int | None
    proxy: str | None

    def matches(self, url: httpx.URL) -> bool:
        return ((not self.scheme or self.scheme == url.scheme)
                and (self.host is None or self.host.match(url.host) is not None)
                and (self.port is None or self.port == url.port))

    @property
    def rank(self) -> tuple[int, int, int]:
        # The most specific first: a port, then a longer host, then a longer scheme (httpx's order).
        return (0 if self.port is not None else 1, -self.host_length, -len(self.scheme))


def _route(pattern: str, proxy: str | None) -> _Route | None:
    try:
        parsed = httpx.URL(pattern)
        port = parsed.port
    except (httpx.InvalidURL, ValueError):
        return None
    host = parsed.host
    if not host or host == "*":
        regex = None
    elif host.startswith("*."):  # (subdomains only)
        regex = re.compile(rf"^.+\.{re.escape(host[2:])}$")
    elif host.startswith("*"):  # (the domain and its subdomains)
        regex = re.compile(rf"^(.+\.)?{re.escape(host[1:])}$")
    else:
        regex = re.compile(rf"^{re.escape(host)}$")
    return _Route("" if parsed.scheme == "all" else parsed.scheme, regex, 0 if host == "*" else len(host), port,
                  proxy)


def _is_address(entry: str, kind: type[ipaddress.IPv4Address] | type[ipaddress.IPv6Address]) -> bool:
    try:
        kind(entry.split("/")[0])
    except ValueError:
        return False
    return True


def _exemption(entry: str) -> str:
    # The pattern a NO_PROXY entry stands for.
    if "://" in entry:
        return entry
    if _is_address(entry, ipaddress.IPv4Address) or entry.lower() == "localhost":
        return f"all://{entry}"
    if _is_address(entry, ipaddress.IPv6Address):
        return f"all://[{entry}]"
    return f"all://*{entry}"


def _routes() -> list[_Route]:
    settings = urllib.request.getproxies()
    table: dict[str, str | None] = {}
    for scheme in ("http", "https", "all"):
        proxy = settings.get(scheme)
        if proxy:
            table[f"{scheme}://"] = proxy if "://" in proxy else f"http://{proxy}"
    for entry in (part.strip() for part in settings.get("no", "").split(",")):
        if entry == "*":
            return []
        if entry:
            table[_exemption(entry)] = None  # (a later entry of the same pattern replaces the earlier, as in httpx)
    routes = [route for pattern, proxy in table.items() if (route := _route(pattern, proxy)) is not None]
    return sorted(routes, key=lambda route: route.rank)  # (stable: ties keep the table's order)


def environment_proxy(url: str) -> str | None:
    """The proxy httpx would send ``url`` through, from the environment; ``None`` when it would go directly.

    With ``HTTPS_PROXY=http://proxy.example:3128`` and ``NO_PROXY=internal.example``, a run to
    ``https://agent.example/run`` goes through ``http://proxy.example:3128``, and one to
    ``https://a.internal.example/run`` directly (``tests/test_proxies.py`` checks such cases against httpx).
    """
    routes = _routes()
    if not routes:
        return None
    try:
        target = httpx.URL(url)
    except (httpx.InvalidURL, ValueError):
        return None  # (the run fails when it is sent, with the URL's own error)
    for route in routes:
        if route.matches(target):
            return route.proxy
    return None


def proxy_credentials() -> tuple[tuple[str, str], ...]:
    """The ``Proxy-Authorization`` httpx sends to each proxy the environment names with a user and password
    (``HTTP_PROXY=http://user:pw@proxy``). It is no header of the request, so a redactor built from the request
    would not know it: a proxy (or what it forwards to) echoing it in an answer got it into an error or a
    result. Read when a client is made, as httpx reads the environment when its client is made."""
    found: list[tuple[str, str]] = []
    for value in urllib.request.getproxies().values():
        try:
            parts = urlsplit(value if "://" in value else f"http://{value}")
            user, password = parts.username, parts.password
        except ValueError:
            continue
        if user or password:
            pair = f"{unquote(user or '')}:{unquote(password or '')}".encode()
            found.append(("Proxy-Authorization", f"Basic {base64.b64encode(pair).decode('ascii')}"))
    return tuple(found)
