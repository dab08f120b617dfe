"""``rmq profile``: named connection settings in ~/.config/rmq/config.toml (see admin/profiles.py)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cli.connect import OutOpt, YesOpt, confirm, connect
from cli.output import OutputFormat, Section, Table, emit

if TYPE_CHECKING:
    from admin.profiles import ProfileFile

app = typer.Typer(
    help="Named connection profiles: NameServers, output format, timeout.", no_args_is_help=True
)

NameArg = Annotated[str, typer.Argument(metavar="NAME", help="Profile name.", show_default=False)]


def _format(output: OutputFormat | None) -> OutputFormat:
    """``-o``, else RMQ_OUTPUT, else the profile's output, as every command resolves it (from the settings
    as they are before the command changes them); table when they do not resolve, since these commands are
    how a broken profile is repaired."""
    from admin.errors import BadInput

    if output is not None:
        return output
    try:
        return connect(output=output).fmt
    except BadInput:
        return OutputFormat.TABLE


def _emit(content: ProfileFile, fmt: OutputFormat) -> None:
    from admin.profiles import config_path

    data = {
        "path": str(config_path()),
        "current": content.current,
        "profiles": [content.profiles[n] for n in sorted(content.profiles)],
    }
    emit(fmt, data, lambda: _sections(content))


@app.command("create")
def create(
    name: NameArg,
    namesrv: Annotated[
        str | None, typer.Option("-n", "--namesrv", metavar="ADDR[;ADDR]", help="NameServer address(es).")
    ] = None,
    default_output: Annotated[
        OutputFormat | None,
        typer.Option("--default-output", case_sensitive=False, help="Output format it selects."),
    ] = None,
    default_timeout: Annotated[
        float | None, typer.Option("--default-timeout", help="Request timeout in seconds it selects.")
    ] = None,
    access_key: Annotated[
        str | None, typer.Option("--access-key", help="ACL AccessKey every request is signed with.")
    ] = None,
    secret_key_env: Annotated[
        str | None,
        typer.Option("--secret-key-env", metavar="VAR", help="Environment variable holding the SecretKey."),
    ] = None,
    secret_key_file: Annotated[
        Path | None,
        typer.Option("--secret-key-file", metavar="PATH", help="File whose first line is the SecretKey."),
    ] = None,
    tls: Annotated[
        bool | None,
        typer.Option(
            "--tls/--no-tls", show_default=False, help="Connect with TLS (on when a --tls-* file is given)."
        ),
    ] = None,
    tls_ca_file: Annotated[
        Path | None,
        typer.Option(
            "--tls-ca-file", metavar="PATH", help="CA bundle verifying the servers (else system CAs)."
        ),
    ] = None,
    tls_cert_file: Annotated[
        Path | None,
        typer.Option("--tls-cert-file", metavar="PATH", help="Client certificate for mutual TLS."),
    ] = None,
    tls_key_file: Annotated[
        Path | None, typer.Option("--tls-key-file", metavar="PATH", help="Key of --tls-cert-file.")
    ] = None,
    use: Annotated[bool, typer.Option("--use", help="Make it the current profile.")] = False,
    output: OutOpt = None,
) -> None:
    """Create or replace a profile (the first one becomes current).

    The SecretKey is never stored: the profile names the environment variable or file that holds it.
    """
    from admin import profiles

    fmt = _format(output)
    files = {"tls_ca_file": tls_ca_file, "tls_cert_file": tls_cert_file, "tls_key_file": tls_key_file}
    if tls is None and any(files.values()):
        tls = True
    profile = profiles.Profile(
        name,
        namesrv,
        default_output.value if default_output else None,
        default_timeout,
        access_key=access_key,
        secret_key_env=secret_key_env,
        secret_key_file=str(secret_key_file.expanduser().absolute()) if secret_key_file else None,
        tls=tls,
        **{key: str(path.expanduser().absolute()) for key, path in files.items() if path is not None},
    )
    _emit(profiles.create(profiles.config_path(), profile, use), fmt)


@app.command("use")
def use(name: NameArg, output: OutOpt = None) -> None:
    """Make a profile the current one."""
    from admin import profiles

    fmt = _format(output)
    _emit(profiles.use(profiles.config_path(), name), fmt)


@app.command("list")
def list_(output: OutOpt = None) -> None:
    """Profiles and which one is current."""
    from admin import profiles

    fmt = _format(output)
    _emit(profiles.load(profiles.config_path()), fmt)


@app.command("delete")
def delete(name: NameArg, yes: YesOpt = False, output: OutOpt = None) -> None:
    """Delete a profile."""
    from admin import profiles

    fmt = _format(output)
    confirm(f"delete profile {name}", yes)
    _emit(profiles.delete(profiles.config_path(), name), fmt)


def _sections(content: ProfileFile) -> list[Section]:
    return [
        Table(
            ["current", "name", "namesrv", "output", "timeout", "access key", "secret from", "tls"],
            [
                (
                    "*" if n == content.current else "",
                    n,
                    p.namesrv,
                    p.output,
                    p.timeout,
                    p.access_key,
                    f"${p.secret_key_env}" if p.secret_key_env else p.secret_key_file,
                    {True: "on", False: "off"}.get(p.tls) if p.tls is not None else None,
                )
                for n, p in sorted(content.profiles.items())
            ],
        )
    ]
