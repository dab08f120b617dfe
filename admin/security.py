"""The credentials and TLS settings a profile (or the environment) gives the admin service.

A profile names its AccessKey and where the SecretKey is (``secret_key_env``: an environment
variable; ``secret_key_file``: a file whose first line is the key); the secret itself is never stored
in the profile file, never printed and never logged. ``RMQ_ACCESS_KEY`` with ``RMQ_SECRET_KEY``
override the profile (for CI).
"""

from __future__ import annotations

from collections.abc import Mapping
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


def _secret(profile: Profile, environ: Mapping[str, str]) -> str:
    file = Path(profile.secret_key_file) if profile.secret_key_file else None
    try:
        secret = read_secret(profile.secret_key_env, file, environ, "secret key")
    except BadInput as exc:
        raise BadInput(f"profile {profile.name}: {exc}") from None
    if secret is None:
        raise BadInput(f"profile {profile.name}: access_key needs secret_key_env or secret_key_file")
    return secret


def client_security(profile: Profile | None, environ: Mapping[str, str]) -> ClientSecurity | None:
    """Credentials and TLS context of the environment and the profile; None when neither has any."""
    # the ACL and TLS modules (hmac, ssl) load only when used: most commands run without them
    credentials = None
    if environ.get("RMQ_ACCESS_KEY") and environ.get("RMQ_SECRET_KEY"):
        from broker.acl.signer import Credentials

        credentials = Credentials(environ["RMQ_ACCESS_KEY"], environ["RMQ_SECRET_KEY"])
    elif profile is not None and profile.access_key:
        from broker.acl.signer import Credentials

        credentials = Credentials(profile.access_key, _secret(profile, environ))
    ssl_context = None
    if profile is not None and profile.tls:
        from broker.acl.tls import TlsConfigError, client_context

        paths = (profile.tls_ca_file, profile.tls_cert_file, profile.tls_key_file)
        ca, cert, key = (Path(p).expanduser() if p else None for p in paths)
        try:
            ssl_context = client_context(ca, cert, key)
        except TlsConfigError as exc:
            raise BadInput(f"profile {profile.name}: {exc}") from None
    if credentials is None and ssl_context is None:
        return None
    from broker.acl.client import ClientSecurity

    return ClientSecurity(credentials, ssl_context)
