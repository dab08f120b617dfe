"""Real RocketMQ clients against our NameServer and broker.

* ali-ons 3.12.0 (pure JavaScript, SEND_MESSAGE_V2, clustering push consumer with rebalance)
* rocketmq 0.4.4 (the C++ client: SEND_MESSAGE v1 header, batch send, push and pull consumers)

Most tests share one in-process NameServer + broker (``node_cluster``); the restart tests run
``rmq up`` as a subprocess so it can be stopped with SIGTERM or killed with SIGKILL.
Every topic and group name is unique to its test. Drivers report JSON events; failures carry
their diagnostics (``DriverResult.describe``).
"""

from __future__ import annotations

import signal
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from functools import partial

import pytest

from broker.protocol.bodies import load_json
from tests.peers import runner
from tests.peers.conftest import Cluster, RmqUp, wait_until
from tests.peers.runner import DriverProcess, DriverResult, ReceivedMessage

TAGS = ("TagA", "TagB", "TagC")
BODY = "interop-bödy✓"  # non-ASCII on purpose: bodies must come back byte-identical


# --- helpers ---------------------------------------------------------------------------------------


def expected_messages(
    prefix: str, count: int, *, tags: Sequence[str] = TAGS, body: str = BODY, start: int = 0
) -> dict[str, tuple[bytes, str]]:
    """key -> (body, tag) exactly as the drivers build message i: keys "<prefix>-<i>", body "<body>-<i>"."""
    return {
        f"{prefix}-{i}": (f"{body}-{i}".encode(), tags[i % len(tags)]) for i in range(start, start + count)
    }


def keys_of(messages: Iterable[ReceivedMessage]) -> list[str]:
    return [m.keys or "" for m in messages]


def assert_identical(where: str, got: Iterable[ReceivedMessage], want: dict[str, tuple[bytes, str]]) -> None:
    """Every received message is one of ``want`` with the same body and tag; all of ``want`` arrived."""
    seen: set[str] = set()
    for m in got:
        assert m.keys in want, f"{where}: unexpected key {m.keys!r} (tags {m.tags!r}, body {m.body!r})"
        body, tag = want[m.keys]
        assert (m.body, m.tags) == (body, tag), f"{where}: {m.keys} came back as {(m.body, m.tags)!r}"
        seen.add(m.keys)
    missing = sorted(set(want) - seen)
    assert not missing, f"{where}: {len(missing)} of {len(want)} messages missing, e.g. {missing[:5]}"


def produce(
    client: runner.Client, cluster: Cluster, topic: str, prefix: str, count: int, **kw: object
) -> DriverResult:
    fn: Callable[..., DriverResult] = (
        runner.run_alions_producer if client == "alions" else runner.run_cpp_producer
    )
    result = fn(
        cluster.namesrv, topic, count=count, tags=kw.pop("tags", TAGS), key_prefix=prefix, body=BODY, **kw
    )
    result.check()
    sent = result.sent
    assert len(sent) == count and all(s.status in ("SEND_OK", "OK") for s in sent), result.describe(
        f"expected {count} SEND_OK, got {Counter(s.status for s in sent)}"
    )
    return result


def latest_assignment(proc: DriverProcess, topic: str) -> set[int] | None:
    """Queue ids of ``topic`` in the consumer's last ``assigned`` event (None before the first one)."""
    events = [e for e in proc.events if e.get("event") == "assigned"]
    if not events:
        return None
    return {q["queueId"] for q in events[-1]["queues"] if q["topic"] == topic}


def consumed_by(proc: DriverProcess) -> list[ReceivedMessage]:
    return [
        runner._received(e)
        for e in list(proc.events)
        if e.get("event") == "received" and e.get("action") != "fail"
    ]


# --- 1. ali-ons: one group, two then three consumers ------------------------------------------------


def test_alions_group_shares_queues_and_survives_rebalance(node_cluster: Cluster) -> None:
    cluster = node_cluster
    topic, group, queues = "InteropRebalance", "GID_interop_rebalance", 8
    cluster.create_topic(topic, queues)
    first = expected_messages("rb1", 1000)
    second = expected_messages("rb2", 100)
    third = expected_messages("rb3", 100)

    with (
        runner.start_alions_consumer(cluster.namesrv, topic, group=group, timeout=120) as a,
        runner.start_alions_consumer(cluster.namesrv, topic, group=group, timeout=120) as b,
    ):
        ids = {p.wait_for("ready", timeout=30)["clientId"] for p in (a, b)}
        assert len(ids) == 2, f"both consumers got the same client id {ids}"
        wait_until(f"broker lists both consumers {ids}", lambda: set(cluster.consumer_ids(group)) >= ids)

        def split() -> bool:
            qa, qb = latest_assignment(a, topic), latest_assignment(b, topic)
            return qa is not None and qb is not None and not qa & qb and qa | qb == set(range(queues))

        wait_until(
            f"two consumers split the {queues} queues "
            f"(a: {latest_assignment(a, topic)}, b: {latest_assignment(b, topic)})",
            split,
            timeout=60,
        )
        produce("alions", cluster, topic, "rb1", 1000)

        def all_first() -> bool:
            return set(keys_of(consumed_by(a) + consumed_by(b))) >= set(first)

        wait_until("the 1000 messages consumed by a and b", all_first, timeout=60)
        got_a, got_b = consumed_by(a), consumed_by(b)
        counts = Counter(keys_of(got_a + got_b))
        dups = sorted(k for k, n in counts.items() if n > 1)
        assert not dups, f"{len(dups)} messages delivered twice before any rebalance, e.g. {dups[:5]}"
        assert_identical("a+b", got_a + got_b, first)
        queues_a, queues_b = {m.queue_id for m in got_a}, {m.queue_id for m in got_b}
        assert not queues_a & queues_b, f"a and b consumed the same queues: a {queues_a}, b {queues_b}"
        assert got_a and got_b, f"one consumer got nothing: a {len(got_a)}, b {len(got_b)}"
        # everything committed before the third consumer joins: it must not see the first batch again
        wait_until(
            "offsets of the first batch committed", lambda: cluster.committed_all(group, topic), timeout=30
        )

        with runner.start_alions_consumer(cluster.namesrv, topic, group=group, timeout=120) as c:
            c_id = c.wait_for("ready", timeout=30)["clientId"]
            wait_until("broker lists three consumers", lambda: c_id in cluster.consumer_ids(group))
            produce("alions", cluster, topic, "rb2", 100)  # while the group rebalances

            def three_way() -> bool:
                qs = [latest_assignment(p, topic) or set() for p in (a, b, c)]
                return all(qs) and sum(map(len, qs)) == queues and set().union(*qs) == set(range(queues))

            wait_until("three consumers split the queues", three_way, timeout=60)
            produce("alions", cluster, topic, "rb3", 100)  # after the rebalance settled

            def all_later() -> bool:
                return set(keys_of(consumed_by(a) + consumed_by(b) + consumed_by(c))) >= set(second | third)

            wait_until("the later batches consumed across the rebalance", all_later, timeout=60)
            got = consumed_by(a) + consumed_by(b) + consumed_by(c)
            got_c = consumed_by(c)

    again = sorted(k for k, n in Counter(k for k in keys_of(got) if k in first).items() if n > 1)
    assert not again, f"{len(again)} messages of the committed first batch redelivered, e.g. {again[:5]}"
    assert_identical("a+b+c, sent during the rebalance", [m for m in got if m.keys in second], second)
    assert_identical("a+b+c, sent after the rebalance", [m for m in got if m.keys in third], third)
    dups = sorted(k for k, n in Counter(k for k in keys_of(got) if k in third).items() if n > 1)
    assert not dups, f"{len(dups)} messages sent after the rebalance delivered twice, e.g. {dups[:5]}"
    assert any(m.keys in third for m in got_c), f"the third consumer got none of {len(third)} later messages"


# --- 2. the C++ client: v1 header, batch, push and pull consumers, both directions with ali-ons ------


def test_alions_to_cpp_push_and_pull(node_cluster: Cluster) -> None:
    cluster = node_cluster
    topic = "InteropAlionsToCpp"
    cluster.create_topic(topic)
    want = expected_messages("a2c", 30)
    produce("alions", cluster, topic, "a2c", 30)

    pulled = runner.run_cpp_pull_consumer(
        cluster.namesrv, topic, group="GID_interop_a2c_pull", timeout=30
    ).check()
    assert_identical("C++ pull consumer", pulled.received, want)
    assert len(pulled.received) == 30, pulled.describe(f"pulled {len(pulled.received)} messages, want 30")

    # a new C++ group starts at the last offset unless QUERY_CONSUMER_OFFSET answers 0 for a young queue
    pushed = runner.run_cpp_push_consumer(
        cluster.namesrv, topic, group="GID_interop_a2c_push", expect=30, timeout=40, linger=1
    ).check()
    assert_identical("C++ push consumer", pushed.consumed, want)
    assert len(pushed.consumed) == 30, pushed.describe(f"consumed {len(pushed.consumed)}, want 30")


def test_cpp_to_alions_and_cpp(node_cluster: Cluster) -> None:
    cluster = node_cluster
    topic = "InteropCppToAll"
    cluster.create_topic(topic)
    want = expected_messages("c2a", 30)
    sent = produce("cpp", cluster, topic, "c2a", 30)  # SEND_MESSAGE with the v1 header
    assert sorted(s.keys or "" for s in sent.sent) == sorted(want)

    with runner.start_alions_consumer(
        cluster.namesrv, topic, group="GID_interop_c2a", expect=30, timeout=40, linger=1
    ) as consumer:
        alions = consumer.finish().check()
    assert_identical("ali-ons consumer", alions.consumed, want)
    assert len(alions.consumed) == 30, alions.describe(f"consumed {len(alions.consumed)}, want 30")

    pushed = runner.run_cpp_push_consumer(
        cluster.namesrv, topic, group="GID_interop_c2c_push", expect=30, timeout=40, linger=1
    ).check()
    assert_identical("C++ push consumer", pushed.consumed, want)
    assert len(pushed.consumed) == 30, pushed.describe(f"consumed {len(pushed.consumed)}, want 30")

    pulled = runner.run_cpp_pull_consumer(
        cluster.namesrv, topic, group="GID_interop_c2c_pull", timeout=30
    ).check()
    assert_identical("C++ pull consumer", pulled.received, want)
    assert len(pulled.received) == 30, pulled.describe(f"pulled {len(pulled.received)}, want 30")


def test_cpp_batch_send_stores_each_message(node_cluster: Cluster) -> None:
    cluster = node_cluster
    topic = "InteropCppBatch"
    cluster.create_topic(topic, queues=1)
    want = expected_messages("batch", 10, tags=("TagA",))
    produce("cpp", cluster, topic, "batch", 10, tags="TagA", batch=True)

    pulled = runner.run_cpp_pull_consumer(
        cluster.namesrv, topic, group="GID_interop_batch_pull", timeout=30
    ).check()
    assert_identical("C++ pull consumer after a batch send", pulled.received, want)
    assert sorted(m.queue_offset for m in pulled.received) == list(range(10)), pulled.describe(
        "each message of the batch must be its own record (offsets 0..9)"
    )
    with runner.start_alions_consumer(
        cluster.namesrv, topic, group="GID_interop_batch", expect=10, timeout=40, linger=1
    ) as consumer:
        alions = consumer.finish().check()
    assert_identical("ali-ons consumer after a batch send", alions.consumed, want)
    assert len(alions.consumed) == 10, alions.describe(f"consumed {len(alions.consumed)}, want 10")


# --- 3. tag filters ---------------------------------------------------------------------------------


def test_tag_filtered_consumers_get_only_their_tags(node_cluster: Cluster) -> None:
    cluster = node_cluster
    topic = "InteropTags"
    cluster.create_topic(topic)
    everything = expected_messages("tag", 30)
    produce("alions", cluster, topic, "tag", 30)

    def only(*tags: str) -> dict[str, tuple[bytes, str]]:
        return {k: v for k, v in everything.items() if v[1] in tags}

    with runner.start_alions_consumer(
        cluster.namesrv, topic, group="GID_interop_tags_alions", tags="TagA || TagC", expect=20, timeout=40,
        linger=2,
    ) as consumer:  # fmt: skip
        alions = consumer.finish().check()
    assert_identical("ali-ons consumer of 'TagA || TagC'", alions.consumed, only("TagA", "TagC"))
    assert len(alions.consumed) == 20, alions.describe(f"consumed {len(alions.consumed)}, want 20")

    pushed = runner.run_cpp_push_consumer(
        cluster.namesrv, topic, group="GID_interop_tags_cpp", tags="TagB", expect=10, timeout=40, linger=2
    ).check()
    assert_identical("C++ push consumer of 'TagB'", pushed.consumed, only("TagB"))
    assert len(pushed.consumed) == 10, pushed.describe(f"consumed {len(pushed.consumed)}, want 10")

    pulled = runner.run_cpp_pull_consumer(
        cluster.namesrv, topic, group="GID_interop_tags_pull", tags="TagC || TagA", timeout=30
    ).check()
    assert_identical("C++ pull consumer of 'TagC || TagA'", pulled.received, only("TagA", "TagC"))
    assert len(pulled.received) == 20, pulled.describe(f"pulled {len(pulled.received)}, want 20")


# --- 4. broker restarts between produce and consume ----------------------------------------------------

SMALL_STORE = ("mappedFileSizeCommitLog=4194304", "mappedFileSizeConsumeQueueUnits=10000")


def offsets_on_disk(up: RmqUp, group: str, topic: str) -> dict[int, int]:
    """The group's committed offsets as the broker last persisted them (config/consumerOffset.json)."""
    path = up.store / "config" / "consumerOffset.json"
    try:
        doc = load_json(path.read_bytes(), "ConsumerOffsetManager")  # Java style: {0:5} keys
    except (OSError, ValueError):
        return {}
    table = doc.get("offsetTable", {}).get(f"{topic}@{group}", {})
    return {int(k): int(v) for k, v in table.items()}


def assert_tail_redelivery(
    where: str, consumed_before: Sequence[ReceivedMessage], again: Sequence[ReceivedMessage]
) -> None:
    """Messages consumed before the restart may come again only as a tail of each queue."""
    by_queue: dict[int, list[int]] = {}
    for m in consumed_before:
        by_queue.setdefault(m.queue_id, []).append(m.queue_offset)
    for m in again:
        later = [o for o in by_queue.get(m.queue_id, []) if o > m.queue_offset]
        redelivered = {x.queue_offset for x in again if x.queue_id == m.queue_id}
        assert set(later) <= redelivered, (
            f"{where}: queue {m.queue_id} offset {m.queue_offset} came again but not the later offsets "
            f"{sorted(set(later) - redelivered)}: the consumer did not resume from its committed offset"
        )


def start_consumer(
    client: runner.Client, namesrv: str, topic: str, group: str, *, expect: int | None = None,
    timeout: float = 60.0, linger: float = 0.0,
) -> DriverProcess:  # fmt: skip
    start = runner.start_alions_consumer if client == "alions" else runner.start_cpp_push_consumer
    return start(namesrv, topic, group=group, expect=expect, timeout=timeout, linger=linger)


@pytest.mark.parametrize(
    ("how", "settings"),
    [("SIGTERM", ()), ("SIGKILL", ("flushDiskType=SYNC_FLUSH", "flushConsumerOffsetInterval=500"))],
    ids=["graceful", "sigkill-sync-flush"],
)
def test_restart_between_produce_and_consume(
    rmq_up: Callable[..., RmqUp], how: str, settings: tuple[str, ...]
) -> None:
    up = rmq_up(*SMALL_STORE, *settings)
    cluster = up.cluster
    topic = "InteropRestart"
    groups: dict[runner.Client, str] = {
        "alions": "GID_interop_restart_alions",
        "cpp": "GID_interop_restart_cpp",
    }
    cluster.create_topic(topic)
    before = expected_messages("r1", 20)
    after = expected_messages("r2", 20)

    # part 1: produced, then consumed and committed by one group of each client before the restart
    produce("cpp", cluster, topic, "r1", 20)
    first: dict[runner.Client, DriverResult] = {}
    for client, group in groups.items():
        with start_consumer(client, cluster.namesrv, topic, group, expect=20, timeout=40, linger=1) as c:
            first[client] = c.finish().check()
        assert_identical(f"{client} before the restart", first[client].consumed, before)
        wait_until(f"offsets of {group} committed", partial(cluster.committed_all, group, topic), timeout=20)
    # part 2: produced (and acknowledged) but not consumed before the restart
    produce("alions", cluster, topic, "r2", 20)

    if how == "SIGKILL":
        # committed offsets the broker has persisted must survive the kill: wait for the flush
        for group in groups.values():
            wait_until(
                f"offsets of {group} persisted",
                partial(lambda g: sum(offsets_on_disk(up, g, topic).values()) == 20, group),
                timeout=20,
            )
        up.stop(signal.SIGKILL)
    else:
        assert up.stop(signal.SIGTERM) == 0, f"rmq up did not stop cleanly:\n{up.tail()}"
    up.start()

    # every acknowledged message survived: read the whole topic from offset 0
    pulled = runner.run_cpp_pull_consumer(
        cluster.namesrv, topic, group="GID_interop_restart_pull", timeout=30
    ).check()
    assert_identical(f"after {how}, every acknowledged message", pulled.received, before | after)
    assert len(pulled.received) == 40, pulled.describe(f"pulled {len(pulled.received)} of 40 messages")

    # each group resumes from its committed offset: the second part, nothing lost, nothing again
    for client, group in groups.items():
        with start_consumer(client, cluster.namesrv, topic, group, timeout=60) as c:
            wait_until(
                f"{client} consumed the second part after {how}",
                partial(lambda p: set(keys_of(consumed_by(p))) >= set(after), c),
                timeout=40,
            )
            resumed = consumed_by(c)
        where = f"{client} after {how}"
        assert_identical(where, [m for m in resumed if m.keys in after], after)
        again = [m for m in resumed if m.keys in before]
        assert_tail_redelivery(where, first[client].consumed, again)
        assert not again, (
            f"{where}: {len(again)} committed messages consumed again, e.g. {keys_of(again)[:5]}"
        )
