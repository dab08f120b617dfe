"""Typed RPCs to NameServers and brokers (what MQClientAPIImpl is in Java): build the request, check
the response code, decode the answer. Nothing here keeps state besides the connection pool."""

from __future__ import annotations

from broker.client.message import MQBrokerError, MQClientError
from broker.protocol import headers
from broker.protocol.bodies import MessageQueue, TopicRouteData
from broker.protocol.codes import LanguageCode, RequestCode, ResponseCode
from broker.protocol.group_bodies import (
    GetConsumerListByGroupResponseBody,
    HeartbeatData,
    LockBatchRequestBody,
    LockBatchResponseBody,
)
from broker.protocol.remoting import ExtFieldsHeader, RemotingCommand, make_request
from broker.remoting.client import RemotingClient
from broker.remoting.errors import RemotingError


def request(
    code: int, header: ExtFieldsHeader | None = None, body: bytes | None = None, oneway: bool = False
) -> RemotingCommand:
    """A request as this SDK sends it: language PYTHON."""
    return make_request(code, header, body=body, oneway=oneway, language=LanguageCode.PYTHON)


def check(response: RemotingCommand, *ok: int) -> RemotingCommand:
    """The response if its code is SUCCESS (or one of ``ok``), else :class:`MQBrokerError`."""
    if response.code != ResponseCode.SUCCESS and response.code not in ok:
        raise MQBrokerError(response.code, response.remark)
    return response


class ClientAPI:
    def __init__(self, remoting: RemotingClient, timeout: float = 3.0) -> None:
        self.remoting = remoting
        self.timeout = timeout

    async def invoke(
        self, addr: str, cmd: RemotingCommand, *ok: int, timeout: float | None = None
    ) -> RemotingCommand:
        response = await self.remoting.invoke(addr, cmd, self.timeout if timeout is None else timeout)
        return check(response, *ok)

    async def oneway(self, addr: str, cmd: RemotingCommand) -> None:
        await self.remoting.invoke_oneway(addr, cmd)

    async def route(self, namesrv_addrs: list[str], topic: str) -> TopicRouteData | None:
        """The topic's route from the first NameServer that answers; None if it has none."""
        header = headers.GetRouteInfoRequestHeader(topic=topic, acceptStandardJsonOnly=True)
        failure: Exception | None = None
        for addr in namesrv_addrs:
            try:
                response = await self.invoke(
                    addr, request(RequestCode.GET_ROUTEINFO_BY_TOPIC, header), ResponseCode.TOPIC_NOT_EXIST
                )
            except (RemotingError, MQBrokerError) as exc:
                failure = exc
                continue
            if response.code == ResponseCode.TOPIC_NOT_EXIST or not response.body:
                return None
            return TopicRouteData.from_json(response.body)
        raise MQClientError(f"no NameServer of {namesrv_addrs} answered for topic {topic}: {failure}")

    async def heartbeat(self, addr: str, data: HeartbeatData) -> None:
        await self.invoke(addr, request(RequestCode.HEART_BEAT, body=data.to_json()))

    async def unregister(self, addr: str, client_id: str, producer: str | None, consumer: str | None) -> None:
        header = headers.UnregisterClientRequestHeader(
            clientID=client_id, producerGroup=producer, consumerGroup=consumer
        )
        await self.invoke(addr, request(RequestCode.UNREGISTER_CLIENT, header))

    async def consumer_ids(self, addr: str, group: str) -> list[str]:
        header = headers.GetConsumerListByGroupRequestHeader(consumerGroup=group)
        response = await self.invoke(addr, request(RequestCode.GET_CONSUMER_LIST_BY_GROUP, header))
        return GetConsumerListByGroupResponseBody.from_json(response.body or b"{}").consumerIdList

    async def query_consumer_offset(self, addr: str, group: str, mq: MessageQueue) -> int | None:
        """The group's committed offset of ``mq``; None when the broker has none."""
        header = headers.QueryConsumerOffsetRequestHeader(
            consumerGroup=group, topic=mq.topic, queueId=mq.queueId, bname=mq.brokerName
        )
        response = await self.invoke(
            addr, request(RequestCode.QUERY_CONSUMER_OFFSET, header), ResponseCode.QUERY_NOT_FOUND
        )
        if response.code == ResponseCode.QUERY_NOT_FOUND:
            return None
        return headers.OffsetResponseHeader.parse(response.ext_fields).offset

    async def update_consumer_offset(self, addr: str, group: str, mq: MessageQueue, offset: int) -> None:
        header = headers.UpdateConsumerOffsetRequestHeader(
            consumerGroup=group, topic=mq.topic, queueId=mq.queueId, commitOffset=offset, bname=mq.brokerName
        )
        await self.oneway(addr, request(RequestCode.UPDATE_CONSUMER_OFFSET, header, oneway=True))

    async def max_offset(self, addr: str, mq: MessageQueue) -> int:
        header = headers.GetMaxOffsetRequestHeader(topic=mq.topic, queueId=mq.queueId, bname=mq.brokerName)
        return await self._offset(addr, request(RequestCode.GET_MAX_OFFSET, header))

    async def min_offset(self, addr: str, mq: MessageQueue) -> int:
        header = headers.GetMinOffsetRequestHeader(topic=mq.topic, queueId=mq.queueId, bname=mq.brokerName)
        return await self._offset(addr, request(RequestCode.GET_MIN_OFFSET, header))

    async def search_offset(self, addr: str, mq: MessageQueue, timestamp_ms: int) -> int:
        header = headers.SearchOffsetRequestHeader(
            topic=mq.topic, queueId=mq.queueId, timestamp=timestamp_ms, bname=mq.brokerName
        )
        return await self._offset(addr, request(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, header))

    async def _offset(self, addr: str, cmd: RemotingCommand) -> int:
        response = await self.invoke(addr, cmd)
        return headers.OffsetResponseHeader.parse(response.ext_fields).offset

    async def send_back(self, addr: str, header: headers.ConsumerSendMsgBackRequestHeader) -> None:
        await self.invoke(addr, request(RequestCode.CONSUMER_SEND_MSG_BACK, header))

    async def lock_batch(self, addr: str, body: LockBatchRequestBody) -> set[MessageQueue]:
        response = await self.invoke(addr, request(RequestCode.LOCK_BATCH_MQ, body=body.to_json()))
        return set(LockBatchResponseBody.from_json(response.body or b"{}").lockOKMQSet)

    async def unlock_batch(self, addr: str, body: LockBatchRequestBody) -> None:
        await self.invoke(addr, request(RequestCode.UNLOCK_BATCH_MQ, body=body.to_json()))

    async def recall(self, addr: str, header: headers.RecallMessageRequestHeader) -> str:
        """The recalled message's UNIQ_KEY."""
        response = await self.invoke(addr, request(RequestCode.RECALL_MESSAGE, header))
        return headers.RecallMessageResponseHeader.parse(response.ext_fields).msgId

    async def end_transaction(self, addr: str, header: headers.EndTransactionRequestHeader) -> None:
        await self.oneway(addr, request(RequestCode.END_TRANSACTION, header, oneway=True))
