"""``apache.rocketmq.v2.MessagingService`` served by the broker itself (what RocketMQ 5's proxy
does in front of a broker, here in the same process and on the same core).

* Sends go through the broker's own send processor (:mod:`broker.grpc.send_rpc`), so every check, the
  delay/timer and transaction routing, flow control and statistics are the remoting ones.
* Receives, acks and invisible-time changes go to :class:`broker.server.pop_service.PopService`,
  shared with the remoting POP codes.
* A refused request is answered with a v2 ``Status`` (BAD_REQUEST, ILLEGAL_TOPIC, TOPIC_NOT_FOUND ...)
  and a readable message; an unexpected failure with INTERNAL_SERVER_ERROR. gRPC errors are left to
  the gRPC server, :mod:`broker.grpc.calls` (a request that does not parse).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import ipaddress
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Protocol

import grpc  # type: ignore[import-untyped,unused-ignore]

from broker.grpc import convert
from broker.grpc.acl_interceptor import server_setup
from broker.grpc.calls import NativeGrpcServer
from broker.grpc.clients import (
    CLIENT_TYPE_PRODUCER,
    CLIENT_TYPE_PUSH_CONSUMER,
    CLIENT_TYPE_SIMPLE_CONSUMER,
    GrpcChannel,
    Session,
)
from broker.grpc.guard import Guarded, GuardedInline, GuardedStream
from broker.grpc.http2 import connection_limits
from broker.grpc.pop_rpc import (
    DEFAULT_LONG_POLLING_MS,
    MAX_BATCH,
    MAX_LONG_POLLING_MS,
    PopRpc,
    rejected,
    within_deadline,
)
from broker.grpc.pop_rpc import record_filter as pop_record_filter
from broker.grpc.schema import PB, SERVICE, Code, GrpcError, status
from broker.grpc.send_rpc import SendRpc, code_of, encode_transaction_id
from broker.protocol import properties as P
from broker.protocol.bodies import ConsumeFromWhere, ConsumeType, MessageModel
from broker.protocol.codes import LanguageCode, RequestCode, ResponseCode
from broker.protocol.group_bodies import SubscriptionData
from broker.protocol.headers import CheckTransactionStateRequestHeader, EndTransactionRequestHeader
from broker.protocol.message import (
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
    RecordError,
    decode_record,
)
from broker.protocol.remoting import RemotingCommand
from broker.remoting.channel import Handler
from broker.remoting.server import RemotingServer
from broker.server.client_registry import ClientChannelInfo, ClientRegistry
from broker.server.config import BrokerConfig
from broker.server.message_type import TopicMessageType, topic_message_type
from broker.server.messaging.core import ConsumeRejected, MessagingCore, PullQuery, caught_up, tag_filter_of
from broker.server.pop_service import PopService
from broker.server.stats import BrokerStats
from broker.server.subscription_group import SubscriptionGroupManager, group_name_problem
from broker.server.timer_service import RecallProblem, RecallRefused
from broker.server.topic_config import (
    DEFAULT_TOPIC,
    PERM_READ,
    PERM_WRITE,
    TopicConfigManager,
    topic_name_problem,
)
from broker.store.config import StoreConfig

log = logging.getLogger(__name__)

TELEMETRY_OUTBOX = 64  # a Telemetry stream's answers and commands waiting for the client to read them
PRODUCER_BACKOFF = (10, 1000, 2.0)  # initial ms, max ms, multiplier
# RocketMQ's default consumer retry delays: the delay levels from level 3 (10s 30s 1m ... 2h)
DEFAULT_RETRY_LEVEL = 3

_RECALL_CODES = {  # the switches answer what their remoting codes (16, 14) map to
    RecallProblem.DISABLED: Code.FORBIDDEN,
    RecallProblem.NOT_WRITEABLE: Code.INTERNAL_SERVER_ERROR,
    RecallProblem.NO_TOPIC: Code.TOPIC_NOT_FOUND,
    RecallProblem.MALFORMED: Code.BAD_REQUEST,
    RecallProblem.MISMATCH: Code.BAD_REQUEST,
    RecallProblem.EXPIRED: Code.NOT_FOUND,
    RecallProblem.UNKNOWN: Code.NOT_FOUND,
    RecallProblem.UNSUPPORTED: Code.UNSUPPORTED,
}
_LANGUAGES = {1: LanguageCode.JAVA, 2: LanguageCode.CPP, 3: LanguageCode.DOTNET, 6: LanguageCode.PYTHON}


class Recalls(Protocol):
    async def recall(self, topic: str, handle_text: str) -> str: ...


class GrpcBroker(Protocol):
    """The parts of the broker the gRPC service uses: its messaging core, the metadata it reads, the
    client registry its sessions join, and the remoting server whose ACL hook it applies too."""

    @property
    def config(self) -> BrokerConfig: ...

    @property
    def store_config(self) -> StoreConfig: ...

    @property
    def topics(self) -> TopicConfigManager: ...

    @property
    def groups(self) -> SubscriptionGroupManager: ...

    @property
    def clients(self) -> ClientRegistry: ...

    @property
    def messaging(self) -> MessagingCore: ...

    @property
    def pop(self) -> PopService: ...

    @property
    def timer(self) -> Recalls: ...

    @property
    def stats(self) -> BrokerStats: ...

    @property
    def handlers(self) -> dict[int, Handler]: ...

    @property
    def server(self) -> RemotingServer | None: ...

    @property
    def grpc_port(self) -> int: ...

    def attach_grpc(self, server: GrpcServer) -> None: ...


def _as_remoting(channel: GrpcChannel) -> Any:
    """The channel where the broker takes a remoting one (:class:`GrpcChannel` is duck-typed: a
    ``cast`` to the compiled RemotingChannel would be checked at run time and fail)."""
    return channel


def _peer(context: Any) -> str:
    peer = context.peer() or ""
    kind, _, rest = peer.partition(":")
    if kind == "ipv6":
        host, _, port = rest.rpartition(":")
        return f"{host.strip('[]')}:{port}" if port.isdigit() else rest
    return rest or peer


def decode_transaction_id(text: str) -> tuple[int, int, str]:
    parts = text.split(":", 2)
    if len(parts) != 3 or not parts[0].isdigit() or not parts[1].lstrip("-").isdigit():
        raise GrpcError(
            Code.INVALID_TRANSACTION_ID, f"transaction id {text!r:.80} is not one this broker issued"
        )
    return int(parts[0]), int(parts[1]), parts[2]


class MessagingService:
    def __init__(self, broker: GrpcBroker) -> None:
        self.broker = broker
        self.sessions: dict[str, Session] = {}
        self.sends = SendRpc(self)
        self.pops = PopRpc(self)

    # == plumbing ==============================================================================
    def generic_handler(self) -> grpc.GenericRpcHandler:
        def unary(fn: Callable[[Any, Any], Any], req: Any, resp: Any) -> grpc.RpcMethodHandler:
            # a handler that never waits is a plain function: the server runs it without a task
            guarded = Guarded(fn, resp) if inspect.iscoroutinefunction(fn) else GuardedInline(fn, resp)
            return grpc.unary_unary_rpc_method_handler(
                guarded, request_deserializer=req.FromString, response_serializer=convert.serialized
            )

        def stream(fn: Callable[[Any, Any], Awaitable[None]], req: Any, resp: Any) -> grpc.RpcMethodHandler:
            return grpc.unary_stream_rpc_method_handler(
                GuardedStream(fn, resp), request_deserializer=req.FromString,
                response_serializer=convert.serialized,
            )  # fmt: skip

        handlers = {
            "QueryRoute": unary(self.query_route, PB.QueryRouteRequest, PB.QueryRouteResponse),
            "Heartbeat": unary(self.heartbeat, PB.HeartbeatRequest, PB.HeartbeatResponse),
            "SendMessage": unary(self.sends.send_message, PB.SendMessageRequest, PB.SendMessageResponse),
            "QueryAssignment": unary(
                self.query_assignment, PB.QueryAssignmentRequest, PB.QueryAssignmentResponse
            ),
            "ReceiveMessage": stream(
                self.pops.receive_message, PB.ReceiveMessageRequest, PB.ReceiveMessageResponse
            ),
            "AckMessage": unary(self.pops.ack_message, PB.AckMessageRequest, PB.AckMessageResponse),
            "ForwardMessageToDeadLetterQueue": unary(
                self.pops.forward_to_dlq,
                PB.ForwardMessageToDeadLetterQueueRequest,
                PB.ForwardMessageToDeadLetterQueueResponse,
            ),
            "PullMessage": stream(self.pull_message, PB.PullMessageRequest, PB.PullMessageResponse),
            "UpdateOffset": unary(self.update_offset, PB.UpdateOffsetRequest, PB.UpdateOffsetResponse),
            "GetOffset": unary(self.get_offset, PB.GetOffsetRequest, PB.GetOffsetResponse),
            "QueryOffset": unary(self.query_offset, PB.QueryOffsetRequest, PB.QueryOffsetResponse),
            "EndTransaction": unary(
                self.end_transaction, PB.EndTransactionRequest, PB.EndTransactionResponse
            ),
            "Telemetry": grpc.stream_stream_rpc_method_handler(
                self.telemetry,
                request_deserializer=PB.TelemetryCommand.FromString,
                response_serializer=PB.TelemetryCommand.SerializeToString,
            ),
            "NotifyClientTermination": unary(
                self.notify_termination, PB.NotifyClientTerminationRequest, PB.NotifyClientTerminationResponse
            ),
            "ChangeInvisibleDuration": unary(
                self.pops.change_invisible,
                PB.ChangeInvisibleDurationRequest,
                PB.ChangeInvisibleDurationResponse,
            ),
            "RecallMessage": unary(self.recall_message, PB.RecallMessageRequest, PB.RecallMessageResponse),
        }
        return grpc.method_handlers_generic_handler(SERVICE, handlers)

    # == clients ===============================================================================
    def _session(self, context: Any, *, required: bool = True) -> Session | None:
        client_id: str | None = context.metadata_value("x-mq-client-id")
        if not client_id:
            if required:
                raise GrpcError(Code.CLIENT_ID_REQUIRED, "the x-mq-client-id header is missing")
            return None
        session = self.sessions.get(client_id)
        if session is None or session.channel.is_closed:
            channel = GrpcChannel(client_id, _peer(context), self._push_remoting, self._channel_closed)
            session = Session(client_id, channel)
            self.sessions[client_id] = session
        session.last_seen = time.monotonic()
        return session

    def _channel_closed(self, channel: GrpcChannel) -> None:
        session = self.sessions.get(channel.client_id)
        if session is not None and session.channel is channel:
            del self.sessions[channel.client_id]
            if session.outbox is not None:
                session.outbox.put_nowait(None)
        self.broker.clients.channel_closed(_as_remoting(channel))

    def _register(self, session: Session) -> None:
        info = ClientChannelInfo(
            channel=_as_remoting(session.channel),
            client_id=session.client_id,
            language=_LANGUAGES.get(session.language, LanguageCode.OTHER),
            version=0,
        )
        clients = self.broker.clients
        if session.client_type == CLIENT_TYPE_PRODUCER:
            for topic in session.topics:
                clients.register_producer(topic, info)
        elif session.is_consumer and session.group:
            subs = [
                SubscriptionData(
                    topic=topic, subString=expr or "*", expressionType="SQL92" if kind == 2 else "TAG"
                )
                for topic, (kind, expr) in session.subscriptions.items()
            ]
            clients.register_consumer(
                session.group, info, ConsumeType.CONSUME_POP, MessageModel.CLUSTERING,
                ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET, subs, notify=False,
            )  # fmt: skip

    def _push_remoting(self, channel: GrpcChannel, request: RemotingCommand) -> bool:
        """A broker-side push to a gRPC client: CHECK_TRANSACTION_STATE becomes a recovery command."""
        session = self.sessions.get(channel.client_id)
        if session is None or request.code != RequestCode.CHECK_TRANSACTION_STATE:
            return False
        try:
            header = CheckTransactionStateRequestHeader.from_ext_fields(request.ext_fields)
            record = decode_record(request.body or b"")
        except (RecordError, ValueError) as exc:
            log.warning("cannot forward a transaction check to %s: %s", channel.client_id, exc)
            return False
        topic = record.properties.get(P.REAL_TOPIC) or header.topic or record.topic
        tx = header.transactionId or record.properties.get(P.TRANSACTION_ID) or record.msg_id
        command = PB.TelemetryCommand()
        recover = command.recover_orphaned_transaction_command
        message = convert.encode_message(request.body or b"", topic=topic)
        assert message is not None  # no tags to match
        recover.message.ParseFromString(message)
        recover.transaction_id = encode_transaction_id(
            header.commitLogOffset or record.physical_offset, header.tranStateTableOffset or 0, tx
        )
        return session.push(command)

    def _settings(self, session: Session, incoming: Any) -> Any:
        """The server's Settings answer on the Telemetry stream (backoff policy always present)."""
        s = PB.Settings()
        s.client_type = incoming.client_type
        if incoming.HasField("access_point"):
            s.access_point.CopyFrom(incoming.access_point)
        if incoming.HasField("request_timeout"):
            s.request_timeout.CopyFrom(incoming.request_timeout)
        else:
            s.request_timeout.CopyFrom(convert.duration(3000))
        s.metric.on = False
        if incoming.client_type == CLIENT_TYPE_PRODUCER:
            policy = s.backoff_policy
            policy.max_attempts = (
                incoming.backoff_policy.max_attempts if incoming.HasField("backoff_policy") else 3
            )
            policy.max_attempts = max(1, policy.max_attempts)
            initial, maximum, multiplier = PRODUCER_BACKOFF
            policy.exponential_backoff.initial.CopyFrom(convert.duration(initial))
            policy.exponential_backoff.max.CopyFrom(convert.duration(maximum))
            policy.exponential_backoff.multiplier = multiplier
            s.publishing.topics.extend(incoming.publishing.topics)
            s.publishing.max_body_size = self.broker.store_config.max_message_size
            s.publishing.validate_message_type = self._check_message_type
            return s
        group = session.group or ""
        self._retry_policy(group, s.backoff_policy)
        sub = s.subscription
        sub.group.name = group
        sub.subscriptions.extend(incoming.subscription.subscriptions)
        sub.fifo = self._fifo(group, list(session.subscriptions))
        sub.receive_batch_size = MAX_BATCH
        sub.long_polling_timeout.CopyFrom(convert.duration(DEFAULT_LONG_POLLING_MS))
        return s

    def _retry_policy(self, group: str, policy: Any) -> None:
        """max attempts = retryMaxTimes + 1; delays from the group's groupRetryPolicy (RocketMQ 5's
        CUSTOMIZED ``next`` list or EXPONENTIAL initial/max/multiplier, in ms), else the delay levels
        from level 3 on, as RocketMQ retries."""
        config = self.broker.groups.find(group) if group and not group_name_problem(group) else None
        policy.max_attempts = (config.retryMaxTimes if config is not None else 16) + 1
        raw = dict(config.groupRetryPolicy or {}) if config is not None else {}
        kind = str(raw.get("type", "CUSTOMIZED")).upper()
        try:
            if kind == "EXPONENTIAL":
                exp = dict(raw.get("exponentialRetryPolicy") or {})
                policy.exponential_backoff.initial.CopyFrom(convert.duration(int(exp.get("initial", 1000))))
                policy.exponential_backoff.max.CopyFrom(convert.duration(int(exp.get("max", 7_200_000))))
                policy.exponential_backoff.multiplier = float(exp.get("multiplier", 2))
                return
            custom = dict(raw.get("customizedRetryPolicy") or {})
            delays = [int(d) for d in custom.get("next") or []]
        except (TypeError, ValueError):
            delays = []
        if not delays:
            delays = list(self.broker.store_config.delay_levels_ms[DEFAULT_RETRY_LEVEL - 1 :]) or [10_000]
        for ms in delays:
            policy.customized_backoff.next.add().CopyFrom(convert.duration(ms))

    def _fifo(self, group: str, topics: list[str]) -> bool:
        config = self.broker.groups.get(group)
        if config is not None and config.consumeMessageOrderly:
            return True
        return any(topic_message_type(self.broker.topics.get(t)) is TopicMessageType.FIFO for t in topics)

    # == routes ================================================================================
    def _endpoints(self, requested: Any) -> Any:
        endpoints = PB.Endpoints()
        if requested is not None and len(requested.addresses):
            endpoints.CopyFrom(requested)
            return endpoints
        host = self.broker.config.broker_ip1
        try:
            ipaddress.IPv4Address(host)
            endpoints.scheme = 1
        except ValueError:
            endpoints.scheme = 3
        endpoints.addresses.add(host=host, port=self.broker.grpc_port)
        return endpoints

    def _topic(self, name: str, *, create: bool = False) -> Any:
        problem = topic_name_problem(name)
        if problem:
            raise GrpcError(Code.ILLEGAL_TOPIC, problem)
        config = self.broker.topics.get(name)
        if config is None and create:  # QueryRoute creates a topic as a send to it would
            cfg = self.broker.config
            config = self.broker.messaging.sends.send_topic(name, DEFAULT_TOPIC, cfg.default_topic_queue_nums)
        if config is None:
            raise GrpcError(Code.TOPIC_NOT_FOUND, f"topic {name} does not exist")
        return config

    @staticmethod
    def _accept_types(kind: TopicMessageType) -> list[int]:
        return {
            TopicMessageType.NORMAL: [convert.MT_NORMAL],
            TopicMessageType.FIFO: [convert.MT_FIFO],
            TopicMessageType.DELAY: [convert.MT_DELAY],
            TopicMessageType.TRANSACTION: [convert.MT_TRANSACTION],
        }.get(kind, [convert.MT_NORMAL, convert.MT_FIFO, convert.MT_DELAY, convert.MT_TRANSACTION])

    def _queue(
        self, topic: str, queue_id: int, permission: int, endpoints: Any, kind: TopicMessageType
    ) -> Any:
        mq = PB.MessageQueue(id=queue_id, permission=permission)
        mq.topic.name = topic
        mq.broker.name = self.broker.config.broker_name
        mq.broker.id = 0
        mq.broker.endpoints.CopyFrom(endpoints)
        mq.accept_message_types.extend(self._accept_types(kind))
        return mq

    def query_route(self, request: Any, context: Any) -> Any:
        self._session(context, required=False)
        config = self._topic(request.topic.name, create=True)
        endpoints = self._endpoints(request.endpoints if request.HasField("endpoints") else None)
        perm = config.perm & self.broker.config.broker_permission
        kind = topic_message_type(config)
        response = PB.QueryRouteResponse(status=status())
        for i in range(max(config.readQueueNums, config.writeQueueNums)):
            readable = bool(perm & PERM_READ) and i < config.readQueueNums
            writable = bool(perm & PERM_WRITE) and i < config.writeQueueNums
            permission = 4 if readable and writable else 2 if readable else 3 if writable else 1
            response.message_queues.append(self._queue(config.topicName, i, permission, endpoints, kind))
        return response

    def query_assignment(self, request: Any, context: Any) -> Any:
        self._session(context)
        group = self._group(request.group.name)
        config = self._topic(request.topic.name)
        try:
            self.broker.messaging.check_consume(group, config.topicName)
        except ConsumeRejected as exc:
            raise rejected(exc) from None
        endpoints = self._endpoints(request.endpoints if request.HasField("endpoints") else None)
        response = PB.QueryAssignmentResponse(status=status())
        if config.readQueueNums > 0 and config.perm & PERM_READ:
            mq = self._queue(config.topicName, -1, 4, endpoints, topic_message_type(config))
            response.assignments.add().message_queue.CopyFrom(mq)
        return response

    @staticmethod
    def _group(name: str) -> str:
        problem = group_name_problem(name)
        if problem:
            raise GrpcError(Code.ILLEGAL_CONSUMER_GROUP, problem)
        return name

    # == client life ===========================================================================
    def heartbeat(self, request: Any, context: Any) -> Any:
        session = self._session(context)
        assert session is not None
        if request.client_type:
            session.client_type = request.client_type
        if request.HasField("group") and request.group.name:
            session.group = self._group(request.group.name)
        self._register(session)
        return PB.HeartbeatResponse(status=status())

    def notify_termination(self, request: Any, context: Any) -> Any:
        session = self._session(context)
        assert session is not None
        session.channel.close()
        return PB.NotifyClientTerminationResponse(status=status())

    async def telemetry(self, requests: AsyncIterator[Any], context: Any) -> None:
        try:
            session = self._session(context)
        except GrpcError as exc:
            await context.write(PB.TelemetryCommand(status=status(exc.code, exc.message)))
            return
        assert session is not None
        outbox: asyncio.Queue[Any] = asyncio.Queue()
        if session.outbox is not None:
            session.outbox.put_nowait(None)  # a newer stream replaces an older one
        session.outbox = outbox

        async def read() -> None:
            try:
                async for command in requests:
                    reply = self._on_telemetry(session, command)
                    if reply is not None:
                        outbox.put_nowait(reply)
                        if outbox.qsize() >= TELEMETRY_OUTBOX:  # the client reads its answers too slowly:
                            await outbox.join()  # read its commands no faster
            except Exception as exc:  # a broken stream ends this telemetry call only
                log.debug("telemetry stream of %s ended: %s", session.client_id, exc)
            finally:
                outbox.put_nowait(None)

        reader = asyncio.create_task(read())
        try:
            while True:
                item = await outbox.get()
                if item is None:
                    break
                await context.write(item)
                outbox.task_done()
        finally:
            reader.cancel()
            with contextlib.suppress(BaseException):
                await reader
            if session.outbox is outbox:
                session.outbox = None

    def _on_telemetry(self, session: Session, command: Any) -> Any:
        kind = command.WhichOneof("command")
        if kind != "settings":
            return None  # thread stack traces, verify results: nothing to do
        settings = command.settings
        try:
            session.client_type = settings.client_type
            session.language = settings.user_agent.language
            session.version = settings.user_agent.version
            session.settings = settings
            if settings.client_type == CLIENT_TYPE_PRODUCER:
                session.topics = [
                    t.name for t in settings.publishing.topics if not topic_name_problem(t.name)
                ]
            elif settings.client_type in (CLIENT_TYPE_PUSH_CONSUMER, CLIENT_TYPE_SIMPLE_CONSUMER, 4):
                session.group = self._group(settings.subscription.group.name)
                session.subscriptions = {
                    e.topic.name: (e.expression.type, e.expression.expression)
                    for e in settings.subscription.subscriptions
                    if not topic_name_problem(e.topic.name)
                }
            else:
                raise GrpcError(
                    Code.UNRECOGNIZED_CLIENT_TYPE, f"client type {settings.client_type} is not known"
                )
            self._register(session)
            return PB.TelemetryCommand(status=status(), settings=self._settings(session, settings))
        except GrpcError as exc:
            return PB.TelemetryCommand(status=status(exc.code, exc.message))

    # == send ==================================================================================
    @property
    def _check_message_type(self) -> bool:
        """RocketMQ's proxy setting enableTopicMessageTypeCheck (on by default)."""
        return self.broker.config.enable_topic_message_type_check

    async def end_transaction(self, request: Any, context: Any) -> Any:
        session = self._session(context)
        assert session is not None
        topic = self._topic(request.topic.name).topicName
        phys, queue_offset, tx = decode_transaction_id(request.transaction_id)
        resolution = {1: TRANSACTION_COMMIT_TYPE, 2: TRANSACTION_ROLLBACK_TYPE}.get(request.resolution)
        if resolution is None:
            raise GrpcError(Code.BAD_REQUEST, "the transaction resolution must be COMMIT or ROLLBACK")
        header = EndTransactionRequestHeader(
            producerGroup=topic,
            tranStateTableOffset=queue_offset,
            commitLogOffset=phys,
            commitOrRollback=resolution,
            msgId=request.message_id,
            topic=topic,
            fromTransactionCheck=request.source == 2,
            transactionId=tx,
        )
        answer = await self.broker.messaging.end_transaction(header, session.channel.remote_addr)
        if answer is not None and answer.code != ResponseCode.SUCCESS:
            raise GrpcError(code_of(answer.code), answer.remark or "ending the transaction failed")
        return PB.EndTransactionResponse(status=status())

    async def recall_message(self, request: Any, context: Any) -> Any:
        topic = self._topic(request.topic.name).topicName
        try:
            message_id = await self.broker.timer.recall(topic, request.recall_handle)
        except RecallRefused as exc:
            raise GrpcError(_RECALL_CODES[exc.problem], exc.remark) from None
        return PB.RecallMessageResponse(status=status(), message_id=message_id)

    def _message_queue(self, mq: Any) -> tuple[str, int]:
        config = self._topic(mq.topic.name)
        if not 0 <= mq.id < config.readQueueNums:
            raise GrpcError(Code.BAD_REQUEST, f"queue {mq.id} of topic {config.topicName} does not exist")
        return config.topicName, int(mq.id)

    async def pull_message(self, request: Any, context: Any) -> None:
        session = self._session(context)
        assert session is not None
        group = self._group(request.group.name)
        topic, queue_id = self._message_queue(request.message_queue)
        try:
            self.broker.messaging.check_consume(group, topic)
        except ConsumeRejected as exc:
            raise rejected(exc) from None
        self.broker.messaging.record_holder(group, topic, queue_id, session.client_id)
        if request.offset < 0:
            raise GrpcError(Code.ILLEGAL_OFFSET, f"offset {request.offset} is negative")
        record_filter = pop_record_filter(self.broker, request.filter_expression)
        tag_filter = None if record_filter else tag_filter_of(request.filter_expression.expression or "*")
        batch = max(1, min(request.batch_size or MAX_BATCH, MAX_BATCH))
        query = PullQuery(topic, queue_id, request.offset, batch, None, tag_filter, record_filter)
        polling = min(convert.duration_ms(request.long_polling_timeout), MAX_LONG_POLLING_MS)
        core = self.broker.messaging
        result = await core.pull(
            query, within_deadline(polling / 1000, context), lambda r: caught_up(r, request.offset)
        )
        core.record_pull(group, topic, queue_id, result.next_begin_offset)
        if result.records:
            await context.write(PB.PullMessageResponse(status=status()))
            for raw in result.records:
                with contextlib.suppress(RecordError):
                    message = convert.encode_message(raw)
                    assert message is not None  # no tags to match
                    await context.write(convert.message_response(message))
        else:
            await context.write(
                PB.PullMessageResponse(status=status(Code.MESSAGE_NOT_FOUND, result.status.value))
            )
        await context.write(PB.PullMessageResponse(next_offset=result.next_begin_offset))

    def update_offset(self, request: Any, context: Any) -> Any:
        self._session(context)
        group = self._group(request.group.name)
        topic, queue_id = self._message_queue(request.message_queue)
        if request.offset < 0:
            raise GrpcError(Code.ILLEGAL_OFFSET, f"offset {request.offset} is negative")
        self.broker.messaging.commit_offset(group, topic, queue_id, request.offset)
        return PB.UpdateOffsetResponse(status=status())

    def get_offset(self, request: Any, context: Any) -> Any:
        self._session(context)
        group = self._group(request.group.name)
        topic, queue_id = self._message_queue(request.message_queue)
        offset = self.broker.messaging.committed_offset(group, topic, queue_id)
        if offset < 0:
            raise GrpcError(
                Code.OFFSET_NOT_FOUND, f"group {group} has no offset for {topic} queue {queue_id}"
            )
        return PB.GetOffsetResponse(status=status(), offset=offset)

    async def query_offset(self, request: Any, context: Any) -> Any:
        self._session(context)
        topic, queue_id = self._message_queue(request.message_queue)
        core = self.broker.messaging
        policy = request.query_offset_policy
        if policy == 0:
            offset = await core.min_offset(topic, queue_id)
        elif policy == 1:
            offset = await core.max_offset(topic, queue_id)
        else:
            if not request.HasField("timestamp"):
                raise GrpcError(Code.BAD_REQUEST, "the TIMESTAMP policy needs a timestamp")
            offset = await core.offset_by_time(topic, queue_id, convert.timestamp_ms(request.timestamp))
        return PB.QueryOffsetResponse(status=status(), offset=offset)


class GrpcServer:
    """The gRPC listener (:mod:`broker.grpc.calls`, on the broker's event loop)."""

    def __init__(self, broker: GrpcBroker, host: str, port: int) -> None:
        self.service = MessagingService(broker)
        self.host = host
        self.requested_port = port
        self.port = 0
        self._server: NativeGrpcServer | None = None

    async def start(self) -> None:
        interceptors, tls = server_setup(self.service.broker)  # ACL and TLS when configured
        limits = connection_limits(self.service.broker.config)
        server = NativeGrpcServer([self.service.generic_handler()], interceptors, limits)
        try:
            self.port = await server.start(self.host, self.requested_port, tls)
        except OSError as exc:
            raise OSError(
                f"cannot listen on {self.host}:{self.requested_port}: {exc.strerror or exc}"
            ) from None
        self._server = server

    async def stop(self, grace: float = 5.0) -> None:
        self.service.broker.pop.stopping = True
        for session in list(self.service.sessions.values()):
            session.channel.close()
        if self._server is not None:
            await self._server.stop(grace)
            self._server = None


async def serve_grpc(broker: GrpcBroker) -> None:
    """Serve the RocketMQ 5 gRPC API for ``broker`` on its grpcPort (0 = any free port); a port that
    cannot be bound is logged and the broker keeps serving remoting."""
    server = GrpcServer(broker, broker.config.listen_host, broker.config.grpc_port)
    try:
        await server.start()
    except OSError as exc:
        log.error("gRPC port not served: %s", exc)
        return
    broker.attach_grpc(server)
    log.info("broker %s serving gRPC on port %d", broker.config.broker_name, server.port)
