"""Shared helpers of the rocketmq-python-client 5.x drivers (run in that client's own venv).

Each driver prints one JSON object per line on stdout; the last is ``{"event": "summary", ...}``.
Exit codes: 0 goal reached, 1 not reached, 2 bad command line, 3 client library failed to load.
"""

from __future__ import annotations

import base64
import json
import os
import sys
import threading
import time
from typing import Any

_LOCK = threading.Lock()


def emit(event: str, **fields: Any) -> None:
    """One JSON line; listeners call this from several threads, so lines must not interleave."""
    line = json.dumps({"event": event, "t": round(time.time(), 3), **fields}, default=str)
    with _LOCK:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def load_client() -> Any:
    try:
        import rocketmq
    except Exception as exc:
        emit("error", stage="import", error=f"{type(exc).__name__}: {exc}")
        sys.exit(3)
    return rocketmq


def config(rocketmq: Any, endpoints: str, request_timeout: int = 5) -> Any:
    # ACL credentials when the test sets them (tests/broker/acl); empty ones mean "no authentication"
    env = os.environ
    credentials = rocketmq.Credentials(env.get("RMQ_ACCESS_KEY", ""), env.get("RMQ_SECRET_KEY", ""))
    return rocketmq.ClientConfiguration(endpoints, credentials, request_timeout=request_timeout)


def message_fields(msg: Any) -> dict[str, Any]:
    body = bytes(msg.body)
    return {
        "message_id": msg.message_id,
        "topic": msg.topic,
        "tag": msg.tag,
        "keys": list(msg.keys or []),
        "message_group": msg.message_group,
        "delivery_attempt": msg.delivery_attempt,
        "delivery_timestamp": msg.delivery_timestamp,
        "properties": dict(msg.properties or {}),
        "body_b64": base64.b64encode(body).decode(),
        "body": body.decode("utf-8", "replace"),
    }
