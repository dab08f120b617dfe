"""``rmq metadata``: topics and subscription groups as a file, exported from a cluster or applied to
one (create what is missing, update what differs, never delete): set-up scripted for CI, and the way
to carry a Java cluster's metadata (``mqadmin exportMetadata``) over."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cli.connect import (
    ClusterOpt,
    Conn,
    NamesrvOpt,
    ProfileOpt,
    TargetBrokerOpt,
    TimeoutOpt,
    connect,
    connected,
)
from cli.output import Fields, ProgressBar, Section, Table, cell

if TYPE_CHECKING:
    from admin.models import MetadataPlan

app = typer.Typer(
    help="Topics and groups as a file: export a cluster's, apply one (CI set-up, migration).",
    no_args_is_help=True,
)
_PROGRESS_MIN = 8  # items: fewer finish before a bar helps


@app.command("export")
def export(
    cluster: ClusterOpt = None,
    broker: TargetBrokerOpt = None,
    special: Annotated[bool, typer.Option("--special", help="Also retry and dead-letter topics.")] = False,
    file: Annotated[
        Path | None,
        typer.Option("-f", "--file", metavar="FILE", help="Write here instead of standard output."),
    ] = None,
    namesrv: NamesrvOpt = None,
    profile: ProfileOpt = None,
    timeout: TimeoutOpt = None,
) -> None:
    """Write the topics and groups of a cluster's masters (-c) or of one broker (-b) as JSON."""
    conn = connect(namesrv, profile, timeout)
    doc = conn.run(lambda s: s.metadata_export(cluster, broker, special))
    text = json.dumps(doc, indent=2, sort_keys=False) + "\n"
    if file is None:
        sys.stdout.write(text)
        return
    try:
        file.write_text(text, encoding="utf-8")
    except OSError as exc:
        from admin.errors import BadInput

        raise BadInput(f"{file}: cannot be written: {exc.strerror or exc}") from None
    tables = (doc["topicConfigTable"], doc["subscriptionGroupTable"])
    sys.stderr.write(f"exported {len(tables[0])} topic(s) and {len(tables[1])} group(s) to {file}\n")


@app.command("apply")
@connected
def apply(
    conn: Conn,
    file: Annotated[
        Path,
        typer.Argument(metavar="FILE", help="JSON or .toml: topicConfigTable and subscriptionGroupTable."),
    ],
    cluster: ClusterOpt = None,
    broker: TargetBrokerOpt = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only show what would change.")] = False,
    check: Annotated[
        bool, typer.Option("--check", help="Like --dry-run, and exit 1 when anything would change.")
    ] = False,
    ignore_unknown: Annotated[
        bool,
        typer.Option("--ignore-unknown", help="Skip fields this version does not know (newer exports)."),
    ] = False,
) -> None:
    """Create the topics and groups FILE names that are missing and update those that differ."""
    from admin.errors import OperationFailed
    from admin.metadata_file import load_metadata

    doc = load_metadata(file, ignore_unknown)
    for note in doc.notes:
        sys.stderr.write(f"note: {note}\n")
    with ProgressBar(_PROGRESS_MIN) as bar:
        plan = conn.run(lambda s: s.metadata_apply(doc, cluster, broker, dry_run or check, bar))
    conn.emit(plan, _plan_sections)
    if check and plan.pending:
        raise OperationFailed(f"{plan.pending} topic(s) or group(s) differ from {file}")


def _plan_sections(plan: MetadataPlan) -> list[Section]:
    rows = [
        (
            item.kind,
            item.name,
            item.action.value,
            ", ".join(item.brokers),
            "; ".join(f"{c.field} {_value(c.current)} -> {_value(c.wanted)}" for c in item.changes),
        )
        for item in plan.items
    ]
    verb = "changed" if plan.applied else "to change"
    summary = Fields([(verb, plan.pending), ("unchanged", len(plan.items) - plan.pending)])
    return [Table(("kind", "name", "action", "brokers", "changes"), rows), summary]


def _value(value: object) -> str:
    if isinstance(value, dict):
        return ",".join(f"{k}={cell(v)}" for k, v in value.items()) or "{}"
    return cell(value)
