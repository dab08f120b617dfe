"""What every client of an application shares, as Java's ``ClientConfig``: :class:`ClientOptions`.

Producers and consumers take it as ``options=``, or its fields as keyword arguments
(``Producer(group, namesrv, trace=True)``); both together mean the keywords over the options. A
client keeps the result as ``client.options`` and hands it on whole (to its connection pool, its
tracer), so a new setting is one field here, not a keyword forwarded through every constructor.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict

if TYPE_CHECKING:
    import ssl

    from broker.acl.signer import Credentials


@dataclass(frozen=True, slots=True)
class ClientOptions:
    """How a client identifies itself, authenticates, encrypts and traces.

    ``instance_name`` is the part of the client id after ``ip@`` (Java's ``instanceName``; the
    default keeps the clients of one process apart); ``rpc_timeout`` bounds requests other than sends
    (routes, offsets, heartbeats); ``credentials`` sign every request as RocketMQ's ACL expects;
    ``ssl_context`` encrypts every connection; ``trace`` records what happens to each message in
    ``trace_topic`` (default RMQ_SYS_TRACE_TOPIC), as Java's ``enableMsgTrace`` and
    ``customizedTraceTopic`` do.
    """

    instance_name: str | None = None
    rpc_timeout: float = 3.0
    credentials: Credentials | None = None
    ssl_context: ssl.SSLContext | None = None
    trace: bool = False
    trace_topic: str | None = None

    @classmethod
    def of(cls, options: ClientOptions | None, keywords: ClientKeywords) -> ClientOptions:
        """``options`` (or the defaults) with ``keywords`` over them."""
        base = options if options is not None else cls()
        return dataclasses.replace(base, **keywords) if keywords else base


class ClientKeywords(TypedDict, total=False):
    """:class:`ClientOptions`' fields as keyword arguments of a client's constructor."""

    instance_name: str | None
    rpc_timeout: float
    credentials: Credentials | None
    ssl_context: ssl.SSLContext | None
    trace: bool
    trace_topic: str | None
