"""Registers the ``rocketmq`` PySpark data source automatically: PySpark loads a top-level module named
``pyspark_<name>`` and registers its ``DefaultSource``. The implementation is admin/pipelines/source.py.

Shipped with ``spark-submit --py-files pyspark_rocketmq.py,rmqkit.zip``, this file lands in the folder
of Spark's files, which the Python process that looks for data sources has on its path, but the zip
does not reach that path: the zips beside this file that hold the package are added to it here. Spark
pickles ``DefaultSource`` by reference for its next Python processes, which have that folder on their
path too, so it is a class of this module: importing it there adds the zip again."""

import sys
import zipfile
from pathlib import Path

try:
    from admin.pipelines.source import RocketMQDataSource
except ModuleNotFoundError as exc:
    if exc.name not in ("admin", "admin.pipelines"):
        raise
    for shipped in sorted(Path(__file__).resolve().parent.glob("*.zip")):
        with zipfile.ZipFile(shipped) as archive:
            if "admin/pipelines/source.py" in archive.namelist() and str(shipped) not in sys.path:
                sys.path.append(str(shipped))
    from admin.pipelines.source import RocketMQDataSource


class DefaultSource(RocketMQDataSource):
    """The ``rocketmq`` source, as PySpark's automatic registration finds it."""


__all__ = ["DefaultSource"]
