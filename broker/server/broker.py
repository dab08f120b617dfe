"""The broker: the store, the metadata managers, the request processors and their background work.

The store is blocking, so it is only ever called from worker threads: one single-thread executor
for appends (it orders writes and is the "send queue" whose wait time triggers flow control) and
a small pool for reads. Everything else (client registry, offsets in memory, long polling) lives
on the event loop and needs no locks.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol, TypeVar

from broker.acl.auth_store import AuthStore
from broker.acl.remoting_hook import Hook as AccessHook
from broker.acl.remoting_hook import make_server
from broker.protocol.codes import SerializeType
from broker.protocol.message import pack_host
from broker.protocol.msgid import UniqKeyGenerator
from broker.protocol.remoting import RemotingCommand
from broker.remoting.channel import Handler
from broker.remoting.hooks import GuardedServer
from broker.remoting.server import RemotingServer
from broker.server.admin_processor import AdminProcessor
from broker.server.auth_processor import AuthProcessor
from broker.server.client_processor import ClientProcessor
from broker.server.client_registry import ClientRegistry, RebalanceLockManager
from broker.server.coalesce import Coalesced
from broker.server.config import BrokerConfig
from broker.server.consume_mode_processor import ConsumeModeProcessor
from broker.server.consumer_admin_processor import ConsumerAdminProcessor
from broker.server.consumer_offset import ConsumerOffsetManager
from broker.server.controller_mode import ReplicasManager
from broker.server.end_transaction_processor import EndTransactionProcessor
from broker.server.ha.ha_client import HAClient
from broker.server.ha.ha_service import HAService
from broker.server.ha.processor import HAProcessor
from broker.server.ha.sync_metadata import SlaveSynchronize
from broker.server.instrument import Instrumented
from broker.server.long_polling import PullHoldService
from broker.server.maintenance_processor import MaintenanceProcessor
from broker.server.message_filter import FilterProcessor
from broker.server.messaging.core import MessagingCore
from broker.server.messaging.send import SendService
from broker.server.offset_processor import OffsetProcessor
from broker.server.pop_processor import PopProcessor
from broker.server.pop_service import PopService
from broker.server.pull_processor import PullProcessor
from broker.server.query_processor import QueryProcessor
from broker.server.rebalance_history import Limits, RebalanceHistory
from broker.server.rebalance_processor import RebalanceProcessor
from broker.server.registration import NameServerRegistration
from broker.server.schedule_service import ScheduleService
from broker.server.send_back_processor import SendBackProcessor
from broker.server.send_message_processor import SendProcessor
from broker.server.stats import BrokerStats
from broker.server.subscription_group import SubscriptionGroupManager
from broker.server.timer_admin_processor import TimerAdminProcessor
from broker.server.timer_service import TimerService
from broker.server.topic_config import TopicConfigManager
from broker.server.transaction_service import TransactionService
from broker.server.write_bursts import FlushWaits, WriteBursts
from broker.store.config import StoreConfig
from broker.store.message_store import MessageStore, RecoveryReport

log = logging.getLogger(__name__)
T = TypeVar("T")


class _Processor(Protocol):
    def handlers(self) -> dict[int, Handler]: ...


READ_THREADS = 4
MAX_INFLIGHT_PER_CONNECTION = 1024  # a consumer holds one suspended pull per queue on one connection
STOP_GRACE_SECONDS = 10.0
CLIENT_SCAN_SECONDS = 10.0
REBALANCES_SAVE_SECONDS = 5.0  # the rebalance history is written at most this often while it changes


class Frontend(Protocol):
    """A server of another protocol in front of this broker's core (gRPC)."""

    @property
    def port(self) -> int: ...

    async def stop(self, grace: float) -> None: ...


class Broker:
    def __init__(
        self, config: BrokerConfig, store_config: StoreConfig, auth_store: AuthStore | None = None
    ) -> None:
        """``auth_store``: the users and ACLs, when a NameServer of the same process shares them."""
        self.config = config
        self.store_config = store_config
        config_dir = store_config.store_path / "config"
        self.store = MessageStore(store_config, store_host=config.broker_addr)
        self.topics = TopicConfigManager(config, config_dir)
        self.topics.on_policies = self.store.set_topic_policies
        self.groups = SubscriptionGroupManager(config, config_dir)
        self.offsets = ConsumerOffsetManager(config_dir)
        self.clients = ClientRegistry(
            channel_expired_seconds=config.channel_expired_timeout / 1000,
            notify_enabled=config.notify_consumer_ids_changed_enable,
        )
        self.locks = RebalanceLockManager()
        self.stats = BrokerStats()
        self.holds = PullHoldService()
        self.rebalances = RebalanceHistory(
            config_dir,
            Limits(flap_moves=config.rebalance_flap_moves, flap_window_ms=config.rebalance_flap_window_mills),
        )
        self.transactions = TransactionService(self)
        self.uniq_keys = UniqKeyGenerator(ip=ipaddress.ip_address(config.broker_ip1).packed)
        self.registration = NameServerRegistration(config, self.topics)
        self.schedule = ScheduleService(self)
        self.pop = PopService(self)  # POP consumption's state, behind the messaging core
        self.messaging = MessagingCore(self, SendService(self), self.pop)  # what remoting and gRPC call
        self.handlers: dict[int, Handler] = {}  # request code -> instrumented handler (gRPC reuses them)
        self.grpc: Frontend | None = None  # the gRPC server, when the node serves one
        self.timer = TimerService(self)
        self.request_modes = ConsumeModeProcessor(self)  # PULL/POP per topic@group; slaves copy them
        self.ha_service = HAService(self)  # masters: the HA port and SYNC_MASTER waits
        # users and ACLs (RocketMQ 5), checked when on; read when the server starts
        self.auth = AuthProcessor(config, config_dir, auth_store)
        self.ha_client: HAClient | None = None  # slaves: replication from the master
        self.slave_sync: SlaveSynchronize | None = None
        # controller mode: the controller decides the role (broker/server/controller_mode.py)
        self.replicas: ReplicasManager | None = None
        if config.enable_controller_mode:
            self.replicas = ReplicasManager(self)
            config.broker_role = "SLAVE"  # until the controller names a master
            self.store.replica = True
        elif config.broker_role == "SLAVE":
            self._attach_replication()
        self.recovery: RecoveryReport | None = None
        self.server: RemotingServer | None = None
        self._reader: ThreadPoolExecutor | None = None
        # ``write(fn, *args)``: fn(*args) on the store-writer thread (message appends on the loop
        # with appendOnEventLoop, the default), in order with every other write; the compiled
        # coroutine itself, so a send awaits no interpreted frame here
        self._writes = WriteBursts(
            on_written=self.ha_service.wake,  # slaves get new bytes at once
            appends_on_loop=lambda: self.config.append_on_event_loop,
        )
        self.write = self._writes.write
        self.flush_waits = FlushWaits(self.store.flushed)  # SYNC_FLUSH answers wait for the disk here
        self._tasks: list[asyncio.Task[None]] = []
        self._master_tasks: list[asyncio.Task[None]] = []
        self._topics_saver = Coalesced(lambda: self.read(self.topics.persist), "save-topics")
        self._groups_saver = Coalesced(lambda: self.read(self.groups.persist), "save-groups")
        self._started = False

    def _attach_replication(self) -> None:
        """This broker replicates from its group's master (found through the NameServer)."""
        self.ha_client = HAClient(self)
        self.slave_sync = SlaveSynchronize(self)
        self.store.replica = True
        if self.replicas is None:
            self.registration.on_master = self.ha_client.set_master
            self.ha_client.ask_master = self.registration.trigger
        else:  # the controller names the master; the NameServer may still list the old one
            self.ha_client.identity = self.replicas.broker_id
            self.ha_client.ask_master = self.replicas.trigger
        self.ha_client.on_connected = self.ha_client.on_new_topic = self.slave_sync.trigger

    # == properties ============================================================================
    @property
    def port(self) -> int:
        return self.config.listen_port

    @property
    def address(self) -> str:
        """brokerIP1:port, what clients reach and what offset MessageIds encode."""
        return self.config.broker_addr

    @property
    def ready(self) -> bool:
        """Store recovered and registered with every configured NameServer at least once."""
        return self._started and self.registration.all_registered

    @property
    def appends_on_event_loop(self) -> bool:
        """Message appends run on the event loop now (appendOnEventLoop, and no append stalled lately)."""
        return self._writes.appends_on_loop_now()

    @property
    def write_queue_size(self) -> int:
        """Appends waiting for (or in) the store-writer thread."""
        return self._writes.pending

    def topic_refusal(
        self, request: RemotingCommand, remote_addr: str, topic: str, *, publish: bool = False
    ) -> str | None:
        """Why the sender of ``request`` may not read (``publish``: send) messages of ``topic`` (None: it
        may, or nothing is checked): for requests that pick a stored message by its offset."""
        hook = self.server.hook if isinstance(self.server, GuardedServer) else None
        if not isinstance(hook, AccessHook):
            return None
        refused = hook.topic_refusal(request, remote_addr, (topic,), publish=publish)
        return None if refused is None else refused.message

    # == store access ==========================================================================
    async def read(self, fn: Callable[..., T], *args: Any) -> T:
        assert self._reader is not None, "the broker is not started"
        return await asyncio.get_running_loop().run_in_executor(self._reader, fn, *args)

    async def read_queue(self, topic: str, queue_id: int, offset: int, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)``, a read of the queue from ``offset``: on the event loop when those bytes are
        in the page cache (copying them costs less than handing the work to a read thread and taking
        the GIL back), else on a read thread."""
        if self.store.in_page_cache(topic, queue_id, offset):
            return fn(*args)
        return await self.read(fn, *args)

    # == life cycle ============================================================================
    async def start(self) -> None:
        """Recover the store, load metadata, listen, register, then start the periodic work."""
        self._writes.start()
        self._reader = ThreadPoolExecutor(READ_THREADS, thread_name_prefix="store-read")
        self.recovery = await self.write(self.store.start)
        await self.read(self._load_metadata)
        # from here on the metadata files are written on a read thread, a burst of changes at once
        self.topics.save = self._topics_saver.request
        self.groups.save = self._groups_saver.request
        self.server = make_server(  # TLS and ACL checks when configured (broker/acl/remoting_hook.py)
            self.config,
            self.config.listen_host,
            self.config.listen_port,
            identity=lambda: (self.config.broker_cluster_name, self.config.broker_name, self.address),
            auth_store=self.auth.store,
            idle_timeout=self.config.server_channel_max_idle_time_seconds,
            serialize_type=SerializeType[self.config.serialize_type.upper()],
            max_inflight=MAX_INFLIGHT_PER_CONNECTION,
        )
        processors: list[_Processor] = [
            SendProcessor(self.messaging.sends, self.config),
            SendBackProcessor(self),
            PullProcessor(self),
            OffsetProcessor(self.messaging),
            ClientProcessor(self),
            AdminProcessor(self),
            ConsumerAdminProcessor(self),
            QueryProcessor(self),
            MaintenanceProcessor(self),
            EndTransactionProcessor(self.messaging, self),
            FilterProcessor(self.config),
            PopProcessor(self),
            self.request_modes,
            HAProcessor(self),
            self.timer,
            TimerAdminProcessor(self.timer, self.store),
            RebalanceProcessor(self),
            self.auth,
        ]
        if self.replicas is not None:
            processors.append(self.replicas)
        for processor in processors:
            for code, handler in processor.handlers().items():
                self.handlers[code] = Instrumented(code, handler, self.stats.record_latency)
                self.server.register(code, self.handlers[code])
        await self.server.start()
        # Port 0 means "any free port": from here on the bound one is the broker's address.
        self.config.listen_port = self.server.port
        self.store.store_host_raw = pack_host(self.address)
        self.topics.on_change = self.registration.topics_changed
        if self.ha_client is None:  # masters, and controller-mode brokers (any may become master)
            try:
                await self.ha_service.start()
            except OSError as exc:
                # an ASYNC_MASTER still serves clients without its HA port; a SYNC_MASTER cannot ack
                if self.config.broker_role == "SYNC_MASTER":
                    raise
                log.error("HA port %d not served, no slave can replicate from this broker: %s",
                          self.config.ha_listen_port, exc)  # fmt: skip
        else:
            await self.ha_client.start()
            assert self.slave_sync is not None
            await self.slave_sync.start()
        if self.replicas is not None:
            await self.replicas.start()  # broker id, then the role the controller gives
        await self.registration.start()
        self._tasks = [
            self._every(1.0, self.stats.tick),
            self._every(1.0, self.pop.persist),
            self._every(CLIENT_SCAN_SECONDS, self.clients.scan_expired),
            self._every(self.config.flush_consumer_offset_interval / 1000, self._persist_offsets),
            self._every(REBALANCES_SAVE_SECONDS, self._persist_rebalances),
        ]
        if self.config.broker_role != "SLAVE":  # a slave's store takes no writes: no deliveries, no checks
            await self._start_master_work()
        self._started = True
        log.info("broker %s listening on %s", self.config.broker_name, self.address)

    async def _start_master_work(self) -> None:
        await self.schedule.start()
        await self.timer.start()
        self._master_tasks = [
            self._every(1.0, self.pop.revive),
            self._every(self.config.flush_delay_offset_interval / 1000, self.schedule.persist),
            self._every(self.config.flush_delay_offset_interval / 1000, self.timer.persist),
            self._every(self.config.transaction_check_interval / 1000, self.transactions.check),
        ]

    async def _stop_master_work(self) -> None:
        for task in self._master_tasks:
            task.cancel()
        await asyncio.gather(*self._master_tasks, return_exceptions=True)
        self._master_tasks = []
        await self.schedule.stop()
        await self.timer.stop()

    # == role changes (controller mode) ========================================================
    async def become_master(self) -> int:
        """Stop replicating and take writes; returns where the CommitLog ends (the epoch's start)."""
        if self.ha_client is not None and self.slave_sync is not None:
            await self.ha_client.stop()
            await self.slave_sync.stop()
            self.ha_client = self.slave_sync = None
        end = await self.write(self.store.promote)
        was_slave = self.config.broker_role == "SLAVE"
        self.config.broker_role = "SYNC_MASTER" if self.config.all_ack_in_sync_state_set else "ASYNC_MASTER"
        if was_slave and self._started:
            await self._start_master_work()
        return end

    async def become_replica(self) -> None:
        """Stop taking writes and replicate from the master the NameServer names."""
        if self.config.broker_role != "SLAVE" and self._started:
            await self._stop_master_work()
        self.config.broker_role = "SLAVE"
        await self.write(self.store.demote)
        if self.ha_client is None:
            self._attach_replication()
            assert self.ha_client is not None and self.slave_sync is not None
            await self.ha_client.start()
            await self.slave_sync.start()

    def _load_metadata(self) -> None:
        self.topics.load()
        self.groups.load()
        self.pop.load()
        self.offsets.load()
        self.rebalances.load()

    async def stop(self) -> None:
        """Stop accepting, finish in-flight requests, persist offsets, unregister, close the store.

        Safe after a failed or partial start and when called twice.
        """
        self._started = False
        self.holds.stop()
        self.pop.stopping = True
        if self.grpc is not None:
            await self.grpc.stop(STOP_GRACE_SECONDS)
            self.grpc = None
        if self.server is not None:
            await self.server.stop(STOP_GRACE_SECONDS)
            self.server = None
        for task in self._tasks + self._master_tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, *self._master_tasks, return_exceptions=True)
        self._tasks = self._master_tasks = []
        if self.replicas is not None:
            await self.replicas.stop()
        await self.clients.close()
        await self.ha_service.stop()
        if self.ha_client is not None and self.slave_sync is not None:
            await self.ha_client.stop()
            await self.slave_sync.stop()
        await self.registration.stop()
        if self._reader is not None:
            await self.metadata_saved()
            if self.store.running:
                await self.schedule.stop()
                await self.timer.stop()
                await self.pop.persist(force=True)
                await self.read(self.offsets.persist)
            await self._persist_rebalances()
            await self.write(self.store.shutdown)
            self._writes.shutdown()
            self._reader.shutdown()
            self._reader = None

    async def metadata_saved(self) -> None:
        """Wait until the topic and group files hold every change made so far."""
        await self._topics_saver.settle()
        await self._groups_saver.settle()

    # == gRPC ==================================================================================
    @property
    def grpc_port(self) -> int:
        """The bound gRPC port (0 while it is not serving)."""
        return int(self.grpc.port) if self.grpc is not None else 0

    def attach_grpc(self, server: Frontend) -> None:
        """Serve gRPC beside remoting: ``server`` (broker/grpc, started by the node) stops first."""
        self.grpc = server
        self.config.grpc_port = server.port

    # == helpers ===============================================================================
    def _every(self, seconds: float, fn: Callable[[], Awaitable[None] | None]) -> asyncio.Task[None]:
        async def loop() -> None:
            while True:
                await asyncio.sleep(seconds)
                try:
                    result = fn()
                    if result is not None:
                        await result
                except Exception:  # periodic work must survive one failure and try again
                    log.exception("periodic task %s failed", getattr(fn, "__name__", fn))

        return asyncio.create_task(loop())

    async def _persist_offsets(self) -> None:
        await self.read(self.offsets.persist)

    async def _persist_rebalances(self) -> None:
        if self.rebalances.dirty:
            await self.read(self.rebalances.persist)

    async def __aenter__(self) -> Broker:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()
