"""Message tracks: which consumer groups consumed a message, as mqadmin's queryMsgById prints them
(DefaultMQAdminExtImpl.messageTrackDetail).

For every group consuming the message's topic: NOT_ONLINE when no client of the group is connected;
PULL for pull consumers; CONSUME_BROADCASTING for broadcasting push consumers (progress lives in the
clients); otherwise CONSUMED when the group's committed offset of the message's queue on the broker
that stored it is past the message (CONSUMED_BUT_FILTERED when the group's tags exclude it) and
NOT_CONSUME_YET when it is not. Failures leave UNKNOWN with the reason in ``exception_desc``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from broker.client.admin_api import AdminApi, RemoteError
from broker.protocol.bodies import ConsumeType, MessageModel, TopicRouteData
from broker.protocol.codes import ResponseCode
from broker.protocol.group_bodies import ConsumerConnection
from broker.protocol.message import MessageRecord
from broker.protocol.names import retry_topic
from broker.remoting.errors import RemotingError

MASTER_ID = 0


class TrackType(Enum):
    CONSUMED = "CONSUMED"
    CONSUMED_BUT_FILTERED = "CONSUMED_BUT_FILTERED"
    PULL = "PULL"
    NOT_CONSUME_YET = "NOT_CONSUME_YET"
    NOT_ONLINE = "NOT_ONLINE"
    CONSUME_BROADCASTING = "CONSUME_BROADCASTING"
    UNKNOWN = "UNKNOWN"


@dataclass(slots=True)
class MessageTrack:
    consumer_group: str
    track_type: TrackType = TrackType.UNKNOWN
    exception_desc: str | None = None

    def __str__(self) -> str:
        """Java's MessageTrack.toString, as queryMsgById prints it."""
        return (
            f"MessageTrack [consumerGroup={self.consumer_group}, trackType={self.track_type.value}, "
            f"exceptionDesc={self.exception_desc}]"
        )


def _masters(route: TopicRouteData) -> dict[str, str]:
    """brokerName -> master address."""
    return {
        bd.brokerName: addr
        for bd in route.brokerDatas
        if bd.brokerName and (addr := bd.brokerAddrs.get(MASTER_ID))
    }


async def _masters_of(admin: AdminApi, namesrv: Sequence[str], *topics: str) -> dict[str, str]:
    """Masters of the first topic that has a route (the group's retry topic, then the message's)."""
    last: RemoteError | None = None
    for topic in topics:
        try:
            masters = _masters(await admin.topic_route(namesrv, topic))
        except RemoteError as exc:
            last = exc
            continue
        if masters:
            return masters
    if last is not None:
        raise last
    return {}


async def _connection(admin: AdminApi, masters: dict[str, str], group: str) -> ConsumerConnection | None:
    for addr in masters.values():
        connection = await admin.consumer_connection(addr, group)
        if connection is not None and connection.connectionSet:
            return connection
    return None


async def _consumed(admin: AdminApi, masters: dict[str, str], group: str, msg: MessageRecord) -> bool:
    """Whether the group's committed offset of the message's queue, on the broker that stored it, is
    past the message (DefaultMQAdminExtImpl.consumed)."""
    for broker_name, addr in masters.items():
        if addr != msg.store_host:
            continue
        stats = await admin.consume_stats(addr, group)
        for mq, offsets in stats.offsetTable.items():
            if (mq.topic, mq.brokerName, mq.queueId) == (msg.topic, broker_name, msg.queue_id):
                return offsets.consumerOffset > msg.queue_offset
    return False


async def _track(admin: AdminApi, namesrv: Sequence[str], group: str, msg: MessageRecord) -> MessageTrack:
    track = MessageTrack(group)
    masters = await _masters_of(admin, namesrv, retry_topic(group), msg.topic)
    connection = await _connection(admin, masters, group)
    if connection is None:
        track.track_type = TrackType.NOT_ONLINE
        track.exception_desc = (
            f"CODE:{ResponseCode.CONSUMER_NOT_ONLINE} DESC:the consumer group[{group}] not online"
        )
        return track
    if connection.consumeType is ConsumeType.CONSUME_ACTIVELY:
        track.track_type = TrackType.PULL
    elif connection.consumeType is ConsumeType.CONSUME_PASSIVELY:
        if connection.messageModel is MessageModel.BROADCASTING:
            track.track_type = TrackType.CONSUME_BROADCASTING
        elif await _consumed(admin, masters, group, msg):
            sub = connection.subscriptionTable.get(msg.topic)
            tags = set(sub.tagsSet) if sub is not None else set()
            filtered = bool(tags) and "*" not in tags and msg.tags not in tags
            track.track_type = TrackType.CONSUMED_BUT_FILTERED if filtered else TrackType.CONSUMED
        else:
            track.track_type = TrackType.NOT_CONSUME_YET
    return track


async def message_tracks(admin: AdminApi, namesrv: Sequence[str], msg: MessageRecord) -> list[MessageTrack]:
    """One track per group consuming ``msg.topic`` (groups from every master of the topic's route)."""
    groups: set[str] = set()
    for addr in _masters(await admin.topic_route(namesrv, msg.topic)).values():
        groups.update(await admin.groups_consuming(addr, msg.topic))
    tracks: list[MessageTrack] = []
    for group in sorted(groups):
        try:
            tracks.append(await _track(admin, namesrv, group, msg))
        except RemoteError as exc:
            not_online = exc.code == ResponseCode.CONSUMER_NOT_ONLINE
            track_type = TrackType.NOT_ONLINE if not_online else TrackType.UNKNOWN
            tracks.append(MessageTrack(group, track_type, f"CODE:{exc.code} DESC:{exc.remark}"))
        except RemotingError as exc:
            tracks.append(MessageTrack(group, TrackType.UNKNOWN, str(exc)))
    return tracks
