"""Sends messages with the C++ client (PyPI ``rocketmq`` 0.4.4, SEND_MESSAGE v1 header).

    python cpp_producer.py <namesrv host:port> <topic> [--group G] [--count N] [--tags A,B]
        [--key-prefix K] [--body TEXT] [--body-size BYTES] [--delay-level L] [--property K=V ...]
        [--batch] [--interval-ms MS] [--timeout S]

Message i (0-based) gets tags[i % len(tags)], keys "<key-prefix>-<i>" and the body "<body>-<i>"
padded with '.' up to --body-size bytes. --batch sends all of them in one SEND_BATCH_MESSAGE;
--interval-ms waits that long between two sends (a steady load), failed or not.
Events: ready, sent {index,msgId,queueOffset,status,tags,keys} (the C API gives no queue id),
send_error {index,error,name}, client_log, error, summary {sent,failed,count,elapsedMs,ok}.
Run it with the peer venv's python and HOME pointing at a scratch folder (the client logs there).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # type-checked from the repo root, where the drivers folder is a namespace package
    from tests.peers.drivers import _cppkit as kit
else:  # run as a script by the peer venv's python
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import _cppkit as kit


def main() -> None:
    p = kit.parser("cpp_producer.py", "send messages with the rocketmq C++ client")
    p.add_argument("--count", type=kit.count, default=1)
    p.add_argument("--tags", default="")
    p.add_argument("--key-prefix", default=None)
    p.add_argument("--body", default="hello")
    p.add_argument("--body-size", type=kit.count, default=0)
    p.add_argument("--delay-level", type=kit.count, default=0)
    p.add_argument("--property", action="append", default=[], metavar="K=V")
    p.add_argument("--batch", action="store_true")
    p.add_argument("--send-timeout-ms", type=kit.positive_count, default=3000)
    p.add_argument("--interval-ms", type=kit.count, default=0)
    args = p.parse_args()
    extra: list[tuple[str, str]] = []
    for item in args.property:
        name, sep, value = item.partition("=")
        if not sep or not name:
            p.error(f"--property expects K=V, got {item!r}")
        extra.append((name, value))
    if args.batch and args.delay_level:
        p.error("--batch cannot be combined with --delay-level (the C++ client rejects delayed batches)")
    tags = [t for t in args.tags.split(",") if t]
    group = args.group or "rmqkit_peer_cpp_producer"

    client = kit.load_client()
    started = time.monotonic()
    state = {"sent": 0, "failed": 0}

    def summary(reason: str, ok: bool) -> None:
        kit.emit(
            "summary",
            sent=state["sent"],
            failed=state["failed"],
            count=args.count,
            reason=reason,
            connectErrors=logs.connect_errors,
            elapsedMs=int((time.monotonic() - started) * 1000),
            ok=ok,
        )

    def on_timeout() -> None:
        kit.emit("error", name="DriverTimeout", error=f"producer did not finish within {args.timeout:g}s")
        logs.scan()
        summary("timeout", False)
        kit.finish(1)

    logs = kit.LogWatcher().start()
    kit.Watchdog(args.timeout, on_timeout).start()

    producer = client.Producer(group, timeout=args.send_timeout_ms)
    producer.set_namesrv_addr(args.namesrv)
    kit.sign(producer)  # RMQ_ACCESS_KEY / RMQ_SECRET_KEY, for a broker with ACL
    try:
        producer.start()
    except Exception as exc:
        kit.emit("error", name=type(exc).__name__, error=str(exc), during="start")
        logs.stop()
        summary("start_failed", False)
        kit.finish(1)
    kit.emit("ready", client="rocketmq-cpp", group=group)

    def build(index: int) -> tuple[Any, str | None, str | None]:
        msg = client.Message(args.topic)
        tag = tags[index % len(tags)] if tags else None
        key = f"{args.key_prefix}-{index}" if args.key_prefix is not None else None
        if tag is not None:
            msg.set_tags(tag)
        if key is not None:
            msg.set_keys(key)
        body = f"{args.body}-{index}"
        msg.set_body(body + "." * max(0, args.body_size - len(body)))
        if args.delay_level:
            msg.set_delay_time_level(args.delay_level)
        for name, value in extra:
            msg.set_property(name, value)
        return msg, tag, key

    def report(index: int, result: Any, tag: str | None, key: str | None) -> None:
        state["sent"] += 1
        status = getattr(result.status, "name", str(result.status))
        kit.emit(
            "sent",
            index=index,
            msgId=result.msg_id,
            queueOffset=result.offset,
            status=status,
            tags=tag,
            keys=key,
        )

    if args.batch and args.count:
        built = [build(i) for i in range(args.count)]
        try:
            result = producer.send_batch([m for m, _, _ in built])
        except Exception as exc:
            state["failed"] += args.count
            kit.emit("send_error", index=None, name=type(exc).__name__, error=str(exc))
        else:
            for index, (_, tag, key) in enumerate(built):
                report(index, result, tag, key)
    else:
        for index in range(args.count):
            msg, tag, key = build(index)
            try:
                result = producer.send_sync(msg)
            except Exception as exc:
                state["failed"] += 1
                kit.emit("send_error", index=index, name=type(exc).__name__, error=str(exc))
            else:
                report(index, result, tag, key)
            if args.interval_ms:
                time.sleep(args.interval_ms / 1000)
    try:
        producer.shutdown()
    except Exception as exc:
        kit.emit("error", name=type(exc).__name__, error=str(exc), during="shutdown")
    logs.stop()
    ok = state["failed"] == 0
    summary("done", ok)
    kit.finish(0 if ok else 1)


if __name__ == "__main__":
    main()
