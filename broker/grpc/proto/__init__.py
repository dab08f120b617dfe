"""The ``apache.rocketmq.v2`` schema written here (messaging.proto) and the classes generated from it."""
