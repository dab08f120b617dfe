"""A local SparkSession with the settings that keep it fast and quiet on one machine."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_LOG4J = """rootLogger.level = error
rootLogger.appenderRef.stdout.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


def build_session(
    master: str = "local[*]",
    app: str = "rmqkit",
    conf: dict[str, str] | None = None,
    *,
    short_jobs: bool = False,
) -> SparkSession:
    """Get or create the session: workers run this Python, the UI is off, logs are quiet, the
    ``rocketmq`` source is registered and the repository root is importable by the workers."""
    from pyspark.sql import SparkSession

    from admin.pipelines import register

    root = str(Path(__file__).resolve().parents[2])
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    if root not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([root, *[p for p in paths if p]])
    log4j = Path(os.environ.get("TMPDIR", "/tmp")) / "rmqkit-spark-log4j2.properties"
    if not log4j.exists():
        log4j.write_text(_LOG4J)
    # Arrow's bounds and null checks on every value read cost about a quarter of the JVM's time spent
    # turning the data source's Arrow batches into rows; those batches come from pyarrow, well formed.
    # The full JIT makes that conversion ~40 % faster; C1 alone (``short_jobs``) is ready sooner, which
    # pays off only for many small queries (a test suite finishes ~15 % sooner)
    arrow_opts = "-Darrow.enable_unsafe_memory_access=true -Darrow.enable_null_check_for_get=false"
    jit = "-XX:TieredStopAtLevel=1 " if short_jobs else ""
    java_opts = f"{jit}-XX:+UseParallelGC {arrow_opts} -Dlog4j2.configurationFile=file:{log4j}"
    builder = (
        SparkSession.builder.master(master)
        .appName(app)
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.extraJavaOptions", java_opts)
        # batches reach the JVM from the Python workers ~12 % faster than over loopback TCP
        .config("spark.python.unix.domain.socket.enabled", "true")
        .config("spark.executorEnv.PYTHONPATH", os.environ["PYTHONPATH"])
    )
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark
