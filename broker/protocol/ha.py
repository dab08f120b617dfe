"""The classic RocketMQ HA wire format (DefaultHAClient / HAConnection) and the HA status body.

Slave -> master: 8-byte big-endian offset, the slave's CommitLog max offset (sent on connect,
after every applied frame and as a heartbeat); in controller mode first a negative value, minus the
replica's broker id, so that the master can tell its SyncStateSet members apart. Master -> slave:
frames of an 8-byte physical offset, a 4-byte body size and that many CommitLog bytes; an empty
body is a heartbeat.
Pure functions on bytes: no sockets.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Final

from broker.protocol.bodies import JsonBody

REPORT: Final = struct.Struct(">q")
FRAME_HEADER: Final = struct.Struct(">qi")


def pack_report(offset: int) -> bytes:
    return REPORT.pack(offset)


def pack_frame_header(offset: int, size: int) -> bytes:
    return FRAME_HEADER.pack(offset, size)


def unpack_frame_header(data: bytes) -> tuple[int, int]:
    """``(physical offset, body size)``; raises ValueError on a negative size or offset."""
    offset, size = FRAME_HEADER.unpack(data)
    if offset < 0 or size < 0:
        raise ValueError(f"bad HA frame header: offset {offset}, size {size}")
    return offset, size


@dataclass(slots=True)
class HAConnectionRuntimeInfo(JsonBody):
    """One slave as its master sees it."""

    addr: str = ""
    slaveAckOffset: int = 0
    diff: int = 0
    inSync: bool = False
    transferredByteInSecond: int = 0
    transferFromWhere: int = 0


@dataclass(slots=True)
class HAClientRuntimeInfo(JsonBody):
    """A slave's replication client: its master and where it stands."""

    masterAddr: str = ""
    transferredByteInSecond: int = 0
    maxOffset: int = 0
    lastReadTimestamp: int = 0
    lastWriteTimestamp: int = 0
    masterFlushOffset: int = 0
    isActivated: bool = False
    truncatedBytes: int = 0  # rmqkit: bytes cut from this slave to match its master (reconcile)
    lastTruncate: str = ""  # rmqkit: when and why the last cut happened


@dataclass(slots=True)
class HARuntimeInfo(JsonBody):
    """GET_BROKER_HA_STATUS (907) body, as upstream's HARuntimeInfo."""

    master: bool = True
    masterCommitLogMaxOffset: int = 0
    inSyncSlaveNums: int = 0
    haConnectionInfo: list[HAConnectionRuntimeInfo] = field(default_factory=list)
    haClientRuntimeInfo: HAClientRuntimeInfo = field(default_factory=HAClientRuntimeInfo)
