"""``rmq namesrv``: run a NameServer (no subcommand, as before), or manage its KV configuration and
settings: ``rmq namesrv kv get|put|delete``, ``rmq namesrv config get|set`` (see cli/server_group.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from cli import run
from cli.broker_cmd import change_sections, config_sections
from cli.connect import NamesrvOpt, OutOpt, ProfileOpt, TimeoutOpt, YesOpt, confirm, connect, key_values
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
def kv_get(
    namespace: NamespaceArg,
    key: Annotated[str | None, typer.Argument(metavar="[KEY]", help=r"Key \[default: every key].")] = None,
    namesrv: NamesrvOpt = None,
    profile: ProfileOpt = None,
    timeout: TimeoutOpt = None,
    output: OutOpt = None,
) -> None:
    """One key of a namespace, or all of them."""
    connect(namesrv, profile, timeout, output).show(lambda s: s.namesrv_kv_get(namespace, key), _kv_sections)


@kv_app.command("put")
def kv_put(
    namespace: NamespaceArg,
    key: KeyArg,
    value: Annotated[str, typer.Argument(metavar="VALUE", help="Value.", show_default=False)],
    namesrv: NamesrvOpt = None,
    profile: ProfileOpt = None,
    timeout: TimeoutOpt = None,
    output: OutOpt = None,
) -> None:
    """Create or change a key on every NameServer."""
    conn = connect(namesrv, profile, timeout, output)
    conn.emit(conn.run(lambda s: s.namesrv_kv_put(namespace, key, value)), _kv_change_sections)


@kv_app.command("delete")
def kv_delete(
    namespace: NamespaceArg,
    key: KeyArg,
    yes: YesOpt = False,
    namesrv: NamesrvOpt = None,
    profile: ProfileOpt = None,
    timeout: TimeoutOpt = None,
    output: OutOpt = None,
) -> None:
    """Delete a key from every NameServer."""
    conn = connect(namesrv, profile, timeout, output)
    confirm(f"delete KV config {namespace}/{key}", yes)
    conn.emit(conn.run(lambda s: s.namesrv_kv_delete(namespace, key)), _kv_change_sections)


@config_app.command("get")
def config_get(
    namesrv: NamesrvOpt = None,
    profile: ProfileOpt = None,
    timeout: TimeoutOpt = None,
    output: OutOpt = None,
) -> None:
    """Each NameServer's settings."""
    connect(namesrv, profile, timeout, output).show(lambda s: s.namesrv_config_get(), _configs_sections)


@config_app.command("set")
def config_set(
    values: Annotated[list[str], typer.Argument(metavar="KEY=VALUE...", help="Settings to change.")],
    namesrv: NamesrvOpt = None,
    profile: ProfileOpt = None,
    timeout: TimeoutOpt = None,
    output: OutOpt = None,
) -> None:
    """Change settings on every NameServer."""
    settings = key_values(values, "setting")
    conn = connect(namesrv, profile, timeout, output)
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
