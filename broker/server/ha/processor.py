"""GET_ALL_CONSUMER_OFFSET (43), GET_ALL_DELAY_OFFSET (45) and GET_BROKER_HA_STATUS (907)."""

from __future__ import annotations

from typing import Protocol

from broker.protocol.codes import RequestCode
from broker.protocol.ha import HARuntimeInfo
from broker.protocol.remoting import RemotingCommand, make_response
from broker.remoting.channel import Handler, RemotingChannel
from broker.server.consumer_offset import ConsumerOffsetManager
from broker.server.ha.ha_client import HAClient
from broker.server.ha.ha_service import HAService
from broker.server.schedule_service import ScheduleService
from broker.store.config_files import data_version, encode_delay_file, encode_offset_file
from broker.store.message_store import MessageStore


class HAStatusParts(Protocol):
    """The parts of the broker the replication queries read."""

    @property
    def store(self) -> MessageStore: ...

    @property
    def offsets(self) -> ConsumerOffsetManager: ...

    @property
    def schedule(self) -> ScheduleService: ...

    @property
    def ha_service(self) -> HAService: ...

    @property
    def ha_client(self) -> HAClient | None:
        """Set on slaves."""
        ...


class HAProcessor:
    def __init__(self, broker: HAStatusParts) -> None:
        self.broker = broker

    def handlers(self) -> dict[int, Handler]:
        return {
            RequestCode.GET_ALL_CONSUMER_OFFSET: self.all_consumer_offsets,
            RequestCode.GET_ALL_DELAY_OFFSET: self.all_delay_offsets,
            RequestCode.GET_BROKER_HA_STATUS: self.ha_status,
        }

    async def all_consumer_offsets(
        self, request: RemotingCommand, channel: RemotingChannel
    ) -> RemotingCommand:
        table = {key: dict(queues) for key, queues in self.broker.offsets.table.items()}
        return make_response(request, body=encode_offset_file(table, data_version()).encode("utf-8"))

    async def all_delay_offsets(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        schedule = self.broker.schedule
        text = encode_delay_file(dict(schedule.offsets), data_version(schedule.version))
        return make_response(request, body=text.encode("utf-8"))

    async def ha_status(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        return make_response(request, body=ha_status(self.broker).to_json())


def ha_status(broker: HAStatusParts) -> HARuntimeInfo:
    """The master's view of its slaves, or a slave's view of its master."""
    if broker.ha_client is not None:
        return HARuntimeInfo(
            master=False,
            masterCommitLogMaxOffset=broker.store.commitlog.max_offset,
            haClientRuntimeInfo=broker.ha_client.status(),
        )
    return broker.ha_service.status()
