"""Hostile and careless clients of the gRPC port, a normal client beside them, and the broker they
run against (``rmq up`` in its own process, so its memory is its own): shared by the attack suite
(``tests/grpc/test_attacks.py``) and its benchmark (``python -m benchmarks attacks``).

Every attack is a raw HTTP/2 client on loopback that sends what it is made of for a bounded time (or
until the broker stops reading or closes the connection); :class:`NormalClient` meanwhile sends
messages over remoting, looks routes up at the NameServer and asks the gRPC port for routes and
sends on a connection of its own, and records how long each took.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import re
import socket
import statistics
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc  # type: ignore[import-untyped,unused-ignore]
import hpack

from broker.acl.client import ClientSecurity, secure
from broker.acl.signer import GRPC_DATE_TIME, Credentials, grpc_authorization
from broker.client import Message, Producer
from broker.client.admin_api import AdminApi
from broker.client.remoting_client import RemotingClient
from broker.grpc.schema import PB, Code
from broker.protocol.bodies import TopicConfig
from broker.protocol.hpack_codec import encode_int, literal
from broker.protocol.http2 import (
    CONTINUATION,
    DATA,
    END_HEADERS,
    END_STREAM,
    GOAWAY,
    HEADERS,
    INITIAL_WINDOW_SIZE,
    PING,
    PREFACE,
    PRIORITY,
    RST_STREAM,
    SETTINGS,
    WINDOW_UPDATE,
    frame,
)

TOPIC = "AttackTopic"
SERVICE = "/apache.rocketmq.v2.MessagingService/"
MiB = 1 << 20
_RMQ = "import sys; from cli.main import main; sys.exit(main(sys.argv[1:]))"
_BANNER = {
    "namesrv": re.compile(r"^NameServer\s+(\S+:\d+)", re.MULTILINE),
    "broker": re.compile(r"^Broker\s.* at (\S+:\d+),", re.MULTILINE),
    "grpc": re.compile(r"^gRPC\s+(\S+:\d+)", re.MULTILINE),
}


# == the broker ===================================================================================
@dataclass(frozen=True, slots=True)
class Node:
    namesrv: str
    broker: str
    grpc: str
    pid: int
    process: subprocess.Popen[str]

    @property
    def grpc_port(self) -> int:
        return int(self.grpc.rsplit(":", 1)[1])

    def memory(self) -> tuple[int, int]:
        """The broker process's resident memory now and at its peak (VmRSS, VmHWM), in bytes."""
        fields = dict(
            line.split(":", 1)
            for line in Path(f"/proc/{self.pid}/status").read_text().splitlines()
            if ":" in line
        )
        return int(fields["VmRSS"].split()[0]) * 1024, int(fields["VmHWM"].split()[0]) * 1024

    def alive(self) -> bool:
        return self.process.poll() is None


@contextlib.contextmanager
def rmq_up(store: Path, *settings: str) -> Iterator[Node]:
    """``rmq up`` on free loopback ports with ``--set`` ``settings``, until the block ends."""
    cmd = [sys.executable, "-c", _RMQ, "up", "--store", str(store), "--namesrv-port", "0",
           "--broker-port", "0", "--no-http", "--grpc-port", "0", "--set", "haListenPort=0"]  # fmt: skip
    for setting in settings:
        cmd += ["--set", setting]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        banner = ""
        while not all(p.search(banner) for p in _BANNER.values()):
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError(f"rmq up exited with {proc.wait()} before it was up")
            banner += line
        found = {k: m.group(1) for k, p in _BANNER.items() if (m := p.search(banner))}
        threading.Thread(target=proc.stdout.read, daemon=True).start()  # never let the pipe fill
        yield Node(found["namesrv"], found["broker"], found["grpc"], proc.pid, proc)
    finally:
        proc.terminate()
        proc.wait(30)


# == the normal client =============================================================================
@dataclass
class NormalClient:
    """Sends and route lookups over remoting and gRPC, in a thread, until stopped."""

    node: Node
    timeout: float = 10.0
    credentials: Credentials | None = None  # signs every call, for a broker with ACL on
    latencies: dict[str, list[float]] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> NormalClient:
        self._thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        assert self._thread is not None
        self._thread.join(4 * self.timeout)

    def _record(self, name: str, began: float) -> None:
        self.latencies.setdefault(name, []).append(time.perf_counter() - began)

    async def _run(self) -> None:
        channel = grpc.insecure_channel(self.node.grpc)
        query_route = channel.unary_unary(
            SERVICE + "QueryRoute",
            request_serializer=PB.QueryRouteRequest.SerializeToString,
            response_deserializer=PB.QueryRouteResponse.FromString,
        )
        api = _admin(self.timeout, self.credentials)
        producer = Producer(
            "attack-normal-pg", self.node.namesrv, send_timeout=self.timeout, credentials=self.credentials
        )
        try:
            async with producer:
                while not self._stop.is_set():
                    await self._step("remoting_send", producer.send(Message(TOPIC, b"normal")))
                    await self._step("route_lookup", api.topic_route([self.node.namesrv], TOPIC))
                    began = time.perf_counter()
                    try:
                        request = PB.QueryRouteRequest(topic=PB.Resource(name=TOPIC))
                        answer = await asyncio.to_thread(
                            query_route, request, metadata=self._metadata(), timeout=self.timeout
                        )
                        if answer.status.code != Code.OK:
                            raise RuntimeError(f"QueryRoute answered {answer.status}")
                        self._record("grpc_query_route", began)
                    except Exception as exc:
                        self.failures.append(f"grpc_query_route: {exc!r:.300}")
                    await asyncio.sleep(0.02)
        finally:
            await api.client.close()
            channel.close()

    def _metadata(self) -> tuple[tuple[str, str], ...]:
        plain = (("x-mq-client-id", "normal-client@attack"), ("x-mq-language", "PYTHON"))
        if self.credentials is None:
            return plain
        now = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        return (*plain, (GRPC_DATE_TIME, now), ("authorization", grpc_authorization(self.credentials, now)))

    async def _step(self, name: str, work: object) -> None:
        began = time.perf_counter()
        try:
            await asyncio.wait_for(work, self.timeout)  # type: ignore[arg-type]
            self._record(name, began)
        except Exception as exc:
            self.failures.append(f"{name}: {exc!r:.300}")

    def p99(self, name: str) -> float:
        values = sorted(self.latencies.get(name, []))
        return values[min(len(values) - 1, int(len(values) * 0.99))] if values else float("nan")

    def median(self, name: str) -> float:
        return statistics.median(self.latencies.get(name, [float("nan")]))


# == raw HTTP/2 =====================================================================================
def request_headers(method: str) -> list[tuple[bytes, bytes]]:
    """A gRPC request's headers, pseudo-headers first as RFC 9113 asks."""
    return [
        (b":method", b"POST"),
        (b":scheme", b"http"),
        (b":path", (SERVICE + method).encode()),
        (b":authority", b"attack"),
        (b"content-type", b"application/grpc"),
        (b"te", b"trailers"),
        (b"x-mq-client-id", b"attacker@attack"),
    ]


def request_block(method: str, *extra: tuple[bytes, bytes]) -> bytes:
    return b"".join(literal(*h) for h in (*request_headers(method), *extra))


def grpc_message(body: bytes, compressed: bool = False) -> bytes:
    return bytes([1 if compressed else 0]) + len(body).to_bytes(4, "big") + body


@dataclass
class Outcome:
    """What the broker did to an attacking connection."""

    sent: int = 0  # bytes the attacker got into the broker's socket
    received: int = 0
    goaway: int | None = None  # the GOAWAY's error code, when the attacker read one
    closed: bool = False  # the broker closed the connection
    seconds: float = 0.0


class Attacker:
    """One raw connection: sends as fast as the broker takes it; reads (and discards) the answers
    only when asked to, watching for a GOAWAY."""

    def __init__(self, node: Node, *, read: bool, settings: bytes = b"") -> None:
        self.sock = socket.create_connection(("127.0.0.1", node.grpc_port), timeout=5)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
        self.sock.setblocking(False)
        self.read = read
        self.outcome = Outcome()
        self.tail = b""  # the answers' bytes not yet parsed into frames
        self.pending = PREFACE + frame(SETTINGS, 0, 0, settings)

    def close(self) -> None:
        self.sock.close()

    def _drain(self) -> None:
        while True:
            try:
                data = self.sock.recv(1 << 16)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                self.outcome.closed = True
                return
            if not data:
                self.outcome.closed = True
                return
            self.outcome.received += len(data)
            self._frames(data)

    def _frames(self, data: bytes) -> None:
        buffer = self.tail + data
        pos = 0
        while len(buffer) - pos >= 9:
            length = int.from_bytes(buffer[pos : pos + 3], "big")
            if len(buffer) - pos - 9 < length:
                break
            if buffer[pos + 3] == GOAWAY:
                self.outcome.goaway = int.from_bytes(buffer[pos + 13 : pos + 17], "big")
            pos += 9 + length
        self.tail = buffer[pos:]

    def send_for(self, seconds: float, next_chunk: Callable[[], bytes]) -> Outcome:
        """Sends ``next_chunk()`` after ``next_chunk()`` for ``seconds``, or until the broker closes."""
        began = time.perf_counter()
        deadline = began + seconds
        data = self.pending
        while time.perf_counter() < deadline and not self.outcome.closed:
            if not data:
                data = next_chunk()
            try:
                sent = self.sock.send(data)
                self.outcome.sent += sent
                data = data[sent:]
            except (BlockingIOError, InterruptedError):
                time.sleep(0.002)  # the broker reads no more: wait (and read, if the attacker does)
            except OSError:
                self.outcome.closed = True
            if self.read:
                self._drain()
        self.outcome.seconds = time.perf_counter() - began
        return self.outcome

    def finish(self, linger: float = 1.0) -> Outcome:
        """Reads what is left for up to ``linger`` seconds (a GOAWAY, the close)."""
        deadline = time.perf_counter() + linger
        while time.perf_counter() < deadline and not self.outcome.closed:
            self._drain()
            time.sleep(0.01)
        return self.outcome


def repeat(data: bytes, size: int = 1 << 16) -> Callable[[], bytes]:
    chunk = data * max(1, size // len(data))
    return lambda: chunk


class Streams:
    """New stream ids, one per call, each a fresh chunk of frames."""

    def __init__(self, make: Callable[[int], bytes], per_chunk: int = 64) -> None:
        self.next_id = 1
        self.make = make
        self.per_chunk = per_chunk

    def __call__(self) -> bytes:
        parts = []
        for _ in range(self.per_chunk):
            parts.append(self.make(self.next_id))
            self.next_id += 2
        return b"".join(parts)


# == the attacks ====================================================================================
# Each: (connection settings, whether the attacker reads, what it sends over and over).
def _query_route(stream_id: int) -> bytes:
    body = PB.QueryRouteRequest(topic=PB.Resource(name=TOPIC)).SerializeToString()
    return frame(HEADERS, END_HEADERS, stream_id, request_block("QueryRoute")) + frame(
        DATA, END_STREAM, stream_id, grpc_message(body)
    )


def _rapid_reset(stream_id: int) -> bytes:
    return frame(HEADERS, END_HEADERS, stream_id, request_block("QueryRoute")) + frame(
        RST_STREAM, 0, stream_id, (8).to_bytes(4, "big")
    )


def _open_stream(stream_id: int) -> bytes:
    return frame(HEADERS, END_HEADERS, stream_id, request_block("SendMessage"))


def _big_headers(stream_id: int) -> bytes:
    """A header list of about 13 KiB (within the broker's 16 KiB) on a stream that never ends."""
    block = request_block("SendMessage") + b"".join(literal(b"x-pad-%d" % i, b"v" * 400) for i in range(30))
    return frame(HEADERS, END_HEADERS, stream_id, block)


class _Amplified:
    """A 4 KiB dynamic-table entry once, then header blocks that reference it ``refs`` times each:
    one byte on the wire for 4 KiB of header list each time. The entry may be the ``authorization``
    header a broker with ACL on reads before anything else."""

    def __init__(self, refs: int, name: bytes = b"x-large") -> None:
        self.refs = refs
        self.name = name
        self.sent_entry = False

    def __call__(self, stream_id: int) -> bytes:
        block = request_block("SendMessage")
        if not self.sent_entry:
            self.sent_entry = True
            entry = encode_int(len(self.name), 7) + self.name + encode_int(4000, 7) + b"a" * 4000
            block = b"\x40" + entry + block
        return frame(HEADERS, END_HEADERS, stream_id, block + bytes([0x80 | 62]) * self.refs)


class _UniqueHuffman:
    """Every call new Huffman-coded headers: what a decoding cache would remember."""

    def __init__(self) -> None:
        self.encoder = hpack.Encoder()
        self.encoder.header_table_size = 0
        self.count = 0

    def __call__(self, stream_id: int) -> bytes:
        self.count += 1
        fields = [
            (f"x-unique-{self.count}-{i}".encode(), f"{self.count:012d}{i:04d}".encode() * 16)
            for i in range(8)
        ]
        block = self.encoder.encode([*request_headers("QueryRoute"), *fields], huffman=True)
        body = PB.QueryRouteRequest(topic=PB.Resource(name=TOPIC)).SerializeToString()
        return frame(HEADERS, END_HEADERS, stream_id, block) + frame(
            DATA, END_STREAM, stream_id, grpc_message(body)
        )


def _telemetry_commands() -> bytes:
    settings = PB.Settings(client_type=1)
    command = grpc_message(PB.TelemetryCommand(settings=settings).SerializeToString())
    return frame(DATA, 0, 1, command * 64)


def _gzip_bomb() -> bytes:
    """About 64 KiB of gzip that inflates to 64 MiB (4 times the message limit)."""
    return gzip.compress(b"\0" * (64 * MiB), 9)


def _deflate_bomb() -> bytes:
    return zlib.compress(b"\0" * (64 * MiB), 9)


def _bomb(wbits_name: bytes, body: bytes, method: str) -> Callable[[int], bytes]:
    def call(stream_id: int) -> bytes:
        headers = request_block(method, (b"grpc-encoding", wbits_name))
        message = grpc_message(body, compressed=True)
        data = b"".join(
            frame(DATA, 0, stream_id, message[at : at + 16384]) for at in range(0, len(message), 16384)
        )
        return frame(HEADERS, END_HEADERS, stream_id, headers) + data + frame(DATA, END_STREAM, stream_id)

    return call


def _window_zero() -> bytes:
    return INITIAL_WINDOW_SIZE.to_bytes(2, "big") + (0).to_bytes(4, "big")


class _Lazy:
    """A bomb made once per process (compressing 64 MiB takes a moment)."""

    def __init__(self, make: Callable[[], bytes]) -> None:
        self.make = make
        self.made: bytes | None = None

    def value(self) -> bytes:
        if self.made is None:
            self.made = self.make()
        return self.made


_GZIP_BOMB = _Lazy(_gzip_bomb)
_DEFLATE_BOMB = _Lazy(_deflate_bomb)


@dataclass(frozen=True)
class Attack:
    name: str
    read: bool
    chunks: Callable[[], Callable[[], bytes]]  # a fresh sender of chunks per run
    settings: bytes = b""
    first: Callable[[], bytes] | None = None  # sent once before the chunks
    calm_down: bool = False  # the broker must end it with GOAWAY(ENHANCE_YOUR_CALM) (when read)


ATTACKS: tuple[Attack, ...] = (
    Attack("ping_flood_unread", False, lambda: repeat(frame(PING, 0, 0, b"p" * 8))),
    Attack("ping_flood_read", True, lambda: repeat(frame(PING, 0, 0, b"p" * 8)), calm_down=True),
    Attack("settings_flood_unread", False, lambda: repeat(frame(SETTINGS, 0, 0, b"\0\x03\0\0\0\x10"))),
    Attack("settings_flood_read", True, lambda: repeat(frame(SETTINGS, 0, 0)), calm_down=True),
    Attack(
        "window_update_flood", True, lambda: repeat(frame(WINDOW_UPDATE, 0, 0, b"\0\0\0\1")), calm_down=True
    ),
    Attack(
        "rst_stream_flood",  # on a stream long reset
        True,
        lambda: repeat(frame(RST_STREAM, 0, 1, b"\0\0\0\x08")),
        first=lambda: frame(HEADERS, END_HEADERS, 1, request_block("SendMessage")),
        calm_down=True,
    ),
    Attack("priority_flood", True, lambda: repeat(frame(PRIORITY, 0, 3, b"\0\0\0\0\x10")), calm_down=True),
    Attack("unknown_frame_flood", True, lambda: repeat(frame(0x42, 0, 0, b"")), calm_down=True),
    Attack(
        "empty_continuation_flood",
        True,
        lambda: repeat(frame(CONTINUATION, 0, 1, b"")),
        first=lambda: frame(HEADERS, 0, 1, request_block("SendMessage")),
        calm_down=True,
    ),
    Attack(
        "empty_data_flood",
        True,
        lambda: repeat(frame(DATA, 0, 1, b"")),
        first=lambda: frame(HEADERS, END_HEADERS, 1, request_block("SendMessage")),
        calm_down=True,
    ),
    Attack(
        "endless_continuation",
        True,
        lambda: repeat(frame(CONTINUATION, 0, 1, literal(b"x-more", b"m" * 1000))),
        first=lambda: frame(HEADERS, 0, 1, request_block("SendMessage")),
    ),
    Attack(
        "telemetry_unread",
        False,
        lambda: repeat(_telemetry_commands()),
        first=lambda: frame(HEADERS, END_HEADERS, 1, request_block("Telemetry")),
    ),
    Attack(
        "telemetry_window_zero",
        True,
        lambda: repeat(_telemetry_commands()),
        settings=_window_zero(),
        first=lambda: frame(HEADERS, END_HEADERS, 1, request_block("Telemetry")),
    ),
    Attack("query_route_pipelined", True, lambda: Streams(_query_route)),
    Attack("query_route_pipelined_unread", False, lambda: Streams(_query_route)),
    Attack("rapid_reset", True, lambda: Streams(_rapid_reset)),
    Attack("streams_left_open", True, lambda: Streams(_open_stream)),
    Attack("large_header_lists", True, lambda: Streams(_big_headers, per_chunk=4)),
    Attack("hpack_amplification", True, lambda: Streams(_Amplified(2), per_chunk=16)),
    Attack("hpack_amplification_over_the_limit", True, lambda: Streams(_Amplified(4000), per_chunk=4)),
    Attack("unique_huffman_headers", True, lambda: Streams(_UniqueHuffman(), per_chunk=8)),
    Attack(
        "gzip_bomb", True, lambda: Streams(_bomb(b"gzip", _GZIP_BOMB.value(), "SendMessage"), per_chunk=1)
    ),
    Attack(
        "deflate_bomb_on_a_stream",
        True,
        lambda: Streams(_bomb(b"deflate", _DEFLATE_BOMB.value(), "Telemetry"), per_chunk=1),
    ),
)


# What a broker with ACL on is sent before it can tell who is calling: header lists, compressed
HEADER_ATTACKS: tuple[Attack, ...] = (
    *(
        a
        for a in ATTACKS
        if a.name in ("large_header_lists", "unique_huffman_headers", "hpack_amplification")
    ),
    Attack(
        "hpack_amplified_authorization", True, lambda: Streams(_Amplified(2, b"authorization"), per_chunk=16)
    ),
    Attack(
        "hpack_amplified_authorization_over_the_limit",
        True,
        lambda: Streams(_Amplified(4000, b"authorization"), per_chunk=4),
    ),
)


def run_attack(node: Node, attack: Attack, seconds: float) -> Outcome:
    attacker = Attacker(node, read=attack.read, settings=attack.settings)
    try:
        if attack.first is not None:
            attacker.pending += attack.first()
        attacker.send_for(seconds, attack.chunks())
        return attacker.finish() if attack.read else attacker.outcome
    finally:
        attacker.close()


def _admin(timeout: float, credentials: Credentials | None) -> AdminApi:
    client = RemotingClient()
    if credentials is not None:
        secure(client, ClientSecurity(credentials, None))
    return AdminApi(client, timeout=timeout)


def prepare(node: Node, credentials: Credentials | None = None) -> None:
    """Creates the topic the normal client uses and waits until the NameServer routes it."""

    async def go() -> None:
        api = _admin(10.0, credentials)
        try:
            await api.create_topic(
                node.broker, TopicConfig(topicName=TOPIC, readQueueNums=4, writeQueueNums=4)
            )
            deadline = time.monotonic() + 30
            while TOPIC not in await api.topic_list([node.namesrv]):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the NameServer does not route {TOPIC}")
                await asyncio.sleep(0.2)
        finally:
            await api.client.close()

    asyncio.run(go())
