"""The route table on its own: registration rules, removal, expiry and queries (no sockets)."""

from __future__ import annotations

from broker.namesrv.route_table import BrokerIdentity, RegisterResult, RouteTable
from broker.protocol.bodies import DataVersion, QueueData, TopicRouteData
from tests.broker.namesrv.helpers import topic_table

MASTER = BrokerIdentity("C1", "10.0.0.1:10911", "broker-a", 0)
SLAVE = BrokerIdentity("C1", "10.0.0.2:10911", "broker-a", 1)
OTHER = BrokerIdentity("C2", "10.0.0.3:10911", "broker-b", 0)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000

    def __call__(self) -> int:
        return self.now


def register(
    table: RouteTable,
    who: BrokerIdentity,
    *topics: str,
    counter: int = 1,
    timeout_ms: int = 120_000,
    channel: object = None,
    enable_acting_master: bool | None = None,
) -> RegisterResult | None:
    return table.register_broker(
        who,
        ha_server_addr=who.addr.replace("10911", "10912"),
        timeout_ms=timeout_ms,
        data_version=DataVersion(counter=counter, timestamp=counter),
        topics=topic_table(*topics),
        channel=channel,
        enable_acting_master=enable_acting_master,
    )


def route_of(table: RouteTable, topic: str, acting_master: bool = False) -> TopicRouteData:
    route = table.route(topic, acting_master=acting_master)
    assert route is not None, f"no route for {topic}"
    return route


def test_slave_learns_its_master_and_only_the_master_writes_queue_data() -> None:
    table = RouteTable()
    assert register(table, MASTER, "T") is not None
    result = register(table, SLAVE, "T", "OnlyOnSlave", enable_acting_master=False)
    assert result is not None
    assert (result.master_addr, result.ha_server_addr) == ("10.0.0.1:10911", "10.0.0.1:10912")
    assert route_of(table, "T").brokerDatas[0].brokerAddrs == {0: MASTER.addr, 1: SLAVE.addr}
    assert table.route("OnlyOnSlave") is None


def test_address_re_registering_with_a_new_id_replaces_its_old_entry() -> None:
    table = RouteTable()
    register(table, MASTER, "T")
    register(table, SLAVE, "T")
    promoted = BrokerIdentity("C1", SLAVE.addr, "broker-a", 0)
    register(table, promoted, "T", counter=2)
    assert table.cluster_info().brokerAddrTable["broker-a"].brokerAddrs == {0: SLAVE.addr}


def test_queue_data_follows_the_data_version() -> None:
    table = RouteTable()
    register(table, MASTER, "T")
    assert table.set_write_perm("broker-a", writable=False) == 1
    register(table, MASTER, "T")  # same version: the wiped perm stays
    assert route_of(table, "T").queueDatas[0].perm == 4
    register(table, MASTER, "T", counter=2)  # new version: the broker's own perm again
    assert route_of(table, "T").queueDatas[0].perm == 6


def test_stale_master_with_older_state_version_is_refused() -> None:
    table = RouteTable()
    table.register_broker(
        MASTER,
        ha_server_addr="",
        timeout_ms=1000,
        data_version=DataVersion(stateVersion=5),
        topics={},
    )
    stale = BrokerIdentity("C1", "10.0.0.9:10911", "broker-a", 0)
    refused = table.register_broker(
        stale, ha_server_addr="", timeout_ms=1000, data_version=DataVersion(stateVersion=1), topics={}
    )
    assert refused is None
    assert table.cluster_info().brokerAddrTable["broker-a"].brokerAddrs == {0: MASTER.addr}


def test_last_address_of_a_broker_name_takes_its_queue_data_along() -> None:
    table = RouteTable()
    register(table, MASTER, "T", "Shared")
    register(table, SLAVE, "T")
    register(table, OTHER, "Shared")
    table.unregister_brokers([MASTER])
    assert table.route("T") is not None  # the slave still serves reads
    table.unregister_brokers([SLAVE])
    assert table.route("T") is None
    assert table.topic_names() == ["Shared"]
    assert table.cluster_info().clusterAddrTable == {"C2": ["broker-b"]}


def test_acting_master_wipes_write_and_presents_the_lowest_slave_as_master() -> None:
    table = RouteTable()
    register(table, MASTER, "T", enable_acting_master=True)
    register(table, SLAVE, "T", enable_acting_master=True)
    table.unregister_brokers([MASTER])
    route = route_of(table, "T", acting_master=True)
    assert route.queueDatas[0].perm == 4
    assert route.brokerDatas[0].brokerAddrs == {0: SLAVE.addr}
    assert route_of(table, "T").brokerDatas[0].brokerAddrs == {1: SLAVE.addr}


def test_expiry_uses_each_brokers_own_timeout_and_heartbeats_refresh_it() -> None:
    clock = Clock()
    table = RouteTable(clock)
    register(table, MASTER, "T", timeout_ms=100, channel="conn-1")
    register(table, OTHER, "U", timeout_ms=100)
    clock.now += 80
    assert table.touch(OTHER.cluster, OTHER.addr)
    assert not table.touch("C9", OTHER.addr)  # liveness is per cluster
    clock.now += 80
    expired = table.scan_not_active()
    assert [live.channel for live in expired] == ["conn-1"]
    assert table.topic_names() == ["U"]


def test_closed_connection_removes_every_broker_registered_over_it() -> None:
    table = RouteTable()
    conn = object()
    register(table, MASTER, "T", channel=conn)
    register(table, SLAVE, "T", channel=conn)
    register(table, OTHER, "U", channel=object())
    table.channel_closed(conn)
    assert list(table.cluster_info().brokerAddrTable) == ["broker-b"]


def test_delete_topic_in_one_cluster_and_register_topic_for_known_brokers_only() -> None:
    table = RouteTable()
    register(table, MASTER, "T")
    register(table, OTHER, "T")
    table.delete_topic("T", "C2")
    assert [qd.brokerName for qd in route_of(table, "T").queueDatas] == ["broker-a"]
    assert table.topics_of_cluster("C2") == [] and table.topics_of_cluster("nope") == []
    assert not table.register_topic("New", [QueueData(brokerName="ghost", perm=6)])
    assert table.register_topic("New", [QueueData(brokerName="broker-b", readQueueNums=2, perm=6)])
    assert not table.register_topic("New", [QueueData(brokerName="broker-a", perm=6)])  # exists already
    assert table.topics_of_cluster("C2") == ["New"]
    table.delete_topic("T")
    assert table.topic_names() == ["New"]


def _answers_match(table: RouteTable, *topics: str) -> None:
    """The encoded answer a lookup gets is the route's own JSON, whatever changed before."""
    for topic in topics:
        route = table.route(topic)
        for standard in (False, True):
            body = table.route_body(topic, acting_master=False, standard=standard)
            assert body == (None if route is None else route.to_json(standard=standard)), topic


def test_encoded_answers_follow_every_change_of_brokers_and_queues() -> None:
    table = RouteTable()
    topics = ("T", "Shared", "Other")
    register(table, MASTER, "T", "Shared")
    register(table, OTHER, "Shared", "Other")
    _answers_match(table, *topics)
    register(table, SLAVE, "T")  # a new address of broker-a
    _answers_match(table, *topics)
    table.register_broker(
        OTHER, ha_server_addr="", timeout_ms=1000, data_version=DataVersion(counter=1, timestamp=1),
        topics=topic_table("Shared", "Other"), filter_servers=["10.0.0.9:1"],
    )  # fmt: skip
    _answers_match(table, *topics)
    assert table.set_write_perm("broker-b", writable=False) == 2
    _answers_match(table, *topics)
    table.delete_topic("Shared", "C2")
    _answers_match(table, *topics)
    table.unregister_brokers([MASTER])
    _answers_match(table, *topics)
    table.unregister_brokers([SLAVE, OTHER])
    _answers_match(table, *topics)
    assert table.topic_names() == []


def test_a_broker_leaving_costs_only_its_own_topics() -> None:
    """Thousands of topics of other brokers stay untouched (and routed) when one broker leaves."""
    table = RouteTable()
    many = [f"T{i}" for i in range(2000)]
    register(table, OTHER, *many)
    register(table, MASTER, "Mine", many[0])
    table.unregister_brokers([MASTER])
    assert table.route("Mine") is None
    assert [qd.brokerName for qd in route_of(table, many[0]).queueDatas] == ["broker-b"]
    assert len(table.topic_names()) == 2000
