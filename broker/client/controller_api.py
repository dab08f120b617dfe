"""The controller's admin requests (what MQAdminExt sends to a controller) and GET_BROKER_EPOCH_CACHE.

A request that needs the leader goes to the leader the first reachable controller names.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from broker.client.admin_api import AdminApi
from broker.protocol import controller as controller_protocol
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.remoting import RemotingCommand
from broker.remoting.errors import RemotingConnectError


async def metadata(
    api: AdminApi, addrs: Sequence[str]
) -> tuple[str, controller_protocol.GetMetaDataResponseHeader]:
    """CONTROLLER_GET_METADATA_INFO of the first controller that answers, and its address."""
    last: Exception | None = None
    for addr in addrs:
        try:
            response = await api.call(addr, RequestCode.CONTROLLER_GET_METADATA_INFO)
        except RemotingConnectError as exc:
            last = exc
            continue
        return addr, controller_protocol.GetMetaDataResponseHeader.from_ext_fields(response.ext_fields)
    if last is None:
        raise ValueError("no controller address given")
    raise last


async def leader(api: AdminApi, addrs: Sequence[str]) -> str:
    """The leader's address; the asked controller's own when it leads."""
    addr, meta = await metadata(api, addrs)
    if meta.isLeader:
        return addr
    if not meta.controllerLeaderAddress:
        from broker.client.admin_api import RemoteError

        raise RemoteError(addr, RequestCode.CONTROLLER_GET_METADATA_INFO, ResponseCode.CONTROLLER_NOT_LEADER,
                          "no controller leads now (is a majority of the controllers up?)")  # fmt: skip
    return meta.controllerLeaderAddress


async def sync_state_data(
    api: AdminApi, addrs: Sequence[str], broker_names: Sequence[str]
) -> controller_protocol.BrokerReplicasInfo:
    response = await api.call(
        await leader(api, addrs),
        RequestCode.CONTROLLER_GET_SYNC_STATE_DATA,
        body=json.dumps(list(broker_names)).encode(),
    )
    return controller_protocol.BrokerReplicasInfo.from_json(response.body or b"{}")


async def elect_master(
    api: AdminApi, addrs: Sequence[str], cluster: str, broker_name: str, broker_id: int | None
) -> tuple[controller_protocol.ReplicaMasterHeader, controller_protocol.ElectMasterResponseBody]:
    """ELECT_MASTER: ``broker_id`` becomes master (None: the controller's policy picks)."""
    header = controller_protocol.ElectMasterRequestHeader(
        clusterName=cluster,
        brokerName=broker_name,
        brokerId=-1 if broker_id is None else broker_id,
        designateElect=broker_id is not None,
    )
    response = await api.call(await leader(api, addrs), RequestCode.CONTROLLER_ELECT_MASTER, header)
    body = (
        controller_protocol.ElectMasterResponseBody.from_json(response.body)
        if response.body
        else controller_protocol.ElectMasterResponseBody()
    )
    return controller_protocol.ReplicaMasterHeader.from_ext_fields(response.ext_fields), body


async def clean_broker_data(
    api: AdminApi,
    addrs: Sequence[str],
    cluster: str | None,
    broker_name: str,
    broker_ids: Sequence[int] | None,
    clean_living: bool,
) -> None:
    header = controller_protocol.CleanControllerBrokerDataRequestHeader(
        clusterName=cluster,
        brokerName=broker_name,
        brokerControllerIdsToClean=";".join(map(str, broker_ids)) if broker_ids else None,
        isCleanLivingBroker=clean_living,
    )
    await api.call(await leader(api, addrs), RequestCode.CLEAN_BROKER_DATA, header)


async def config(api: AdminApi, addr: str) -> str:
    """GET_CONTROLLER_CONFIG of one controller: ``key=value`` lines."""
    response: RemotingCommand = await api.call(addr, RequestCode.GET_CONTROLLER_CONFIG)
    return (response.body or b"").decode()


async def update_config(api: AdminApi, addr: str, properties: dict[str, str]) -> None:
    body = "".join(f"{k}={v}\n" for k, v in properties.items()).encode()
    await api.call(addr, RequestCode.UPDATE_CONTROLLER_CONFIG, body=body)


async def broker_epochs(api: AdminApi, broker_addr: str) -> controller_protocol.EpochEntryCache:
    """GET_BROKER_EPOCH_CACHE of a controller-mode broker."""
    response = await api.call(broker_addr, RequestCode.GET_BROKER_EPOCH_CACHE)
    return controller_protocol.EpochEntryCache.from_json(response.body or b"{}")
