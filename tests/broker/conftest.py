"""A real broker on a free port with a small temporary store, and helpers that talk to it over TCP."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from broker.client.remoting_client import RemotingClient
from broker.protocol.codes import RequestCode
from broker.protocol.group_bodies import ConsumerData, HeartbeatData, SubscriptionData
from broker.protocol.headers import (
    PullMessageRequestHeader,
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
)
from broker.protocol.javahash import tags_code
from broker.protocol.message import MessageRecord, decode_records
from broker.protocol.properties import encode_properties
from broker.protocol.remoting import RemotingCommand, make_request
from broker.server.broker import Broker
from broker.server.config import BrokerConfig
from broker.store.config import StoreConfig

TIMEOUT = 10.0


def async_test(fn: Callable[..., Awaitable[None]]) -> Callable[..., None]:
    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> None:
        asyncio.run(asyncio.wait_for(fn(*args, **kwargs), 30))

    return run


def small_store(path: Path, commitlog_file_size: int = 1 << 20) -> StoreConfig:
    return StoreConfig(
        store_path=path,
        mapped_file_size_commit_log=commitlog_file_size,
        mapped_file_size_consume_queue_units=1000,
        max_hash_slot_num=1000,
        max_index_num=4000,
    )


def broker_config(**overrides: Any) -> BrokerConfig:
    config = BrokerConfig(broker_name="broker-t", listen_host="127.0.0.1", listen_port=0)
    for key, value in overrides.items():
        setattr(config, key, value)
    return config


@asynccontextmanager
async def running_broker(
    store: Path,
    commitlog_file_size: int = 1 << 20,
    store_settings: dict[str, Any] | None = None,
    **overrides: Any,
) -> AsyncIterator[tuple[Broker, RemotingClient]]:
    """A started broker on a small store; ``overrides`` set broker settings, ``store_settings`` store ones."""
    store_config = small_store(store, commitlog_file_size)
    for key, value in (store_settings or {}).items():
        setattr(store_config, key, value)
    broker = Broker(broker_config(**overrides), store_config)
    await broker.start()
    client = RemotingClient()
    try:
        yield broker, client
    finally:
        await client.close()
        await broker.stop()


async def call(
    client: RemotingClient,
    broker: Broker,
    code: int,
    header: Any = None,
    body: bytes | None = None,
    **ext: str,
) -> RemotingCommand:
    request = make_request(code, header, body=body, ext_fields=ext or None)
    return await client.invoke(broker.address, request, TIMEOUT)


async def send(
    client: RemotingClient,
    broker: Broker,
    topic: str,
    body: bytes = b"hello",
    *,
    queue_id: int = -1,
    tags: str | None = None,
    keys: str | None = None,
    v1: bool = False,
    **props: str,
) -> RemotingCommand:
    properties = dict(props)
    if tags is not None:
        properties["TAGS"] = tags
    if keys is not None:
        properties["KEYS"] = keys
    v1_header = SendMessageRequestHeader(
        producerGroup="PG",
        topic=topic,
        defaultTopic="TBW102",
        defaultTopicQueueNums=4,
        queueId=queue_id,
        sysFlag=0,
        bornTimestamp=1,
        flag=0,
        properties=encode_properties(properties),
    )
    if v1:
        return await call(client, broker, RequestCode.SEND_MESSAGE, v1_header, body)
    return await call(
        client, broker, RequestCode.SEND_MESSAGE_V2, SendMessageRequestHeaderV2.from_v1(v1_header), body
    )


def pull_header(topic: str, queue_id: int, offset: int, **kw: Any) -> PullMessageRequestHeader:
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
    return PullMessageRequestHeader(**fields)


async def pull(
    client: RemotingClient, broker: Broker, topic: str, queue_id: int, offset: int, **kw: Any
) -> RemotingCommand:
    return await call(client, broker, RequestCode.PULL_MESSAGE, pull_header(topic, queue_id, offset, **kw))


def records(response: RemotingCommand) -> list[MessageRecord]:
    return list(decode_records(response.body or b""))


def heartbeat_body(client_id: str, group: str, topics: dict[str, str]) -> bytes:
    subs = [
        SubscriptionData(
            topic=t,
            subString=expr,
            tagsSet=[] if expr == "*" else [x.strip() for x in expr.split("||")],
            codeSet=[] if expr == "*" else [tags_code(x.strip()) for x in expr.split("||")],
        )
        for t, expr in topics.items()
    ]
    data = HeartbeatData(
        clientID=client_id, consumerDataSet=[ConsumerData(groupName=group, subscriptionDataSet=subs)]
    )
    return data.to_json()
