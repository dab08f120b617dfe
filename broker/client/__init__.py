"""The rmqkit Python SDK: producers, push, lite pull and simple (POP) consumers, allocation
strategies, and blocking facades for scripts. See docs/sdk.md.

Names are imported on first use, so that importing one submodule (as the CLI's admin RPCs do) does
not load the whole SDK.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    "AllocateAveragely": "broker.protocol.allocate",
    "AllocateAveragelyByCircle": "broker.protocol.allocate",
    "AllocateConsistentHash": "broker.protocol.allocate",
    "AllocateMachineRoomNearby": "broker.protocol.allocate",
    "AllocateStrategy": "broker.protocol.allocate",
    "MachineRoomResolver": "broker.protocol.allocate",
    "BlockingLitePullConsumer": "broker.client.blocking",
    "BlockingProducer": "broker.client.blocking",
    "BlockingPushConsumer": "broker.client.blocking",
    "BlockingSimpleConsumer": "broker.client.blocking",
    "Credentials": "broker.acl.signer",
    "ClientOptions": "broker.client.options",
    "ConsumeConcurrentlyStatus": "broker.client.consumer",
    "ConsumeOrderlyStatus": "broker.client.consumer",
    "PushConsumer": "broker.client.consumer",
    "ConsumeFrom": "broker.client.consumer_base",
    "LitePullConsumer": "broker.client.lite_consumer",
    "Message": "broker.client.message",
    "MessageExt": "broker.client.message",
    "MQBrokerError": "broker.client.message",
    "MQClientError": "broker.client.message",
    "SendResult": "broker.client.message",
    "SendStatus": "broker.client.message",
    "LocalTransactionState": "broker.client.producer",
    "MessageQueueSelector": "broker.client.producer",
    "Producer": "broker.client.producer",
    "TransactionProducer": "broker.client.producer",
    "TransactionSendResult": "broker.client.producer",
    "hash_selector": "broker.client.producer",
    "SimpleConsumer": "broker.client.simple_consumer",
    "MessageModel": "broker.protocol.bodies",
    "MessageQueue": "broker.protocol.bodies",
}

__all__ = [
    "AllocateAveragely",
    "AllocateAveragelyByCircle",
    "AllocateConsistentHash",
    "AllocateMachineRoomNearby",
    "AllocateStrategy",
    "BlockingLitePullConsumer",
    "BlockingProducer",
    "BlockingPushConsumer",
    "BlockingSimpleConsumer",
    "ClientOptions",
    "ConsumeConcurrentlyStatus",
    "ConsumeFrom",
    "ConsumeOrderlyStatus",
    "Credentials",
    "LitePullConsumer",
    "LocalTransactionState",
    "MQBrokerError",
    "MQClientError",
    "MachineRoomResolver",
    "Message",
    "MessageExt",
    "MessageModel",
    "MessageQueue",
    "MessageQueueSelector",
    "Producer",
    "PushConsumer",
    "SendResult",
    "SendStatus",
    "SimpleConsumer",
    "TransactionProducer",
    "TransactionSendResult",
    "hash_selector",
]

if TYPE_CHECKING:
    from broker.acl.signer import Credentials
    from broker.client.blocking import (
        BlockingLitePullConsumer,
        BlockingProducer,
        BlockingPushConsumer,
        BlockingSimpleConsumer,
    )
    from broker.client.consumer import ConsumeConcurrentlyStatus, ConsumeOrderlyStatus, PushConsumer
    from broker.client.consumer_base import ConsumeFrom
    from broker.client.lite_consumer import LitePullConsumer
    from broker.client.message import (
        Message,
        MessageExt,
        MQBrokerError,
        MQClientError,
        SendResult,
        SendStatus,
    )
    from broker.client.options import ClientOptions
    from broker.client.producer import (
        LocalTransactionState,
        MessageQueueSelector,
        Producer,
        TransactionProducer,
        TransactionSendResult,
        hash_selector,
    )
    from broker.client.simple_consumer import SimpleConsumer
    from broker.protocol.allocate import (
        AllocateAveragely,
        AllocateAveragelyByCircle,
        AllocateConsistentHash,
        AllocateMachineRoomNearby,
        AllocateStrategy,
        MachineRoomResolver,
    )
    from broker.protocol.bodies import MessageModel, MessageQueue


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'broker.client' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
