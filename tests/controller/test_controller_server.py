"""One controller on loopback, talked to over remoting as a RocketMQ broker would: ids, registration,
the first election, what a restarted controller remembers, and bad input answered with codes."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from broker.client.admin_api import AdminApi
from broker.client.remoting_client import RemotingClient
from broker.controller.config import ControllerConfig
from broker.controller.server import Controller
from broker.protocol import controller as C
from broker.protocol import headers as H
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.remoting import RemotingCommand
from broker.remoting.channel import RemotingChannel
from broker.remoting.server import RemotingServer

pytestmark = pytest.mark.servers

EVERY_CODE = [int(c) for c in ResponseCode]


async def _call(api: AdminApi, addr: str, code: int, header: H.CommandHeader | None = None,
                body: bytes | None = None) -> RemotingCommand:  # fmt: skip
    return await api.call(addr, code, header, body=body, ok=EVERY_CODE)


async def _join(api: AdminApi, addr: str, port: int) -> int:
    """A broker's start: next id, apply for it, heartbeat, register; returns its id."""
    answer = await _call(
        api,
        addr,
        RequestCode.CONTROLLER_GET_NEXT_BROKER_ID,
        C.GetNextBrokerIdRequestHeader(clusterName="c", brokerName="g"),
    )
    broker_id = C.GetNextBrokerIdResponseHeader.from_ext_fields(answer.ext_fields).nextBrokerId
    assert broker_id is not None
    apply = C.ApplyBrokerIdRequestHeader(
        clusterName="c", brokerName="g", appliedBrokerId=broker_id, registerCheckCode=f"127.0.0.1:{port};1"
    )
    assert (
        await _call(api, addr, RequestCode.CONTROLLER_APPLY_BROKER_ID, apply)
    ).code == ResponseCode.SUCCESS
    beat = H.BrokerHeartbeatRequestHeader(
        clusterName="c",
        brokerAddr=f"127.0.0.1:{port}",
        brokerName="g",
        brokerId=broker_id,
        heartbeatTimeoutMills=60000,
    )
    assert (await _call(api, addr, RequestCode.BROKER_HEARTBEAT, beat)).code == ResponseCode.SUCCESS
    register = C.RegisterBrokerToControllerRequestHeader(
        clusterName="c", brokerName="g", brokerId=broker_id, brokerAddress=f"127.0.0.1:{port}"
    )
    assert (
        await _call(api, addr, RequestCode.CONTROLLER_REGISTER_BROKER, register)
    ).code == ResponseCode.SUCCESS
    return broker_id


async def _scenario(folder: Path) -> dict[str, object]:
    api = AdminApi(RemotingClient(connect_timeout=1.0), timeout=2.0)
    controller = Controller(ControllerConfig(listen_port=0, controller_store_path=folder))
    await controller.start()
    try:
        addr = controller.address
        first, second = await _join(api, addr, 1001), await _join(api, addr, 1002)
        elect = C.ElectMasterRequestHeader(clusterName="c", brokerName="g", brokerId=first)
        elected = await _call(api, addr, RequestCode.CONTROLLER_ELECT_MASTER, elect)
        bad = {
            "no body": await _call(
                api,
                addr,
                RequestCode.CONTROLLER_ALTER_SYNC_STATE_SET,
                C.AlterSyncStateSetRequestHeader(brokerName="g", masterBrokerId=first, masterEpoch=1),
            ),
            "not a list": await _call(api, addr, RequestCode.CONTROLLER_GET_SYNC_STATE_DATA, body=b'{"a":1}'),
            "no broker id": await _call(
                api,
                addr,
                RequestCode.BROKER_HEARTBEAT,
                H.BrokerHeartbeatRequestHeader(clusterName="c", brokerAddr="x:1", brokerName="g"),
            ),
            "unknown group": await _call(
                api,
                addr,
                RequestCode.CONTROLLER_GET_REPLICA_INFO,
                C.GetReplicaInfoRequestHeader(brokerName="nope"),
            ),
        }
    finally:
        await controller.stop()
    again = Controller(ControllerConfig(listen_port=0, controller_store_path=folder))
    await again.start()
    try:
        data = await _call(
            api, again.address, RequestCode.CONTROLLER_GET_SYNC_STATE_DATA, body=json.dumps(["g"]).encode()
        )
        remembered = C.BrokerReplicasInfo.from_json(data.body or b"{}").replicasInfoTable["g"]
    finally:
        await again.stop()
        await api.client.close()
    return {"ids": (first, second), "elected": elected, "bad": bad, "remembered": remembered}


def test_a_controller_grants_ids_elects_and_remembers_after_a_restart(tmp_path: Path) -> None:
    result = asyncio.run(asyncio.wait_for(_scenario(tmp_path), 30))
    assert result["ids"] == (1, 2)
    elected: RemotingCommand = result["elected"]  # type: ignore[assignment]
    assert elected.code == ResponseCode.SUCCESS
    head = C.ReplicaMasterHeader.from_ext_fields(elected.ext_fields)
    assert (head.masterBrokerId, head.masterAddress, head.masterEpoch) == (1, "127.0.0.1:1001", 1)
    bad: dict[str, RemotingCommand] = result["bad"]  # type: ignore[assignment]
    assert bad["no body"].code == ResponseCode.CONTROLLER_INVALID_REQUEST
    assert bad["not a list"].code == ResponseCode.CONTROLLER_INVALID_REQUEST
    assert bad["no broker id"].code == ResponseCode.CONTROLLER_INVALID_REQUEST
    assert bad["unknown group"].code == ResponseCode.CONTROLLER_BROKER_METADATA_NOT_EXIST
    remembered: C.ReplicasInfo = result["remembered"]  # type: ignore[assignment]
    assert (remembered.masterBrokerId, remembered.masterEpoch) == (1, 1)
    assert [r.brokerId for r in remembered.inSyncReplicas] == [1]
    assert [r.brokerId for r in remembered.notInSyncReplicas] == [2]


async def _pushes(folder: Path) -> list[RemotingCommand]:
    """Two brokers (remoting servers that record what the controller sends them) join; one is elected."""
    api = AdminApi(RemotingClient(connect_timeout=1.0), timeout=2.0)
    controller = Controller(ControllerConfig(listen_port=0, controller_store_path=folder))
    received: list[RemotingCommand] = []
    arrived = asyncio.Event()

    async def record(request: RemotingCommand, _channel: RemotingChannel) -> RemotingCommand | None:
        received.append(request)
        arrived.set()
        return None

    brokers = [RemotingServer("127.0.0.1", 0) for _ in range(2)]
    for broker in brokers:
        broker.register(RequestCode.NOTIFY_BROKER_ROLE_CHANGED, record)
        await broker.start()
    await controller.start()
    try:
        first = await _join(api, controller.address, brokers[0].port)
        await _join(api, controller.address, brokers[1].port)
        elect = C.ElectMasterRequestHeader(clusterName="c", brokerName="g", brokerId=first)
        await _call(api, controller.address, RequestCode.CONTROLLER_ELECT_MASTER, elect)
        while len(received) < 2:
            arrived.clear()
            await arrived.wait()
        return received
    finally:
        await controller.stop()
        for broker in brokers:
            await broker.stop(1.0)
        await api.client.close()


def test_an_election_is_pushed_to_every_live_broker_of_the_group(tmp_path: Path) -> None:
    pushed = asyncio.run(asyncio.wait_for(_pushes(tmp_path), 30))
    assert len(pushed) == 2
    for request in pushed:
        head = C.NotifyBrokerRoleChangedRequestHeader.from_ext_fields(request.ext_fields)
        assert (head.masterBrokerId, head.masterEpoch, head.syncStateSetEpoch) == (1, 1, 1)
        assert head.masterAddress is not None and head.masterAddress.startswith("127.0.0.1:")
        members = C.SyncStateSet.from_json(request.body or b"{}")
        assert (members.syncStateSet, members.syncStateSetEpoch) == ([1], 1)
