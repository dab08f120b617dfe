"""A NameServer over real loopback TCP, driven the way brokers, clients and mqadmin drive it."""

from __future__ import annotations

import json
from pathlib import Path

from broker.client.remoting_client import RemotingClient
from broker.namesrv.config import NamesrvConfig
from broker.namesrv.kv_config import NAMESPACE_ORDER_TOPIC_CONFIG
from broker.namesrv.server import NameServer
from broker.protocol import headers as H
from broker.protocol.bodies import ClusterInfo, DataVersion, KVTable, QueueData, TopicList, TopicRouteData
from broker.protocol.codes import V4_9_4, RequestCode, ResponseCode
from broker.protocol.remoting import RemotingCommand
from tests.broker.namesrv.helpers import (
    async_test,
    config_in,
    eventually,
    registration,
    request,
    serving,
    topic_table,
)

MASTER_A = "127.0.0.1:10911"
SLAVE_A = "127.0.0.1:10921"
MASTER_B = "127.0.0.1:10931"
FAQ = "\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details."


async def call(ns: NameServer, client: RemotingClient, cmd: RemotingCommand) -> RemotingCommand:
    return await client.invoke(ns.address, cmd, 5.0)


async def register_two_clusters(ns: NameServer, client: RemotingClient, slave: RemotingClient) -> None:
    """broker-a: master + slave in C1 hosting T and Shared; broker-b: master in C2 hosting Shared, U."""
    ok = await call(ns, client, registration("C1", "broker-a", MASTER_A, 0, topic_table("T", "Shared")))
    assert ok.code == ResponseCode.SUCCESS and ok.ext_fields == {}
    answer = await call(ns, slave, registration("C1", "broker-a", SLAVE_A, 1, topic_table("T", "Shared")))
    assert answer.code == ResponseCode.SUCCESS
    assert answer.ext_fields == {"masterAddr": MASTER_A, "haServerAddr": "127.0.0.1:10912"}
    other = registration("C2", "broker-b", MASTER_B, 0, topic_table("Shared", "U", queues=2), compressed=True)
    assert (await call(ns, client, other)).code == ResponseCode.SUCCESS


async def route(ns: NameServer, client: RemotingClient, topic: str, version: int = V4_9_4) -> RemotingCommand:
    return await call(
        ns,
        client,
        request(
            RequestCode.GET_ROUTEINFO_BY_TOPIC, H.GetRouteInfoRequestHeader(topic=topic), version=version
        ),
    )


@async_test
async def test_routes_in_both_json_forms(config: NamesrvConfig) -> None:
    async with serving(config) as (ns, client):
        slave = RemotingClient()
        await register_two_clusters(ns, client, slave)
        old = await route(ns, client, "T", version=400)
        assert old.code == ResponseCode.SUCCESS and old.body is not None
        assert f'"brokerAddrs":{{0:"{MASTER_A}",1:"{SLAVE_A}"}}'.encode() in old.body
        new = await route(ns, client, "T", version=401)
        assert new.body is not None
        assert f'"brokerAddrs":{{"0":"{MASTER_A}","1":"{SLAVE_A}"}}'.encode() in new.body
        parsed = json.loads(new.body)  # standard JSON: sorted keys all the way down
        assert list(parsed) == sorted(parsed)
        assert parsed["queueDatas"] == [
            {"brokerName": "broker-a", "perm": 6, "readQueueNums": 4, "topicSysFlag": 0, "writeQueueNums": 4}
        ]
        asked = await call(
            ns,
            client,
            request(
                RequestCode.GET_ROUTEINFO_BY_TOPIC,
                H.GetRouteInfoRequestHeader(topic="T", acceptStandardJsonOnly=True),
                version=300,
            ),
        )
        assert asked.body == new.body
        shared = TopicRouteData.from_json((await route(ns, client, "Shared")).body or b"")
        assert [bd.brokerName for bd in shared.brokerDatas] == ["broker-a", "broker-b"]
        assert [qd.writeQueueNums for qd in shared.queueDatas] == [4, 2]  # compressed registration too
        missing = await route(ns, client, "Nope")
        assert (missing.code, missing.remark) == (
            ResponseCode.TOPIC_NOT_EXIST,
            f"No topic route info in name server for the topic: Nope{FAQ}",
        )
        await slave.close()


@async_test
async def test_cluster_info_topic_lists_and_delete_topic(config: NamesrvConfig) -> None:
    async with serving(config) as (ns, client):
        slave = RemotingClient()
        await register_two_clusters(ns, client, slave)
        info = ClusterInfo.from_json(
            (await call(ns, client, request(RequestCode.GET_BROKER_CLUSTER_INFO))).body or b""
        )
        assert info.clusterAddrTable == {"C1": ["broker-a"], "C2": ["broker-b"]}
        assert info.brokerAddrTable["broker-a"].brokerAddrs == {0: MASTER_A, 1: SLAVE_A}
        assert info.brokerAddrTable["broker-b"].cluster == "C2"

        async def topics(code: int, header: H.CommandHeader | None = None) -> list[str]:
            answer = await call(ns, client, request(code, header))
            assert answer.code == ResponseCode.SUCCESS, answer.remark
            return TopicList.from_json(answer.body or b"").topicList

        assert await topics(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER) == ["Shared", "T", "U"]
        by_c2 = H.GetTopicsByClusterRequestHeader(cluster="C2")
        assert await topics(RequestCode.GET_TOPICS_BY_CLUSTER, by_c2) == ["Shared", "U"]
        delete = RequestCode.DELETE_TOPIC_IN_NAMESRV
        header = H.DeleteTopicFromNamesrvRequestHeader(topic="Shared", clusterName="C2")
        assert (await call(ns, client, request(delete, header))).code == ResponseCode.SUCCESS
        assert await topics(RequestCode.GET_TOPICS_BY_CLUSTER, by_c2) == ["U"]
        assert (await route(ns, client, "Shared")).code == ResponseCode.SUCCESS  # still on broker-a
        header = H.DeleteTopicFromNamesrvRequestHeader(topic="T")
        assert (await call(ns, client, request(delete, header))).code == ResponseCode.SUCCESS
        assert await topics(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER) == ["Shared", "U"]
        ns.config.enable_all_topic_list = False
        disabled = await call(ns, client, request(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER))
        assert (disabled.code, disabled.remark) == (ResponseCode.SYSTEM_ERROR, "disable")
        await slave.close()


@async_test
async def test_register_topic_unregister_and_side_by_side_servers(tmp_path: Path) -> None:
    async with (
        serving(config_in(tmp_path / "one")) as (ns, client),
        serving(config_in(tmp_path / "two")) as (other, _),
    ):
        await call(ns, client, registration("C1", "broker-a", MASTER_A, 0, topic_table("T")))
        body = TopicRouteData(
            queueDatas=[QueueData(brokerName="broker-a", readQueueNums=1, perm=6)]
        ).to_json()
        header = H.RegisterTopicRequestHeader(topic="Made")
        assert (
            await call(ns, client, request(RequestCode.REGISTER_TOPIC_IN_NAMESRV, header, body=body))
        ).code == 0
        assert (await route(ns, client, "Made")).code == ResponseCode.SUCCESS
        assert (await route(other, client, "T")).code == ResponseCode.TOPIC_NOT_EXIST  # independent state
        bye = H.UnRegisterBrokerRequestHeader(
            brokerName="broker-a", brokerAddr=MASTER_A, clusterName="C1", brokerId=0
        )
        assert (await call(ns, client, request(RequestCode.UNREGISTER_BROKER, bye))).code == 0
        assert (await route(ns, client, "T")).code == ResponseCode.TOPIC_NOT_EXIST
        assert ns.route_table.cluster_info().clusterAddrTable == {}


@async_test
async def test_kv_config_and_persistence_with_bak_fallback(config: NamesrvConfig) -> None:
    async def kv(
        client: RemotingClient, ns: NameServer, code: int, header: H.CommandHeader
    ) -> RemotingCommand:
        return await call(ns, client, request(code, header))

    put = RequestCode.PUT_KV_CONFIG
    async with serving(config) as (ns, client):
        for key, value in (("k1", "v1"), ("k2", "v2"), ("k2", "v2b")):
            header = H.PutKVConfigRequestHeader(namespace="ns", key=key, value=value)
            assert (await kv(client, ns, put, header)).code == ResponseCode.SUCCESS
        got = await kv(
            client, ns, RequestCode.GET_KV_CONFIG, H.GetKVConfigRequestHeader(namespace="ns", key="k2")
        )
        assert (got.code, got.ext_fields) == (ResponseCode.SUCCESS, {"value": "v2b"})
        listed = await kv(
            client,
            ns,
            RequestCode.GET_KVLIST_BY_NAMESPACE,
            H.GetKVListByNamespaceRequestHeader(namespace="ns"),
        )
        assert KVTable.from_json(listed.body or b"").table == {"k1": "v1", "k2": "v2b"}
        missing = await kv(
            client, ns, RequestCode.GET_KV_CONFIG, H.GetKVConfigRequestHeader(namespace="ns", key="x")
        )
        assert (missing.code, missing.remark) == (
            ResponseCode.QUERY_NOT_FOUND,
            "No config item, Namespace: ns Key: x",
        )
        none = await kv(
            client,
            ns,
            RequestCode.GET_KVLIST_BY_NAMESPACE,
            H.GetKVListByNamespaceRequestHeader(namespace="no"),
        )
        assert (none.code, none.remark) == (ResponseCode.QUERY_NOT_FOUND, "No config item, Namespace: no")
        deleted = H.DeleteKVConfigRequestHeader(namespace="ns", key="k1")
        assert (await kv(client, ns, RequestCode.DELETE_KV_CONFIG, deleted)).code == ResponseCode.SUCCESS

    on_disk = json.loads(config.kv_config_path.read_text())
    assert on_disk == {"configTable": {"ns": {"k2": "v2b"}}}  # RocketMQ's own layout
    async with serving(config) as (ns, client):
        assert ns.kv_config.get("ns", "k2") == "v2b" and ns.kv_config.get("ns", "k1") is None

    config.kv_config_path.write_text("{ torn")  # the .bak holds the save before the last one
    async with serving(config) as (ns, client):
        assert ns.kv_config.namespace("ns") == {"k1": "v1", "k2": "v2b"}


@async_test
async def test_order_topic_config_reaches_routes_and_brokers(config: NamesrvConfig) -> None:
    config.order_message_enable = True
    async with serving(config) as (ns, client):
        header = H.PutKVConfigRequestHeader(
            namespace=NAMESPACE_ORDER_TOPIC_CONFIG, key="T", value="broker-a:4"
        )
        await call(ns, client, request(RequestCode.PUT_KV_CONFIG, header))
        answer = await call(ns, client, registration("C1", "broker-a", MASTER_A, 0, topic_table("T")))
        assert KVTable.from_json(answer.body or b"").table == {"T": "broker-a:4"}
        assert (
            TopicRouteData.from_json((await route(ns, client, "T")).body or b"").orderTopicConf
            == "broker-a:4"
        )


@async_test
async def test_data_version_query_and_write_perm(config: NamesrvConfig) -> None:
    async with serving(config) as (ns, client):
        version = DataVersion(counter=7, timestamp=1234)
        reg = registration("C1", "broker-a", MASTER_A, 0, topic_table("T", "U"), version=version)
        await call(ns, client, reg)
        ident = H.QueryDataVersionRequestHeader(
            brokerName="broker-a", brokerAddr=MASTER_A, clusterName="C1", brokerId=0
        )

        async def query(v: DataVersion) -> RemotingCommand:
            return await call(ns, client, request(RequestCode.QUERY_DATA_VERSION, ident, body=v.to_json()))

        same = await query(DataVersion(counter=7, timestamp=1234))
        assert same.ext_fields == {"changed": "false"} and DataVersion.from_json(same.body or b"") == version
        assert (await query(DataVersion(counter=8, timestamp=1234))).ext_fields == {"changed": "true"}

        perm = H.BrokerNameRequestHeader(brokerName="broker-a")
        wiped = await call(ns, client, request(RequestCode.WIPE_WRITE_PERM_OF_BROKER, perm))
        assert wiped.ext_fields == {"wipeTopicCount": "2"}
        assert TopicRouteData.from_json((await route(ns, client, "T")).body or b"").queueDatas[0].perm == 4
        added = await call(ns, client, request(RequestCode.ADD_WRITE_PERM_OF_BROKER, perm))
        assert added.ext_fields == {"addTopicCount": "2"}
        assert TopicRouteData.from_json((await route(ns, client, "U")).body or b"").queueDatas[0].perm == 6
        nobody = H.BrokerNameRequestHeader(brokerName="ghost")
        assert (
            await call(ns, client, request(RequestCode.WIPE_WRITE_PERM_OF_BROKER, nobody))
        ).ext_fields == {"wipeTopicCount": "0"}


@async_test
async def test_silent_brokers_expire_and_heartbeats_keep_brokers_alive(config: NamesrvConfig) -> None:
    config.scan_not_active_broker_interval = 50
    async with serving(config) as (ns, client):
        quiet, chatty, steady = RemotingClient(), RemotingClient(), RemotingClient()
        await call(ns, quiet, registration("C1", "quiet", MASTER_A, 0, topic_table("Q"), timeout_ms=300))
        await call(ns, chatty, registration("C1", "chatty", MASTER_B, 0, topic_table("H"), timeout_ms=300))
        await call(ns, steady, registration("C2", "steady", SLAVE_A, 0, topic_table("S")))  # default 120 s
        beat = H.BrokerHeartbeatRequestHeader(clusterName="C1", brokerAddr=MASTER_B, brokerName="chatty")

        async def quiet_gone() -> bool:
            assert (await call(ns, chatty, request(RequestCode.BROKER_HEARTBEAT, beat))).code == 0
            return (await route(ns, client, "Q")).code == ResponseCode.TOPIC_NOT_EXIST

        await eventually(quiet_gone)
        assert sorted(ns.route_table.cluster_info().brokerAddrTable) == ["chatty", "steady"]
        for c in (quiet, chatty, steady):
            await c.close()


@async_test
async def test_closed_broker_connection_removes_the_broker_at_once(config: NamesrvConfig) -> None:
    async with serving(config) as (ns, client):
        broker = RemotingClient()
        await call(ns, broker, registration("C1", "broker-a", MASTER_A, 0, topic_table("T")))
        assert (await route(ns, client, "T")).code == ResponseCode.SUCCESS
        await broker.close()

        async def gone() -> bool:
            return (await route(ns, client, "T")).code == ResponseCode.TOPIC_NOT_EXIST

        await eventually(gone)


@async_test
async def test_namesrv_config_get_update_and_black_list(config: NamesrvConfig) -> None:
    async with serving(config) as (ns, client):

        async def update(text: bytes) -> RemotingCommand:
            return await call(ns, client, request(RequestCode.UPDATE_NAMESRV_CONFIG, body=text))

        got = await call(ns, client, request(RequestCode.GET_NAMESRV_CONFIG))
        lines = (got.body or b"").decode().splitlines()
        assert "listenPort=0" in lines and "scanNotActiveBrokerInterval=5000" in lines
        assert "orderMessageEnable=false" in lines and f"kvConfigPath={config.kv_config_path}" in lines

        ok = await update(b"# tuning\nscanNotActiveBrokerInterval=1000\norderMessageEnable = true\n")
        assert ok.code == ResponseCode.SUCCESS, ok.remark
        assert (config.scan_not_active_broker_interval, config.order_message_enable) == (1000, True)
        assert "scanNotActiveBrokerInterval=1000" in config.config_store_path.read_text().splitlines()

        for text, code, named in (
            (b"kvConfigPath=/etc/cron.d/x", ResponseCode.NO_PERMISSION, "kvConfigPath"),
            (b"config_store_path=/tmp/x", ResponseCode.NO_PERMISSION, "configStorePath"),
            (b"configBlackList=", ResponseCode.NO_PERMISSION, "configBlackList"),
            (b"listenPort=1", ResponseCode.NO_PERMISSION, "listenPort"),
            (b"noSuchKey=1", ResponseCode.INVALID_PARAMETER, "noSuchKey"),
            (b"brokerExpiredMillis=soon", ResponseCode.INVALID_PARAMETER, "brokerExpiredMillis"),
            (b"scanNotActiveBrokerInterval=0", ResponseCode.INVALID_PARAMETER, "scanNotActiveBrokerInterval"),
            (b"enableTopicList=maybe", ResponseCode.INVALID_PARAMETER, "enableTopicList"),
            (b"just words", ResponseCode.INVALID_PARAMETER, "just words"),
            (b"\xff\xfe", ResponseCode.SYSTEM_ERROR, "UTF-8"),
        ):
            answer = await update(b"enableAllTopicList=false\n" + text)
            assert answer.code == code and named in (answer.remark or ""), (text, answer.remark)
        assert config.enable_all_topic_list is True  # all or nothing
        assert config.kv_config_path.name == "kvConfig.json"
