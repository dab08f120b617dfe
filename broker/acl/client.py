"""What a client connects with: ACL credentials (every request signed) and a TLS context.

The admin service takes a ``ClientSecurity``; SDK clients take ``credentials=`` and ``ssl_context=``
and apply them with :func:`secure`.
"""

from __future__ import annotations

import functools
import ssl
from collections.abc import Callable
from dataclasses import dataclass

from broker.acl.signer import Credentials, sign_request
from broker.protocol.remoting import RemotingCommand
from broker.remoting.client import RemotingClient


@dataclass(frozen=True, slots=True)
class ClientSecurity:
    credentials: Credentials | None = None
    ssl_context: ssl.SSLContext | None = None

    def rpc_hook(self) -> Callable[[RemotingCommand], None] | None:
        if self.credentials is None:
            return None
        return functools.partial(sign_request, credentials=self.credentials)


def secure(client: RemotingClient, security: ClientSecurity | None) -> RemotingClient:
    """Make ``client`` sign and use TLS for the connections it opens from now on."""
    if security is not None:
        client.rpc_hook = security.rpc_hook()
        client.ssl_context = security.ssl_context
    return client
