"""mqadmin setConsumeMode and setCommitLogReadAheadMode end to end against a real NameServer + broker,
with RocketMQ's printed layouts and bad input.

The topic and group whose mode changes are made here, so the session's ``Orders``/``orders-cg`` stay
as the golden layouts expect; the read-ahead mode is put back to normal at the end."""

from __future__ import annotations

from collections.abc import Callable

from tests.cli.mqadmin.conftest import Cluster, Run
from tests.cli.mqadmin.test_maintenance_commands import one_line_error

Mq = Callable[..., Run]
TOPIC, GROUP = "ModeT", "mode-cg"


def stored_mode(node: Cluster) -> tuple[str, int, bool]:
    from admin.service import AdminService

    async def ask() -> tuple[str, int, bool]:
        async with AdminService([node.namesrv], 10) as service:
            (mode,) = (await service.group_consume_mode(TOPIC, GROUP)).brokers
            return mode.mode, mode.pop_share_queue_num, mode.stored

    return node.call(ask())


def test_set_consume_mode(mqadmin: Mq, node: Cluster) -> None:
    assert mqadmin("updateTopic", "-t", TOPIC, "-c", "DefaultCluster").code == 0
    assert mqadmin("updateSubGroup", "-g", GROUP, "-c", "DefaultCluster").code == 0
    assert stored_mode(node) == ("PULL", 0, False)  # nothing set: the broker's default

    by_broker = mqadmin("setConsumeMode", "-b", node.broker, "-t", TOPIC, "-g", GROUP, "-m", "POP", "-q", "2")
    assert by_broker.code == 0, by_broker.err
    assert by_broker.out == (
        f"set consume mode to {node.broker} success.\n"
        f"topic[{TOPIC}] group[{GROUP}] consume mode[POP] popShareQueueNum[2]"
    )
    assert stored_mode(node) == ("POP", 2, True)

    by_cluster = mqadmin(
        "setConsumeMode", "--clusterName", "DefaultCluster", "--topicName", TOPIC, "--groupName", GROUP,
        "--mode", "PULL",
    )  # fmt: skip
    assert by_cluster.out == (
        f"set consume mode to {node.broker} success.\n"
        f"topic[{TOPIC}] group[{GROUP}] consume mode[PULL] popShareQueueNum[0]"
    )
    assert stored_mode(node) == ("PULL", 0, True)


def test_set_consume_mode_bad_input(mqadmin: Mq, node: Cluster) -> None:
    base = ("setConsumeMode", "-c", "DefaultCluster", "-g", "orders-cg")
    one_line_error(mqadmin(*base, "-t", "Orders", "-m", "pop"))  # Java's valueOf: exact names only
    one_line_error(mqadmin(*base, "-t", "Orders", "-m", "POP", "-q", "many"))
    unknown_topic = mqadmin(*base, "-t", "NoSuchTopic", "-m", "POP")
    one_line_error(unknown_topic)
    assert "NoSuchTopic" in unknown_topic.err
    one_line_error(mqadmin("setConsumeMode", "-b", node.broker, "-t", "Orders", "-g", "nobody", "-m", "POP"))
    missing = mqadmin("setConsumeMode", "-t", "Orders", "-g", "orders-cg")
    assert missing.code == 2 and missing.err == "Missing required option: m\n"
    neither = mqadmin("setConsumeMode", "-t", "Orders", "-g", "orders-cg", "-m", "POP")
    assert neither.code == 0 and neither.out.startswith("usage: mqadmin setConsumeMode")


def test_set_commitlog_read_ahead_mode(mqadmin: Mq, node: Cluster) -> None:
    by_broker = mqadmin("setCommitLogReadAheadMode", "-b", node.broker, "-m", "1")
    assert by_broker.code == 0, by_broker.err
    assert by_broker.out == (
        f" ============{node.broker}============\n"
        "commitLog set readAhead mode rstStrset commitlog readahead mode success, mode: 1\n"
    )
    assert node.node.broker is not None and not node.node.broker.store_config.data_read_ahead_enable

    by_cluster = mqadmin("setCommitLogReadAheadMode", "-c", "DefaultCluster", "-m", "0")
    assert by_cluster.out == (
        f" ============Master: {node.broker}============\n"
        "commitLog set readAhead mode rstStrset commitlog readahead mode success, mode: 0\n"
    )
    assert node.node.broker.store_config.data_read_ahead_enable

    bad = mqadmin("setCommitLogReadAheadMode", "-b", node.broker, "-m", "2")
    assert bad.code == 0 and bad.out == "set the read mode error; 0 is default, 1 random read\n"
    one_line_error(mqadmin("setCommitLogReadAheadMode", "-c", "NoSuchCluster", "-m", "1"))
    one_line_error(mqadmin("setCommitLogReadAheadMode", "-b", "127.0.0.1:1", "-m", "1"))
    assert node.node.broker.store_config.data_read_ahead_enable
