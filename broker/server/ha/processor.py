"""GET_ALL_CONSUMER_OFFSET (43), GET_ALL_DELAY_OFFSET (45) and GET_BROKER_HA_STATUS (907)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.protocol.codes import RequestCode
from broker.protocol.ha import HARuntimeInfo
from broker.protocol.remoting import RemotingCommand, make_response
from broker.remoting.channel import Handler, RemotingChannel
from broker.store.config_files import data_version, encode_delay_file, encode_offset_file

if TYPE_CHECKING:
    from broker.server.broker import Broker


class HAProcessor:
    def __init__(self, broker: Broker) -> None:
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


def ha_status(broker: Broker) -> HARuntimeInfo:
    """The master's view of its slaves, or a slave's view of its master."""
    if broker.ha_client is not None:
        return HARuntimeInfo(
            master=False,
            masterCommitLogMaxOffset=broker.store.commitlog.max_offset,
            haClientRuntimeInfo=broker.ha_client.status(),
        )
    return broker.ha_service.status()
