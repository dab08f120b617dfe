"""Access control and TLS for the ``rocketmq`` data source: the options, their checks, and the client
settings built from them where a connection opens (the driver when planning, the tasks in read() and
write()).

Options (case-insensitive): ``accessKey`` with exactly one of ``secretKeyEnv`` (an environment variable
of Spark's Python processes), ``secretKeyFile`` (the first line of a file) or ``secretKey`` (the secret
itself, then visible in Spark's plan and UI); ``tls`` (true/false) with ``tlsCaFile``, ``tlsCertFile``,
``tlsKeyFile``. With secretKeyEnv or secretKeyFile only where the secret is travels with the query: it
is read again where each connection opens, and never logged nor shown in a repr.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from admin.pipelines.plan import OptionError

if TYPE_CHECKING:
    import ssl

    from admin.profiles import Profile
    from broker.acl.client import ClientSecurity

SECRET_OPTIONS = ("secretKeyEnv", "secretKeyFile", "secretKey")
TLS_FILE_OPTIONS = ("tlsCaFile", "tlsCertFile", "tlsKeyFile")


@dataclass(frozen=True, slots=True)
class SecureOptions:
    """Where the credentials and TLS material are; the plain ``secret`` stays out of ``repr``."""

    access_key: str | None = None
    secret_env: str | None = None
    secret_file: str | None = None
    secret: str | None = field(default=None, repr=False)
    tls: bool = False
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None

    def client_security(self) -> ClientSecurity | None:
        """Credentials (the secret read now, here) and TLS context; None when there are neither."""
        from admin.errors import BadInput
        from admin.security import read_secret

        credentials = None
        if self.access_key is not None:
            from broker.acl.signer import Credentials

            secret = self.secret
            if secret is None:
                option = "secretKeyEnv" if self.secret_env is not None else "secretKeyFile"
                file = Path(self.secret_file) if self.secret_file is not None else None
                try:
                    secret = read_secret(self.secret_env, file, os.environ, "secret key")
                except BadInput as exc:
                    hint = " in Spark's Python processes" if self.secret_env is not None else ""
                    raise OptionError(f"option {option}: {exc}{hint}") from None
            assert secret is not None  # parse_secure_options required one source
            credentials = Credentials(self.access_key, secret)
        ssl_context = self._ssl_context() if self.tls else None
        if credentials is None and ssl_context is None:
            return None
        from broker.acl.client import ClientSecurity

        return ClientSecurity(credentials, ssl_context)

    def _ssl_context(self) -> ssl.SSLContext:
        from broker.acl.tls import TlsConfigError, client_context

        paths = dict(zip(TLS_FILE_OPTIONS, (self.ca_file, self.cert_file, self.key_file), strict=True))
        for option, path in paths.items():
            if path is not None and not os.access(path, os.R_OK):
                raise OptionError(f"option {option}: cannot read {path}")
        ca, cert, key = (Path(p) if p else None for p in paths.values())
        try:
            return client_context(ca, cert, key)
        except TlsConfigError as exc:
            raise OptionError(f"option {'/'.join(TLS_FILE_OPTIONS)}: {exc}") from None


def parse_secure_options(opts: Mapping[str, str]) -> SecureOptions:
    """Check the access-control and TLS options (names lower-cased) and that the secret and the TLS
    files can be read here, so mistakes fail on the driver before any task runs."""
    given = {name: opts[name.lower()] for name in ("accessKey", *SECRET_OPTIONS) if name.lower() in opts}
    sources = [name for name in SECRET_OPTIONS if name in given]
    if "accessKey" in given:
        if not given["accessKey"]:
            raise OptionError("option accessKey is empty")
        if len(sources) != 1:
            raise OptionError(
                f"option accessKey needs exactly one of {', '.join(SECRET_OPTIONS)}"
                + (f" (got {', '.join(sources)})" if sources else "")
            )
        if not given[sources[0]]:
            raise OptionError(f"option {sources[0]} is empty")
    elif sources:
        raise OptionError(f"option {sources[0]} needs the option accessKey")
    tls_raw = (opts.get("tls") or "false").strip().lower()
    if tls_raw not in ("true", "false"):
        raise OptionError(f"option tls must be true or false, got {opts.get('tls')!r}")
    files = {name: opts.get(name.lower()) or None for name in TLS_FILE_OPTIONS}
    if tls_raw == "false" and any(files.values()):
        named = ", ".join(name for name, path in files.items() if path)
        raise OptionError(f"option {named} needs tls=true")
    if files["tlsKeyFile"] and not files["tlsCertFile"]:
        raise OptionError("option tlsKeyFile needs tlsCertFile")
    spec = SecureOptions(
        access_key=given.get("accessKey"),
        secret_env=given.get("secretKeyEnv"),
        secret_file=given.get("secretKeyFile"),
        secret=given.get("secretKey"),
        tls=tls_raw == "true",
        ca_file=files["tlsCaFile"],
        cert_file=files["tlsCertFile"],
        key_file=files["tlsKeyFile"],
    )
    spec.client_security()
    return spec


def profile_options(profile: Profile | None, environ: Mapping[str, str]) -> dict[str, str]:
    """The options that give the data source what ``rmq`` itself connects with: ``RMQ_ACCESS_KEY``
    with ``RMQ_SECRET_KEY``, else the profile's key and where its secret is, and the profile's TLS
    files (the precedence of admin/security.py). The secret itself never becomes an option."""
    from admin.security import secret_source, tls_files

    out: dict[str, str] = {}
    source = secret_source(profile, environ)
    if source is not None:
        out["accessKey"] = source.access_key
        if source.env is not None:
            out["secretKeyEnv"] = source.env
        elif source.file is not None:
            out["secretKeyFile"] = str(source.file)
    files = tls_files(profile) if profile is not None else None
    if files is not None:
        out["tls"] = "true"
        out.update({name: str(path) for name, path in zip(TLS_FILE_OPTIONS, files, strict=True) if path})
    return out
