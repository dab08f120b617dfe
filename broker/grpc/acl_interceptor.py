"""Access control for the gRPC API: the ``authorization`` header of RocketMQ 5 clients checked like a
remoting signature (HMAC-SHA1 of ``x-mq-date-time``), then the permissions each request needs, against
the plain ACL file (aclEnable) or the broker's users and ACL policies (authenticationEnabled /
authorizationEnabled), whichever the broker's remoting server checks. Under either, no client may
receive or pull the parking topics' messages (:mod:`broker.acl.message_reads`).

A refusal is answered with the method's own response carrying a v2 ``Status``: UNAUTHORIZED for
missing, unknown or wrongly signed credentials, FORBIDDEN for a missing permission. The Telemetry
stream is authenticated when it opens (and ended with a gRPC status when that fails); then, as
upstream's proxy does, each Settings command is checked for what it declares: Pub on a producer's
topics, Sub on a consumer's group and topics. A refused command is answered on the stream with a
TelemetryCommand carrying the status and is not applied; the stream stays open.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc  # type: ignore[import-untyped,unused-ignore]
from grpc import aio  # type: ignore[import-untyped,unused-ignore]

from broker.acl import signer
from broker.acl.addresses import host_of
from broker.acl.auth_checker import AuthChecker, from_plain
from broker.acl.checker import AclChecker, Denial, Refusal
from broker.acl.message_reads import parked_read
from broker.acl.permissions import ANY, PUB, SUB, Need, group_resource
from broker.grpc.schema import PB

log = logging.getLogger(__name__)

TELEMETRY = "Telemetry"
QUEUE_READS = frozenset({"ReceiveMessage", "PullMessage"})  # methods reading a message queue's messages


def _topic_and_group(request: Any, topic: str, group: str = "group") -> list[Need]:
    holder = request.message_queue if topic == "message_queue" else request
    needs = [Need(holder.topic.name, SUB)]
    if group and request.HasField(group) and request.group.name:
        needs.append(Need(group_resource(request.group.name), SUB))
    return needs


def _heartbeat(request: PB.HeartbeatRequest) -> list[Need]:
    if request.HasField("group") and request.group.name and request.client_type != PB.ClientType.PRODUCER:
        return [Need(group_resource(request.group.name), SUB)]
    return []


def _telemetry(command: PB.TelemetryCommand) -> list[Need]:
    """A Settings command: Pub on the topics a publisher declares, Sub on a consumer's group and the
    topics it subscribes to; other commands (thread stacks, verify results) declare nothing."""
    if command.WhichOneof("command") != "settings":
        return []
    settings = command.settings
    needs = [Need(t.name, PUB) for t in settings.publishing.topics] if settings.HasField("publishing") else []
    if settings.HasField("subscription"):
        subscription = settings.subscription
        if subscription.group.name:
            needs.append(Need(group_resource(subscription.group.name), SUB))
        needs += [Need(e.topic.name, SUB) for e in subscription.subscriptions]
    return needs


NEEDS: dict[str, Callable[[Any], list[Need]]] = {
    "QueryRoute": lambda r: [Need(r.topic.name, ANY)],
    "SendMessage": lambda r: [Need(m.topic.name, PUB) for m in r.messages],
    "EndTransaction": lambda r: [Need(r.topic.name, PUB)],
    "RecallMessage": lambda r: [Need(r.topic.name, PUB)],
    "Heartbeat": _heartbeat,
    "NotifyClientTermination": lambda r: [Need(group_resource(r.group.name), SUB)] if r.group.name else [],
    "QueryAssignment": lambda r: _topic_and_group(r, "topic"),
    "AckMessage": lambda r: _topic_and_group(r, "topic"),
    "ChangeInvisibleDuration": lambda r: _topic_and_group(r, "topic"),
    "ForwardMessageToDeadLetterQueue": lambda r: _topic_and_group(r, "topic"),
    "ReceiveMessage": lambda r: _topic_and_group(r, "message_queue"),
    "PullMessage": lambda r: _topic_and_group(r, "message_queue"),
    "UpdateOffset": lambda r: _topic_and_group(r, "message_queue"),
    "GetOffset": lambda r: _topic_and_group(r, "message_queue"),
    "QueryOffset": lambda r: _topic_and_group(r, "message_queue", group=""),
    TELEMETRY: _telemetry,
}


def peer_host(peer: str) -> str:
    """``ipv4:1.2.3.4:5`` / ``ipv6:[::1]:5`` -> the host."""
    kind, _, rest = peer.partition(":")
    return host_of(rest) if kind in ("ipv4", "ipv6") else peer


Decide = Callable[[str, Any, dict[str, str], str], Refusal | None]
"""(method, request or None, metadata, client host) -> a refusal or None."""


def _needs(method: str, request: Any) -> list[Need]:
    needs = NEEDS[method](request) if request is not None and method in NEEDS else []
    return [n for n in needs if n.resource]


def _verifier(metadata: dict[str, str]) -> tuple[str | None, Callable[[str], bool]]:
    """The AccessKey of the ``authorization`` header and ``verify(secret)`` of its signature."""
    auth = signer.parse_grpc_authorization(metadata.get("authorization", ""))
    date_time = metadata.get(signer.GRPC_DATE_TIME, "")

    def verify(secret: str) -> bool:
        return auth is not None and signer.same(signer.grpc_signature(date_time, secret), auth.signature)

    return (auth.access_key if auth is not None else None), verify


def plain_acl(checker: AclChecker) -> Decide:
    def decide(method: str, request: Any, metadata: dict[str, str], host: str) -> Refusal | None:
        access_key, verify = _verifier(metadata)
        return checker.check(
            host=host,
            access_key=access_key,
            verify=verify,
            needs=_needs(method, request),
            admin=False,
            code=0,
        )

    return decide


def users_and_policies(checker: AuthChecker) -> Decide:
    def decide(method: str, request: Any, metadata: dict[str, str], host: str) -> Refusal | None:
        username, verify = _verifier(metadata)
        needs = [from_plain(n) for n in _needs(method, request)]
        # the white lists may name the method or its message type
        message = "TelemetryCommand" if method == TELEMETRY else f"{method}Request"
        codes = (method, f"apache.rocketmq.v2.{message}")
        return checker.check(host=host, username=username, verify=verify, needs=needs, codes=codes)

    return decide


class AclInterceptor(aio.ServerInterceptor):  # type: ignore[misc,unused-ignore]
    def __init__(self, decide: Decide) -> None:
        self.decide = decide

    def refusal(self, method: str, request: Any, metadata: dict[str, str], peer: str) -> Refusal | None:
        why = parked_read(request.message_queue.topic.name) if method in QUEUE_READS and request else None
        refused = (
            Refusal(Denial.FORBIDDEN, why) if why else self.decide(method, request, metadata, peer_host(peer))
        )
        if refused is not None:
            log.warning("refused gRPC %s from %s: %s", method, peer, refused.message)
        return refused

    async def intercept_service(self, continuation: Callable[[Any], Awaitable[Any]], details: Any) -> Any:
        handler = await continuation(details)
        if handler is None:
            return None
        method = str(details.method).rsplit("/", 1)[-1]
        metadata = {
            str(k): v if isinstance(v, str) else bytes(v).decode("utf-8", "replace")
            for k, v in (details.invocation_metadata or ())
        }
        response = getattr(PB, f"{method}Response", None)
        if handler.unary_unary is not None:
            return self._unary(method, handler, metadata, response)
        if handler.unary_stream is not None:
            return self._unary_stream(method, handler, metadata, response)
        if handler.stream_stream is not None:
            return self._stream_stream(method, handler, metadata)
        return handler

    @staticmethod
    def _status(refused: Refusal) -> PB.Status:
        code = PB.Code.UNAUTHORIZED if refused.kind is Denial.UNAUTHENTICATED else PB.Code.FORBIDDEN
        return PB.Status(code=code, message=refused.message)

    def _unary(self, method: str, handler: Any, metadata: dict[str, str], response: Any) -> Any:
        async def run(request: Any, context: Any) -> Any:
            refused = self.refusal(method, request, metadata, context.peer() or "")
            if refused is not None:
                return response(status=self._status(refused))
            result = handler.unary_unary(request, context)  # a plain function when it never waits
            return await result if inspect.isawaitable(result) else result

        return grpc.unary_unary_rpc_method_handler(
            run, request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )  # fmt: skip

    def _unary_stream(self, method: str, handler: Any, metadata: dict[str, str], response: Any) -> Any:
        async def run(request: Any, context: Any) -> None:
            refused = self.refusal(method, request, metadata, context.peer() or "")
            if refused is not None:
                await context.write(response(status=self._status(refused)))
                return
            await handler.unary_stream(request, context)  # the service's streams write their answers

        return grpc.unary_stream_rpc_method_handler(
            run, request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )  # fmt: skip

    def _stream_stream(self, method: str, handler: Any, metadata: dict[str, str]) -> Any:
        """Telemetry, the one stream-stream method: authenticated when it opens, then each command."""

        async def run(requests: Any, context: Any) -> Any:
            peer = context.peer() or ""
            refused = self.refusal(method, None, metadata, peer)
            if refused is not None:
                code = grpc.StatusCode.UNAUTHENTICATED
                if refused.kind is Denial.FORBIDDEN:
                    code = grpc.StatusCode.PERMISSION_DENIED
                await context.abort(code, refused.message)
            serial = _SerialWrites(context)
            return await handler.stream_stream(
                self._checked(method, requests, serial, metadata, peer), serial
            )

        return grpc.stream_stream_rpc_method_handler(
            run, request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )  # fmt: skip

    async def _checked(
        self, method: str, requests: Any, context: _SerialWrites, metadata: dict[str, str], peer: str
    ) -> AsyncIterator[Any]:
        """The commands that pass; a refused one is answered here instead of reaching the handler."""
        async for command in requests:
            refused = self.refusal(method, command, metadata, peer)
            if refused is None:
                yield command
            else:
                await context.write(PB.TelemetryCommand(status=self._status(refused)))


class _SerialWrites:
    """A stream's context whose writes go one at a time: the refusals written while reading commands
    and the handler's own replies share one call, which takes a single write in flight."""

    def __init__(self, context: Any) -> None:
        self._context = context
        self._lock = asyncio.Lock()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._context, name)

    async def write(self, message: Any) -> None:
        async with self._lock:
            await self._context.write(message)


def server_setup(broker: Any) -> tuple[list[AclInterceptor], ssl.SSLContext | None]:
    """(interceptors, TLS context or None) for the broker's gRPC port, from its settings."""
    from broker.acl.remoting_hook import AclHook, AuthHook
    from broker.remoting.hooks import GuardedServer

    interceptors = []
    if isinstance(broker.server, GuardedServer):
        hook = broker.server.hook
        if isinstance(hook, AclHook):
            interceptors.append(AclInterceptor(plain_acl(hook.checker)))
        elif isinstance(hook, AuthHook):
            interceptors.append(AclInterceptor(users_and_policies(hook.checker)))
    tls = broker.config.server_tls()
    return interceptors, None if tls is None else tls.context()
