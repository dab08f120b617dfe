"""The one typed admin service every front end uses (CLI, mqadmin, TUI, pipelines).

``AdminService(namesrv, timeout)`` is used as ``async with``; its methods take and return the
dataclasses of :mod:`admin.models` and raise only :mod:`admin.errors`. The requests under one view
go out concurrently, batched per broker wherever the protocol has a batch request. The methods are
grouped by area in the modules of this package.

Every command imports the whole service, so the area modules import their models (and the ACL, DLQ,
replication and message code) inside the methods that use them: ``rmq topic list`` then creates only
the dataclasses it shows, which is most of what its start costs.
"""

from __future__ import annotations

from admin.service.acl import AclOps
from admin.service.auth import AuthOps
from admin.service.base import Progress
from admin.service.cluster import ClusterOps
from admin.service.controller import ControllerOps
from admin.service.dlq import DlqOps
from admin.service.groups import GroupOps
from admin.service.maintenance import MaintenanceOps
from admin.service.messages import MessageOps
from admin.service.metadata import MetadataOps
from admin.service.namesrv import NamesrvOps
from admin.service.rebalances import RebalanceOps
from admin.service.timers import TimerOps
from admin.service.topics import TopicOps
from admin.service.traces import TraceOps
from admin.service.transactions import TransactionOps


class AdminService(
    DlqOps,
    MetadataOps,
    ClusterOps,
    TopicOps,
    GroupOps,
    RebalanceOps,
    TraceOps,
    TransactionOps,
    TimerOps,
    MessageOps,
    NamesrvOps,
    AuthOps,
    AclOps,
    MaintenanceOps,
    ControllerOps,
):
    """Operate a RocketMQ cluster through its NameServers (``["host:9876", ...]``)."""


__all__ = ["AdminService", "Progress"]
