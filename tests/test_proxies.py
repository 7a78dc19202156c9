"""Whether a URL goes through the environment's proxy is decided as httpx decides it.

The client keeps httpx's own transport only where httpx would use a proxy, and the CLI's recorder wraps
the proxy's transport (``agui_client/_proxies.py``). The decision used to be ``urllib``'s reading of
``NO_PROXY``, which differs from httpx's: ``NO_PROXY=.example.com`` exempts ``example.com`` itself for
urllib but not for httpx, and urllib does not read ``NO_PROXY`` entries written as URLs. On a network
that lets only the proxy out, a run to such a host went out directly and failed. The oracle here is
httpx's own routing of a client made from the same environment.
"""

from __future__ import annotations

import contextlib
import ssl
from collections.abc import Iterator

import httpx
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from agui_client._proxies import environment_proxy

_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "REQUEST_METHOD")


@contextlib.contextmanager
def _environment(monkeypatch: pytest.MonkeyPatch, values: dict[str, str]) -> Iterator[None]:
    with monkeypatch.context() as patch:
        for name in _VARIABLES:
            patch.delenv(name, raising=False)
            patch.delenv(name.lower(), raising=False)
        for name, value in values.items():
            patch.setenv(name, value)
        yield


# One TLS context for every oracle client: httpx otherwise builds one (loading the CA bundle) for the
# client and for each proxy it mounts, a tenth of a second per client, which the routing never reads.
_TLS = ssl.create_default_context()


def _httpx_choice(values: dict[str, str], url: str) -> str | None:
    """The proxy httpx's own client, made from this environment, would send ``url`` through."""
    client = httpx.Client(verify=_TLS)
    try:
        transport = client._transport_for_url(httpx.URL(url))
        if transport is client._transport:
            return None
        pattern = next(p.pattern for p, t in client._mounts.items() if t is transport)
        proxy = values[f"{pattern.split(':')[0].upper()}_PROXY"]
        return proxy if "://" in proxy else f"http://{proxy}"
    finally:
        client.close()


ENVIRONMENTS = [
    {"HTTP_PROXY": "http://p1:3128"},
    {"HTTPS_PROXY": "http://p2:3128", "HTTP_PROXY": "p1:8080"},
    {"ALL_PROXY": "http://p3:3128", "HTTPS_PROXY": "http://p2:3128"},
    {"HTTPS_PROXY": "http://p2:3128", "NO_PROXY": "*"},
    {"HTTPS_PROXY": "http://p2:3128", "HTTP_PROXY": "http://p1:1", "NO_PROXY": "example.com"},
    {"HTTPS_PROXY": "http://p2:3128", "HTTP_PROXY": "http://p1:1", "NO_PROXY": ".example.com"},
    {"HTTPS_PROXY": "http://p2:3128", "HTTP_PROXY": "http://p1:1", "NO_PROXY": "http://example.com"},
    {"HTTPS_PROXY": "http://p2:3128", "HTTP_PROXY": "http://p1:1", "NO_PROXY": "example.com:8443, localhost"},
    {"ALL_PROXY": "http://p3:3128", "NO_PROXY": "127.0.0.1,::1"},
    {"ALL_PROXY": "http://p3:3128", "NO_PROXY": "10.0.0.0/8"},
    {"ALL_PROXY": "http://p3:3128", "NO_PROXY": " , EXAMPLE.com ,"},
    {"ALL_PROXY": "http://p3:3128", "NO_PROXY": "all://"},
    {"HTTP_PROXY": "http://p1:1", "HTTPS_PROXY": "http://p2:2", "NO_PROXY": "https://"},
    {"NO_PROXY": "example.com"},
]

URLS = [
    "http://example.com/run", "https://example.com/run", "https://a.example.com/run", "https://badexample.com/",
    "https://example.com:8443/run", "https://a.example.com:8443/", "http://localhost:8000/", "http://127.0.0.1:9/",
    "http://[::1]:8000/", "http://10.0.0.1/", "http://10.0.0.0/", "https://other.org/", "https://EXAMPLE.COM/",
]


@pytest.mark.parametrize("values", ENVIRONMENTS, ids=lambda values: ";".join(f"{k}={v}" for k, v in values.items()))
def test_the_choice_is_httpxs_on_a_table(monkeypatch: pytest.MonkeyPatch, values: dict[str, str]) -> None:
    with _environment(monkeypatch, values):
        for url in URLS:
            assert environment_proxy(url) == _httpx_choice(values, url), url


def test_a_leading_dot_does_not_exempt_the_domain_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    # The case urllib and httpx read differently: httpx (and curl before it) proxies example.com itself.
    with _environment(monkeypatch, {"HTTPS_PROXY": "http://p2:3128", "NO_PROXY": ".example.com"}):
        assert environment_proxy("https://example.com/run") == "http://p2:3128"
        assert environment_proxy("https://a.example.com/run") is None


def test_an_unparsable_url_or_entry_is_no_proxy_and_no_error(monkeypatch: pytest.MonkeyPatch) -> None:
    with _environment(monkeypatch, {"HTTPS_PROXY": "http://p2:3128", "NO_PROXY": "http://[bad,example.com"}):
        for url in ("https://\x00x/", "http://a:99999/"):
            assert environment_proxy(url) is None  # (sending it fails later, with its own error)
        assert environment_proxy("https://example.com/") is None
        assert environment_proxy("https://other.org/") == "http://p2:3128"


_names = st.sampled_from(["example.com", ".example.com", "a.example.com", "*.example.com", "localhost",
                          "127.0.0.1", "::1", "other.org", "http://example.com", "https://a.example.com:8443",
                          "example.com:8443", "EXAMPLE.COM", "all://", "https://", "10.0.0.0/8", "*", ""])


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(no_proxy=st.lists(_names, max_size=4),
       schemes=st.sets(st.sampled_from(["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"]), min_size=1),
       url=st.sampled_from(URLS))
def test_the_choice_is_httpxs_for_any_mix(monkeypatch: pytest.MonkeyPatch, no_proxy: list[str], schemes: set[str],
                                          url: str) -> None:
    values = {name: f"http://{name.lower()}.proxy:3128" for name in schemes}
    values["NO_PROXY"] = ",".join(no_proxy)
    with _environment(monkeypatch, values):
        try:
            expected = _httpx_choice(values, url)
        except (ValueError, httpx.InvalidURL):
            assume(False)  # (httpx makes no client at all from this environment)
        assert environment_proxy(url) == expected
