"""The ``rocketmq`` data source against brokers with plain ACL (and TLS): signed reads and writes,
refusals, option checks, and the secret kept out of errors, plans and reprs."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from typer.testing import CliRunner

from admin.pipelines.plan import QueueRange, QueueRef, parse_options
from admin.pipelines.secure import profile_options
from admin.pipelines.source import RangePartition
from admin.profiles import Profile
from broker.client.message import Message
from broker.client.producer import Producer
from cli.main import app as rmq_app
from tests.broker.acl.conftest import (  # noqa: F401  (certs is a fixture)
    ACL_YAML,
    APP,
    GROUP,
    OTHER_TOPIC,
    SECRETS,
    TOPIC,
    AclCluster,
    Certs,
    certs,
    seed,
    start_node,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, DataFrameReader, SparkSession

# Spark's Python processes see the environment the JVM started with, so the variables are set when
# this module is collected, before the shared session starts (as a user exports them before Spark).
SECRET_ENV = "RMQKIT_SPARK_TEST_APP_SECRET"
WRONG_ENV = "RMQKIT_SPARK_TEST_WRONG_SECRET"
UNSET_ENV = "RMQKIT_SPARK_TEST_NEVER_SET"
WRONG_SECRET = "not-the-app-secret-Jk27"
os.environ[SECRET_ENV] = APP.secret_key
os.environ[WRONG_ENV] = WRONG_SECRET
os.environ.pop(UNSET_ENV, None)
ALL_SECRETS = (*SECRETS, WRONG_SECRET)
SEEDED = [b"acl-spark-%d" % i for i in range(6)]
APP_KEY = {"accessKey": APP.access_key, "secretKeyEnv": SECRET_ENV}


def _send(c: AclCluster, bodies: list[bytes], ssl: Any = None) -> None:
    async def go() -> None:
        async with Producer("acl-spark-seed", c.namesrv, credentials=APP, ssl_context=ssl) as producer:
            for body in bodies:
                await producer.send(Message(TOPIC, body))

    c.loop.run(go())


def _start(tmp: Path, **tls: Any) -> AclCluster:
    acl_file = tmp / "plain_acl.yml"
    acl_file.write_text(ACL_YAML)
    loop, node = start_node(tmp, acl_file, **tls)
    return seed(AclCluster(loop, node, acl_file))


def _stop(c: AclCluster) -> None:
    c.loop.run(c.node.stop(), timeout=60)
    c.loop.close()


@pytest.fixture(scope="module")
def acl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AclCluster]:
    """A NameServer + broker with plain ACL on and the messages ``SEEDED`` in ``AclTopic``."""
    c = _start(tmp_path_factory.mktemp("spark-acl"))
    try:
        _send(c, SEEDED)
        yield c
    finally:
        _stop(c)


def _reader(spark: SparkSession, c: AclCluster, **options: str) -> DataFrameReader:
    reader = spark.read.format("rocketmq").option("nameServer", c.namesrv).option("topic", TOPIC)
    return reader.options(**options)


def _bodies(df: DataFrame) -> list[bytes]:
    return sorted(bytes(r.body) for r in df.select("body").collect())


def _no_secret(text: str) -> None:
    assert not any(secret in text for secret in ALL_SECRETS), text


def test_reads_and_writes_with_the_key_of_an_environment_variable(
    spark: SparkSession, acl: AclCluster, tmp_path: Path
) -> None:
    assert set(SEEDED) <= set(_bodies(_reader(spark, acl, **APP_KEY).load()))

    written = [f"from-spark-{i}" for i in range(5)]
    df = spark.createDataFrame([(b,) for b in written], "body string")
    df.write.format("rocketmq").option("nameServer", acl.namesrv).option("topic", TOPIC).options(
        **APP_KEY
    ).mode("append").save()

    secret_file = tmp_path / "app.secret"
    secret_file.write_text(APP.secret_key + "\n")
    back = _reader(spark, acl, accessKey=APP.access_key, secretKeyFile=str(secret_file)).load()
    assert {b.encode() for b in written} <= set(_bodies(back))


def test_streams_with_the_key_and_commits_the_groups_progress(
    spark: SparkSession, acl: AclCluster, tmp_path: Path
) -> None:
    stream = (
        spark.readStream.format("rocketmq").option("nameServer", acl.namesrv).option("topic", TOPIC)
        .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", 2)
        .option("consumerGroup", GROUP).options(**APP_KEY).load()
    )  # fmt: skip
    out = tmp_path / "out"
    query = (
        stream.select("body").writeStream.format("parquet").option("path", str(out))
        .option("checkpointLocation", str(tmp_path / "ckpt")).trigger(availableNow=True).start()
    )  # fmt: skip
    query.awaitTermination(120)
    assert query.exception() is None  # several batches: their offsets were committed, signed
    assert set(SEEDED) <= set(_bodies(spark.read.parquet(str(out))))


@pytest.mark.parametrize(
    "key",
    [{}, {"accessKey": APP.access_key, "secretKeyEnv": WRONG_ENV}],
    ids=["no-key", "wrong-key"],
)
def test_refused_without_the_right_key(spark: SparkSession, acl: AclCluster, key: dict[str, str]) -> None:
    with pytest.raises(Exception, match="NO_PERMISSION") as read:
        _reader(spark, acl, **key).load().collect()
    _no_secret(str(read.value))
    df = spark.createDataFrame([("refused",)], "body string")
    with pytest.raises(Exception, match=r"sending to RocketMQ failed: .*NO_PERMISSION") as write:
        df.write.format("rocketmq").option("nameServer", acl.namesrv).option("topic", TOPIC).options(
            **key
        ).mode("append").save()
    _no_secret(str(write.value))


def test_a_topic_the_account_may_not_use_is_refused_by_name(spark: SparkSession, acl: AclCluster) -> None:
    df = spark.createDataFrame([("denied",)], "body string")
    with pytest.raises(Exception, match=f"NO_PERMISSION.*{OTHER_TOPIC}") as write:
        df.write.format("rocketmq").option("nameServer", acl.namesrv).option("topic", OTHER_TOPIC).options(
            **APP_KEY
        ).mode("append").save()
    _no_secret(str(write.value))


BAD_OPTIONS = [
    (
        {"accessKey": APP.access_key},
        "option accessKey needs exactly one of secretKeyEnv, secretKeyFile, secretKey",
    ),
    (
        {"accessKey": APP.access_key, "secretKeyEnv": SECRET_ENV, "secretKey": WRONG_SECRET},
        r"needs exactly one of secretKeyEnv, secretKeyFile, secretKey \(got secretKeyEnv, secretKey\)",
    ),
    ({"secretKeyEnv": SECRET_ENV}, "option secretKeyEnv needs the option accessKey"),
    ({"secretKey": WRONG_SECRET}, "option secretKey needs the option accessKey"),
    (
        {"accessKey": APP.access_key, "secretKeyEnv": UNSET_ENV},
        f"option secretKeyEnv: environment variable {UNSET_ENV} is not set",
    ),
    (
        {"accessKey": APP.access_key, "secretKeyFile": "/nonexistent/app.secret"},
        "option secretKeyFile: cannot read /nonexistent/app.secret",
    ),
    ({"tls": "yes"}, "option tls must be true or false, got 'yes'"),
    ({"tlsCaFile": "/etc/ca.pem"}, "option tlsCaFile needs tls=true"),
    (
        {"tls": "true", "tlsCaFile": "/nonexistent/ca.pem"},
        "option tlsCaFile: cannot read /nonexistent/ca.pem",
    ),
    ({"tls": "true", "tlsKeyFile": "/etc/client.key"}, "option tlsKeyFile needs tlsCertFile"),
]


@pytest.mark.parametrize(("options", "message"), BAD_OPTIONS, ids=[m[:40] for _o, m in BAD_OPTIONS])
def test_bad_options_fail_when_the_query_is_planned(
    spark: SparkSession, acl: AclCluster, options: dict[str, str], message: str
) -> None:
    from pyspark.errors import AnalysisException

    with pytest.raises(AnalysisException, match=message) as read:
        _reader(spark, acl, **options).load().collect()
    _no_secret(str(read.value))
    df = spark.createDataFrame([("x",)], "body string")
    with pytest.raises(Exception, match=message) as write:
        df.write.format("rocketmq").option("nameServer", acl.namesrv).option("topic", TOPIC).options(
            **options
        ).mode("append").save()
    _no_secret(str(write.value))


def test_the_secret_stays_out_of_the_plan_and_the_reprs(
    spark: SparkSession, acl: AclCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    df = _reader(spark, acl, **APP_KEY).load()
    df.explain(True)
    plan = capsys.readouterr().out
    assert "rocketmq" in plan.lower()
    _no_secret(plan)

    plain = {
        "nameServer": acl.namesrv,
        "topic": TOPIC,
        "accessKey": APP.access_key,
        "secretKey": APP.secret_key,
    }
    spec = parse_options(plain)
    part = RangePartition(QueueRange(QueueRef(TOPIC, "b", 0, acl.broker_addr), 0, 1), spec)
    for text in (repr(spec), repr(spec.security), repr(part), str(part)):
        assert APP.access_key in text or "RangePartition" in text
        _no_secret(text)


def test_rmq_spark_archive_signs_with_the_profile(
    spark: SparkSession, acl: AclCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RMQ_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.delenv("RMQ_ACCESS_KEY", raising=False)
    monkeypatch.delenv("RMQ_SECRET_KEY", raising=False)
    created = CliRunner().invoke(
        rmq_app,
        ["profile", "create", "acl-app", "-n", acl.namesrv, "--access-key", APP.access_key,
         "--secret-key-env", SECRET_ENV, "--use"],
    )  # fmt: skip
    assert created.exit_code == 0, created.output
    out = tmp_path / "archive"
    result = CliRunner().invoke(rmq_app, ["spark", "archive", TOPIC, "--out", str(out), "-o", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["rows"] >= len(SEEDED)
    assert set(SEEDED) <= set(_bodies(spark.read.parquet(str(out))))
    _no_secret(result.output)


def test_cli_passes_where_the_secret_is_never_the_secret() -> None:
    env = {"RMQ_ACCESS_KEY": "ci-ak", "RMQ_SECRET_KEY": APP.secret_key}
    assert profile_options(None, env) == {"accessKey": "ci-ak", "secretKeyEnv": "RMQ_SECRET_KEY"}
    profile = Profile(
        "p", access_key="ops", secret_key_file="/etc/rmq/ops.secret", tls=True, tls_ca_file="/etc/rmq/ca.pem"
    )
    assert profile_options(profile, {}) == {
        "accessKey": "ops",
        "secretKeyFile": "/etc/rmq/ops.secret",
        "tls": "true",
        "tlsCaFile": "/etc/rmq/ca.pem",
    }


@pytest.fixture(scope="module")
def acl_tls(tmp_path_factory: pytest.TempPathFactory, certs: Certs) -> Iterator[AclCluster]:  # noqa: F811
    from broker.acl.tls import client_context

    tls = {
        "tls_enable": True,
        "tls_cert_path": certs.server_cert,
        "tls_key_path": certs.server_key,
        "tls_client_trust_cert_path": certs.ca,
    }
    c = _start(tmp_path_factory.mktemp("spark-acl-tls"), **tls)
    try:
        _send(c, SEEDED, client_context(certs.ca))
        yield c
    finally:
        _stop(c)


def test_reads_over_tls(spark: SparkSession, acl_tls: AclCluster, certs: Certs) -> None:  # noqa: F811
    df = _reader(spark, acl_tls, **APP_KEY, tls="true", tlsCaFile=str(certs.ca)).load()
    assert _bodies(df) == sorted(SEEDED)
