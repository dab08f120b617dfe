"""Every mqadmin command, in the order ``mqadmin`` lists them (as RocketMQ's ``MQAdminStartup`` adds
them), and the lookup by name. The commands live by family: :mod:`cli.mqadmin.topic`, ``group``,
``message``, ``cluster``, ``send_rt``, ``store``, ``acl``, ``trace``, ``broker_ops``, ``auth`` and
``controller``; each declares its options (letters, long names, descriptions as in RocketMQ's
``buildCommandlineOptions``) next to what it does: parse the values, call the admin service, render
with the family's renderer. Nothing here computes what a view shows.
"""

from __future__ import annotations

from cli.mqadmin import (
    acl,
    auth,
    broker_ops,
    cluster,
    controller,
    group,
    message,
    send_rt,
    store,
    topic,
    trace,
)
from cli.mqadmin.args import Command

_INTERLEAVED = (topic, group, message, cluster, send_rt, store)
_DEFINED = {c.name: c for family in _INTERLEAVED for c in family.COMMANDS}
# the first families' commands interleave in mqadmin's listing; the later ones follow as blocks
_LISTED = (
    "updateTopic",
    "updateTopicList",
    "deleteTopic",
    "updateSubGroup",
    "updateSubGroupList",
    "deleteSubGroup",
    "updateBrokerConfig",
    "updateTopicPerm",
    "topicRoute",
    "topicStatus",
    "topicClusterList",
    "brokerStatus",
    "haStatus",
    "sendMsgStatus",
    "queryMsgById",
    "queryMsgByKey",
    "queryMsgByUniqueKey",
    "queryMsgByOffset",
    "printMsg",
    "printMsgByQueue",
    "brokerConsumeStats",
    "producerConnection",
    "producer",
    "consumerConnection",
    "consumerStatus",
    "consumerProgress",
    "cloneGroupOffset",
    "clusterList",
    "clusterRT",
    "topicList",
    "updateKvConfig",
    "deleteKvConfig",
    "wipeWritePerm",
    "addWritePerm",
    "resetOffsetByTime",
    "skipAccumulatedMessage",
    "updateOrderConf",
    "cleanExpiredCQ",
    "deleteExpiredCommitLog",
    "cleanUnusedTopic",
    "statsAll",
    "allocateMQ",
    "getNamesrvConfig",
    "updateNamesrvConfig",
    "getBrokerConfig",
    "exportMetadata",
    "exportConfigs",
    "getConsumerConfig",
    "queryCq",
    "sendMessage",
    "checkMsgSendRT",
    "consumeMessage",
    "decodeMessageId",
    "dumpCompactionLog",
)
FAMILIES = (*_INTERLEAVED, acl, trace, broker_ops, auth, controller)
COMMANDS = tuple(_DEFINED[name] for name in _LISTED) + tuple(
    c for family in FAMILIES[len(_INTERLEAVED) :] for c in family.COMMANDS
)
_BY_NAME = {c.name.lower(): c for c in COMMANDS}


def find(name: str) -> Command | None:
    """A command by name, ignoring case as mqadmin does."""
    return _BY_NAME.get(name.lower())
