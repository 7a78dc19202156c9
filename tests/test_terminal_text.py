"""The terminal's escaping rule itself (``agui_client._inert``): what is invisible or blank is shown
as its escape, prose stays readable, and two names or ids that differ never read the same.

(What a real terminal receives through ``agui`` is checked in test_cli_terminal.py and
test_attack_terminal.py; these are the cases a pseudo-terminal adds nothing to.)
"""

from __future__ import annotations

import re
import sys
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agui_client import _inert
from agui_client._inert import NAME_CHARS, named, quoted_name, visible, visible_after
from agui_client.cli.terminal import json_text

#: Characters that render as nothing (or as a blank) but that the Unicode categories alone let through
#: or that were named in the audit: each is escaped in a name.
INVISIBLE = ["\u3164", "\uffa0", "\u115f", "\u1160", "\u00ad", "\u034f", "\u180e", "\u2060", "\u2061", "\u2064",
             "\u2065", "\u206a", "\u206f", "\ufeff", "\U000e0000", "\U000e0041", "\U000e007f", "\U000e0fff",
             "\u17b4", "\ufff0", "\U0001bca0", "\U0001d173", "\u200b", "\u202e", "\u2066"]
#: Blank-looking characters a name must not hide, though prose may keep them (they read as blanks).
BLANK = ["\u2800", "\U0001d159", "\u00a0", "\u2000", "\u200a", "\u202f", "\u205f", "\u3000"]
#: Kept in prose right after a visible character, escaped in a name.
JOINING = ["\u200d", "\u200c", "\ufe0f", "\ufe00", "\U000e0100", "\u180b"]


@pytest.mark.parametrize("char", INVISIBLE)
def test_an_invisible_character_is_shown_as_its_escape_in_prose_and_in_a_name(char: str) -> None:
    escaped = _inert.escape(char)

    assert visible(f"ok{char}go") == f"ok{escaped}go"
    assert named(f"ok{char}go") == f"ok{escaped}go"
    assert quoted_name(f"ok{char}go") == f"'ok{escaped}go'"


@pytest.mark.parametrize("char", BLANK + JOINING)
def test_a_blank_or_joining_character_is_shown_as_its_escape_in_a_name(char: str) -> None:
    assert named(f"approve{char}") == "approve" + _inert.escape(char)
    assert char not in quoted_name(f"approve{char}")


@pytest.mark.parametrize("text", [
    "日本語のテキスト、中文，한국어",                              # CJK, with their punctuation
    "family \U0001f468\u200d\U0001f469\u200d\U0001f467 here",  # an emoji ZWJ sequence
    "heart on fire \u2764\ufe0f\u200d\U0001f525",              # selector, then joiner
    "keycap #\ufe0f\u20e3 and \u2764\ufe0f",                   # a selector after ASCII, and after a symbol
    "\u845b\U000e0100 (an ideographic variation)",             # an ideographic variation sequence
    "cafe\u0301 nai\u0308ve Z\u0351\u0352",                    # combining marks
    "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645",        # Persian, with a ZWNJ between letters
    "\u0915\u094d\u200d\u0937 \u0939\u093f\u0928\u094d\u0926\u0940",  # Devanagari, with a ZWJ
    "braille \u2800\u2801 and a\u00a0no-break space",          # blanks read as blanks in prose
    "tabs\tand\nnewlines",
])
def test_prose_keeps_its_scripts_emoji_and_marks_readable(text: str) -> None:
    assert visible(text) == text


@pytest.mark.parametrize(("text", "shown"), [
    ("\U0001f600" + "\ufe00\ufe01\ufe02" * 3, "\U0001f600\ufe00" + "\\ufe01\\ufe02" + "\\ufe00\\ufe01\\ufe02" * 2),
    ("a\u200d\u200d\u200db", "a\u200d\\u200d\\u200db"),
    ("\ufe0f\ufe0fstart", "\ufe0f\\ufe0fstart"),
    ("\u200d\u200dstart", "\u200d\\u200dstart"),
    ("gap \ufe0f", "gap \\ufe0f"),
    ("line\n\u200d", "line\n\\u200d"),
    ("\u3164\ufe0f", "\\u3164\\ufe0f"),
])
def test_a_joiner_or_selector_that_joins_nothing_is_shown_as_its_escape_in_prose(text: str, shown: str) -> None:
    # One after a visible character is what a sequence needs; a run of them (the "emoji smuggling" of
    # bytes in variation selectors) or one after a blank changes nothing a reader sees.
    assert visible(text) == shown


def test_json_output_writes_the_same_characters_as_json_escapes_and_parses_back() -> None:
    import json

    value = {"k\u3164": "\U0001f600\ufe00\ufe01 \u2764\ufe0f \u2800"}

    text = json_text(value)

    assert json.loads(text) == value
    assert "\u3164" not in text and "\ufe01" not in text and "\\u3164" in text and "\\ufe01" in text
    assert "\u2764\ufe0f" in text and "\u2800" in text  # (readable, as in prose)


def test_the_categories_the_rule_reads_lie_in_the_planes_it_reads() -> None:
    # The rule reads the categories of planes 0 and 1 only, and takes U+E0000-U+E0FFF as ignorable
    # whole (the rest hold ideographs, nothing, or private use): true of this interpreter's Unicode
    # database, checked over every code point.
    outside = [code for code in range(sys.maxunicode + 1)
               if not any(low <= code <= high for low, high in _inert._PLANES) and not 0xE0000 <= code <= 0xE0FFF
               and unicodedata.category(chr(code)) in {"Cc", "Cf", "Cs", "Zl", "Zp", "Zs"}]
    assert outside == []


def test_every_format_character_is_escaped_but_the_two_joiners() -> None:
    formats = [chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Cf"]
    assert len(formats) > 100
    shown = {char for char in formats if visible("a" + char) == "a" + char}
    assert shown == {"\u200c", "\u200d"}


@given(st.text(), st.text())
def test_two_names_that_differ_never_read_the_same(one: str, other: str) -> None:
    if one != other:
        assert named(one, 10**6) != named(other, 10**6)
        assert quoted_name(one, 10**6) != quoted_name(other, 10**6)


@given(st.text(alphabet=st.characters(codec="utf-8")))
def test_a_name_is_shown_on_one_line_with_nothing_hidden(text: str) -> None:
    shown = named(text, 10**6)
    assert "\n" not in shown and "\r" not in shown and "\t" not in shown
    assert shown == shown.strip(" ")
    assert visible(shown) == shown


def test_a_cut_name_ends_with_a_digest_of_the_whole_and_is_longer_than_any_shown_whole() -> None:
    one, other = "x" * 200 + "1", "x" * 200 + "2"

    shown_one, shown_other = named(one), named(other)

    assert shown_one != shown_other
    assert shown_one.startswith("x" * NAME_CHARS + "...#") and len(shown_one) == NAME_CHARS + 12
    assert named(one) == shown_one  # (the same name reads the same within a process)
    # A short name spelling a cut one is shown whole, and shorter than any cut name.
    assert named(shown_one[:NAME_CHARS]) != shown_one
    assert len(named("y" * NAME_CHARS)) == NAME_CHARS
    # (the boundary: one character more than is shown whole is cut)
    assert named("y" * (NAME_CHARS + 1)).startswith("y" * NAME_CHARS + "...#")


def test_an_error_of_more_lines_than_are_shown_is_cut_and_the_rest_counted() -> None:
    # (MESSAGE_LINES, 40: the boundary, and a flood)
    forty = "\n".join(f"line {n}" for n in range(40))
    forty_one = forty + "\nline 40"

    assert _inert.some_lines(forty) == forty
    assert _inert.some_lines(forty_one) == forty + "\n... (1 more lines)"
    assert _inert.some_lines("boom\n" * 100).endswith("boom\n... (61 more lines)")


def test_a_quoted_text_past_its_limit_is_cut_and_the_rest_counted() -> None:
    # (QUOTED_CHARS, 500: what an error quotes from httpx or the agent's head)
    assert _inert.quoted("r" * 500) == "r" * 500
    assert _inert.quoted("r" * 501) == "r" * 500 + "... (1 more characters)"


def test_a_cut_quoted_id_in_a_message_ends_with_a_digest() -> None:
    one, other = "i" * 300 + "a", "i" * 300 + "b"
    assert quoted_name(one) != quoted_name(other)
    assert len(quoted_name(one)) <= 100 + 12


def test_the_sanitisers_docstring_examples_hold() -> None:
    import doctest

    failed, attempted = doctest.testmod(_inert, optionflags=doctest.ELLIPSIS)
    assert attempted >= 5 and failed == 0


@pytest.mark.parametrize(("previous", "token", "shown"), [
    ("\U0001f468", "\u200d\U0001f469", "\u200d\U0001f469"),     # joins the emoji the token before ended with
    ("\u2764", "\ufe0f", "\ufe0f"),
    ("\ufe0f", "\ufe0f", "\\ufe0f"),                            # a second selector, a delta later
    (" ", "\u200dx", "\\u200dx"),                               # after a blank: joins nothing
    ("", "\ufe0fx", "\\ufe0fx"),                                # at a line's start
    ("\x1b", "\u200d", "\\u200d"),                              # after what is shown as an escape
    ("a", "\x1b[2J", "\\x1b[2J"),
])
def test_a_token_is_judged_by_the_character_before_it(previous: str, token: str, shown: str) -> None:
    assert visible_after(previous, token) == shown


#: The look-alike check's word test before the twentieth round: one pattern, quadratic in a word's length.
_MIXED_BEFORE = re.compile("[0-9A-Za-z].*[^\x00-\x7f]|[^\x00-\x7f].*[0-9A-Za-z]", re.DOTALL)
_WORDISH = st.sampled_from(list("aZ09-.\u0440\u0430\u00e9 \t\n\u3000\u0085\x00\x7f\x80\U0001d41a"))


def _unmix_before(found: re.Match[str]) -> str:
    """``_inert._unmix`` as it was before the twentieth round (its word test, ``_MIXED_BEFORE``)."""
    word = found.group()
    if _MIXED_BEFORE.search(word) is None:
        return word
    return "".join(_inert.escape(char) if not char.isascii() and _inert._alike(char) else char for char in word)


@given(st.one_of(st.text(), st.text(alphabet=_WORDISH)))
def test_the_linear_look_alike_check_reads_every_word_as_the_old_pattern_did(text: str) -> None:
    # The round's linear check (an ASCII letter or digit, and the word not all ASCII) must show every word
    # as the pattern it replaced did: only its cost was to change.
    for found in _inert._WORD.finditer(text):
        assert _inert._unmix(found) == _unmix_before(found), found.group()
