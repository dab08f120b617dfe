"""Sans-IO parts: signatures, white-list patterns, the ACL file formats, permissions and decisions."""

from __future__ import annotations

import base64
import hashlib
import hmac
from pathlib import Path

import pytest

from broker.acl import config as acl_config
from broker.acl import signer
from broker.acl.addresses import AddressPatternError, compile_pattern, host_of
from broker.acl.checker import AclChecker, Denial
from broker.acl.permissions import ANY, DENY, PUB, SUB, Need, allows, needs_of
from broker.protocol.codes import RequestCode
from broker.protocol.group_bodies import ConsumerData, HeartbeatData, SubscriptionData
from broker.protocol.remoting import make_request
from tests.acl.conftest import ACL_YAML, ADMIN, APP, OTHER_TOPIC, TOPIC


def test_remoting_signature_is_hmac_sha1_of_sorted_values_and_body() -> None:
    request = make_request(10, ext_fields={"topic": "T", "b": "2", "a": "1"}, body=b"BODY")
    signer.sign_request(request, signer.Credentials("AK12345", "SK12345"))
    # sorted keys: AccessKey, a, b, topic -> "AK12345" "1" "2" "T", then the body
    expected = hmac.new(b"SK12345", b"AK1234512TBODY", hashlib.sha1).digest()
    assert request.ext_fields["Signature"] == base64.b64encode(expected).decode()
    assert request.ext_fields["AccessKey"] == "AK12345"


def test_grpc_authorization_round_trip() -> None:
    value = signer.grpc_authorization(signer.Credentials("AK12345", "SK12345"), "20240101T000000Z")
    parsed = signer.parse_grpc_authorization(value)
    assert parsed is not None and parsed.access_key == "AK12345"
    assert parsed.signature == hmac.new(b"SK12345", b"20240101T000000Z", hashlib.sha1).hexdigest()
    assert signer.parse_grpc_authorization("MQv2-HMAC-SHA1 Credential=, SignedHeaders=x, Signature=") is None


def test_credentials_never_show_the_secret() -> None:
    assert "SK12345" not in repr(signer.Credentials("AK12345", "SK12345"))


@pytest.mark.parametrize(
    ("pattern", "yes", "no"),
    [
        ("*", ["10.1.2.3", "::1"], []),
        ("192.168.1.*", ["192.168.1.0", "192.168.1.255"], ["192.168.2.1", "10.0.0.1"]),
        ("192.168.*.*", ["192.168.7.9"], ["192.169.0.1"]),
        ("192.168.1.10-20", ["192.168.1.10", "192.168.1.20"], ["192.168.1.9", "192.168.1.21"]),
        ("192.168.2-3.*", ["192.168.3.77"], ["192.168.4.1"]),
        ("192.168.1.{5,6}", ["192.168.1.6"], ["192.168.1.7"]),
        ("10.0.0.1,10.0.0.2", ["10.0.0.2"], ["10.0.0.3"]),
        ("10.0.0.0/8", ["10.9.9.9"], ["11.0.0.1"]),
        ("::1", ["::1", "0:0:0:0:0:0:0:1"], ["127.0.0.1"]),
        ("", [], ["127.0.0.1"]),
    ],
)
def test_white_address_patterns(pattern: str, yes: list[str], no: list[str]) -> None:
    match = compile_pattern(pattern)
    assert all(match(h) for h in yes) and not any(match(h) for h in no)


@pytest.mark.parametrize("bad", ["192.168.1.300", "192.168.*.1", "a.b.c.d", "1.2.3", "10.0.0.0/99"])
def test_bad_white_address_patterns(bad: str) -> None:
    with pytest.raises(AddressPatternError):
        compile_pattern(bad)


def test_host_of() -> None:
    assert host_of("1.2.3.4:5") == "1.2.3.4"
    assert host_of("::ffff:1.2.3.4:5") == "1.2.3.4"
    assert host_of("::1:5") == "::1"


def test_permission_bits_follow_upstream() -> None:
    assert allows(PUB, PUB | SUB) and allows(SUB, SUB) and not allows(PUB, SUB)
    assert allows(ANY, SUB) and not allows(ANY, DENY) and not allows(SUB, DENY | SUB)


def test_request_needs() -> None:
    send = make_request(RequestCode.SEND_MESSAGE_V2, ext_fields={"a": "PG", "b": "T1"})
    assert needs_of(send) == [Need("T1", PUB)]
    retry = make_request(RequestCode.SEND_MESSAGE, ext_fields={"topic": "%RETRY%G1"})
    assert needs_of(retry) == [Need("%RETRY%G1", SUB)]
    pull = make_request(RequestCode.PULL_MESSAGE, ext_fields={"topic": "T1", "consumerGroup": "G1"})
    assert needs_of(pull) == [Need("T1", SUB), Need("%RETRY%G1", SUB)]
    hb = HeartbeatData(
        clientID="c",
        consumerDataSet=[ConsumerData(groupName="G1", subscriptionDataSet=[SubscriptionData(topic="T1")])],
    )
    beat = make_request(RequestCode.HEART_BEAT, body=hb.to_json())
    assert needs_of(beat) == [Need("%RETRY%G1", SUB), Need("T1", SUB)]


@pytest.mark.parametrize("suffix", [".yml", ".json", ".toml"])
def test_file_formats_round_trip(tmp_path: Path, suffix: str) -> None:
    config = acl_config.parse_text(ACL_YAML, "yaml")
    path = tmp_path / f"acl{suffix}"
    acl_config.save(path, config)
    assert acl_config.load(path) == config
    assert path.stat().st_mode & 0o077 == 0


def test_upstream_sample_file_parses() -> None:
    text = """globalWhiteRemoteAddresses:
  - 10.10.103.*
  - 192.168.0.*

accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    whiteRemoteAddress:
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - topicA=DENY
      - topicB=PUB|SUB
    groupPerms:
    # the group should convert to retry topic
    - groupA=DENY
    - groupC=SUB

  - accessKey: rocketmq2
    secretKey: 12345678
    whiteRemoteAddress: 192.168.1.*
    # if it is admin, it could access all resources
    admin: true
"""
    config = acl_config.parse_text(text, "yaml")
    assert config.global_white_addresses == ["10.10.103.*", "192.168.0.*"]
    assert config.accounts["RocketMQ"].group_perms == {"groupA": "DENY", "groupC": "SUB"}
    assert config.accounts["rocketmq2"].admin


def test_errors_never_show_secrets() -> None:
    with pytest.raises(acl_config.AclConfigError) as err:
        acl_config.parse_text(
            "accounts:\n  - accessKey: abcdefg\n    secretKey: s3cr3t-value\n   bad", "yaml"
        )
    assert "s3cr3t" not in str(err.value)
    with pytest.raises(acl_config.AclConfigError) as err:
        acl_config.parse_text('{"accounts": [{"accessKey": "abcdefg", "secretKey": "s3cr3t-v', "json")
    assert "s3cr3t" not in str(err.value)
    with pytest.raises(acl_config.AclConfigError) as err:
        acl_config.parse_text("accounts:\n  - accessKey: abcdefg\n    secretKey: s3c\n", "yaml")
    assert "s3c" not in str(err.value).replace("secretKey", "")


def _checker(tmp_path: Path, text: str = ACL_YAML) -> AclChecker:
    path = tmp_path / "acl.yml"
    path.write_text(text)
    return AclChecker(path, poll_seconds=0)


def _check(checker: AclChecker, key: str | None, secret: str, *needs: Need, admin: bool = False) -> object:
    return checker.check(
        host="10.0.0.1", access_key=key, verify=lambda s: s == secret, needs=needs, admin=admin, code=17
    )


def test_checker_decisions(tmp_path: Path) -> None:
    checker = _checker(tmp_path)
    assert _check(checker, APP.access_key, APP.secret_key, Need(TOPIC, PUB)) is None
    wrong = _check(checker, APP.access_key, "nope", Need(TOPIC, PUB))
    assert wrong is not None and wrong.kind is Denial.UNAUTHENTICATED  # type: ignore[attr-defined]
    lacking = _check(checker, APP.access_key, APP.secret_key, Need(OTHER_TOPIC, PUB))
    assert lacking is not None and f"PUB permission on topic {OTHER_TOPIC}" in lacking.message  # type: ignore[attr-defined]
    not_admin = _check(checker, APP.access_key, APP.secret_key, admin=True)
    assert not_admin is not None and "admin" in not_admin.message  # type: ignore[attr-defined]
    assert _check(checker, ADMIN.access_key, ADMIN.secret_key, Need("Any", PUB), admin=True) is None
    assert _check(checker, None, "", Need(TOPIC, PUB)) is not None


def test_checker_reloads_on_change_and_keeps_rules_on_a_broken_file(tmp_path: Path) -> None:
    checker = _checker(tmp_path)
    path = checker.path
    path.write_text(ACL_YAML.replace(f"{OTHER_TOPIC}=DENY", f"{OTHER_TOPIC}=PUB") + "\n")
    assert _check(checker, APP.access_key, APP.secret_key, Need(OTHER_TOPIC, PUB)) is None
    path.write_text("accounts: [\n")
    assert _check(checker, APP.access_key, APP.secret_key, Need(OTHER_TOPIC, PUB)) is None


def test_white_listed_account_skips_the_signature_not_the_permissions(tmp_path: Path) -> None:
    checker = _checker(
        tmp_path,
        ACL_YAML.replace("    admin: false\n", "    admin: false\n    whiteRemoteAddress: 10.0.0.*\n"),
    )
    assert _check(checker, APP.access_key, "unsigned", Need(TOPIC, PUB)) is None
    assert _check(checker, APP.access_key, "unsigned", Need(OTHER_TOPIC, PUB)) is not None
