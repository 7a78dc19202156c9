"""SSE framing: the WHATWG event-stream rules (TR-06..TR-11, TR-18) and bad-inputs.md section A."""

from __future__ import annotations

import itertools
import json
import tracemalloc
from collections.abc import Iterator
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agui_client.errors import LimitExceeded
from agui_client.wire.sse import SSEDecoder, SSEFrame, SSEWarning, iter_frames

BOM = b"\xef\xbb\xbf"
MiB = 2**20


def decode(*chunks: bytes, max_event_bytes: int = 16 * MiB) -> tuple[list[SSEFrame], list[SSEWarning]]:
    """Feed the chunks, close, and return every frame and warning."""
    decoder = SSEDecoder(max_event_bytes=max_event_bytes)
    frames: list[SSEFrame] = []
    for chunk in chunks:
        frames += decoder.feed(chunk)
    frames += decoder.close()
    return frames, decoder.warnings


def frame(
    data: str,
    line: int,
    offset: int,
    *,
    event: str | None = None,
    id: str | None = None,
    retry: int | None = None,
    truncated: bool = False,
) -> SSEFrame:
    return SSEFrame(data=data, line=line, offset=offset, event=event, id=id, retry=retry, truncated=truncated)


def warning(code: str, message: str, line: int, offset: int) -> SSEWarning:
    return SSEWarning(code=code, message=message, line=line, offset=offset)


TRUNCATED_KEPT = "truncated frame: dispatched although the stream ended before its blank line"
TRUNCATED_DROPPED = "truncated frame discarded: the stream ended before its blank line"
BLANK = "blank data payload dropped (read as a keep-alive)"
STRAY_BOM = "byte-order mark inside the stream (only a leading one is stripped); line ignored"
JSON_LINE = "JSON-looking line without data: prefix"

# A capture mixing everything the framing must survive: CRLF, CR and LF ends, a comment inside an
# event, multi-line data, a multi-byte character, event/id/retry fields, extra blank lines.
CAPTURE = (
    BOM
    + b'data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\r\n\r\n'
    + b": keep-alive\n\n"
    + b'event: agui\r\nid: 7\r\nretry: 1500\r\ndata: {"type":"TEXT_MESSAGE_START",\r\n'
    + b': a comment inside the event\r\ndata: "messageId":"m","role":"assistant"}\r\n\r\n'
    + 'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"h\u00e9llo \U0001f600 \u2028\u0085"}\r\r'.encode()
    + b'\n\n\ndata:{"type":"TEXT_MESSAGE_END","messageId":"m"}\n\n'
    + b'data: {"type":"RUN_FINISHED","threadId":"t","runId":"r"}\n\n'
)
CAPTURE_FRAMES = [
    frame('{"type":"RUN_STARTED","threadId":"t","runId":"r"}', 1, 3),
    frame(
        '{"type":"TEXT_MESSAGE_START",\n"messageId":"m","role":"assistant"}', 5, 76, event="agui", id="7", retry=1500
    ),
    frame(
        '{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"h\u00e9llo \U0001f600 \u2028\u0085"}', 12, 221, id="7"
    ),
    frame('{"type":"TEXT_MESSAGE_END","messageId":"m"}', 16, 307, id="7"),
    frame('{"type":"RUN_FINISHED","threadId":"t","runId":"r"}', 18, 357, id="7"),
]


def test_capture_in_one_read_gives_every_frame_at_its_line_and_offset() -> None:
    frames, warnings = decode(CAPTURE)
    assert frames == CAPTURE_FRAMES
    assert warnings == []
    for f in frames:  # offsets point at the frame's first line in the raw bytes
        assert CAPTURE[f.offset :].split(b"\n")[0].split(b"\r")[0].startswith((b"data", b"event"))


def test_capture_split_at_every_byte_offset_gives_identical_frames() -> None:
    for cut in range(len(CAPTURE) + 1):
        assert decode(CAPTURE[:cut], CAPTURE[cut:]) == (CAPTURE_FRAMES, []), cut


def test_capture_in_one_byte_reads_gives_identical_frames() -> None:  # B035
    assert decode(*(CAPTURE[i : i + 1] for i in range(len(CAPTURE)))) == (CAPTURE_FRAMES, [])


def test_capture_split_into_three_reads_gives_identical_frames() -> None:
    for a in range(0, len(CAPTURE), 7):
        for b in range(a, len(CAPTURE), 11):
            assert decode(CAPTURE[:a], CAPTURE[a:b], CAPTURE[b:]) == (CAPTURE_FRAMES, []), (a, b)


def test_one_canonical_event_per_read_is_dispatched_by_that_read() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b'data: {"a":1}\n\n') == [frame('{"a":1}', 1, 0)]
    assert decoder.feed(b'data: {"b":2}\r\n\r\n') == [frame('{"b":2}', 3, 15)]
    assert decoder.feed(b'data: {"c":3}\n\n') == [frame('{"c":3}', 5, 32)]
    assert (decoder.frames_dispatched, decoder.bytes_seen) == (3, 47)


def test_json_line_without_data_prefix_is_flagged_and_not_an_event() -> None:  # B001, TR-07
    frames, warnings = decode(
        b'data: {"type":"RUN_STARTED"}\n\n{"type":"CUSTOM","name":"acme.ping","value":1}\n\ndata: {"type":"X"}\n\n'
    )
    assert frames == [frame('{"type":"RUN_STARTED"}', 1, 0), frame('{"type":"X"}', 5, 78)]
    assert warnings == [warning("AGUI501", JSON_LINE, 3, 30)]


def test_cr_only_line_ends_frame_events() -> None:  # B005
    frames, warnings = decode(b'data: {"a":1}\r\rdata: {"b":2}\r\r')
    assert frames == [frame('{"a":1}', 1, 0), frame('{"b":2}', 3, 15)]
    assert warnings == []


def test_lf_crlf_and_cr_mixed_in_one_stream() -> None:  # B006
    frames, warnings = decode(b'data: {"a":1}\n\ndata: {"b":2}\r\n\r\ndata: {"c":3}\r\rdata: {"d":4}\n\r\n')
    assert frames == [
        frame('{"a":1}', 1, 0),
        frame('{"b":2}', 3, 15),
        frame('{"c":3}', 5, 32),
        frame('{"d":4}', 7, 47),
    ]
    assert warnings == []


def test_crlf_split_across_reads_dispatches_once_without_a_phantom_blank_line() -> None:  # B007
    decoder = SSEDecoder()
    assert decoder.feed(b'data: {"a":1}\r') == []
    assert decoder.feed(b"\n\r\n") == [frame('{"a":1}', 1, 0)]
    assert decoder.feed(b'data: {"b":2}\n\n') == [frame('{"b":2}', 3, 17)]
    # Had the LF been a line of its own, it would have cut this event in two.
    assert decode(b"data: a\r", b"\ndata: b\r\n\r\n") == ([frame("a\nb", 1, 0)], [])


def test_keep_alive_comments_between_events_are_ignored() -> None:  # B009
    frames, warnings = decode(b': keep-alive\n\ndata: {"a":1}\n\n:\n\n: ping\n\ndata: {"b":2}\n\n')
    assert frames == [frame('{"a":1}', 3, 14), frame('{"b":2}', 9, 40)]
    assert warnings == []


def test_comment_between_data_lines_keeps_them_in_one_event() -> None:  # B010
    frames, warnings = decode(b'data: {"type":"CUSTOM",\n: comment\ndata: "name":"x","value":1}\n\n')
    assert frames == [frame('{"type":"CUSTOM",\n"name":"x","value":1}', 1, 0)]
    assert json.loads(frames[0].data) == {"type": "CUSTOM", "name": "x", "value": 1}
    assert warnings == []


def test_multi_line_data_is_joined_with_lf() -> None:  # B011
    frames, _ = decode(b'data: {"type":"CUSTOM",\ndata: "name":"x","value":1}\n\n')
    assert [f.data for f in frames] == ['{"type":"CUSTOM",\n"name":"x","value":1}']


def test_data_without_space_after_colon() -> None:  # B013
    assert decode(b'data:{"a":1}\n\n') == ([frame('{"a":1}', 1, 0)], [])


def test_only_one_space_after_the_colon_is_stripped() -> None:  # B014
    assert decode(b'data:   {"a":1}\n\n') == ([frame('  {"a":1}', 1, 0)], [])


def test_field_name_case_matters_and_an_unknown_field_is_flagged() -> None:  # B015
    frames, warnings = decode(b'Data: {"a":1}\n\nfoo: bar\ndata: {"b":2}\n\n')
    assert frames == [frame('{"b":2}', 3, 15)]
    assert warnings == [
        warning("AGUI501", "unknown SSE field 'Data'", 1, 0),
        warning("AGUI501", "unknown SSE field 'foo'", 3, 15),
    ]


def test_a_thousand_warnings_of_one_code_are_kept_and_the_rest_only_counted() -> None:
    # A stream of two-byte faults must not cost a warning object each (WARNINGS_PER_CODE is 1000).
    decoder = SSEDecoder()
    frames = decoder.feed(b"x\n" * 1002 + b'data: {"a":1}\n\n')

    assert [f.data for f in frames] == ['{"a":1}']
    assert len(decoder.warnings) == 1000 and {w.code for w in decoder.warnings} == {"AGUI501"}
    assert decoder.warnings_dropped == 2


def test_id_and_retry_are_kept_and_the_last_id_carries_over() -> None:  # B017
    decoder = SSEDecoder()
    frames = decoder.feed(b'id: 42\nretry: 3000\ndata: {"a":1}\n\ndata: {"b":2}\n\n')
    assert frames == [frame('{"a":1}', 1, 0, id="42", retry=3000), frame('{"b":2}', 5, 34, id="42")]
    assert decoder.last_event_id == "42"
    assert decoder.feed(b'id\ndata: {"c":3}\n\n') == [frame('{"c":3}', 7, 49, id="")]
    assert decoder.last_event_id == ""


def test_id_containing_nul_is_ignored() -> None:  # B018
    decoder = SSEDecoder()
    frames = decoder.feed(b'id: 1\ndata: {"a":1}\n\nid: a\x00b\ndata: {"b":2}\n\n')
    assert [f.id for f in frames] == ["1", "1"]
    assert decoder.last_event_id == "1"
    assert decoder.warnings == []


def test_retry_that_is_not_all_digits_is_ignored() -> None:  # B019
    frames, warnings = decode(b'retry: abc\ndata: {"a":1}\n\nretry: -1\ndata: {"b":2}\n\nretry: 1e3\ndata: {}\n\n')
    assert [f.retry for f in frames] == [None, None, None]
    assert warnings == []


def test_leading_bom_split_across_the_first_reads_is_stripped() -> None:  # B021
    expected: tuple[list[SSEFrame], list[SSEWarning]] = ([frame('{"a":1}', 1, 3)], [])
    assert decode(b"\xef\xbb", b'\xbfdata: {"a":1}\n\n') == expected
    assert decode(b"\xef", b"\xbb", b"\xbf", b'data: {"a":1}\n\n') == expected
    assert decode(BOM + b'data: {"a":1}\n\n') == expected


def test_stream_too_short_to_hold_a_bom_is_still_decoded() -> None:
    assert decode(b"d", b'ata: {"a":1}\n\n') == ([frame('{"a":1}', 1, 0)], [])
    assert decode(b"\n") == ([], [])


def test_bom_before_a_later_frame_drops_that_frame_with_a_warning() -> None:  # B022
    frames, warnings = decode(BOM + b'data: {"a":1}\n\n' + BOM + b'data: {"b":2}\n\ndata: {"c":3}\n\n')
    assert frames == [frame('{"a":1}', 1, 3), frame('{"c":3}', 5, 36)]
    assert warnings == [warning("BOM", STRAY_BOM, 3, 18)]


def test_event_name_is_exposed_and_data_untouched() -> None:  # B023
    frames, warnings = decode(b'event: message\ndata: {"type":"A"}\n\nevent: agui\ndata: {"type":"B"}\n\ndata: {}\n\n')
    assert [(f.event, f.data) for f in frames] == [("message", '{"type":"A"}'), ("agui", '{"type":"B"}'), (None, "{}")]
    assert warnings == []


def test_empty_data_dispatches_nothing() -> None:  # B026
    assert decode(b"data:\n\ndata\n\nevent: x\n\n") == ([], [])


def test_whitespace_only_data_is_dropped_with_a_warning() -> None:  # B027
    frames, warnings = decode(b'data:   \n\ndata: \t\n\ndata:\ndata:\n\ndata: {"a":1}\n\n')
    assert frames == [frame('{"a":1}', 8, 32)]
    assert warnings == [
        warning("AGUI501", BLANK, 1, 0),
        warning("AGUI501", BLANK, 3, 10),
        warning("AGUI501", BLANK, 5, 19),
    ]


def test_extra_blank_lines_between_events_are_harmless() -> None:  # B029
    frames, warnings = decode(b'\n\n\ndata: {"a":1}\n\n\n\n\ndata: {"b":2}\n\n\n')
    assert frames == [frame('{"a":1}', 4, 3), frame('{"b":2}', 9, 21)]
    assert warnings == []


@pytest.mark.parametrize("ending", [b"", b"\n", b"\r\n", b"\r"])
def test_complete_json_frame_cut_off_at_eof_is_dispatched_as_truncated(ending: bytes) -> None:  # B030
    body = b'data: {"type":"RUN_STARTED"}\n\nevent: agui\ndata: {"type":"RUN_FINISHED","threadId":"t","runId":"r"}'
    frames, warnings = decode(body + ending)
    assert frames == [
        frame('{"type":"RUN_STARTED"}', 1, 0),
        frame('{"type":"RUN_FINISHED","threadId":"t","runId":"r"}', 3, 30, event="agui", truncated=True),
    ]
    assert warnings == [warning("AGUI501", TRUNCATED_KEPT, 3, 30)]


@pytest.mark.parametrize(
    "tail",
    [b'data: {"type":"RUN_FINI', b'data: {"type":"RUN_FINI\n', b"data: [1, 2]\n", b"event: x\n", b"data:   \n"],
)
def test_partial_frame_at_eof_is_discarded_with_a_warning(tail: bytes) -> None:  # B031
    decoder = SSEDecoder()
    assert decoder.feed(b'data: {"a":1}\n\n' + tail) == [frame('{"a":1}', 1, 0)]
    assert decoder.close() == []
    assert decoder.warnings == [warning("AGUI501", TRUNCATED_DROPPED, 3, 15)]
    assert decoder.frames_dispatched == 1


def test_comment_cut_off_at_eof_is_not_a_truncated_frame() -> None:
    assert decode(b'data: {"a":1}\n\n: keep-al') == ([frame('{"a":1}', 1, 0)], [])


def test_invalid_utf8_becomes_replacement_character_with_one_warning() -> None:  # B037, TR-18
    payload = b'{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"a\xffb\xff"}'
    frames, warnings = decode(b'data: {"a":1}\n\ndata: ' + payload + b"\n\n")
    assert frames[1] == frame(payload.decode("utf-8", "replace"), 3, 15)
    assert json.loads(frames[1].data)["delta"] == "a\ufffdb\ufffd"
    assert warnings == [warning("UTF8", "malformed UTF-8 replaced by U+FFFD", 3, 15)]


def test_multi_byte_character_split_across_reads_is_decoded_whole() -> None:  # TR-18
    raw = 'data: {"delta":"\U0001f600\u00e9"}\n\n'.encode()
    for cut in range(len(raw)):
        assert decode(raw[:cut], raw[cut:]) == ([frame('{"delta":"\U0001f600\u00e9"}', 1, 0)], [])


@pytest.mark.parametrize("ending", ["\n", "\r\n", "\r"])
@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\u0085", "\x0c", "\x0b", "\x1c", "\x1d", "\x1e"])
def test_only_cr_and_lf_end_lines(separator: str, ending: str) -> None:  # B038
    payload = '{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"a' + separator + 'b"}'
    raw = ("data: " + payload + ending + "data: " + payload + ending * 2).encode()
    frames, warnings = decode(raw)
    assert frames == [frame(payload + "\n" + payload, 1, 0)]
    assert warnings == []
    assert decode(*(raw[i : i + 1] for i in range(len(raw)))) == (frames, [])


def test_endless_line_trips_the_limit_while_buffering() -> None:  # B033, TR-11
    block = b"x" * MiB
    fed = 0

    def endless() -> Iterator[bytes]:
        nonlocal fed
        yield b'data: {"a":1}\n\n'
        for _ in range(1024):  # 1 GiB without a line end
            fed += 1
            yield block

    decoder = SSEDecoder()
    tracemalloc.start()
    try:
        with pytest.raises(LimitExceeded) as caught:
            for chunk in endless():
                decoder.feed(chunk)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert fed <= 17
    assert peak < 40 * MiB
    assert (caught.value.limit, caught.value.index) == (16 * MiB, 1)
    assert "an SSE line grew past 16777216 bytes without a line end" in str(caught.value)
    with pytest.raises(RuntimeError):
        decoder.feed(b"\n\n")  # the stream cannot be resynchronised after the fault


@pytest.mark.parametrize("read_size", [1, 7, 4096])
def test_event_of_many_lines_trips_the_limit_before_its_blank_line(read_size: int) -> None:
    stream = b'data: {"a":1}\n\n' + b"data: 0123456789\n" * 100
    decoder = SSEDecoder(max_event_bytes=1000)
    dispatched: list[SSEFrame] = []
    with pytest.raises(LimitExceeded) as caught:
        for i in range(0, len(stream), read_size):
            dispatched += decoder.feed(stream[i : i + read_size])
        decoder.close()
    # A frame completed by the read that hit the fault is still delivered; the next call raises.
    assert dispatched == [frame('{"a":1}', 1, 0)]
    assert (caught.value.limit, caught.value.index) == (1000, 1)
    # (each line is short: what outgrew the limit is the event, whether its last line had ended or not)
    assert "an SSE event grew past 1000 bytes" in str(caught.value) and "line" not in str(caught.value)


@pytest.mark.parametrize("prefix", [b"", b"event: e\n"])
@pytest.mark.parametrize("read_size", [1, 100, 10_000])
def test_event_at_the_limit_passes_and_one_byte_more_trips(prefix: bytes, read_size: int) -> None:
    limit = 1000
    # The limit counts the raw bytes of the event's field lines, line ends excluded.
    filler = limit - len(prefix.rstrip(b"\n")) - len(b'data: {"a":""}')
    at_limit = prefix + b'data: {"a":"' + b"x" * filler + b'"}\n\n'
    chunks = [at_limit[i : i + read_size] for i in range(0, len(at_limit), read_size)]
    frames, _ = decode(*chunks, max_event_bytes=limit)
    assert [len(f.data) for f in frames] == [filler + 8]
    over = at_limit.replace(b'"}', b'x"}')
    with pytest.raises(LimitExceeded):
        decode(*(over[i : i + read_size] for i in range(0, len(over), read_size)), max_event_bytes=limit)


def test_iter_frames_decodes_a_whole_capture_from_bytes_or_text() -> None:
    assert list(iter_frames(CAPTURE)) == CAPTURE_FRAMES
    text = 'data: {"a":"\u00e9"}\r\n\r\ndata: {"b":2}'
    assert list(iter_frames(text)) == [frame('{"a":"\u00e9"}', 1, 0), frame('{"b":2}', 3, 20, truncated=True)]


def test_iter_frames_enforces_the_limit() -> None:
    with pytest.raises(LimitExceeded):
        list(iter_frames(b"data: " + b"x" * 5000 + b"\n\n", max_event_bytes=4096))


def test_large_capture_in_any_read_size_matches_a_single_read() -> None:
    events = [
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": f"m{i}", "delta": "\u00e9\U0001f600 \u2028" * (i % 5)}
        for i in range(300)
    ]
    raw = b"".join(b"data: " + json.dumps(e, ensure_ascii=False).encode() + b"\n\n" for e in events)
    whole, _ = decode(raw)
    assert [json.loads(f.data) for f in whole] == events
    for size in (1, 3, 64, 1000, 4096):
        assert decode(*(raw[i : i + size] for i in range(0, len(raw), size))) == (whole, [])
    crlf = raw.replace(b"\n", b"\r\n")
    for size in (1, 5, 4096):
        got, warnings = decode(*(crlf[i : i + size] for i in range(0, len(crlf), size)))
        assert [f.data for f in got] == [f.data for f in whole]
        assert [f.line for f in got] == [f.line for f in whole]
        assert warnings == []


def test_close_is_final_and_idempotent() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b'data: {"a":1}') == []
    assert decoder.close() == [frame('{"a":1}', 1, 0, truncated=True)]
    assert decoder.close() == []
    with pytest.raises(RuntimeError):
        decoder.feed(b"\n\n")


def test_frames_are_frozen_whichever_path_built_them() -> None:
    fast, slow = decode(b'data: {"a":1}\n\nevent: e\ndata: {"b":2}\n\n')[0]
    for built in (fast, slow):
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            built.data = "changed"  # type: ignore[misc]  # the point of the test
    assert fast == frame('{"a":1}', 1, 0) and hash(fast) == hash(frame('{"a":1}', 1, 0))


def test_limit_must_be_positive() -> None:
    with pytest.raises(ValueError):
        SSEDecoder(max_event_bytes=0)


# Two line ends that make one blank line: "\r" then "\n" would be a single CRLF, so it is left out.
_FRAME_ENDS = st.sampled_from(["\n\n", "\r\r", "\r\n\r\n", "\n\r\n", "\r\n\n", "\n\r", "\r\n\r"])
_LINE_ENDS = st.sampled_from(["\n", "\r\n", "\r"])
_PAYLOADS = st.lists(
    st.text(
        alphabet=st.one_of(
            st.characters(blacklist_categories=["Cs"], blacklist_characters="\r\n"),
            st.sampled_from(["\u2028", "\u2029", "\x85", "\x0c", "\x0b", "\x1c", "\ufeff", "\U0001f600", " ", ":"]),
        ),
        min_size=1,
    ).filter(lambda s: s.strip(" \t") != ""),
    max_size=12,
)


@settings(max_examples=300, deadline=None)
@given(payloads=_PAYLOADS, data=st.data())
def test_any_payloads_with_any_line_ends_and_any_reads_decode_back(payloads: list[str], data: st.DataObject) -> None:
    parts: list[str] = []
    for payload in payloads:
        if data.draw(st.booleans(), label="keep-alive before"):
            parts.append(": ping" + data.draw(_LINE_ENDS))
        parts.append("data: " + payload + data.draw(_FRAME_ENDS))
    raw = "".join(parts).encode()
    cuts = sorted(data.draw(st.lists(st.integers(0, len(raw)), max_size=8), label="cuts"))
    chunks = [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True)]
    frames, warnings = decode(*chunks)
    assert [f.data for f in frames] == payloads
    assert warnings == []
    assert frames == decode(raw)[0]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.text(min_size=1, max_size=40).filter(lambda t: t.strip() != ""), min_size=1, max_size=8),
    st.sampled_from([b"\n", b"\r\n", b"\r"]),
    st.integers(1, 64),
)
def test_feed_payloads_gives_what_feed_gives(payloads: list[str], eol: bytes, cut: int) -> None:
    """The payload-only path (bytes for canonical frames in valid UTF-8) carries exactly the frames' data."""
    body = b"".join(b"data: {" + json.dumps(p, ensure_ascii=False).encode("utf-8", "surrogatepass") + b"}" + eol + eol
                    for p in payloads)
    chunks = [body[i:i + cut] for i in range(0, len(body), cut)]
    by_frame, by_payload = SSEDecoder(), SSEDecoder()
    frames = [f.data for c in chunks for f in by_frame.feed(c)] + [f.data for f in by_frame.close()]
    raw = [p for c in chunks for p in by_payload.feed_payloads(c)] + [f.data for f in by_payload.close()]
    assert [p if isinstance(p, str) else p.decode() for p in raw] == frames
    assert by_payload.warnings == by_frame.warnings


@pytest.mark.parametrize("extra", ["", "é", "\u2028"])
@pytest.mark.parametrize("invalid", [False, True])
@pytest.mark.parametrize("eol", [b"\n", b"\r\n"])
def test_a_read_of_canonical_frames_gives_their_payloads_whole(extra: str, invalid: bool, eol: bytes) -> None:
    """Many canonical frames in one read (the bulk path): same payloads, counters and warnings as frames."""
    payloads = [b'{"n":%d,"s":"%s"}' % (i, extra.encode()) for i in range(50)]
    if invalid:
        payloads[7] = b'{"n":7,"s":"\xff"}'  # not UTF-8: replaced and warned, as the frame path does
    body = b"".join(b"data: " + p + eol + eol for p in payloads) + b"data: {\"partial\":1}" + eol
    odd = b"id: 9" + eol + b"event: x" + eol + b"data: {}" + eol + eol
    by_frame, by_payload = SSEDecoder(), SSEDecoder()
    frames = by_frame.feed(body)
    raw = by_payload.feed_payloads(body)
    assert [p if isinstance(p, str) else p.decode() for p in raw] == [f.data for f in frames]
    assert all(isinstance(p, bytes) for p in raw) == (not invalid)  # valid UTF-8 stays bytes for the parser
    assert by_payload.warnings == by_frame.warnings
    assert bool(by_frame.warnings) == invalid
    # The next frame is located exactly as the frame-by-frame decoder locates it.
    (partial_frame, after_frame) = by_frame.feed(eol + odd)
    (partial_payload, after_payload) = by_payload.feed(eol + odd)
    assert partial_payload.data == partial_frame.data == '{"partial":1}'
    assert (partial_payload.line, partial_payload.offset) == (partial_frame.line, partial_frame.offset)
    assert (after_payload.line, after_payload.offset, after_payload.id) == (after_frame.line, after_frame.offset, "9")


def test_feed_payloads_hands_valid_utf8_as_bytes_and_anything_else_as_replaced_text() -> None:
    decoder = SSEDecoder()
    body = 'data: {"a":"π"}\n\ndata: {"b":1}\n\n'.encode() + b'data: {"c":"\xff"}\n\n'
    assert decoder.feed_payloads(body) == ['{"a":"π"}'.encode(), b'{"b":1}', '{"c":"\ufffd"}']
    assert [w.code for w in decoder.warnings] == ["UTF8"]
    single = SSEDecoder()
    assert single.feed_payloads('data: {"a":"π"}\n\n'.encode()) == ['{"a":"π"}'.encode()]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 300), st.sampled_from([b"", "\u00e9".encode(), b"\xff", b"\xe2\x80"])),
             min_size=1, max_size=6),
    st.lists(st.integers(1, 2000), min_size=1, max_size=12),
    st.sampled_from([None, 64, 200]),
)
def test_a_frame_spanning_reads_is_read_as_the_frame_path_reads_it(
        sizes: list[tuple[int, bytes]], cuts: list[int], limit: int | None) -> None:
    """A canonical frame begun in earlier reads is joined once when its read ends it (``_large_frame``):
    the same payload, warnings, size limit and position of what follows as frame-by-frame decoding."""
    body = b"".join(b'data: {"s":"' + b"x" * n + extra + b'"}\n\n' for n, extra in sizes)
    body += b"id: 9\nevent: x\ndata: {}\n\n"
    bounds = sorted({min(c, len(body)) for c in itertools.accumulate(cuts)} | {len(body)})
    chunks = [body[a:b] for a, b in zip([0, *bounds], bounds, strict=False) if a < b]
    kwargs = {} if limit is None else {"max_event_bytes": limit}
    by_frame, by_payload = SSEDecoder(**kwargs), SSEDecoder(**kwargs)

    def read(decoder: SSEDecoder, raw: bool) -> tuple[list[Any], Any]:
        out: list[Any] = []
        try:
            for chunk in chunks:
                if raw:
                    out += [p if isinstance(p, str) else p.decode() for p in decoder.feed_payloads(chunk)]
                else:
                    out += [(f.data, f.line, f.offset, f.id) for f in decoder.feed(chunk)]
            position = (decoder._line, decoder._offset)
            decoder.close()  # (raises a fault the last read deferred)
        except LimitExceeded as exc:
            return out, (exc.index, str(exc))
        return out, position

    frames, frame_end = read(by_frame, raw=False)
    payloads, payload_end = read(by_payload, raw=True)
    assert payloads == [data for data, *_ in frames]
    assert payload_end == frame_end  # the same fault, or the same position after the last frame
    assert by_payload.warnings == by_frame.warnings
