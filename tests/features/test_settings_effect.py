"""Every topic attribute and broker setting the README names does something, or is refused: none is
accepted and ignored. The README is read for the names; each must have a proof, either a test in this
module or the test file that exercises it (which must mention it). Adding a setting to the README
without one fails here."""

from __future__ import annotations

import asyncio
import dataclasses
import re
import struct
from pathlib import Path

import pytest

from broker.grpc.http2 import connection_limits
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.headers import CreateTopicRequestHeader
from broker.protocol.remoting import RemotingCommand, make_response
from broker.remoting.server import RemotingServer
from broker.server.config import BrokerConfig
from broker.server.topic_config import TOPIC_ATTRIBUTES, TRACE_TOPIC
from broker.settings import key_name
from broker.store.compaction_log import OFFSET_MAP_ENTRY
from broker.store.config import StoreConfig
from broker.store.mapped_file import ADVICE_RANDOM
from broker.store.message_store import MessageStore, PutMessage
from broker.store.timer_wheel import SLOTS_TOTAL
from tests.broker.conftest import async_test, call, running_broker, send
from tests.store.helpers import small_config

pytestmark = pytest.mark.servers

ROOT = Path(__file__).resolve().parents[2]
HERE = "here"  # proved by a test of this module (listed in PROVED_HERE)

# setting or attribute -> the test file that proves its effect or its refusal
ELSEWHERE: dict[str, str] = {
    "aclEnable": "tests/acl/test_auth_enforcement.py",
    "aclFile": "tests/acl/test_tls.py",
    "authenticationEnabled": "tests/acl/test_auth_enforcement.py",
    "authenticationWhitelist": "tests/acl/test_auth_enforcement.py",
    "authorizationEnabled": "tests/acl/test_auth_codes.py",
    "initAuthenticationUser": "tests/acl/test_auth_enforcement.py",
    "tlsEnable": "tests/acl/test_tls.py",
    "tlsCertPath": "tests/acl/test_tls.py",
    "tlsKeyPath": "tests/acl/test_tls.py",
    "tlsClientTrustCertPath": "tests/acl/test_tls.py",
    "tlsTrustCertPath": "tests/acl/test_tls_client_auth.py",
    "tlsClientAuth": "tests/acl/test_tls_client_auth.py",
    "brokerIP1": "tests/run/test_settings_fixes.py",
    "brokerIP2": "tests/run/test_settings_fixes.py",
    "brokerId": "tests/ha/test_failover.py",
    "brokerRole": "tests/ha/test_slave_reads.py",
    "haListenPort": "tests/ha/test_slave_reads.py",
    "slaveReadEnable": "tests/ha/test_slave_reads.py",
    "namesrvAddr": "tests/ha/conftest.py",  # slaves find their master through it (test_slave_reads)
    "listenPort": "tests/broker/conftest.py",  # every broker test connects to the port it bound
    "grpcPort": "tests/grpc/test_grpc_service.py",
    "httpPort": "tests/run/test_settings_fixes.py",
    "defaultMessageRequestMode": "tests/broker/test_consume_mode.py",
    "defaultPopShareQueueNum": "tests/broker/test_consume_mode.py",
    "serverLoadBalancerEnable": "tests/broker/test_consume_mode.py",
    "deleteWhen": "tests/store/test_retention.py",
    "fileReservedTime": "tests/store/test_retention.py",
    "flushDiskType": "tests/broker/test_sync_flush.py",
    "compactionScheduleInternal": "tests/broker/test_compaction_topic.py",
    "brokerWhiteRemoteAddresses": "tests/acl/test_side_doors.py",
    "haTlsEnable": "tests/acl/test_ha_tls.py",
    "innerClientAuthenticationCredentials": "tests/ha/test_auth_replication.py",
    "listenHost": "tests/acl/test_lockdown_settings.py",
    "maxMappedConsumeQueueFiles": "tests/store/test_many_queues.py",
    "registerNameServerPeriod": "tests/broker/test_metadata_scale.py",
    "message.type": "tests/grpc/test_message_type.py",
    "queue.type": "tests/broker/test_topic_attributes.py",
    "cleanup.policy": "tests/broker/test_compaction_topic.py",
    "reserve.time": "tests/store/test_topic_reserve_time.py",
    "cleanResourceInterval": "tests/store/test_topic_reserve_time.py",
    "enableMixedMessageType": "tests/broker/test_topic_attributes.py",
    "recallMessageEnable": "tests/grpc/test_recall.py",
    "timerMaxDelaySec": "tests/features/test_timer.py",
    "timerRollWindowSlots": "tests/features/test_timer.py",
    "grpcClientIdleTimeMills": "tests/grpc/test_attacks.py",
    "transactionCheckMax": "tests/cli_online/test_transactions.py",
    "enablePropertyFilter": "tests/features2/test_sql92_broker.py",
    "rebalanceFlapMoves": "tests/broker/test_rebalance_history.py",
    "rebalanceFlapWindowMills": "tests/broker/test_rebalance_history.py",
    "mappedFileSizeTimerLog": "tests/features/test_timer_scale.py",
    "enableControllerMode": "tests/controller/test_commands.py",
    "controllerAddr": "tests/controller/test_failover.py",
    "allAckInSyncStateSet": "tests/controller/test_failover.py",
    "controllerHeartBeatTimeoutMills": "tests/controller/test_failover.py",
    "haMaxTimeSlaveNotCatchup": "tests/controller/test_failover.py",
}
# where a file proves a setting without naming it: what it uses instead
EVIDENCE = {"fileReservedTime": "_age_files"}  # files older than the default 72 hours go
PROVED_HERE = {
    "autoCreateTopicEnable",
    "brokerName",
    "brokerClusterName",
    "storePathRootDir",
    "mappedFileSizeCommitLog",
    "messageDelayLevel",
    "traceTopicEnable",
    "dataReadAheadEnable",
    "enableCompaction",
    "compactionMappedFileSize",
    "compactionCqMappedFileSize",
    "maxOffsetMapSize",
    "reserve.time",
    "authorizationWhitelist",
    "lenientHeaderMaxBytes",
    "compressedRegister",
    "timerPrecisionMs",
    "grpcMaxConcurrentStreams",
    "grpcMaxHeaderListSize",
    "grpcControlFrameBurst",
    "grpcControlFramesPerSecond",
    "grpcMaxCallsInFlight",
}
# how a file may spell a setting: RocketMQ's key, the field name, or a --set/attribute text
_SNAKE = {
    key_name(f): f.name
    for cls in (BrokerConfig, StoreConfig)
    for f in dataclasses.fields(cls)
    if not f.metadata.get("internal")
}


def readme_names() -> set[str]:
    """The settings and topic attributes the README names in backticks (`key` or `key=value`)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    words = set(re.findall(r"`([A-Za-z0-9_.]+)(?:=[^`]*)?`", text))
    return {w for w in words if w in _SNAKE or w in TOPIC_ATTRIBUTES}


def test_every_readme_setting_and_attribute_has_a_proof() -> None:
    names = readme_names()
    assert {"cleanup.policy", "reserve.time", "queue.type", "fileReservedTime"} <= names
    missing = sorted(n for n in names if n not in ELSEWHERE and n not in PROVED_HERE)
    assert not missing, f"README settings without a test of their effect: {missing}"
    for name, file in ELSEWHERE.items():
        text = (ROOT / file).read_text(encoding="utf-8")
        spellings = {name, _SNAKE.get(name, name), EVIDENCE.get(name, name)}
        assert any(s in text for s in spellings), f"{file} does not exercise {name}"
    # every attribute RocketMQ defines is covered, not only those the README names
    assert set(TOPIC_ATTRIBUTES) <= set(ELSEWHERE) | PROVED_HERE


def _create(topic: str, attributes: str) -> CreateTopicRequestHeader:
    return CreateTopicRequestHeader(
        topic=topic,
        defaultTopic="TBW102",
        readQueueNums=1,
        writeQueueNums=1,
        perm=6,
        topicFilterType="SINGLE_TAG",
        attributes=attributes,
    )


@async_test
async def test_broker_settings_show_in_what_the_broker_does(tmp_path: Path) -> None:
    store = tmp_path / "elsewhere"
    async with running_broker(
        store,
        grpc_port=-1,
        auto_create_topic_enable=False,
        trace_topic_enable=True,
        broker_cluster_name="ClusterX",
        store_settings={
            "mapped_file_size_commit_log": 128 * 1024,
            "message_delay_level": "1s 7s",
            "timer_precision_ms": 250,
        },
    ) as (broker, client):
        # autoCreateTopicEnable=false: a send to an unknown topic is refused
        refused = await send(client, broker, "NeverCreated", queue_id=0)
        assert refused.code == ResponseCode.TOPIC_NOT_EXIST
        # brokerName and brokerClusterName name the broker's own topics; traceTopicEnable adds the trace one
        assert broker.topics.get("broker-t") is not None and broker.topics.get("ClusterX") is not None
        assert broker.topics.get(TRACE_TOPIC) is not None
        # storePathRootDir and mappedFileSizeCommitLog: where and how big the CommitLog files are
        created = await call(client, broker, RequestCode.UPDATE_AND_CREATE_TOPIC, _create("Plain", ""))
        assert created.code == ResponseCode.SUCCESS
        assert (await send(client, broker, "Plain", queue_id=0)).code == ResponseCode.SUCCESS
        (first,) = (store / "commitlog").iterdir()
        assert first.stat().st_size == 128 * 1024
        # messageDelayLevel: level 2 is the second entry, 7 s
        delayed = await send(client, broker, "Plain", queue_id=0, DELAY="2")
        assert delayed.code == ResponseCode.SUCCESS
        unit = broker.store.consume_queue("SCHEDULE_TOPIC_XXXX", 1)
        assert unit is not None
        parked = unit.unit_at(0)
        assert parked is not None
        stored = broker.store.commitlog.store_timestamp_at(parked.commitlog_offset)
        assert stored is not None and parked.tags_code == stored + 7000
        # timerPrecisionMs: the wheel's slots are that wide, so it spans that many times its slots
        assert broker.timer.files.wheel.span_ms == 2 * SLOTS_TOTAL * 250
        # reserve.time reaches the store's retention for that topic (its effect: test_topic_reserve_time)
        timed = await call(
            client, broker, RequestCode.UPDATE_AND_CREATE_TOPIC, _create("Timed", "+reserve.time=6")
        )
        assert timed.code == ResponseCode.SUCCESS
        assert broker.store.topic_reserve_hours == {"Timed": 6}


def _keyed(topic: str, seq: int) -> PutMessage:
    return PutMessage(topic, 0, b"v" * 200, {"KEYS": f"k{seq % 150}"})


def test_store_settings_show_in_the_files(tmp_path: Path) -> None:
    cfg: StoreConfig = small_config(
        tmp_path,
        data_read_ahead_enable=False,
        compaction_cq_mapped_file_size=46 * 40,
        compaction_mapped_file_size=46 * 40 * 6 + 100,  # rounded down to six queue files
        max_offset_map_size=OFFSET_MAP_ENTRY * 100,  # room for 100 keys
    )
    store = MessageStore(cfg)
    store.start()
    try:
        # dataReadAheadEnable=false: the CommitLog maps are advised for random reads
        assert store.commitlog.files.advice == ADVICE_RANDOM
        store.set_topic_policies(frozenset({"Kv"}), {})
        assert store.put_messages([_keyed("Kv", n) for n in range(400)]).ok
        store.compaction.feed()
        # compactionMappedFileSize / compactionCqMappedFileSize: the files' sizes (the log a multiple
        # of the queue file, as RocketMQ sizes it)
        log_dir = tmp_path / "compaction" / "compactionLog" / "Kv" / "0"
        cq_dir = tmp_path / "compaction" / "compactionCq" / "Kv" / "0"
        assert {p.stat().st_size for p in log_dir.iterdir()} == {46 * 40 * 6}
        assert {p.stat().st_size for p in cq_dir.iterdir()} == {46 * 40}
        # maxOffsetMapSize: 150 keys do not fit a map of 100, so a run covers only part of the files
        (run,) = store.compaction.compact_all()
        assert run.last_offset < 150
        while store.compaction.compact_all():
            pass
        # compacted, a read from 0 starts at the first kept message; with enableCompaction=false the
        # topic is read from its ConsumeQueue, every message from offset 0
        assert store.get_messages("Kv", 0, 0, 1).queue_offsets[0] > 0
        store.config.enable_compaction = False
        assert store.get_messages("Kv", 0, 0, 1).queue_offsets == [0]
    finally:
        store.shutdown()


@async_test
async def test_authorization_whitelist_lets_listed_requests_through(tmp_path: Path) -> None:
    # unsigned creates and sends pass authentication (its white list); authorization then needs a user
    create, send_v2 = str(RequestCode.UPDATE_AND_CREATE_TOPIC), str(RequestCode.SEND_MESSAGE_V2)
    security = {
        "authentication_enabled": True,
        "authorization_enabled": True,
        "init_authentication_user": '{"username": "root", "password": "root-secret"}',
        "authentication_whitelist": f"{create},{send_v2}",
    }
    async with running_broker(tmp_path / "a", grpc_port=-1, authorization_whitelist=create, **security) as (
        broker,
        client,
    ):
        await call(client, broker, RequestCode.UPDATE_AND_CREATE_TOPIC, _create("Open", ""))
        refused = await send(client, broker, "Open", queue_id=0)
        assert refused.code == ResponseCode.NO_PERMISSION, refused.remark  # a send names no user
    async with running_broker(
        tmp_path / "b", grpc_port=-1, authorization_whitelist=f"{create},{send_v2}", **security
    ) as (broker, client):
        await call(client, broker, RequestCode.UPDATE_AND_CREATE_TOPIC, _create("Open", ""))
        assert (await send(client, broker, "Open", queue_id=0)).code == ResponseCode.SUCCESS


async def _relaxed_header_answered(broker_address: str) -> bool:
    """Whether a ~1 KiB relaxed-JSON (unquoted names) request header gets an answer."""
    header = b"{code:34,opaque:7,extFields:{" + b",".join(b"k%d:'v'" % i for i in range(120)) + b"}}"
    host, port = broker_address.rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(struct.pack(">ii", 4 + len(header), len(header)) + header)
    try:
        return len(await asyncio.wait_for(reader.read(4), 10)) == 4
    except ConnectionResetError:
        return False
    finally:
        writer.close()


@async_test
async def test_lenient_header_max_bytes_bounds_relaxed_json_headers(tmp_path: Path) -> None:
    async with running_broker(tmp_path / "a", grpc_port=-1) as (broker, _client):
        assert await _relaxed_header_answered(broker.address)
    async with running_broker(tmp_path / "b", grpc_port=-1, lenient_header_max_bytes=512) as (
        broker,
        _client,
    ):
        assert not await _relaxed_header_answered(broker.address)  # closed unanswered


async def _first_registration(store: Path, compressed: bool) -> RemotingCommand:
    """The first (full) REGISTER_BROKER a broker sends, as a recording NameServer endpoint gets it."""
    seen: asyncio.Queue[RemotingCommand] = asyncio.Queue()

    async def record(request: RemotingCommand, _channel: object) -> RemotingCommand:
        await seen.put(request)
        return make_response(request)

    namesrv = RemotingServer("127.0.0.1", 0)
    namesrv.register(RequestCode.REGISTER_BROKER, record)
    async with namesrv:
        settings = {"namesrv_addr": f"127.0.0.1:{namesrv.port}", "compressed_register": compressed}
        async with running_broker(store, grpc_port=-1, **settings):
            return await asyncio.wait_for(seen.get(), 20)


@async_test
async def test_compressed_register_compresses_every_full_registration(tmp_path: Path) -> None:
    plain = await _first_registration(tmp_path / "plain", False)
    assert plain.ext_fields.get("compressed") != "true"
    packed = await _first_registration(tmp_path / "packed", True)
    assert packed.ext_fields.get("compressed") == "true"


def test_grpc_settings_become_the_limits_of_each_connection() -> None:
    # what each limit does to a connection is proved in tests/protocol/test_http2.py and
    # tests/grpc/test_http2_server.py; here, that the broker's settings are the limits it serves with
    config = BrokerConfig(
        grpc_max_concurrent_streams=7,
        grpc_max_header_list_size=2048,
        grpc_control_frame_burst=30,
        grpc_control_frames_per_second=5,
        grpc_max_calls_in_flight=3,
        grpc_client_idle_time_mills=1500,
    )
    limits = connection_limits(config)
    assert (limits.protocol.max_concurrent_streams, limits.protocol.max_header_list_size) == (7, 2048)
    assert (limits.protocol.control_frame_burst, limits.protocol.control_frames_per_second) == (30, 5.0)
    assert (limits.max_calls_in_flight, limits.idle_timeout) == (3, 1.5)
