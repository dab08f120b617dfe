"""What an operator ran into: a dashboard without a terminal, an address without a port, a missing
topic answered with an empty table, DLQ offsets and wait timeouts that made no sense, and mqadmin's
consumerConnection and queryMsgByKey succeeding where Java fails."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable

import pytest
from typer.testing import Result

from tests.cli.online.conftest import GROUP, Cluster

Rmq = Callable[..., Result]
pytestmark = pytest.mark.servers


def one_line(result: Result, code: int) -> str:
    assert result.exit_code == code, result.output
    assert result.stderr.count("\n") == 1, result.stderr
    return result.stderr


def test_dashboard_without_a_terminal_is_refused(rmq: Rmq) -> None:
    # CliRunner's stdin and stdout are not terminals, as `rmq dashboard </dev/null >file` has it
    assert "needs a terminal" in one_line(rmq("dashboard", "-n", "127.0.0.1:1"), 2)


@pytest.mark.parametrize("addr", ["127.0.0.1", "127.0.0.1:", "127.0.0.1:port", "127.0.0.1:99999"])
def test_an_address_without_a_port_is_a_usage_error(rmq: Rmq, addr: str) -> None:
    assert "is not HOST:PORT" in one_line(rmq("topic", "list", "-n", addr), 2)


def test_lag_of_a_missing_topic_fails(cluster: Cluster, rmq: Rmq) -> None:
    err = one_line(rmq("group", "lag", GROUP, "-t", "NoSuchTopic", "-n", cluster.namesrv), 1)
    assert "NoSuchTopic not found" in err


def test_dlq_resend_offsets_are_checked(cluster: Cluster, rmq: Rmq) -> None:
    ns = ("-n", cluster.namesrv, "--yes")
    assert "0 or more" in one_line(rmq("dlq", "resend", GROUP, "--offset", "-1", *ns), 2)


def test_wait_refuses_a_negative_timeout(cluster: Cluster, rmq: Rmq) -> None:
    assert "--timeout" in one_line(rmq("wait", "ready", "--timeout", "-1", "-n", cluster.namesrv), 2)


def _mqadmin(namesrv: str, *args: str) -> tuple[int, str, str]:
    from cli.mqadmin import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([*args, "-n", namesrv])
    return code, out.getvalue(), err.getvalue()


def test_mqadmin_consumer_connection_of_an_offline_group_fails(cluster: Cluster, config_file: object) -> None:
    from admin.models import GroupSpec
    from admin.service import AdminService

    async def create() -> None:
        async with AdminService([cluster.namesrv], 10) as service:
            await service.group_create(GroupSpec("offline-cg"))

    cluster.call(create())
    code, out, err = _mqadmin(cluster.namesrv, "consumerConnection", "-g", "offline-cg")
    assert (code, out) == (1, "") and "CODE: 206" in err and "not online" in err


def test_mqadmin_query_by_key_of_a_missing_topic_fails(cluster: Cluster, config_file: object) -> None:
    code, out, err = _mqadmin(cluster.namesrv, "queryMsgByKey", "-t", "NoSuchTopic", "-k", "k")
    assert (code, out) == (1, "") and "NoSuchTopic" in err
