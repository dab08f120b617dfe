"""Topic configurations: ``config/topics.json``, the system topics, auto-creation and name rules.

Every change bumps the DataVersion and is saved, because the NameServer learns about topics only
from registrations and a broker restart must not forget a topic a producer created. ``save`` writes
the file (the running broker makes it a coalesced write on a worker thread, so a burst of changes
costs one write); ``on_change`` hands the changed topics to the registration, which sends just
those to the NameServers.
"""

from __future__ import annotations

import functools
import json
import logging
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from broker.protocol import lenient_json
from broker.protocol.bodies import BodyError, DataVersion, TopicConfig, TopicConfigSerializeWrapper
from broker.protocol.message import MAX_RETRY_TOPIC_BYTES, MAX_TOPIC_BYTES
from broker.protocol.names import TRANS_HALF_TOPIC as TRANS_HALF_TOPIC
from broker.protocol.names import TRANS_OP_HALF_TOPIC as TRANS_OP_HALF_TOPIC
from broker.protocol.names import is_group_topic
from broker.server.config import BrokerConfig
from broker.server.kept_parts import KeptParts
from broker.server.message_type import MESSAGE_TYPE_ATTRIBUTE
from broker.store.config_files import ConfigFile
from broker.store.dispatch import SCHEDULE_TOPIC, TIMER_TOPIC

log = logging.getLogger(__name__)

PERM_PRIORITY = 8
PERM_READ = 4
PERM_WRITE = 2
PERM_INHERIT = 1

DEFAULT_TOPIC = "TBW102"
SELF_TEST_TOPIC = "SELF_TEST_TOPIC"
BENCHMARK_TOPIC = "BenchmarkTest"
OFFSET_MOVED_EVENT = "OFFSET_MOVED_EVENT"
TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"
TRANS_CHECK_MAX_TIME_TOPIC = "TRANS_CHECK_MAX_TIME_TOPIC"
SYSTEM_TOPIC_PREFIX = "rmq_sys_"
SCHEDULE_QUEUE_NUMS = 18

_TOPIC_RE = re.compile(r"^[%|a-zA-Z0-9_-]+$")
# Clients may not send to these (TopicValidator.NOT_ALLOWED_SEND_TOPIC_SET).
NOT_ALLOWED_SEND_TOPICS = frozenset(
    {
        SCHEDULE_TOPIC,
        TRANS_HALF_TOPIC,
        TRANS_OP_HALF_TOPIC,
        TRANS_CHECK_MAX_TIME_TOPIC,
        SELF_TEST_TOPIC,
        OFFSET_MOVED_EVENT,
    }
)
_SYSTEM_TOPICS = NOT_ALLOWED_SEND_TOPICS | {DEFAULT_TOPIC, BENCHMARK_TOPIC, TRACE_TOPIC, TIMER_TOPIC}


JAVA_LONG_MAX = (1 << 63) - 1
_JAVA_LONG_RE = re.compile(r"^[+-]?[0-9]+$")
MIXED_NOT_SUPPORTED = "MIXED message type is not supported."


class TopicAttributeError(ValueError):
    """A topic attribute change RocketMQ refuses (AttributeUtil's RuntimeException); the message is
    RocketMQ's wording."""


class MixedTypeRefused(TopicAttributeError):
    """``message.type=MIXED`` while ``enableMixedMessageType`` is off (RocketMQ answers INVALID_PARAMETER)."""


@dataclass(frozen=True, slots=True)
class TopicAttribute:
    """One of RocketMQ 5's TopicAttributes: an enumeration (``allowed``) or a long range."""

    name: str
    changeable: bool  # may be added, changed or removed after the topic is created
    allowed: tuple[str, ...] = ()  # in the order Java prints the set
    long_range: tuple[int, int] | None = None

    def verify(self, value: str) -> None:
        if self.long_range is None:
            if value not in self.allowed:
                raise TopicAttributeError(f"value is not in set: [{', '.join(self.allowed)}]")
            return
        if not _JAVA_LONG_RE.match(value) or not -(1 << 63) <= int(value) <= JAVA_LONG_MAX:
            raise TopicAttributeError(f'For input string: "{value}"')
        number = int(value)
        low, high = self.long_range
        if not low <= number <= high:
            raise TopicAttributeError(f"value is not in range({low}, {high})")


# TopicAttributes.ALL: the keys a topic may carry. Sets are listed in the order of Java's HashSet
# (what the error text shows).
TOPIC_ATTRIBUTES: dict[str, TopicAttribute] = {
    a.name: a
    for a in (
        TopicAttribute("queue.type", False, ("SimpleCQ", "BatchCQ")),
        TopicAttribute("cleanup.policy", False, ("DELETE", "COMPACTION")),
        TopicAttribute(
            MESSAGE_TYPE_ATTRIBUTE, True, ("UNSPECIFIED", "TRANSACTION", "FIFO", "MIXED", "DELAY", "NORMAL")
        ),
        TopicAttribute("reserve.time", True, long_range=(-1, JAVA_LONG_MAX)),
    )
}


CLEANUP_POLICY = "cleanup.policy"
RESERVE_TIME = "reserve.time"
QUEUE_TYPE = "queue.type"
BATCH_CQ_REFUSED = (
    "queue.type=BatchCQ is not supported: this broker writes SimpleCQ queues only "
    "(send batches as one message each)"
)


def _check_alter(key: str, value: str | None, initial: bool) -> None:
    """AttributeUtil.validateAlter for one key (already free of "+" and "-"); ``value`` None for a
    removal."""
    attribute = TOPIC_ATTRIBUTES.get(key)
    if attribute is None:
        raise TopicAttributeError(f"unsupported key: {key}")
    if not initial and not attribute.changeable:
        raise TopicAttributeError(f"attempt to update an unchangeable attribute. key: {key}")
    if value is not None:
        attribute.verify(value)
        if key == QUEUE_TYPE and value == "BatchCQ":
            raise TopicAttributeError(BATCH_CQ_REFUSED)


def _parse_modification(text: str | None) -> dict[str, str]:
    """AttributeParser.parseToMap: ``+k=v,-k`` to signed key -> value ("" for a removal)."""
    parsed: dict[str, str] = {}
    for item in text.split(",") if text else ():
        key, equals, value = item.partition("=")
        if equals and "+" not in key:
            raise TopicAttributeError(f"add/alter attribute format is wrong: {key}")
        if not equals and "-" not in key:
            raise TopicAttributeError(f"delete attribute format is wrong: {key}")
        if key in parsed:
            raise TopicAttributeError(f"key duplication: {key}")
        parsed[key] = value.partition("=")[0]  # Java keeps what lies between the first two "="
    return parsed


def alter_topic_attributes(
    create: bool, current: Mapping[str, str], modification: str | None, *, mixed_allowed: bool = False
) -> dict[str, str]:
    """The attributes after applying UPDATE_AND_CREATE_TOPIC's ``+k=v,-k`` text to ``current``, checked
    as RocketMQ's AttributeParser, AdminBrokerProcessor and AttributeUtil.alterCurrentAttributes do
    (TopicAttributeError with their wording; MixedTypeRefused is INVALID_PARAMETER there, the rest
    SYSTEM_ERROR). A topic being created takes additions only."""
    parsed = _parse_modification(modification)
    if not mixed_allowed and parsed.get("+" + MESSAGE_TYPE_ATTRIBUTE) == "MIXED":
        raise MixedTypeRefused(MIXED_NOT_SUPPORTED)
    changes: dict[str, str | None] = {}  # real key -> new value, None = remove
    for key, value in parsed.items():
        real = key[1:]
        if not real or "+" in real or "-" in real:
            raise TopicAttributeError("kv string format wrong.")
        if real in changes:
            raise TopicAttributeError(f"alter duplication key. key: {real}")
        if create and not key.startswith("+"):
            raise TopicAttributeError(f"only add attribute is supported while creating topic. key: {real}")
        if key.startswith("+"):
            changes[real] = value
        elif key.startswith("-"):
            if real not in current:
                raise TopicAttributeError(f"attempt to delete a nonexistent key: {real}")
            changes[real] = None
        else:
            raise TopicAttributeError(f"wrong format key: {real}")
    for key, new in changes.items():
        _check_alter(key, new, create)
    result = dict(current)
    for key, new in changes.items():
        if new is None:
            result.pop(key, None)
        else:
            result[key] = new
    return result


@functools.lru_cache(maxsize=4096)  # every send checks its topic's name: a cached answer is a C call
def topic_name_problem(topic: str | None) -> str | None:
    """Why ``topic`` is not a valid topic name (TopicValidator's wording), or None."""
    if not topic or not topic.strip():
        return "The specified topic is blank."
    if not _TOPIC_RE.match(topic):
        return f"The specified topic[{topic}] contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
    limit = MAX_RETRY_TOPIC_BYTES if is_group_topic(topic) else MAX_TOPIC_BYTES
    if len(topic.encode("utf-8")) > limit:
        return f"The specified topic[{topic}] is longer than topic max length {limit}."
    return None


def perm_string(perm: int) -> str:
    return (
        ("R" if perm & PERM_READ else "-")
        + ("W" if perm & PERM_WRITE else "-")
        + ("X" if perm & PERM_INHERIT else "-")
    )


def is_compaction(config: TopicConfig) -> bool:
    return (config.attributes or {}).get(CLEANUP_POLICY) == "COMPACTION"


def reserve_hours(config: TopicConfig) -> int:
    """The topic's ``reserve.time`` in hours; -1 (RocketMQ's default) when unset or not a number."""
    text = (config.attributes or {}).get(RESERVE_TIME, "-1")
    return int(text) if _JAVA_LONG_RE.match(text) else -1


def _file_part(name: str, config: TopicConfig) -> str:
    """A topic's entry in topics.json, indented as fastjson indents it there."""
    text = lenient_json.dumps_fastjson(json.loads(config.to_json()), pretty=True, depth=2)
    return f"\t\t{json.dumps(name)}:{text}"


def _body_part(name: str, config: TopicConfig) -> bytes:
    return json.dumps(name, ensure_ascii=False).encode("utf-8") + b":" + config.to_json()


class TopicConfigManager:
    def __init__(self, config: BrokerConfig, config_dir: Path) -> None:
        self.config = config
        self.file = ConfigFile(config_dir / "topics.json")
        self.table: dict[str, TopicConfig] = {}
        self.data_version = DataVersion()
        self.save: Callable[[], None] = self.persist
        self._encoded = KeptParts[TopicConfig, str](_file_part)  # each topic's part of the file
        self._compact = KeptParts[TopicConfig, bytes](_body_part)  # and of GET_ALL_TOPIC_CONFIG
        self.on_change: Callable[[list[TopicConfig]], None] = lambda _changed: None
        # the store's per-topic policies: told at load and whenever one of them changes
        self.on_policies: Callable[[frozenset[str], dict[str, int]], None] = lambda c, r: None
        self.compaction_topics: frozenset[str] = frozenset()
        self.reserve_hours: dict[str, int] = {}
        self._system: set[str] = set(_SYSTEM_TOPICS)

    # == life cycle ============================================================================
    def load(self) -> None:
        data = self.file.load()
        if isinstance(data, dict):
            try:
                wrapper = TopicConfigSerializeWrapper.from_obj(data)
            except BodyError as exc:
                log.warning("%s: %s; starting without saved topics", self.file.path, exc)
            else:
                self.table = {name: cfg for name, cfg in wrapper.topicConfigTable.items() if name}
                self.data_version = wrapper.dataVersion
        self._create_system_topics()
        self.refresh_policies()

    def refresh_policies(self) -> None:
        """Recompute the per-topic policies from the whole table (after it was loaded or replaced)."""
        for name, cfg in self.table.items():
            if (cfg.attributes or {}).get(QUEUE_TYPE) == "BatchCQ":
                log.warning(
                    "topic %s was saved with queue.type=BatchCQ, unsupported here: SimpleCQ serves it", name
                )
        self.compaction_topics = frozenset(name for name, cfg in self.table.items() if is_compaction(cfg))
        self.reserve_hours = {n: h for n, cfg in self.table.items() if (h := reserve_hours(cfg)) > 0}
        self.on_policies(self.compaction_topics, self.reserve_hours)

    def _note_policies(self, topic: str, config: TopicConfig | None) -> None:
        """Keep the per-topic policies in step with one topic's change (O(1) unless one changed)."""
        compaction = config is not None and is_compaction(config)
        hours = reserve_hours(config) if config is not None else -1
        changed = False
        if compaction != (topic in self.compaction_topics):
            self.compaction_topics = self.compaction_topics ^ {topic}
            changed = True
        if hours != self.reserve_hours.get(topic, -1):
            reserve = dict(self.reserve_hours)
            if hours > 0:
                reserve[topic] = hours
            else:
                reserve.pop(topic, None)
            self.reserve_hours = reserve
            changed = True
        if changed:
            self.on_policies(self.compaction_topics, self.reserve_hours)

    def _create_system_topics(self) -> None:
        """The topics TopicConfigManager.init creates; existing ones are kept."""
        c = self.config
        cluster_perm = PERM_INHERIT | (PERM_READ | PERM_WRITE if c.cluster_topic_enable else 0)
        broker_perm = PERM_INHERIT | (PERM_READ | PERM_WRITE if c.broker_topic_enable else 0)
        wanted: list[tuple[str, int, int]] = [(SELF_TEST_TOPIC, 1, 6)]
        if c.auto_create_topic_enable:
            wanted.append((DEFAULT_TOPIC, c.default_topic_queue_nums, PERM_INHERIT | PERM_READ | PERM_WRITE))
        wanted += [
            (BENCHMARK_TOPIC, 1024, 6),
            (c.broker_cluster_name, 16, cluster_perm),
            (c.broker_name, 1, broker_perm),
            (OFFSET_MOVED_EVENT, 1, 6),
            (SCHEDULE_TOPIC, SCHEDULE_QUEUE_NUMS, 6),
            (f"{c.broker_cluster_name}_REPLY_TOPIC", 1, 6),
            (f"{SYSTEM_TOPIC_PREFIX}SYNC_BROKER_MEMBER_{c.broker_name}", 1, PERM_INHERIT),
            (TRANS_HALF_TOPIC, 1, 6),
            (TRANS_OP_HALF_TOPIC, 1, 6),
            (TIMER_TOPIC, 1, 6),
        ]
        if c.trace_topic_enable:
            wanted.append((TRACE_TOPIC, 1, 6))
        self._system |= {c.broker_cluster_name, c.broker_name}
        created = [
            TopicConfig(topicName=name, readQueueNums=queues, writeQueueNums=queues, perm=perm)
            for name, queues, perm in wanted
            if name not in self.table
        ]
        for config in created:
            self.table[config.topicName or ""] = config
        if created:
            self._changed(created)

    def persist(self) -> None:
        """Write topics.json as the table is now (safe on a worker thread: the table is copied in one
        step, and configurations are replaced, never changed in place)."""
        self.file.save(self.document(dict(self.table), self.data_version))

    def document(self, table: dict[str, TopicConfig], version: DataVersion) -> str:
        """topics.json as fastjson writes it, each topic's part encoded once and kept until the
        topic changes: a save of many topics after a few changed costs a join, not an encoding."""
        entries = self._encoded.parts(table, sorted(table))
        topics = "{\n" + ",\n".join(entries) + "\n\t}" if entries else "{}"
        head = lenient_json.dumps_fastjson(json.loads(version.to_json()), pretty=True, depth=1)
        return f'{{\n\t"dataVersion":{head},\n\t"topicConfigTable":{topics}\n}}'

    def _changed(self, configs: list[TopicConfig]) -> None:
        """After ``configs`` were put (or a topic deleted, with none): one new version, one save."""
        self.data_version = DataVersion(
            counter=self.data_version.counter + 1,
            stateVersion=self.data_version.stateVersion,
            timestamp=int(time.time() * 1000),
        )
        self.save()
        if configs:
            self.on_change(configs)

    def table_json(self) -> bytes:
        """GET_ALL_TOPIC_CONFIG's body (a TopicConfigAndMappingSerializeWrapper without static
        topics), each topic's JSON encoded once and kept until the topic changes, as for the file."""
        table, version = dict(self.table), self.data_version
        parts = self._compact.parts(table, sorted(table))
        return b"".join(
            (
                b'{"dataVersion":',
                version.to_json(),
                b',"mappingDataVersion":',
                DataVersion().to_json(),
                b',"topicConfigTable":{',
                b",".join(parts),
                b'},"topicQueueMappingDetailMap":{},"topicQueueMappingInfoMap":{}}',
            )
        )

    # == queries ===============================================================================
    def get(self, topic: str) -> TopicConfig | None:
        return self.table.get(topic)

    def is_system_topic(self, topic: str) -> bool:
        return topic in self._system or topic.startswith(SYSTEM_TOPIC_PREFIX)

    # == changes ===============================================================================
    def put(self, config: TopicConfig) -> bool:
        """Create or replace; an identical configuration changes nothing (returns False). Attribute
        changes an operator asks for are checked before (:func:`alter_topic_attributes`)."""
        return bool(self.put_many([config]))

    def put_many(self, configs: list[TopicConfig]) -> list[TopicConfig]:
        """Create or replace several at once (one version, one save, one registration); returns
        those that changed anything."""
        changed = [c for c in configs if self.table.get(c.topicName or "") != c]
        for config in changed:
            assert config.topicName
            self.table[config.topicName] = config
            self._note_policies(config.topicName, config)
        if changed:
            self._changed(changed)
        return changed

    def delete(self, topic: str) -> bool:
        """Forget the topic; the NameServers are told by the tool (DELETE_TOPIC_IN_NAMESRV), as in
        RocketMQ, so no registration follows."""
        if self.table.pop(topic, None) is None:
            return False
        self._note_policies(topic, None)
        self._changed([])
        return True

    def create_from_template(self, topic: str, default_topic: str, queue_nums: int) -> TopicConfig | None:
        """Auto-create a topic a producer sends to, or None if not allowed."""
        existing = self.table.get(topic)
        if existing is not None:
            return existing
        template = self.table.get(default_topic)
        if template is None or not template.perm & PERM_INHERIT:
            return None
        if default_topic == DEFAULT_TOPIC and not self.config.auto_create_topic_enable:
            return None
        queues = max(1, min(queue_nums, template.writeQueueNums))
        config = TopicConfig(
            topicName=topic,
            readQueueNums=queues,
            writeQueueNums=queues,
            perm=template.perm & ~PERM_INHERIT,
            topicFilterType=template.topicFilterType,
        )
        log.info("auto-created topic %s from %s with %d queues", topic, default_topic, queues)
        self.put(config)
        return config

    def ensure(self, topic: str, queue_nums: int, perm: int = PERM_READ | PERM_WRITE) -> TopicConfig:
        """A topic the broker itself needs (%RETRY%, %DLQ%): created on first use."""
        config = self.table.get(topic)
        if config is None:
            config = TopicConfig(
                topicName=topic, readQueueNums=queue_nums, writeQueueNums=queue_nums, perm=perm
            )
            self.put(config)
        return config
