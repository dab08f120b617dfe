"""``mqadmin``: the entry point compatible with Apache RocketMQ's admin tool (commands come later)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from cli.errors import ExitCode

HEADER = "The most commonly used mqadmin commands are:"


def main(argv: Sequence[str] | None = None) -> int:
    """Console script ``mqadmin``: with no command (or ``help``) list the commands, as mqadmin does."""
    args = sys.argv[1:] if argv is None else list(argv)
    if args and args[0] not in ("help", "-h", "--help"):
        sys.stderr.write(f"mqadmin: error: the sub command {args[0]} does not exist\n")
        return ExitCode.USAGE
    sys.stdout.write(HEADER + "\n")
    return ExitCode.OK
