"""Client membership: HEART_BEAT (34), UNREGISTER_CLIENT (35), GET_CONSUMER_LIST_BY_GROUP (38),
LOCK_BATCH_MQ (41) and UNLOCK_BATCH_MQ (42)."""

from __future__ import annotations

from typing import Protocol

from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.group_bodies import (
    GetConsumerListByGroupResponseBody,
    HeartbeatData,
    LockBatchRequestBody,
    LockBatchResponseBody,
    UnlockBatchRequestBody,
)
from broker.protocol.headers import GetConsumerListByGroupRequestHeader, UnregisterClientRequestHeader
from broker.protocol.names import retry_topic
from broker.protocol.remoting import RemotingCommand, make_response
from broker.remoting.channel import Handler, RemotingChannel
from broker.server.client_registry import ClientChannelInfo, ClientRegistry, RebalanceLockManager
from broker.server.config import BrokerConfig
from broker.server.subscription_group import SubscriptionGroupManager
from broker.server.topic_config import TopicConfigManager


class ClientParts(Protocol):
    """The parts of the broker heartbeats and rebalance locks use."""

    @property
    def config(self) -> BrokerConfig: ...

    @property
    def topics(self) -> TopicConfigManager: ...

    @property
    def groups(self) -> SubscriptionGroupManager: ...

    @property
    def clients(self) -> ClientRegistry: ...

    @property
    def locks(self) -> RebalanceLockManager: ...


class ClientProcessor:
    def __init__(self, broker: ClientParts) -> None:
        self.broker = broker

    def handlers(self) -> dict[int, Handler]:
        return {
            RequestCode.HEART_BEAT: self.heartbeat,
            RequestCode.UNREGISTER_CLIENT: self.unregister_client,
            RequestCode.GET_CONSUMER_LIST_BY_GROUP: self.consumer_list,
            RequestCode.LOCK_BATCH_MQ: self.lock_batch,
            RequestCode.UNLOCK_BATCH_MQ: self.unlock_batch,
        }

    async def heartbeat(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        data = HeartbeatData.from_json(request.body or b"{}")
        broker = self.broker
        client_id = data.clientID or channel.remote_addr
        for consumer in data.consumerDataSet:
            if not consumer.groupName:
                continue
            group = broker.groups.find(consumer.groupName)
            notify = broker.config.notify_consumer_ids_changed_enable
            if group is not None:
                notify = notify and group.notifyConsumerIdsChangedEnable
                broker.topics.ensure(retry_topic(consumer.groupName), group.retryQueueNums)
            broker.clients.register_consumer(
                consumer.groupName,
                ClientChannelInfo(channel, client_id, request.language, request.version),
                consumer.consumeType,
                consumer.messageModel,
                consumer.consumeFromWhere,
                consumer.subscriptionDataSet,
                notify=notify,
            )
        for producer in data.producerDataSet:
            if producer.groupName:
                broker.clients.register_producer(
                    producer.groupName,
                    ClientChannelInfo(channel, client_id, request.language, request.version),
                )
        response = make_response(request)
        response.ext_fields["IS_SUPPORT_HEART_BEAT_V2"] = "true"
        response.ext_fields["IS_SUB_CHANGE"] = "true"
        return response

    async def unregister_client(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        h = UnregisterClientRequestHeader.parse(request.ext_fields)
        clients = self.broker.clients
        if h.producerGroup:
            clients.unregister_producer(h.producerGroup, channel)
        if h.consumerGroup:
            group = self.broker.groups.get(h.consumerGroup)
            notify = self.broker.config.notify_consumer_ids_changed_enable and (
                group is None or group.notifyConsumerIdsChangedEnable
            )
            clients.unregister_consumer(h.consumerGroup, channel, notify=notify)
        return make_response(request)

    async def consumer_list(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        h = GetConsumerListByGroupRequestHeader.parse(request.ext_fields)
        ids = self.broker.clients.consumer_ids(h.consumerGroup)
        if not ids:
            return make_response(
                request, ResponseCode.SYSTEM_ERROR, f"no consumer for this group, {h.consumerGroup}"
            )
        return make_response(request, body=GetConsumerListByGroupResponseBody(consumerIdList=ids).to_json())

    async def lock_batch(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        body = LockBatchRequestBody.from_json(request.body or b"{}")
        locked = self.broker.locks.try_lock_batch(body.consumerGroup or "", body.mqSet, body.clientId or "")
        return make_response(request, body=LockBatchResponseBody(lockOKMQSet=locked).to_json())

    async def unlock_batch(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        body = UnlockBatchRequestBody.from_json(request.body or b"{}")
        self.broker.locks.unlock_batch(body.consumerGroup or "", body.mqSet, body.clientId or "")
        return make_response(request)
