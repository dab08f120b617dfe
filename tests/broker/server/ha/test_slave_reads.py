"""slaveReadEnable: a slave serves pulls only when it is on; otherwise it sends the consumer back to its
live master (brokerRole SLAVE, replicating over the master's haListenPort)."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.protocol.codes import ResponseCode
from tests.broker.server.conftest import async_test, pull, send
from tests.broker.server.ha.conftest import ha_broker, namesrv, running, wait_for

pytestmark = pytest.mark.servers

TOPIC = "SlaveReads"


@async_test
async def test_slave_serves_pulls_only_with_slave_read_enable(tmp_path: Path) -> None:
    async with namesrv(tmp_path) as ns:
        master = ha_broker(ns.address, tmp_path / "m", "ASYNC_MASTER")
        slave = ha_broker(ns.address, tmp_path / "s", "SLAVE", slave_read_enable=False)
        async with running(master, slave) as client:
            assert (await send(client, master, TOPIC, b"x", queue_id=0)).code == ResponseCode.SUCCESS
            await wait_for(lambda: slave.store.max_offset(TOPIC, 0) == 1, what="the message on the slave")
            assert slave.ha_client is not None
            await wait_for(
                lambda: slave.ha_client is not None and slave.ha_client.master_alive, what="master"
            )
            refused = await pull(client, slave, TOPIC, 0, 0)
            assert refused.code == ResponseCode.PULL_RETRY_IMMEDIATELY
            assert refused.ext_fields["suggestWhichBrokerId"] == "0"
            slave.config.slave_read_enable = True
            served = await pull(client, slave, TOPIC, 0, 0)
            assert served.code == ResponseCode.SUCCESS and served.body
