"""``mqadmin``: the entry point compatible with Apache RocketMQ's admin tool.

The same option letters (``-n -t -c -b -g …``, and ``--longName`` as commons-cli accepts them) and the
same printed layouts, so scripts written against the Java tool keep working. The commands live in this
package by family (``topic``, ``group``, ``message`` … listed in :mod:`cli.mqadmin.commands`); they
call the one admin service and format with the renderers beside them (``render*``).
``rmq`` offers every command as a hidden camelCase alias (``rmq updateTopic …``) through :func:`run`.

Differences from the Java tool, on purpose: failures print one line on stderr and exit with rmq's
documented codes (usage errors exit 2 after the usage text, as the Java tool prints it, not 1).
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections.abc import Sequence
from typing import TYPE_CHECKING

from cli.errors import ExitCode

if TYPE_CHECKING:
    from cli.mqadmin.args import Command, Opt

PROG = "mqadmin"
HELP_WIDTH = 110


class UsageFailure(Exception):
    """Bad options for a command: the message, then the command's usage text."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageFailure(message)


def _find(name: str) -> Command | None:
    from cli.mqadmin.commands import find

    return find(name)


def _not_exist(name: str) -> int:
    from cli.mqadmin.commands import COMMANDS
    from cli.mqadmin.render import command_list

    sys.stdout.write(f"The sub command {name} not exist.\n")
    sys.stdout.write(command_list([(c.name, c.desc) for c in COMMANDS]))
    return ExitCode.USAGE


def main(argv: Sequence[str] | None = None) -> int:
    """Console script ``mqadmin``: list the commands, print a command's help, or run it."""
    args = sys.argv[1:] if argv is None else list(argv)
    if not args or args in (["help"], ["-h"], ["--help"]):
        from cli.mqadmin.commands import COMMANDS
        from cli.mqadmin.render import command_list

        sys.stdout.write(command_list([(c.name, c.desc) for c in COMMANDS]))
        return ExitCode.OK
    if args[0] == "help":
        command = _find(args[1])
        if command is None:
            return _not_exist(args[1])
        sys.stdout.write(usage(command))
        return ExitCode.OK
    return run(args[0], args[1:], prog=PROG)


def run(name: str, args: Sequence[str], prog: str = PROG) -> int:
    """Run mqadmin command ``name`` with its arguments; the exit code."""
    from cli.errors import run as run_guarded

    command = _find(name)
    if command is None:
        return _not_exist(name)
    try:
        values = parse(command, args)
    except UsageFailure as exc:
        sys.stderr.write(f"{exc}\n")
        sys.stdout.write(usage(command))
        return ExitCode.USAGE
    if values.get("help"):
        sys.stdout.write(usage(command))
        return ExitCode.OK
    return run_guarded(lambda: _execute(command, values), prog=prog, debug=lambda: False)


def _execute(command: Command, values: dict[str, str | bool | None]) -> int:
    from cli.connect import connect

    namesrv = values.get("namesrvAddr")
    conn = connect(namesrv if isinstance(namesrv, str) else None)
    try:
        text = conn.run(lambda service: command.run(service, values))
    except KeyboardInterrupt:  # how the `-i` loops end, as rmq's --watch does
        return ExitCode.OK
    sys.stdout.write(text)
    sys.stdout.flush()
    return ExitCode.OK


# -- parsing ----------------------------------------------------------------------------------------
def parse(command: Command, args: Sequence[str]) -> dict[str, str | bool | None]:
    """Option values by long name: the text given, True for a flag, None when absent."""
    parser = _Parser(prog=f"{PROG} {command.name}", add_help=False, allow_abbrev=True)
    for opt in all_options(command):
        names = [f"-{opt.short}"] if opt.short else []
        names.append(f"--{opt.long}")
        if opt.arg:
            parser.add_argument(*names, dest=opt.long, default=None)
        else:
            parser.add_argument(*names, dest=opt.long, action="store_true", default=None)
    namespace, rest = parser.parse_known_args(list(args))
    if rest:
        raise UsageFailure(f"Unrecognized option: {rest[0]}")
    values: dict[str, str | bool | None] = vars(namespace)
    if values.get("help"):
        return values
    missing = [o.key for o in command.options if o.required and values.get(o.long) is None]
    if missing:
        plural = "s" if len(missing) > 1 else ""
        raise UsageFailure(f"Missing required option{plural}: {', '.join(missing)}")
    group = [o for o in command.options if o.long in command.one_of]
    if group and all(values.get(o.long) is None for o in group):
        choices = ", ".join(f"-{o.short} {o.desc}" for o in group)
        raise UsageFailure(f"Missing required option: [{choices}]")
    return values


def all_options(command: Command) -> list[Opt]:
    from cli.mqadmin.args import COMMON_OPTIONS

    return [*COMMON_OPTIONS, *command.options]


# -- help -------------------------------------------------------------------------------------------
def usage(command: Command) -> str:
    """commons-cli's ``HelpFormatter.printHelp(app, options, true)`` at width 110."""
    options = sorted(all_options(command), key=lambda o: o.key.lower())
    pieces: list[str] = []
    group_done = False
    for opt in options:
        if opt.long in command.one_of:
            if not group_done:
                members = [o for o in options if o.long in command.one_of]
                pieces.append("(" + " | ".join(_usage_piece(o) for o in members) + ")")
                group_done = True
            continue
        piece = _usage_piece(opt)
        pieces.append(piece if opt.required else f"[{piece}]")
    head = f"usage: {PROG} {command.name} "
    usage_line = textwrap.fill(
        " ".join(pieces), HELP_WIDTH, initial_indent=head, subsequent_indent=" " * len(head)
    )
    lefts = [
        (f" -{o.short}," if o.short else "    ") + f"--{o.long}" + (" <arg>" if o.arg else "")
        for o in options
    ]
    width = max(len(left) for left in lefts) + 3
    lines = [usage_line]
    for left, opt in zip(lefts, options, strict=True):
        text = textwrap.fill(
            opt.desc, HELP_WIDTH, initial_indent=left.ljust(width), subsequent_indent=" " * width
        )
        lines.append(text)
    return "\n".join(lines) + "\n"


def _usage_piece(opt: Opt) -> str:
    name = f"-{opt.short}" if opt.short else f"--{opt.long}"
    return f"{name} <arg>" if opt.arg else name
