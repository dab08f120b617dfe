"""The credentials and TLS settings a profile (or the environment) gives the admin service.

A profile names its AccessKey and where the SecretKey is (``secret_key_env``: an environment
variable; ``secret_key_file``: a file whose first line is the key); the secret itself is never stored
in the profile file, never printed and never logged. ``RMQ_ACCESS_KEY`` with ``RMQ_SECRET_KEY``
override the profile (for CI).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from admin.errors import BadInput

if TYPE_CHECKING:
    from admin.profiles import Profile
    from broker.acl.client import ClientSecurity


def read_secret(env: str | None, path: Path | None, environ: Mapping[str, str], what: str) -> str | None:
    """A secret from an environment variable, else from the first line of a file; None when neither is
    named. ``what`` names it in the errors (an unset variable, an unreadable or empty file)."""
    if env is not None:
        value = environ.get(env, "")
        if not value:
            raise BadInput(f"environment variable {env} is not set")
        return value
    if path is None:
        return None
    path = path.expanduser()
    try:
        line = next(iter(path.read_text(encoding="utf-8").splitlines()), "").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"cannot read {path}: {exc}") from None
    if not line:
        raise BadInput(f"{path} holds no {what}")
    return line


@dataclass(frozen=True, slots=True)
class SecretSource:
    """An AccessKey and where its secret is (an environment variable or a file), never the secret."""

    access_key: str
    env: str | None
    file: Path | None
    owner: str | None  # "profile NAME" when a profile named it, for the errors


def secret_source(profile: Profile | None, environ: Mapping[str, str]) -> SecretSource | None:
    """``RMQ_ACCESS_KEY`` with ``RMQ_SECRET_KEY``, else the profile's key; None when neither names one."""
    if environ.get("RMQ_ACCESS_KEY") and environ.get("RMQ_SECRET_KEY"):
        return SecretSource(environ["RMQ_ACCESS_KEY"], "RMQ_SECRET_KEY", None, None)
    if profile is None or not profile.access_key:
        return None
    env = profile.secret_key_env or None
    file = Path(profile.secret_key_file).expanduser() if profile.secret_key_file and not env else None
    return SecretSource(profile.access_key, env, file, f"profile {profile.name}")


def tls_files(profile: Profile) -> tuple[Path | None, Path | None, Path | None] | None:
    """The profile's CA, certificate and key files when it asks for TLS; None without TLS."""
    if not profile.tls:
        return None
    paths = (profile.tls_ca_file, profile.tls_cert_file, profile.tls_key_file)
    ca, cert, key = (Path(p).expanduser() if p else None for p in paths)
    return ca, cert, key


def _secret(source: SecretSource, environ: Mapping[str, str]) -> str:
    prefix = f"{source.owner}: " if source.owner else ""
    try:
        secret = read_secret(source.env, source.file, environ, "secret key")
    except BadInput as exc:
        raise BadInput(f"{prefix}{exc}") from None
    if secret is None:
        raise BadInput(f"{prefix}access_key needs secret_key_env or secret_key_file")
    return secret


def client_security(profile: Profile | None, environ: Mapping[str, str]) -> ClientSecurity | None:
    """Credentials and TLS context of the environment and the profile; None when neither has any."""
    # the ACL and TLS modules (hmac, ssl) load only when used: most commands run without them
    credentials = None
    source = secret_source(profile, environ)
    if source is not None:
        from broker.acl.signer import Credentials

        credentials = Credentials(source.access_key, _secret(source, environ))
    ssl_context = None
    files = tls_files(profile) if profile is not None else None
    if profile is not None and files is not None:
        from broker.acl.tls import TlsConfigError, client_context

        try:
            ssl_context = client_context(*files)
        except TlsConfigError as exc:
            raise BadInput(f"profile {profile.name}: {exc}") from None
    if credentials is None and ssl_context is None:
        return None
    from broker.acl.client import ClientSecurity

    return ClientSecurity(credentials, ssl_context)
