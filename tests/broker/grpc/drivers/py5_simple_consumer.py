"""rocketmq-python-client 5.x SimpleConsumer.

python py5_simple_consumer.py --endpoints E --topic T --group G --expect N [--mode ack|redeliver|change]
    [--tag '*'] [--invisible 10] [--timeout 30] [--batch 16]

ack: ack everything. redeliver: leave each message unacked on its first delivery and ack it when it
comes back (after the invisible time). change: on the first delivery set its invisible duration to
1 s, then ack it when it comes back. The goal is N distinct messages acked.
"""

from __future__ import annotations

import argparse
import sys
import time

from _py5kit import config, emit, load_client, message_fields


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--endpoints", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--expect", type=int, required=True)
    ap.add_argument("--mode", default="ack", choices=["ack", "redeliver", "change"])
    ap.add_argument("--tag", default="*")
    ap.add_argument("--invisible", type=int, default=10)
    ap.add_argument("--await-duration", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=30)
    ap.add_argument("--batch", type=int, default=16)
    args = ap.parse_args()
    rocketmq = load_client()
    consumer = rocketmq.SimpleConsumer(
        config(rocketmq, args.endpoints, request_timeout=5),
        args.group,
        {args.topic: rocketmq.FilterExpression(args.tag)},
        await_duration=args.await_duration,
    )
    acked: set[str] = set()
    seen: set[str] = set()
    try:
        consumer.startup()
        emit("started")
        deadline = time.time() + args.timeout
        while len(acked) < args.expect and time.time() < deadline:
            try:
                messages = consumer.receive(args.batch, args.invisible)
            except Exception as exc:
                if "MESSAGE_NOT_FOUND" not in str(exc) and "no new message" not in str(exc):
                    emit("receive_error", error=f"{type(exc).__name__}: {exc}")
                continue
            for msg in messages:
                first = msg.message_id not in seen
                seen.add(msg.message_id)
                emit("received", **message_fields(msg))
                if args.mode == "redeliver" and first:
                    continue
                if args.mode == "change" and first:
                    consumer.change_invisible_duration(msg, 1)
                    emit("changed", message_id=msg.message_id)
                    continue
                consumer.ack(msg)
                acked.add(msg.message_id)
                emit("acked", message_id=msg.message_id)
    except Exception as exc:
        emit("error", stage="consume", error=f"{type(exc).__name__}: {exc}")
    finally:
        try:
            consumer.shutdown()
        except Exception as exc:
            emit("error", stage="shutdown", error=f"{type(exc).__name__}: {exc}")
    ok = len(acked) >= args.expect
    emit("summary", acked=len(acked), ok=ok)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
