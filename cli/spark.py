"""``rmq spark``: data pipelines on PySpark (archive, dlq-report, replay). PySpark is imported only when
one of these commands runs, and only if the ``spark`` extra is installed."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from admin.timeparse import parse_time
from cli.connect import Conn, connected
from cli.output import Fields, Table

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

app = typer.Typer(
    help="Data pipelines on PySpark: archive topics, report dead letters, replay.", no_args_is_help=True
)

MasterOpt = Annotated[str, typer.Option("--master", help="Spark master URL.")]
StoreOpt = Annotated[
    Path | None, typer.Option("--store", metavar="PATH", help="Read a store folder instead of the cluster.")
]
BeginOpt = Annotated[str | None, typer.Option("--begin", help="From this store time (ms, ISO 8601, -2h …).")]
EndOpt = Annotated[str | None, typer.Option("--end", help="Until this store time (exclusive).")]


def _say(text: str) -> None:
    typer.echo(f"· {text}", err=True)


@contextmanager
def _session(master: str) -> Iterator[SparkSession]:
    """A session for one command, stopped at its end if the command started it: left to the
    interpreter's exit, Spark's Python workers find their pipes closed and print BrokenPipeError
    tracebacks after a good run.

    Its Python workers are not reused: on stop, Spark closes the sockets of idle reused workers before
    it ends their daemon, and a worker that reads that end in time fails to flush its reply and prints
    a BrokenPipeError traceback (about one stop in ten). A one-shot command loses only the reuse of a
    forked worker between its tasks."""
    from admin.errors import BadInput

    try:
        from pyspark import SparkContext

        from admin.pipelines.session import build_session
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise BadInput(f"PySpark is not installed ({exc}): pip install 'rmqkit[spark]'") from None
    running = SparkContext._active_spark_context  # a caller's (a notebook's, a test's) to leave running
    _say(f"starting Spark ({master})")
    spark = build_session(master, conf={"spark.python.worker.reuse": "false"})
    spark.sparkContext.setLogLevel("OFF")  # a failure is the command's one line, not the JVM's stack traces
    try:
        yield spark
    finally:
        if running is None:
            spark.stop()


# the last "SomeError: message" line of a Python traceback that Spark wraps into its own exception
_CAUSE = re.compile(r"^(?:[\w.]+\.)?(\w*(?:Error|Exception)): (.+)$", re.M)


@contextmanager
def _spark_errors() -> Iterator[None]:
    """Failures of a Spark job as one line: the data source's own message, not Spark's wrapping."""
    from admin.errors import BadInput, OperationFailed
    from admin.pipelines.plan import OptionError

    try:
        yield
    except OptionError as exc:
        raise BadInput(str(exc)) from None
    except Exception as exc:
        if not type(exc).__module__.startswith(("pyspark", "py4j")):
            raise
        causes = [m for m in _CAUSE.findall(str(exc)) if not m[0].startswith(("Py4J", "Analysis"))]
        kind, message = causes[-1] if causes else ("", str(exc).strip().splitlines()[0])
        if kind == "OptionError":
            raise BadInput(message) from None
        raise OperationFailed(message.split(" SQLSTATE:")[0].strip()) from None


def _secure_options(conn: Conn) -> dict[str, str]:
    """Credentials and TLS of the environment or the profile as data source options: where the secret
    is (secretKeyEnv / secretKeyFile), never the secret."""
    import os

    from admin.pipelines.secure import profile_options
    from admin.profiles import config_path, load

    if conn.settings.security is None:
        return {}
    name = conn.settings.profile
    profile = load(config_path()).profiles.get(name) if name else None
    return profile_options(profile, os.environ)


def _read_options(conn: Conn, store: Path | None) -> dict[str, str]:
    if store is not None:
        return {"storePath": str(store)}
    addr = ";".join(conn.settings.namesrv)
    return {"nameServer": addr, "timeout": str(conn.settings.timeout), **_secure_options(conn)}


@app.command(help="Write a topic (or a time range of it) to Parquet, partitioned by date.")
@connected
def archive(
    conn: Conn,
    topic: Annotated[str, typer.Argument(help="Topic to archive.", show_default=False)],
    out: Annotated[Path, typer.Option("--out", help="Parquet folder.", show_default=False)],
    begin: BeginOpt = None,
    end: EndOpt = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace the folder's content.")] = False,
    store: StoreOpt = None,
    master: MasterOpt = "local[*]",
) -> None:
    from admin.pipelines.jobs import archive as run_archive

    options = _read_options(conn, store)
    options["topic"] = topic
    if begin:
        options["startingTimestamp"] = str(parse_time(begin))
    if end:
        options["endingTimestamp"] = str(parse_time(end))
    with _session(master) as spark, _spark_errors():
        result = run_archive(spark, options, str(out), overwrite=overwrite, progress=_say)
    conn.emit(
        result,
        lambda r: [
            Fields(
                [
                    ("written", r.rows),
                    ("in archive", r.total),
                    ("dates", ", ".join(r.dates)),
                    ("path", r.path),
                ]
            )
        ],
    )


@app.command("dlq-report", help="Dead letters by group, origin topic, reconsume times and age.")
@connected
def dlq_report(
    conn: Conn,
    out: Annotated[Path | None, typer.Option("--out", help="Also write the report to this folder.")] = None,
    out_format: Annotated[str, typer.Option("--format", help="parquet or csv (with --out).")] = "parquet",
    store: StoreOpt = None,
    master: MasterOpt = "local[*]",
) -> None:
    from admin.errors import BadInput
    from admin.pipelines.jobs import dlq_report as run_report

    if out_format not in ("parquet", "csv"):
        raise BadInput("--format must be parquet or csv")
    options = _read_options(conn, store)
    with _session(master) as spark, _spark_errors():
        rows = run_report(spark, options, progress=_say)
        if out is not None:
            df = spark.createDataFrame(
                [
                    (r.group, r.origin_topic, r.reconsume_times, r.messages, r.oldest_age_s, r.newest_age_s)
                    for r in rows
                ],
                "group string, originTopic string, reconsumeTimes int, messages long, "
                "oldestAgeSeconds double, newestAgeSeconds double",
            )
            writer = df.coalesce(1).write.mode("overwrite")
            (
                writer.option("header", "true").csv(str(out))
                if out_format == "csv"
                else writer.parquet(str(out))
            )
            _say(f"wrote {out}")
    table = Table(
        ["group", "origin topic", "reconsume times", "messages", "oldest age (s)", "newest age (s)"],
        [
            (
                r.group,
                r.origin_topic,
                r.reconsume_times,
                r.messages,
                round(r.oldest_age_s),
                round(r.newest_age_s),
            )
            for r in rows
        ],
    )
    conn.emit(rows, lambda _: [table])


@app.command(
    help="Send messages from Parquet (archive's output) or a group's DLQ back to a topic. A DLQ replay "
    "commits the group's offsets on its DLQ topic, so the next one sends only newer dead letters."
)
@connected
def replay(
    conn: Conn,
    topic: Annotated[str, typer.Argument(help="Topic to send to.", show_default=False)],
    parquet: Annotated[Path | None, typer.Option("--parquet", help="Parquet folder to replay.")] = None,
    dlq: Annotated[
        str | None, typer.Option("--dlq", metavar="GROUP", help="Replay this group's DLQ.")
    ] = None,
    rate: Annotated[
        float | None, typer.Option("--rate", min=0.1, help="Messages per second at most.")
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Count what would be sent; send nothing.")
    ] = False,
    master: MasterOpt = "local[*]",
) -> None:
    from admin.errors import BadInput
    from admin.pipelines.jobs import dlq_source, mark_replayed
    from admin.pipelines.jobs import replay as run_replay

    if (parquet is None) == (dlq is None):
        raise BadInput("give exactly one of --parquet or --dlq")
    options = _read_options(conn, None)
    with _session(master) as spark, _spark_errors():
        if parquet is not None:
            df, ends = spark.read.parquet(str(parquet)), None
        else:
            assert dlq is not None
            df, ends = dlq_source(spark, options, dlq)
        result = run_replay(spark, df, options, topic, rate=rate, dry_run=dry_run, progress=_say)
        if ends is not None and not dry_run:
            mark_replayed(options, dlq or "", ends)
    conn.emit(result, lambda r: [Fields([("messages", r.rows), ("topic", r.topic), ("dry run", r.dry_run)])])
