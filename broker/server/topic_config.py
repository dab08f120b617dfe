"""Topic configurations: ``config/topics.json``, the system topics, auto-creation and name rules.

Every change bumps the DataVersion and is saved at once, because the NameServer learns about
topics only from registrations and a broker restart must not forget a topic a producer created.
``on_change`` lets the broker re-register immediately instead of waiting for the next period.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable
from pathlib import Path

from broker.protocol import lenient_json
from broker.protocol.bodies import BodyError, DataVersion, TopicConfig, TopicConfigSerializeWrapper
from broker.protocol.message import MAX_RETRY_TOPIC_BYTES, MAX_TOPIC_BYTES
from broker.server.config import BrokerConfig
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
TRANS_HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
TRANS_OP_HALF_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
TRANS_CHECK_MAX_TIME_TOPIC = "TRANS_CHECK_MAX_TIME_TOPIC"
SYSTEM_TOPIC_PREFIX = "rmq_sys_"
RETRY_PREFIX = "%RETRY%"
DLQ_PREFIX = "%DLQ%"
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


def retry_topic(group: str) -> str:
    return RETRY_PREFIX + group


def dlq_topic(group: str) -> str:
    return DLQ_PREFIX + group


def topic_name_problem(topic: str | None) -> str | None:
    """Why ``topic`` is not a valid topic name (TopicValidator's wording), or None."""
    if not topic or not topic.strip():
        return "The specified topic is blank."
    if not _TOPIC_RE.match(topic):
        return f"The specified topic[{topic}] contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
    limit = MAX_RETRY_TOPIC_BYTES if topic.startswith((RETRY_PREFIX, DLQ_PREFIX)) else MAX_TOPIC_BYTES
    if len(topic.encode("utf-8")) > limit:
        return f"The specified topic[{topic}] is longer than topic max length {limit}."
    return None


def perm_string(perm: int) -> str:
    return (
        ("R" if perm & PERM_READ else "-")
        + ("W" if perm & PERM_WRITE else "-")
        + ("X" if perm & PERM_INHERIT else "-")
    )


class TopicConfigManager:
    def __init__(self, config: BrokerConfig, config_dir: Path) -> None:
        self.config = config
        self.file = ConfigFile(config_dir / "topics.json")
        self.table: dict[str, TopicConfig] = {}
        self.data_version = DataVersion()
        self.on_change: Callable[[], None] = lambda: None
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
        changed = False
        for name, queues, perm in wanted:
            if name not in self.table:
                self.table[name] = TopicConfig(
                    topicName=name, readQueueNums=queues, writeQueueNums=queues, perm=perm
                )
                changed = True
        if changed:
            self._changed()

    def persist(self) -> None:
        wrapper = TopicConfigSerializeWrapper(
            topicConfigTable=dict(self.table), dataVersion=self.data_version
        )
        self.file.save(lenient_json.dumps_fastjson(json.loads(wrapper.to_json()), pretty=True))

    def _changed(self) -> None:
        self.data_version = DataVersion(
            counter=self.data_version.counter + 1,
            stateVersion=self.data_version.stateVersion,
            timestamp=int(time.time() * 1000),
        )
        self.persist()
        self.on_change()

    # == queries ===============================================================================
    def get(self, topic: str) -> TopicConfig | None:
        return self.table.get(topic)

    def is_system_topic(self, topic: str) -> bool:
        return topic in self._system or topic.startswith(SYSTEM_TOPIC_PREFIX)

    def wrapper(self) -> TopicConfigSerializeWrapper:
        return TopicConfigSerializeWrapper(topicConfigTable=dict(self.table), dataVersion=self.data_version)

    # == changes ===============================================================================
    def put(self, config: TopicConfig) -> bool:
        """Create or replace; an identical configuration changes nothing (returns False)."""
        assert config.topicName
        if self.table.get(config.topicName) == config:
            return False
        self.table[config.topicName] = config
        self._changed()
        return True

    def delete(self, topic: str) -> bool:
        if self.table.pop(topic, None) is None:
            return False
        self._changed()
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
