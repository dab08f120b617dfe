"""Third-party clients against a broker with ACL on: ali-ons (remoting, accessKey/secretKey options), the
C++ client (session credentials) and the official Python 5 client (gRPC ``authorization`` header)."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.acl.signer import Credentials
from tests.broker.acl.conftest import APP, OTHER_TOPIC, SECRETS, TOPIC, AclCluster
from tests.broker.grpc.conftest import run5
from tests.peers import install
from tests.peers.runner import _consumer_args, _producer_args, run_driver, start_driver


def _env(credentials: Credentials) -> dict[str, str]:
    return {"RMQ_ACCESS_KEY": credentials.access_key, "RMQ_SECRET_KEY": credentials.secret_key}


def _produce(c: AclCluster, topic: str, credentials: Credentials, count: int = 3) -> object:
    args = _producer_args(c.namesrv, topic, 20, {"group": "acl-ons-pg", "count": count, "body": "acl"})
    return run_driver("alions", "alions_producer.js", args, timeout=20, env=_env(credentials))


def test_alions_right_key_pair_sends_and_consumes(acl_cluster: AclCluster) -> None:
    install.ensure_ali_ons()
    c = acl_cluster
    args = _consumer_args(c.namesrv, TOPIC, 60, {"group": "acl-ons-cg", "expect": 3})
    with start_driver(
        "alions", "alions_consumer.js", [*args, "--from", "first"], timeout=60, env=_env(APP)
    ) as con:
        con.wait_for("assigned", timeout=30)
        sent = _produce(c, TOPIC, APP)
        sent.check()  # type: ignore[attr-defined]
        result = con.finish()
    result.check()
    assert len(result.consumed) >= 3
    assert {m.body for m in result.consumed} >= {b"acl-0", b"acl-1", b"acl-2"}


@pytest.mark.parametrize(
    ("topic", "credentials"),
    [(TOPIC, Credentials(APP.access_key, "wrong-secret")), (OTHER_TOPIC, APP)],
    ids=["wrong-secret", "topic-denied"],
)
def test_alions_is_refused(acl_cluster: AclCluster, topic: str, credentials: Credentials) -> None:
    install.ensure_ali_ons()
    result = _produce(acl_cluster, topic, credentials, count=1)
    assert result.returncode != 0 and not result.sent  # type: ignore[attr-defined]
    assert not any(s in result.stderr for s in SECRETS if s != credentials.secret_key)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("credentials", "sent"),
    [(APP, 2), (Credentials(APP.access_key, "wrong-secret"), 0)],
    ids=["right-key-pair", "wrong-secret"],
)
def test_cpp_producer_signs_with_its_key_pair(
    acl_cluster: AclCluster, tmp_path: Path, credentials: Credentials, sent: int
) -> None:
    args = _producer_args(acl_cluster.namesrv, TOPIC, 20, {"group": "acl-cpp-pg", "count": 2, "body": "acl"})
    result = run_driver("cpp", "cpp_producer.py", args, timeout=20, home=tmp_path, env=_env(credentials))
    assert len(result.sent) == sent
    assert (result.returncode == 0) == (sent == 2)


def test_python5_client_needs_credentials(acl_cluster: AclCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    c = acl_cluster
    args = ["--endpoints", c.endpoints, "--topic", TOPIC, "--count", "2"]
    monkeypatch.delenv("RMQ_ACCESS_KEY", raising=False)
    monkeypatch.delenv("RMQ_SECRET_KEY", raising=False)
    refused = run5("py5", "py5_producer.py", *args, timeout=30)
    assert refused.returncode != 0 and not refused.of("sent")
    monkeypatch.setenv("RMQ_ACCESS_KEY", APP.access_key)
    monkeypatch.setenv("RMQ_SECRET_KEY", APP.secret_key)
    assert len(run5("py5", "py5_producer.py", *args, timeout=30).check().of("sent")) == 2
    got = run5("py5", "py5_simple_consumer.py", "--endpoints", c.endpoints, "--topic", TOPIC,
               "--group", "acl-py5-cg", "--expect", "2", timeout=30).check()  # fmt: skip
    assert len(got.of("received")) >= 2
