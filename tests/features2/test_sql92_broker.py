"""SQL92 subscriptions served by the broker: exact matches, the enablePropertyFilter switch, errors."""

from __future__ import annotations

import json
from pathlib import Path

from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.group_bodies import SubscriptionData
from tests.features2.conftest import Cluster, async_test, heartbeat, pull, records, running, send

TOPIC = "Filtered"
EXPRESSION = "n >= 5 AND color = 'red' AND region IS NOT NULL"


async def fill(cluster: Cluster) -> None:
    for n in range(20):
        props = {"n": str(n), "color": "red" if n % 2 else "blue", "TAGS": "T"}
        if n != 7:
            props["region"] = "eu"
        response = await send(cluster, TOPIC, f"m{n}".encode(), queue_id=0, props=props)
        assert response.code == ResponseCode.SUCCESS


async def check_client_config(cluster: Cluster, expression: str) -> tuple[int, str | None]:
    body = {
        "clientId": "c1",
        "group": "CG",
        "subscriptionData": {"topic": TOPIC, "subString": expression, "expressionType": "SQL92"},
    }
    response = await cluster.call(RequestCode.CHECK_CLIENT_CONFIG, body=json.dumps(body).encode())
    return response.code, response.remark


@async_test()
async def test_sql92_subscription_receives_exactly_the_matching_messages(tmp_path: Path) -> None:
    async with running(tmp_path, enable_property_filter=True) as cluster:
        await fill(cluster)
        response = await pull(cluster, TOPIC, 0, 0, subscription=EXPRESSION, expressionType="SQL92")
        assert response.code == ResponseCode.SUCCESS
        assert [m.body for m in records(response)] == [b"m5", b"m9", b"m11", b"m13", b"m15", b"m17", b"m19"]
        assert response.ext_fields["nextBeginOffset"] == "20"

        # only non-matching messages left: retry immediately from past them, like tags
        response = await pull(
            cluster, TOPIC, 0, 0, maxMsgNums=4, subscription="n > 100", expressionType="SQL92"
        )
        assert response.code == ResponseCode.PULL_RETRY_IMMEDIATELY
        assert int(response.ext_fields["nextBeginOffset"]) > 0
        assert (await check_client_config(cluster, EXPRESSION))[0] == ResponseCode.SUCCESS


@async_test()
async def test_heartbeat_registered_sql92_subscription_filters_pulls(tmp_path: Path) -> None:
    async with running(tmp_path, enable_property_filter=True) as cluster:
        await fill(cluster)
        sub = SubscriptionData(
            topic=TOPIC, subString="n IN ('3', '4') OR n BETWEEN 18 AND 30", expressionType="SQL92"
        )
        assert (await heartbeat(cluster.client, cluster.addr, "c1", consumer="CG", subs=[sub])).code == 0
        response = await pull(cluster, TOPIC, 0, 0, sysFlag=0, subVersion=0)
        assert [m.body for m in records(response)] == [b"m3", b"m4", b"m18", b"m19"]

        bad = SubscriptionData(topic=TOPIC, subString="n >> 3", expressionType="SQL92")
        await heartbeat(cluster.client, cluster.addr, "c1", consumer="CG", subs=[bad])
        response = await pull(cluster, TOPIC, 0, 0, sysFlag=0, subVersion=0)
        assert response.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
        assert response.remark is not None
        assert response.remark.startswith('Invalid MessageSelector. Encountered ">"')
        assert response.remark.endswith("at position 3")


@async_test()
async def test_invalid_expression_is_a_parse_failure_with_the_parsers_message(tmp_path: Path) -> None:
    async with running(tmp_path, enable_property_filter=True) as cluster:
        await fill(cluster)
        response = await pull(cluster, TOPIC, 0, 0, subscription="color = 'red", expressionType="SQL92")
        assert response.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
        assert response.remark is not None and "position 8" in response.remark
        code, remark = await check_client_config(cluster, "n BETWEEN 9 AND 1")
        assert code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
        assert remark is not None and "must less than or equal to" in remark


@async_test()
async def test_filters_are_refused_while_enable_property_filter_is_off(tmp_path: Path) -> None:
    async with running(tmp_path) as cluster:
        await fill(cluster)
        expected = (
            ResponseCode.SYSTEM_ERROR,
            "The broker does not support consumer to filter message by SQL92",
        )
        response = await pull(cluster, TOPIC, 0, 0, subscription=EXPRESSION, expressionType="SQL92")
        assert (response.code, response.remark) == expected
        assert await check_client_config(cluster, EXPRESSION) == expected
        assert (await pull(cluster, TOPIC, 0, 0, subscription="T")).code == ResponseCode.SUCCESS
