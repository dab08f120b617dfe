"""One handler per NameServer request code, over the route table, the KV store and
the settings.

Handlers are synchronous: nothing they touch waits, so each request sees and leaves the tables in
a consistent state without locks. The one exception is a large REGISTER_BROKER body, decoded on a
worker thread first (thousands of topics would hold every lookup up meanwhile), then applied in
one synchronous step like any other request. Bad input is answered, never raised into the transport: a
header field that is missing or malformed gets INVALID_PARAMETER naming the field, a body that does
not decode gets SYSTEM_ERROR saying what is wrong with it (Java's code for undecodable bodies).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from broker.namesrv.config import ForbiddenSettingError, NamesrvConfig
from broker.namesrv.kv_config import NAMESPACE_ORDER_TOPIC_CONFIG, KVConfigManager
from broker.namesrv.route_table import BrokerIdentity, RouteTable
from broker.protocol import headers as H
from broker.protocol.bodies import (
    BodyError,
    DataVersion,
    KVTable,
    RegisterBrokerBody,
    TopicList,
    TopicRouteData,
    route_wants_standard_json,
)
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.message import body_crc
from broker.protocol.remoting import ProtocolError, RemotingCommand, make_response
from broker.remoting.channel import Handler, RemotingChannel
from broker.remoting.server import RemotingServer
from broker.settings import SettingsError

log = logging.getLogger(__name__)

FAQ_SUFFIX = "\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details."

SyncHandler = Callable[[RemotingCommand, RemotingChannel], RemotingCommand]
AsyncHandler = Callable[[RemotingCommand, RemotingChannel], Awaitable[RemotingCommand]]
# registration bodies from this size (or compressed ones) are decoded on a worker thread
DECODE_OFF_LOOP_BYTES = 32 * 1024


def _ok(
    request: RemotingCommand, header: H.CommandHeader | None = None, body: bytes | None = None
) -> RemotingCommand:
    return make_response(request, ResponseCode.SUCCESS, header=header, body=body)


def _answering_bad_input(handler: SyncHandler | AsyncHandler) -> Handler:
    async def run(request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        try:
            answer = handler(request, channel)
            return answer if isinstance(answer, RemotingCommand) else await answer
        except H.HeaderFieldError as exc:
            return make_response(request, ResponseCode.INVALID_PARAMETER, str(exc))
        except ProtocolError as exc:  # BodyError and friends
            return make_response(request, ResponseCode.SYSTEM_ERROR, str(exc))

    return run


def _body_text(request: RemotingCommand, what: str) -> str:
    try:
        return (request.body or b"").decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BodyError(f"{what} body is not UTF-8 (byte {exc.start})") from None


class NamesrvProcessor:
    """The request handlers; ``watch_channel`` is told about every connection a broker registers
    over, so the server can drop that broker the moment the connection closes."""

    def __init__(
        self,
        config: NamesrvConfig,
        routes: RouteTable,
        kv: KVConfigManager,
        watch_channel: Callable[[RemotingChannel], None],
    ) -> None:
        self.config = config
        self.routes = routes
        self.kv = kv
        self._watch_channel = watch_channel

    def install(self, server: RemotingServer) -> dict[int, Handler]:
        """Register every handler on ``server``; returns them (an embedded controller shares one)."""
        handlers: dict[int, SyncHandler | AsyncHandler] = {
            RequestCode.PUT_KV_CONFIG: self.put_kv_config,
            RequestCode.GET_KV_CONFIG: self.get_kv_config,
            RequestCode.DELETE_KV_CONFIG: self.delete_kv_config,
            RequestCode.GET_KVLIST_BY_NAMESPACE: self.get_kv_list_by_namespace,
            RequestCode.REGISTER_BROKER: self.register_broker,
            RequestCode.UNREGISTER_BROKER: self.unregister_broker,
            RequestCode.BROKER_HEARTBEAT: self.broker_heartbeat,
            RequestCode.QUERY_DATA_VERSION: self.query_data_version,
            RequestCode.GET_ROUTEINFO_BY_TOPIC: self.get_route_info_by_topic,
            RequestCode.GET_BROKER_CLUSTER_INFO: self.get_broker_cluster_info,
            RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER: self.get_all_topic_list,
            RequestCode.GET_TOPICS_BY_CLUSTER: self.get_topics_by_cluster,
            RequestCode.DELETE_TOPIC_IN_NAMESRV: self.delete_topic_in_namesrv,
            RequestCode.REGISTER_TOPIC_IN_NAMESRV: self.register_topic_in_namesrv,
            RequestCode.WIPE_WRITE_PERM_OF_BROKER: self.wipe_write_perm_of_broker,
            RequestCode.ADD_WRITE_PERM_OF_BROKER: self.add_write_perm_of_broker,
            RequestCode.GET_NAMESRV_CONFIG: self.get_namesrv_config,
            RequestCode.UPDATE_NAMESRV_CONFIG: self.update_namesrv_config,
        }
        installed = {code: _answering_bad_input(handler) for code, handler in handlers.items()}
        for code, answering in installed.items():
            server.register(code, answering)
        return installed

    # -- KV config ------------------------------------------------------------------------------

    def put_kv_config(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        header = H.PutKVConfigRequestHeader.parse(request.ext_fields)
        self.kv.put(header.namespace, header.key, header.value)
        return _ok(request)

    def get_kv_config(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        header = H.GetKVConfigRequestHeader.parse(request.ext_fields)
        value = self.kv.get(header.namespace, header.key)
        if value is None:
            return make_response(
                request,
                ResponseCode.QUERY_NOT_FOUND,
                f"No config item, Namespace: {header.namespace} Key: {header.key}",
            )
        return _ok(request, H.GetKVConfigResponseHeader(value=value))

    def delete_kv_config(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        header = H.DeleteKVConfigRequestHeader.parse(request.ext_fields)
        self.kv.delete(header.namespace, header.key)
        return _ok(request)

    def get_kv_list_by_namespace(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        header = H.GetKVListByNamespaceRequestHeader.parse(request.ext_fields)
        table = self.kv.namespace(header.namespace)
        if table is None:
            return make_response(
                request, ResponseCode.QUERY_NOT_FOUND, f"No config item, Namespace: {header.namespace}"
            )
        return _ok(request, body=KVTable(table=table).to_json())

    # -- brokers --------------------------------------------------------------------------------

    async def register_broker(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        header = H.RegisterBrokerRequestHeader.parse(request.ext_fields)
        data = request.body
        if data is None and header.bodyCrc32 != 0:
            body = None
        elif data is None:  # Java's placeholder: a version no real registration equals
            body = RegisterBrokerBody()
            body.topicConfigSerializeWrapper.dataVersion = DataVersion(timestamp=0)
        elif header.compressed or len(data) >= DECODE_OFF_LOOP_BYTES:
            body = await asyncio.to_thread(_decode_register_body, data, header, request.version)
        else:
            body = _decode_register_body(data, header, request.version)
        if body is None:
            log.warning("REGISTER_BROKER from %s: body crc32 does not match", channel.remote_addr)
            return make_response(request, ResponseCode.SYSTEM_ERROR, "crc32 not match")
        wrapper = body.topicConfigSerializeWrapper
        timeout = header.heartbeatTimeoutMillis
        result = self.routes.register_broker(
            BrokerIdentity(header.clusterName, header.brokerAddr, header.brokerName, header.brokerId),
            ha_server_addr=header.haServerAddr,
            timeout_ms=timeout if timeout is not None and timeout > 0 else self.config.broker_expired_millis,
            data_version=wrapper.dataVersion,
            topics=wrapper.topicConfigTable,
            filter_servers=body.filterServerList,
            enable_acting_master=header.enableActingMaster,
            zone_name=request.ext_fields.get("__ZONE_NAME"),
            channel=channel,
        )
        if result is None:
            return make_response(
                request,
                ResponseCode.SYSTEM_ERROR,
                f"register broker failed: broker id {header.brokerId} of {header.brokerName} is held by "
                "another address with a newer state version",
            )
        self._watch_channel(channel)
        order_conf = (
            self.kv.namespace(NAMESPACE_ORDER_TOPIC_CONFIG)
            if self.config.return_order_topic_config_to_broker
            else None
        )
        return _ok(
            request,
            H.RegisterBrokerResponseHeader(masterAddr=result.master_addr, haServerAddr=result.ha_server_addr),
            KVTable(table=order_conf).to_json() if order_conf else None,
        )

    def unregister_broker(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        header = H.UnRegisterBrokerRequestHeader.parse(request.ext_fields)
        self.routes.unregister_brokers(
            [BrokerIdentity(header.clusterName, header.brokerAddr, header.brokerName, header.brokerId)]
        )
        return _ok(request)

    def broker_heartbeat(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        header = H.BrokerHeartbeatRequestHeader.parse(request.ext_fields)
        self.routes.touch(header.clusterName, header.brokerAddr)
        return _ok(request)

    def query_data_version(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        header = H.QueryDataVersionRequestHeader.parse(request.ext_fields)
        if request.body is None:
            raise BodyError("QUERY_DATA_VERSION needs the broker's DataVersion as its body")
        version = DataVersion.from_json(request.body)
        changed = self.routes.is_data_version_changed(header.clusterName, header.brokerAddr, version)
        self.routes.touch(header.clusterName, header.brokerAddr)
        ours = self.routes.data_version(header.clusterName, header.brokerAddr)
        return _ok(
            request,
            H.QueryDataVersionResponseHeader(changed=changed),
            None if ours is None else ours.to_json(),
        )

    def wipe_write_perm_of_broker(
        self, request: RemotingCommand, channel: RemotingChannel
    ) -> RemotingCommand:
        header = H.WipeWritePermOfBrokerRequestHeader.parse(request.ext_fields)
        count = self.routes.set_write_perm(header.brokerName, writable=False)
        log.info(
            "write perm of broker %s wiped by %s on %d topics", header.brokerName, channel.remote_addr, count
        )
        return _ok(request, H.WipeWritePermOfBrokerResponseHeader(wipeTopicCount=count))

    def add_write_perm_of_broker(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        header = H.AddWritePermOfBrokerRequestHeader.parse(request.ext_fields)
        count = self.routes.set_write_perm(header.brokerName, writable=True)
        log.info(
            "write perm of broker %s added by %s on %d topics", header.brokerName, channel.remote_addr, count
        )
        return _ok(request, H.AddWritePermOfBrokerResponseHeader(addTopicCount=count))

    # -- routes and topics ----------------------------------------------------------------------

    def get_route_info_by_topic(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        header = H.GetRouteInfoRequestHeader.parse(request.ext_fields)
        acting_master = self.config.support_acting_master
        standard = route_wants_standard_json(request.version, header.acceptStandardJsonOnly)
        order_conf = None
        if self.config.order_message_enable:
            order_conf = self.kv.get(NAMESPACE_ORDER_TOPIC_CONFIG, header.topic)
        if order_conf is None:
            body = self.routes.route_body(header.topic, acting_master=acting_master, standard=standard)
        else:
            route = self.routes.route(header.topic, acting_master=acting_master)
            if route is not None:
                route.orderTopicConf = order_conf
            body = None if route is None else route.to_json(standard=standard)
        if body is None:
            return make_response(
                request,
                ResponseCode.TOPIC_NOT_EXIST,
                f"No topic route info in name server for the topic: {header.topic}{FAQ_SUFFIX}",
            )
        return _ok(request, body=body)

    def get_broker_cluster_info(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        return _ok(request, body=self.routes.cluster_info().to_json())

    def get_all_topic_list(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        if not self.config.enable_all_topic_list:
            return make_response(request, ResponseCode.SYSTEM_ERROR, "disable")
        return _ok(request, body=TopicList(topicList=self.routes.topic_names()).to_json())

    def get_topics_by_cluster(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        if not self.config.enable_topic_list:
            return make_response(request, ResponseCode.SYSTEM_ERROR, "disable")
        header = H.GetTopicsByClusterRequestHeader.parse(request.ext_fields)
        return _ok(request, body=TopicList(topicList=self.routes.topics_of_cluster(header.cluster)).to_json())

    def delete_topic_in_namesrv(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        header = H.DeleteTopicFromNamesrvRequestHeader.parse(request.ext_fields)
        self.routes.delete_topic(header.topic, header.clusterName)
        return _ok(request)

    def register_topic_in_namesrv(
        self, request: RemotingCommand, channel: RemotingChannel
    ) -> RemotingCommand:
        header = H.RegisterTopicRequestHeader.parse(request.ext_fields)
        if request.body is None:
            raise BodyError("REGISTER_TOPIC_IN_NAMESRV needs a TopicRouteData body")
        self.routes.register_topic(header.topic, TopicRouteData.from_json(request.body).queueDatas)
        return _ok(request)

    # -- settings -------------------------------------------------------------------------------

    def get_namesrv_config(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        return _ok(request, body=self.config.to_properties().encode("utf-8"))

    def update_namesrv_config(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        text = _body_text(request, "UPDATE_NAMESRV_CONFIG")
        try:
            keys = self.config.apply_properties(text, "UPDATE_NAMESRV_CONFIG")
        except ForbiddenSettingError as exc:
            return make_response(request, ResponseCode.NO_PERMISSION, str(exc))
        except SettingsError as exc:
            return make_response(request, ResponseCode.INVALID_PARAMETER, str(exc))
        if not keys:
            return _ok(request)
        log.info("settings %s updated by %s", ", ".join(keys), channel.remote_addr)
        try:
            self.config.persist()
        except OSError as exc:
            return make_response(
                request,
                ResponseCode.SYSTEM_ERROR,
                f"settings applied but not saved to {self.config.config_store_path}: {exc.strerror or exc}",
            )
        return _ok(request)


def _decode_register_body(
    data: bytes, header: H.RegisterBrokerRequestHeader, version: int
) -> RegisterBrokerBody | None:
    """The registration body, or None when it does not match the header's crc32."""
    if header.bodyCrc32 != 0 and body_crc(data) != header.bodyCrc32:
        return None
    try:
        return RegisterBrokerBody.decode(data, header.compressed, version)
    except BodyError as exc:
        raise BodyError(f"Failed to decode RegisterBrokerBody: {exc}") from None
