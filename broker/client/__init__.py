"""The rmqkit Python SDK: producers, push and lite pull consumers, allocation strategies, and blocking
facades for scripts. See docs/sdk.md."""

from broker.client.allocate import (
    AllocateAveragely,
    AllocateAveragelyByCircle,
    AllocateConsistentHash,
    AllocateMachineRoomNearby,
    AllocateStrategy,
    MachineRoomResolver,
)
from broker.client.blocking import BlockingLitePullConsumer, BlockingProducer, BlockingPushConsumer
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
from broker.client.producer import (
    LocalTransactionState,
    MessageQueueSelector,
    Producer,
    TransactionProducer,
    TransactionSendResult,
    hash_selector,
)
from broker.protocol.bodies import MessageModel, MessageQueue

__all__ = [
    "AllocateAveragely",
    "AllocateAveragelyByCircle",
    "AllocateConsistentHash",
    "AllocateMachineRoomNearby",
    "AllocateStrategy",
    "BlockingLitePullConsumer",
    "BlockingProducer",
    "BlockingPushConsumer",
    "ConsumeConcurrentlyStatus",
    "ConsumeFrom",
    "ConsumeOrderlyStatus",
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
    "TransactionProducer",
    "TransactionSendResult",
    "hash_selector",
]
