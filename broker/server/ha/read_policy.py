"""Which broker of a master/slave set a pull should read from (suggestWhichBrokerId).

A master suggests the group's ``whichBrokerWhenConsumeSlowly`` (the slave) when slaveReadEnable is on
and the consumer reads further behind than slaveReadThresholdBytes (upstream: 40% of RAM). A slave
serves reads when slaveReadEnable is on or its master is unreachable, and otherwise sends the
consumer back to the master.
"""

from __future__ import annotations

import os
from functools import cache
from typing import Protocol

from broker.protocol.message import POS_PHYSICAL_OFFSET
from broker.server.config import BrokerConfig
from broker.server.subscription_group import SubscriptionGroupManager
from broker.store.message_store import GetResult, MessageStore

MASTER_ID = 0
MEMORY_RATIO = 0.40  # accessMessageInMemoryMaxRatio


class MasterLink(Protocol):
    """A slave's replication from its master."""

    @property
    def master_alive(self) -> bool: ...


class ReadPolicyParts(Protocol):
    """The parts of the broker the read policy looks at."""

    @property
    def config(self) -> BrokerConfig: ...

    @property
    def groups(self) -> SubscriptionGroupManager: ...

    @property
    def store(self) -> MessageStore: ...

    @property
    def ha_client(self) -> MasterLink | None:
        """Set on slaves."""
        ...


@cache
def _memory_threshold() -> int:
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") * MEMORY_RATIO)
    except (ValueError, OSError):
        return 1 << 30


def slave_refuses_reads(broker: ReadPolicyParts) -> bool:
    """A slave with slave reads off sends consumers to its master while that master is alive."""
    client = broker.ha_client
    return client is not None and not broker.config.slave_read_enable and client.master_alive


def suggest_broker_id(broker: ReadPolicyParts, group: str, result: GetResult) -> int:
    client = broker.ha_client
    if client is not None and not client.master_alive:  # a slave whose master is away keeps readers
        return broker.config.broker_id
    config = broker.groups.get(group)
    if not broker.config.slave_read_enable or config is None or not result.records:
        return MASTER_ID
    last = result.records[-1]
    pulled_to = int.from_bytes(last[POS_PHYSICAL_OFFSET : POS_PHYSICAL_OFFSET + 8], "big")
    threshold = broker.config.slave_read_threshold_bytes or _memory_threshold()
    behind = broker.store.commitlog.max_offset - pulled_to
    return config.whichBrokerWhenConsumeSlowly if behind > threshold else config.brokerId
