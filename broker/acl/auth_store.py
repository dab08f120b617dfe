"""Users and ACL policies of RocketMQ 5's access control (upstream's "ACL 2.0"): the model, its
validation and the JSON files that hold it under ``<store>/config/auth``.

A user has a password (its SecretKey), a type (``Super`` or ``Normal``) and a status (``enable`` or
``disable``). An ACL belongs to a subject (``User:NAME``) and holds policies (``Custom``, or ``Default``),
each a list of entries: a resource, the actions it allows or denies, the source IPs it applies to and
the decision. Changes are made as upstream's metadata managers make them: creating an ACL for a subject
that already has one merges the new entries in, entry by entry of the same resource.

Every problem is an :class:`AuthInputError` (bad input), :class:`UserMissing`, :class:`PolicyMissing` or
:class:`UserExists` whose message names the field, user or resource; never a password.
"""

from __future__ import annotations

import ipaddress
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from enum import Enum
from pathlib import Path
from typing import Self

from broker.protocol.auth_bodies import AclInfo, PolicyEntryInfo, PolicyInfo, UserInfo
from broker.protocol.bodies import BodyError
from broker.store.config_files import ConfigFile

AUTH_DIR = "auth"
USERS_FILE = "users.json"
ACLS_FILE = "acls.json"
SUBJECT_PREFIX = "User:"
MAX_NAME_LENGTH = 255


class AuthInputError(ValueError):
    """A user, subject, resource or policy that cannot be accepted."""


class UserMissing(LookupError):
    pass


class PolicyMissing(LookupError):
    pass


class UserExists(ValueError):
    pass


class _Named(Enum):
    """An enum whose values are upstream's names, looked up ignoring case."""

    @classmethod
    def named(cls, text: str, what: str) -> Self:
        for member in cls:
            if member.value.lower() == text.strip().lower():
                return member
        choices = "|".join(m.value for m in cls)
        raise AuthInputError(f"{what} {text!r} is not one of {choices}")


class UserType(_Named):
    SUPER = "Super"
    NORMAL = "Normal"


class UserStatus(_Named):
    ENABLE = "enable"
    DISABLE = "disable"


class ResourceType(_Named):
    ANY = "Any"
    CLUSTER = "Cluster"
    NAMESPACE = "Namespace"
    TOPIC = "Topic"
    GROUP = "Group"


class Pattern(Enum):
    ANY = "any"  # Topic:*
    LITERAL = "literal"  # Topic:Orders
    PREFIXED = "prefixed"  # Topic:order-*


class Action(_Named):
    ALL = "All"
    ANY = "Any"  # what a request asks for when any granted action will do; never in a policy
    PUB = "Pub"
    SUB = "Sub"
    CREATE = "Create"
    UPDATE = "Update"
    DELETE = "Delete"
    GET = "Get"
    LIST = "List"


class Decision(_Named):
    ALLOW = "Allow"
    DENY = "Deny"


class PolicyType(_Named):
    CUSTOM = "Custom"
    DEFAULT = "Default"


def check_name(name: str, what: str) -> str:
    if not name or not name.strip():
        raise AuthInputError(f"{what} is blank")
    if name != name.strip() or not name.isprintable() or any(c.isspace() for c in name):
        raise AuthInputError(f"{what} {name!r} holds spaces or control characters")
    if len(name) > MAX_NAME_LENGTH:
        raise AuthInputError(f"{what} is longer than {MAX_NAME_LENGTH} characters")
    return name


@dataclass(frozen=True, slots=True)
class User:
    username: str
    password: str = field(repr=False)
    user_type: UserType = UserType.NORMAL
    user_status: UserStatus = UserStatus.ENABLE

    @property
    def subject(self) -> str:
        return SUBJECT_PREFIX + self.username

    def info(self) -> UserInfo:
        """The wire form without the password."""
        return UserInfo(
            username=self.username, userType=self.user_type.value, userStatus=self.user_status.value
        )

    def to_doc(self) -> dict[str, str]:
        return {
            "username": self.username,
            "password": self.password,
            "userType": self.user_type.value,
            "userStatus": self.user_status.value,
        }


@dataclass(frozen=True, slots=True)
class Resource:
    type: ResourceType
    name: str = ""  # the literal name, or the prefix; empty for Pattern.ANY
    pattern: Pattern = Pattern.LITERAL

    @classmethod
    def parse(cls, text: str | None) -> Resource:
        """``*``, ``Cluster``, ``Namespace``, ``TYPE:NAME``, ``TYPE:*`` or ``TYPE:PREFIX*`` (TYPE is
        Cluster, Namespace, Topic or Group, any case)."""
        key = (text or "").strip()
        if not key:
            raise AuthInputError("a policy entry has no resource")
        if key == "*":
            return cls(ResourceType.ANY, "", Pattern.ANY)
        type_name, sep, name = key.partition(":")
        kinds = {t.value.lower(): t for t in ResourceType if t is not ResourceType.ANY}
        kind = kinds.get(type_name.strip().lower())
        if kind is None:
            names = "|".join(t.value for t in kinds.values())
            raise AuthInputError(f"resource {key!r}: type {type_name!r} is not one of {names} (or * for all)")
        if not sep:
            if kind in (ResourceType.CLUSTER, ResourceType.NAMESPACE):
                return cls(kind, "", Pattern.ANY)  # a bare Cluster or Namespace means all of them
            raise AuthInputError(f"resource {key!r} needs a name: {kind.value}:NAME")
        if name == "*":
            return cls(kind, "", Pattern.ANY)
        if "*" in name[:-1]:
            raise AuthInputError(f"resource {key!r}: '*' may only end the name (a prefix)")
        prefixed = name.endswith("*")
        check_name(name.rstrip("*"), f"the name of resource {key!r}")
        return cls(kind, name.rstrip("*"), Pattern.PREFIXED if prefixed else Pattern.LITERAL)

    @property
    def key(self) -> str:
        if self.type is ResourceType.ANY:
            return "*"
        suffix = {Pattern.ANY: "*", Pattern.LITERAL: self.name, Pattern.PREFIXED: self.name + "*"}
        return f"{self.type.value}:{suffix[self.pattern]}"

    def covers(self, wanted: Resource) -> bool:
        """Whether this policy resource includes the (literal) resource a request touches."""
        if self.type is ResourceType.ANY:
            return True
        if self.type is not wanted.type:
            return False
        if self.pattern is Pattern.ANY:
            return True
        if self.pattern is Pattern.PREFIXED:
            return wanted.name.startswith(self.name)
        return wanted.name == self.name


def _source_ip(text: str) -> str:
    value = text.strip()
    if not value:
        raise AuthInputError("a source IP is blank")
    try:
        if "/" in value:
            ipaddress.ip_network(value, strict=False)
        else:
            ipaddress.ip_address(value)
    except ValueError:
        raise AuthInputError(f"source IP {value!r} is not an IP address or CIDR range") from None
    return value


def ip_matches(host: str, source_ip: str) -> bool:
    try:
        address = ipaddress.ip_address(host)
        if "/" in source_ip:
            return address in ipaddress.ip_network(source_ip, strict=False)
        return address == ipaddress.ip_address(source_ip)
    except ValueError:
        return False


@dataclass(frozen=True, slots=True)
class PolicyEntry:
    resource: Resource
    actions: tuple[Action, ...]
    source_ips: tuple[str, ...]
    decision: Decision

    @classmethod
    def of(cls, info: PolicyEntryInfo) -> PolicyEntry:
        resource = Resource.parse(info.resource)
        where = f"policy entry of {resource.key}"
        if not info.actions:
            raise AuthInputError(f"{where} has no actions")
        actions = tuple(dict.fromkeys(Action.named(a, f"{where}: action") for a in info.actions))
        if Action.ANY in actions:
            raise AuthInputError(f"{where}: action Any cannot be granted; use All")
        if not info.decision:
            raise AuthInputError(f"{where} has no decision (Allow or Deny)")
        decision = Decision.named(info.decision, f"{where}: decision")
        ips = tuple(_source_ip(ip) for ip in info.sourceIps or ())
        return cls(resource, actions, ips, decision)

    def info(self) -> PolicyEntryInfo:
        return PolicyEntryInfo(
            resource=self.resource.key,
            actions=[a.value for a in self.actions],
            sourceIps=list(self.source_ips) or None,
            decision=self.decision.value,
        )

    def applies(self, resource: Resource, actions: Iterable[Action], host: str) -> bool:
        if not self.resource.covers(resource):
            return False
        wanted = set(actions)
        if Action.ANY not in wanted and Action.ALL not in self.actions and not wanted & set(self.actions):
            return False
        return not self.source_ips or any(ip_matches(host, ip) for ip in self.source_ips)


@dataclass(slots=True)
class Policy:
    policy_type: PolicyType
    entries: dict[str, PolicyEntry]  # by resource key: one entry per resource

    @classmethod
    def of(cls, info: PolicyInfo) -> Policy:
        kind = PolicyType.named(info.policyType, "policyType") if info.policyType else PolicyType.CUSTOM
        if not info.entries:
            raise AuthInputError(f"the {kind.value} policy has no entries")
        entries = [PolicyEntry.of(e) for e in info.entries]
        return cls(kind, {e.resource.key: e for e in entries})

    def info(self, keep: str = "") -> PolicyInfo:
        entries = [e.info() for key, e in self.entries.items() if keep in key]
        return PolicyInfo(policyType=self.policy_type.value, entries=entries)


def parse_subject(text: str | None) -> str:
    """The username of ``User:NAME``."""
    subject = (text or "").strip()
    if not subject:
        raise AuthInputError("the subject is blank (expected User:NAME)")
    kind, sep, name = subject.partition(":")
    if not sep or kind.lower() != "user":
        raise AuthInputError(f"subject {subject!r} is not User:NAME")
    return check_name(name, f"the username of subject {subject!r}")


@dataclass(slots=True)
class Acl:
    username: str
    policies: dict[PolicyType, Policy]

    @property
    def subject(self) -> str:
        return SUBJECT_PREFIX + self.username

    def merge(self, policies: Iterable[Policy]) -> None:
        """Upstream's updatePolicy: new entries replace those of the same resource, others stay."""
        for policy in policies:
            old = self.policies.get(policy.policy_type)
            if old is None:
                self.policies[policy.policy_type] = Policy(policy.policy_type, dict(policy.entries))
            else:
                old.entries.update(policy.entries)

    def info(self, resource_filter: str = "") -> AclInfo:
        policies = [p.info(resource_filter) for p in self.policies.values()]
        return AclInfo(subject=self.subject, policies=[p for p in policies if p.entries])

    def matching(self, resource: Resource, actions: Iterable[Action], host: str) -> PolicyEntry | None:
        """The entry that decides (upstream's AclAuthorizationHandler): Custom entries first, Default
        ones only when no Custom entry applies; then the most specific resource (a literal name, a
        longer prefix, a type's wildcard, ``*``), Deny before Allow among equally specific ones."""
        actions = tuple(actions)
        for kind in (PolicyType.CUSTOM, PolicyType.DEFAULT):
            policy = self.policies.get(kind)
            found = (
                [e for e in policy.entries.values() if e.applies(resource, actions, host)] if policy else []
            )
            if found:
                return min(found, key=_specificity)
        return None


def _specificity(entry: PolicyEntry) -> tuple[int, int, int]:
    r = entry.resource
    rank = (
        3
        if r.type is ResourceType.ANY
        else {Pattern.LITERAL: 0, Pattern.PREFIXED: 1, Pattern.ANY: 2}[r.pattern]
    )
    return rank, -len(r.name), 0 if entry.decision is Decision.DENY else 1


def user_of(info: UserInfo, username: str, *, creating: bool) -> User:
    """A user from the wire (``username`` from the header); on update absent fields stay None-like."""
    name = check_name(username, "username")
    if info.username and info.username != username:
        raise AuthInputError(f"the body's username {info.username!r} is not the header's {username!r}")
    if creating and not (info.password or "").strip():
        raise AuthInputError(f"user {name}: password is blank")
    if info.password and (info.password != info.password.strip() or not info.password.isprintable()):
        raise AuthInputError(f"user {name}: the password holds leading/trailing spaces or control characters")
    kind = UserType.named(info.userType, "userType") if info.userType else UserType.NORMAL
    status = UserStatus.named(info.userStatus, "userStatus") if info.userStatus else UserStatus.ENABLE
    return User(name, info.password or "", kind, status)


class AuthStore:
    """Users and ACLs of one broker, kept in memory and written through to ``<config>/auth``."""

    def __init__(self, config_dir: Path) -> None:
        self.dir = config_dir / AUTH_DIR
        self._users_file = ConfigFile(self.dir / USERS_FILE)
        self._acls_file = ConfigFile(self.dir / ACLS_FILE)
        self.users: dict[str, User] = {}
        self.acls: dict[str, Acl] = {}
        self.reload()

    # == files ==================================================================================
    def reload(self) -> None:
        """Read both files (their ``.bak`` when one is damaged); raises AuthInputError."""
        self.users, self.acls = {}, {}
        try:
            self._read()
        except (AuthInputError, BodyError, AttributeError) as exc:
            raise AuthInputError(f"{self.dir}: {exc}") from None

    def _read(self) -> None:
        users = self._users_file.load() or {}
        for doc in users.get("users", []):
            user = user_of(UserInfo.from_obj(doc), str(doc.get("username", "")), creating=True)
            self.users[user.username] = user
        acls = self._acls_file.load() or {}
        for doc in acls.get("acls", []):
            info = AclInfo.from_obj(doc)
            name = parse_subject(info.subject)
            self.acls[name] = Acl(name, {p.policy_type: p for p in map(Policy.of, info.policies)})

    def _private_dir(self) -> None:
        # passwords live here: only the broker's user may enter the folder
        self.dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.dir, 0o700)

    def _save_users(self) -> None:
        self._private_dir()
        doc = {"users": [u.to_doc() for u in self.users.values()]}
        self._users_file.save(json.dumps(doc, indent=2) + "\n")

    def _save_acls(self) -> None:
        self._private_dir()
        docs = [json.loads(a.info().to_json(standard=True)) for a in self.acls.values()]
        self._acls_file.save(json.dumps({"acls": docs}, indent=2) + "\n")

    # == users ==================================================================================
    def user(self, username: str) -> User:
        check_name(username, "username")
        found = self.users.get(username)
        if found is None:
            raise UserMissing(f"user {username} does not exist")
        return found

    def is_super(self, username: str) -> bool:
        found = self.users.get(username)
        return found is not None and found.user_type is UserType.SUPER

    def create_user(self, user: User) -> None:
        if user.username in self.users:
            raise UserExists(f"user {user.username} already exists")
        self.users[user.username] = user
        self._save_users()

    def ensure_user(self, user: User) -> bool:
        """Create ``user`` unless one of that name exists; whether it was created."""
        if user.username in self.users:
            return False
        self.create_user(user)
        return True

    def update_user(self, username: str, info: UserInfo) -> User:
        """Upstream's updateUser: a non-blank password, a type and a status replace the old ones."""
        old = self.user(username)
        change = user_of(info, username, creating=False)
        new = replace(
            old,
            password=change.password or old.password,
            user_type=change.user_type if info.userType else old.user_type,
            user_status=change.user_status if info.userStatus else old.user_status,
        )
        self.users[username] = new
        self._save_users()
        return new

    def delete_user(self, username: str) -> None:
        """The user and its ACL."""
        self.user(username)
        del self.users[username]
        self._save_users()
        if self.acls.pop(username, None) is not None:
            self._save_acls()

    def list_users(self, name_filter: str | None = None) -> list[User]:
        return [u for name, u in sorted(self.users.items()) if not name_filter or name_filter in name]

    # == ACLs ===================================================================================
    def _subject(self, subject: str | None) -> str:
        name = parse_subject(subject)
        if name not in self.users:
            raise UserMissing(f"subject User:{name} does not exist (create the user first)")
        return name

    def put_acl(self, subject: str | None, info: AclInfo) -> Acl:
        """AUTH_CREATE_ACL and AUTH_UPDATE_ACL (the same in upstream): merge the policies in."""
        name = self._subject(subject)
        if info.subject and parse_subject(info.subject) != name:
            raise AuthInputError(f"the body's subject {info.subject!r} is not the header's {subject!r}")
        if not info.policies:
            raise AuthInputError(f"the ACL of User:{name} has no policies")
        policies = [Policy.of(p) for p in info.policies]
        acl = self.acls.setdefault(name, Acl(name, {}))
        acl.merge(policies)
        self._save_acls()
        return acl

    def acl(self, subject: str | None) -> Acl:
        name = self._subject(subject)
        found = self.acls.get(name)
        if found is None:
            raise PolicyMissing(f"User:{name} has no ACL")
        return found

    def delete_acl(self, subject: str | None, policy_type: str | None, resource: str | None) -> None:
        """Without ``resource`` the subject's whole ACL, else that resource's entry of the policy
        (Custom unless named); an ACL left without entries goes."""
        acl = self.acl(subject)
        if resource and resource.strip():
            kind = PolicyType.named(policy_type, "policyType") if policy_type else PolicyType.CUSTOM
            key = Resource.parse(resource).key
            policy = acl.policies.get(kind)
            if policy is None or policy.entries.pop(key, None) is None:
                raise PolicyMissing(f"{acl.subject} has no {kind.value} policy entry for {key}")
            if not policy.entries:
                del acl.policies[kind]
        if not resource or not resource.strip() or not acl.policies:
            del self.acls[acl.username]
        self._save_acls()

    def list_acls(
        self, subject_filter: str | None = None, resource_filter: str | None = None
    ) -> list[AclInfo]:
        """ACLs whose subject contains ``subject_filter``, with the entries whose resource contains
        ``resource_filter`` (ACLs left without entries are not listed)."""
        out: list[AclInfo] = []
        for _, acl in sorted(self.acls.items()):
            if subject_filter and subject_filter not in acl.subject:
                continue
            info = acl.info(resource_filter or "")
            if info.policies:
                out.append(info)
        return out
