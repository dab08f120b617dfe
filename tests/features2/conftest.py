"""A NameServer + broker Node in-process with a small store, and protocol-level helpers."""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from broker.client.remoting_client import RemotingChannel, RemotingClient
from broker.namesrv.config import NamesrvConfig
from broker.node import Node, NodePlan
from broker.protocol import properties as P
from broker.protocol.codes import RequestCode
from broker.protocol.group_bodies import ConsumerData, HeartbeatData, ProducerData, SubscriptionData
from broker.protocol.headers import (
    CheckTransactionStateRequestHeader,
    EndTransactionRequestHeader,
    PullMessageRequestHeader,
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
)
from broker.protocol.message import MessageRecord, decode_records
from broker.protocol.remoting import RemotingCommand, make_request
from broker.server.broker import Broker
from broker.server.config import BrokerConfig
from broker.store.config import StoreConfig

TIMEOUT = 10.0


def async_test(timeout: float = 60.0) -> Callable[[Callable[..., Awaitable[None]]], Callable[..., None]]:
    def wrap(fn: Callable[..., Awaitable[None]]) -> Callable[..., None]:
        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> None:
            asyncio.run(asyncio.wait_for(fn(*args, **kwargs), timeout))

        return run

    return wrap


@dataclass
class Cluster:
    node: Node
    client: RemotingClient

    @property
    def broker(self) -> Broker:
        assert self.node.broker is not None
        return self.node.broker

    @property
    def addr(self) -> str:
        return self.broker.address

    @property
    def namesrv(self) -> str:
        assert self.node.namesrv is not None
        return f"127.0.0.1:{self.node.namesrv.port}"

    async def call(
        self, code: int, header: Any = None, body: bytes | None = None, **ext: str
    ) -> RemotingCommand:
        request = make_request(code, header, body=body, ext_fields=ext or None)
        return await self.client.invoke(self.addr, request, TIMEOUT)


@asynccontextmanager
async def running(tmp: Path, namesrv: dict[str, Any] | None = None, **broker: Any) -> AsyncIterator[Cluster]:
    """A started Node; the store lives in ``tmp/store`` so a second ``running(tmp)`` is a restart."""
    plan = NodePlan(
        namesrv=NamesrvConfig(
            listen_port=0,
            kv_config_path=tmp / "kv.json",
            config_store_path=tmp / "namesrv.properties",
            **(namesrv or {}),
        ),
        broker=BrokerConfig(
            listen_host="127.0.0.1", listen_port=0, http_port=0, broker_name="broker-f", **broker
        ),
        store=StoreConfig(
            store_path=tmp / "store",
            mapped_file_size_commit_log=1 << 20,
            mapped_file_size_consume_queue_units=1000,
            max_hash_slot_num=1000,
            max_index_num=4000,
        ),
    )
    node = Node(plan)
    await node.start()
    cluster = Cluster(node, RemotingClient())
    try:
        while not node.ready:
            await asyncio.sleep(0.02)
        yield cluster
    finally:
        await cluster.client.close()
        await node.stop()


def send_header(topic: str, props: dict[str, str], *, queue_id: int = 0, sys_flag: int = 0,
                group: str = "PG", born: int | None = None) -> SendMessageRequestHeaderV2:  # fmt: skip
    v1 = SendMessageRequestHeader(
        producerGroup=group,
        topic=topic,
        defaultTopic="TBW102",
        defaultTopicQueueNums=4,
        queueId=queue_id,
        sysFlag=sys_flag,
        bornTimestamp=int(time.time() * 1000) if born is None else born,
        flag=0,
        properties=P.encode_properties(props),
    )
    return SendMessageRequestHeaderV2.from_v1(v1)


async def send(cluster: Cluster, topic: str, body: bytes = b"x", **kw: Any) -> RemotingCommand:
    props: dict[str, str] = kw.pop("props", {})
    return await cluster.call(RequestCode.SEND_MESSAGE_V2, send_header(topic, props, **kw), body)


async def pull(cluster: Cluster, topic: str, queue_id: int, offset: int, **kw: Any) -> RemotingCommand:
    fields: dict[str, Any] = {
        "consumerGroup": "CG",
        "topic": topic,
        "queueId": queue_id,
        "queueOffset": offset,
        "maxMsgNums": 32,
        "sysFlag": 0x4,
        "commitOffset": 0,
        "suspendTimeoutMillis": 0,
        "subVersion": 0,
        "subscription": "*",
    }
    fields.update(kw)
    return await cluster.call(RequestCode.PULL_MESSAGE, PullMessageRequestHeader(**fields))


def records(response: RemotingCommand) -> list[MessageRecord]:
    return list(decode_records(response.body or b""))


async def pull_all(cluster: Cluster, topic: str, queue_id: int = 0, **kw: Any) -> list[MessageRecord]:
    return records(await pull(cluster, topic, queue_id, 0, **kw))


async def heartbeat(client: RemotingClient, addr: str, client_id: str, *, producer: str | None = None,
                    consumer: str | None = None, subs: list[SubscriptionData] | None = None,
                    ) -> RemotingCommand:  # fmt: skip
    data = HeartbeatData(
        clientID=client_id,
        producerDataSet=[ProducerData(groupName=producer)] if producer else [],
        consumerDataSet=[ConsumerData(groupName=consumer, subscriptionDataSet=subs or [])]
        if consumer
        else [],
    )
    request = make_request(RequestCode.HEART_BEAT, body=data.to_json())
    return await client.invoke(addr, request, TIMEOUT)


@dataclass
class Check:
    header: CheckTransactionStateRequestHeader
    message: MessageRecord
    channel: RemotingChannel


class FakeProducer:
    """A transactional producer at the protocol level: it registers its group by heartbeat and
    records every CHECK_TRANSACTION_STATE the broker pushes over its connection."""

    def __init__(self, addr: str, group: str, client_id: str) -> None:
        self.addr = addr
        self.group = group
        self.client_id = client_id
        self.client = RemotingClient()
        self.checks: asyncio.Queue[Check] = asyncio.Queue()
        self.client.register(RequestCode.CHECK_TRANSACTION_STATE, self._on_check)

    async def _on_check(self, request: RemotingCommand, channel: RemotingChannel) -> None:
        header = CheckTransactionStateRequestHeader.from_ext_fields(request.ext_fields)
        self.checks.put_nowait(Check(header, next(decode_records(request.body or b"")), channel))

    async def start(self) -> None:
        await heartbeat(self.client, self.addr, self.client_id, producer=self.group)

    async def next_check(self, timeout: float = 10.0) -> Check:
        return await asyncio.wait_for(self.checks.get(), timeout)

    async def end(self, *, commit_log_offset: int, queue_offset: int, msg_id: str, state: int,
                  from_check: bool, oneway: bool = False) -> RemotingCommand | None:  # fmt: skip
        header = EndTransactionRequestHeader(
            producerGroup=self.group,
            tranStateTableOffset=queue_offset,
            commitLogOffset=commit_log_offset,
            commitOrRollback=state,
            msgId=msg_id,
            transactionId=msg_id,
            fromTransactionCheck=from_check,
        )
        request = make_request(RequestCode.END_TRANSACTION, header, oneway=oneway)
        if oneway:
            await self.client.invoke_oneway(self.addr, request)
            return None
        return await self.client.invoke(self.addr, request, TIMEOUT)

    async def answer(self, check: Check, state: int) -> None:
        """Answer a check one-way with fromTransactionCheck=true, as the Java client does."""
        await self.end(
            commit_log_offset=check.header.commitLogOffset or 0,
            queue_offset=check.header.tranStateTableOffset or 0,
            msg_id=check.header.msgId or "",
            state=state,
            from_check=True,
            oneway=True,
        )

    async def close(self) -> None:
        await self.client.close()


async def wait_for(predicate: Callable[[], Awaitable[bool]], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not await predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.05)
