"""rocketmq-python-client 5.x producer: normal, FIFO, delay and transactional messages.

python py5_producer.py --endpoints 127.0.0.1:8081 --topic T --count 3 [--kind normal|fifo|delay|transaction]
    [--tag TagA] [--key-prefix k] [--message-groups 2] [--delay-ms 2000] [--property a=b]
    [--tx commit|rollback|check-commit|check-rollback] [--linger 10] [--recall]

Transactions: commit/rollback end each transaction from the client; check-* leave it open and let the
broker ask the checker (which answers COMMIT or ROLLBACK) while the driver lingers.
--recall recalls every message right after sending it (delay messages: its recall handle).
"""

from __future__ import annotations

import argparse
import sys
import threading
import time

from _py5kit import config, emit, load_client


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--endpoints", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--count", type=int, default=1)
    ap.add_argument("--kind", default="normal", choices=["normal", "fifo", "delay", "transaction"])
    ap.add_argument("--tag")
    ap.add_argument("--key-prefix")
    ap.add_argument("--body-prefix", default="py5-")
    ap.add_argument("--message-groups", type=int, default=1)
    ap.add_argument("--delay-ms", type=int, default=2000)
    ap.add_argument("--property", action="append", default=[])
    ap.add_argument(
        "--tx", default="commit", choices=["commit", "rollback", "check-commit", "check-rollback"]
    )
    ap.add_argument("--linger", type=float, default=0.0, help="seconds to stay up after sending (checks)")
    ap.add_argument("--recall", action="store_true", help="recall each message after sending it")
    args = ap.parse_args()
    rocketmq = load_client()
    checked = threading.Event()
    checks: list[str] = []

    class Checker(rocketmq.TransactionChecker):
        def check(self, message):
            checks.append(message.message_id)
            emit(
                "checked", message_id=message.message_id, body=bytes(message.body).decode("utf-8", "replace")
            )
            checked.set()
            if args.tx == "check-rollback":
                return rocketmq.TransactionResolution.ROLLBACK
            return rocketmq.TransactionResolution.COMMIT

    producer = rocketmq.Producer(
        config(rocketmq, args.endpoints),
        (args.topic,),
        checker=Checker() if args.kind == "transaction" else None,
    )
    sent = 0
    try:
        producer.startup()
        emit("started")
        for i in range(args.count):
            msg = rocketmq.Message()
            msg.topic = args.topic
            msg.body = f"{args.body_prefix}{i}".encode()
            if args.tag:
                msg.tag = args.tag
            if args.key_prefix:
                msg.keys = f"{args.key_prefix}{i}"
            for prop in args.property:
                k, _, v = prop.partition("=")
                msg.add_property(k, v)
            if args.kind == "fifo":
                msg.message_group = f"group-{i % args.message_groups}"
            if args.kind == "delay":
                msg.delivery_timestamp = int(time.time() * 1000) + args.delay_ms
            if args.kind == "transaction":
                tx = producer.begin_transaction()
                receipt = producer.send(msg, tx)
                if args.tx == "commit":
                    tx.commit()
                elif args.tx == "rollback":
                    tx.rollback()
            else:
                receipt = producer.send(msg)
            sent += 1
            emit(
                "sent",
                index=i,
                message_id=receipt.message_id,
                offset=getattr(receipt, "offset", None),
                queue_id=getattr(getattr(receipt, "message_queue", None), "id", None),
                transaction_id=getattr(receipt, "transaction_id", None),
                recall_handle=getattr(receipt, "recall_handle", None),
            )
            if args.recall:
                try:
                    recalled = producer.recall_message(args.topic, receipt.recall_handle)
                    emit("recalled", index=i, message_id=recalled)
                except Exception as exc:
                    emit("recall_error", index=i, error=f"{type(exc).__name__}: {exc}")
        deadline = time.time() + args.linger
        while time.time() < deadline:
            if args.tx.startswith("check") and len(set(checks)) >= args.count:
                break
            time.sleep(0.2)
    except Exception as exc:
        emit("error", stage="send", error=f"{type(exc).__name__}: {exc}")
    finally:
        try:
            producer.shutdown()
        except Exception as exc:
            emit("error", stage="shutdown", error=f"{type(exc).__name__}: {exc}")
    ok = sent == args.count and (not args.tx.startswith("check") or args.kind != "transaction" or checks)
    emit("summary", sent=sent, checks=len(checks), ok=ok)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
