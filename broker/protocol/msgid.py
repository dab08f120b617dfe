"""Message ids: the broker's offset MessageId and the client's UNIQ_KEY."""

from __future__ import annotations

import datetime as dt
import ipaddress
import itertools
import os
import socket
import struct
import threading
import time
from dataclasses import dataclass

_PORT_OFFSET = struct.Struct(">iq")
_UNIQ_TAIL = struct.Struct(">HIIH")  # pid, classloader hash, ms since month start, counter
# Java clients put their classloader's hashCode here; this constant is what most of them show.
CLASSLOADER_HASH = 0x18B4AAC2


class MessageIdError(ValueError):
    """A string that is not a well-formed message id."""


@dataclass(slots=True, frozen=True)
class OffsetMessageId:
    host: str
    port: int
    offset: int

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}" if ":" not in self.host else f"[{self.host}]:{self.port}"


def create_offset_msg_id(store_host_raw: bytes, physical_offset: int) -> str:
    """Offset MessageId from the packed store host (ip + port) and a CommitLog offset."""
    return (store_host_raw + struct.pack(">q", physical_offset)).hex().upper()


def _id_bytes(text: str, what: str) -> tuple[bytes, int]:
    """The bytes of a MessageId or UNIQ_KEY (``what``) and the length of the IP they start with."""
    if len(text) not in (32, 56):
        raise MessageIdError(f"a {what} has 32 or 56 hex digits, got {len(text)}: {text!r}")
    try:
        raw = bytes.fromhex(text)
    except ValueError:
        raise MessageIdError(f"not a hexadecimal {what}: {text!r}") from None
    return raw, 4 if len(raw) == 16 else 16


def decode_offset_msg_id(msg_id: str) -> OffsetMessageId:
    raw, ip_len = _id_bytes(msg_id, "MessageId")
    port, offset = _PORT_OFFSET.unpack_from(raw, ip_len)
    host = str(ipaddress.ip_address(raw[:ip_len]))
    return OffsetMessageId(host, port, offset)


@dataclass(slots=True, frozen=True)
class UniqKeyInfo:
    ip: str
    pid: int
    classloader_hash: int
    timestamp_ms: int
    counter: int


def _month_start_ms(t_ms: int) -> int:
    now = dt.datetime.fromtimestamp(t_ms / 1000).astimezone()
    start = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    return int(start.timestamp() * 1000)


def _previous_month_start_ms(month_start_ms: int) -> int:
    return _month_start_ms(month_start_ms - 1)


def decode_uniq_key(key: str, now_ms: int | None = None) -> UniqKeyInfo:
    """Recover ip, pid and (nearest past) time from a UNIQ_KEY, as mqadmin's decodeMessageId does."""
    raw, ip_len = _id_bytes(key, "UNIQ_KEY")
    pid, hash_, delta, counter = _UNIQ_TAIL.unpack_from(raw, ip_len)
    now = int(time.time() * 1000) if now_ms is None else now_ms
    start = _month_start_ms(now)
    ts = start + delta
    if ts > now:
        ts = _previous_month_start_ms(start) + delta
    return UniqKeyInfo(str(ipaddress.ip_address(raw[:ip_len])), pid, hash_, ts, counter)


def local_ip() -> bytes:
    """The address a UNIQ_KEY starts with: a non-loopback IPv4 of this host, else 127.0.0.1."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("10.255.255.255", 1))  # no packet is sent; this only picks a route
            return socket.inet_aton(s.getsockname()[0])
    except OSError:
        return socket.inet_aton("127.0.0.1")


class UniqKeyGenerator:
    """Generates UNIQ_KEYs with the Java client's layout; thread-safe."""

    def __init__(self, ip: bytes | None = None, pid: int | None = None) -> None:
        ip_raw = local_ip() if ip is None else ip
        self._prefix = ip_raw + struct.pack(
            ">HI", (os.getpid() if pid is None else pid) & 0xFFFF, CLASSLOADER_HASH
        )
        self._prefix_hex = self._prefix.hex().upper()
        self._counter = itertools.count()
        self._lock = threading.Lock()
        self._month_start = 0
        self._next_month = 0

    def _refresh_month(self, now_ms: int) -> None:
        self._month_start = _month_start_ms(now_ms)
        self._next_month = _month_start_ms(self._month_start + 32 * 86_400_000)

    def next(self, now_ms: int | None = None) -> str:
        now = int(time.time() * 1000) if now_ms is None else now_ms
        with self._lock:
            if not self._month_start <= now < self._next_month:
                self._refresh_month(now)
            counter = next(self._counter) & 0xFFFF
            # Java stores (int) of the ms since the month began: past day 24 it wraps negative
            delta = (now - self._month_start) & 0xFFFFFFFF
        return self._prefix_hex + struct.pack(">IH", delta, counter).hex().upper()
