"""mqadmin commands (placeholder)."""

from __future__ import annotations

from cli.mqadmin_args import Command

COMMANDS: tuple[Command, ...] = ()
