"""Typed admin RPCs to NameServers and brokers (what mqadmin's MQAdminExt is in Java).

Every function sends one request and returns a typed answer or raises :class:`RemoteError` with
the server's code and remark. ``admin/`` builds the operator toolkit on these; screens and
commands never talk to sockets themselves.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, TypeVar

from broker.protocol.bodies import (
    ClusterInfo,
    CreateTopicListRequestBody,
    GroupList,
    JsonBody,
    KVTable,
    TopicConfig,
    TopicConfigSerializeWrapper,
    TopicList,
    TopicRouteData,
)
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.remoting import RemotingCommand, make_request
from broker.remoting.client import RemotingClient
from broker.remoting.errors import RemotingConnectError

if TYPE_CHECKING:
    from broker.protocol import headers
    from broker.protocol.consume_directly import ConsumeMessageDirectlyResult
    from broker.protocol.group_bodies import (
        ConsumerConnection,
        ConsumeStats,
        ConsumeStatsList,
        ProducerConnection,
        ProducerTableInfo,
        QueryConsumeQueueResponseBody,
        ResetOffsetBody,
        SubscriptionGroupConfig,
        TopicStatsTable,
    )
    from broker.protocol.message import MessageRecord
    from broker.protocol.rebalances import RebalanceHistoryBody
    from broker.protocol.running_info import ConsumerRunningInfo
    from broker.protocol.timers import TimerCancelBody, TimerListBody

B = TypeVar("B", bound=JsonBody)
DEFAULT_TIMEOUT = 5.0


class RemoteError(Exception):
    """A server answered with an error code; ``remark`` is its explanation."""

    def __init__(self, addr: str, request: int, code: int, remark: str | None) -> None:
        self.addr = addr
        self.request = request
        self.code = code
        self.remark = remark or ""
        name = ResponseCode(code).name if code in ResponseCode._value2member_map_ else str(code)
        super().__init__(
            f"{addr} answered {name} ({code}) to request {request}: {self.remark or 'no remark'}"
        )


def _properties_text(values: Mapping[str, str]) -> bytes:
    return "".join(f"{k}={v}\n" for k, v in values.items()).encode("utf-8")


def parse_properties_body(body: bytes | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in (body or b"").decode("utf-8", "replace").splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() and not key.lstrip().startswith("#"):
            out[key.strip()] = value.strip()
    return out


class AdminApi:
    """Admin requests over one shared :class:`RemotingClient` (one connection per address)."""

    def __init__(self, client: RemotingClient, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.client = client
        self.timeout = timeout

    async def call(
        self,
        addr: str,
        code: int,
        header: headers.CommandHeader | None = None,
        *,
        body: bytes | None = None,
        ext: Mapping[str, str] | None = None,
        ok: Sequence[int] = (ResponseCode.SUCCESS,),
    ) -> RemotingCommand:
        response = await self.client.invoke(
            addr, make_request(code, header, body=body, ext_fields=ext), timeout=self.timeout
        )
        if response.code not in ok:
            raise RemoteError(addr, code, response.code, response.remark)
        return response

    async def _body(
        self, addr: str, code: int, cls: type[B], header: headers.CommandHeader | None = None
    ) -> B:
        response = await self.call(addr, code, header)
        return cls.from_json(response.body or b"{}")

    # == NameServer ============================================================================
    async def first_namesrv(
        self,
        addrs: Sequence[str],
        code: int,
        header: headers.CommandHeader | None = None,
        *,
        ok: Sequence[int] = (ResponseCode.SUCCESS,),
    ) -> RemotingCommand:
        """Ask the NameServers in turn until one answers (a down one is skipped)."""
        last: Exception | None = None
        for addr in addrs:
            try:
                return await self.call(addr, code, header, ok=ok)
            except RemotingConnectError as exc:
                last = exc
        if last is None:
            raise ValueError("no NameServer address given")
        raise last

    async def topic_route(self, namesrv: Sequence[str], topic: str) -> TopicRouteData:
        from broker.protocol import headers

        r = await self.first_namesrv(
            namesrv, RequestCode.GET_ROUTEINFO_BY_TOPIC, headers.GetRouteInfoRequestHeader(topic=topic)
        )
        return TopicRouteData.from_json(r.body or b"{}")

    async def cluster_info(self, namesrv: Sequence[str]) -> ClusterInfo:
        r = await self.first_namesrv(namesrv, RequestCode.GET_BROKER_CLUSTER_INFO)
        return ClusterInfo.from_json(r.body or b"{}")

    async def topic_list(self, namesrv: Sequence[str]) -> list[str]:
        r = await self.first_namesrv(namesrv, RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
        return TopicList.from_json(r.body or b"{}").topicList

    async def topics_by_cluster(self, namesrv: Sequence[str], cluster: str) -> list[str]:
        from broker.protocol import headers

        header = headers.GetTopicsByClusterRequestHeader(cluster=cluster)
        r = await self.first_namesrv(namesrv, RequestCode.GET_TOPICS_BY_CLUSTER, header)
        return TopicList.from_json(r.body or b"{}").topicList

    async def delete_topic_in_namesrv(
        self, namesrv_addr: str, topic: str, cluster: str | None = None
    ) -> None:
        from broker.protocol import headers

        header = headers.DeleteTopicFromNamesrvRequestHeader(topic=topic, clusterName=cluster)
        await self.call(namesrv_addr, RequestCode.DELETE_TOPIC_IN_NAMESRV, header)

    async def put_kv(self, namesrv_addr: str, namespace: str, key: str, value: str) -> None:
        from broker.protocol import headers

        header = headers.PutKVConfigRequestHeader(namespace=namespace, key=key, value=value)
        await self.call(namesrv_addr, RequestCode.PUT_KV_CONFIG, header)

    async def get_kv(self, namesrv: Sequence[str], namespace: str, key: str) -> str | None:
        from broker.protocol import headers

        header = headers.GetKVConfigRequestHeader(namespace=namespace, key=key)
        ok = (ResponseCode.SUCCESS, ResponseCode.QUERY_NOT_FOUND)
        r = await self.first_namesrv(namesrv, RequestCode.GET_KV_CONFIG, header, ok=ok)
        if r.code == ResponseCode.QUERY_NOT_FOUND:
            return None
        return headers.GetKVConfigResponseHeader.from_ext_fields(r.ext_fields).value

    async def delete_kv(self, namesrv_addr: str, namespace: str, key: str) -> None:
        from broker.protocol import headers

        header = headers.DeleteKVConfigRequestHeader(namespace=namespace, key=key)
        await self.call(namesrv_addr, RequestCode.DELETE_KV_CONFIG, header)

    async def kv_list(self, namesrv: Sequence[str], namespace: str) -> dict[str, str]:
        from broker.protocol import headers

        header = headers.GetKVListByNamespaceRequestHeader(namespace=namespace)
        ok = (ResponseCode.SUCCESS, ResponseCode.QUERY_NOT_FOUND)
        r = await self.first_namesrv(namesrv, RequestCode.GET_KVLIST_BY_NAMESPACE, header, ok=ok)
        return {} if r.code == ResponseCode.QUERY_NOT_FOUND else KVTable.from_json(r.body or b"{}").table

    async def namesrv_config(self, namesrv_addr: str) -> dict[str, str]:
        r = await self.call(namesrv_addr, RequestCode.GET_NAMESRV_CONFIG)
        return parse_properties_body(r.body)

    async def update_namesrv_config(self, namesrv_addr: str, values: Mapping[str, str]) -> None:
        await self.call(namesrv_addr, RequestCode.UPDATE_NAMESRV_CONFIG, body=_properties_text(values))

    async def wipe_write_perm(self, namesrv_addr: str, broker_name: str) -> int:
        from broker.protocol import headers

        header = headers.WipeWritePermOfBrokerRequestHeader(brokerName=broker_name)
        r = await self.call(namesrv_addr, RequestCode.WIPE_WRITE_PERM_OF_BROKER, header)
        return headers.WipeWritePermOfBrokerResponseHeader.from_ext_fields(r.ext_fields).wipeTopicCount or 0

    async def add_write_perm(self, namesrv_addr: str, broker_name: str) -> int:
        from broker.protocol import headers

        header = headers.AddWritePermOfBrokerRequestHeader(brokerName=broker_name)
        r = await self.call(namesrv_addr, RequestCode.ADD_WRITE_PERM_OF_BROKER, header)
        return headers.AddWritePermOfBrokerResponseHeader.from_ext_fields(r.ext_fields).addTopicCount or 0

    # == broker: topics and groups ===============================================================
    async def create_topic(self, broker_addr: str, config: TopicConfig) -> None:
        from broker.protocol import headers

        header = headers.CreateTopicRequestHeader(
            topic=config.topicName or "",
            defaultTopic="TBW102",
            readQueueNums=config.readQueueNums,
            writeQueueNums=config.writeQueueNums,
            perm=config.perm,
            topicFilterType=config.topicFilterType.name,
            topicSysFlag=config.topicSysFlag,
            order=config.order,
            attributes=",".join(f"+{k}={v}" for k, v in config.attributes.items()) or None,
        )
        await self.call(broker_addr, RequestCode.UPDATE_AND_CREATE_TOPIC, header)

    async def delete_topic_in_broker(self, broker_addr: str, topic: str) -> None:
        from broker.protocol import headers

        await self.call(
            broker_addr, RequestCode.DELETE_TOPIC_IN_BROKER, headers.DeleteTopicRequestHeader(topic=topic)
        )

    async def all_topic_config(self, broker_addr: str) -> dict[str, TopicConfig]:
        wrapper = await self._body(broker_addr, RequestCode.GET_ALL_TOPIC_CONFIG, TopicConfigSerializeWrapper)
        return wrapper.topicConfigTable

    async def create_group(self, broker_addr: str, config: SubscriptionGroupConfig) -> None:
        await self.call(broker_addr, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=config.to_json())

    async def delete_group(self, broker_addr: str, group: str, clean_offsets: bool = False) -> None:
        from broker.protocol import headers

        header = headers.DeleteSubscriptionGroupRequestHeader(groupName=group, cleanOffset=clean_offsets)
        await self.call(broker_addr, RequestCode.DELETE_SUBSCRIPTIONGROUP, header)

    async def all_group_config(self, broker_addr: str) -> dict[str, SubscriptionGroupConfig]:
        from broker.protocol import group_bodies

        r = await self.call(broker_addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        from broker.protocol.bodies import load_json

        doc = load_json(r.body or b"{}", "SubscriptionGroupWrapper")
        table = doc.get("subscriptionGroupTable", {}) if isinstance(doc, dict) else {}
        return {str(k): group_bodies.SubscriptionGroupConfig.from_obj(v) for k, v in table.items()}

    async def topic_config(self, broker_addr: str, topic: str) -> TopicConfig:
        """One topic's configuration on a broker (TOPIC_NOT_EXIST when it has none)."""
        from broker.protocol import headers

        header = headers.GetTopicConfigRequestHeader(topic=topic)
        return await self._body(broker_addr, RequestCode.GET_TOPIC_CONFIG, TopicConfig, header)

    async def group_config(self, broker_addr: str, group: str) -> SubscriptionGroupConfig:
        """One subscription group's configuration (SUBSCRIPTION_GROUP_NOT_EXIST when unknown)."""
        from broker.protocol import group_bodies, headers

        header = headers.GetSubscriptionGroupConfigRequestHeader(group=group)
        return await self._body(
            broker_addr,
            RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG,
            group_bodies.SubscriptionGroupConfig,
            header,
        )

    async def create_topics(self, broker_addr: str, configs: Sequence[TopicConfig]) -> None:
        """Create or update several topics at once; the broker applies all of them or none."""
        body = CreateTopicListRequestBody(topicConfigList=list(configs)).to_json()
        await self.call(broker_addr, RequestCode.UPDATE_AND_CREATE_TOPIC_LIST, body=body)

    async def create_groups(self, broker_addr: str, configs: Sequence[SubscriptionGroupConfig]) -> None:
        """Create or update several subscription groups at once; all of them or none."""
        from broker.protocol import group_bodies

        body = group_bodies.SubscriptionGroupList(groupConfigList=list(configs)).to_json()
        await self.call(broker_addr, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST, body=body)

    # == broker: state and statistics ============================================================
    async def broker_config(self, broker_addr: str) -> dict[str, str]:
        r = await self.call(broker_addr, RequestCode.GET_BROKER_CONFIG)
        return parse_properties_body(r.body)

    async def update_broker_config(self, broker_addr: str, values: Mapping[str, str]) -> None:
        await self.call(broker_addr, RequestCode.UPDATE_BROKER_CONFIG, body=_properties_text(values))

    async def runtime_info(self, broker_addr: str) -> dict[str, str]:
        return (await self._body(broker_addr, RequestCode.GET_BROKER_RUNTIME_INFO, KVTable)).table

    async def topic_stats(self, broker_addr: str, topic: str) -> TopicStatsTable:
        from broker.protocol import group_bodies, headers

        header = headers.GetTopicStatsInfoRequestHeader(topic=topic)
        return await self._body(
            broker_addr, RequestCode.GET_TOPIC_STATS_INFO, group_bodies.TopicStatsTable, header
        )

    async def topics_stats(self, broker_addr: str, topics: Sequence[str]) -> dict[str, TopicStatsTable]:
        """GET_TOPICS_STATS_INFO (rmqkit's own; Apache RocketMQ answers REQUEST_CODE_NOT_SUPPORTED):
        each of ``topics`` (at most 1,000) the broker holds -> its offsets, in one answer."""
        from broker.protocol import group_bodies

        ext = {"topicList": ";".join(topics)}
        r = await self.call(broker_addr, RequestCode.GET_TOPICS_STATS_INFO, ext=ext)
        return group_bodies.TopicStatsTables.from_json(r.body or b"{}").topicStatsTable

    async def consume_stats(self, broker_addr: str, group: str, topic: str | None = None) -> ConsumeStats:
        from broker.protocol import group_bodies, headers

        header = headers.GetConsumeStatsRequestHeader(consumerGroup=group, topic=topic)
        return await self._body(broker_addr, RequestCode.GET_CONSUME_STATS, group_bodies.ConsumeStats, header)

    async def broker_consume_stats(self, broker_addr: str, order_only: bool = False) -> ConsumeStatsList:
        """GET_BROKER_CONSUME_STATS: every group's consume stats on the broker, per topic, in one answer."""
        from broker.protocol import group_bodies, headers

        header = headers.GetConsumeStatsInBrokerHeader(isOrder=order_only)
        return await self._body(
            broker_addr, RequestCode.GET_BROKER_CONSUME_STATS, group_bodies.ConsumeStatsList, header
        )

    async def consumer_connection(self, broker_addr: str, group: str) -> ConsumerConnection | None:
        """The group's online clients, or None when none is online (206 CONSUMER_NOT_ONLINE)."""
        from broker.protocol import group_bodies, headers

        header = headers.GetConsumerConnectionListRequestHeader(consumerGroup=group)
        ok = (ResponseCode.SUCCESS, ResponseCode.CONSUMER_NOT_ONLINE)
        r = await self.call(broker_addr, RequestCode.GET_CONSUMER_CONNECTION_LIST, header, ok=ok)
        return (
            None
            if r.code != ResponseCode.SUCCESS
            else group_bodies.ConsumerConnection.from_json(r.body or b"{}")
        )

    async def all_consumer_connections(self, broker_addr: str) -> dict[str, ConsumerConnection]:
        """Every online group's clients on the broker in one answer (rmqkit's own
        GET_ALL_CONSUMER_CONNECTIONS; Apache RocketMQ answers REQUEST_CODE_NOT_SUPPORTED)."""
        from broker.protocol import group_bodies

        r = await self.call(broker_addr, RequestCode.GET_ALL_CONSUMER_CONNECTIONS)
        return group_bodies.ConsumerConnectionTable.from_json(r.body or b"{}").connectionTable

    async def consumer_running_info(
        self, broker_addr: str, group: str, client_id: str, jstack: bool = False
    ) -> ConsumerRunningInfo:
        """GET_CONSUMER_RUNNING_INFO: the broker asks the client over its connection and relays the answer."""
        from broker.protocol import running_info

        header = running_info.GetConsumerRunningInfoRequestHeader(
            consumerGroup=group, clientId=client_id, jstackEnable=jstack
        )
        r = await self.call(broker_addr, RequestCode.GET_CONSUMER_RUNNING_INFO, header)
        return running_info.ConsumerRunningInfo.from_json(r.body or b"{}")

    async def consume_message_directly(
        self, broker_addr: str, group: str, client_id: str, msg_id: str, topic: str
    ) -> ConsumeMessageDirectlyResult:
        """CONSUME_MESSAGE_DIRECTLY: the broker holding the message (``msg_id``, an offset MessageId)
        hands it to one client's listener and relays what the listener answered."""
        from broker.protocol import consume_directly

        header = consume_directly.ConsumeMessageDirectlyResultRequestHeader(
            consumerGroup=group, clientId=client_id, msgId=msg_id, topic=topic
        )
        r = await self.call(broker_addr, RequestCode.CONSUME_MESSAGE_DIRECTLY, header)
        return consume_directly.ConsumeMessageDirectlyResult.from_json(r.body or b"{}")

    async def resume_check_half_message(self, broker_addr: str, msg_id: str) -> None:
        """RESUME_CHECK_HALF_MESSAGE: a half message the broker gave up checking (``msg_id``, its offset
        MessageId in TRANS_CHECK_MAX_TIME_TOPIC) goes back to the half queue, checked again from zero."""
        from broker.protocol import headers

        header = headers.ResumeCheckHalfMessageRequestHeader(msgId=msg_id)
        await self.call(broker_addr, RequestCode.RESUME_CHECK_HALF_MESSAGE, header)

    async def producer_connection(self, broker_addr: str, group: str) -> ProducerConnection:
        from broker.protocol import group_bodies, headers

        header = headers.GetProducerConnectionListRequestHeader(producerGroup=group)
        return await self._body(
            broker_addr, RequestCode.GET_PRODUCER_CONNECTION_LIST, group_bodies.ProducerConnection, header
        )

    async def all_producers(self, broker_addr: str) -> ProducerTableInfo:
        """GET_ALL_PRODUCER_INFO: every producer connection of the broker, by group."""
        from broker.protocol import group_bodies

        return await self._body(
            broker_addr, RequestCode.GET_ALL_PRODUCER_INFO, group_bodies.ProducerTableInfo
        )

    async def groups_consuming(self, broker_addr: str, topic: str) -> list[str]:
        from broker.protocol import headers

        header = headers.QueryTopicConsumeByWhoRequestHeader(topic=topic)
        return (
            await self._body(broker_addr, RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, GroupList, header)
        ).groupList

    # == broker: offsets ======================================================================
    async def reset_offset(
        self, broker_addr: str, group: str, topic: str, *, timestamp: int = 0, offset: int | None = None,
        queue_id: int = -1, force: bool = True,
    ) -> ResetOffsetBody:  # fmt: skip
        from broker.protocol import group_bodies, headers

        header = headers.ResetOffsetRequestHeader(
            group=group, topic=topic, timestamp=timestamp, offset=offset, queueId=queue_id, isForce=force
        )
        return await self._body(
            broker_addr, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, group_bodies.ResetOffsetBody, header
        )

    async def clone_group_offset(
        self, broker_addr: str, src: str, dest: str, topic: str | None = None
    ) -> None:
        from broker.protocol import headers

        header = headers.CloneGroupOffsetRequestHeader(srcGroup=src, destGroup=dest, topic=topic)
        await self.call(broker_addr, RequestCode.CLONE_GROUP_OFFSET, header)

    # == broker: pending timer messages ========================================================
    async def list_timers(self, broker_addr: str, topic: str | None, begin_ms: int, end_ms: int,
                          limit: int) -> TimerListBody:  # fmt: skip
        """Pending timer messages due between ``begin_ms`` and ``end_ms``, by due time."""
        from broker.protocol.timers import TimerListBody

        ext = {"beginTimestamp": str(begin_ms), "endTimestamp": str(end_ms), "maxNum": str(limit)}
        if topic:
            ext["topic"] = topic
        r = await self.call(broker_addr, RequestCode.LIST_TIMER_MESSAGES, ext=ext)
        return TimerListBody.from_json(r.body or b"{}")

    async def cancel_timer(
        self, broker_addr: str, topic: str, msg_id: str | None, key: str | None
    ) -> TimerCancelBody:
        """Cancel the pending timer messages of ``topic`` with UNIQ_KEY ``msg_id`` or key ``key``."""
        from broker.protocol.timers import TimerCancelBody

        ext = {"topic": topic, **({"msgId": msg_id} if msg_id else {"key": key or ""})}
        r = await self.call(broker_addr, RequestCode.CANCEL_TIMER_MESSAGE, ext=ext)
        return TimerCancelBody.from_json(r.body or b"{}")

    # == broker: rebalance history ============================================================
    async def rebalance_history(
        self, broker_addr: str, group: str, since_ms: int = 0
    ) -> RebalanceHistoryBody:
        """Who holds each queue of ``group`` on the broker, and the moves from ``since_ms`` on."""
        from broker.protocol.rebalances import RebalanceHistoryBody

        ext = {"consumerGroup": group, "beginTimestamp": str(since_ms)}
        r = await self.call(broker_addr, RequestCode.GET_REBALANCE_HISTORY, ext=ext)
        return RebalanceHistoryBody.from_json(r.body or b"")

    # == broker: store maintenance ===========================================================
    async def query_consume_queue(
        self, broker_addr: str, topic: str, queue_id: int, index: int, count: int, group: str | None = None
    ) -> QueryConsumeQueueResponseBody:
        """Units of one ConsumeQueue; an index outside the queue is QUERY_NOT_FOUND with the broker's
        remark (RocketMQ answers it as a SUCCESS without a body)."""
        from broker.protocol import group_bodies, headers

        header = headers.QueryConsumeQueueRequestHeader(
            topic=topic, queueId=queue_id, index=index, count=count, consumerGroup=group
        )
        r = await self.call(broker_addr, RequestCode.QUERY_CONSUME_QUEUE, header)
        if not r.body:
            raise RemoteError(
                broker_addr, RequestCode.QUERY_CONSUME_QUEUE, ResponseCode.QUERY_NOT_FOUND, r.remark
            )
        return group_bodies.QueryConsumeQueueResponseBody.from_json(r.body)

    async def clean_expired_consume_queue(self, broker_addr: str) -> None:
        await self.call(broker_addr, RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE)

    async def delete_expired_commitlog(self, broker_addr: str) -> None:
        await self.call(broker_addr, RequestCode.DELETE_EXPIRED_COMMITLOG)

    async def clean_unused_topic(self, broker_addr: str) -> None:
        await self.call(broker_addr, RequestCode.CLEAN_UNUSED_TOPIC)

    async def _offset(self, broker_addr: str, code: int, header: headers.CommandHeader) -> int:
        from broker.protocol import headers

        r = await self.call(broker_addr, code, header)
        return headers.OffsetResponseHeader.from_ext_fields(r.ext_fields).offset or 0

    async def max_offset(self, broker_addr: str, topic: str, queue_id: int) -> int:
        from broker.protocol import headers

        header = headers.GetMaxOffsetRequestHeader(topic=topic, queueId=queue_id)
        return await self._offset(broker_addr, RequestCode.GET_MAX_OFFSET, header)

    async def min_offset(self, broker_addr: str, topic: str, queue_id: int) -> int:
        from broker.protocol import headers

        header = headers.GetMinOffsetRequestHeader(topic=topic, queueId=queue_id)
        return await self._offset(broker_addr, RequestCode.GET_MIN_OFFSET, header)

    async def search_offset(
        self, broker_addr: str, topic: str, queue_id: int, timestamp: int, upper: bool = False
    ) -> int:
        from broker.protocol import headers

        header = headers.SearchOffsetRequestHeader(
            topic=topic,
            queueId=queue_id,
            timestamp=timestamp,
            boundaryType=headers.BoundaryType.UPPER if upper else headers.BoundaryType.LOWER,
        )
        return await self._offset(broker_addr, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, header)

    # == broker: messages ======================================================================
    async def store_time_at(self, broker_addr: str, topic: str, queue_id: int, offset: int) -> int | None:
        """When the message at ``offset`` of a queue was stored (epoch ms); None when there is none.
        One PULL of one message as the tools group, committing nothing (RocketMQ has no request
        for a store time at an offset)."""
        from broker.protocol import headers
        from broker.protocol.message import decode_records

        header = headers.PullMessageRequestHeader(
            consumerGroup="TOOLS_CONSUMER", topic=topic, queueId=queue_id, queueOffset=offset,
            maxMsgNums=1, sysFlag=0x4, commitOffset=0, suspendTimeoutMillis=0, subVersion=0,
            subscription="*",
        )  # fmt: skip
        ok = (ResponseCode.SUCCESS, ResponseCode.PULL_NOT_FOUND, ResponseCode.PULL_RETRY_IMMEDIATELY,
              ResponseCode.PULL_OFFSET_MOVED)  # fmt: skip
        r = await self.call(broker_addr, RequestCode.PULL_MESSAGE, header, ok=ok)
        if r.code != ResponseCode.SUCCESS:
            return None
        first = next(iter(decode_records(r.body or b"")), None)
        return None if first is None else first.store_timestamp

    async def view_message(self, broker_addr: str, phys_offset: int) -> MessageRecord:
        from broker.protocol import headers

        r = await self.call(
            broker_addr, RequestCode.VIEW_MESSAGE_BY_ID, headers.ViewMessageRequestHeader(offset=phys_offset)
        )
        return self._records(broker_addr, r.body)[0]

    async def query_message(
        self,
        broker_addr: str,
        topic: str,
        key: str,
        *,
        max_num: int = 64,
        begin: int = 0,
        end: int = 2**63 - 1,
        unique: bool = False,
    ) -> list[MessageRecord]:
        """Messages whose key (or UNIQ_KEY) is ``key``; the broker's index may return collisions, so
        results are re-checked here as mqadmin does."""
        from broker.protocol import headers

        header = headers.QueryMessageRequestHeader(
            topic=topic, key=key, maxNum=max_num, beginTimestamp=begin, endTimestamp=end
        )
        ok = (ResponseCode.SUCCESS, ResponseCode.QUERY_NOT_FOUND)
        ext = {"_UNIQUE_KEY_QUERY": "true" if unique else "false"}
        r = await self.call(broker_addr, RequestCode.QUERY_MESSAGE, header, ext=ext, ok=ok)
        if r.code == ResponseCode.QUERY_NOT_FOUND:
            return []
        found = [m for m in self._records(broker_addr, r.body) if m.topic == topic]
        if unique:
            return [m for m in found if m.uniq_key == key]
        return [m for m in found if key in m.keys or m.uniq_key == key]

    @staticmethod
    def _records(addr: str, body: bytes | None) -> list[MessageRecord]:
        from broker.protocol.message import RecordError, decode_records

        try:
            records = list(decode_records(body or b""))
        except RecordError as exc:
            raise RemoteError(
                addr, 0, ResponseCode.SYSTEM_ERROR, f"undecodable message body: {exc}"
            ) from None
        if not records:
            raise RemoteError(addr, 0, ResponseCode.SYSTEM_ERROR, "empty message body")
        return records
