"""Topic routes from the NameServer(s), cached and refreshed, and what producers and consumers derive
from them: publish info (write queues of masters) and subscribe info (read queues)."""

from __future__ import annotations

import dataclasses
import logging
import random
import time
from dataclasses import dataclass

from broker.client.api import ClientAPI
from broker.client.message import MQClientError
from broker.protocol.bodies import MessageQueue, TopicRouteData
from broker.protocol.route import MASTER_ID, publish_queues, subscribe_queues

log = logging.getLogger(__name__)

DEFAULT_TOPIC = "TBW102"  # the broker's template for topics auto-created on first send
DEFAULT_TOPIC_QUEUE_NUMS = 4


@dataclass(slots=True)
class PublishInfo:
    """Where a topic can be written (possibly TBW102's queues, until the topic exists)."""

    topic: str
    queues: list[MessageQueue]


FAILURE_REFRESH_SECONDS = 1.0


class RouteCache:
    """Routes by topic plus the broker address book they imply."""

    def __init__(self, api: ClientAPI, namesrv_addrs: list[str]) -> None:
        if not namesrv_addrs:
            raise MQClientError("no NameServer address given")
        self._api = api
        self._namesrv = namesrv_addrs
        self._routes: dict[str, TopicRouteData] = {}
        self._brokers: dict[str, dict[int, str]] = {}
        self._wanted: set[str] = set()
        self._borrowed: dict[str, PublishInfo] = {}
        self._published: dict[str, tuple[TopicRouteData, PublishInfo]] = {}  # per route: built once
        self._failure_refresh: dict[str, float] = {}  # topic -> when a failed send last refreshed it

    async def refresh(self, topic: str) -> TopicRouteData | None:
        """Ask the NameServers now; keeps the old route when the topic has none any more."""
        self._wanted.add(topic)
        route = await self._api.route(self._namesrv, topic)
        if route is not None:
            self._routes[topic] = route
            for b in route.brokerDatas:
                if b.brokerName:
                    self._brokers[b.brokerName] = dict(b.brokerAddrs)
        return route

    async def refresh_after_failure(self, topic: str) -> None:
        """A broker of ``topic`` could not take a request: ask the NameServers again (at most once a
        second per topic), so a master that moved to another broker is found within seconds rather
        than at the next poll."""
        now = time.monotonic()
        if now - self._failure_refresh.get(topic, float("-inf")) < FAILURE_REFRESH_SECONDS:
            return
        self._failure_refresh[topic] = now
        try:
            await self.refresh(topic)
        except MQClientError as exc:
            log.info("route refresh of %s after a failed send failed: %s", topic, exc)

    async def refresh_all(self) -> None:
        """The periodic poll: every topic asked about so far, including those without a route yet."""
        for topic in sorted(self._wanted):
            try:
                await self.refresh(topic)
            except MQClientError as exc:
                log.warning("route refresh of %s failed: %s", topic, exc)

    async def route(self, topic: str) -> TopicRouteData | None:
        return self._routes.get(topic) or await self.refresh(topic)

    async def publish_info(self, topic: str) -> PublishInfo:
        """Write queues of ``topic``, or TBW102's (as up to 4 queues per broker) when it has no route."""
        route = self._routes.get(topic)
        if route is None and topic not in self._borrowed:
            route = await self.refresh(topic)
        if route is not None:
            published = self._published.get(topic)
            if published is not None and published[0] is route:
                return published[1]
            queues = publish_queues(topic, route)
            if queues:
                self._borrowed.pop(topic, None)
                info = PublishInfo(topic, queues)
                self._published[topic] = (route, info)
                return info
        borrowed = self._borrowed.get(topic)
        if borrowed is None:
            borrowed = self._borrowed[topic] = await self._borrow_default(topic)
        return borrowed

    async def _borrow_default(self, topic: str) -> PublishInfo:
        default = await self.route(DEFAULT_TOPIC)
        queues: list[MessageQueue] = []
        if default is not None:
            capped = TopicRouteData(
                queueDatas=[
                    dataclasses.replace(qd, writeQueueNums=min(DEFAULT_TOPIC_QUEUE_NUMS, qd.writeQueueNums))
                    for qd in default.queueDatas
                ],
                brokerDatas=default.brokerDatas,
            )
            queues = publish_queues(topic, capped)
        if not queues:
            raise MQClientError(f"no route info of topic {topic} (and no {DEFAULT_TOPIC} to create it from)")
        return PublishInfo(topic, queues)

    async def subscribe_info(self, topic: str) -> list[MessageQueue]:
        route = await self.route(topic)
        return subscribe_queues(topic, route) if route is not None else []

    def master_addr(self, broker_name: str) -> str | None:
        return self._brokers.get(broker_name, {}).get(MASTER_ID)

    async def find_master(self, mq: MessageQueue) -> str:
        """The master address of ``mq``'s broker, refreshing the topic's route once if unknown."""
        addr = self.master_addr(mq.brokerName)
        if addr is None:
            await self.refresh(mq.topic)
            addr = self.master_addr(mq.brokerName)
        if addr is None:
            raise MQClientError(f"broker {mq.brokerName} of {mq.topic} has no master address")
        return addr

    def master_addrs(self) -> list[str]:
        return sorted({addrs[MASTER_ID] for addrs in self._brokers.values() if MASTER_ID in addrs})

    def all_addrs(self) -> list[str]:
        """Every master and slave this client knows of."""
        return sorted({addr for addrs in self._brokers.values() for addr in addrs.values()})

    def subscribe_addr(self, broker_name: str, broker_id: int = MASTER_ID) -> str | None:
        """Java's findBrokerAddressInSubscribe: that id, else the master, else the first slave."""
        addrs = self._brokers.get(broker_name, {})
        return addrs.get(broker_id) or addrs.get(MASTER_ID) or next((addrs[i] for i in sorted(addrs)), None)

    def slave_ids(self, broker_name: str) -> list[int]:
        return sorted(i for i in self._brokers.get(broker_name, {}) if i != MASTER_ID)

    async def any_broker_of(self, topic: str) -> str | None:
        """A master of some broker hosting ``topic`` (for group-wide queries), else a slave."""
        route = await self.route(topic)
        names = [b.brokerName for b in (route.brokerDatas if route else []) if b.brokerName]
        addrs = [a for a in map(self.master_addr, names) if a is not None]
        addrs = addrs or [a for a in map(self.subscribe_addr, names) if a is not None]
        return random.choice(addrs) if addrs else None
