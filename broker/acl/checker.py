"""Deciding a request: white lists, the account's signature, then admin and resource permissions
(upstream's PlainPermissionManager.validate), over an ACL file that is re-read when it changes.

Refusal messages name the AccessKey, the request code or the resource and permission that is
missing; never a secret.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from broker.acl import config as acl_config
from broker.acl.addresses import Matcher, compile_pattern
from broker.acl.config import AclConfig, DataVersion, PlainAccount
from broker.acl.permissions import Need, allows, describe, group_resource, perm_name, perm_of
from broker.protocol.names import RETRY_PREFIX

log = logging.getLogger(__name__)

POLL_SECONDS = 1.0


class Denial(Enum):
    UNAUTHENTICATED = "unauthenticated"  # no, unknown or wrongly signed credentials
    FORBIDDEN = "forbidden"  # a known account without the permission


@dataclass(frozen=True, slots=True)
class Refusal:
    kind: Denial
    message: str


@dataclass(frozen=True, slots=True)
class _Account:
    access_key: str
    secret_key: str
    admin: bool
    white: Matcher
    perms: dict[str, int]  # topic or %RETRY%group -> flags
    default_topic: int
    default_group: int

    @classmethod
    def of(cls, account: PlainAccount) -> _Account:
        perms = {t: perm_of(p) for t, p in account.topic_perms.items()}
        perms.update({group_resource(g): perm_of(p) for g, p in account.group_perms.items()})
        return cls(
            account.access_key, account.secret_key, account.admin,
            compile_pattern(account.white_remote_address), perms,
            perm_of(account.default_topic_perm), perm_of(account.default_group_perm),
        )  # fmt: skip

    def owned(self, resource: str) -> int:
        if resource in self.perms:
            return self.perms[resource]
        return self.default_group if resource.startswith(RETRY_PREFIX) else self.default_topic


@dataclass(frozen=True, slots=True)
class _Compiled:
    white: tuple[Matcher, ...]
    accounts: dict[str, _Account]
    data_version: DataVersion | None

    @classmethod
    def of(cls, config: AclConfig) -> _Compiled:
        return cls(
            tuple(compile_pattern(p) for p in config.global_white_addresses),
            {k: _Account.of(a) for k, a in config.accounts.items()},
            config.data_version,
        )


class AclChecker:
    """The ACL of one file, reloaded when its modification time or size changes."""

    def __init__(self, path: Path, *, poll_seconds: float = POLL_SECONDS) -> None:
        self.path = path
        self._poll = poll_seconds
        self._stamp = self._stat()
        self._compiled = _Compiled.of(acl_config.load(path))  # a broken file stops the server's start
        self._checked = time.monotonic()

    @property
    def data_version(self) -> DataVersion:
        """The rules' data version: the file's, or (0, its modification time) when it has none."""
        return self._current().data_version or DataVersion(0, self._stamp[0] // 1_000_000)

    def _stat(self) -> tuple[int, int]:
        st = os.stat(self.path)
        return st.st_mtime_ns, st.st_size

    def _current(self) -> _Compiled:
        now = time.monotonic()
        if now - self._checked >= self._poll:
            self._checked = now
            self.reload()
        return self._compiled

    def reload(self, force: bool = False) -> None:
        """Re-read the file if it changed; a broken or missing file keeps the rules in force."""
        try:
            stamp = self._stat()
            if stamp == self._stamp and not force:
                return
            self._compiled = _Compiled.of(acl_config.load(self.path))
            self._stamp = stamp
            log.info("ACL file %s reloaded", self.path)
        except (OSError, acl_config.AclConfigError) as exc:
            log.error("ACL file not reloaded, the previous rules stay in force: %s", exc)

    def config(self) -> AclConfig:
        """The file's content as it is now (for the management codes)."""
        return acl_config.load(self.path)

    def update(self, change: Callable[[AclConfig], None]) -> None:
        """Read the file, apply ``change``, write it back and put it in force at once."""
        config = acl_config.load(self.path)
        change(config)
        acl_config.save(self.path, config)
        self.reload(force=True)

    def check(
        self,
        *,
        host: str,
        access_key: str | None,
        verify: Callable[[str], bool],
        needs: Sequence[Need],
        admin: bool,
        code: int,
        require_signature: bool = True,
    ) -> Refusal | None:
        """None when the request may run. ``verify(secret)`` checks its signature with a secret."""
        acl = self._current()
        if any(match(host) for match in acl.white):
            return None
        if not access_key:
            if not require_signature and not admin:
                return None
            return Refusal(Denial.UNAUTHENTICATED, f"request code {code} is not signed: no AccessKey given")
        account = acl.accounts.get(access_key)
        if account is None:
            return Refusal(Denial.UNAUTHENTICATED, f"no ACL account for AccessKey {access_key}")
        if not account.white(host) and not verify(account.secret_key):
            return Refusal(Denial.UNAUTHENTICATED, f"signature check failed for AccessKey {access_key}")
        if admin and not account.admin:
            return Refusal(
                Denial.FORBIDDEN, f"request code {code} needs an admin account; AccessKey {access_key} is not"
            )
        if account.admin and not account.perms:
            return None  # an admin without explicit permissions may use everything (upstream)
        for need in needs:
            if not allows(need.perm, account.owned(need.resource)):
                missing = f"{perm_name(need.perm)} permission on {describe(need.resource)}"
                return Refusal(Denial.FORBIDDEN, f"AccessKey {access_key} has no {missing}")
        return None
