"""A gzip or deflate body read a few events at a time: what ``Inflater`` hands out before a fault, and
what it costs a read when nothing fails.

The clients' own tests of a spoiled body (``tests/thread/test_http.py``) go through a loopback server in
both shells; these feed the decoder reads cut where a server's would seldom fall (across a checkpoint,
at every byte of a trailer), which only a direct feed places exactly.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from agui_client._inflate import CHECKPOINT_BYTES, Inflater

#: zlib's window bits for each coding below (raw deflate: "deflate" sent without its zlib header).
WBITS = {"gzip": 31, "deflate": 15, "raw-deflate": -15}
#: The byte of a coded body's trailer each case spoils (gzip: CRC-32 then length, 4 bytes each; zlib:
#: Adler-32), and what zlib says of it.
TRAILERS = [pytest.param("gzip", -5, "incorrect data check", id="gzip-crc"),
            pytest.param("gzip", -1, "incorrect length check", id="gzip-length"),
            pytest.param("deflate", -1, "incorrect data check", id="deflate-adler")]


def _event(number: int) -> bytes:
    return (b'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"word %d of a reply, %x"}\n\n'
            % (number, number * 2654435761 % 2**32))


def _one_event_reads(coding: str, count: int) -> list[bytes]:
    """``count`` events, coded as a compressing proxy sends a stream: each flushed as it comes, one a read
    (the last read holds the body's end, and its trailer)."""
    coder = zlib.compressobj(6, zlib.DEFLATED, WBITS[coding])
    reads = [coder.compress(_event(number)) + coder.flush(zlib.Z_SYNC_FLUSH) for number in range(count)]
    reads[-1] += coder.flush()
    return reads


def _handed_out(inflater: Inflater, reads: list[bytes]) -> tuple[bytes, httpx.DecodingError | None]:
    """What ``inflater`` hands out of ``reads``, and the error that ended them (``None``: none)."""
    out = bytearray()
    try:
        for read in reads:
            for piece in inflater.feed(read):
                out += piece
        out += inflater.flush()
    except httpx.DecodingError as exc:
        return bytes(out), exc
    return bytes(out), None


class _CountingCopies:
    """A decoder that counts the copies made of it (each about a microsecond: its 32 KiB window)."""

    def __init__(self, inflate: Any) -> None:
        self.inflate, self.copies = inflate, 0

    def copy(self) -> Any:
        self.copies += 1
        return self.inflate.copy()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inflate, name)


@pytest.mark.parametrize("coding", ["gzip", "deflate"])
def test_a_body_of_one_event_reads_copies_its_decoder_once_in_some_kilobytes_not_once_a_read(coding: str) -> None:
    # A copy of the decoder before every read, kept to go over a faulty read again, cost about a
    # microsecond a read: more than the read's own decoding, paid per event by the usual stream.
    reads = _one_event_reads(coding, 2000)
    inflater = Inflater(coding)
    counting = inflater._inflate = _CountingCopies(inflater._inflate)  # type: ignore[assignment]

    out, error = _handed_out(inflater, reads)

    assert error is None and out == b"".join(_event(number) for number in range(2000))
    spent = sum(map(len, reads)) + len(out)
    assert counting.copies <= spent // CHECKPOINT_BYTES + 1 < 10


@pytest.mark.parametrize(("coding", "spoiled", "fault"), TRAILERS)
def test_a_spoiled_trailer_after_several_checkpoints_hands_out_the_whole_body_once(
    coding: str, spoiled: int, fault: str
) -> None:
    # The body is gone over again from the last checkpoint, not from its start: what was handed out since
    # is counted off, so nothing comes twice and nothing is lost.
    reads = _one_event_reads(coding, 3000)
    assert sum(map(len, reads)) + 3000 * len(_event(0)) > 3 * CHECKPOINT_BYTES
    last = bytearray(reads[-1])
    last[spoiled] ^= 0xFF

    out, error = _handed_out(Inflater(coding), [*reads[:-1], bytes(last)])

    assert out == b"".join(_event(number) for number in range(3000))
    assert error is not None and str(error) == f"Error -3 while decompressing data: {fault}"


@pytest.mark.parametrize("coding", ["gzip", "deflate", "raw-deflate"])
def test_a_body_corrupt_mid_stream_after_several_checkpoints_hands_out_what_came_before_the_fault_once(
    coding: str,
) -> None:
    # Read 2,500 carries its event, then a deflate block of a type that does not exist (the three low
    # bits of 0x06: not the last block, type 3); reads after it are not reached.
    reads = _one_event_reads(coding, 3000)
    reads[2500] += b"\x06\x00"

    out, error = _handed_out(Inflater(coding.removeprefix("raw-")), reads)

    assert out == b"".join(_event(number) for number in range(2501))
    assert error is not None and str(error) == "Error -3 while decompressing data: invalid block type"


def _splits(wire: bytes) -> Iterator[list[bytes]]:
    for cut in range(1, len(wire)):
        yield [wire[:cut], wire[cut:]]


@pytest.mark.parametrize(("coding", "spoiled", "fault"), TRAILERS)
def test_a_spoiled_trailer_hands_out_the_body_once_wherever_the_reads_are_cut(
    coding: str, spoiled: int, fault: str
) -> None:
    body = b"".join(_event(number) for number in range(3))
    wire = bytearray(zlib.compress(body, 9, wbits=WBITS[coding]))
    wire[spoiled] ^= 0xFF

    for reads in _splits(bytes(wire)):
        out, error = _handed_out(Inflater(coding), reads)
        assert (out, str(error)) == (body, f"Error -3 while decompressing data: {fault}"), len(reads[0])
