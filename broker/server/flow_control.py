"""Send-path flow control: RocketMQ's isOSPageCacheBusy.

An append that holds the store's write lock longer than ``osPageCacheBusyTimeOutMills`` (1 s) means
the disk or page cache is stalled; new sends are then refused at once with SYSTEM_BUSY so producers
retry another broker instead of piling up. Sends that already waited too long in the store-writer
queue are refused by the send processor itself ([TIMEOUT_CLEAN_QUEUE], waitTimeMillsInSendQueue).
"""

from __future__ import annotations

from broker.store.config import StoreConfig
from broker.store.message_store import MessageStore

PC_SYNCHRONIZED = "[PC_SYNCHRONIZED]broker busy, start flow control for a while"


def page_cache_busy(store: MessageStore, config: StoreConfig) -> str | None:
    """The SYSTEM_BUSY remark while the store is stalled, else None."""
    if store.lock_held_ms() > config.os_page_cache_busy_time_out_mills:
        return PC_SYNCHRONIZED
    return None
