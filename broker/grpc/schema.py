"""The ``apache.rocketmq.v2`` messages: ``PB.<MessageName>`` are the message classes generated from
``proto/messaging.proto`` (typed by the stubs generated beside them), :class:`Code` the status codes
clients act on.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Protocol

from google.protobuf.message import Message

from broker.grpc.proto import messaging_pb2 as PB

__all__ = ["PB", "SERVICE", "CallContext", "Code", "GrpcError", "check_schema", "status"]

SERVICE = f"{PB.DESCRIPTOR.package}.MessagingService"


class Code(IntEnum):
    OK = 20000
    MULTIPLE_RESULTS = 30000
    BAD_REQUEST = 40000
    ILLEGAL_ACCESS_POINT = 40001
    ILLEGAL_TOPIC = 40002
    ILLEGAL_CONSUMER_GROUP = 40003
    ILLEGAL_MESSAGE_TAG = 40004
    ILLEGAL_MESSAGE_KEY = 40005
    ILLEGAL_MESSAGE_GROUP = 40006
    ILLEGAL_MESSAGE_PROPERTY_KEY = 40007
    INVALID_TRANSACTION_ID = 40008
    ILLEGAL_MESSAGE_ID = 40009
    ILLEGAL_FILTER_EXPRESSION = 40010
    ILLEGAL_INVISIBLE_TIME = 40011
    ILLEGAL_DELIVERY_TIME = 40012
    INVALID_RECEIPT_HANDLE = 40013
    MESSAGE_PROPERTY_CONFLICT_WITH_TYPE = 40014
    UNRECOGNIZED_CLIENT_TYPE = 40015
    MESSAGE_CORRUPTED = 40016
    CLIENT_ID_REQUIRED = 40017
    ILLEGAL_POLLING_TIME = 40018
    ILLEGAL_OFFSET = 40019
    FORBIDDEN = 40300
    NOT_FOUND = 40400
    MESSAGE_NOT_FOUND = 40401
    TOPIC_NOT_FOUND = 40402
    CONSUMER_GROUP_NOT_FOUND = 40403
    OFFSET_NOT_FOUND = 40404
    REQUEST_TIMEOUT = 40800
    PAYLOAD_TOO_LARGE = 41300
    MESSAGE_BODY_TOO_LARGE = 41301
    MESSAGE_BODY_EMPTY = 41302
    TOO_MANY_REQUESTS = 42900
    MESSAGE_PROPERTIES_TOO_LARGE = 43101
    INTERNAL_ERROR = 50000
    INTERNAL_SERVER_ERROR = 50001
    HA_NOT_AVAILABLE = 50002
    NOT_IMPLEMENTED = 50100
    PROXY_TIMEOUT = 50400
    MASTER_PERSISTENCE_TIMEOUT = 50401
    SLAVE_PERSISTENCE_TIMEOUT = 50402
    UNSUPPORTED = 50500


class CallContext(Protocol):
    """What a handler uses of its call (a protocol: the ACL's stream wrapper stands in for the
    compiled call, which a class annotation would check at run time)."""

    async def write(self, message: Message | bytes) -> None: ...

    def metadata_value(self, key: str) -> str | None: ...

    def peer(self) -> str: ...

    def time_remaining(self) -> float | None: ...


class GrpcError(Exception):
    """A request the broker refuses: answered with this v2 status, never a gRPC error."""

    def __init__(self, code: Code, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def status(code: Code = Code.OK, message: str = "OK") -> PB.Status:
    return PB.Status(code=PB.Code.ValueType(code), message=message)


def check_schema() -> None:
    """Every Code member exists in the .proto enum under the same number (run by the tests)."""
    declared = dict(PB.Code.items())
    for member in Code:
        if declared.get(member.name) != member.value:
            raise AssertionError(f"Code.{member.name} does not match the schema")
