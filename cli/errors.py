"""Exit codes, and the one place where a failure becomes one line on stderr and an exit code.

Scripts and CI branch on the exit code, people read the line; tracebacks are for bug reports and
appear only with ``--debug``. Commands never print errors or choose exit codes themselves: they
raise (admin errors, typer usage errors) and :func:`run` does the rest.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable
from enum import IntEnum

import typer

from admin.errors import AdminError, BadInput, ConnectFailed, Timeout
from cli.click_api import NoArgsIsHelpError, UsageError


class ExitCode(IntEnum):
    """The documented exit codes of ``rmq`` and ``mqadmin``."""

    OK = 0
    FAILED = 1  # the operation failed: server error, not found, problems found in a store
    USAGE = 2  # bad flags, arguments or input
    CONNECT = 3  # a server could not be reached
    TIMEOUT = 4  # a server did not answer in time


def classify(exc: Exception) -> tuple[int, str]:
    """The exit code and the one-line message for a failure."""
    match exc:
        case ConnectFailed():
            return ExitCode.CONNECT, f"{exc}; check that the server is running and the address is right"
        case Timeout():
            return ExitCode.TIMEOUT, str(exc)
        case BadInput():
            return ExitCode.USAGE, str(exc)
        case AdminError():
            return ExitCode.FAILED, str(exc)
        case UsageError() if exc.ctx is not None:
            return ExitCode.USAGE, f"{exc.format_message()} (see '{exc.ctx.command_path} --help')"
        case typer.TyperException():
            return exc.exit_code, exc.format_message()
        case typer.Abort():
            return ExitCode.FAILED, "aborted"
        case OSError() if exc.strerror:
            where = f": {exc.filename}" if exc.filename else ""
            return ExitCode.FAILED, f"{exc.strerror}{where}"
        case _:
            return ExitCode.FAILED, f"unexpected {type(exc).__name__}: {exc} (rerun with --debug for details)"


def run(invoke: Callable[[], object], *, prog: str, debug: Callable[[], bool]) -> int:
    """Call ``invoke`` (a click ``main`` in non-standalone mode) and return the exit code.

    ``debug`` is asked only after a failure, because the ``--debug`` flag is parsed inside
    ``invoke``.
    """
    try:
        result = invoke()
    except NoArgsIsHelpError as exc:  # a bare group: its help is the answer, but it was no command
        text = exc.format_message()  # empty when rich has printed the help already
        if text:
            sys.stderr.write(text.rstrip("\n") + "\n")
        return ExitCode.USAGE
    except Exception as exc:
        code, message = classify(exc)
        if debug():
            traceback.print_exc()
        sys.stderr.write(f"{prog}: error: {' '.join(message.splitlines())}\n")
        sys.stderr.flush()
        return code
    # non-standalone click returns the code of a typer.Exit, else the command's return value
    return result if isinstance(result, int) else ExitCode.OK
