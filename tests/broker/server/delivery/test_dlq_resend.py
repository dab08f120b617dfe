"""resend_dead_letters: one, a selection, all, and a dry run, back to the original topic."""

from __future__ import annotations

from pathlib import Path

from broker.client.admin_api import AdminApi
from broker.client.dlq_ops import resend_dead_letters
from broker.client.remoting_client import RemotingClient
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.remoting import make_request
from broker.server.broker import Broker
from tests.broker.server.conftest import async_test, send
from tests.broker.server.delivery.conftest import feature_broker, pull_all, v2_fields
from tests.broker.server.delivery.test_retry_dlq import send_back


async def three_dead_letters(client: RemotingClient, broker: Broker) -> None:
    for i in range(3):
        response = await send(
            client, broker, "Orig", f"m{i}".encode(), queue_id=0, tags=f"t{i}", keys=f"k{i}", user="u"
        )
        assert response.code == ResponseCode.SUCCESS
    for rec in await pull_all(client, broker.address, "Orig", 0):
        assert (await send_back(client, broker, rec, delay=-1)).code == ResponseCode.SUCCESS


@async_test
async def test_dry_run_one_selection_and_all(tmp_path: Path) -> None:
    async with feature_broker(tmp_path) as (broker, client):
        await three_dead_letters(client, broker)
        admin = AdminApi(client)
        originals = {m.body: m for m in await pull_all(client, broker.address, "Orig", 0)}
        calls: list[tuple[int, int]] = []

        dry = await resend_dead_letters(
            admin, broker.address, "G", dry_run=True, progress=lambda d, t: calls.append((d, t))
        )
        assert [(m.dlq_offset, m.topic, m.new_msg_id) for m in dry.messages] == [
            (0, "Orig", None),
            (1, "Orig", None),
            (2, "Orig", None),
        ]
        assert calls == [(1, 3), (2, 3), (3, 3)] and dry.dry_run
        assert len(await pull_all(client, broker.address, "Orig", 0)) == 3

        one = await resend_dead_letters(admin, broker.address, "G", to_topic=True, offsets=[1])
        assert [m.dlq_offset for m in one.resent] == [1] and one.failed == [] and one.missing == []
        picked = await resend_dead_letters(admin, broker.address, "G", to_topic=True, offsets=[0, 2, 7])
        assert [m.dlq_offset for m in picked.resent] == [0, 2] and picked.missing == [7]
        everything = await resend_dead_letters(admin, broker.address, "G", to_topic=True, offsets=None)
        assert len(everything.resent) == 3

        landed = [
            m
            for q in range(4)
            for m in await pull_all(client, broker.address, "Orig", q)
            if m.reconsume_times == 0
        ]
        resent = [
            m for m in landed if m.physical_offset not in {o.physical_offset for o in originals.values()}
        ]
        assert sorted(m.body for m in resent) == [b"m0", b"m0", b"m1", b"m1", b"m2", b"m2"]
        for msg in resent:
            before = originals[msg.body]
            assert (msg.tags, msg.keys, msg.uniq_key) == (before.tags, before.keys, before.uniq_key)
            assert msg.properties["user"] == "u"
            for gone in (
                "RETRY_TOPIC",
                "DLQ_ORIGIN_TOPIC",
                "DLQ_ORIGIN_MESSAGE_ID",
                "ORIGIN_MESSAGE_ID",
                "DELAY",
            ):
                assert gone not in msg.properties
        assert {m.new_msg_id for m in everything.resent} <= {m.offset_msg_id for m in resent}


@async_test
async def test_a_failed_resend_is_reported_and_the_rest_still_go(tmp_path: Path) -> None:
    async with feature_broker(tmp_path, auto_create_topic_enable=False) as (broker, client):
        for body, origin in ((b"lost", "Deleted"), (b"kept", "%RETRY%G")):
            ext = v2_fields("%RETRY%G", f"RETRY_TOPIC\x01{origin}\x02", j="17")
            request = make_request(RequestCode.SEND_MESSAGE_V2, None, body=body, ext_fields=ext)
            assert (await client.invoke(broker.address, request, 5)).code == ResponseCode.SUCCESS
        report = await resend_dead_letters(AdminApi(client), broker.address, "G", to_topic=True)
        assert [(m.dlq_offset, m.topic) for m in report.resent] == [(1, "%RETRY%G")]
        assert [m.dlq_offset for m in report.failed] == [0]
        assert str(int(ResponseCode.TOPIC_NOT_EXIST)) in (report.failed[0].error or "")
        empty = await resend_dead_letters(AdminApi(client), broker.address, "Nobody", offsets=[3])
        assert empty.messages == [] and empty.missing == [3]
