"""A controller: the remoting server with the controller handlers, its replicated state (one
controller: a snapshot file; several: Raft) and the liveness scan that elects a new master when a
master's heartbeats stop.

Standalone (``rmq controller``) or inside a NameServer's process (``enableControllerInNamesrv``);
either way it listens on its own port.
"""

from __future__ import annotations

import asyncio
import logging
import time

from broker.controller import replicas as R
from broker.controller.config import ControllerConfig
from broker.controller.heartbeats import DEFAULT_TIMEOUT_MS, HeartbeatTable
from broker.controller.journal import Journal, LocalJournal, NotLeader
from broker.controller.notify import RoleNotifier
from broker.controller.processor import ControllerProcessor
from broker.controller.state import GroupState
from broker.remoting.channel import Handler
from broker.remoting.server import RemotingServer

log = logging.getLogger(__name__)


class Controller:
    def __init__(
        self,
        config: ControllerConfig,
        server: RemotingServer | None = None,
        on_heartbeat: Handler | None = None,
    ) -> None:
        """``server``: serve on that (a NameServer's) server instead of a port of its own; ``on_heartbeat``:
        its own BROKER_HEARTBEAT handler, still called for every heartbeat."""
        config.validate()
        self.config = config
        self.journal: Journal
        if config.replicated:
            from broker.controller.raft import RaftJournal  # pysyncobj only where Raft is used

            self.journal = RaftJournal(config)
        else:
            self.journal = LocalJournal(config.controller_store_path, config.controller_self_id)
        self.live = HeartbeatTable()
        self.notifier = RoleNotifier(self.live)
        self._own_server = server is None
        self._server = (
            server if server is not None else RemotingServer(config.listen_host, config.listen_port)
        )
        ControllerProcessor(self, on_heartbeat).install(self._server)
        self._scan_task: asyncio.Task[None] | None = None
        self._leading_since: float | None = None

    @property
    def port(self) -> int:
        return self._server.port

    @property
    def address(self) -> str:
        host = "127.0.0.1" if self.config.listen_host in ("", "0.0.0.0", "::") else self.config.listen_host
        return f"{host}:{self.port}"

    async def start(self) -> None:
        await self.journal.start()
        if self._own_server:
            await self._server.start()
        self.config.listen_port = self._server.port
        self._scan_task = asyncio.create_task(self._scan_loop(), name="controller-scan")
        log.info("controller %s listening on %s", self.config.controller_self_id, self.address)

    async def stop(self) -> None:
        if self._scan_task is not None:
            self._scan_task.cancel()
            await asyncio.gather(self._scan_task, return_exceptions=True)
            self._scan_task = None
        if self._own_server:
            await self._server.stop(1.0)
        await self.notifier.stop()
        await self.journal.stop()

    async def _scan_loop(self) -> None:
        while True:
            await asyncio.sleep(self.config.scan_not_active_broker_interval / 1000)
            try:
                await self.scan()
            except Exception:  # the scan must survive one failure and try again
                log.exception("controller scan failed")

    async def scan(self) -> None:
        """Forget silent brokers; as leader, elect a master for each group whose master is gone.

        A controller that has just become leader first waits one heartbeat timeout, so that brokers it
        has not heard from yet are not taken for dead."""
        self.live.expire()
        if not self.journal.is_leader:
            self._leading_since = None
            return
        now = time.monotonic()
        if self._leading_since is None:
            self._leading_since = now
        if now - self._leading_since < self._grace_seconds():
            return
        for name, group in list(self.journal.state.groups.items()):
            master_gone = group.master_id is not None and not self.live.alive(name, group.master_id)
            masterless = group.master_id is None and not group.never_had_master
            if not (master_gone or masterless):
                continue
            try:
                decision = R.elect_master(
                    self.journal.state,
                    self.live,
                    name,
                    None,
                    designated=False,
                    unclean=self.config.enable_elect_unclean_master,
                )
                await self.journal.commit(decision.events)
            except (R.Refused, NotLeader) as exc:
                log.debug("no election for %s now: %s", name, exc)
                continue
            now_group = self.journal.state.groups.get(name)
            if now_group is None:
                continue
            if master_gone:
                log.warning("%s: master's heartbeats stopped; new master %s at epoch %d",
                            name, now_group.master_id, now_group.master_epoch)  # fmt: skip
            self.elected(now_group)

    def elected(self, group: GroupState) -> None:
        """After an election: push the result to the group's brokers, when configured to."""
        if self.config.notify_broker_role_changed:
            self.notifier.group_changed(group)

    def _grace_seconds(self) -> float:
        timeouts = [i.timeout_ms for i in self.live.all()]
        return max(timeouts, default=DEFAULT_TIMEOUT_MS) / 1000
