"""The queues a topic route offers: where producers write (publish) and consumers read (subscribe).

The SDK and the broker's load balancing (QUERY_ASSIGNMENT) both derive them, so both agree.
"""

from __future__ import annotations

from broker.protocol.bodies import MessageQueue, TopicRouteData

MASTER_ID = 0
PERM_READ = 4
PERM_WRITE = 2


def publish_queues(topic: str, route: TopicRouteData) -> list[MessageQueue]:
    """The write queues of brokers that have a master, brokers in name order (Java's order)."""
    masters = {b.brokerName for b in route.brokerDatas if MASTER_ID in b.brokerAddrs}
    queues = []
    for qd in sorted(route.queueDatas, key=lambda q: q.brokerName or ""):
        if qd.perm & PERM_WRITE and qd.brokerName in masters:
            queues += [MessageQueue(topic, qd.brokerName or "", i) for i in range(qd.writeQueueNums)]
    return queues


def subscribe_queues(topic: str, route: TopicRouteData) -> list[MessageQueue]:
    """The readable queues of every broker, sorted."""
    return sorted(
        MessageQueue(topic, qd.brokerName or "", i)
        for qd in route.queueDatas
        if qd.perm & PERM_READ
        for i in range(qd.readQueueNums)
    )
