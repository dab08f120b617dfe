"""The RocketMQ 5 access-control codes (AUTH_CREATE_USER 3001 ... AUTH_LIST_ACL 3010) against a real
broker with authentication and authorization on: each code, its answers to bad input, the codes of a
missing user or ACL, passwords never answered, and users and ACLs kept across a restart."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from broker.acl.client import secure
from broker.acl.signer import Credentials
from broker.client.remoting_client import RemotingClient
from broker.namesrv.config import NamesrvConfig
from broker.node import Node, NodePlan
from broker.protocol.auth_bodies import (
    AclInfo,
    AclRequestHeader,
    DeleteAclRequestHeader,
    ListAclsRequestHeader,
    ListUsersRequestHeader,
    PolicyEntryInfo,
    PolicyInfo,
    UserInfo,
    UserRequestHeader,
)
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.headers import CommandHeader
from broker.protocol.remoting import RemotingCommand, make_request
from broker.server.config import BrokerConfig
from tests.broker.acl.conftest import security
from tests.peers.conftest import LoopThread, small_store

ROOT = Credentials("root", "root-pass-Kd93")
R = RequestCode


@dataclass
class AuthNode:
    loop: LoopThread
    node: Node
    tmp: Path

    @property
    def broker_addr(self) -> str:
        assert self.node.broker is not None
        return self.node.broker.address

    @property
    def namesrv(self) -> str:
        assert self.node.namesrv is not None
        return f"127.0.0.1:{self.node.namesrv.port}"

    @property
    def endpoints(self) -> str:
        assert self.node.broker is not None
        return f"127.0.0.1:{self.node.broker.grpc_port}"

    def call(
        self,
        code: int,
        header: CommandHeader | None = None,
        body: Any = None,
        credentials: Credentials | None = ROOT,
    ) -> RemotingCommand:
        raw = body if isinstance(body, bytes) or body is None else body.to_json()

        async def go() -> RemotingCommand:
            client = RemotingClient()
            if credentials is not None:
                secure(client, security(credentials))
            try:
                return await client.invoke(self.broker_addr, make_request(code, header, body=raw))
            finally:
                await client.close()

        return self.loop.run(go())

    def stop(self) -> None:
        self.loop.run(self.node.stop(), timeout=60)
        self.loop.close()


def start_auth_node(tmp: Path, **settings: Any) -> AuthNode:
    """A NameServer and a broker with users and ACL policies on and ``root`` as the initial user."""
    settings.setdefault("authentication_enabled", True)
    settings.setdefault("authorization_enabled", True)
    settings.setdefault(
        "init_authentication_user", json.dumps({"username": ROOT.access_key, "password": ROOT.secret_key})
    )
    loop = LoopThread()
    plan = NodePlan(
        namesrv=NamesrvConfig(listen_port=0, kv_config_path=tmp / "kv.json"),
        broker=BrokerConfig(
            broker_name="auth-broker",
            listen_host="127.0.0.1",
            listen_port=0,
            http_port=0,
            grpc_port=0,
            ha_listen_port=0,
            **settings,
        ),
        store=small_store(tmp / "store"),
    )
    node = Node(plan)
    loop.run(node.start())
    return AuthNode(loop, node, tmp)


@pytest.fixture(scope="module")
def auth_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AuthNode]:
    node = start_auth_node(tmp_path_factory.mktemp("auth"))
    try:
        yield node
    finally:
        node.stop()


def user(
    name: str, password: str | None = None, kind: str | None = None, status: str | None = None
) -> UserInfo:
    return UserInfo(username=name, password=password, userType=kind, userStatus=status)


def entry(
    resource: str, *actions: str, decision: str = "Allow", ips: list[str] | None = None
) -> PolicyEntryInfo:
    return PolicyEntryInfo(resource=resource, actions=list(actions), sourceIps=ips, decision=decision)


def acl(subject: str, *entries: PolicyEntryInfo) -> AclInfo:
    return AclInfo(subject=subject, policies=[PolicyInfo(policyType="Custom", entries=list(entries))])


def create_user(n: AuthNode, name: str, password: str = "pw-123456", **kw: Any) -> RemotingCommand:
    return n.call(R.AUTH_CREATE_USER, UserRequestHeader(username=name), user(name, password, **kw))


def body_of(response: RemotingCommand) -> Any:
    assert response.code == ResponseCode.SUCCESS, response.remark
    return json.loads(response.body or b"null")


def test_user_life_cycle(auth_node: AuthNode) -> None:
    n = auth_node
    assert create_user(n, "alice", "alice-pass-1").code == ResponseCode.SUCCESS
    got = body_of(n.call(R.AUTH_GET_USER, UserRequestHeader(username="alice")))
    assert got == {"username": "alice", "userType": "Normal", "userStatus": "enable"}  # no password

    again = create_user(n, "alice", "other-pass")
    assert again.code == ResponseCode.INVALID_PARAMETER and "alice already exists" in (again.remark or "")

    change = n.call(R.AUTH_UPDATE_USER, UserRequestHeader(username="alice"), user("alice", status="disable"))
    assert change.code == ResponseCode.SUCCESS
    got = body_of(n.call(R.AUTH_GET_USER, UserRequestHeader(username="alice")))
    assert got["userStatus"] == "disable" and got["userType"] == "Normal"

    create_user(n, "alina")
    names = [u["username"] for u in body_of(n.call(R.AUTH_LIST_USER, ListUsersRequestHeader(filter="ali")))]
    assert names == ["alice", "alina"]
    everyone = body_of(n.call(R.AUTH_LIST_USER, ListUsersRequestHeader()))
    assert {"root", "alice", "alina"} <= {u["username"] for u in everyone}
    assert all("password" not in u for u in everyone)
    root = next(u for u in everyone if u["username"] == "root")
    assert root["userType"] == "Super"  # initAuthenticationUser

    assert n.call(R.AUTH_DELETE_USER, UserRequestHeader(username="alina")).code == ResponseCode.SUCCESS
    gone = n.call(R.AUTH_GET_USER, UserRequestHeader(username="alina"))
    assert gone.code == ResponseCode.USER_NOT_EXIST and "alina does not exist" in (gone.remark or "")


@pytest.mark.parametrize(
    ("name", "body", "remark"),
    [
        ("bob", user("bob", ""), "password is blank"),
        ("bob", user("bob", "pw-123456", kind="Admin"), "userType 'Admin' is not one of Super|Normal"),
        ("bob", user("bob", "pw-123456", status="off"), "userStatus 'off' is not one of enable|disable"),
        ("b o b", user("b o b", "pw-123456"), "spaces"),
        ("bob", user("robert", "pw-123456"), "is not the header's"),
        ("bob", b"{not json", "UserInfo"),
    ],
    ids=["blank-password", "bad-type", "bad-status", "space-in-name", "other-name", "broken-body"],
)
def test_create_user_refuses_bad_input(auth_node: AuthNode, name: str, body: Any, remark: str) -> None:
    response = auth_node.call(R.AUTH_CREATE_USER, UserRequestHeader(username=name), body)
    assert response.code == ResponseCode.INVALID_PARAMETER
    assert remark in (response.remark or "")


def test_missing_user_codes(auth_node: AuthNode) -> None:
    n = auth_node
    for code in (R.AUTH_UPDATE_USER, R.AUTH_DELETE_USER, R.AUTH_GET_USER):
        response = n.call(code, UserRequestHeader(username="nobody"), user("nobody", status="enable"))
        assert response.code == ResponseCode.USER_NOT_EXIST, code
        assert "user nobody does not exist" in (response.remark or "")
    no_header = n.call(R.AUTH_GET_USER)
    assert no_header.code == ResponseCode.INVALID_PARAMETER and "username" in (no_header.remark or "")


def test_acl_life_cycle(auth_node: AuthNode) -> None:
    n = auth_node
    create_user(n, "carol")
    subject = AclRequestHeader(subject="User:carol")
    first = acl("User:carol", entry("Topic:orders", "Pub"), entry("Group:cg-*", "Sub", ips=["10.0.0.0/8"]))
    assert n.call(R.AUTH_CREATE_ACL, subject, first).code == ResponseCode.SUCCESS
    # a second create merges, as upstream: the entry of Topic:orders is replaced, the new one added
    second = acl("User:carol", entry("Topic:orders", "Pub", "Sub", decision="Deny"), entry("*", "Get"))
    assert n.call(R.AUTH_CREATE_ACL, subject, second).code == ResponseCode.SUCCESS
    got = body_of(n.call(R.AUTH_GET_ACL, subject))
    entries = {e["resource"]: e for e in got["policies"][0]["entries"]}
    assert got["subject"] == "User:carol" and got["policies"][0]["policyType"] == "Custom"
    assert entries["Topic:orders"] == {
        "resource": "Topic:orders",
        "actions": ["Pub", "Sub"],
        "decision": "Deny",
    }
    assert entries["Group:cg-*"]["sourceIps"] == ["10.0.0.0/8"]
    assert set(entries) == {"Topic:orders", "Group:cg-*", "*"}

    update = acl("User:carol", entry("topic:orders", "All"))  # the type is read ignoring case
    assert n.call(R.AUTH_UPDATE_ACL, subject, update).code == ResponseCode.SUCCESS
    got = body_of(n.call(R.AUTH_GET_ACL, subject))
    orders = next(e for e in got["policies"][0]["entries"] if e["resource"] == "Topic:orders")
    assert orders["actions"] == ["All"] and orders["decision"] == "Allow"

    listed = body_of(
        n.call(R.AUTH_LIST_ACL, ListAclsRequestHeader(subjectFilter="carol", resourceFilter="Group"))
    )
    assert [(a["subject"], [e["resource"] for e in a["policies"][0]["entries"]]) for a in listed] == [
        ("User:carol", ["Group:cg-*"])
    ]

    one = n.call(R.AUTH_DELETE_ACL, DeleteAclRequestHeader(subject="User:carol", resource="Group:cg-*"))
    assert one.code == ResponseCode.SUCCESS
    left = {e["resource"] for e in body_of(n.call(R.AUTH_GET_ACL, subject))["policies"][0]["entries"]}
    assert left == {"Topic:orders", "*"}
    again = n.call(R.AUTH_DELETE_ACL, DeleteAclRequestHeader(subject="User:carol", resource="Group:cg-*"))
    assert again.code == ResponseCode.POLICY_NOT_EXIST and "Group:cg-*" in (again.remark or "")

    assert (
        n.call(R.AUTH_DELETE_ACL, DeleteAclRequestHeader(subject="User:carol")).code == ResponseCode.SUCCESS
    )
    gone = n.call(R.AUTH_GET_ACL, subject)
    assert gone.code == ResponseCode.POLICY_NOT_EXIST and "User:carol has no ACL" in (gone.remark or "")


def test_deleting_a_user_deletes_its_acl(auth_node: AuthNode) -> None:
    n = auth_node
    create_user(n, "dave")
    n.call(
        R.AUTH_CREATE_ACL, AclRequestHeader(subject="User:dave"), acl("User:dave", entry("Topic:t", "Pub"))
    )
    n.call(R.AUTH_DELETE_USER, UserRequestHeader(username="dave"))
    create_user(n, "dave")
    assert n.call(R.AUTH_GET_ACL, AclRequestHeader(subject="User:dave")).code == ResponseCode.POLICY_NOT_EXIST


@pytest.mark.parametrize(
    ("policy", "remark"),
    [
        (entry("Queue:q", "Pub"), "type 'Queue' is not one of Cluster|Namespace|Topic|Group"),
        (entry("Topic", "Pub"), "needs a name: Topic:NAME"),
        (entry("Topic:a*b", "Pub"), "'*' may only end the name"),
        (entry("Topic:t", "Publish"), "action 'Publish' is not one of"),
        (entry("Topic:t", "Any"), "action Any cannot be granted"),
        (entry("Topic:t"), "has no actions"),
        (entry("Topic:t", "Pub", decision="Maybe"), "decision 'Maybe' is not one of Allow|Deny"),
        (entry("Topic:t", "Pub", ips=["10.0.0.300"]), "source IP '10.0.0.300' is not an IP address or CIDR"),
        (entry("Topic:t", "Pub", ips=["10.0.0.0/40"]), "is not an IP address or CIDR"),
        (entry("", "Pub"), "has no resource"),
    ],
    ids=[
        "type",
        "no-name",
        "inner-star",
        "action",
        "any",
        "no-actions",
        "decision",
        "ip",
        "cidr",
        "no-resource",
    ],
)
def test_create_acl_refuses_bad_entries(auth_node: AuthNode, policy: PolicyEntryInfo, remark: str) -> None:
    n = auth_node
    create_user(n, "erin")
    response = n.call(R.AUTH_CREATE_ACL, AclRequestHeader(subject="User:erin"), acl("User:erin", policy))
    assert response.code == ResponseCode.INVALID_PARAMETER
    assert remark in (response.remark or "")


def test_acl_subject_problems(auth_node: AuthNode) -> None:
    n = auth_node
    body = acl("User:ghost", entry("Topic:t", "Pub"))
    missing = n.call(R.AUTH_CREATE_ACL, AclRequestHeader(subject="User:ghost"), body)
    assert missing.code == ResponseCode.USER_NOT_EXIST and "User:ghost does not exist" in (
        missing.remark or ""
    )
    for code in (R.AUTH_GET_ACL, R.AUTH_DELETE_ACL):
        assert n.call(code, AclRequestHeader(subject="User:ghost")).code == ResponseCode.USER_NOT_EXIST
    bad = n.call(
        R.AUTH_CREATE_ACL, AclRequestHeader(subject="Role:x"), acl("Role:x", entry("Topic:t", "Pub"))
    )
    assert bad.code == ResponseCode.INVALID_PARAMETER and "is not User:NAME" in (bad.remark or "")
    create_user(n, "frank")
    empty = n.call(R.AUTH_CREATE_ACL, AclRequestHeader(subject="User:frank"), AclInfo(subject="User:frank"))
    assert empty.code == ResponseCode.INVALID_PARAMETER and "has no policies" in (empty.remark or "")


def test_only_a_super_user_manages_super_users(auth_node: AuthNode) -> None:
    n = auth_node
    create_user(n, "ops", "ops-pass-77")
    n.call(
        R.AUTH_CREATE_ACL,
        AclRequestHeader(subject="User:ops"),
        acl("User:ops", entry("Cluster", "Update", "Get")),
    )
    ops = Credentials("ops", "ops-pass-77")
    refused = n.call(
        R.AUTH_CREATE_USER, UserRequestHeader(username="boss"), user("boss", "boss-pw-1", "Super"), ops
    )
    assert refused.code == ResponseCode.NO_PERMISSION and "only Super users" in (refused.remark or "")
    normal = n.call(
        R.AUTH_CREATE_USER, UserRequestHeader(username="intern"), user("intern", "intern-pw1"), ops
    )
    assert normal.code == ResponseCode.SUCCESS  # a Normal user with Cluster Update manages Normal users
    assert n.call(R.AUTH_DELETE_USER, UserRequestHeader(username="root"), credentials=ops).code == (
        ResponseCode.NO_PERMISSION
    )


def test_users_and_acls_survive_a_restart(tmp_path: Path) -> None:
    n = start_auth_node(tmp_path)
    try:
        create_user(n, "gina", "gina-pass-1")
        n.call(
            R.AUTH_CREATE_ACL,
            AclRequestHeader(subject="User:gina"),
            acl("User:gina", entry("Topic:g*", "Sub")),
        )
    finally:
        n.stop()
    stored = (tmp_path / "store" / "config" / "auth" / "users.json").stat()
    assert stored.st_mode & 0o077 == 0 or (tmp_path / "store" / "config" / "auth").stat().st_mode & 0o077 == 0
    n = start_auth_node(tmp_path)
    try:
        got = body_of(n.call(R.AUTH_GET_USER, UserRequestHeader(username="gina")))
        assert got["userType"] == "Normal"
        policies = body_of(n.call(R.AUTH_GET_ACL, AclRequestHeader(subject="User:gina")))["policies"]
        assert policies[0]["entries"] == [{"resource": "Topic:g*", "actions": ["Sub"], "decision": "Allow"}]
        # the password too: gina signs a request the broker checks
        create_user(n, "helen")
        signed = n.call(
            R.AUTH_GET_USER,
            UserRequestHeader(username="helen"),
            credentials=Credentials("gina", "gina-pass-1"),
        )
        assert signed.code == ResponseCode.NO_PERMISSION and "User:gina may not Get on Cluster:" in (
            signed.remark or ""
        )
    finally:
        n.stop()


def test_broker_config_never_answers_the_secret_settings(auth_node: AuthNode) -> None:
    text = (auth_node.call(R.GET_BROKER_CONFIG).body or b"").decode()
    assert "authenticationEnabled=true" in text  # the answer itself is whole
    assert ROOT.secret_key not in text
    assert "initAuthenticationUser" not in text and "innerClientAuthenticationCredentials" not in text


def test_the_inner_credentials_become_a_super_user(tmp_path: Path) -> None:
    inner = Credentials("broker-inner", "inner-pass-1")
    n = start_auth_node(
        tmp_path,
        inner_client_authentication_credentials=json.dumps(
            {"accessKey": inner.access_key, "secretKey": inner.secret_key}
        ),
    )
    try:
        got = body_of(n.call(R.AUTH_GET_USER, UserRequestHeader(username="broker-inner")))
        assert got["userType"] == "Super" and not got.get("password")
        # it signs with them: a Super user may list every user
        assert n.call(R.AUTH_LIST_USER, credentials=inner).code == ResponseCode.SUCCESS
    finally:
        n.stop()
