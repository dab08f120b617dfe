"""Named connection profiles in ``~/.config/rmq/config.toml`` and how settings are resolved.

Precedence, highest first: flags > environment (``NAMESRV_ADDR``, ``RMQ_OUTPUT``, ``RMQ_TIMEOUT``) >
the profile (``--profile``, else ``RMQ_PROFILE``, else the file's ``current``) > built-in defaults.
The file is small TOML written by :func:`dump_toml`::

    current = "local"

    [profiles.local]
    namesrv = "127.0.0.1:9876"
    output = "table"
    timeout = 5.0
    access_key = "ops-admin"            # ACL: the SecretKey is read from
    secret_key_env = "RMQ_OPS_SECRET"   # an environment variable or secret_key_file, never stored here
    tls = true                          # TLS with tls_ca_file (and tls_cert_file/tls_key_file for mTLS)
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING

from admin.errors import BadInput, NotFound
from admin.security import client_security

if TYPE_CHECKING:
    from broker.acl.client import ClientSecurity

DEFAULT_NAMESRV = "127.0.0.1:9876"
DEFAULT_TIMEOUT = 5.0
DEFAULT_OUTPUT = "table"
OUTPUTS = ("table", "json", "text")
LOCAL_PROFILE = "local"
_NAME = re.compile(r"[A-Za-z0-9_.-]+")


@dataclass(frozen=True, slots=True)
class Profile:
    name: str
    namesrv: str | None = None
    output: str | None = None
    timeout: float | None = None
    access_key: str | None = None
    secret_key_env: str | None = None  # where the secret is: never the secret itself
    secret_key_file: str | None = None
    tls: bool | None = None
    tls_ca_file: str | None = None
    tls_cert_file: str | None = None
    tls_key_file: str | None = None


_TEXT_KEYS = (
    "access_key",
    "secret_key_env",
    "secret_key_file",
    "tls_ca_file",
    "tls_cert_file",
    "tls_key_file",
)


@dataclass(slots=True)
class ProfileFile:
    """The config file's content: the profiles and which one is current."""

    current: str | None = None
    profiles: dict[str, Profile] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Settings:
    """What a command connects with, and where each value came from (flag, env, profile, default)."""

    namesrv: list[str]
    output: str
    timeout: float
    profile: str | None
    sources: dict[str, str]
    security: ClientSecurity | None = None  # ACL credentials and TLS (admin/security.py)


def split_addresses(text: str) -> list[str]:
    """``a:1;b:2`` (commas too) to a list of addresses."""
    return [a.strip() for a in text.replace(",", ";").split(";") if a.strip()]


def check_address(addr: str, what: str) -> None:
    """Refuse an address that is not ``host:port`` (a missing port is a typo, not a connection failure)."""
    host, sep, port = addr.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise BadInput(f"{what} {addr!r} is not HOST:PORT")


def config_path(env: Mapping[str, str] | None = None) -> Path:
    """``$RMQ_CONFIG``, else ``$XDG_CONFIG_HOME/rmq/config.toml``, else ``~/.config/rmq/config.toml``."""
    environ = os.environ if env is None else env
    if environ.get("RMQ_CONFIG"):
        return Path(environ["RMQ_CONFIG"]).expanduser()
    base = Path(environ["XDG_CONFIG_HOME"]) if environ.get("XDG_CONFIG_HOME") else Path.home() / ".config"
    return base / "rmq" / "config.toml"


def check_profile(profile: Profile) -> Profile:
    if not _NAME.fullmatch(profile.name):
        raise BadInput(f"profile name {profile.name!r} may only use letters, digits, '_', '.' and '-'")
    if profile.output is not None and profile.output not in OUTPUTS:
        raise BadInput(f"output {profile.output!r} is not one of {', '.join(OUTPUTS)}")
    if profile.timeout is not None and profile.timeout <= 0:
        raise BadInput(f"timeout {profile.timeout:g} is not positive")
    if profile.secret_key_env and profile.secret_key_file:
        raise BadInput(f"profile {profile.name}: give secret_key_env or secret_key_file, not both")
    has_secret = bool(profile.secret_key_env or profile.secret_key_file)
    if profile.access_key and not has_secret:
        raise BadInput(f"profile {profile.name}: access_key needs secret_key_env or secret_key_file")
    if has_secret and not profile.access_key:
        raise BadInput(f"profile {profile.name}: a SecretKey source needs access_key")
    if profile.tls is False and (profile.tls_ca_file or profile.tls_cert_file or profile.tls_key_file):
        raise BadInput(f"profile {profile.name}: TLS files are set but tls is false")
    if profile.tls_key_file and not profile.tls_cert_file:
        raise BadInput(f"profile {profile.name}: tls_key_file needs tls_cert_file")
    return profile


def load(path: Path) -> ProfileFile:
    """The profiles in ``path``; an absent file has none."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ProfileFile()
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"cannot read {path}: {exc}") from None
    import tomli  # only when there is a file to parse

    try:
        doc = tomli.loads(text)
    except tomli.TOMLDecodeError as exc:
        raise BadInput(f"cannot read {path}: {exc}") from None
    result = ProfileFile(current=doc.get("current") if isinstance(doc.get("current"), str) else None)
    table = doc.get("profiles", {})
    for name, values in (table if isinstance(table, dict) else {}).items():
        if not isinstance(values, dict):
            raise BadInput(f"{path}: profiles.{name} is not a table")
        known = {f.name for f in fields(Profile)} - {"name"}
        unknown = sorted(set(values) - known)
        if unknown:
            raise BadInput(f"{path}: profiles.{name} has unknown setting(s) {', '.join(unknown)}")
        timeout = values.get("timeout")
        result.profiles[name] = check_profile(
            Profile(
                name,
                namesrv=str(values["namesrv"]) if "namesrv" in values else None,
                output=str(values["output"]) if "output" in values else None,
                timeout=float(timeout) if isinstance(timeout, int | float) else None,
                tls=values["tls"] if isinstance(values.get("tls"), bool) else None,
                **{key: str(values[key]) for key in _TEXT_KEYS if key in values},
            )
        )
    return result


def _toml_value(value: str | float) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in escaped) + '"'


def dump_toml(content: ProfileFile) -> str:
    """The file's TOML text (only strings and floats occur, so a tiny writer suffices)."""
    lines = [f"current = {_toml_value(content.current)}", ""] if content.current else []
    for name, p in sorted(content.profiles.items()):
        lines.append(f"[profiles.{_toml_value(name)}]")
        for key in ("namesrv", "output", "timeout", "tls", *_TEXT_KEYS):
            value = getattr(p, key)
            if value is not None:
                lines.append(f"{key} = {_toml_value(value)}")
        lines.append("")
    return "\n".join(lines)


def save(path: Path, content: ProfileFile) -> None:
    """Write atomically (the file may hold credentials later: owner-only permissions)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(dump_toml(content))
    os.replace(tmp, path)


def create(path: Path, profile: Profile, make_current: bool = False) -> ProfileFile:
    """Add or replace a profile; the first profile becomes current."""
    content = load(path)
    content.profiles[profile.name] = check_profile(profile)
    if make_current or content.current is None:
        content.current = profile.name
    save(path, content)
    return content


def use(path: Path, name: str) -> ProfileFile:
    content = load(path)
    if name not in content.profiles:
        raise NotFound(f"no profile {name} in {path}")
    content.current = name
    save(path, content)
    return content


def delete(path: Path, name: str) -> ProfileFile:
    content = load(path)
    if content.profiles.pop(name, None) is None:
        raise NotFound(f"no profile {name} in {path}")
    if content.current == name:
        content.current = None
    save(path, content)
    return content


def save_local_profile(namesrv: str, path: Path | None = None) -> Path:
    """Record the NameServer ``rmq up`` started as the ``local`` profile (current if none is)."""
    target = path or config_path()
    content = load(target)
    old = content.profiles.get(LOCAL_PROFILE, Profile(LOCAL_PROFILE))
    content.profiles[LOCAL_PROFILE] = dataclasses.replace(old, namesrv=namesrv)
    content.current = content.current or LOCAL_PROFILE
    save(target, content)
    return target


def resolve(
    *,
    namesrv: str | None = None,
    output: str | None = None,
    timeout: float | None = None,
    profile: str | None = None,
    env: Mapping[str, str] | None = None,
    path: Path | None = None,
) -> Settings:
    """Settings from flags (the arguments), environment, profile and defaults, in that order."""
    environ = os.environ if env is None else env
    name = profile or environ.get("RMQ_PROFILE") or None
    content = load(path or config_path(environ))
    chosen: Profile | None = None
    if name is not None:
        chosen = content.profiles.get(name)
        if chosen is None:
            raise BadInput(f"no profile {name} (see 'rmq profile list')")
    elif content.current is not None:
        chosen = content.profiles.get(content.current)
    sources: dict[str, str] = {}

    def pick(key: str, flag: str | None, env_var: str, default: str) -> str:
        candidates = (
            (flag, "flag"),
            (environ.get(env_var) or None, f"env {env_var}"),
            (getattr(chosen, key) if chosen else None, f"profile {chosen.name}" if chosen else ""),
        )
        for value, source in candidates:
            if value is not None:
                sources[key] = source
                return str(value)
        sources[key] = "default"
        return default

    out = pick("output", output, "RMQ_OUTPUT", DEFAULT_OUTPUT)
    if out not in OUTPUTS:
        raise BadInput(f"output {out!r} ({sources['output']}) is not one of {', '.join(OUTPUTS)}")
    raw_timeout = pick(
        "timeout", None if timeout is None else str(timeout), "RMQ_TIMEOUT", str(DEFAULT_TIMEOUT)
    )
    try:
        seconds = float(raw_timeout)
    except ValueError:
        raise BadInput(f"timeout {raw_timeout!r} ({sources['timeout']}) is not a number") from None
    if seconds <= 0:
        raise BadInput(f"timeout {raw_timeout} ({sources['timeout']}) is not positive")
    addrs = split_addresses(pick("namesrv", namesrv, "NAMESRV_ADDR", DEFAULT_NAMESRV))
    if not addrs:
        raise BadInput(f"the NameServer address ({sources['namesrv']}) is empty")
    for addr in addrs:
        check_address(addr, f"NameServer address ({sources['namesrv']})")
    security = client_security(chosen, environ)
    return Settings(addrs, out, seconds, chosen.name if chosen else None, sources, security)
