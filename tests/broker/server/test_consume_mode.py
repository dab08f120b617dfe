"""Broker-side load balancing (SET_MESSAGE_REQUEST_MODE 401, GET_ALL_MESSAGE_REQUEST_MODE 402,
QUERY_ASSIGNMENT 400) and the CommitLog read-ahead mode (SET_COMMITLOG_READ_MODE 2004) against a live
broker over TCP, with the bodies a RocketMQ 5 Java client and mqadmin send."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from broker.client.remoting_client import RemotingClient
from broker.protocol.bodies import MessageModel, MessageQueue, load_json
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.remoting import RemotingCommand, make_request
from broker.protocol.request_mode import (
    MessageRequestMode,
    MessageRequestModeSerializeWrapper,
    QueryAssignmentRequestBody,
    QueryAssignmentResponseBody,
    SetMessageRequestModeRequestBody,
)
from broker.server.broker import Broker
from broker.server.config import load_broker_settings
from broker.settings import SettingsError
from tests.broker.server.conftest import async_test, call, heartbeat_body, running_broker
from tests.broker.server.test_admin import create

TOPIC, GROUP = "Modes", "modes-cg"
POP = MessageRequestMode.POP


async def prepare(client: RemotingClient, broker: Broker, queues: int = 4) -> None:
    assert (await call(client, broker, RequestCode.UPDATE_AND_CREATE_TOPIC, create(TOPIC, queues))).code == 0
    group = json.dumps({"groupName": GROUP}).encode()
    assert (await call(client, broker, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=group)).code == 0


async def set_mode(
    client: RemotingClient,
    broker: Broker,
    mode: object,
    share: int = 0,
    topic: str = TOPIC,
    group: str = GROUP,
) -> RemotingCommand:
    name = mode.name if isinstance(mode, MessageRequestMode) else mode
    fields = {"topic": topic, "consumerGroup": group, "mode": name, "popShareQueueNum": share}
    body = json.dumps(fields).encode()
    return await call(client, broker, RequestCode.SET_MESSAGE_REQUEST_MODE, body=body)


async def online(broker: Broker, *client_ids: str) -> list[RemotingClient]:
    """One connection per consumer, each announcing itself with a heartbeat."""
    clients = []
    for cid in client_ids:
        c = RemotingClient()
        body = heartbeat_body(cid, GROUP, {TOPIC: "*"})
        assert (await call(c, broker, RequestCode.HEART_BEAT, body=body)).code == 0
        clients.append(c)
    return clients


async def assignment(
    client: RemotingClient,
    broker: Broker,
    client_id: str,
    strategy: str = "AVG",
    model: MessageModel = MessageModel.CLUSTERING,
    topic: str = TOPIC,
) -> tuple[RemotingCommand, list[tuple[int, MessageRequestMode]]]:
    body = QueryAssignmentRequestBody(topic, GROUP, client_id, strategy, model).to_json()
    r = await call(client, broker, RequestCode.QUERY_ASSIGNMENT, body=body)
    if r.code != ResponseCode.SUCCESS:
        return r, []
    got = QueryAssignmentResponseBody.from_json(r.body or b"{}").messageQueueAssignments or []
    queues = sorted((a.messageQueue or MessageQueue()).queueId for a in got)
    modes = {a.mode for a in got}
    assert len(modes) <= 1
    return r, [(q, next(iter(modes))) for q in queues]


def ids(got: list[tuple[int, MessageRequestMode]]) -> list[int]:
    return [q for q, _ in got]


# -- SET_MESSAGE_REQUEST_MODE / GET_ALL_MESSAGE_REQUEST_MODE -----------------------------------------
@async_test
async def test_set_mode_is_kept_in_the_config_folder_across_restarts(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (broker, client):
        await prepare(client, broker)
        r = await set_mode(client, broker, POP, 2)
        assert r.code == ResponseCode.SUCCESS, r.remark
        r = await call(client, broker, RequestCode.GET_ALL_MESSAGE_REQUEST_MODE)
        table = MessageRequestModeSerializeWrapper.from_json(r.body or b"").messageRequestModeMap
        assert table == {TOPIC: {GROUP: SetMessageRequestModeRequestBody(TOPIC, GROUP, POP, 2)}}
    saved = load_json((tmp_path / "config" / "messageRequestMode.json").read_text())
    assert saved["messageRequestModeMap"][TOPIC][GROUP] == {
        "consumerGroup": GROUP, "mode": "POP", "popShareQueueNum": 2, "topic": TOPIC,
    }  # fmt: skip
    async with running_broker(tmp_path) as (broker, client):
        r = await call(client, broker, RequestCode.GET_ALL_MESSAGE_REQUEST_MODE)
        assert b'"mode":"POP"' in (r.body or b"")


@async_test
async def test_set_mode_refuses_bad_input_with_a_readable_remark(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (broker, client):
        await prepare(client, broker)
        r = await set_mode(client, broker, "PUSH")
        assert r.code == ResponseCode.INVALID_PARAMETER and "mode" in (r.remark or "")
        r = await set_mode(client, broker, POP, topic="NoSuchTopic")
        assert r.code == ResponseCode.TOPIC_NOT_EXIST and "NoSuchTopic" in (r.remark or "")
        r = await set_mode(client, broker, POP, group="no-such-group")
        assert r.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST and "no-such-group" in (r.remark or "")
        r = await set_mode(client, broker, POP, topic=f"%RETRY%{GROUP}")
        assert r.code == ResponseCode.NO_PERMISSION and "retry topic" in (r.remark or "")
        for body in (b"", b"{not json", b"[1]", b'{"topic":"Modes"}'):
            r = await call(client, broker, RequestCode.SET_MESSAGE_REQUEST_MODE, body=body)
            assert r.code == ResponseCode.INVALID_PARAMETER and r.remark, body
        r = await call(client, broker, RequestCode.GET_ALL_MESSAGE_REQUEST_MODE)
        assert MessageRequestModeSerializeWrapper.from_json(r.body or b"").messageRequestModeMap == {}
    assert not (tmp_path / "config" / "messageRequestMode.json").exists()


# -- QUERY_ASSIGNMENT --------------------------------------------------------------------------------
@async_test
async def test_pull_mode_splits_the_queues_among_online_consumers(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (broker, client):
        await prepare(client, broker)
        consumers = await online(broker, "10.0.0.1@a", "10.0.0.2@b")
        try:
            r, a = await assignment(client, broker, "10.0.0.1@a")
            assert r.code == ResponseCode.SUCCESS and a == [
                (0, MessageRequestMode.PULL),
                (1, MessageRequestMode.PULL),
            ]
            assert ids((await assignment(client, broker, "10.0.0.2@b"))[1]) == [2, 3]
            assert ids((await assignment(client, broker, "10.0.0.1@a", "AVG_BY_CIRCLE"))[1]) == [0, 2]
            assert ids((await assignment(client, broker, "10.0.0.9@gone"))[1]) == []  # not in the group
            every = await assignment(client, broker, "10.0.0.1@a", model=MessageModel.BROADCASTING)
            assert ids(every[1]) == [0, 1, 2, 3]
        finally:
            for c in consumers:
                await c.close()


@async_test
async def test_pop_mode_lets_consumers_share_queues(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (broker, client):
        await prepare(client, broker)
        consumers = await online(broker, "c1", "c2", "c3")
        try:
            assert (await set_mode(client, broker, POP, 0)).code == 0
            # no sharing limit: each consumer pops every queue of the broker (queue id -1)
            assert (await assignment(client, broker, "c2"))[1] == [(-1, POP)]
            assert (await set_mode(client, broker, POP, 1)).code == 0
            # its own queue plus the next consumer's: c1 has 0-1 and c2's 2; c3 has 3 and c1's 0-1
            assert (await assignment(client, broker, "c1"))[1] == [(0, POP), (1, POP), (2, POP)]
            assert ids((await assignment(client, broker, "c3"))[1]) == [0, 1, 3]
        finally:
            for c in consumers:
                await c.close()


@async_test
async def test_default_mode_settings_apply_where_no_mode_was_set(tmp_path: Path) -> None:
    settings = {"default_message_request_mode": "POP", "default_pop_share_queue_num": 1}
    async with running_broker(tmp_path, **settings) as (broker, client):
        await prepare(client, broker)
        retry = f"%RETRY%{GROUP}"
        await call(client, broker, RequestCode.UPDATE_AND_CREATE_TOPIC, create(retry, 2))
        consumers = await online(broker, "c1", "c2", "c3")
        try:
            # POP by default, sharing with the next consumer, as if set with popShareQueueNum 1
            assert (await assignment(client, broker, "c1"))[1] == [(0, POP), (1, POP), (2, POP)]
            # retry topics stay PULL whatever the default
            assert (await assignment(client, broker, "c1", topic=retry))[1] == [(0, MessageRequestMode.PULL)]
            # a mode set explicitly wins over the default
            assert (await set_mode(client, broker, MessageRequestMode.PULL)).code == 0
            assert (await assignment(client, broker, "c1"))[1] == [
                (0, MessageRequestMode.PULL),
                (1, MessageRequestMode.PULL),
            ]
        finally:
            for c in consumers:
                await c.close()


@async_test
async def test_default_pop_share_queue_num_minus_one_pops_every_queue(tmp_path: Path) -> None:
    async with running_broker(tmp_path, default_message_request_mode="POP") as (broker, client):
        await prepare(client, broker)
        consumers = await online(broker, "c1", "c2")
        try:
            assert (await assignment(client, broker, "c2"))[1] == [(-1, POP)]
        finally:
            for c in consumers:
                await c.close()


@async_test
async def test_without_server_load_balancing_every_consumer_gets_every_queue(tmp_path: Path) -> None:
    async with running_broker(tmp_path, server_load_balancer_enable=False) as (broker, client):
        await prepare(client, broker)
        # no consumer online and a strategy the broker does not know: nothing is balanced anyway
        r, got = await assignment(client, broker, "c1", strategy="MY_OWN")
        assert r.code == ResponseCode.SUCCESS and got == [(q, MessageRequestMode.PULL) for q in range(4)]
        assert (await set_mode(client, broker, POP, 1)).code == 0
        assert (await assignment(client, broker, "c1"))[1] == [(q, POP) for q in range(4)]


def test_default_message_request_mode_setting_is_checked() -> None:
    broker, _ = load_broker_settings(overrides=["defaultMessageRequestMode=pop"], env={})
    assert broker.default_message_request_mode == "POP"
    assert broker.default_pop_share_queue_num == -1 and broker.server_load_balancer_enable
    with pytest.raises(SettingsError, match="defaultMessageRequestMode: 'PUSH' is not PULL or POP"):
        load_broker_settings(overrides=["defaultMessageRequestMode=PUSH"], env={})


@async_test
async def test_query_assignment_refuses_bad_input_with_a_readable_remark(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (broker, client):
        await prepare(client, broker)
        r, _ = await assignment(client, broker, "c1")
        assert r.code == ResponseCode.CONSUMER_NOT_ONLINE and GROUP in (r.remark or "")
        r, _ = await assignment(client, broker, "c1", strategy="MY_OWN")
        assert r.code == ResponseCode.INVALID_PARAMETER and "MY_OWN" in (r.remark or "")
        r, _ = await assignment(client, broker, "c1", topic="NoSuchTopic")
        assert r.code == ResponseCode.TOPIC_NOT_EXIST and "NoSuchTopic" in (r.remark or "")
        # a retry topic not created yet: nothing to balance, and the client keeps what it has
        r, got = await assignment(client, broker, "c1", topic=f"%RETRY%{GROUP}")
        assert r.code == ResponseCode.SUCCESS and got == [] and load_json(r.body or b"") == {}
        for body in (b"", b"{]", b'{"topic":"Modes","consumerGroup":"g","clientId":"c","messageModel":"X"}'):
            r = await call(client, broker, RequestCode.QUERY_ASSIGNMENT, body=body)
            assert r.code == ResponseCode.INVALID_PARAMETER and r.remark, body


# -- SET_COMMITLOG_READ_MODE -------------------------------------------------------------------------
def commitlog_advice(store: Path) -> list[bool]:
    """For each CommitLog map of this process: whether it is advised for random reads (``rr``)."""
    flags, current = [], None
    for line in Path("/proc/self/smaps").read_text().splitlines():
        parts = line.split()
        if "-" in parts[0] and len(parts) >= 5 and not parts[0].endswith(":"):
            current = parts[5] if len(parts) > 5 else ""
        elif parts[0] == "VmFlags:" and current and current.startswith(str(store / "commitlog")):
            flags.append("rr" in parts[1:])
    return flags


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="madvise flags are read from /proc")
@async_test
async def test_read_ahead_mode_advises_every_commitlog_file(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (broker, client):
        await call(client, broker, RequestCode.UPDATE_AND_CREATE_TOPIC, create(TOPIC, 1))
        await broker.write(broker.store.commitlog.writable, 100)  # the first CommitLog file
        assert commitlog_advice(tmp_path) == [False]
        r = await call(client, broker, RequestCode.SET_COMMITLOG_READ_MODE, READ_AHEAD_MODE="1")
        assert r.code == ResponseCode.SUCCESS and r.remark == "set commitlog readahead mode success, mode: 1"
        assert commitlog_advice(tmp_path) == [True]
        # files created later take the same advice
        await broker.write(broker.store.commitlog.files.create_file, broker.store.commitlog.file_size)
        assert commitlog_advice(tmp_path) == [True, True]
        r = await call(client, broker, RequestCode.SET_COMMITLOG_READ_MODE, READ_AHEAD_MODE="0")
        assert r.remark == "set commitlog readahead mode success, mode: 0"
        assert commitlog_advice(tmp_path) == [False, False]
        assert broker.store_config.data_read_ahead_enable

        for ext in ({"READ_AHEAD_MODE": "2"}, {"READ_AHEAD_MODE": "random"}, {}):
            r = await call(client, broker, RequestCode.SET_COMMITLOG_READ_MODE, **ext)
            assert r.code == ResponseCode.INVALID_PARAMETER and r.remark, ext
        assert commitlog_advice(tmp_path) == [False, False]


@async_test
async def test_the_default_mode_changes_at_runtime_through_update_broker_config(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as (broker, client):
        await prepare(client, broker)
        consumers = await online(broker, "c1")
        try:
            assert (await assignment(client, broker, "c1"))[1][0][1] == MessageRequestMode.PULL
            update = make_request(RequestCode.UPDATE_BROKER_CONFIG)
            update.body = b"defaultMessageRequestMode=pop\n"
            r = await client.invoke(broker.address, update, 5)
            assert r.code == ResponseCode.SUCCESS, r.remark
            assert (await assignment(client, broker, "c1"))[1] == [(-1, POP)]
            update.body = b"defaultMessageRequestMode=SIDEWAYS\n"
            refused = await client.invoke(broker.address, update, 5)
            assert refused.code == ResponseCode.INVALID_PARAMETER and "SIDEWAYS" in (refused.remark or "")
            assert (await assignment(client, broker, "c1"))[1] == [(-1, POP)]
        finally:
            for c in consumers:
                await c.close()
