"""JSON output of ``broker status``, ``dlq resend``, ``group create|describe|delete``, ``acl list`` and
``--watch``, and the output format of ``spark`` and ``profile`` commands, against real servers."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import Result

from broker.client.remoting_client import RemotingClient
from broker.namesrv.config import NamesrvConfig
from broker.node import Node, NodePlan
from broker.protocol.msgid import UniqKeyGenerator
from broker.server.config import BrokerConfig
from tests.cli_online.conftest import TOPIC, Cluster, _start_loop, interrupt_watch_after, send
from tests.store.helpers import small_config

Rmq = Callable[..., Result]
DLQ_GROUP = "fixes-dlq-cg"


@dataclass
class Own:
    """A NameServer + broker of this module only (its writes cannot disturb the session's node), and a
    NameServer no broker registers with."""

    loop: asyncio.AbstractEventLoop
    namesrv: str
    broker: str
    empty_namesrv: str
    uniq_keys: list[str]


@pytest.fixture(scope="module")
def own(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Own]:
    from admin.service import AdminService
    from broker.protocol.bodies import TopicConfig

    store = tmp_path_factory.mktemp("fixes-store")

    def namesrv_config(name: str) -> NamesrvConfig:
        config = NamesrvConfig.in_folder(store / name)
        config.listen_port = 0
        return config

    node = Node(
        NodePlan(
            namesrv=namesrv_config("namesrv"),
            broker=BrokerConfig(broker_name="broker-z", listen_host="127.0.0.1", listen_port=0),
            store=small_config(store),
        )
    )
    bare = Node(NodePlan(namesrv=namesrv_config("bare")))
    loop = _start_loop()

    async def setup() -> tuple[str, str, str, list[str]]:
        await node.start()
        await bare.start()
        assert node.namesrv is not None and node.broker is not None and bare.namesrv is not None
        namesrv, broker = f"127.0.0.1:{node.namesrv.port}", node.broker.address
        dlq = f"%DLQ%{DLQ_GROUP}"
        async with AdminService([namesrv], 10) as service:
            await service.wait_ready(20)
            await service.api.create_topic(broker, TopicConfig(dlq, 1, 1, 6))
        client, gen, keys = RemotingClient(), UniqKeyGenerator(), []
        try:
            for i in range(2):
                keys.append(gen.next())
                await send(
                    client, broker, dlq, f"dead {i}".encode(), 0, DLQ_ORIGIN_TOPIC=TOPIC, UNIQ_KEY=keys[-1]
                )
        finally:
            await client.close()
        return namesrv, broker, f"127.0.0.1:{bare.namesrv.port}", keys

    namesrv, broker, empty, keys = asyncio.run_coroutine_threadsafe(setup(), loop).result(60)
    yield Own(loop, namesrv, broker, empty, keys)

    async def teardown() -> None:
        await node.stop()
        await bare.stop()

    asyncio.run_coroutine_threadsafe(teardown(), loop).result(60)
    loop.call_soon_threadsafe(loop.stop)


def _json(result: Result) -> object:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_broker_status_has_ha_like_cluster_list(cluster: Cluster, rmq: Rmq) -> None:
    ns = ("-n", cluster.namesrv, "-o", "json")
    status = _json(rmq("broker", "status", *ns))
    [listed] = _json(rmq("cluster", "list", *ns))["brokers"]  # type: ignore[index]
    assert isinstance(status, dict) and status["ha"] is not None
    assert status["ha"]["master"] is True and set(status["ha"]) == set(listed["ha"])
    assert status["ha"]["slaves"] == listed["ha"]["slaves"] == 0
    table = rmq("broker", "status", "-n", cluster.namesrv).stdout
    assert any(line.split()[:3] == ["replication", "no", "slave"] for line in table.splitlines())


def test_broker_status_of_an_unregistered_broker_is_unknown(own: Own, cluster: Cluster, rmq: Rmq) -> None:
    status = _json(rmq("broker", "status", "-b", cluster.broker, "-n", own.empty_namesrv, "-o", "json"))
    assert isinstance(status, dict)
    assert (status["role"], status["brokerId"], status["address"]) == ("UNKNOWN", -1, cluster.broker)
    assert status["reachable"] is True
    assert "UNKNOWN" in rmq("broker", "status", "-b", cluster.broker, "-n", own.empty_namesrv).stdout


def test_dlq_resend_gives_msg_id_and_uniq_key(own: Own, rmq: Rmq) -> None:
    from broker.protocol.msgid import decode_offset_msg_id

    ns = ("-n", own.namesrv, "-o", "json")
    report = _json(rmq("dlq", "resend", DLQ_GROUP, "--all", "--dry-run", *ns))
    assert isinstance(report, dict)
    messages = report["messages"]
    assert [m["uniqKey"] for m in messages] == own.uniq_keys
    browsed = _json(rmq("dlq", "browse", DLQ_GROUP, *ns))["messages"]  # type: ignore[index]
    assert [m["msgId"] for m in messages] == [m["msgId"] for m in browsed]
    assert [decode_offset_msg_id(m["msgId"]).offset for m in messages] == [
        m["commitLogOffset"] for m in browsed
    ]
    text = rmq("dlq", "resend", DLQ_GROUP, "--all", "--dry-run", "-n", own.namesrv, "-o", "text").stdout
    assert "UNIQ KEY" in text and own.uniq_keys[0] in text and browsed[0]["msgId"] in text


def test_watch_json_is_one_line_per_refresh(
    cluster: Cluster, rmq: Rmq, monkeypatch: pytest.MonkeyPatch
) -> None:
    interrupt_watch_after(monkeypatch, 3)
    result = rmq("cluster", "list", "--watch", "1", "-n", cluster.namesrv, "-o", "json")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert len(lines) == 3 and result.stdout.endswith("\n")
    assert all(json.loads(line)["brokers"][0]["address"] == cluster.broker for line in lines)
    once = rmq("cluster", "list", "-n", cluster.namesrv, "-o", "json").stdout
    assert once.startswith("{\n  ")  # without --watch: one indented document, as before


def _fake_spark(monkeypatch: pytest.MonkeyPatch) -> None:
    from admin.pipelines import jobs
    from cli import spark

    monkeypatch.setattr(spark, "_session", lambda master: contextlib.nullcontext())
    monkeypatch.setattr(
        jobs, "archive", lambda session, options, out, **kw: jobs.ArchiveResult(3, 7, ["2024-01-02"], out)
    )


def test_spark_follows_env_and_profile_output(
    rmq: Rmq, config_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_spark(monkeypatch)
    args = ("spark", "archive", TOPIC, "--out", str(tmp_path / "out"), "--store", str(tmp_path))
    assert rmq(*args).stdout.lstrip().startswith("written")  # table by default
    monkeypatch.setenv("RMQ_OUTPUT", "json")
    expected = {"rows": 3, "total": 7, "dates": ["2024-01-02"], "path": str(tmp_path / "out")}
    assert _json(rmq(*args)) == expected
    assert rmq(*args, "-o", "text").stdout.startswith("written")  # -o beats the environment
    monkeypatch.delenv("RMQ_OUTPUT")
    assert rmq("profile", "create", "j", "--default-output", "json").exit_code == 0
    assert _json(rmq(*args))["rows"] == 3  # type: ignore[index]


def test_profile_list_follows_env_and_profile_output(
    rmq: Rmq, config_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert rmq("profile", "create", "t", "-n", "t:1").exit_code == 0
    assert rmq("profile", "list").stdout.lstrip().startswith("current")  # table
    monkeypatch.setenv("RMQ_OUTPUT", "json")
    assert _json(rmq("profile", "list"))["current"] == "t"  # type: ignore[index]
    assert rmq("profile", "list", "-o", "text").stdout.startswith("CURRENT")
    monkeypatch.delenv("RMQ_OUTPUT")
    assert rmq("profile", "create", "j", "--default-output", "json", "--use").exit_code == 0
    assert _json(rmq("profile", "list"))["current"] == "j"  # type: ignore[index]
    # settings that do not resolve do not stop the commands that repair them
    monkeypatch.setenv("RMQ_PROFILE", "missing")
    listing = rmq("profile", "list")
    assert listing.exit_code == 0 and listing.stdout.lstrip().startswith("current")


def test_acl_on_a_broker_without_acl(cluster: Cluster, rmq: Rmq, monkeypatch: pytest.MonkeyPatch) -> None:
    ns = ("-b", cluster.broker, "-n", cluster.namesrv)
    for args in (("list",), ("get", "ak-fixes"), ("delete", "ak-fixes", "--yes")):
        result = rmq("acl", *args, *ns)
        assert result.exit_code == 1 and result.stdout == ""
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and "ACL is not enabled on broker broker-a" in lines[0], lines
        assert "not supported" not in lines[0] and "  " not in lines[0]
    monkeypatch.setenv("AK_SECRET", "secret-1234")
    created = rmq("acl", "create", "ak-fixes", "--secret-key-env", "AK_SECRET", *ns)
    assert created.exit_code == 1 and "ACL is not enabled" in created.stderr


def _views(result: Result) -> list[dict[str, Any]]:
    views = _json(result)
    assert isinstance(views, list)
    return views


def test_acl_file_view_uses_null(rmq: Rmq, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    acl_file = tmp_path / "plain_acl.yml"
    monkeypatch.setenv("AK_SECRET", "secret-1234")
    assert rmq("acl", "create", "ak-fixes", "--secret-key-env", "AK_SECRET", "-f", acl_file).exit_code == 0
    again = rmq("acl", "create", "ak-fixes", "--secret-key-env", "AK_SECRET", "-f", acl_file)
    assert again.exit_code == 1 and "exists already" in again.stderr  # as `topic create` of an existing topic
    [view] = _views(rmq("acl", "list", "-f", acl_file, "-o", "json"))
    assert view["broker"] == str(acl_file) and view["address"] is None and view["version"] is None
    [account] = view["accounts"]
    assert account["accessKey"] == "ak-fixes" and account["whiteRemoteAddress"] is None
    white = rmq("acl", "update", "ak-fixes", "--white-address", "10.0.0.*", "-f", acl_file)
    assert white.exit_code == 0, white.output
    [view] = _views(rmq("acl", "list", "-f", acl_file, "-o", "json"))
    assert view["accounts"][0]["whiteRemoteAddress"] == "10.0.0.*"
    table = rmq("acl", "list", "-f", acl_file).stdout
    assert table.splitlines()[0].strip() == str(acl_file)  # the title is the path alone


def test_group_create_describe_delete_name_brokers_alike(own: Own, rmq: Rmq) -> None:
    ns = ("-n", own.namesrv, "-o", "json")
    created = _json(rmq("group", "create", "fixes-cg", *ns))
    assert isinstance(created, dict) and created["group"] == "fixes-cg"
    assert created["addresses"] == [own.broker]  # addresses
    described = _json(rmq("group", "describe", "fixes-cg", *ns))
    assert isinstance(described, dict) and described["brokers"] == ["broker-z"]  # broker names
    deleted = _json(rmq("group", "delete", "fixes-cg", "--yes", *ns))
    assert deleted == {"group": "fixes-cg", "addresses": [own.broker]}
    text = rmq("group", "delete", "fixes-cg", "--yes", "-n", own.namesrv)
    assert text.exit_code == 1
