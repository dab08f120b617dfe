"""``rmq spark archive | dlq-report | replay`` end to end, on the shared session and test node."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from typer.testing import CliRunner

from cli.main import app
from tests.spark.conftest import MESSAGES, TOPIC, Cluster

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.servers


def rmq(*args: object, code: int = 0) -> str:
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exit_code == code, result.output
    return result.stdout if code == 0 else result.stderr


def test_archive_then_replay(spark: SparkSession, cluster: Cluster, tmp_path: Path) -> None:
    out = tmp_path / "archive"
    info = json.loads(rmq("spark", "archive", TOPIC, "--out", out, "-n", cluster.namesrv, "-o", "json"))
    assert info["rows"] == info["total"] == MESSAGES
    again = json.loads(rmq("spark", "archive", TOPIC, "--out", out, "-n", cluster.namesrv, "-o", "json"))
    assert (again["rows"], again["total"]) == (0, MESSAGES)  # a second run adds only what is new
    error = rmq(
        "spark", "archive", "NoSuchTopic", "--out", tmp_path / "none", "--store", cluster.store, code=2
    )
    assert [line for line in error.splitlines() if not line.startswith("· ")] == [
        f"rmq: error: topic NoSuchTopic does not exist in the store folder {cluster.store}"
    ]
    dates = [p.name for p in out.iterdir() if p.name.startswith("date=")]
    assert dates and spark.read.parquet(str(out)).count() == MESSAGES
    from_store = tmp_path / "from-store"
    rmq("spark", "archive", TOPIC, "--out", from_store, "--store", cluster.store, "-o", "json")
    assert spark.read.parquet(str(from_store)).count() == MESSAGES
    dry = json.loads(
        rmq(
            "spark",
            "replay",
            "SparkReplay",
            "--parquet",
            out,
            "--dry-run",
            "-n",
            cluster.namesrv,
            "-o",
            "json",
        )
    )
    assert dry == {"rows": MESSAGES, "topic": "SparkReplay", "dryRun": True}
    rmq(
        "spark",
        "replay",
        "SparkReplay",
        "--parquet",
        out,
        "--rate",
        1000,
        "-n",
        cluster.namesrv,
        "-o",
        "json",
    )
    back = (
        spark.read.format("rocketmq")
        .option("nameServer", cluster.namesrv)
        .option("topic", "SparkReplay")
        .load()
    )
    assert sorted(bytes(r.body) for r in back.collect()) == sorted(s.body for s in cluster.sent)


def test_dlq_report(spark: SparkSession, cluster: Cluster, tmp_path: Path) -> None:
    from broker.client.message import Message
    from broker.client.producer import Producer

    async def dead_letters() -> None:
        async with Producer("spark-dlq-pg", cluster.namesrv) as producer:
            for i in range(3):
                await producer.send(
                    Message("%DLQ%spark-cg", b"dead %d" % i, properties={"DLQ_ORIGIN_TOPIC": TOPIC})
                )

    cluster.call(dead_letters())
    out = tmp_path / "report"
    rows = json.loads(
        rmq("spark", "dlq-report", "-n", cluster.namesrv, "--out", out, "--format", "csv", "-o", "json")
    )
    # other tests of the session leave dead letters of their own groups
    mine = [(r["originTopic"], r["messages"]) for r in rows if r["group"] == "spark-cg"]
    assert mine == [(TOPIC, 3)]
    assert any(p.suffix == ".csv" for p in out.iterdir())
    # a DLQ replay commits the group's DLQ offsets: a second one sends nothing again
    replay = ["spark", "replay", "SparkDlqBack", "--dlq", "spark-cg", "-n", cluster.namesrv, "-o", "json"]
    assert json.loads(rmq(*replay))["rows"] == 3
    assert json.loads(rmq(*replay))["rows"] == 0


@pytest.mark.timeout(300)
def test_a_dry_run_read_by_head_ends_cleanly(cluster: Cluster) -> None:
    """``rmq spark replay --dlq G --dry-run … | head -1``: the first line, exit 0, and no traceback from
    the command or from Spark's Python workers (which read the DLQ) when the reader has gone."""
    cluster.send("%DLQ%spark-dry-cg", [b"dead %d" % i for i in range(5)])
    rmq_bin = Path(sys.executable).parent / "rmq"
    command = (
        f"{rmq_bin} spark replay SparkDry --dlq spark-dry-cg --dry-run --master 'local[1]' "
        f"-n {cluster.namesrv} | head -1; exit ${{PIPESTATUS[0]}}"
    )
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["messages", "5"]
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr, done.stderr
