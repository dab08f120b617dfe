"""Registers the ``rocketmq`` PySpark data source automatically: PySpark loads a top-level module named
``pyspark_<name>`` and registers its ``DefaultSource``. The implementation is admin/pipelines/source.py."""

from admin.pipelines.source import RocketMQDataSource as DefaultSource

__all__ = ["DefaultSource"]
