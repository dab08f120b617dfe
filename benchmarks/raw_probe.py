"""A round-trip probe that is not itself the bottleneck: a process of its own, one blocking loopback
socket, every request frame encoded before the clock starts, the answer read by its length prefix
and not decoded.

Run as ``python -m benchmarks.raw_probe`` with a JSON spec on stdin; prints ``connected`` once its
socket is open, then one JSON object (``samples``: the round trips in microseconds, ``codes``: how
many answers had each response code). The parent starts it with :func:`start` (which returns once it
is connected) and collects it with :func:`finish` (SIGINT ends an open-ended run).
"""

from __future__ import annotations

import json
import signal
import socket
import struct
import subprocess
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any

_LEN = struct.Struct(">i")


@dataclass(slots=True)
class ProbeSpec:
    addr: str  # host:port
    code: int  # the request code
    headers: list[dict[str, str]]  # the extFields of each request, asked in turn, round and round
    count: int = 0  # requests to time (0: until SIGINT)
    warmup: int = 0  # requests sent first and not timed
    gap_s: float = 0.0  # pause after each request


def _frames(spec: ProbeSpec) -> list[bytes]:
    from broker.protocol.remoting import make_request

    return [make_request(spec.code, ext_fields=h).encode() for h in spec.headers]


def _read_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("the server closed the connection")
        buf += chunk
    return bytes(buf)


def _code_of(frame: bytes) -> int:
    """The response code of a JSON-header answer (what NameServers and brokers answer a JSON request)."""
    header_len = _LEN.unpack_from(frame, 0)[0] & 0xFFFFFF
    return int(json.loads(frame[4 : 4 + header_len]).get("code", -1))


def probe(spec: ProbeSpec) -> dict[str, Any]:
    frames = _frames(spec)
    stopping = False

    def stop(_sig: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, stop)
    host, _, port = spec.addr.rpartition(":")
    samples: list[float] = []
    codes: Counter[int] = Counter()
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        print("connected", flush=True)
        n = 0
        while not stopping and (spec.count == 0 or n < spec.count + spec.warmup):
            frame = frames[n % len(frames)]
            began = time.perf_counter_ns()
            sock.sendall(frame)
            length = _LEN.unpack(_read_exact(sock, 4))[0]
            answer = _read_exact(sock, length)
            elapsed = time.perf_counter_ns() - began
            if n >= spec.warmup:
                samples.append(elapsed / 1000)
                codes[_code_of(answer)] += 1
            n += 1
            if spec.gap_s:
                time.sleep(spec.gap_s)
    return {"samples": samples, "codes": {str(k): v for k, v in codes.items()}}


def start(spec: ProbeSpec) -> subprocess.Popen[str]:
    """The probe in a process of its own, running (it connects before it reads the clock)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.raw_probe"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(asdict(spec)))
    proc.stdin.close()
    assert proc.stdout is not None
    if proc.stdout.readline().strip() != "connected":
        raise RuntimeError(f"the probe did not connect to {spec.addr} (exit {proc.wait()})")
    return proc


def finish(proc: subprocess.Popen[str], interrupt: bool = False) -> dict[str, Any]:
    """Its result; ``interrupt`` ends an open-ended run first."""
    if interrupt:
        proc.send_signal(signal.SIGINT)
    assert proc.stdout is not None
    out = proc.stdout.read()
    if proc.wait(600) != 0:
        raise RuntimeError(f"the probe exited with {proc.returncode}")
    result: dict[str, Any] = json.loads(out)
    return result


def run(spec: ProbeSpec) -> dict[str, Any]:
    """A counted run, start to finish."""
    return finish(start(spec))


if __name__ == "__main__":
    print(json.dumps(probe(ProbeSpec(**json.loads(sys.stdin.read())))))
