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


def _secret(profile: Profile, environ: Mapping[str, str]) -> str:
    if profile.secret_key_env:
        value = environ.get(profile.secret_key_env, "")
        if not value:
            raise BadInput(
                f"profile {profile.name}: environment variable {profile.secret_key_env} is not set"
            )
        return value
    if profile.secret_key_file:
        path = Path(profile.secret_key_file).expanduser()
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise BadInput(f"profile {profile.name}: cannot read secret_key_file {path}: {exc}") from None
        if not lines or not lines[0].strip():
            raise BadInput(f"profile {profile.name}: secret_key_file {path} is empty")
        return lines[0].strip()
    raise BadInput(f"profile {profile.name}: access_key needs secret_key_env or secret_key_file")


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
