"""``rmq bench produce|consume``: throughput and latency of a broker, beside a transport-only baseline;
through the low-level client, the SDK, or both (then the SDK's share of the low-level client's rate).

Live figures go to stderr once a second; the summary goes to stdout in the chosen format.
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cli.output import Fields, OutputFormat, OutputOption, Section, Table, emit

if TYPE_CHECKING:
    from admin.bench.runner import BenchOptions, BenchResult, Client, Flush
    from admin.bench.stats import Rates

app = typer.Typer(
    help="Benchmark a broker over the remoting protocol, beside a transport-only baseline.",
    no_args_is_help=True,
)

NamesrvOpt = Annotated[
    str | None,
    typer.Option("--namesrv", "-n", help=r"NameServer address(es), ';'-separated \[default: $NAMESRV_ADDR]."),
]
BrokerOpt = Annotated[
    str | None, typer.Option("--broker", help="Drive this broker directly, skipping routing.")
]
EmbeddedOpt = Annotated[
    bool,
    typer.Option("--embedded", help="Start a NameServer and a broker in this process on a temporary store."),
]
TopicOpt = Annotated[str, typer.Option("--topic", "-t", help="Topic; created when missing.")]
QueuesOpt = Annotated[int, typer.Option("--queues", min=1, max=1024, help="Queues of a topic created here.")]
ConnectionsOpt = Annotated[
    int, typer.Option("--connections", min=1, max=256, help="TCP connections per broker.")
]
InflightOpt = Annotated[
    int, typer.Option("--inflight", min=1, max=1024, help="Requests in flight per connection.")
]
SizeOpt = Annotated[int, typer.Option("--size", min=1, help="Message body size in bytes.")]
DurationOpt = Annotated[float, typer.Option("--duration", min=0.1, help="Seconds to measure, per phase.")]
WarmupOpt = Annotated[float, typer.Option("--warmup", min=0.0, help="Seconds to run before measuring.")]
FlushOpt = Annotated[
    str,
    typer.Option("--flush", help="async or sync: the flushDiskType of --embedded; informational otherwise."),
]
BaselineOpt = Annotated[
    bool, typer.Option("--baseline/--no-baseline", help="Also measure the transport-only baseline.")
]
ClientOpt = Annotated[
    str,
    typer.Option(
        "--client",
        help="remoting (the low-level client), sdk (broker.client), or both back to back (reports sdkRatio).",
    ),
]


_FIRST: list[tuple[str, object, object]] = [  # name, annotation, default
    ("namesrv", NamesrvOpt, None),
    ("broker", BrokerOpt, None),
    ("embedded", EmbeddedOpt, False),
    ("topic", TopicOpt, "BenchmarkTopic"),
    ("queues", QueuesOpt, 8),
    ("connections", ConnectionsOpt, 1),
]
_LAST: list[tuple[str, object, object]] = [
    ("duration", DurationOpt, 10.0),
    ("warmup", WarmupOpt, 0.0),
    ("flush", FlushOpt, "async"),
    ("baseline", BaselineOpt, True),
    ("client", ClientOpt, "remoting"),
    ("output", OutputOption, OutputFormat.TABLE),
]


def _benchmark(inflight: int) -> Callable[[Callable[..., BenchResult]], Callable[..., None]]:
    """``run(opts, …)`` as a benchmark command: the options every benchmark takes come first (up to
    ``--inflight``, whose default is ``inflight``) and last (``--duration`` to ``--output``), around the
    command's own (``--size`` among them); ``run`` gets the common ones as ``opts``, and its result is
    printed."""

    def wrap(run: Callable[..., BenchResult]) -> Callable[..., None]:
        # the runner's types stand in as object: the real ones would import the runner at start-up
        runner_types = {"BenchOptions": object, "BenchResult": object}
        signature = inspect.signature(run, eval_str=True, locals=runner_types)
        own = [
            p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in list(signature.parameters.values())[1:]
        ]
        common = [*_FIRST, ("inflight", InflightOpt, inflight)]
        params = [_keyword(*p) for p in common] + own + [_keyword(*p) for p in _LAST]

        @functools.wraps(run)
        def command(**values: Any) -> None:
            output = values.pop("output")
            opts = _options(**{name: values.pop(name) for name in inspect.signature(_options).parameters})
            result = run(opts, **values)
            emit(output, result, lambda: _sections(result))

        command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in params}
        return command

    return wrap


def _keyword(name: str, annotation: object, default: object) -> inspect.Parameter:
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=default)


@app.command("produce")
@_benchmark(inflight=32)
def produce(
    opts: BenchOptions,
    producers: Annotated[
        int,
        typer.Option(
            "--producers",
            min=0,
            max=4096,
            help="Synchronous producers sharing the connections (overrides --inflight).",
        ),
    ] = 0,
    size: SizeOpt = 1024,
    batch: Annotated[
        int,
        typer.Option("--batch", min=1, max=1024, help="Messages per request (SEND_BATCH_MESSAGE when > 1)."),
    ] = 1,
) -> BenchResult:
    """Send messages as fast as the broker takes them: msg/s, MB/s and latency."""
    from admin.bench.runner import bench_produce

    opts.producers = producers
    opts.batch = batch
    return bench_produce(opts, _live())


@app.command("consume")
@_benchmark(inflight=8)
def consume(
    opts: BenchOptions,
    size: SizeOpt = 1024,
    pull_batch: Annotated[
        int, typer.Option("--pull-batch", min=1, max=1024, help="maxMsgNums of each PULL_MESSAGE.")
    ] = 32,
    prefill: Annotated[
        int, typer.Option("--prefill", min=0, help="Fill the topic to this many messages first.")
    ] = 100_000,
) -> BenchResult:
    """Pull every queue of the topic as fast as the broker serves it: msg/s and MB/s."""
    from admin.bench.runner import bench_consume

    opts.pull_batch = pull_batch
    opts.prefill = prefill
    return bench_consume(opts, _live())


def _options(
    namesrv: str | None, broker: str | None, embedded: bool, topic: str, queues: int, connections: int,
    inflight: int, size: int, duration: float, warmup: float, flush: str, baseline: bool, client: str,
) -> BenchOptions:  # fmt: skip
    from admin.bench.runner import Baseline, BenchOptions

    if not (namesrv or broker or embedded):
        namesrv = os.environ.get("NAMESRV_ADDR") or None
    return BenchOptions(
        topic=topic, namesrv=namesrv, broker=broker, embedded=embedded, queues=queues,
        connections=connections, inflight=inflight, size=size, duration=duration, warmup=warmup,
        flush=_flush(flush), client=_client(client),
        baseline=(Baseline.INLINE if embedded else Baseline.PROCESS) if baseline else Baseline.OFF,
    )  # fmt: skip


def _flush(value: str) -> Flush:
    from admin.bench.runner import Flush
    from admin.errors import BadInput

    try:
        return Flush(value.lower())
    except ValueError:
        raise BadInput(f"--flush must be async or sync, not {value!r}") from None


def _client(value: str) -> Client:
    from admin.bench.runner import Client
    from admin.errors import BadInput

    try:
        return Client(value.lower())
    except ValueError:
        raise BadInput(f"--client must be remoting, sdk or both, not {value!r}") from None


def _live() -> Callable[[str, Rates], None]:
    """One line per second on stderr: the phase, the second, msg/s, MB/s and latency percentiles."""
    seconds: dict[str, int] = {}

    def show(label: str, r: Rates) -> None:
        n = seconds[label] = seconds.get(label, 0) + 1
        lat = r.latency_ms
        errors = f"  errors {r.errors}" if r.errors else ""
        sys.stderr.write(
            f"{label:<8} {n:>4}s {r.msgs_per_sec:>12,.0f} msg/s {r.mb_per_sec:>9,.1f} MB/s  "
            f"p50 {lat.p50:.2f}  p99 {lat.p99:.2f}  p999 {lat.p999:.2f} ms{errors}\n"
        )
        sys.stderr.flush()

    return show


def _sections(r: BenchResult) -> list[Section]:
    runs = [("broker via sdk" if r.client == "sdk" else "broker", r.broker)]
    runs += [("broker via sdk", r.sdk)] if r.sdk is not None else []
    runs += [("baseline", r.baseline)] if r.baseline is not None else []
    settings: list[tuple[str, object]] = [
        ("mode", r.mode),
        ("target", r.target),
        ("client", {"remoting": "low-level", "sdk": "SDK", "both": "low-level, then SDK"}.get(r.client)),
        ("topic", f"{r.topic} ({r.queues} queues)"),
        ("load", f"{r.workers} in flight over {r.connections} connection(s)"),
        ("message", f"{r.size} bytes, {r.batch} per request"),
        ("flush", r.flush + ("" if r.embedded else " (informational)")),
    ]
    rows = [
        [name, f"{x.msgs_per_sec:,.0f}", f"{x.mb_per_sec:,.1f}", x.latency_ms.p50, x.latency_ms.p99,
         x.latency_ms.p999, x.latency_ms.max, x.messages, x.errors]
        for name, x in runs
    ]  # fmt: skip
    summary: list[tuple[str, object]] = [("broker / baseline", r.ratio)]
    if r.sdk is not None:
        summary.append(("sdk / low-level", r.sdk_ratio))
    if r.first_error:
        summary.append(("first error", r.first_error))
    return [
        Fields(settings),
        Table(["run", "msg/s", "MB/s", "p50 ms", "p99 ms", "p999 ms", "max ms", "messages", "errors"], rows),
        Fields(summary),
    ]
