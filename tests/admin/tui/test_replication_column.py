"""The cluster screen's replication column reads the broker's HA status."""

from __future__ import annotations

from admin.models import BrokerInfo, HAStatus
from admin.tui.screens.cluster import replication_lag


def _broker(ha: HAStatus | None, broker_id: int = 1) -> BrokerInfo:
    return BrokerInfo(
        cluster="C", broker_name="b", broker_id=broker_id, address="127.0.0.1:10911",
        role="SLAVE" if broker_id else "MASTER", reachable=True, error=None, version="V5_3_3",
        put_tps=0.0, get_tps=0.0, disk_ratio=0.1, commitlog_min_offset=0, commitlog_max_offset=10,
        runtime={}, ha=ha,
    )  # fmt: skip


def _ha(master: bool, lag: int | None, alive: bool | None) -> HAStatus:
    return HAStatus(
        master=master, commitlog_max_offset=100, replicated_offset=None if lag is None else 100 - lag,
        lag_bytes=lag, slaves=1 if master else 0, in_sync_slaves=1 if master else 0,
        master_ha_address=None if master else "127.0.0.1:10912", master_alive=alive, truncated_bytes=0,
        last_truncate=None,
    )  # fmt: skip


def test_slave_lag_and_a_lost_master_are_shown() -> None:
    assert replication_lag(_broker(_ha(False, 4096, True))) == "4.0 KiB"
    assert replication_lag(_broker(_ha(False, 4096, False))) == "4.0 KiB (master lost)"
    assert replication_lag(_broker(_ha(True, 0, None), broker_id=0)) == "0 B"


def test_unknown_replication_shows_a_dash() -> None:
    assert replication_lag(_broker(None)) == "-"
    assert replication_lag(_broker(_ha(True, None, None), broker_id=0)) == "-"
