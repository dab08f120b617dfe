"""The local cluster's plan and the rows `rmq cluster ps` reports for it (no process started)."""

from __future__ import annotations

from pathlib import Path

from cli.cluster_local import plan, status


def test_plan_and_status_rows(tmp_path: Path) -> None:
    members = plan(tmp_path, 1, 1, 20000, True)
    assert [(m.name, m.role) for m in members] == [
        ("namesrv", "NAMESRV"), ("broker-a-0", "SYNC_MASTER"), ("broker-a-1", "SLAVE"),
    ]  # fmt: skip
    rows = status(members)
    namesrv, master, slave = rows
    assert (namesrv.broker_name, namesrv.ha_port) == (None, None)  # null in JSON, not "" and 0
    assert (master.broker_name, master.broker_id, slave.broker_id) == ("broker-a", 0, 1)
    assert master.ha_port is not None and master.ha_port != slave.ha_port
    assert not any(r.alive for r in rows)  # never started: pid 0
