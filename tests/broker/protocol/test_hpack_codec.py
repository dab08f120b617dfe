"""The gRPC port's HPACK decoder (RFC 7541) against the reference ``hpack`` package: whatever
``hpack.Encoder`` writes, through one connection's dynamic table and its size changes, decodes to the
same header list; whatever bytes arrive, the decoder answers with a list or an HpackError, never
another exception; and the fixed answer blocks decode with the reference decoder."""

from __future__ import annotations

import re
from itertools import pairwise

import hpack
import pytest
from hpack.huffman import HuffmanEncoder
from hpack.huffman_constants import REQUEST_CODES, REQUEST_CODES_LENGTH
from hpack.struct import HeaderTuple, NeverIndexedHeaderTuple
from hpack.table import HeaderTable
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.protocol.hpack_codec import (
    HUFFMAN_CACHE_BYTES,
    RESPONSE_HEADERS,
    STATIC_LEN,
    Header,
    HeaderDecoder,
    HpackError,
    encode_int,
    literal,
)

HUFFMAN = HuffmanEncoder(REQUEST_CODES, REQUEST_CODES_LENGTH)
ROOMY = 1 << 22  # a list size limit the generated header lists stay under

TOKEN_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789-_.!#$&'*+^`|~"
STATIC_NAMES = sorted({name for name, _ in HeaderTable.STATIC_TABLE})
names = st.one_of(
    st.text(TOKEN_CHARS, min_size=1, max_size=24).map(str.encode),
    st.sampled_from(STATIC_NAMES),  # names hpack sends as an index into the static table
)
printable_values = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=64).map(str.encode)
values = st.one_of(printable_values, st.binary(max_size=64), st.binary(min_size=1000, max_size=5000))
fields = st.tuples(names, values)


def tuple_of(header: Header, sensitive: bool) -> HeaderTuple:
    """A field as hpack.Encoder takes it; a sensitive one is sent never-indexed (0001 pattern)."""
    return NeverIndexedHeaderTuple(*header) if sensitive else HeaderTuple(*header)


# One connection: a pool of fields, then blocks drawn from the pool (so fields repeat and hit the
# dynamic table), each block optionally preceded by a change of the encoder's table size.
blocks = st.lists(
    st.tuples(
        st.one_of(st.none(), st.integers(0, 4096), st.sampled_from([0, 64, 256, 4096])),
        st.lists(st.tuples(st.integers(0, 1_000_000), st.booleans()), max_size=12),
    ),
    min_size=1,
    max_size=8,
)


@pytest.mark.parametrize("huffman", [True, False], ids=["huffman", "plain"])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pool=st.lists(fields, min_size=1, max_size=20), plan=blocks)
def test_blocks_of_the_reference_encoder_decode_to_the_same_lists(
    huffman: bool, pool: list[Header], plan: list[tuple[int | None, list[tuple[int, bool]]]]
) -> None:
    encoder = hpack.Encoder()
    decoder = HeaderDecoder(max_list_size=ROOMY)
    for table_size, picks in plan:
        if table_size is not None:
            encoder.header_table_size = table_size
        headers = [pool[pick % len(pool)] for pick, _ in picks]
        block = encoder.encode([tuple_of(h, s) for h, (_, s) in zip(headers, picks, strict=True)], huffman)
        assert decoder.decode(block) == headers
        # the dynamic tables of both ends hold the same fields (newest first in hpack's)
        assert decoder.entries[::-1] == list(encoder.header_table.dynamic_entries)
        assert decoder.table_size_limit == encoder.header_table_size


def test_a_size_update_evicts_and_an_oversized_field_empties_the_table() -> None:
    encoder = hpack.Encoder()
    decoder = HeaderDecoder(max_list_size=ROOMY)
    first = [(b"x-one", b"1" * 100), (b"x-two", b"2" * 100), (b"x-three", b"3" * 100)]
    assert decoder.decode(encoder.encode(first)) == first
    assert len(decoder.entries) == 3
    encoder.header_table_size = 150  # room for one entry of 32 + 5 + 100 (or x-two's 137)
    assert decoder.decode(encoder.encode([(b"x-three", b"3" * 100)])) == [(b"x-three", b"3" * 100)]
    assert decoder.entries == [(b"x-three", b"3" * 100)]
    assert decoder.size == 32 + 7 + 100
    big = [(b"x-big", b"b" * 200)]  # larger than the whole table: it empties the table
    assert decoder.decode(encoder.encode(big)) == big
    assert decoder.entries == []
    assert decoder.size == 0


def test_two_size_updates_at_the_start_of_a_block() -> None:
    encoder = hpack.Encoder()
    decoder = HeaderDecoder()
    assert decoder.decode(encoder.encode([(b"x-a", b"a")])) == [(b"x-a", b"a")]
    encoder.header_table_size = 0
    encoder.header_table_size = 2048  # hpack sends both: the smallest, then the last
    block = encoder.encode([(b"x-a", b"a")])
    assert block[0] == 0x20  # size update to 0 ...
    assert decoder.decode(block) == [(b"x-a", b"a")]
    assert decoder.table_size_limit == 2048
    assert decoder.entries == [(b"x-a", b"a")]  # ... emptied the table, then x-a was added again


# == arbitrary input ==========================================================================
@settings(max_examples=1000, deadline=None)
@given(st.lists(st.binary(max_size=80), min_size=1, max_size=4))
def test_arbitrary_bytes_decode_or_raise_hpack_error(data: list[bytes]) -> None:
    decoder = HeaderDecoder()
    for block in data:
        try:
            headers = decoder.decode(block)
        except HpackError as exc:
            assert str(exc)
            return
        assert all(isinstance(n, bytes) and isinstance(v, bytes) for n, v in headers)


def _string(raw: bytes, huffman: bool) -> bytes:
    if huffman:
        coded = HUFFMAN.encode(raw)
        return encode_int(len(coded), 7, 0x80) + coded
    return encode_int(len(raw), 7) + raw


# Representations (RFC 7541 6) with indexes around the static and dynamic tables' ends, Huffman or
# plain strings, size updates within and above the limit, and stray bytes.
representation = st.one_of(
    st.builds(lambda index: encode_int(index, 7, 0x80), st.integers(0, STATIC_LEN + 12)),
    st.builds(
        lambda kind, index, name, value, huffman_name, huffman_value: (
            encode_int(index, 6 if kind == 0x40 else 4, kind)
            + (b"" if index else _string(name, huffman_name))
            + _string(value, huffman_value)
        ),
        st.sampled_from([0x40, 0x00, 0x10]),
        st.integers(0, STATIC_LEN + 8),
        st.binary(max_size=8),
        st.one_of(st.binary(max_size=40), st.binary(min_size=4000, max_size=4200)),
        st.booleans(),
        st.booleans(),
    ),
    st.builds(lambda size: encode_int(size, 5, 0x20), st.integers(0, 5000)),
    st.binary(min_size=1, max_size=3),
)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(representation, max_size=8).map(b"".join), min_size=1, max_size=5))
def test_same_answer_as_the_reference_decoder(data: list[bytes]) -> None:
    """Block by block, both decoders give the same list, or both refuse the block."""
    reference = hpack.Decoder(max_header_list_size=ROOMY)
    decoder = HeaderDecoder(max_list_size=ROOMY)
    for block in data:
        try:
            expected: list[Header] | None = [
                (bytes(n), bytes(v)) for n, v in reference.decode(block, raw=True)
            ]
        except hpack.HPACKError:
            expected = None
        try:
            got: list[Header] | None = decoder.decode(block)
        except HpackError:
            got = None
        assert got == expected
        if got is None:
            return


# == errors ===================================================================================
@pytest.mark.parametrize(
    ("block", "words"),
    [
        (b"\xff", "inside an integer"),  # index 127 and more: the continuation is missing
        (b"\xff\x80\x80", "inside an integer"),
        (b"\x7f\xff\xff\xff\xff\x7f", "over 2^28"),
        (b"\x00", "ends before a string"),  # a literal without its name
        (b"\x00\x01a", "ends before a string"),  # ... without its value
        (b"\x00\x05ab", "runs past the block's end"),
        (b"\x40\x01a\x7f", "inside an integer"),  # the value's length is cut
        (b"\x00\x01a\x83\xff\xff\xff", "Huffman"),  # EOS in a Huffman string
    ],
)
def test_truncated_or_broken_blocks_raise_readable_errors(block: bytes, words: str) -> None:
    with pytest.raises(HpackError, match=re.escape(words)):
        HeaderDecoder().decode(block)


def test_an_index_beyond_the_tables_raises() -> None:
    decoder = HeaderDecoder()
    with pytest.raises(HpackError, match="table index 62 is not in the table"):
        decoder.decode(encode_int(STATIC_LEN + 1, 7, 0x80))
    with pytest.raises(HpackError, match="table index 0"):
        decoder.decode(b"\x80")
    with pytest.raises(HpackError, match="table index 70"):  # as the name of a literal
        decoder.decode(encode_int(70, 6, 0x40) + b"\x01v")
    assert decoder.decode(b"\x40\x01a\x01b") == [(b"a", b"b")]  # now index 62 exists ...
    assert decoder.decode(encode_int(STATIC_LEN + 1, 7, 0x80)) == [(b"a", b"b")]
    with pytest.raises(HpackError, match="table index 63"):  # ... and 63 does not
        decoder.decode(encode_int(STATIC_LEN + 2, 7, 0x80))


def test_a_size_update_above_the_allowed_maximum_raises() -> None:
    decoder = HeaderDecoder(max_table_size=4096)
    assert decoder.decode(encode_int(4096, 5, 0x20)) == []
    with pytest.raises(HpackError, match="table size update to 4097 over the allowed 4096"):
        decoder.decode(encode_int(4097, 5, 0x20))
    with pytest.raises(HpackError, match="over the allowed 100"):
        HeaderDecoder(max_table_size=100).decode(encode_int(101, 5, 0x20))


def test_a_size_update_after_a_field_raises() -> None:
    with pytest.raises(HpackError, match="after the first field"):
        HeaderDecoder().decode(b"\x82" + encode_int(100, 5, 0x20))


def test_the_header_list_size_limit_raises() -> None:
    # the list's size counts each field's name and value plus 32 (RFC 7541 4.1)
    assert HeaderDecoder(max_list_size=32 + 1 + 67).decode(literal(b"a", b"x" * 67)) == [(b"a", b"x" * 67)]
    with pytest.raises(HpackError, match="over 100 bytes"):
        HeaderDecoder(max_list_size=100).decode(literal(b"a", b"x" * 68))
    block = b"".join(literal(b"name", b"v" * 10) for _ in range(100))  # 46 bytes each
    with pytest.raises(HpackError, match="over 4000 bytes"):
        HeaderDecoder(max_list_size=4000).decode(block)
    with pytest.raises(HpackError, match="over 4000 bytes"):  # indexed fields count too
        HeaderDecoder(max_list_size=4000).decode(b"\x40\x04name\x0avvvvvvvvvv" + b"\xbe" * 100)


# == the encoder's side =======================================================================
@pytest.mark.parametrize("bits", [4, 5, 6, 7])
@settings(max_examples=300, deadline=None)
@given(value=st.one_of(st.integers(0, 300), st.integers(0, 1 << 28)), flags=st.integers(0, 255))
def test_encode_int_round_trips(bits: int, value: int, flags: int) -> None:
    flags &= ~((1 << bits) - 1) & 0xFF  # the bits above the prefix
    encoded = encode_int(value, bits, flags)
    assert encoded[0] & ~((1 << bits) - 1) & 0xFF == flags
    assert HeaderDecoder._int(encoded + b"tail", 0, bits) == (value, len(encoded))
    reference = bytearray(hpack.hpack.encode_integer(value, bits))
    reference[0] |= flags
    assert encoded == bytes(reference)


@settings(max_examples=200, deadline=None)
@given(name=st.binary(min_size=1, max_size=300), value=st.binary(max_size=300))
def test_literal_decodes_with_both_decoders(name: bytes, value: bytes) -> None:
    block = literal(name, value)
    assert hpack.Decoder().decode(block, raw=True) == [(name, value)]
    decoder = HeaderDecoder()
    assert decoder.decode(block) == [(name, value)]
    assert decoder.entries == []  # "without indexing": the table is untouched


def test_response_headers_decode() -> None:
    expected = [(b":status", b"200"), (b"content-type", b"application/grpc")]
    assert hpack.Decoder().decode(RESPONSE_HEADERS, raw=True) == expected
    assert HeaderDecoder().decode(RESPONSE_HEADERS) == expected
    assert hpack.Decoder().decode(literal(b"name", b"value"), raw=True) == [(b"name", b"value")]


def test_remembered_huffman_decodings_stay_within_their_bytes() -> None:
    """Unique Huffman strings (a client sending a new id with every call) cost at most the cache's
    bytes, which then start over; long ones are not remembered at all."""
    decoder = HeaderDecoder()
    encoder = hpack.Encoder()
    held = []
    for i in range(1000):
        name = f"x-id-{i}"
        block = encoder.encode([(name, f"{i:08d}" * 4), ("x-long", f"{i:08d}" * 100)], huffman=True)
        assert dict(decoder.decode(block))[name.encode()] == f"{i:08d}".encode() * 4
        held.append(decoder.huffman_bytes)
    assert max(held) <= HUFFMAN_CACHE_BYTES
    assert any(later < earlier for earlier, later in pairwise(held))  # started over
    assert all(len(raw) <= 256 for raw in decoder.huffman)


def test_a_string_longer_than_the_list_may_be_is_refused_before_it_decodes() -> None:
    decoder = HeaderDecoder(max_list_size=1024)
    block = b"\x00" + encode_int(4, 7) + b"name" + encode_int(2000, 7, 0x80) + b"\xff" * 2000
    with pytest.raises(HpackError, match="a string of 2000 bytes in a header list of at most 1024"):
        decoder.decode(block)
