"""Message traces: what traced clients recorded about one message (sent, consumed, transaction ended)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MessageTrace", "TraceEntry"]


@dataclass(frozen=True, slots=True)
class TraceEntry:
    """One trace record of the message. Fields a record type does not carry are None."""

    type: str  # Pub, SubBefore, SubAfter, EndTransaction, Recall
    timestamp: int  # epoch ms: send or consumption start (SubAfter: its end); 0 if not recorded
    group: str  # producer or consumer group
    client_host: str | None  # the host that wrote the record
    store_host: str | None  # the broker the message was sent to (Pub, EndTransaction)
    cost_ms: int | None  # send time (Pub), listener time per message (SubAfter)
    success: bool | None  # Pub: SEND_OK; SubAfter: consumed; Recall: recalled
    topic: str | None
    tags: str | None
    keys: str | None
    msg_type: str | None  # Java's MessageType name (Pub, EndTransaction)
    offset_msg_id: str | None  # the broker's MessageId (Pub)
    retry_times: int | None  # reconsume times when consumed (SubBefore)
    request_id: str | None  # pairs a SubBefore with its SubAfter
    consume_result: str | None  # ConsumeReturnType name (SubAfter)
    transaction_state: str | None  # COMMIT_MESSAGE, ROLLBACK_MESSAGE, UNKNOW (EndTransaction)
    transaction_id: str | None
    from_transaction_check: bool | None  # EndTransaction answered a broker's check
    region_id: str | None

    @property
    def status(self) -> str | None:
        """``success`` or ``failed`` where the record says (a send, a consumption, a recall)."""
        return None if self.success is None else "success" if self.success else "failed"

    @property
    def detail(self) -> str | None:
        """What each record type adds: the message type, retries, how a consumption ended, the decision."""
        if self.type == "SubBefore":
            return f"retry {self.retry_times}" if self.retry_times else None
        if self.type == "SubAfter":
            return self.consume_result
        if self.type == "EndTransaction":
            state = self.transaction_state
            return f"{state} (check)" if self.from_transaction_check else state
        return self.msg_type


@dataclass(frozen=True, slots=True)
class MessageTrace:
    """Every trace record of a message found in a trace topic, oldest first."""

    msg_id: str
    trace_topic: str
    topic: str | None  # the message's topic, from its Pub record
    entries: list[TraceEntry]
    undecodable: int  # trace messages holding the id whose text could not be read
