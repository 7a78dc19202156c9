"""JSON Schema's patterns (ECMA-262 regular expressions) run on RE2, in time linear in the text.

A server's ``responseSchema`` may hold a pattern that makes a backtracking engine run for minutes
(``^(a+)+$`` against 34 characters, in Python's ``re``). RE2 never backtracks, but it reads its own
syntax and has no lookaround or backreferences, so a pattern is translated first:

* the ECMA-262 spellings RE2 writes differently (``\\uXXXX``, ``\\u{…}``, ``\\cX``, ``[]``, ``[^]``)
  and ECMA-262's meanings of ``.`` and ``\\s`` (every line terminator; Unicode white space);
* lookaheads that open an anchored pattern (``^(?=.*\\d).{8,}$``, the usual password rule) are split
  into separate RE2 checks, which is exact: they are tried at the one position ``^`` allows;
* anything else RE2 cannot run is reported (a reason in words), and :mod:`.schema` leaves that
  pattern unchecked with an ``IR-30`` warning.

:func:`compile_pattern` is the only way in; :mod:`.schema` charges each search to its step budget.
Sans-IO, like the rest of ``core``.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from typing import Any, Final

import re2

__all__ = ["MAX_PATTERN", "Regex", "compile_pattern"]

# Patterns longer than this are not compiled (RE2 would mostly refuse them, and Python's compiler,
# asked only whether they are valid, is not to be fed megabytes): they are not checked.
MAX_PATTERN: Final = 16_384
# A search's cost in the caller's steps before it reads the text (the call, the UTF-8 copy RE2 makes):
# measured with :mod:`bench.schemas`, many short keys against many patterns.
_SEARCH_COST: Final = 4
# RE2's own default; a pattern needing more memory is reported by RE2 and is not checked.
_RE2_MAX_MEM: Final = 8 << 20


class Regex:
    """A pattern as RE2 runs it: checks at the start (split-off lookaheads), then the pattern."""

    __slots__ = ("_heads", "_main", "_weight")

    def __init__(self, heads: list[tuple[bool, Any]], main: Any) -> None:
        self._heads = heads
        self._main = main
        size = main.programsize + sum(rx.programsize for _, rx in heads)
        # RE2's time is linear in the text, with a factor that grows with the compiled program.
        self._weight = size + 1024

    def search(self, text: str, charge: Callable[[int], None]) -> bool | None:
        """Whether the pattern matches anywhere in ``text``; ``None`` when RE2 cannot read the text.

        ``charge`` is told the search's cost first (in the caller's steps), so it may stop it.
        """
        charge(_SEARCH_COST + len(text) * self._weight // 65536)
        try:
            for positive, head in self._heads:
                if (head.search(text) is not None) != positive:
                    return False
            return self._main.search(text) is not None
        except UnicodeError:  # a lone surrogate (typed at a terminal): UTF-8 cannot carry it
            return None


# ECMA-262's WhiteSpace and LineTerminator, which its \s matches (RE2's \s is ASCII only).
_WS: Final = r"\t\n\x{B}\f\r \x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}"
# ECMA-262's "." stops at every line terminator; RE2's at "\n" only.
_DOT: Final = r"[^\n\r\x{2028}\x{2029}]"
_EVERYTHING: Final = r"\x{0}-\x{10FFFF}"
_HEX: Final = frozenset("0123456789abcdefABCDEF")
_DIGITS: Final = frozenset("0123456789")
_QUANTIFIERS: Final = frozenset("*+?{")
_PROPERTY_PREFIXES: Final = ("General_Category=", "gc=", "Script=", "sc=")


class _Unsupported(Exception):
    """A construct RE2 cannot run (or this translation does not know): the pattern is not checked."""


def _hex(text: str) -> int | None:
    return int(text, 16) if text and all(c in _HEX for c in text) else None


def _translate_escape(p: str, i: int, in_class: bool) -> tuple[str, int]:
    """The RE2 spelling of the escape at ``p[i]`` (a backslash), and the index after it."""
    if i + 1 >= len(p):
        raise _Unsupported("it ends with a lone backslash")
    c = p[i + 1]
    if c in "dDwWtnrfv":
        return "\\" + c, i + 2
    if c == "b":
        return (r"\x{8}" if in_class else r"\b"), i + 2
    if c == "B" and not in_class:
        return r"\B", i + 2
    if c == "s":
        return (_WS if in_class else f"[{_WS}]"), i + 2
    if c == "S":
        # Inside a class RE2's own \S (ASCII whitespace) stands in: a negated set cannot nest there.
        return (r"\S" if in_class else f"[^{_WS}]"), i + 2
    if c == "0" and p[i + 2:i + 3] not in _DIGITS:
        return r"\x{0}", i + 2
    if c in "123456789" or c == "0" or (c == "k" and p[i + 2:i + 3] == "<"):
        raise _Unsupported("it uses a backreference, which needs a backtracking engine")
    if c == "x":
        value = _hex(p[i + 2:i + 4])
        if value is None or len(p[i + 2:i + 4]) < 2:
            raise _Unsupported(r"\x is not followed by two hex digits")
        return rf"\x{{{value:X}}}", i + 4
    if c == "u":
        return _translate_unicode_escape(p, i)
    if c == "c":
        letter = p[i + 2:i + 3]
        if not (letter.isascii() and letter.isalpha()):
            raise _Unsupported(r"\c is not followed by a letter")
        return rf"\x{{{ord(letter) % 32:X}}}", i + 3
    if c in "pP":
        end = p.find("}", i + 2)
        if p[i + 2:i + 3] != "{" or end < 0:
            raise _Unsupported(rf"\{c} is not followed by {{name}}")
        name = p[i + 3:end]
        for prefix in _PROPERTY_PREFIXES:
            if name.startswith(prefix):
                name = name[len(prefix):]
        return rf"\{c}{{{name}}}", end + 1
    if c.isascii() and c.isalnum():
        raise _Unsupported(f"it uses the escape \\{c}, which ECMA-262 does not define")
    # An identity escape: ASCII punctuation keeps its backslash, anything else stands for itself.
    return ("\\" + c if c.isascii() else c), i + 2


def _translate_unicode_escape(p: str, i: int) -> tuple[str, int]:
    if p[i + 2:i + 3] == "{":
        end = p.find("}", i + 3)
        value = _hex(p[i + 3:end]) if end > 0 else None
        if value is None or value > 0x10FFFF:
            raise _Unsupported(r"\u{…} does not name a code point")
        after = end + 1
    else:
        value = _hex(p[i + 2:i + 6]) if len(p[i + 2:i + 6]) == 4 else None
        if value is None:
            raise _Unsupported(r"\u is not followed by four hex digits")
        after = i + 6
        low = _hex(p[after + 2:after + 6]) if p[after:after + 2] == "\\u" and len(p[after + 2:after + 6]) == 4 else None
        if 0xD800 <= value <= 0xDBFF and low is not None and 0xDC00 <= low <= 0xDFFF:
            # A surrogate pair written as two escapes is one code point (ECMA-262's u mode).
            value = 0x10000 + ((value - 0xD800) << 10) + (low - 0xDC00)
            after += 6
    if 0xD800 <= value <= 0xDFFF:
        raise _Unsupported("it names a lone surrogate, which no JSON string sent can hold")
    return rf"\x{{{value:X}}}", after


def _translate_class(p: str, i: int) -> tuple[str, int]:
    """The RE2 spelling of the character class opening at ``p[i]``, and the index after it."""
    j = i + 1
    negated = p[j:j + 1] == "^"
    j += negated
    if p[j:j + 1] == "]":
        # ECMA-262's [] matches nothing and [^] any character; RE2 would read "]" as a member.
        return (f"[{_EVERYTHING}]" if negated else f"[^{_EVERYTHING}]"), j + 1
    out = ["[^" if negated else "["]
    while j < len(p) and p[j] != "]":
        if p[j] == "\\":
            text, j = _translate_escape(p, j, in_class=True)
            out.append(text)
        else:
            # "[" is an ordinary member in ECMA-262; RE2 would read "[:" as a POSIX class.
            out.append("\\[" if p[j] == "[" else p[j])
            j += 1
    if j >= len(p):
        raise _Unsupported("a character class is not closed")
    out.append("]")
    return "".join(out), j + 1


# Tokens: ("text", re2 text), ("open", text), ("look", "=" or "!"), ("close", ")"), ("alt", "|"), ("caret", "^").
_Token = tuple[str, str]


def _tokens(p: str) -> list[_Token]:
    out: list[_Token] = []
    i = 0
    while i < len(p):
        c = p[i]
        if c == "\\":
            text, i = _translate_escape(p, i, in_class=False)
            out.append(("text", text))
        elif c == "[":
            text, i = _translate_class(p, i)
            out.append(("text", text))
        elif c == "(":
            if p.startswith(("(?<=", "(?<!"), i):
                raise _Unsupported("it uses a lookbehind, which needs a backtracking engine")
            if p.startswith(("(?=", "(?!"), i):
                out.append(("look", p[i + 2]))
                i += 3
            else:
                out.append(("open", "("))
                i += 1
        elif c == ")":
            out.append(("close", ")"))
            i += 1
        elif c == "|":
            out.append(("alt", "|"))
            i += 1
        elif c == "^":
            out.append(("caret", "^"))
            i += 1
        elif c == ".":
            out.append(("text", _DOT))
            i += 1
        else:
            out.append(("text", c))
            i += 1
    return out


def _closing(tokens: list[_Token], start: int) -> int:
    """The index of the ``close`` token matching the group opened at ``tokens[start]``."""
    depth = 0
    for n in range(start, len(tokens)):
        kind = tokens[n][0]
        if kind in ("open", "look"):
            depth += 1
        elif kind == "close":
            depth -= 1
            if depth == 0:
                return n
    raise _Unsupported("a group is not closed")


def _render(tokens: list[_Token]) -> str:
    if any(kind == "look" for kind, _ in tokens):
        raise _Unsupported("it uses a lookahead other than at the start of an anchored pattern, which needs a "
                           "backtracking engine")
    return "".join(text for _, text in tokens)


def _plan(pattern: str) -> tuple[list[tuple[bool, str]], str]:
    """RE2 sources for ``pattern``: lookaheads split off its anchored start, then the rest.

    ``^(?=A)(?!B)C`` matches a text exactly when ``^(?:A)`` does, ``^(?:B)`` does not and ``^C`` does:
    the lookaheads are tried at the one position ``^`` allows, and consume nothing.
    """
    tokens = _tokens(pattern)
    heads: list[tuple[bool, str]] = []
    # With a top-level "|", the "^" and the lookaheads belong to the first alternative only.
    if tokens[:1] == [("caret", "^")] and not _top_level_alternation(tokens):
        n = 1
        while n < len(tokens) and tokens[n][0] == "look":
            end = _closing(tokens, n)
            if end + 1 < len(tokens) and tokens[end + 1][1][:1] in _QUANTIFIERS and tokens[end + 1][0] == "text":
                break  # a quantified lookahead (Annex B): left in place, so not run
            heads.append((tokens[n][1] == "=", "^(?:" + _render(tokens[n + 1:end]) + ")"))
            n = end + 1
        tokens = [tokens[0], *tokens[n:]]
    return heads, _render(tokens)


def _top_level_alternation(tokens: list[_Token]) -> bool:
    depth = 0
    for kind, _ in tokens:
        if kind in ("open", "look"):
            depth += 1
        elif kind == "close":
            depth -= 1
        elif kind == "alt" and depth == 0:
            return True
    return False


def _re2_options() -> Any:
    options = re2.Options()
    options.max_mem = _RE2_MAX_MEM
    options.log_errors = False  # RE2 would print every refused pattern on stderr
    # Only whether it matches is asked: tracking groups costs time in their number (thousands of
    # nested groups made one search of one character take seconds).
    options.never_capture = True
    return options


_OPTIONS: Final = _re2_options()


def _python_accepts(pattern: str) -> bool:
    # Only ever asked whether a pattern RE2 cannot run is a regex at all; compiling is linear in the
    # pattern's length (it is matching that backtracks), and nothing is matched with it.
    # Python warns of syntax whose meaning it will change (``[[a]]``, ``[a--b]``): the agent's pattern
    # must not become a warning on the application's stderr, nor, where warnings are errors (a test
    # suite's ``-W error``), an untyped FutureWarning out of check_answer().
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            re.compile(pattern)
    except (re.error, OverflowError, RecursionError, ValueError):
        return False
    return True


def compile_pattern(pattern: str) -> Regex | str | None:
    """``pattern`` for RE2; else why it cannot run (a str), or ``None`` when it is no regex at all."""
    if len(pattern) > MAX_PATTERN:
        return f"it is longer than {MAX_PATTERN:,} characters"
    try:
        heads, main = _plan(pattern)
        return Regex([(positive, re2.compile(source, _OPTIONS)) for positive, source in heads],
                      re2.compile(main, _OPTIONS))
    except _Unsupported as exc:
        reason = str(exc)
    except re2.error as exc:
        reason = f"RE2 cannot run it ({_re2_message(exc)})"
    except UnicodeError:
        reason = "it holds a lone surrogate, which RE2 cannot read"
    # ECMA-262 syntax Python's re does not know (\u{…}, \p{…}, (?<name>…)) compiled above; what RE2
    # cannot run is a regex when Python's re reads it.
    return reason if _python_accepts(pattern) else None


def _re2_message(exc: Exception) -> str:
    detail = exc.args[0] if exc.args else exc
    return detail.decode("utf-8", "replace") if isinstance(detail, bytes) else str(detail)
