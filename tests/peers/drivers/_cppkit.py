"""Shared plumbing for the drivers of the C++ client (PyPI ``rocketmq`` 0.4.4).

These scripts run under the peer venv's interpreter (``.cache/peers/cpp-venv``), never under the
project's venv. They follow the same conventions as the ali-ons drivers:

* stdout carries one JSON object per line, each with an ``event`` field; the last one is ``summary``;
* exit 0 when the goal was reached, 1 when not, 2 on a bad command line (one ``usage_error`` JSON line
  on stdout and one line on stderr), 3 when the client library cannot be loaded.

The C++ client reports connection problems only in its log file
(``$HOME/logs/rocketmq-cpp/<pid>_rocketmq-cpp.log.N``), so :class:`LogWatcher` tails that file and turns
warning and error lines into ``client_log`` events, and "can not connect" lines into ``error`` events.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

_emit_lock = threading.Lock()

# the properties worth reporting for a received message (the C API has no "all properties" call)
REPORTED_PROPERTIES = (
    "UNIQ_KEY",
    "KEYS",
    "TAGS",
    "DELAY",
    "RETRY_TOPIC",
    "REAL_TOPIC",
    "REAL_QID",
    "ORIGIN_MESSAGE_ID",
    "RECONSUME_TIME",
    "MAX_RECONSUME_TIMES",
    "MIN_OFFSET",
    "MAX_OFFSET",
)


def emit(event: str, **fields: Any) -> None:
    line = json.dumps({"event": event, **fields}, default=str)
    with _emit_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def finish(code: int) -> NoReturn:
    """Exit at once: the client's destructors at interpreter exit would shut it down a second time."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


class UsageExit(argparse.ArgumentParser):
    """An argument parser whose errors are one JSON line on stdout, one line on stderr and exit 2."""

    def error(self, message: str) -> NoReturn:
        one_line = " ".join(message.split())
        emit("usage_error", error=one_line)
        sys.stderr.write(f"{self.prog}: usage error: {one_line}\n")
        finish(2)


def _namesrv(value: str) -> str:
    if not re.fullmatch(r"[^:\s]+:\d+", value):
        raise argparse.ArgumentTypeError(f"namesrv must be host:port, got {value!r}")
    return value


def count(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {value!r}") from None
    if number < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {number}")
    return number


def positive_count(value: str) -> int:
    number = count(value)
    if number < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {number}")
    return number


def seconds(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {value!r}") from None
    if not number > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {value!r}")
    return number


def parser(prog: str, description: str) -> UsageExit:
    p = UsageExit(prog=prog, description=description)
    p.add_argument("namesrv", type=_namesrv, help="NameServer address host:port")
    p.add_argument("topic")
    p.add_argument("--group", default=None)
    p.add_argument("--timeout", type=seconds, default=30.0, help="give up after this many seconds")
    return p


def load_client() -> Any:
    """Imports ``rocketmq.client`` (loading librocketmq.so) or exits 3 with an ``error`` event."""
    try:
        import rocketmq.client as client  # type: ignore[import-not-found]
    except Exception as exc:  # ImportError, OSError from a missing shared library
        emit("error", name="DriverSetupError", error=f"cannot load the rocketmq package: {exc}")
        sys.stderr.write(f"cannot load the rocketmq package: {exc}\n")
        finish(3)
    return client


def sign(client_object: Any) -> None:
    """Give a producer or consumer the ACL key pair of ``RMQ_ACCESS_KEY``/``RMQ_SECRET_KEY``, when set."""
    access_key, secret_key = os.environ.get("RMQ_ACCESS_KEY"), os.environ.get("RMQ_SECRET_KEY")
    if access_key and secret_key:
        client_object.set_session_credentials(access_key, secret_key, "ALIYUN")


def text(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def describe_message(msg: Any) -> dict[str, Any]:
    """The fields of a ``rocketmq.client.RecvMessage`` as JSON-ready values."""
    body = msg.body or b""  # c_char_p: the C API cuts bodies at the first NUL byte
    properties = {}
    for name in REPORTED_PROPERTIES:
        value = text(msg.get_property(name))
        if value:
            properties[name] = value
    return {
        "topic": text(msg.topic),
        "tags": text(msg.tags) or None,
        "keys": text(msg.keys) or None,
        "body": base64.b64encode(body).decode("ascii"),
        "msgId": text(msg.id),
        "queueId": int(msg.queue_id),
        "queueOffset": int(msg.queue_offset),
        "commitLogOffset": int(msg.commit_log_offset),
        "reconsumeTimes": int(msg.reconsume_times),
        "delayTimeLevel": int(msg.delay_time_level),
        "bornTimestamp": int(msg.born_timestamp),
        "storeTimestamp": int(msg.store_timestamp),
        "storeSize": int(msg.store_size),
        "properties": properties,
    }


_LOG_LINE = re.compile(r"^\[(?P<when>[^\]]*)\]\((?P<level>\w+)\):(?P<text>.*?)(?:\[(?P<where>[\w:~]+)\])?$")
_CONNECT_FAILED = re.compile(r"can not connect to (?:server:)?(?P<addr>\S+)|connect (?:to )?\S+ failed", re.I)


# lines the client logs at error level in normal operation
_BENIGN = (
    "stopAllTcpTransportThread End",  # its own orderly shutdown
    "didn't get the session_credentials",  # no ACL configured, which is the normal case here
)


class LogWatcher:
    """Tails this process's C++ client log and reports its warnings and errors as events."""

    def __init__(self, interval: float = 0.2) -> None:
        self.folder = Path(os.path.expanduser("~")) / "logs" / "rocketmq-cpp"
        self.prefix = f"{os.getpid()}_"
        self.interval = interval
        self.positions: dict[Path, int] = {}
        self.partial: dict[Path, bytes] = {}
        self.seen: set[tuple[str, str]] = set()
        self.connect_errors = 0
        self.log_errors = 0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="cpp-log-watcher", daemon=True)

    def start(self) -> LogWatcher:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        self.scan()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.scan()

    def scan(self) -> None:
        with self._lock:
            if not self.folder.is_dir():
                return
            for path in sorted(self.folder.glob(self.prefix + "*")):
                self._read(path)

    def _read(self, path: Path) -> None:
        start = self.positions.get(path, 0)
        try:
            with path.open("rb") as fh:
                fh.seek(start)
                chunk = fh.read()
        except OSError:
            return
        if not chunk:
            return
        self.positions[path] = start + len(chunk)
        data = self.partial.pop(path, b"") + chunk
        lines = data.split(b"\n")
        if lines[-1]:
            self.partial[path] = lines[-1]
        for raw in lines[:-1]:
            self._line(raw.decode("utf-8", "replace").rstrip("\r"))

    def _line(self, line: str) -> None:
        match = _LOG_LINE.match(line)
        if not match:
            return
        level = match["level"].lower()
        if level not in ("warning", "error", "fatal"):
            return
        message = match["text"].strip()
        if any(noise in message for noise in _BENIGN):
            return
        connect = _CONNECT_FAILED.search(message)
        if connect:
            self.connect_errors += 1
        elif level != "warning":
            self.log_errors += 1
        # the client retries in loops: report each distinct line once
        if (level, message) in self.seen:
            return
        self.seen.add((level, message))
        emit("client_log", level=level, message=message, where=match["where"])
        if connect:
            emit("error", name="ConnectError", error=message, address=connect.group("addr"))


class Watchdog:
    """Calls ``on_timeout`` (which must end the process) once the deadline passes."""

    def __init__(self, timeout: float, on_timeout: Callable[[], object]) -> None:
        self.deadline = time.monotonic() + timeout
        self.timeout = timeout
        self.on_timeout = on_timeout
        self._thread = threading.Thread(target=self._run, name="cpp-watchdog", daemon=True)

    def start(self) -> Watchdog:
        self._thread.start()
        return self

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def _run(self) -> None:
        while (left := self.remaining()) > 0:
            time.sleep(min(left, 0.2))
        self.on_timeout()
        finish(1)  # in case on_timeout returned
