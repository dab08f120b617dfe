"""GET_BROKER_HA_STATUS (907): replication as one broker sees it."""

from __future__ import annotations

from broker.client.admin_api import AdminApi
from broker.protocol.codes import RequestCode
from broker.protocol.ha import HARuntimeInfo


async def ha_status(api: AdminApi, broker_addr: str) -> HARuntimeInfo:
    response = await api.call(broker_addr, RequestCode.GET_BROKER_HA_STATUS)
    return HARuntimeInfo.from_json(response.body or b"{}")
