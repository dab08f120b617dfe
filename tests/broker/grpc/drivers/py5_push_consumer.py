"""rocketmq-python-client 5.x PushConsumer.

python py5_push_consumer.py --endpoints E --topic T --group G --expect N [--fail] [--tag '*'] [--timeout 30]

Without --fail the listener succeeds; the goal is N distinct messages consumed. With --fail it always
fails (the broker redelivers, and finally dead-letters); the driver runs until --timeout and its goal
is to have seen every one of N messages at least once.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time

from _py5kit import config, emit, load_client, message_fields


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--endpoints", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--expect", type=int, required=True)
    ap.add_argument("--fail", action="store_true")
    ap.add_argument("--tag", default="*")
    ap.add_argument("--timeout", type=float, default=30)
    args = ap.parse_args()
    rocketmq = load_client()
    lock = threading.Lock()
    seen: set[str] = set()

    class Listener(rocketmq.MessageListener):
        def consume(self, message):
            emit("consumed", **message_fields(message))
            with lock:
                seen.add(message.message_id)
            return rocketmq.ConsumeResult.FAILURE if args.fail else rocketmq.ConsumeResult.SUCCESS

    consumer = rocketmq.PushConsumer(
        config(rocketmq, args.endpoints),
        args.group,
        Listener(),
        {args.topic: rocketmq.FilterExpression(args.tag)},
        consumption_thread_count=4,
    )
    try:
        consumer.startup()
        emit("started")
        deadline = time.time() + args.timeout
        while time.time() < deadline:
            with lock:
                if not args.fail and len(seen) >= args.expect:
                    break
            time.sleep(0.1)
        if not args.fail:
            time.sleep(0.5)  # let the last acks go out
    except Exception as exc:
        emit("error", stage="consume", error=f"{type(exc).__name__}: {exc}")
    finally:
        try:
            consumer.shutdown()
        except Exception as exc:
            emit("error", stage="shutdown", error=f"{type(exc).__name__}: {exc}")
    ok = len(seen) >= args.expect
    emit("summary", consumed=len(seen), ok=ok)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
