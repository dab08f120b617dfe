"""HPACK (RFC 7541) for the gRPC port: the decoder of the header blocks clients send, and the few
fixed blocks the broker answers with (sans-IO, under :mod:`broker.protocol.http2`).

Requests are decoded here rather than by ``hpack.Decoder`` because a gRPC call carries a dozen headers
and the generic decoder's per-field validation costs more than the call itself. The static table and
Huffman code come from the ``hpack`` package. Huffman-coded strings repeat from call to call (paths,
client ids), so the decodings of short ones are remembered, within a budget of bytes per connection.
What a block may cost is checked as it decodes: a string longer than the whole list may be is refused
before it is decoded, and the list's size after each field. Answers use no dynamic table and no
Huffman coding, which RFC 7541 always allows.
"""

from __future__ import annotations

from typing import Final

from hpack.exceptions import HPACKDecodingError
from hpack.huffman_table import decode_huffman
from hpack.table import HeaderTable

STATIC: Final[tuple[tuple[bytes, bytes], ...]] = HeaderTable.STATIC_TABLE
STATIC_LEN: Final = len(STATIC)  # 61
ENTRY_OVERHEAD: Final = 32  # RFC 7541 4.1: an entry's size is its name and value lengths plus 32
HUFFMAN_CACHED_MAX: Final = 256  # longer Huffman strings are decoded each time (ids, signatures vary)
HUFFMAN_CACHE_BYTES: Final = 32 * 1024  # coded + decoded bytes remembered before the memory starts over
MAX_INT: Final = 1 << 28  # far above any length or index a sane encoder sends

Header = tuple[bytes, bytes]


class HpackError(Exception):
    """A header block that cannot be decoded: the connection must end with COMPRESSION_ERROR."""


class HeaderDecoder:
    """One connection's decoder: the dynamic table lives as long as the connection."""

    def __init__(self, max_table_size: int = 4096, max_list_size: int = 1 << 16) -> None:
        self.max_table_size = max_table_size  # what our SETTINGS_HEADER_TABLE_SIZE allows
        self.table_size_limit = max_table_size  # what the encoder chose, at most the above
        self.max_list_size = max_list_size
        self.entries: list[Header] = []  # the dynamic table, newest last
        self.size = 0
        self.huffman: dict[bytes, bytes] = {}
        self.huffman_bytes = 0  # what the remembered decodings hold

    def decode(self, block: bytes) -> list[Header]:
        headers: list[Header] = []
        pos = 0
        end = len(block)
        listed = 0
        while pos < end:
            first = block[pos]
            if first & 0x80:  # indexed field
                if first != 0xFF:  # the index fits the first byte (most fields of a request)
                    index = first & 0x7F
                    pos += 1
                else:
                    index, pos = self._int(block, pos, 7)
                header = self._entry(index)
            elif first & 0x40:  # literal, added to the table
                index, pos = self._int(block, pos, 6)
                name, pos = self._name(block, pos, index)
                value, pos = self._string(block, pos)
                header = (name, value)
                self._add(header)
            elif first & 0x20:  # dynamic table size update
                if headers:
                    raise HpackError("a table size update after the first field of a block")
                size, pos = self._int(block, pos, 5)
                if size > self.max_table_size:
                    raise HpackError(f"table size update to {size} over the allowed {self.max_table_size}")
                self.table_size_limit = size
                self._evict(0)
                continue
            else:  # literal not added (0000) or never indexed (0001)
                index, pos = self._int(block, pos, 4)
                name, pos = self._name(block, pos, index)
                value, pos = self._string(block, pos)
                header = (name, value)
            listed += len(header[0]) + len(header[1]) + ENTRY_OVERHEAD
            if listed > self.max_list_size:
                raise HpackError(f"the header list is over {self.max_list_size} bytes")
            headers.append(header)
        return headers

    @staticmethod
    def _int(block: bytes, pos: int, bits: int) -> tuple[int, int]:
        """RFC 7541 5.1: an integer in the low ``bits`` of block[pos], continued in 7-bit groups."""
        mask = (1 << bits) - 1
        value = block[pos] & mask
        pos += 1
        if value < mask:
            return value, pos
        shift = 0
        end = len(block)
        while True:
            if pos >= end:
                raise HpackError("the block ends inside an integer")
            byte = block[pos]
            pos += 1
            value += (byte & 0x7F) << shift
            if value > MAX_INT:
                raise HpackError("an integer over 2^28")
            if not byte & 0x80:
                return value, pos
            shift += 7

    def _string(self, block: bytes, pos: int) -> tuple[bytes, int]:
        if pos >= len(block):
            raise HpackError("the block ends before a string")
        coded = block[pos] & 0x80
        length, pos = self._int(block, pos, 7)
        end = pos + length
        if end > len(block):
            raise HpackError(f"a string of {length} bytes runs past the block's end")
        if length > self.max_list_size:  # before decoding: encoders use Huffman only where it is shorter
            raise HpackError(f"a string of {length} bytes in a header list of at most {self.max_list_size}")
        raw = block[pos:end]
        if not coded:
            return raw, end
        decoded = self.huffman.get(raw)
        if decoded is None:
            try:
                decoded = bytes(decode_huffman(raw))
            except HPACKDecodingError as exc:
                raise HpackError(f"a Huffman string does not decode: {exc}") from None
            if length <= HUFFMAN_CACHED_MAX:
                if self.huffman_bytes + length + len(decoded) > HUFFMAN_CACHE_BYTES:
                    self.huffman.clear()
                    self.huffman_bytes = 0
                self.huffman[raw] = decoded
                self.huffman_bytes += length + len(decoded)
        return decoded, end

    def _name(self, block: bytes, pos: int, index: int) -> tuple[bytes, int]:
        if index:
            return self._entry(index)[0], pos
        return self._string(block, pos)

    def _entry(self, index: int) -> Header:
        if 0 < index <= STATIC_LEN:
            return STATIC[index - 1]
        dynamic = index - STATIC_LEN
        if index == 0 or dynamic > len(self.entries):
            raise HpackError(f"table index {index} is not in the table")
        return self.entries[-dynamic]

    def _add(self, header: Header) -> None:
        size = len(header[0]) + len(header[1]) + ENTRY_OVERHEAD
        if size > self.table_size_limit:  # RFC 7541 4.4: an entry larger than the table empties it
            self.entries.clear()
            self.size = 0
            return
        self._evict(size)
        self.entries.append(header)
        self.size += size

    def _evict(self, room: int) -> None:
        evicted = 0
        while self.size + room > self.table_size_limit and evicted < len(self.entries):
            name, value = self.entries[evicted]
            self.size -= len(name) + len(value) + ENTRY_OVERHEAD
            evicted += 1
        if evicted:
            del self.entries[:evicted]


def encode_int(value: int, bits: int, flags: int = 0) -> bytes:
    """RFC 7541 5.1, the encoder's side of :meth:`HeaderDecoder._int`."""
    mask = (1 << bits) - 1
    if value < mask:
        return bytes((flags | value,))
    out = bytearray((flags | mask,))
    value -= mask
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def literal(name: bytes, value: bytes) -> bytes:
    """A field sent as a literal with a literal name, not added to the client's table."""
    return b"\x00" + encode_int(len(name), 7) + name + encode_int(len(value), 7) + value


# ":status: 200" is static entry 8; content-type is static entry 31, sent without indexing.
RESPONSE_HEADERS: Final = b"\x88" + encode_int(31, 4) + encode_int(16, 7) + b"application/grpc"
