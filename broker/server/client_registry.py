"""Who is connected: producers and consumers per group, their subscriptions, and queue locks.

Clients identify themselves only through heartbeats on the connection they opened, so entries are
keyed by channel: a closed channel, an UNREGISTER_CLIENT, or 120 s without a heartbeat removes
them. When a group's membership changes its members get NOTIFY_CONSUMER_IDS_CHANGED (one-way,
over their own connection) so they rebalance at once instead of at their next 20 s tick.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from broker.protocol.bodies import ConsumeFromWhere, ConsumeType, MessageModel, MessageQueue
from broker.protocol.codes import LanguageCode, RequestCode
from broker.protocol.group_bodies import SubscriptionData
from broker.protocol.headers import NotifyConsumerIdsChangedRequestHeader
from broker.protocol.remoting import RemotingCommand, make_request
from broker.remoting.channel import RemotingChannel
from broker.remoting.errors import RemotingError

log = logging.getLogger(__name__)

LOCK_MAX_LIVE_SECONDS = 60.0  # rocketmq.broker.rebalance.lockMaxLiveTime
# Changes to a group's members within this long are told in one round of NOTIFY_CONSUMER_IDS_CHANGED
# (RocketMQ's broker likewise cuts a round short when the next change comes): a group of N
# consumers starting together costs N notifications, not N squared, and N list requests after them.
NOTIFY_COALESCE_SECONDS = 0.2


@dataclass(slots=True)
class ClientChannelInfo:
    channel: RemotingChannel
    client_id: str
    language: LanguageCode
    version: int
    last_update: float = field(default_factory=time.monotonic)


@dataclass(slots=True)
class ConsumerGroupInfo:
    group: str
    consume_type: ConsumeType | None = None
    message_model: MessageModel | None = None
    consume_from_where: ConsumeFromWhere | None = None
    channels: dict[RemotingChannel, ClientChannelInfo] = field(default_factory=dict)
    subscriptions: dict[str, SubscriptionData] = field(default_factory=dict)

    def client_ids(self) -> list[str]:
        return [info.client_id for info in self.channels.values()]


class ClientRegistry:
    def __init__(self, *, channel_expired_seconds: float, notify_enabled: bool) -> None:
        self.producers: dict[str, dict[RemotingChannel, ClientChannelInfo]] = {}
        self.consumers: dict[str, ConsumerGroupInfo] = {}
        self.channel_expired_seconds = channel_expired_seconds
        self.notify_enabled = notify_enabled
        self._watched: dict[RemotingChannel, asyncio.Task[None]] = {}
        self._sends: set[asyncio.Task[None]] = set()
        self._notifying: dict[str, asyncio.TimerHandle] = {}  # group -> its coming round

    # == registration ==========================================================================
    def register_producer(self, group: str, info: ClientChannelInfo) -> None:
        channels = self.producers.setdefault(group, {})
        old = channels.get(info.channel)
        if old is not None:
            old.last_update = info.last_update
        else:
            channels[info.channel] = info
            self._watch(info.channel)

    def register_consumer(
        self,
        group: str,
        info: ClientChannelInfo,
        consume_type: ConsumeType | None,
        message_model: MessageModel | None,
        consume_from_where: ConsumeFromWhere | None,
        subscriptions: Iterable[SubscriptionData],
        *,
        notify: bool,
    ) -> bool:
        """Record a consumer heartbeat; returns whether the group's subscriptions changed."""
        group_info = self.consumers.setdefault(group, ConsumerGroupInfo(group))
        group_info.consume_type = consume_type
        group_info.message_model = message_model
        group_info.consume_from_where = consume_from_where
        old = group_info.channels.get(info.channel)
        joined = old is None or old.client_id != info.client_id
        if old is not None and not joined:
            old.last_update = info.last_update
        else:
            group_info.channels[info.channel] = info
            self._watch(info.channel)
        new_subs = {sub.topic: sub for sub in subscriptions if sub.topic}
        changed = _subscriptions_differ(group_info.subscriptions, new_subs)
        if changed:
            group_info.subscriptions = new_subs
        if joined and notify:
            self.notify_ids_changed(group)
        return changed

    def unregister_producer(self, group: str, channel: RemotingChannel) -> None:
        channels = self.producers.get(group)
        if channels is not None and channels.pop(channel, None) is not None and not channels:
            del self.producers[group]

    def unregister_consumer(self, group: str, channel: RemotingChannel, *, notify: bool) -> None:
        group_info = self.consumers.get(group)
        if group_info is None or group_info.channels.pop(channel, None) is None:
            return
        if not group_info.channels:
            del self.consumers[group]
        elif notify:
            self.notify_ids_changed(group)

    def channel_closed(self, channel: RemotingChannel) -> None:
        """Forget everything the connection registered; its groups' members rebalance."""
        self._watched.pop(channel, None)
        for group in [g for g, chans in self.producers.items() if channel in chans]:
            self.unregister_producer(group, channel)
        for group in [g for g, info in self.consumers.items() if channel in info.channels]:
            self.unregister_consumer(group, channel, notify=self.notify_enabled)

    def scan_expired(self) -> None:
        """Drop clients silent for longer than channelExpiredTimeout and close their connections."""
        deadline = time.monotonic() - self.channel_expired_seconds
        stale = {
            info.channel
            for table in [*self.producers.values(), *(g.channels for g in self.consumers.values())]
            for info in table.values()
            if info.last_update < deadline
        }
        for channel in stale:
            log.info("client connection %s expired (no heartbeat)", channel.remote_addr)
            self.channel_closed(channel)
            channel.close()

    def _watch(self, channel: RemotingChannel) -> None:
        if channel not in self._watched:
            self._watched[channel] = asyncio.create_task(self._on_close(channel))

    async def _on_close(self, channel: RemotingChannel) -> None:
        await channel.wait_closed()
        self.channel_closed(channel)

    async def close(self) -> None:
        for handle in self._notifying.values():
            handle.cancel()
        self._notifying.clear()
        tasks = [*self._watched.values(), *self._sends]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    # == queries ===============================================================================
    def consumer_group(self, group: str) -> ConsumerGroupInfo | None:
        return self.consumers.get(group)

    def consumer_ids(self, group: str) -> list[str]:
        info = self.consumers.get(group)
        return info.client_ids() if info is not None else []

    def find_consumer(self, group: str, client_id: str) -> ClientChannelInfo | None:
        """The connection of one online client of ``group`` (a client id may reconnect: the newest wins)."""
        info = self.consumers.get(group)
        found = [c for c in info.channels.values() if c.client_id == client_id] if info is not None else []
        return max(found, key=lambda c: c.last_update, default=None)

    def holder_id(self, group: str, channel: RemotingChannel) -> str | None:
        """The client id of ``group``'s consumer on ``channel``, whose pulls are of queues it holds;
        None for a connection without a heartbeat of the group, and in a broadcasting group (where
        every client pulls every queue)."""
        info = self.consumers.get(group)
        if info is None or info.message_model is MessageModel.BROADCASTING:
            return None
        client = info.channels.get(channel)
        return None if client is None else client.client_id

    def subscription(self, group: str, topic: str) -> SubscriptionData | None:
        info = self.consumers.get(group)
        return info.subscriptions.get(topic) if info is not None else None

    def groups_subscribing(self, topic: str) -> list[str]:
        return sorted(g for g, info in self.consumers.items() if topic in info.subscriptions)

    # == pushes ================================================================================
    def notify_ids_changed(self, group: str) -> None:
        """Tell the group's consumers to rebalance, in the group's next round (see
        NOTIFY_COALESCE_SECONDS), to the members of that moment."""
        if group not in self._notifying:
            loop = asyncio.get_running_loop()
            self._notifying[group] = loop.call_later(NOTIFY_COALESCE_SECONDS, self._notify_round, group)

    def _notify_round(self, group: str) -> None:
        self._notifying.pop(group, None)
        info = self.consumers.get(group)
        if info is None:
            return
        for channel in list(info.channels):
            header = NotifyConsumerIdsChangedRequestHeader(consumerGroup=group)
            self.push(channel, make_request(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, header, oneway=True))

    def push(self, channel: RemotingChannel, request: RemotingCommand) -> None:
        """Send a one-way request to a client in the background; a dead client is just logged."""
        task = asyncio.create_task(self._push(channel, request))
        self._sends.add(task)
        task.add_done_callback(self._sends.discard)

    @staticmethod
    async def _push(channel: RemotingChannel, request: RemotingCommand) -> None:
        try:
            await channel.invoke_oneway(request)
        except RemotingError as exc:
            log.debug("push to %s failed: %s", channel.remote_addr, exc)


def _subscriptions_differ(old: dict[str, SubscriptionData], new: dict[str, SubscriptionData]) -> bool:
    if old.keys() != new.keys():
        return True
    return any(old[t].subString != new[t].subString or old[t].subVersion != new[t].subVersion for t in new)


@dataclass(slots=True)
class _Lock:
    client_id: str
    last_update: float = field(default_factory=time.monotonic)


class RebalanceLockManager:
    """Which client of a group owns which queue, for orderly consumption (LOCK_BATCH_MQ)."""

    def __init__(self, max_live_seconds: float = LOCK_MAX_LIVE_SECONDS) -> None:
        self.max_live_seconds = max_live_seconds
        self._table: dict[str, dict[MessageQueue, _Lock]] = {}

    def _expired(self, lock: _Lock, now: float) -> bool:
        return now - lock.last_update > self.max_live_seconds

    def try_lock_batch(
        self, group: str, queues: Iterable[MessageQueue], client_id: str
    ) -> list[MessageQueue]:
        """Lock (or renew) every free or own queue; returns the queues the client now holds."""
        now = time.monotonic()
        locks = self._table.setdefault(group, {})
        granted: list[MessageQueue] = []
        for mq in queues:
            lock = locks.get(mq)
            if lock is None or self._expired(lock, now) or lock.client_id == client_id:
                locks[mq] = _Lock(client_id, now)
                granted.append(mq)
        return granted

    def unlock_batch(self, group: str, queues: Iterable[MessageQueue], client_id: str) -> None:
        locks = self._table.get(group, {})
        for mq in queues:
            lock = locks.get(mq)
            if lock is not None and lock.client_id == client_id:
                del locks[mq]

    def is_locked(self, group: str, mq: MessageQueue) -> bool:
        lock = self._table.get(group, {}).get(mq)
        return lock is not None and not self._expired(lock, time.monotonic())
