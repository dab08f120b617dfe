"""A slave copies its master's message request modes (PULL/POP per topic@group), as RocketMQ's
SlaveSynchronize.syncMessageRequestMode does: what the master sets appears on the slave, on disk and
in the assignments the slave hands out, and modes the master does not have are dropped."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from broker.client.remoting_client import RemotingClient
from broker.protocol.bodies import MessageModel, MessageQueue, load_json
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.request_mode import (
    MessageRequestMode,
    MessageRequestModeSerializeWrapper,
    QueryAssignmentRequestBody,
    QueryAssignmentResponseBody,
    SetMessageRequestModeRequestBody,
)
from broker.server.broker import Broker
from tests.broker.server.conftest import async_test, call, heartbeat_body
from tests.broker.server.ha.conftest import ha_broker, namesrv
from tests.broker.server.test_admin import create

TOPIC, GROUP = "SyncModes", "sync-modes-cg"
STALE = {
    "Gone": {"old-cg": {"topic": "Gone", "consumerGroup": "old-cg", "mode": "POP", "popShareQueueNum": 0}}
}


async def modes_of(
    client: RemotingClient, broker: Broker
) -> dict[str, dict[str, SetMessageRequestModeRequestBody]]:
    r = await call(client, broker, RequestCode.GET_ALL_MESSAGE_REQUEST_MODE)
    assert r.code == ResponseCode.SUCCESS, r.remark
    return MessageRequestModeSerializeWrapper.from_json(r.body or b"").messageRequestModeMap


@async_test
async def test_slave_takes_the_request_modes_of_its_master(tmp_path: Path) -> None:
    # the slave starts with a mode its master never had (left from an earlier life)
    (tmp_path / "s" / "config").mkdir(parents=True)
    (tmp_path / "s" / "config" / "messageRequestMode.json").write_text(
        json.dumps({"messageRequestModeMap": STALE})
    )
    async with namesrv(tmp_path) as ns:
        master = ha_broker(ns.address, tmp_path / "m", "ASYNC_MASTER")
        slave = ha_broker(ns.address, tmp_path / "s", "SLAVE")
        client, consumer = RemotingClient(), RemotingClient()
        try:
            await master.start()
            await slave.start()
            assert (
                await call(client, master, RequestCode.UPDATE_AND_CREATE_TOPIC, create(TOPIC, 4))
            ).code == 0
            group = json.dumps({"groupName": GROUP}).encode()
            r = await call(client, master, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=group)
            assert r.code == 0
            body = SetMessageRequestModeRequestBody(TOPIC, GROUP, MessageRequestMode.POP, 1).to_json()
            assert (await call(client, master, RequestCode.SET_MESSAGE_REQUEST_MODE, body=body)).code == 0

            wanted = {
                TOPIC: {GROUP: SetMessageRequestModeRequestBody(TOPIC, GROUP, MessageRequestMode.POP, 1)}
            }
            await until_modes(client, slave, wanted)
            saved = load_json((tmp_path / "s" / "config" / "messageRequestMode.json").read_text())
            assert list(saved["messageRequestModeMap"]) == [TOPIC]  # the stale mode is gone

            # consumers balanced by the slave get POP assignments, as from the master
            hb = heartbeat_body("c1", GROUP, {TOPIC: "*"})
            assert (await call(consumer, slave, RequestCode.HEART_BEAT, body=hb)).code == 0
            query = QueryAssignmentRequestBody(TOPIC, GROUP, "c1", "AVG", MessageModel.CLUSTERING).to_json()
            r = await call(client, slave, RequestCode.QUERY_ASSIGNMENT, body=query)
            assert r.code == ResponseCode.SUCCESS, r.remark
            got = QueryAssignmentResponseBody.from_json(r.body or b"").messageQueueAssignments or []
            assert {a.mode for a in got} == {MessageRequestMode.POP}
            assert {(a.messageQueue or MessageQueue()).queueId for a in got} == {-1}  # one consumer: all
        finally:
            await consumer.close()
            await client.close()
            await slave.stop()
            await master.stop()


async def until_modes(
    client: RemotingClient, broker: Broker, wanted: dict[str, dict[str, SetMessageRequestModeRequestBody]]
) -> None:
    """Ask ``broker`` for its modes until they are ``wanted`` (the sync runs every half second)."""
    deadline = asyncio.get_running_loop().time() + 10.0
    while (got := await modes_of(client, broker)) != wanted:
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"the slave's modes stayed {got}, not {wanted}")
        await asyncio.sleep(0.1)
