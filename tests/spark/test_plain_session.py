"""The source in sessions built without the project's help: the README's Spark snippets, verbatim, run by
``spark-submit`` from a folder outside the repository; and a worker Python without pyarrow is named."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from broker.client.message import Message
from broker.client.producer import Producer
from tests.spark.conftest import MESSAGES, ROOT, TOPIC, Cluster

pytestmark = pytest.mark.servers

BIN = Path(sys.executable).parent
# no UI (it would listen on every address), few shuffle partitions and a JIT that starts sooner: what
# makes a local job start faster, given to spark-submit, none of it in the job's session
FAST = (
    "--conf", "spark.ui.enabled=false", "--conf", "spark.sql.shuffle.partitions=2",
    "--conf", "spark.driver.extraJavaOptions=-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
)  # fmt: skip


def _readme_python() -> str:
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Spark: the `rocketmq` data source") : text.index("## Live dashboard")]
    return "\n".join(re.findall(r"```python\n(.*?)```", section, re.S))


def _env(**extra: str) -> dict[str, str]:
    """This environment without the repository on PYTHONPATH, and Spark on loopback."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK", "PYTHONPATH", "SPARK"))}
    return {**env, "SPARK_LOCAL_IP": "127.0.0.1", **extra}


@pytest.mark.timeout(600)  # a JVM of its own, started cold
def test_readme_snippets_run_verbatim_with_spark_submit(cluster: Cluster, tmp_path: Path) -> None:
    from admin.models import TopicSpec
    from admin.service import AdminService

    async def orders() -> None:
        async with AdminService([cluster.namesrv], 10) as service:
            await service.topic_create(TopicSpec("Orders", 2, 2))
            await service.topic_create(TopicSpec("OrdersCopy", 2, 2))
        async with Producer("readme-pg", cluster.namesrv) as producer:
            for i in range(6):
                tags = ("paid", "shipped", "new")[i % 3]
                await producer.send(
                    Message("Orders", b"order %d" % i, tags=tags, properties={"amount": str(i * 50)})
                )

    cluster.call(orders())
    home = tmp_path / "home"
    (home / ".rmqkit").mkdir(parents=True)
    (home / ".rmqkit" / "store").symlink_to(cluster.store)
    job = tmp_path / "job"
    job.mkdir()
    checks = """
assert orders.count() == 6
assert spark.read.parquet("archive/orders").count() == 6
copy = spark.read.format("rocketmq").option("nameServer", namesrv).option("topic", "OrdersCopy").load()
assert copy.count() == 6
assert tagged.option("subExpression", "paid || shipped").load().count() == 4
assert big.option("expressionType", "SQL92").option("subExpression", "amount > 100").load().count() == 3
print("README snippets ran")
"""
    (job / "job.py").write_text(_readme_python() + checks)
    env = _env(NAMESRV_ADDR=cluster.namesrv, HOME=str(home), PYSPARK_PYTHON=sys.executable)
    done = subprocess.run(
        [str(BIN / "spark-submit"), *FAST, "job.py"],
        cwd=job, env=env, capture_output=True, text=True, timeout=540,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "README snippets ran" in done.stdout


@pytest.mark.timeout(600)
def test_the_source_shipped_with_py_files_registers_itself(cluster: Cluster, tmp_path: Path) -> None:
    """A Python that has PySpark, pyarrow and numpy but not rmqkit, given the package as README says
    (``--py-files pyspark_rocketmq.py,rmqkit.zip``): the source is found by name and reads."""
    bare = tmp_path / "py"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    site = next((bare / "lib").glob("python3*/site-packages"))
    # the libraries of this Python, without its .pth files (the editable install of rmqkit is one)
    (site / "libraries.pth").write_text(str(next(Path(sys.prefix, "lib").glob("python3*/site-packages"))))
    python = str(bare / "bin" / "python")
    job = tmp_path / "job"
    job.mkdir()
    subprocess.run(
        [python, "-m", "zipfile", "-c", str(job / "rmqkit.zip"), "admin", "broker"], cwd=ROOT, check=True
    )
    shutil.copy(ROOT / "pyspark_rocketmq.py", job)
    (job / "job.py").write_text(
        "from pyspark.sql import SparkSession\n"
        "spark = SparkSession.builder.getOrCreate()\n"
        f"n = spark.read.format('rocketmq').option('storePath', {str(cluster.store)!r})"
        f".option('topic', {TOPIC!r}).load().count()\n"
        "print('rows', n)\n"
    )
    env = _env(PYSPARK_PYTHON=python, PYSPARK_DRIVER_PYTHON=python)
    probe = subprocess.run([python, "-c", "import admin"], cwd=job, env=env, capture_output=True)
    assert probe.returncode != 0  # rmqkit comes only with --py-files
    done = subprocess.run(
        [str(BIN / "spark-submit"), "--master", "local[2]", *FAST,
         "--py-files", "pyspark_rocketmq.py,rmqkit.zip", "job.py"],
        cwd=job, env=env, capture_output=True, text=True, timeout=540,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"rows {MESSAGES}" in done.stdout


def test_a_worker_python_without_pyarrow_is_named(cluster: Cluster, tmp_path: Path) -> None:
    """Spark's Python processes run another Python than the one with rmqkit[spark] (where the source is
    found through PYTHONPATH): the query fails saying which Python and what it lacks, not that there is
    no source named rocketmq."""
    other = "/usr/bin/python3"
    if (
        not Path(other).exists()
        or subprocess.run([other, "-c", "import pyarrow"], capture_output=True).returncode == 0
    ):
        pytest.skip(f"no {other} without pyarrow")
    script = tmp_path / "read.py"
    script.write_text(
        "from pyspark.sql import SparkSession\n"
        "spark = SparkSession.builder.master('local[1]').config('spark.ui.enabled', 'false')\\\n"
        "    .config('spark.driver.extraJavaOptions', '-XX:TieredStopAtLevel=1').getOrCreate()\n"
        f"spark.read.format('rocketmq').option('storePath', {str(cluster.store)!r}).load()\n"
    )
    env = _env(PYTHONPATH=str(ROOT), PYSPARK_PYTHON=other)
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240
    )
    assert done.returncode != 0, done.stderr[-2000:] + done.stdout[-1000:]
    assert f"Spark's Python workers run {other} (Python 3." in done.stderr, done.stderr[-3000:]
    assert (
        "which cannot import pyarrow" in done.stderr
        and "install rmqkit[spark] into that Python" in done.stderr
    )
