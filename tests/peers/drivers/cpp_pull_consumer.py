"""Pulls messages with the C++ client's pull consumer (PyPI ``rocketmq`` 0.4.4).

    python cpp_pull_consumer.py <namesrv host:port> <topic> [--group G] [--tags EXPR] [--expect N]
        [--timeout S] [--max-num N] [--interval S]

Fetches the topic's queues (GET_ROUTEINFO_BY_TOPIC), then pulls every queue from offset 0
(PULL_MESSAGE) round after round. The pull consumer keeps offsets in memory only: nothing is
committed to the broker. The binding's own ``PullConsumer.pull`` loops forever on BROKER_TIMEOUT, so
this driver calls the C API itself with a deadline.
--expect N: exit 0 once N messages were received; exit 1 if --timeout passes first. Without
--expect: pull until every queue answered NO_NEW_MSG once, then exit 0.
Events: ready, queues {queues:[{topic,brokerName,queueId}]}, pull {queueId,offset,status,
nextBeginOffset,minOffset,maxOffset,found} (repeated NO_NEW_MSG answers at the same offset are not
repeated), received {...as the push consumer, without action}, client_log, error, summary.
"""

from __future__ import annotations

import ctypes
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # type-checked from the repo root, where the drivers folder is a namespace package
    from tests.peers.drivers import _cppkit as kit
else:  # run as a script by the peer venv's python
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import _cppkit as kit

PULL_STATUS = {0: "FOUND", 1: "NO_NEW_MSG", 2: "NO_MATCHED_MSG", 3: "OFFSET_ILLEGAL", 4: "BROKER_TIMEOUT"}


def main() -> None:
    p = kit.parser("cpp_pull_consumer.py", "pull messages with the rocketmq C++ pull consumer")
    p.add_argument("--tags", default="*", help="subscription expression, e.g. 'A || B'")
    p.add_argument("--expect", type=kit.positive_count, default=None)
    p.add_argument("--max-num", type=kit.positive_count, default=32)
    p.add_argument("--interval", type=kit.seconds, default=0.2, help="pause between rounds")
    args = p.parse_args()
    group = args.group or "rmqkit_peer_cpp_puller"

    client = kit.load_client()
    from rocketmq import ffi  # type: ignore[import-not-found]
    from rocketmq.exceptions import ffi_check  # type: ignore[import-not-found]

    started = time.monotonic()
    state = {"received": 0, "pulls": 0, "queues": 0}

    def summary(reason: str, ok: bool) -> None:
        kit.emit(
            "summary",
            **state,
            expect=args.expect,
            reason=reason,
            connectErrors=logs.connect_errors,
            elapsedMs=int((time.monotonic() - started) * 1000),
            ok=ok,
        )

    def on_timeout() -> None:
        logs.scan()
        kit.emit(
            "error",
            name="DriverTimeout",
            error=f"received {state['received']} of {args.expect} within {args.timeout:g}s"
            if args.expect is not None
            else f"the queues were not drained within {args.timeout:g}s",
        )
        summary("timeout", False)
        kit.finish(1)

    logs = kit.LogWatcher().start()
    watchdog = kit.Watchdog(args.timeout, on_timeout).start()

    consumer = client.PullConsumer(group)
    consumer.set_namesrv_addr(args.namesrv)
    kit.sign(consumer)  # RMQ_ACCESS_KEY / RMQ_SECRET_KEY, for a broker with ACL
    try:
        consumer.start()
    except Exception as exc:
        kit.emit("error", name=type(exc).__name__, error=str(exc), during="start")
        logs.stop()
        summary("start_failed", False)
        kit.finish(1)
    kit.emit("ready", client="rocketmq-cpp", group=group)

    def fetch_queues() -> list[Any]:
        """The topic's queues; the C call answers an empty list (not an error) when there is no route."""
        array = ctypes.POINTER(ffi._CMessageQueue)()
        size = ctypes.c_int()
        ffi_check(
            ffi.dll.FetchSubscriptionMessageQueues(
                consumer._handle, args.topic.encode(), ctypes.pointer(array), ctypes.pointer(size)
            )
        )
        queues = [ffi._CMessageQueue.from_buffer_copy(array[i]) for i in range(size.value)]
        if size.value:
            ffi_check(ffi.dll.ReleaseSubscriptionMessageQueue(array))
        return queues

    queues: list[Any] = []
    while not queues:
        try:
            queues = fetch_queues()
        except Exception as exc:
            kit.emit("error", name=type(exc).__name__, error=str(exc), during="fetch_queues")
        if not queues:
            kit.emit("error", name="NoQueues", error=f"no message queues for topic {args.topic}")
            time.sleep(min(1.0, max(0.0, watchdog.remaining())))
    state["queues"] = len(queues)
    kit.emit(
        "queues",
        queues=[
            {"topic": q.topic.decode(), "brokerName": q.brokerName.decode(), "queueId": q.queueId}
            for q in queues
        ],
    )

    offsets = {q.queueId: 0 for q in queues}
    quiet: dict[int, int] = {}  # queueId -> offset at which NO_NEW_MSG was last reported
    expression = args.tags.encode()
    while True:
        drained = True
        for q in queues:
            while True:
                offset = offsets[q.queueId]
                result = ffi.dll.Pull(consumer._handle, ctypes.pointer(q), expression, offset, args.max_num)
                state["pulls"] += 1
                status = PULL_STATUS.get(result.pullStatus, str(result.pullStatus))
                try:
                    messages = [
                        kit.describe_message(client.RecvMessage(result.msgFoundList[i]))
                        for i in range(result.size if status == "FOUND" else 0)
                    ]
                    if status != "BROKER_TIMEOUT":
                        offsets[q.queueId] = result.nextBeginOffset
                    if status != "NO_NEW_MSG" or quiet.get(q.queueId) != offset:
                        kit.emit(
                            "pull",
                            queueId=q.queueId,
                            offset=offset,
                            status=status,
                            nextBeginOffset=result.nextBeginOffset,
                            minOffset=result.minOffset,
                            maxOffset=result.maxOffset,
                            found=len(messages),
                        )
                    for fields in messages:
                        state["received"] += 1
                        kit.emit("received", **fields)
                finally:
                    ffi.dll.ReleasePullResult(result)
                if status == "NO_NEW_MSG":
                    quiet[q.queueId] = offset
                    break
                if status == "BROKER_TIMEOUT" or offsets[q.queueId] == offset:
                    drained = False  # no progress on this queue: try again next round
                    break
        if args.expect is not None and state["received"] >= args.expect:
            reason, ok = "expected", True
            break
        if args.expect is None and drained:
            reason, ok = "drained", True
            break
        time.sleep(min(args.interval, max(0.0, watchdog.remaining())))

    try:
        consumer.shutdown()
    except Exception as exc:
        kit.emit("error", name=type(exc).__name__, error=str(exc), during="shutdown")
    logs.stop()
    summary(reason, ok)
    kit.finish(0 if ok else 1)


if __name__ == "__main__":
    main()
