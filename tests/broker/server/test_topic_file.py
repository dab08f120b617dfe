"""topics.json as saved from parts kept per topic: byte for byte the file fastjson writes, after any
mix of changes, and read back as it was."""

from __future__ import annotations

import json
from pathlib import Path

from broker.protocol import lenient_json
from broker.protocol.bodies import (
    DataVersion,
    TopicConfig,
    TopicConfigAndMappingSerializeWrapper,
    TopicConfigSerializeWrapper,
)
from broker.server.config import BrokerConfig
from broker.server.topic_config import TopicConfigManager


def _fastjson_file(manager: TopicConfigManager) -> str:
    wrapper = TopicConfigSerializeWrapper(
        topicConfigTable=dict(manager.table), dataVersion=manager.data_version
    )
    return lenient_json.dumps_fastjson(json.loads(wrapper.to_json()), pretty=True)


def test_saved_file_is_fastjsons_after_creates_updates_and_deletes(tmp_path: Path) -> None:
    manager = TopicConfigManager(BrokerConfig(), tmp_path)
    manager.load()
    manager.put_many([TopicConfig(f"T{i}", 4, 4) for i in range(50)])
    manager.put(TopicConfig("Zürich", 2, 2, attributes={"message.type": "FIFO"}, order=True))
    manager.put(TopicConfig("T7", 8, 8))  # replaced
    manager.delete("T3")
    assert manager.file.path.read_text(encoding="utf-8") == _fastjson_file(manager)
    again = TopicConfigManager(BrokerConfig(), tmp_path)
    again.load()
    assert again.table == manager.table and again.data_version == manager.data_version


def test_all_topic_config_body_is_the_wrappers_json(tmp_path: Path) -> None:
    manager = TopicConfigManager(BrokerConfig(), tmp_path)
    manager.load()
    manager.put_many([TopicConfig(f"T{i}", 4, 4, attributes={"k": "ü"}) for i in range(20)])
    first = manager.table_json()
    manager.put(TopicConfig("T5", 1, 1))
    manager.delete("T6")
    body = manager.table_json()
    wrapper = TopicConfigAndMappingSerializeWrapper(
        topicConfigTable=dict(manager.table), dataVersion=manager.data_version
    )
    wrapper.mappingDataVersion = DataVersion.from_json(json.dumps(json.loads(body)["mappingDataVersion"]))
    assert body == wrapper.to_json() != first  # the same bytes (the mapping version says "now")
