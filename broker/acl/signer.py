"""Request signatures of plain ACL 1.0, as RocketMQ's AclClientRPCHook and its 5.x gRPC clients do.

* Remoting: ``Signature = base64(HMAC-SHA1(secret, values of the extFields sorted by key, without
  Signature, concatenated, then the body))``; the request also carries ``AccessKey``.
* gRPC: ``authorization: MQv2-HMAC-SHA1 Credential=AK, SignedHeaders=x-mq-date-time, Signature=HEX``
  where HEX is ``hex(HMAC-SHA1(secret, x-mq-date-time))``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass, field

from broker.protocol.remoting import RemotingCommand

ACCESS_KEY = "AccessKey"
SIGNATURE = "Signature"
SECURITY_TOKEN = "SecurityToken"
UNIQUE_KEY_QUERY = "_UNIQUE_KEY_QUERY"  # not signed by Java clients (added after signing)
GRPC_ALGORITHM = "MQv2-HMAC-SHA1"
GRPC_DATE_TIME = "x-mq-date-time"


@dataclass(frozen=True, slots=True)
class Credentials:
    """An AccessKey and its SecretKey; the secret never appears in ``repr`` or ``str``."""

    access_key: str
    secret_key: str = field(repr=False)

    def __post_init__(self) -> None:
        if not self.access_key or not self.secret_key:
            raise ValueError("credentials need both an access key and a secret key")


def remoting_content(ext_fields: Mapping[str, str], body: bytes | None) -> bytes:
    """The signed bytes: values of the sorted fields (Signature excluded), then the body."""
    text = "".join(
        value for key, value in sorted(ext_fields.items()) if key not in (SIGNATURE, UNIQUE_KEY_QUERY)
    )
    return text.encode("utf-8") + (body or b"")


def hmac_base64(content: bytes, secret: str) -> str:
    return base64.b64encode(hmac.new(secret.encode("utf-8"), content, hashlib.sha1).digest()).decode()


def sign_request(request: RemotingCommand, credentials: Credentials) -> None:
    """Add ``AccessKey`` and ``Signature`` to a request (call last: later field changes break it)."""
    request.ext_fields.pop(SIGNATURE, None)
    request.ext_fields[ACCESS_KEY] = credentials.access_key
    content = remoting_content(request.ext_fields, request.body)
    request.ext_fields[SIGNATURE] = hmac_base64(content, credentials.secret_key)


def grpc_signature(date_time: str, secret: str) -> str:
    return hmac.new(secret.encode("utf-8"), date_time.encode("utf-8"), hashlib.sha1).hexdigest()


def grpc_authorization(credentials: Credentials, date_time: str) -> str:
    """The ``authorization`` metadata value a 5.x client sends with ``x-mq-date-time``."""
    signature = grpc_signature(date_time, credentials.secret_key)
    return (
        f"{GRPC_ALGORITHM} Credential={credentials.access_key}, "
        f"SignedHeaders={GRPC_DATE_TIME}, Signature={signature}"
    )


@dataclass(frozen=True, slots=True)
class GrpcAuthorization:
    access_key: str
    signature: str


def parse_grpc_authorization(value: str) -> GrpcAuthorization | None:
    """The AccessKey and Signature of an ``authorization`` value; None when it is not one."""
    algorithm, _, rest = value.strip().partition(" ")
    if algorithm != GRPC_ALGORITHM:
        return None
    parts: dict[str, str] = {}
    for item in rest.split(","):
        key, sep, val = item.strip().partition("=")
        if sep:
            parts[key.strip()] = val.strip()
    credential, signature = parts.get("Credential", ""), parts.get("Signature", "")
    if not credential or not signature:
        return None
    # upstream's Credential may be "AK/..." (scoped); the AccessKey is the first part
    return GrpcAuthorization(credential.split("/")[0], signature)


def same(expected: str, given: str | None) -> bool:
    """Constant-time comparison of two signatures."""
    return given is not None and hmac.compare_digest(expected.encode(), given.encode())
