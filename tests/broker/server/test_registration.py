"""Registration with NameServers: at start, after topic changes, and unregistration at stop."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

from broker.protocol.bodies import RegisterBrokerBody
from broker.protocol.codes import RequestCode
from broker.protocol.headers import CreateTopicRequestHeader, RegisterBrokerRequestHeader
from broker.protocol.remoting import RemotingCommand, make_response
from broker.remoting.channel import RemotingChannel
from broker.remoting.server import RemotingServer
from tests.broker.server.conftest import async_test, call, running_broker


class FakeNameServer:
    """Records what brokers tell a NameServer."""

    def __init__(self) -> None:
        self.server = RemotingServer("127.0.0.1", 0)
        self.registrations: asyncio.Queue[tuple[RegisterBrokerRequestHeader, RegisterBrokerBody]] = (
            asyncio.Queue()
        )
        self.unregistered: list[str] = []
        self.server.register(RequestCode.REGISTER_BROKER, self._register)
        self.server.register(RequestCode.UNREGISTER_BROKER, self._unregister)

    async def _register(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        header = RegisterBrokerRequestHeader.parse(request.ext_fields)
        await self.registrations.put((header, RegisterBrokerBody.decode(request.body or b"")))
        return make_response(request)

    async def _unregister(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        self.unregistered.append(request.ext_fields["brokerAddr"])
        return make_response(request)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.server.port}"


def dead_address() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


@async_test
async def test_registers_at_start_and_after_topic_change_and_unregisters(tmp_path: Path) -> None:
    namesrv = FakeNameServer()
    async with namesrv.server:
        async with running_broker(tmp_path, namesrv_addr=namesrv.address) as (broker, client):
            header, body = await asyncio.wait_for(namesrv.registrations.get(), 5)
            assert broker.ready
            assert (
                header.brokerAddr == broker.address
                and header.brokerName == "broker-t"
                and header.brokerId == 0
            )
            topics = body.topicConfigSerializeWrapper.topicConfigTable
            assert "TBW102" in topics and topics["TBW102"].perm == 7
            version = body.topicConfigSerializeWrapper.dataVersion.counter
            create = CreateTopicRequestHeader(
                topic="Routed", defaultTopic="TBW102", readQueueNums=3, writeQueueNums=3, perm=6,
                topicFilterType="SINGLE_TAG",
            )  # fmt: skip
            assert (await call(client, broker, RequestCode.UPDATE_AND_CREATE_TOPIC, create)).code == 0
            _, body = await asyncio.wait_for(namesrv.registrations.get(), 5)
            assert "Routed" in body.topicConfigSerializeWrapper.topicConfigTable
            assert body.topicConfigSerializeWrapper.dataVersion.counter > version
            address = broker.address
        assert namesrv.unregistered == [address]


@async_test
async def test_a_dead_nameserver_does_not_stop_the_broker(tmp_path: Path) -> None:
    namesrv = FakeNameServer()
    async with namesrv.server:
        addrs = f"{dead_address()};{namesrv.address}"
        async with running_broker(tmp_path, namesrv_addr=addrs) as (broker, _):
            await asyncio.wait_for(namesrv.registrations.get(), 5)
            assert not broker.ready  # not yet registered with every NameServer
            assert broker.registration.registered == {namesrv.address}


@async_test
async def test_ready_without_nameserver(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (broker, _):
        assert broker.ready
    assert not broker.ready
