"""CONSUME_MESSAGE_DIRECTLY (309): deliver one stored message to one online consumer client.

An admin asks the broker holding the message; the broker attaches the stored record as the body and
forwards the request over the client's connection; the client hands the message to its listener and
answers with a ConsumeMessageDirectlyResult (what the listener returned), which the broker relays.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from broker.protocol.bodies import JsonBody
from broker.protocol.headers import ConsumeMessageDirectlyResultRequestHeader

__all__ = ["ConsumeMessageDirectlyResult", "ConsumeMessageDirectlyResultRequestHeader", "ConsumeResult"]


class ConsumeResult(IntEnum):
    """RocketMQ's CMResult (written by name; ordinals are read too)."""

    CR_SUCCESS = 0
    CR_LATER = 1
    CR_ROLLBACK = 2
    CR_COMMIT = 3
    CR_THROW_EXCEPTION = 4
    CR_RETURN_NULL = 5


@dataclass(slots=True)
class ConsumeMessageDirectlyResult(JsonBody):
    order: bool = False
    autoCommit: bool = True
    consumeResult: ConsumeResult | None = None
    remark: str | None = None
    spentTimeMills: int = 0
