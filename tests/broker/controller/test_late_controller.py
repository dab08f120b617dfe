"""A broker in controller mode that starts while no controller leads (the controllers start later, or
are still electing their Raft leader) gets its id once one answers, and joins its group's
SyncStateSet like the brokers that started after the controller. In-process, on loopback."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from broker.client.admin_api import AdminApi
from broker.client.controller_api import sync_state_data
from broker.client.remoting_client import RemotingClient
from broker.controller.config import ControllerConfig
from broker.controller.server import Controller
from broker.server.broker import Broker
from tests.broker.controller.harness import until
from tests.broker.server.ha.conftest import ha_broker, namesrv
from tests.ports import free_base_port

pytestmark = pytest.mark.servers

GROUP = "broker-ha"  # the group name of tests.broker.server.ha.conftest.ha_broker
WAIT = 60.0


def _controller_mode_broker(ns: str, store: Path, controller: str) -> Broker:
    return ha_broker(
        ns,
        store,
        "SLAVE",
        enable_controller_mode=True,
        controller_addr=controller,
        all_ack_in_sync_state_set=True,
        broker_heartbeat_interval=500,
        sync_broker_metadata_period=500,
        controller_heart_beat_timeout_mills=3000,
    )


async def _early_broker(tmp: Path) -> dict[str, object]:
    port = free_base_port()
    controller_addr = f"127.0.0.1:{port}"
    controller = Controller(ControllerConfig(listen_port=port, controller_store_path=tmp / "controller"))
    api = AdminApi(RemotingClient(connect_timeout=1.0), timeout=5.0)
    async with namesrv(tmp) as ns:
        early = _controller_mode_broker(ns.address, tmp / "early", controller_addr)
        late = _controller_mode_broker(ns.address, tmp / "late", controller_addr)
        members: set[int] = set()

        async def both_in_sync() -> bool:
            info = (await sync_state_data(api, [controller_addr], [GROUP])).replicasInfoTable.get(GROUP)
            members.clear()
            if info is not None:
                members.update(r.brokerId for r in info.inSyncReplicas)
            return len(members) == 2

        try:
            await early.start()  # nothing listens on the controller's port yet
            await controller.start()
            await late.start()
            await until(both_in_sync, "a SyncStateSet of both brokers", WAIT)
            assert early.replicas is not None and late.replicas is not None
            return {"members": members, "ids": {early.replicas.broker_id, late.replicas.broker_id}}
        finally:
            await late.stop()
            await early.stop()
            await controller.stop()
            await api.client.close()


def test_a_broker_started_before_the_controller_joins_the_sync_state_set(tmp_path: Path) -> None:
    result = asyncio.run(asyncio.wait_for(_early_broker(tmp_path), 3 * WAIT))
    assert result["ids"] == {1, 2}
    assert result["members"] == {1, 2}
