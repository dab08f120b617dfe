"""``rmq namesrv``: run a NameServer (no subcommand, as before), or manage its KV configuration and
settings: ``rmq namesrv kv get|put|delete``, ``rmq namesrv config get|set`` (see cli/server_group.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from cli import run
from cli.broker_cmd import change_sections, config_sections
from cli.connect import (
    Conn,
    YesOpt,
    confirm,
    connected,
    key_values,
)
from cli.output import Section, Table
from cli.server_group import server_group

if TYPE_CHECKING:
    from admin.models import KvChange, KvEntries, ServerConfigs

app = server_group(
    run.namesrv, help="Run a NameServer (no subcommand), or manage its KV config and settings."
)
kv_app = typer.Typer(
    help="KV configuration kept by the NameServers (e.g. ORDER_TOPIC_CONFIG).", no_args_is_help=True
)
config_app = typer.Typer(help="Read or change the NameServers' settings.", no_args_is_help=True)
app.add_typer(kv_app, name="kv")
app.add_typer(config_app, name="config")

NamespaceArg = Annotated[str, typer.Argument(metavar="NAMESPACE", help="KV namespace.", show_default=False)]
KeyArg = Annotated[str, typer.Argument(metavar="KEY", help="Key.", show_default=False)]


@kv_app.command("get")
@connected
def kv_get(
    conn: Conn,
    namespace: NamespaceArg,
    key: Annotated[str | None, typer.Argument(metavar="[KEY]", help=r"Key \[default: every key].")] = None,
) -> None:
    """One key of a namespace, or all of them."""
    conn.show(lambda s: s.namesrv_kv_get(namespace, key), _kv_sections)


@kv_app.command("put")
@connected
def kv_put(
    conn: Conn,
    namespace: NamespaceArg,
    key: KeyArg,
    value: Annotated[str, typer.Argument(metavar="VALUE", help="Value.", show_default=False)],
) -> None:
    """Create or change a key on every NameServer."""
    conn.emit(conn.run(lambda s: s.namesrv_kv_put(namespace, key, value)), _kv_change_sections)


@kv_app.command("delete")
@connected
def kv_delete(
    conn: Conn,
    namespace: NamespaceArg,
    key: KeyArg,
    yes: YesOpt = False,
) -> None:
    """Delete a key from every NameServer."""
    confirm(f"delete KV config {namespace}/{key}", yes)
    conn.emit(conn.run(lambda s: s.namesrv_kv_delete(namespace, key)), _kv_change_sections)


@config_app.command("get")
@connected
def config_get(
    conn: Conn,
) -> None:
    """Each NameServer's settings."""
    conn.show(lambda s: s.namesrv_config_get(), _configs_sections)


@config_app.command("set")
@connected
def config_set(
    conn: Conn,
    values: Annotated[list[str], typer.Argument(metavar="KEY=VALUE...", help="Settings to change.")],
) -> None:
    """Change settings on every NameServer."""
    settings = key_values(values, "setting")
    conn.emit(conn.run(lambda s: s.namesrv_config_set(settings)), change_sections)


# -- layouts for people ---------------------------------------------------------------------------
def _kv_sections(kv: KvEntries) -> list[Section]:
    return [Table(["key", "value"], list(kv.entries.items()), title=f"Namespace {kv.namespace}")]


def _kv_change_sections(c: KvChange) -> list[Section]:
    action = "deleted" if c.value is None else "set"
    return [
        Table(
            ["namespace", "key", "value", "NameServers"],
            [(c.namespace, c.key, c.value, ", ".join(c.namesrvs))],
            title=f"KV config {action}",
        )
    ]


def _configs_sections(c: ServerConfigs) -> list[Section]:
    return [s for server in c.servers for s in config_sections(server)]
