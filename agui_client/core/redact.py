"""Keeping the caller's credentials out of everything the client reports about an exchange.

An agent, or a proxy in front of it, may echo the request in what it answers: a 403 page listing
the headers it got, a 502 page quoting the request line, a ``RUN_ERROR`` whose message repeats the
``Authorization`` header. Whatever the client then reports (an error's message and attributes, a
warning, a log line, the record a store keeps) would hand the credential to whoever reads it.

A :class:`Redactor` is built from the request that was sent: the value of every sensitive header
(and every sensitive query parameter and the userinfo of the URL), in the forms a server may echo
it, is replaced by :data:`MARK` wherever it appears. Every path that turns agent-supplied text into
something the caller sees goes through one, sync and async alike.

Which names are sensitive: ``Authorization``, ``Proxy-Authorization``, ``Cookie``, and any name
holding one of :data:`SENSITIVE_WORDS` (``X-Api-Key``, ``X-Auth-Token``, ``X-Session-Id``,
``api_key`` …), plus the names a caller marks (``AgentClient(sensitive_headers=...)``). A URL's
query (or fragment) parameter, and a cookie, is also sensitive when one of its name's words is
``code``, ``access``, ``sig``, ``sid``, ``pwd``, ``pw``, ``pass`` or ``otp`` (an OAuth ``code``,
``code_verifier``, an Azure SAS ``sig``): in a header's name those words mean something else
(``Access-Control-Allow-Origin``, ``X-Error-Code``).

What is a secret, one rule per kind:

* a sensitive header's whole value, the credential after its scheme (``Bearer x`` → ``x``), a Basic
  credential's decoded ``user:password`` and password, and each ``name=value`` part of a cookie or
  parameter list whose value stands on its own (8 characters or more) or whose name is sensitive
  (``sid=4f2a``);
* a sensitive parameter's value as written and decoded, if 4 characters or more (a shorter one is
  hidden where the URL is shown, but not looked for in text: ``lang_code=en`` would take every
  standalone "en" out of an error), and the URL's userinfo and password as written and decoded;
* inside each of those, every run of 16 or more token characters (letters, digits, ``-``, ``_``):
  a JWT's claims or signature echoed alone, the access key id inside an AWS ``X-Amz-Credential``, the
  half of a token split across two cookies. A cookie's name is not (``analytics_opt_in_version=2``), nor
  is a JWT's first part, its JOSE header (``{"alg": …}``): it is the same in every token its issuer
  signs alike, and says how it is signed.

The forms each is looked for in: each character as itself or escaped, chosen character by
character, as percent-encoding (each UTF-8 byte), JSON or a Python ``repr`` (``\\"``, ``\\/``,
``\\u0026``, ``\\xe9``, a surrogate pair), or HTML (``&#38;``, ``&#x26;``, ``&amp;``) write it,
nested up to four times (quoted twice, JSON in JSON doubles the backslashes, a URL encoded twice
writes ``%2541``) or JSON put in a URL (``%5Cu00e9``), the hex digits of escapes in either case; a
character past ASCII also as its UTF-8 bytes, each as itself (a text read one byte a character) or
percent-encoded, so any mix of escapes is found; the whole as the hex digits of its UTF-8
bytes (a secret of 8 characters or more: 16 digits or more); base64-encoded (standalone or inside a
longer base64 text, standard or URL-safe alphabet); and, for a text that read UTF-16 or UTF-32 bytes as
if they were one byte a character, a NUL beside each letter.

Nothing is redacted for its shape alone: a run id, a message id or an interrupt id written in hex (a
UUID, 32 hex digits) is left as it is unless it holds a form of a secret the request carried, and a
secret's hex digits are looked for only from 16 on (a 6-character key's 12 hex digits are as likely
to be a colour or a hash's start as its echo).

An answer's bytes (an error page, a recording) are searched before they are read as text, by a
:class:`BytesRedactor`: in the charset the answer names, and whatever it names in UTF-8, UTF-16 and
UTF-32 in both byte orders (:data:`RAW_ENCODINGS`), as an agent may write in another charset than it
names, or name none. Each secret found is replaced by the mark as that encoding writes it, so the
rest still reads.

Short values: a value shorter than :data:`MIN_ANYWHERE` characters is replaced only where it stands
alone (not inside a longer word or number), so a two-letter key does not turn every word holding
those letters into a mark; a longer one is replaced wherever it appears, in any case (an agent that
folds what it quotes to lower case, as header names are, still gives most of a key away).

Nothing here does I/O: the session (sans-IO) applies the same redactor to what it reports.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import functools
import html
import json
import re
import types
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, TypeVar
from urllib.parse import quote, quote_plus, unquote, unquote_plus, urlsplit, urlunsplit

import attrs

from .escapes import (
    ENCODED_BACKSLASHES,
    ESCAPE,
    UTF8,
    character,
    halves,
    runs,
    unescape,
    utf8_character,
    written_width,
)

__all__ = ["MARK", "MIN_ANYWHERE", "RAW_ENCODINGS", "SENSITIVE_WORDS", "SENSITIVE_EXTENSION", "BytesRedactor",
           "Redactor", "displayed_url", "exception_chain", "is_sensitive", "redact_exception", "redact_json",
           "redact_record"]

#: What a secret is replaced with.
MARK = "[redacted]"
#: A secret shorter than this is replaced only where it stands alone (see the module's docstring).
MIN_ANYWHERE = 8
#: A header or query parameter whose (lower-cased) name contains one of these holds a secret.
SENSITIVE_WORDS = ("auth", "key", "token", "secret", "session", "password", "passwd", "passphrase", "signature",
                   "credential", "cookie", "csrf", "xsrf", "jwt", "bearer", "private")
#: The request extension under which a client hands a transport the names it marked sensitive (a frozenset of
#: lower-cased names): a recording transport redacts what it writes with them too.
SENSITIVE_EXTENSION = "agui_client.sensitive_headers"
#: The encodings an answer's bytes are searched in for a secret, besides the charset the answer names.
RAW_ENCODINGS = ("utf-8", "utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be")
# What a form of a secret written with a NUL between letters, or as JSON escapes, holds (a text without
# it holds no such form).
_GATES = ("\x00", "\\u")
# Names too short to search for inside other names, sensitive only as the whole name.
_SENSITIVE_NAMES = frozenset({"sig", "pwd", "pass", "sid"})
# Words that name a credential in a URL's parameter (or a cookie's name), as one word of the name
# (``code``, ``code_verifier``, ``accessKey``, ``X-Amz-Sig``), but something else in a header's name
# (``Access-Control-Allow-Origin``, ``X-Error-Code``): sensitive in parameters and cookies only.
_PARAMETER_WORDS = frozenset({"code", "access", "sig", "sid", "pwd", "pw", "pass", "otp"})
# A name's words: its runs of letters, split where a lower-case letter meets an upper-case one.
_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
# A parameter value shorter than this is hidden where the URL is shown, but not looked for in text:
# ``country_code=us`` would otherwise take every standalone "us" out of an error's words.
_SHORTEST_PARAMETER = 4
# A run of this many token characters (base64url's: letters, digits, ``-`` and ``_``) inside a longer
# secret is a secret of its own: a JWT's payload or signature echoed alone, an AWS access key id out of
# its ``X-Amz-Credential``, the half of a token split across two cookies. 16 such characters are 96 bits
# of a random token; what a credential holds besides is shorter (``aws4_request``, ``us-east-1``, a date).
_PIECE = re.compile(r"[A-Za-z0-9_-]{16,}")
# What a text holding an escaped form of a secret holds: without one, only its plain forms are looked for.
_ESCAPES = ("%", "\\", "&")
# How many exceptions of one chain (causes, contexts, a group's members) are walked, at most.
_CHAIN_LINKS = 256
# A cut text may end with the start of a secret; this much of one at its very end is replaced too.
_TAIL = 4

_E = TypeVar("_E", bound=BaseException)


def is_sensitive(name: str, marked: Iterable[str] = ()) -> bool:
    """Whether a header or query parameter called ``name`` holds a secret (``marked``: lower-cased extra names)."""
    lowered = name.strip().lower()
    return lowered in _SENSITIVE_NAMES or lowered in marked or any(word in lowered for word in SENSITIVE_WORDS)


def _sensitive_parameter(name: str, marked: Iterable[str] = ()) -> bool:
    """Whether a URL's query (or fragment) parameter, or a cookie, called ``name`` holds a secret: as a header
    would, or when one of its words is one of ``_PARAMETER_WORDS``."""
    return is_sensitive(name, marked) or any(word.lower() in _PARAMETER_WORDS for word in _WORDS.findall(name))


class Redactor:
    """Replaces the secrets of one exchange in text; calling it is :meth:`text`.

    Build it with :meth:`of`; an empty one (no secrets) hands every text back unchanged, at no cost.
    """

    def __init__(self, secrets: Iterable[str] = (), *, marked: Iterable[str] = ()) -> None:
        # Longest first, so a whole value is replaced before the credential inside it.
        self.secrets = tuple(sorted({s for s in secrets if s}, key=len, reverse=True))
        self.marked = frozenset(marked)
        self._pattern: re.Pattern[str] | None = None  # (compiled when a secret is first found: most never are)
        self._needles: tuple[str, ...] | None = None
        self._gated: tuple[tuple[str, tuple[str, ...]], ...] = ()
        self._read: tuple[str, ...] = ()
        self._runs: tuple[tuple[bytes, bytes], ...] = ()
        self._wide_read: tuple[str, ...] = ()
        self._prefixes: tuple[str, ...] | None = None

    @classmethod
    def of(cls, headers: Iterable[tuple[str, str]] = (), urls: Iterable[str] = (), *,
           marked: Iterable[str] = ()) -> Redactor:
        """The redactor for a request: its headers (name, value pairs) and the URLs it went to.

        ``marked`` names more headers (and query parameters) whose values are secrets.
        """
        names = frozenset(name.strip().lower() for name in marked)
        found: list[str] = []
        for name, value in headers:
            if is_sensitive(name, names):
                found += _header_secrets(value)
        for url in urls:
            found += _url_secrets(url, names)
        return cls([*found, *(piece for secret in found for piece in _pieces(secret))], marked=names)

    def __bool__(self) -> bool:
        return bool(self.secrets)

    @property
    def longest(self) -> int:
        """The length of the longest form of a secret it replaces (0 without secrets): what a text redacted
        as it streams must hold back at its end, as a secret may be cut between two pieces.

        Measured on the pattern itself (each character's widest escape it accepts, nesting included), so
        a form it finds whole is also found when a stream cuts it anywhere."""
        return max((max(written_width(secret), *map(len, _forms(secret))) for secret in self.secrets), default=0)

    def __call__(self, text: str) -> str:
        return self.text(text)

    def text(self, text: str, *, cut: bool = False) -> str:
        """``text`` with every secret replaced by :data:`MARK`.

        ``cut``: the text is an excerpt cut off at its end, which may end with the start of a secret:
        that start is replaced too.
        """
        if not self.secrets or not text:
            return text
        if self._needles is None:
            needles = {form.lower() for secret in self.secrets for form in _forms(secret)}
            # (a needle holding another is found whenever that one is: only the others are looked for)
            kept = [n for n in needles if not any(o in n for o in needles if o != n)]
            # (a form holding a NUL or a JSON escape is looked for only in a text holding one: most hold neither)
            self._needles = tuple(n for n in kept if not _gate(n))
            self._gated = tuple((gate, tuple(n for n in kept if _gate(n) == gate)) for gate in _GATES)
            # (what a text with its escapes read holds: a secret, its UTF-8 bytes one a character, or its
            # characters past U+FFFF as the two halves of a surrogate pair JSON writes them as)
            self._read = tuple({form.lower() for secret in self.secrets for form in (
                secret, secret.encode("utf-8", "surrogatepass").decode("latin-1"), halves(secret))})
            self._runs = runs(self._read)
            self._wide_read = tuple(secret for secret in self._read if not secret.isascii())
        # (a plain search first: most texts hold no secret, and the pattern is slower to run over them)
        lowered = text.lower()
        if any(needle in lowered for needle in self._needles) or any(
                gate in lowered and any(needle in lowered for needle in gated) for gate, gated in self._gated) or (
                any(mark in text for mark in _ESCAPES) and self._escaped_in(text, lowered)):
            if self._pattern is None:
                # (its compiling took three times what the rest of a redactor's first use took, 10-20 ms)
                self._pattern = _compile(self.secrets)
            text = self._pattern.sub(MARK, text)
        return self._cut_tail(text) if cut else text

    def _escaped_in(self, text: str, lowered: str) -> bool:
        """Whether ``text``, its escapes read (``ESCAPE``), holds a secret: only then is the pattern, which
        finds each of its characters escaped or not, run over it."""
        # (first, at the speed of bytes: a written form of a secret is a run of its characters and of
        # the characters escapes are made of, at least as long as the secret; a text without such a run
        # cannot hold one, and reading its escapes, a regular expression and a call an escape, cost a
        # recording of a chat full of "\n", "&" and "%" nine times what it cost before escapes were read)
        data = text.encode("utf-8", "surrogatepass")
        if not any(run in data.translate(table) for table, run in self._runs):
            return False
        read = ESCAPE.sub(unescape, text)
        if self._holds(read):
            return True
        # (JSON put in a URL reads as JSON once its percent-encoding is read: ``%5Cu00e9``, ``\u00e9``, é.
        # Read twice only then: a second reading of every text holding escapes cost it half as much again)
        if any(backslash in lowered for backslash in ENCODED_BACKSLASHES):
            return self._holds(ESCAPE.sub(unescape, read))
        return False

    def _holds(self, read: str) -> bool:
        """Whether ``read`` (a text with its escapes read) holds a secret: as it is, or with the UTF-8 bytes a
        reading left one a character (percent-encoded, or raw in a text read one byte a character) taken
        as the characters they write, so that a form mixing a character escaped with one percent-encoded
        or raw reads as the secret."""
        lowered = read.lower()
        if any(secret in lowered for secret in self._read):
            return True
        # (only a secret past ASCII has bytes to read as characters)
        if self._wide_read and not read.isascii():
            lowered = UTF8.sub(utf8_character, read).lower()
            return any(secret in lowered for secret in self._wide_read)
        return False

    def url(self, url: str) -> str:
        """``url`` for display: no userinfo, sensitive query (and fragment) values replaced, then :meth:`text`."""
        try:
            parts = urlsplit(url)
        except ValueError:  # (not a URL one can take apart: redacted as text)
            return self.text(url)
        netloc = parts.netloc.rpartition("@")[2]
        shown = urlunsplit((parts.scheme, netloc, parts.path, self._pairs(parts.query),
                            self._pairs(parts.fragment)))
        return self.text(shown)

    def json(self, value: Any) -> Any:
        """A parsed JSON value with every string (keys too) redacted; the same value when nothing is secret."""
        return redact_json(value, self.text) if self.secrets else value

    def _pairs(self, text: str) -> str:
        if not text:
            return text
        out = []
        for item in text.split("&"):
            name, eq, value = item.partition("=")
            out.append(f"{name}={MARK}" if eq and value and _sensitive_parameter(unquote_plus(name), self.marked)
                       else item)
        return "&".join(out)

    def _cut_tail(self, text: str) -> str:
        if self._prefixes is None:
            self._prefixes = tuple(form for secret in self.secrets for form in _forms(secret) if len(form) > _TAIL)
        for form in self._prefixes:
            for size in range(len(form) - 1, _TAIL - 1, -1):
                if text.endswith(form[:size]):
                    return text[:-size] + MARK
        return text


class BytesRedactor:
    """Replaces the secrets of one exchange in an answer's bytes, before anything reads them as text.

    An answer is searched in the ``charset`` it names and, whatever it names, in :data:`RAW_ENCODINGS`:
    read only as named, a token echoed in a UTF-16 page that names UTF-8, or none, stood in an error's
    excerpt and a recording as ``s\\x00k\\x00…``. Each form of each secret is replaced by
    :data:`MARK` as the encoding that wrote it writes the mark, so the rest of the answer still reads.
    Calling it with bytes returns them redacted; :attr:`keep` is how many bytes at the end of a piece may
    be the start of a secret (what a scrub of a stream holds back).
    """

    __slots__ = ("_text", "_coded", "_wide", "_rules", "keep")

    def __init__(self, redactor: Redactor, charset: str | None = None) -> None:
        # The bytes are read as latin-1 (one character a byte, nothing lost): a form written as ASCII, or
        # as UTF-8 (a secret outside ASCII is also looked for as its UTF-8 bytes read so), is found by a
        # text redactor; a form an encoding writes otherwise is replaced as that encoding writes it.
        utf8 = [s.encode("utf-8", "surrogatepass").decode("latin-1") for s in redactor.secrets if not s.isascii()]
        self._text = Redactor([*redactor.secrets, *utf8], marked=redactor.marked) if utf8 else redactor
        coded: dict[str, str] = {}
        rules: list[_Rule] = []
        for name in _encodings(charset) if redactor else ():
            mark = _written(MARK, name)
            if mark is None:
                continue
            table = _fold_table(name)
            # (in any case where the text rule is: a long secret, and the hex digits of an escape)
            folded: dict[bytes, None] = {}
            exact: dict[bytes, None] = {}
            for secret in redactor.secrets:
                for form in _escaped(secret):
                    written = _written(form, name)
                    if written is not None and written != form:
                        coded.setdefault(written, mark)
                        anycase = len(secret) >= MIN_ANYWHERE or "%" in form or "\\u" in form
                        (folded if anycase else exact)[written.encode("latin-1").translate(table if anycase
                                                                                               else None)] = None
            rules += [_Rule.of(needles, fold, mark.encode("latin-1"))
                      for needles, fold in ((folded, table), (exact, None)) if needles]
        # Replaced by these, each by the mark as its encoding writes it: the text redactor, which writes
        # the mark one byte a character whatever it found, then finds none of them (a UTF-16 page read on
        # as CJK after one).
        self._rules = tuple(rules)
        ordered = sorted(coded.items(), key=lambda pair: len(pair[0]), reverse=True)
        # (the forms as written, whose start the end of a cut excerpt may hold)
        self._wide = tuple(pair for pair in ordered if "\x00" in pair[0])
        self._coded = tuple(pair for pair in ordered if "\x00" not in pair[0])
        self.keep = max([self._text.longest, *(len(form) for form, _mark in ordered)]) - 1 if redactor else 0

    def __bool__(self) -> bool:
        return bool(self._text)

    def __call__(self, data: bytes, *, cut: bool = False) -> bytes:
        """``data`` with every secret replaced; ``cut``: the bytes were cut off at their end, which may hold
        the start of a secret (replaced too)."""
        if not self._text or not data:
            return data
        wide = b"\x00" in data
        for rule in self._rules:
            if wide or not rule.wide:
                data = rule(data)
        read = self._text.text(data.decode("latin-1"), cut=cut)
        if cut:
            read = self._cut_tail(read)
        return read.encode("latin-1")

    def _cut_tail(self, read: str) -> str:
        for form, mark in (*self._wide, *self._coded):
            for size in range(len(form) - 1, _TAIL - 1, -1):
                if read.endswith(form[:size]):
                    return read[:-size] + mark
        return read


def displayed_url(url: str, *, marked: Iterable[str] = ()) -> str:
    """``url`` fit to show a person: no userinfo, each sensitive query (or fragment) value replaced by :data:`MARK`.

    ``marked`` names more query parameters that hold secrets. For hints and reports that name an
    agent's URL (``agui run``'s "to answer later" line, the probe's report)::

        >>> displayed_url("https://bob:pw@agent.example/run?token=abc&v=2")
        'https://agent.example/run?token=[redacted]&v=2'
    """
    return Redactor.of(urls=[url], marked=marked).url(url)


def redact_json(value: Any, redact: Callable[[str], str]) -> Any:
    """``value`` (parsed JSON) with ``redact`` applied to every string in it, keys included."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        return {redact(k) if isinstance(k, str) else k: redact_json(v, redact) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_json(v, redact) for v in value]
    return value


def redact_exception(exc: _E, redact: Callable[[str], str], *, keep: Iterable[str] = ()) -> _E:
    """Redact, in place, what ``exc`` says, and what every exception it was raised from or while
    handling says (``__cause__``, ``__context__``, an exception group's members), as a traceback prints
    them all: their arguments, their notes, and every text attribute, in ``__dict__`` or in slots (an
    ``OSError``'s ``strerror`` and file names, a ``UnicodeError``'s reason too), also on an exception
    whose class refuses to be changed (a frozen ``attrs`` one).

    Attributes holding text (or tuples and lists of text, or JSON) are redacted; others (a result, a
    request) are left to their owners, as are the attributes named in ``keep``. Returns ``exc``.
    """
    kept = set(keep)
    for link in exception_chain(exc):
        _redact_one(link, redact, kept)
    return exc


def exception_chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and every exception it was raised from or while handling (``__cause__``, ``__context__``,
    an exception group's members), each once, as a traceback prints them: the one walk of a chain that
    redacting it and looking in it for a TLS failure share."""
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    # (bounded: a chain is as long as whoever raised it made it, and a cycle is possible)
    while todo and len(seen) < _CHAIN_LINKS:
        link = todo.pop()
        if id(link) in seen:
            continue
        seen.add(id(link))
        yield link
        todo += [e for e in (link.__cause__, link.__context__) if e is not None]
        members = getattr(link, "exceptions", None)  # (an exception group's, from Python 3.11 or its backport)
        if isinstance(members, tuple):
            todo += [e for e in members if isinstance(e, BaseException)]


def _redact_one(exc: BaseException, redact: Callable[[str], str], kept: set[str]) -> None:
    # Each attribute is written where it lives (the instance's dict, its slot, the built-in field), past
    # a class that refuses changes (a frozen ``attrs`` exception) or runs code on them: its secrets go
    # whatever its class says, and an error raised here would replace the one being reported.
    _put(exc, "args", tuple(_redacted_item(arg, redact) for arg in exc.args))
    notes = getattr(exc, "__notes__", None)
    if isinstance(notes, list):
        notes[:] = [redact(n) if isinstance(n, str) else n for n in notes]
    # (an OSError's message is made of these, a UnicodeError's of its reason, not of their args)
    for name in next((names for kind, names in _MESSAGE_FIELDS.items() if isinstance(exc, kind)), ()):
        value = getattr(exc, name, None)
        if isinstance(value, str):
            _put(exc, name, redact(value))
    namespace: dict[str, Any] = getattr(exc, "__dict__", None) or {}
    for name, value in list(namespace.items()):
        if name not in kept and not name.startswith("__"):
            redacted = _redacted_item(value, redact)
            if redacted is not value:
                namespace[name] = redacted
    for name, slot in _slots(type(exc)):
        if name not in kept and not name.startswith("__"):
            try:
                value = slot.__get__(exc, type(exc))
            except AttributeError:  # (a slot never set)
                continue
            redacted = _redacted_item(value, redact)
            if redacted is not value:
                slot.__set__(exc, redacted)


#: The attributes a built-in exception's message is made of, besides its arguments.
_MESSAGE_FIELDS: dict[type[BaseException], tuple[str, ...]] = {
    OSError: ("strerror", "filename", "filename2"), UnicodeError: ("reason",)}


def _slots(cls: type) -> list[tuple[str, Any]]:
    """The slots of ``cls`` and its bases (an ``attrs`` exception keeps its fields in them), as their
    names and member descriptors."""
    found = []
    for owner in cls.__mro__:
        slots = owner.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            slot = owner.__dict__.get(name) if isinstance(name, str) else None
            if isinstance(slot, types.MemberDescriptorType):
                found.append((name, slot))
    return found


def _put(exc: BaseException, name: str, value: Any) -> None:
    """Set the built-in field ``name`` of ``exc`` (``args``, an ``OSError``'s ``strerror``), past its class."""
    try:
        object.__setattr__(exc, name, value)
    except (AttributeError, TypeError):  # (nowhere to put it)
        return


def redact_record(record: Any, redact: Callable[[str], str], fields: Iterable[str]) -> Any:
    """A frozen attrs ``record`` with ``redact`` applied to its text (or JSON) ``fields``; ``record`` when unchanged."""
    changes = {}
    for name in fields:
        value = getattr(record, name)
        if value is None:
            continue
        redacted = redact(value) if type(value) is str else _redacted_item(value, redact)
        if redacted != value:
            changes[name] = redacted
    return attrs.evolve(record, **changes) if changes else record


def _redacted_item(value: Any, redact: Callable[[str], str]) -> Any:
    # Text, and containers of plain JSON, are redacted; anything else is returned as it is.
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, (dict, list, tuple)) and _plain(value):
        redacted = redact_json(value, redact)
        return tuple(redacted) if isinstance(value, tuple) else redacted
    return value


def _plain(value: Any, depth: int = 0) -> bool:
    # Only JSON-like containers (bounded in depth) are rebuilt: a tuple of typed records (interrupts)
    # is not turned into a list of them.
    if depth > 64:
        return False
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v, depth + 1) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return all(_plain(v, depth + 1) for v in value)
    return value is None or isinstance(value, (str, int, float, bool))


def _header_secrets(value: str) -> list[str]:
    # The forms a header value's secret takes (before encoding): the whole value, the credential after
    # its scheme, a Basic credential decoded, and the values of a cookie or parameter list.
    value = value.strip()
    found = [value]
    scheme, space, rest = value.partition(" ")
    rest = rest.strip()
    schemed = bool(space and rest and scheme.isascii() and scheme.replace("-", "").isalnum())
    if schemed:
        found.append(rest)
        if scheme.lower() == "basic":
            found += _basic(rest)
    # (a cookie list's first pair is no scheme: ``session=…; theme=dark`` is split whole, its session too)
    for part in re.split(r"[;,]", rest if schemed else value):
        name, eq, item = part.strip().partition("=")
        item = item.strip().strip('"')
        # (a long-enough part stands on its own, and one a sensitive name holds whatever its length
        # (``sid=4f2a``); another short one, ``theme=dark``, is ordinary text)
        if eq and item and (len(item) >= MIN_ANYWHERE or _sensitive_parameter(name)):
            found.append(item)
    return found


def _basic(credential: str) -> list[str]:
    try:
        decoded = base64.b64decode(credential, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return []
    user, colon, password = decoded.partition(":")
    found = [decoded]
    if colon:
        found.append(password)
        if len(user) >= MIN_ANYWHERE:  # (a user name alone is a secret only when long: an API key as user)
            found.append(user)
    return found


def _url_secrets(url: str, marked: frozenset[str]) -> list[str]:
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    found: list[str] = []
    userinfo, at, _host = parts.netloc.rpartition("@")
    if at and userinfo:
        user, colon, password = userinfo.partition(":")
        # (each as written and decoded: the forms of the decoded one take in any other way of encoding it)
        found += [userinfo, unquote(userinfo)]
        if colon and password:
            found += [password, unquote(password), unquote(password, encoding="latin-1")]
        if len(unquote(user)) >= MIN_ANYWHERE:
            found += [user, unquote(user)]
    for text in (parts.query, parts.fragment):
        for item in text.split("&") if text else ():
            name, eq, value = item.partition("=")
            if eq and len(unquote_plus(value)) >= _SHORTEST_PARAMETER and _sensitive_parameter(unquote_plus(name),
                                                                                                marked):
                found += [value, unquote_plus(value)]
    return found


def _pieces(secret: str) -> list[str]:
    """The runs of token characters in ``secret`` long enough to be secrets of their own (``_PIECE``), but
    a name in a ``name=value`` list (a cookie's: ``analytics_opt_in_version=2`` names no secret) and a JOSE
    header (a JWT's first part says only how it is signed, and is the same in every token one issuer
    signs alike)."""
    return [found[0] for found in _PIECE.finditer(secret)
            if found[0] != secret and not _named_value(secret, found.end()) and not _jose_header(found[0])]


def _named_value(text: str, at: int) -> bool:
    """Whether ``text`` has a ``name=value`` pair's ``=`` at ``at`` (base64's padding is no such ``=``: a
    second ``=``, a separator or the end follows it)."""
    return text[at:at + 1] == "=" and text[at + 1:at + 2] not in ("", "=", ";", ",", " ")


def _jose_header(piece: str) -> bool:
    try:
        decoded = json.loads(base64.urlsafe_b64decode(piece + "=" * (-len(piece) % 4)))
    except (ValueError, binascii.Error):
        return False
    return isinstance(decoded, dict) and "alg" in decoded


def _gate(needle: str) -> str | None:
    return next((gate for gate in _GATES if gate in needle), None)


def _forms(secret: str) -> list[str]:
    """``secret`` as a text may hold it: as :func:`_escaped` writes it, and (an ASCII one) as UTF-16 and
    UTF-32 write it, read one byte a character (a NUL beside each letter)."""
    forms = _escaped(secret)
    if secret.isascii():
        forms += [secret.encode(name).decode("latin-1") for name in RAW_ENCODINGS[1:]]
    return list(dict.fromkeys(forms))


def _escaped(secret: str) -> list[str]:
    """``secret`` as a server may echo it: as it is, percent-encoded, JSON- and HTML-escaped, in a repr,
    every character a JSON ``\\u`` escape, and base64-encoded."""
    forms = [secret, quote(secret, safe=""), quote(secret), quote_plus(secret),
             json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1],
             html.escape(secret), html.escape(secret, quote=False),
             secret.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&#34;")
             .replace("'", "&#39;"),
             repr(secret)[1:-1]]
    # (JSON lets a writer escape any character, and some escape them all; the hex digits come in either case)
    units = secret.encode("utf-16-be", "surrogatepass")
    forms.append("".join(f"\\u{int.from_bytes(units[i:i + 2], 'big'):04x}" for i in range(0, len(units), 2)))
    data = secret.encode("utf-8", "surrogatepass")
    forms.append("".join(f"%{byte:02X}" for byte in data))  # (every byte percent-encoded)
    if len(secret) >= MIN_ANYWHERE:  # (a short secret's base64 is a few letters any base64 text may hold)
        # (and its hex digits as few as a hex id, a hash or a colour holds: from 16 digits on, they are its)
        forms += [*_base64(data), data.hex()]
    return list(dict.fromkeys(forms))


def _base64(data: bytes) -> list[str]:
    """The base64 letters ``data`` decides wherever it starts in a longer base64 text (three alignments),
    in the standard and the URL-safe alphabet: a token echoed base64-encoded, alone or inside a blob
    (the request's headers encoded whole, say), is found by the letters that are its own."""
    forms = []
    for shift in range(3):
        coded = base64.b64encode(bytes(shift) + data).decode("ascii")
        own = coded[-(-8 * shift // 6):8 * (shift + len(data)) // 6]
        forms += [own, own.replace("+", "-").replace("/", "_")]
    return forms


def _encodings(charset: str | None) -> list[str]:
    """:data:`RAW_ENCODINGS`, and ``charset`` when it names a codec that writes text (UTF-16 and UTF-32 in
    both byte orders, as their byte order mark may say either)."""
    names = list(RAW_ENCODINGS)
    if charset:
        try:
            name = codecs.lookup(charset).name
            "-".encode(name)  # (refused for a codec that writes no text: base64, rot13 ...)
        except (LookupError, ValueError, TypeError):
            return names
        names += {"utf-16": ["utf-16-le", "utf-16-be"], "utf-32": ["utf-32-le", "utf-32-be"]}.get(name, [name])
    return list(dict.fromkeys(names))


@functools.lru_cache(maxsize=4096)
def _written(text: str, encoding: str) -> str | None:
    """``text`` as ``encoding`` writes it after another character (no byte order mark or signature), its
    bytes read as latin-1; ``None`` when it cannot write it."""
    try:
        encoder = codecs.getincrementalencoder(encoding)("strict")
        encoder.encode("x")
        return encoder.encode(text, final=True).decode("latin-1")
    except (UnicodeError, LookupError, ValueError, TypeError):
        return None


class _Rule:
    """The forms of the secrets one encoding writes otherwise than as text, looked for in bytes: through a
    table folding the encoding's letters to lower case when found in any case (``fold``), each replaced
    by ``mark``, the mark as that encoding writes it."""

    __slots__ = ("_needles", "_pattern", "_fold", "_mark", "wide")

    def __init__(self, needles: tuple[bytes, ...], fold: bytes | None, mark: bytes) -> None:
        self._needles = needles
        self._pattern: re.Pattern[bytes] | None = None  # (compiled when a form is first found: most never are)
        self._fold = fold
        self._mark = mark
        #: Every form holds a NUL (an ASCII secret as UTF-16 or UTF-32 writes it): bytes holding none hold
        #: no form. Not the encoding's (the mark's) NULs: a secret all of letters past U+00FF (a Cyrillic
        #: one) UTF-16 writes with none, in a page that may hold none either.
        self.wide = all(b"\x00" in needle for needle in needles)

    @classmethod
    def of(cls, needles: dict[bytes, None], fold: bytes | None, mark: bytes) -> _Rule:
        return cls(tuple(sorted(needles, key=len, reverse=True)), fold, mark)

    def __call__(self, data: bytes) -> bytes:
        # (the folded bytes are as long as the bytes: a form found in them is at the same place in these;
        # a plain search first, as most bytes hold none)
        view = data.translate(self._fold) if self._fold is not None else data
        if not any(needle in view for needle in self._needles):
            return data
        if self._pattern is None:
            self._pattern = re.compile(b"|".join(map(re.escape, self._needles)))
        out, last = [], 0
        for found in self._pattern.finditer(view):
            out += [data[last:found.start()], self._mark]
            last = found.end()
        out.append(data[last:])
        return b"".join(out)


#: ASCII's upper-case letters to lower case, byte for byte (as UTF-8, UTF-16 and UTF-32 write them).
_ASCII_FOLD = bytes.maketrans(bytes(range(0x41, 0x5B)), bytes(range(0x61, 0x7B)))


@functools.lru_cache(maxsize=64)
def _fold_table(encoding: str) -> bytes:
    """A table folding the letters ``encoding`` writes to lower case, one byte for one: a single-byte
    encoding's own (EBCDIC's), else ASCII's."""
    try:
        chars = bytes(range(256)).decode(encoding)
    except (UnicodeError, LookupError, ValueError, TypeError):
        return _ASCII_FOLD
    if len(chars) != 256:
        return _ASCII_FOLD
    table = bytearray(range(256))
    for byte, char in enumerate(chars):
        lowered = _written(char.lower(), encoding)
        if lowered is not None and len(lowered) == 1:
            table[byte] = ord(lowered)
    return bytes(table)


def _compile(secrets: tuple[str, ...]) -> re.Pattern[str]:
    alternatives: list[tuple[int, int, str]] = []
    for secret in secrets:
        # (each character written as itself or escaped, chosen one by one; then the forms of the whole)
        pieces = [(written_width(secret), "".join(map(character, secret)))]
        pieces += [(len(form), re.escape(form)) for form in _forms(secret)]
        for size, piece in pieces:
            # (a long secret is replaced in any case, as a header value or a path an agent folds to lower case
            # still gives most of it away; an escape's hex digits come in either case whatever its length)
            if len(secret) >= MIN_ANYWHERE:
                piece = f"(?i:{piece})"
            else:
                piece = f"(?<![0-9A-Za-z]){piece}(?![0-9A-Za-z])"
            alternatives.append((len(secret), size, piece))
    # (a longer secret first, where one holds another: the whole header value before the token in it)
    alternatives.sort(key=lambda item: item[:2], reverse=True)
    return re.compile("|".join(piece for _length, _size, piece in dict.fromkeys(alternatives)))
