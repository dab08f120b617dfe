"""A fake admin service with fixed data, for the snapshot tests only (same methods, same dataclasses)."""

from __future__ import annotations

import socket
import struct

from admin.models import (
    BrokerInfo,
    BrokerRuntime,
    ClientInfo,
    ClusterStatus,
    ClusterSummary,
    ConfigValues,
    FlappingQueue,
    GroupClients,
    GroupConfig,
    GroupConnections,
    GroupDescription,
    GroupLag,
    GroupList,
    GroupRebalances,
    GroupSummary,
    MessageRange,
    Messages,
    MessageTracks,
    NamesrvState,
    QueueHolding,
    QueueLag,
    QueueMove,
    QueueStatus,
    RouteBroker,
    RouteQueue,
    SpecialTopic,
    SpecialTopics,
    Subscription,
    TopicDescription,
    TopicKind,
    TopicList,
    TopicRoute,
    TopicStatus,
    TopicSummary,
    TrackInfo,
)
from broker.protocol.message import MessageRecord

T0 = 1_700_000_000_000  # 2023-11-14 22:13:20 UTC
RUNTIME = {
    "brokerVersionDesc": "V5_3_1",
    "brokerActive": "true",
    "commitLogMinOffset": "0",
    "commitLogMaxOffset": "1048576",
    "commitLogDiskRatio": "0.4200",
    "dispatchBehindBytes": "0",
    "putTps": "12.5 11.0 10.2",
    "getTransferredTps": "3.0 2.0 1.0",
}


def broker(name: str, bid: int, port: int, up: bool = True) -> BrokerInfo:
    return BrokerInfo(
        cluster="DefaultCluster",
        broker_name=name,
        broker_id=bid,
        address=f"10.0.0.1:{port}",
        role="MASTER" if bid == 0 else "SLAVE",
        reachable=up,
        error=None if up else f"connect to 10.0.0.1:{port} failed: connection refused",
        version="V5_3_1" if up else None,
        put_tps=12.5 if up else 0.0,
        get_tps=3.0 if up else 0.0,
        disk_ratio=0.42 if up else None,
        commitlog_min_offset=0 if up else None,
        commitlog_max_offset=1048576 if up else None,
        runtime=RUNTIME if up else {},
    )


def record(topic: str, offset: int, body: bytes, **props: str) -> MessageRecord:
    raw = socket.inet_aton("10.0.0.1") + struct.pack(">i", 10911)
    return MessageRecord(
        total_size=200,
        magic=0,
        body_crc=0,
        queue_id=0,
        flag=0,
        queue_offset=offset,
        physical_offset=4096 * offset,
        sys_flag=0,
        born_timestamp=T0,
        born_host="10.0.0.9:50000",
        store_timestamp=T0 + offset * 1000,
        store_host="10.0.0.1:10911",
        reconsume_times=16,
        prepared_transaction_offset=0,
        body=body,
        topic=topic,
        properties=props,
        store_host_raw=raw,
    )


DEAD = [
    record(
        "%DLQ%pay-cg",
        i,
        b'{"order": %d, "amount": 9.5}' % i,
        DLQ_ORIGIN_TOPIC="Payments",
        DLQ_ORIGIN_MESSAGE_ID=f"0A00000100002A9F00000000000{i:05d}",
        UNIQ_KEY=f"7F00000100002A9F0000000{i:05d}",
        KEYS=f"pay-{i}",
        TAGS="card",
    )
    for i in range(3)
]


class FakeService:
    async def close(self) -> None:
        pass

    async def cluster_status(self) -> ClusterStatus:
        brokers = [
            broker("broker-a", 0, 10911),
            broker("broker-a", 1, 10921),
            broker("broker-b", 0, 10931, False),
        ]
        return ClusterStatus(
            [
                NamesrvState("10.0.0.1:9876", True, None),
                NamesrvState("10.0.0.2:9876", False, "connection refused"),
            ],
            [ClusterSummary("DefaultCluster", 3, 2, 1, 25.0, 6.0, 0.42)],
            brokers,
        )

    async def broker_runtime(self, broker: str | None = None) -> BrokerRuntime:
        return BrokerRuntime(broker or "", dict(sorted(RUNTIME.items())))

    async def broker_config_get(
        self, broker: str | None = None, keys: list[str] | None = None
    ) -> ConfigValues:
        return ConfigValues(
            broker or "",
            {
                "brokerClusterName": "DefaultCluster",
                "brokerName": "broker-a",
                "flushDiskType": "ASYNC_FLUSH",
                "listenPort": "10911",
            },
        )

    async def topic_list(self, cluster: str | None = None, kinds: object = None) -> TopicList:
        def t(name: str, kind: TopicKind, queues: int = 8, order: bool = False) -> TopicSummary:
            return TopicSummary(name, kind, ["DefaultCluster"], ["broker-a"], queues, queues, 6, order)

        return TopicList(
            [
                t("%DLQ%pay-cg", TopicKind.DLQ, 1),
                t("%RETRY%orders-cg", TopicKind.RETRY, 1),
                t("Orders", TopicKind.NORMAL, 4),
                t("Payments", TopicKind.NORMAL, 2, True),
                t("TBW102", TopicKind.SYSTEM),
            ]
        )

    async def topic_describe(self, topic: str) -> TopicDescription:
        queues = [QueueStatus("broker-a", q, q, 100 + q, T0 + q) for q in range(4)]
        return TopicDescription(
            topic,
            TopicKind.NORMAL,
            TopicRoute(
                topic,
                [RouteBroker("DefaultCluster", "broker-a", {0: "10.0.0.1:10911", 1: "10.0.0.1:10921"})],
                [RouteQueue("broker-a", 4, 4, 6, 0)],
                None,
            ),
            TopicStatus(topic, queues, sum(q.messages for q in queues), 1.5),
            ["orders-cg", "audit-cg"],
        )

    async def group_list(self, include_system: bool = True) -> GroupList:
        def g(name: str, online: bool, system: bool = False) -> GroupSummary:
            return GroupSummary(
                name,
                system,
                ["broker-a"],
                online,
                2 if online else 0,
                "PUSH" if online else None,
                "CLUSTERING" if online else None,
                True,
                False,
                16,
                46 if online else 0,
                95_000 if online else 0,
            )

        return GroupList([g("TOOLS_CONSUMER", False, True), g("audit-cg", False), g("orders-cg", True)])

    async def group_describe(self, group: str) -> GroupDescription:
        lag = [QueueLag("Orders", "broker-a", q, 100 + q, 90, 10 + q, 1, T0) for q in range(4)]
        return GroupDescription(
            group,
            ["broker-a"],
            GroupConfig(True, True, True, False, 1, 16, 0, 1, True, 0, 15, {}),
            GroupConnections(
                group,
                True,
                "PUSH",
                "CLUSTERING",
                "CONSUME_FROM_LAST_OFFSET",
                [
                    ClientInfo("10.0.0.9@1", "10.0.0.9:50000", "JAVA", 453, "broker-a"),
                    ClientInfo("10.0.0.9@2", "10.0.0.9:50001", "PYTHON", 453, "broker-a"),
                ],
                [Subscription("Orders", "TagA || TagB", "TAG")],
            ),
            GroupLag(group, lag, sum(q.diff for q in lag), 4, 7.5),
        )

    async def group_clients(self, group: str) -> GroupClients:
        return GroupClients(group, [], True)

    async def group_rebalances(self, group: str, since_ms: int = 0) -> GroupRebalances:
        one, two = "10.0.0.9@1", "10.0.0.9@2"
        hops = [(0, one, two), (1, one, two), (1, two, one), (1, one, two), (1, two, one)]
        return GroupRebalances(
            group,
            [QueueHolding("Orders", "broker-a", q, c, T0 - 30_000, True) for q, c in [(0, two), (1, one)]],
            [
                QueueMove(T0 - 90_000 + i * 15_000, "Orders", "broker-a", q, a, b)
                for i, (q, a, b) in enumerate(hops)
            ],
            [FlappingQueue("Orders", "broker-a", 1, 4)],
            3,
            300_000,
            [],
        )

    async def retry_list(self) -> SpecialTopics:
        return SpecialTopics([SpecialTopic("orders-cg", "%RETRY%orders-cg", 5, ["broker-a"], T0)])

    async def dlq_list(self) -> SpecialTopics:
        return SpecialTopics([SpecialTopic("pay-cg", "%DLQ%pay-cg", 3, ["broker-a"], T0 + 2000)])

    async def retry_and_dlq_list(self) -> tuple[SpecialTopics, SpecialTopics]:
        return await self.retry_list(), await self.dlq_list()

    async def dlq_browse(self, group: str, rng: MessageRange, progress: object = None) -> Messages:
        return Messages(DEAD)

    async def retry_browse(self, group: str, rng: MessageRange, progress: object = None) -> Messages:
        return Messages([])

    async def message_get(self, msg_id: str, topic: str | None = None) -> Messages:
        return Messages(DEAD[:1])

    async def message_track(self, msg_id: str, topic: str | None = None) -> MessageTracks:
        return MessageTracks(
            DEAD[0],
            [
                TrackInfo("audit-cg", "NOT_ONLINE", "the consumer group not online"),
                TrackInfo("orders-cg", "CONSUMED", None),
            ],
        )
