"""Runs a clustering push consumer of the C++ client (PyPI ``rocketmq`` 0.4.4).

    python cpp_push_consumer.py <namesrv host:port> <topic> [--group G] [--tags EXPR] [--expect N]
        [--timeout S] [--fail-first N] [--linger S] [--threads N]

The C++ client always starts a new group at CONSUME_FROM_LAST_OFFSET (the binding has no setting for
it), so it sees older messages only when the broker answers QUERY_CONSUMER_OFFSET with 0 for a young
queue, as Apache RocketMQ does.
--fail-first N: the first N deliveries answer RECONSUME_LATER, so the client sends them back
(CONSUMER_SEND_MSG_BACK) and they return through %RETRY%<group>. Beware: the C++ client then also
sends back the rest of that pulled batch without showing it to the callback, so those messages are
first seen with reconsumeTimes 1; count distinct keys, not deliveries. (The binding's own ``subscribe``
cannot do that: an exception in its callback re-raises inside ctypes and the C side sees 0, success.)
--expect N: stop (exit 0) once N deliveries were consumed successfully, after --linger seconds more;
exit 1 if --timeout passes first. Without --expect, consume until --timeout and exit 0.
Events: ready, received {topic,tags,keys,body(base64),msgId,queueId,queueOffset,commitLogOffset,
reconsumeTimes,...,properties,action:"ok"|"fail"}, client_log, error, summary.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # type-checked from the repo root, where the drivers folder is a namespace package
    from tests.peers.drivers import _cppkit as kit
else:  # run as a script by the peer venv's python
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import _cppkit as kit

CONSUME_SUCCESS = 0
RECONSUME_LATER = 1


def main() -> None:
    p = kit.parser("cpp_push_consumer.py", "consume with the rocketmq C++ push consumer")
    p.add_argument("--tags", default="*", help="subscription expression, e.g. 'A || B'")
    p.add_argument("--expect", type=kit.positive_count, default=None)
    p.add_argument("--fail-first", type=kit.count, default=0)
    p.add_argument("--linger", type=kit.seconds, default=None)
    p.add_argument("--threads", type=kit.positive_count, default=1)
    args = p.parse_args()
    group = args.group or "rmqkit_peer_cpp_consumer"

    client = kit.load_client()
    from rocketmq import ffi  # type: ignore[import-not-found]
    from rocketmq.exceptions import ffi_check  # type: ignore[import-not-found]

    started = time.monotonic()
    lock = threading.Lock()
    done = threading.Event()
    state = {"received": 0, "consumed": 0, "failedOnPurpose": 0, "callbackErrors": 0}

    def summary(reason: str, ok: bool) -> None:
        with lock:
            counts = dict(state)
        kit.emit(
            "summary",
            **counts,
            expect=args.expect,
            reason=reason,
            connectErrors=logs.connect_errors,
            elapsedMs=int((time.monotonic() - started) * 1000),
            ok=ok,
        )

    def on_timeout() -> None:
        logs.scan()
        if args.expect is None:
            summary("timeout", True)
            kit.finish(0)
        with lock:
            consumed = state["consumed"]
        kit.emit(
            "error",
            name="DriverTimeout",
            error=f"consumed {consumed} of {args.expect} within {args.timeout:g}s",
        )
        summary("timeout", False)
        kit.finish(1)

    logs = kit.LogWatcher().start()
    watchdog = kit.Watchdog(args.timeout, on_timeout).start()

    def on_message(_consumer: Any, handle: Any) -> int:
        try:
            fields = kit.describe_message(client.RecvMessage(handle))
            with lock:
                fail = state["received"] < args.fail_first
                state["received"] += 1
                if fail:
                    state["failedOnPurpose"] += 1
                else:
                    state["consumed"] += 1
                reached = not fail and args.expect is not None and state["consumed"] == args.expect
            kit.emit("received", **fields, action="fail" if fail else "ok")
            if reached:
                done.set()
            return RECONSUME_LATER if fail else CONSUME_SUCCESS
        except Exception as exc:  # never let an exception cross into C
            with lock:
                state["callbackErrors"] += 1
            kit.emit("error", name=type(exc).__name__, error=str(exc), during="callback")
            return RECONSUME_LATER

    callback = ffi.MSG_CALLBACK_FUNC(on_message)  # keep a reference for the consumer's lifetime
    consumer = client.PushConsumer(group)
    consumer.set_namesrv_addr(args.namesrv)
    kit.sign(consumer)  # RMQ_ACCESS_KEY / RMQ_SECRET_KEY, for a broker with ACL
    consumer.set_thread_count(args.threads)
    try:
        ffi_check(ffi.dll.Subscribe(consumer._handle, args.topic.encode(), args.tags.encode()))
        ffi_check(ffi.dll.RegisterMessageCallback(consumer._handle, callback))
        consumer.start()
    except Exception as exc:
        kit.emit("error", name=type(exc).__name__, error=str(exc), during="start")
        logs.stop()
        summary("start_failed", False)
        kit.finish(1)
    kit.emit("ready", client="rocketmq-cpp", group=group)

    while not done.wait(0.2):
        pass
    if args.linger:
        time.sleep(min(args.linger, max(0.0, watchdog.remaining() - 1)))
    try:
        consumer.shutdown()  # persists offsets (UPDATE_CONSUMER_OFFSET) and unregisters
    except Exception as exc:
        kit.emit("error", name=type(exc).__name__, error=str(exc), during="shutdown")
    logs.stop()
    summary("expected", True)
    kit.finish(0)


if __name__ == "__main__":
    main()
