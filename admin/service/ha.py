"""Replication status of brokers (GET_BROKER_HA_STATUS) for the cluster views."""

from __future__ import annotations

import dataclasses

from admin.models.cluster import BrokerInfo, HAStatus
from admin.service.base import admin_error
from broker.client.admin_api import AdminApi
from broker.client.ha_api import ha_status
from broker.protocol.ha import HARuntimeInfo


def ha_from_body(info: HARuntimeInfo) -> HAStatus:
    if info.master:
        acks = [c.slaveAckOffset for c in info.haConnectionInfo]
        return HAStatus(
            master=True,
            commitlog_max_offset=info.masterCommitLogMaxOffset,
            replicated_offset=min(acks) if acks else None,
            lag_bytes=max((c.diff for c in info.haConnectionInfo), default=None),
            slaves=len(acks),
            in_sync_slaves=info.inSyncSlaveNums,
            master_ha_address=None,
            master_alive=None,
            truncated_bytes=0,
            last_truncate=None,
        )
    client = info.haClientRuntimeInfo
    return HAStatus(
        master=False,
        commitlog_max_offset=client.maxOffset,
        replicated_offset=client.maxOffset,
        lag_bytes=None,
        slaves=0,
        in_sync_slaves=0,
        master_ha_address=client.masterAddr or None,
        master_alive=client.isActivated,
        truncated_bytes=client.truncatedBytes,
        last_truncate=client.lastTruncate or None,
    )


async def ha_or_none(api: AdminApi, addr: str) -> HAStatus | None:
    """The broker's HA status; None when it is down or does not serve the request."""
    try:
        return ha_from_body(await ha_status(api, addr))
    except Exception as exc:  # one broker down must not hide the others
        if admin_error(exc) is None:
            raise
        return None


def with_slave_lag(brokers: list[BrokerInfo]) -> list[BrokerInfo]:
    """A slave's lag is its master's CommitLog end minus its own (both from this one listing)."""
    masters = {
        (b.cluster, b.broker_name): b.ha.commitlog_max_offset
        for b in brokers
        if b.broker_id == 0 and b.ha is not None
    }
    out = []
    for b in brokers:
        top = masters.get((b.cluster, b.broker_name))
        if b.ha is not None and not b.ha.master and top is not None:
            lag = max(0, top - b.ha.commitlog_max_offset)
            b = dataclasses.replace(b, ha=dataclasses.replace(b.ha, lag_bytes=lag))
        out.append(b)
    return out
