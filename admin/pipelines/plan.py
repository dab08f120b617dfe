"""Driver-side planning: which topics and queues to read, and their offset ranges.

A :class:`Target` is where messages come from (a running cluster or a store folder); it lists the
queues of the chosen topics and answers min/max offsets and time searches for each, in one batch
of requests. Everything here runs on the driver; executors only get the picklable
:class:`QueueRange` values it produces.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import logging
import re
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from broker.protocol.javahash import java_hash
from broker.protocol.sql92 import Selector, SelectorParseError, compile_cached

if TYPE_CHECKING:
    from admin.pipelines.secure import SecureOptions

T = TypeVar("T")
log = logging.getLogger(__name__)
Offsets = dict[str, dict[str, dict[str, int]]]  # topic -> broker -> queue id (as text) -> offset
EARLIEST, LATEST = -2, -1
STORE_BROKER = "store"


class OptionError(ValueError):
    """An option of the ``rocketmq`` data source that cannot be used."""


@dataclass(frozen=True, slots=True)
class QueueRef:
    topic: str
    broker: str
    queue_id: int
    addr: str  # broker address, or "" for a store folder


@dataclass(frozen=True, slots=True)
class QueueRange:
    """Queue offsets ``[start, end)`` of one queue: one input partition (or a slice of one)."""

    queue: QueueRef
    start: int
    end: int


@dataclass(slots=True)
class ReadSpec:
    """Parsed reader options (the parts executors need travel in :class:`QueueRange`s and this)."""

    store_path: str | None
    namesrv: list[str]
    broker_addr: str | None
    topics: list[str]
    pattern: str | None
    assign: dict[str, dict[str, list[int]] | list[int]] | None
    starting: str
    ending: str
    starting_ts: int | None
    ending_ts: int | None
    tags: frozenset[str] | None
    min_partitions: int
    pull_batch_size: int
    fail_on_data_loss: bool
    timeout: float
    max_offsets_per_trigger: int | None
    consumer_group: str | None
    security: SecureOptions  # where the credentials and TLS material are (admin/pipelines/secure.py)
    sql: str | None = None  # an SQL92 subExpression (expressionType=SQL92) instead of tags
    retries: int = 3  # of a request a broker did not answer (a restart, a dropped connection)
    retry_interval: float = 1.0  # seconds before the first retry, doubled for each next one
    include_internal: bool = False  # subscribePattern also matches system, retry and DLQ topics
    kafka: bool = False  # Spark's Kafka source's columns (kafkaCompatible=true)
    # the (name, nullable) columns of a schema the user gave (``.schema("body binary")``), None for the
    # source's own: Spark's Python sources get no column pruning, and the JVM converts every column
    columns: tuple[tuple[str, bool], ...] | None = None

    @property
    def tag_codes(self) -> frozenset[int] | None:
        return None if self.tags is None else frozenset(java_hash(t) for t in self.tags)

    @property
    def selector(self) -> Selector | None:
        return None if self.sql is None else compile_cached(self.sql)


def _int(options: Mapping[str, str], name: str, default: int) -> int:
    raw = options.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise OptionError(f"option {name} must be an integer, got {raw!r}") from None


def _opt_int(options: Mapping[str, str], name: str) -> int | None:
    return _int(options, name, -1) if options.get(name) not in (None, "") else None


def _time(options: Mapping[str, str], name: str) -> int | None:
    """Epoch ms from ms or an ISO 8601 time (UTC when it has no offset)."""
    raw = (options.get(name.lower()) or "").strip()
    if not raw:
        return None
    if raw.lstrip("-").isdigit():
        return int(raw)
    try:
        when = dt.datetime.fromisoformat(raw)
    except ValueError:
        raise OptionError(f"option {name} must be epoch ms or an ISO 8601 time, got {raw!r}") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return int(when.timestamp() * 1000)


def parse_tags(expression: str | None) -> frozenset[str] | None:
    """``"a || b"`` -> {a, b}; empty or ``*`` -> None (every message)."""
    text = (expression or "").strip()
    if not text or text == "*":
        return None
    return frozenset(t.strip() for t in text.split("||") if t.strip())


_SQL_CHARS = re.compile(r"[=<>()']")


def _expression(opts: Mapping[str, str]) -> tuple[frozenset[str] | None, str | None]:
    """(tags, SQL92 selector) of the options subExpression and expressionType (TAG or SQL92)."""
    text = opts.get("subexpression")
    kind = (opts.get("expressiontype") or "TAG").upper()
    if kind == "SQL92":
        if not (text or "").strip():
            raise OptionError("option expressionType=SQL92 needs a subExpression")
        try:
            compile_cached(text or "")
        except SelectorParseError as exc:
            raise OptionError(f"option subExpression: {exc}") from None
        return None, text
    if kind != "TAG":
        raise OptionError(f"option expressionType must be TAG or SQL92, got {kind!r}")
    if _SQL_CHARS.search(text or ""):  # would match no tag and read nothing
        raise OptionError(
            f"option subExpression {text!r} is not a tag list (a || b): for an SQL92 selector "
            "set expressionType=SQL92"
        )
    return parse_tags(text), None


def kafka_compatible(options: Mapping[str, str]) -> bool:
    """Whether the option kafkaCompatible (any case) is true."""
    return any(k.lower() == "kafkacompatible" and v.lower() == "true" for k, v in options.items())


def parse_options(options: Mapping[str, str], *, streaming: bool = False) -> ReadSpec:
    """Check and parse the options of a read (names are case-insensitive, as Spark passes them)."""
    from admin.pipelines.secure import parse_secure_options

    opts = {k.lower(): v for k, v in options.items()}
    store_path = opts.get("storepath")
    namesrv = [a for a in re.split(r"[;,]", opts.get("nameserver", "") or "") if a.strip()]
    broker_addr = opts.get("brokeraddr")
    if sum(bool(x) for x in (store_path, namesrv, broker_addr)) != 1:
        raise OptionError("give exactly one of the options nameServer, brokerAddr or storePath")
    topics = [t.strip() for t in (opts.get("topic") or "").split(",") if t.strip()]
    pattern = opts.get("subscribepattern")
    assign_raw = opts.get("assign")
    if sum(bool(x) for x in (topics, pattern, assign_raw)) != 1:
        raise OptionError("give exactly one of the options topic, subscribePattern or assign")
    assign = None
    if assign_raw:
        try:
            assign = json.loads(assign_raw)
        except ValueError as exc:
            raise OptionError(f"option assign is not JSON: {exc}") from None
        if not isinstance(assign, dict):
            raise OptionError('option assign must look like {"T": {"broker-a": [0, 1]}} or {"T": [0, 1]}')
    if pattern:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise OptionError(f"option subscribePattern is not a regular expression: {exc}") from None
    if "filterpushdown" in opts:
        raise OptionError(
            "option filterPushdown is gone: Spark reuses a DataFrame's pushed read for its later queries "
            "without filters, which then miss rows; narrow a read with assign, startingOffsets, "
            "startingTimestamp or subExpression"
        )
    tags, sql = _expression(opts)
    max_trigger = _opt_int(opts, "maxoffsetspertrigger")
    if max_trigger is not None and max_trigger <= 0:
        raise OptionError("option maxOffsetsPerTrigger must be positive")
    spec = ReadSpec(
        store_path=store_path,
        namesrv=namesrv,
        broker_addr=broker_addr,
        topics=topics,
        pattern=pattern,
        assign=assign,
        starting=opts.get("startingoffsets") or ("latest" if streaming else "earliest"),
        ending=opts.get("endingoffsets") or "latest",
        starting_ts=_time(opts, "startingTimestamp"),
        ending_ts=_time(opts, "endingTimestamp"),
        tags=tags,
        sql=sql,
        min_partitions=max(1, _int(opts, "minpartitions", 1)),
        pull_batch_size=max(1, min(1024, _int(opts, "pullbatchsize", 1024))),
        fail_on_data_loss=(opts.get("failondataloss") or "true").lower() != "false",
        retries=max(0, _int(opts, "fetchoffset.numretries", 3)),
        retry_interval=max(0, _int(opts, "fetchoffset.retryintervalms", 1000)) / 1000,
        include_internal=(opts.get("includesystemtopics") or "false").lower() == "true",
        kafka=kafka_compatible(opts),
        timeout=float(opts.get("timeout") or 10),
        max_offsets_per_trigger=max_trigger,
        consumer_group=opts.get("consumergroup") or None,
        security=parse_secure_options(opts),
    )
    for name in ("starting", "ending"):
        value = getattr(spec, name)
        if value not in ("earliest", "latest"):
            _offsets_json(value, f"{name}Offsets")
    if streaming and spec.ending != "latest" and opts.get("endingoffsets"):
        raise OptionError("option endingOffsets is for batch reads only")
    return spec


ANY_BROKER = ""  # offsets JSON that names no broker: {"T": {"0": 23}}, for a topic on one broker


def _offsets_json(text: str, name: str) -> Offsets:
    try:
        data = json.loads(text)
        out: Offsets = {}
        for t, brokers in data.items():
            if all(isinstance(v, int) for v in brokers.values()):  # queue -> offset, no broker level
                out[str(t)] = {ANY_BROKER: {str(q): int(o) for q, o in brokers.items()}}
            else:
                out[str(t)] = {str(b): {str(q): int(o) for q, o in qs.items()} for b, qs in brokers.items()}
        return out
    except (ValueError, AttributeError, TypeError) as exc:
        raise OptionError(
            f'option {name} must be earliest, latest or JSON like {{"T":{{"broker-a":{{"0":23}}}}}} '
            f'or, for a topic on one broker, {{"T":{{"0":23}}}}: {exc}'
        ) from None


def run_async(factory: Callable[[], Awaitable[T]]) -> T:
    return asyncio.run(_as_coro(factory))


async def _as_coro(factory: Callable[[], Awaitable[T]]) -> T:
    return await factory()


class Target:
    """Queues and offsets of a cluster or a store folder, queried in batches."""

    def queues(self, spec: ReadSpec) -> list[QueueRef]:
        raise NotImplementedError

    def bounds(self, refs: list[QueueRef]) -> dict[QueueRef, tuple[int, int]]:
        """(min, max) offset of each queue."""
        raise NotImplementedError

    def search(self, refs: list[QueueRef], ts: int) -> dict[QueueRef, int]:
        """First offset of each queue stored at or after ``ts`` (ms)."""
        raise NotImplementedError

    def close(self) -> None:
        """Release what the target holds."""


def _select(spec: ReadSpec, topics: Iterable[str], system_names: frozenset[str] = frozenset()) -> list[str]:
    """The topics a read names; a subscribePattern leaves out system, retry and dead-letter topics
    (and broker and cluster names, ``system_names``) unless includeSystemTopics=true."""
    from admin.models.names import TopicKind, topic_kind

    if spec.topics:
        return spec.topics
    if spec.assign is not None:
        return list(spec.assign)
    assert spec.pattern is not None
    rx = re.compile(spec.pattern)
    return sorted(
        t for t in topics
        if rx.fullmatch(t) and (spec.include_internal or topic_kind(t, system_names) is TopicKind.NORMAL)
    )  # fmt: skip


def _missing(names: Iterable[str], have: Iterable[str], where: str) -> None:
    """Refuse a read of a topic that is not there (it would read nothing)."""
    missing = sorted(set(names) - set(have))
    if missing:
        raise OptionError(f"topic {missing[0]} does not exist in {where}")


def _assigned(spec: ReadSpec, ref: QueueRef) -> bool:
    if spec.assign is None:
        return True
    wanted = spec.assign.get(ref.topic)
    if isinstance(wanted, list):
        return ref.queue_id in wanted
    if isinstance(wanted, dict):
        return ref.queue_id in wanted.get(ref.broker, [])
    return False


class StoreTarget(Target):
    """A store folder, opened read-only (a running broker's, a copy or an archive)."""

    def __init__(self, path: str) -> None:
        from broker.store.message_store import MessageStore

        self.path = path
        self.store = MessageStore.open_read_only(Path(path), trust_queues=True)

    def queues(self, spec: ReadSpec) -> list[QueueRef]:
        table = self.store.queues
        names = _select(spec, table.topics())
        if not spec.pattern:
            _missing(names, table.topics(), f"the store folder {self.path}")
        refs = [QueueRef(t, STORE_BROKER, cq.queue_id, "") for t in names for cq in table.of_topic(t)]
        return [r for r in refs if _assigned(spec, r)]

    def bounds(self, refs: list[QueueRef]) -> dict[QueueRef, tuple[int, int]]:
        return {r: (self.store.min_offset(r.topic, r.queue_id), self.store.max_offset(r.topic, r.queue_id))
                for r in refs}  # fmt: skip

    def search(self, refs: list[QueueRef], ts: int) -> dict[QueueRef, int]:
        return {r: self.store.offset_by_time(r.topic, r.queue_id, ts) for r in refs}

    def close(self) -> None:
        self.store.shutdown()


class ClusterTarget(Target):
    """A running cluster, through a NameServer (routes) or one broker address."""

    def __init__(self, spec: ReadSpec) -> None:
        self.spec = spec
        self.security = spec.security.client_security()

    async def _with_api(self, fn: Callable[[Any], Awaitable[T]]) -> T:
        from broker.acl.client import secure
        from broker.client.admin_api import AdminApi
        from broker.client.remoting_client import RemotingClient

        client = secure(RemotingClient(), self.security)
        try:
            return await fn(AdminApi(client, self.spec.timeout))
        finally:
            await client.close()

    def queues(self, spec: ReadSpec) -> list[QueueRef]:
        async def main(api: Any) -> list[QueueRef]:
            if spec.broker_addr:
                configs = await api.all_topic_config(spec.broker_addr)
                runtime = await api.broker_config(spec.broker_addr)
                name = runtime.get("brokerName", "broker")
                names = _select(spec, configs, frozenset({name}))
                if not spec.pattern:
                    _missing(names, configs, f"broker {spec.broker_addr}")
                refs = [QueueRef(t, name, q, spec.broker_addr)
                        for t in names if t in configs
                        for q in range(configs[t].readQueueNums)]  # fmt: skip
            else:
                if spec.pattern:
                    info = await api.cluster_info(spec.namesrv)
                    names = _select(
                        spec, await api.topic_list(spec.namesrv),
                        frozenset(info.brokerAddrTable) | frozenset(info.clusterAddrTable),
                    )  # fmt: skip
                else:
                    names = _select(spec, [])
                refs = []
                for topic in names:
                    route = await api.topic_route(spec.namesrv, topic)
                    masters = {b.brokerName: b.brokerAddrs.get(0) for b in route.brokerDatas}
                    for qd in route.queueDatas:
                        addr = masters.get(qd.brokerName)
                        if addr and qd.brokerName:
                            refs += [QueueRef(topic, qd.brokerName, q, addr) for q in range(qd.readQueueNums)]
            return [r for r in refs if _assigned(spec, r)]

        return run_async(lambda: self._with_api(main))

    def bounds(self, refs: list[QueueRef]) -> dict[QueueRef, tuple[int, int]]:
        async def main(api: Any) -> dict[QueueRef, tuple[int, int]]:
            async def one(r: QueueRef) -> tuple[int, int]:
                lo, hi = await asyncio.gather(
                    api.min_offset(r.addr, r.topic, r.queue_id), api.max_offset(r.addr, r.topic, r.queue_id)
                )
                return int(lo), int(hi)

            found = await asyncio.gather(*(one(r) for r in refs))
            return dict(zip(refs, found, strict=True))

        return run_async(lambda: self._with_api(main))

    def search(self, refs: list[QueueRef], ts: int) -> dict[QueueRef, int]:
        async def main(api: Any) -> dict[QueueRef, int]:
            found = await asyncio.gather(*(api.search_offset(r.addr, r.topic, r.queue_id, ts) for r in refs))
            return dict(zip(refs, [int(f) for f in found], strict=True))

        return run_async(lambda: self._with_api(main))

    def commit(self, group: str, offsets: dict[QueueRef, int]) -> None:
        """UPDATE_CONSUMER_OFFSET for each queue, so tools show the pipeline's progress as a group; a
        broker that does not know the group yet gets it created first."""
        from broker.client.admin_api import RemoteError
        from broker.protocol import headers as H
        from broker.protocol.codes import RequestCode, ResponseCode
        from broker.protocol.group_bodies import SubscriptionGroupConfig

        async def one(api: Any, r: QueueRef, off: int) -> None:
            header = H.UpdateConsumerOffsetRequestHeader(
                consumerGroup=group, topic=r.topic, queueId=r.queue_id, commitOffset=off, bname=r.broker
            )
            try:
                await api.call(r.addr, RequestCode.UPDATE_CONSUMER_OFFSET, header)
            except RemoteError as exc:
                if exc.code != ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST:
                    raise
                await api.create_group(r.addr, SubscriptionGroupConfig(groupName=group))
                await api.call(r.addr, RequestCode.UPDATE_CONSUMER_OFFSET, header)

        async def main(api: Any) -> None:
            await asyncio.gather(*(one(api, r, off) for r, off in offsets.items()))

        run_async(lambda: self._with_api(main))

    def committed(self, group: str, refs: list[QueueRef]) -> dict[QueueRef, int]:
        """The group's committed offset of each queue that has one."""
        from broker.protocol import headers as H
        from broker.protocol.codes import RequestCode, ResponseCode

        async def one(api: Any, r: QueueRef) -> int | None:
            header = H.QueryConsumerOffsetRequestHeader(
                consumerGroup=group, topic=r.topic, queueId=r.queue_id, bname=r.broker
            )
            ok = (ResponseCode.SUCCESS, ResponseCode.QUERY_NOT_FOUND)
            response = await api.call(r.addr, RequestCode.QUERY_CONSUMER_OFFSET, header, ok=ok)
            if response.code != ResponseCode.SUCCESS:
                return None
            return int(H.OffsetResponseHeader.parse(response.ext_fields).offset)

        async def main(api: Any) -> dict[QueueRef, int]:
            found = await asyncio.gather(*(one(api, r) for r in refs))
            return {r: off for r, off in zip(refs, found, strict=True) if off is not None}

        return run_async(lambda: self._with_api(main))


def retrying(spec: ReadSpec, fn: Callable[[], T]) -> T:
    """``fn()``, tried again after a connection failure (a broker restarting): ``spec.retries`` times,
    waiting ``spec.retry_interval`` seconds and twice as long each next time."""
    from broker.client.remoting_client import RemotingError

    for attempt in range(spec.retries):
        try:
            return fn()
        except RemotingError as exc:
            log.warning("%s; trying again (%d of %d)", exc, attempt + 1, spec.retries)
            time.sleep(spec.retry_interval * 2**attempt)
    return fn()


def open_target(spec: ReadSpec) -> Target:
    return StoreTarget(spec.store_path) if spec.store_path else ClusterTarget(spec)


def queue_bounds(spec: ReadSpec) -> dict[QueueRef, tuple[int, int]]:
    """(min, max) offset of every queue the read names, asked again while a broker does not answer."""

    def ask() -> dict[QueueRef, tuple[int, int]]:
        target = open_target(spec)
        try:
            return target.bounds(target.queues(spec))
        finally:
            target.close()

    return retrying(spec, ask)


def resolve(
    target: Target, spec: ReadSpec, refs: list[QueueRef], bounds: dict[QueueRef, tuple[int, int]],
    which: str, ts: int | None,
) -> dict[QueueRef, int]:  # fmt: skip
    """Start (``which="starting"``) or end offsets of each queue from the options."""
    if ts is not None:
        return target.search(refs, ts)
    value = spec.starting if which == "starting" else spec.ending
    if value == "earliest":
        return {r: bounds[r][0] for r in refs}
    if value == "latest":
        return {r: bounds[r][1] for r in refs}
    table = _offsets_json(value, f"{which}Offsets")
    for topic, brokers in table.items():
        if ANY_BROKER in brokers:
            on = sorted({r.broker for r in refs if r.topic == topic})
            if len(on) > 1:
                raise OptionError(
                    f"option {which}Offsets: topic {topic} is on brokers {', '.join(on)}; "
                    'name the broker: {"T":{"broker-a":{"0":23}}}'
                )
            table[topic] = {b: brokers[ANY_BROKER] for b in on} or brokers
    named = {(t, b, q) for t, brokers in table.items() for b, qs in brokers.items() for q in qs}
    unknown = sorted(named - {(r.topic, r.broker, str(r.queue_id)) for r in refs})
    if unknown:  # a typo would otherwise read the whole queue
        have = ", ".join(f"{r.topic}/{r.broker}/{r.queue_id}" for r in refs[:8]) + (
            " …" if len(refs) > 8 else ""
        )
        where = "/".join(p for p in unknown[0] if p)
        raise OptionError(
            f"option {which}Offsets names {where}, which this read does not have (it reads {have})"
        )
    out = {}
    for r in refs:
        off = table.get(r.topic, {}).get(r.broker, {}).get(str(r.queue_id))
        if off is None:
            off = EARLIEST if which == "starting" else LATEST
        out[r] = bounds[r][0] if off == EARLIEST else bounds[r][1] if off == LATEST else off
    return out


def plan_ranges(target: Target, spec: ReadSpec) -> list[QueueRange]:
    """The queue ranges of a batch read. Offsets given explicitly must make sense: a start after the
    end or past the queue's newest offset is refused, not read as nothing."""
    refs = target.queues(spec)
    if not refs:
        return []
    bounds = target.bounds(refs)
    starts = resolve(target, spec, refs, bounds, "starting", spec.starting_ts)
    ends = resolve(target, spec, refs, bounds, "ending", spec.ending_ts)
    ranges = []
    for r in refs:
        lo, hi = bounds[r]
        start, end = starts[r], ends[r]
        where = f"{r.topic}/{r.broker}/{r.queue_id}"
        if start > hi:
            raise OptionError(f"{where}: startingOffsets {start} is past the queue's end ({hi})")
        if start > end and spec.starting_ts is None and spec.ending_ts is None:
            raise OptionError(f"{where}: startingOffsets {start} is after endingOffsets {end}")
        end = min(end, hi)
        if start < lo:
            if spec.fail_on_data_loss and start >= 0 and spec.starting not in ("earliest",) and (
                    spec.starting_ts is None):  # fmt: skip
                raise OptionError(
                    f"{where}: offset {start} is gone (the queue starts at {lo}); "
                    "set failOnDataLoss=false to skip it"
                )
            start = lo
        if end > start:
            ranges.append(QueueRange(r, start, end))
    return ranges


def split(ranges: list[QueueRange], min_partitions: int) -> list[QueueRange]:
    """One partition per queue range, ranges cut so that there are at least ``min_partitions``."""
    total = sum(r.end - r.start for r in ranges)
    if len(ranges) >= min_partitions or total == 0:
        return ranges
    out = []
    for r in ranges:
        pieces = max(1, round(min_partitions * (r.end - r.start) / total))
        step = -(-(r.end - r.start) // pieces)
        out += [replace(r, start=s, end=min(r.end, s + step)) for s in range(r.start, r.end, step)]
    return out


def to_offsets(values: Mapping[QueueRef, int]) -> Offsets:
    """Queue offsets as the checkpoint JSON stores them (queue ids as text)."""
    out: Offsets = {}
    for r, off in values.items():
        out.setdefault(r.topic, {}).setdefault(r.broker, {})[str(r.queue_id)] = off
    return out


def lookup(offsets: Mapping[str, Any], ref: QueueRef) -> int | None:
    value = offsets.get(ref.topic, {}).get(ref.broker, {}).get(str(ref.queue_id))
    return None if value is None else int(value)
