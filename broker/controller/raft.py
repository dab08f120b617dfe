"""Three (or five) controllers agree on the state through Raft, by PySyncObj: a change is answered
only once a majority has it in its log, and each controller keeps a journal and a dump file so it
comes back with what it had.

Without a majority nothing commits: no election, no SyncStateSet change; brokers keep the roles they
have until a majority is back. PySyncObj applies committed changes on its own thread; it builds the
next state beside the current one and swaps the reference, so the event loop reads a whole state
without locks.
"""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path
from typing import Any

from pysyncobj import FAIL_REASON, SyncObj, SyncObjConf, replicated

from broker.controller.config import RAFT_PORT_OFFSET, ControllerConfig
from broker.controller.journal import NotLeader
from broker.controller.state import Event, ReplicaState

COMMIT_TIMEOUT = 3.0


def raft_address(remoting_addr: str) -> str:
    host, _, port = remoting_addr.rpartition(":")
    return f"{host}:{int(port) + RAFT_PORT_OFFSET}"


class _Replicated(SyncObj):  # type: ignore[misc]
    def __init__(self, self_addr: str, others: list[str], conf: SyncObjConf) -> None:
        self.state = ReplicaState()
        super().__init__(self_addr, others, conf)

    @replicated  # type: ignore[untyped-decorator]
    def apply_events(self, events: list[Event]) -> None:
        state = copy.deepcopy(self.state)
        for event in events:
            state.apply(event)
        self.state = state


class RaftJournal:
    """The replicator of a controller group: PySyncObj under the same interface as LocalJournal."""

    def __init__(self, config: ControllerConfig) -> None:
        folder = Path(config.controller_store_path)
        folder.mkdir(parents=True, exist_ok=True)
        peers = config.peers
        self.self_id = config.controller_self_id
        self._ids = {raft_address(addr): peer for peer, addr in peers.items()}
        conf = SyncObjConf(
            journalFile=str(folder / "raft.journal"),
            fullDumpFile=str(folder / "raft.dump"),
            commandsWaitLeader=False,
            leaderFallbackTimeout=5.0,
            dynamicMembershipChange=False,
        )
        me = raft_address(peers[self.self_id])
        others = [raft_address(a) for p, a in peers.items() if p != self.self_id]
        self._sync = _Replicated(me, others, conf)

    @property
    def state(self) -> ReplicaState:
        state: ReplicaState = self._sync.state
        return state

    @property
    def is_leader(self) -> bool:
        return bool(self._sync._isLeader())

    @property
    def leader_id(self) -> str | None:
        leader = self._sync._getLeader()
        return None if leader is None else self._ids.get(str(leader.address))

    async def commit(self, events: list[Event]) -> None:
        if not events:
            return
        loop = asyncio.get_running_loop()
        done: asyncio.Future[int] = loop.create_future()

        def settle(error: int) -> None:
            if not done.done():
                done.set_result(error)

        def finished(_result: Any, error: int) -> None:
            loop.call_soon_threadsafe(settle, error)

        if not self.is_leader:
            raise NotLeader(f"controller {self.self_id} is not the leader")
        self._sync.apply_events(events, callback=finished)
        try:
            error = await asyncio.wait_for(done, COMMIT_TIMEOUT)
        except TimeoutError:
            raise NotLeader("no majority of controllers confirmed the change") from None
        if error != FAIL_REASON.SUCCESS:
            raise NotLeader(f"the change was not committed (Raft reason {error})")

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self._sync.destroy_synchronous)
