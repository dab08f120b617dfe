"""Broker metadata administration: topics (17, 18, 215, 21, 351), subscription groups (200, 225, 207,
201, 352), broker configuration (26, 25) and runtime information (28).

Consumer-facing admin codes live in :mod:`broker.server.consumer_admin_processor`, message lookups
in :mod:`broker.server.query_processor`.
"""

from __future__ import annotations

import dataclasses
import functools
import shutil
import time
from typing import Protocol

from broker.acl.settings import SECRET_SETTINGS
from broker.protocol.bodies import (
    CreateTopicListRequestBody,
    DataVersion,
    KVTable,
    TopicConfig,
    TopicFilterType,
)
from broker.protocol.codes import CURRENT_VERSION, RequestCode, ResponseCode
from broker.protocol.group_bodies import SubscriptionGroupConfig, SubscriptionGroupList
from broker.protocol.headers import (
    CreateTopicRequestHeader,
    DeleteSubscriptionGroupRequestHeader,
    DeleteTopicRequestHeader,
    GetSubscriptionGroupConfigRequestHeader,
    GetTopicConfigRequestHeader,
)
from broker.protocol.remoting import RemotingCommand, make_response
from broker.remoting.channel import Handler, RemotingChannel
from broker.server.config import BrokerConfig, settings_target
from broker.server.consumer_offset import ConsumerOffsetManager
from broker.server.registration import NameServerRegistration
from broker.server.stats import BrokerStats
from broker.server.store_access import StoreAccess
from broker.server.subscription_group import SubscriptionGroupManager, group_name_problem
from broker.server.topic_config import (
    MixedTypeRefused,
    TopicAttributeError,
    TopicConfigManager,
    alter_topic_attributes,
    topic_name_problem,
)
from broker.settings import SettingsError, parse_properties
from broker.store.config import StoreConfig
from broker.store.message_store import MessageStore, default_disk_usage

VERSION_DESC = "V5_3_3"
# Settings UPDATE_BROKER_CONFIG may change at runtime; everything else needs a restart (and some,
# like paths, must never be reachable from the network: CVE-2023-33246).
RUNTIME_SETTINGS = frozenset(
    {
        "broker_permission",
        "auto_create_topic_enable",
        "auto_create_subscription_group",
        "default_topic_queue_nums",
        "long_polling_enable",
        "short_polling_time_mills",
        "wait_time_mills_in_send_queue",
        "append_on_event_loop",
        "notify_consumer_ids_changed_enable",
        "use_server_side_reset_offset",
        "reject_transaction_message",
        "recall_message_enable",
        "allow_recall_when_broker_not_writeable",
        "enable_topic_message_type_check",
        "enable_mixed_message_type",
        "server_load_balancer_enable",
        "default_message_request_mode",
        "default_pop_share_queue_num",
        "register_name_server_period",
        "region_id",
        "trace_on",
        "file_reserved_time_hours",
        "delete_when",
        "disk_max_used_space_ratio",
        "max_message_size",
        "commit_log_cache_window",
        "compaction_schedule_interval_ms",
        "enable_compaction",
    }
)


class _Refused(Exception):
    """A topic or group configuration the broker will not take: the response code and remark."""

    def __init__(self, code: int, remark: str) -> None:
        super().__init__(remark)
        self.code = code
        self.remark = remark


def _modification(attributes: dict[str, str]) -> str | None:
    """A TopicConfig's attribute map (keys signed ``+k``/``-k``) as UPDATE_AND_CREATE_TOPIC's text."""
    items = [key if key.startswith("-") else f"{key}={value}" for key, value in attributes.items()]
    return ",".join(items) or None


def _runtime(boot_ms: int) -> str:
    seconds = max(0, int(time.time() - boot_ms / 1000))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    return f"[ {days} days, {hours} hours, {minutes} minutes, {seconds} seconds ]"


class RunningStats(Protocol):
    def running_stats(self) -> dict[str, str]: ...


class AdminParts(StoreAccess, Protocol):
    """The parts of the broker metadata administration uses."""

    @property
    def config(self) -> BrokerConfig: ...

    @property
    def store_config(self) -> StoreConfig: ...

    @property
    def store(self) -> MessageStore: ...

    @property
    def topics(self) -> TopicConfigManager: ...

    @property
    def groups(self) -> SubscriptionGroupManager: ...

    @property
    def offsets(self) -> ConsumerOffsetManager: ...

    @property
    def registration(self) -> NameServerRegistration: ...

    @property
    def stats(self) -> BrokerStats: ...

    @property
    def schedule(self) -> RunningStats: ...

    @property
    def timer(self) -> RunningStats: ...

    @property
    def write_queue_size(self) -> int: ...

    @property
    def appends_on_event_loop(self) -> bool: ...


class AdminProcessor:
    def __init__(self, broker: AdminParts) -> None:
        self.broker = broker
        self.config_version = DataVersion()

    def handlers(self) -> dict[int, Handler]:
        return {
            RequestCode.UPDATE_AND_CREATE_TOPIC: self.create_topic,
            RequestCode.UPDATE_AND_CREATE_TOPIC_LIST: self.create_topic_list,
            RequestCode.DELETE_TOPIC_IN_BROKER: self.delete_topic,
            RequestCode.GET_ALL_TOPIC_CONFIG: self.all_topic_config,
            RequestCode.GET_TOPIC_CONFIG: self.topic_config,
            RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: self.create_group,
            RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST: self.create_group_list,
            RequestCode.DELETE_SUBSCRIPTIONGROUP: self.delete_group,
            RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG: self.all_group_config,
            RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG: self.group_config,
            RequestCode.GET_BROKER_CONFIG: self.get_broker_config,
            RequestCode.UPDATE_BROKER_CONFIG: self.update_broker_config,
            RequestCode.GET_BROKER_RUNTIME_INFO: self.runtime_info,
        }

    # == topics ================================================================================
    async def create_topic(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        h = CreateTopicRequestHeader.parse(request.ext_fields)
        try:
            config = self._checked_topic(
                h.topic, h.readQueueNums, h.writeQueueNums, h.perm, h.topicFilterType,
                h.topicSysFlag or 0, bool(h.order), h.attributes,
            )  # fmt: skip
        except _Refused as refused:
            return make_response(request, refused.code, refused.remark)
        self.broker.topics.put(config)
        # as RocketMQ's broker does: a tool that asks for the route right after creating the topic
        # finds it (each NameServer is given at most 3 s)
        await self.broker.registration.sync()
        return make_response(request)

    async def create_topic_list(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        """Every configuration is checked as UPDATE_AND_CREATE_TOPIC checks one, before any is applied
        (decoded and checked on a read thread: a list of thousands would hold other requests up)."""
        try:
            configs = await self.broker.read(self._checked_topic_list, request.body or b"")
        except _Refused as refused:
            return make_response(request, refused.code, refused.remark)
        self.broker.topics.put_many(configs)
        await self.broker.registration.sync()
        return make_response(request)

    def _checked_topic_list(self, data: bytes) -> list[TopicConfig]:
        return [
            self._checked_topic(
                c.topicName,
                c.readQueueNums,
                c.writeQueueNums,
                c.perm,
                c.topicFilterType.name,
                c.topicSysFlag,
                c.order,
                _modification(c.attributes),
            )
            for c in CreateTopicListRequestBody.from_json(data).topicConfigList
        ]

    def _checked_topic(
        self, topic: str | None, read: int, write: int, perm: int, filter_type: str, sys_flag: int,
        order: bool, attributes: str | None,
    ) -> TopicConfig:  # fmt: skip
        """The configuration to store for a create/update request, or :class:`_Refused`."""
        topics = self.broker.topics
        problem = topic_name_problem(topic)
        if topic is None or problem is not None:
            raise _Refused(ResponseCode.INVALID_PARAMETER, problem or "The specified topic is blank.")
        if topics.is_system_topic(topic):
            problem = f"The topic[{topic}] is conflict with system topic."
        elif not (read > 0 and write > 0):
            problem = f"queue numbers must be positive, got read {read} write {write}"
        elif not 0 <= perm <= 7:
            problem = f"perm {perm} is not within 0..7"
        elif filter_type.upper() not in TopicFilterType.__members__:
            problem = f"topicFilterType {filter_type!r} is not SINGLE_TAG or MULTI_TAG"
        if problem is not None:
            raise _Refused(ResponseCode.INVALID_PARAMETER, problem)
        existing = topics.get(topic)
        try:
            altered = alter_topic_attributes(
                existing is None,
                existing.attributes if existing else {},
                attributes,
                mixed_allowed=self.broker.config.enable_mixed_message_type,
            )
        except MixedTypeRefused as exc:
            raise _Refused(ResponseCode.INVALID_PARAMETER, str(exc)) from None
        except TopicAttributeError as exc:  # RocketMQ answers these as SYSTEM_ERROR
            raise _Refused(ResponseCode.SYSTEM_ERROR, str(exc)) from None
        return TopicConfig(
            topicName=topic,
            readQueueNums=read,
            writeQueueNums=write,
            perm=perm,
            topicFilterType=TopicFilterType[filter_type.upper()],
            topicSysFlag=sys_flag,
            order=order,
            attributes=altered,
        )

    async def delete_topic(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        h = DeleteTopicRequestHeader.parse(request.ext_fields)
        broker = self.broker
        if not h.topic.strip():
            return make_response(request, ResponseCode.INVALID_PARAMETER, "The specified topic is blank.")
        if broker.topics.is_system_topic(h.topic):
            return make_response(
                request,
                ResponseCode.INVALID_PARAMETER,
                f"The topic[{h.topic}] is conflict with system topic.",
            )
        broker.topics.delete(h.topic)
        broker.offsets.remove_topic(h.topic)
        broker.stats.forget_topic(h.topic)
        await broker.write(broker.store.delete_topic, h.topic)
        return make_response(request)

    async def all_topic_config(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        # encoded on a read thread: thousands of topics would hold every other request up
        return make_response(request, body=await self.broker.read(self.broker.topics.table_json))

    async def topic_config(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        """TopicConfigAndQueueMapping: the TopicConfig fields; no ``mappingDetail`` (no static topics)."""
        h = GetTopicConfigRequestHeader.parse(request.ext_fields)
        config = self.broker.topics.get(h.topic)
        if config is None:
            return make_response(
                request, ResponseCode.TOPIC_NOT_EXIST, f"No topic in this broker. topic: {h.topic}"
            )
        return make_response(request, body=config.to_json())

    # == groups ================================================================================
    async def create_group(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        config = SubscriptionGroupConfig.from_json(request.body or b"{}")
        problem = group_name_problem(config.groupName)
        if problem is not None:
            return make_response(request, ResponseCode.INVALID_PARAMETER, problem)
        self.broker.groups.put(config)
        return make_response(request)

    async def create_group_list(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        """Every name is checked as UPDATE_AND_CREATE_SUBSCRIPTIONGROUP checks one, before any is applied
        (decoded on a read thread, as topic lists are)."""
        configs = await self.broker.read(SubscriptionGroupList.from_json, request.body or b"")
        for config in configs.groupConfigList:
            problem = group_name_problem(config.groupName)
            if problem is not None:
                return make_response(request, ResponseCode.INVALID_PARAMETER, problem)
        self.broker.groups.put_many(configs.groupConfigList)
        return make_response(request)

    async def group_config(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        """A lookup only: unlike a consumer's first pull it never auto-creates the group."""
        h = GetSubscriptionGroupConfigRequestHeader.parse(request.ext_fields)
        config = self.broker.groups.get(h.group)
        if config is None:
            remark = f"No group in this broker. group: {h.group}"
            return make_response(request, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, remark)
        return make_response(request, body=config.to_json())

    async def delete_group(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        h = DeleteSubscriptionGroupRequestHeader.parse(request.ext_fields)
        self.broker.groups.delete(h.groupName)
        if h.clean_offsets:
            self.broker.offsets.remove_group(h.groupName)
        return make_response(request)

    async def all_group_config(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        text = await self.broker.read(functools.partial(self.broker.groups.document, pretty=False))
        return make_response(request, body=text.encode("utf-8"))

    # == broker configuration ==================================================================
    async def get_broker_config(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        props = settings_target(self.broker.config, self.broker.store_config).as_properties()
        text = "".join(
            f"{key}={value}\n" for key, value in sorted(props.items()) if key not in SECRET_SETTINGS
        )
        response = make_response(request, body=text.encode("utf-8"))
        response.ext_fields["version"] = self.config_version.to_json().decode("utf-8")
        return response

    async def update_broker_config(
        self, request: RemotingCommand, channel: RemotingChannel
    ) -> RemotingCommand:
        """Apply Java properties text, all or nothing: only RUNTIME_SETTINGS keys are accepted."""
        broker = self.broker
        try:
            items = parse_properties((request.body or b"").decode("utf-8", "replace"), "UPDATE_BROKER_CONFIG")
        except SettingsError as exc:
            return make_response(request, ResponseCode.INVALID_PARAMETER, str(exc))
        index = settings_target(broker.config, broker.store_config).index
        for key, _ in items:
            entry = index.get(key)
            if entry is None or entry[1] not in RUNTIME_SETTINGS:
                return make_response(
                    request,
                    ResponseCode.NO_PERMISSION,
                    f"Can not update config {key!r}: not changeable at runtime",
                )
        trial: tuple[BrokerConfig, StoreConfig] = (
            dataclasses.replace(broker.config),
            dataclasses.replace(broker.store_config),
        )
        try:
            settings_target(*trial).apply(items, "UPDATE_BROKER_CONFIG")
            trial[0].validate()
        except SettingsError as exc:
            return make_response(request, ResponseCode.INVALID_PARAMETER, str(exc))
        # the values as validation left them (it normalizes some, e.g. modes to upper case)
        tried = {id(broker.config): trial[0], id(broker.store_config): trial[1]}
        for key, _ in items:
            real, name = index[key]
            setattr(real, name, getattr(tried[id(real)], name))
        self.config_version = DataVersion(counter=self.config_version.counter + 1)
        broker.registration.trigger()  # brokerPermission is part of every route
        return make_response(request)

    # == runtime information ===================================================================
    async def runtime_info(self, request: RemotingCommand, channel: RemotingChannel) -> RemotingCommand:
        broker = self.broker
        table = await broker.read(self._store_facts)
        snap = broker.stats.snapshot()
        table.update(
            {
                "brokerVersionDesc": VERSION_DESC,
                "brokerVersion": str(CURRENT_VERSION),
                "brokerActive": "true",
                "putTps": snap.put.rates.text(),
                "getTransferredTps": snap.get.rates.text(),
                "msgPutTotalYesterdayMorning": str(snap.put_total_yesterday_morning),
                "msgPutTotalTodayMorning": str(snap.put_total_today_morning),
                "msgPutTotalTodayNow": str(snap.put.messages),
                "msgGetTotalYesterdayMorning": str(snap.get_total_yesterday_morning),
                "msgGetTotalTodayMorning": str(snap.get_total_today_morning),
                "msgGetTotalTodayNow": str(snap.get.messages),
                "bootTimestamp": str(snap.boot_timestamp),
                "runtime": _runtime(snap.boot_timestamp),
                "sendThreadPoolQueueSize": str(broker.write_queue_size),
                "appendsOnEventLoop": "true" if broker.appends_on_event_loop else "false",
                "sendThreadPoolQueueHeadWaitTimeMills": "0",
                "pullThreadPoolQueueSize": "0",
                "pullThreadPoolQueueHeadWaitTimeMills": "0",
                "pageCacheLockTimeMills": "0",
                "dispatchBehindBytes": "0",
                "startAcceptSendRequestTimeStamp": "0",
                "timerCongestNum": "0",
                "timerEnqueueTps": "0.0",
                "timerDequeueTps": "0.0",
            }
        )
        table.update(broker.schedule.running_stats())
        table.update(broker.timer.running_stats())
        table.update(broker.store.compaction.running_stats())
        return make_response(request, body=KVTable(table=table).to_json())

    def _store_facts(self) -> dict[str, str]:
        """Runtime keys that read the store or the disk (runs on a reader thread)."""
        store = self.broker.store
        usage = shutil.disk_usage(store.root)
        ratio = default_disk_usage(store.root)
        min_offset = store.commitlog.min_offset
        earliest = (
            store.commitlog.store_timestamp_at(min_offset)
            if store.commitlog.max_offset > min_offset
            else None
        )
        return {
            "commitLogMinOffset": str(min_offset),
            "commitLogMaxOffset": str(store.commitlog.max_offset),
            "commitLogDiskRatio": f"{ratio:.4f}",
            "consumeQueueDiskRatio": f"{ratio:.4f}",
            "commitLogDirCapacity": f"Total : {usage.total}, Free : {usage.free}.",
            "earliestMessageTimeStamp": str(earliest or 0),
            "putMessageTimesTotal": str(store.put_count),
            "putMessageSizeTotal": str(store.put_bytes),
        }
