"""Run a broker on a store folder until killed; prints its address once it is serving.

Used by the crash test: ``python -m tests.broker.server.broker_process STORE``.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from broker.server.broker import Broker
from tests.broker.server.conftest import broker_config, small_store


async def main(store: Path) -> None:
    broker = Broker(broker_config(flush_consumer_offset_interval=100), small_store(store))
    await broker.start()
    print(broker.address, flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1])))
