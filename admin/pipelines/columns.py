"""The columns of the ``rocketmq`` source (its own and the ``kafkaCompatible`` view), as Spark types.

Kept apart from admin/pipelines/arrow.py so that Spark can find and describe the source in a Python
that lacks pyarrow, and say so, instead of reporting no source at all.
"""

from __future__ import annotations

from typing import Final

# A message may lack a UNIQ_KEY, tags or keys; every other column always has a value. Declaring those
# NOT NULL matters for speed: Spark then copies them into its rows without asking Arrow per value
NULLABLE: Final = frozenset({"uniqKey", "tags", "keys"})
TYPES: Final = {  # name -> Spark type, in order
    "topic": "string",
    "brokerName": "string",
    "queueId": "int",
    "queueOffset": "bigint",
    "commitLogOffset": "bigint",
    "msgId": "string",
    "uniqKey": "string",
    "body": "binary",
    "tags": "string",
    "keys": "string",
    "flag": "int",
    "sysFlag": "int",
    "bornTimestamp": "timestamp",
    "storeTimestamp": "timestamp",
    "bornHost": "string",
    "storeHost": "string",
    "reconsumeTimes": "int",
    "properties": "map<string,string>",
}
# Spark's Kafka source's columns: key (the message's keys), value (body), partition (queue id), offset
# (queue offset), timestamp (store time), headers (properties)
KAFKA_NULLABLE: Final = frozenset({"key"})
KAFKA_TYPES: Final = {
    "key": "binary",
    "value": "binary",
    "topic": "string",
    "partition": "int",
    "offset": "bigint",
    "timestamp": "timestamp",
    "headers": "array<struct<key:string,value:binary>>",
}


def ddl(types: dict[str, str], nullable: frozenset[str]) -> str:
    return ", ".join(f"{n} {t}" + ("" if n in nullable else " NOT NULL") for n, t in types.items())
