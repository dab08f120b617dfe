"""One place maps failures to exit codes and one stderr line; ``mqadmin`` entry point."""

from __future__ import annotations

import subprocess
import sys

import pytest

import admin.store_tools
from admin.errors import AdminError, BadInput, ConnectFailed, NotFound, OperationFailed, Timeout
from cli import mqadmin
from cli.errors import ExitCode, classify
from cli.main import main


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (NotFound("no such topic"), ExitCode.FAILED),
        (OperationFailed("broker said no"), ExitCode.FAILED),
        (BadInput("bad id"), ExitCode.USAGE),
        (ConnectFailed("10.0.0.1:9876"), ExitCode.CONNECT),
        (Timeout("no answer from 10.0.0.1:9876 in 3000 ms"), ExitCode.TIMEOUT),
        (AdminError("generic"), ExitCode.FAILED),
        (PermissionError(13, "Permission denied", "/store/lock"), ExitCode.FAILED),
        (RuntimeError("bug"), ExitCode.FAILED),
    ],
)
def test_classify(exc: Exception, code: int) -> None:
    got, message = classify(exc)
    assert got == code
    assert "\n" not in message


def test_connect_failure_names_address_and_fix() -> None:
    _code, message = classify(ConnectFailed("10.0.0.1:9876", "connection refused"))
    assert message.startswith("cannot connect to 10.0.0.1:9876: connection refused")
    assert "server is running" in message


def test_unexpected_error_mapped_once(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def explode(path: object) -> None:
        raise RuntimeError("disk on fire\nsecond line")

    monkeypatch.setattr(admin.store_tools, "store_info", explode)
    assert main(["store", "info", "/x"]) == ExitCode.FAILED
    err = capsys.readouterr().err
    assert (
        err
        == "rmq: error: unexpected RuntimeError: disk on fire second line (rerun with --debug for details)\n"
    )
    assert main(["--debug", "store", "info", "/x"]) == ExitCode.FAILED
    err = capsys.readouterr().err
    assert "Traceback" in err and err.splitlines()[-1].startswith("rmq: error: unexpected RuntimeError")


def test_help_and_bare_group(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == ExitCode.OK
    assert "store" in capsys.readouterr().out
    assert main(["store"]) == ExitCode.USAGE  # a group alone is no command: help, then exit 2
    assert "verify" in capsys.readouterr().out


def test_help_imports_stay_light() -> None:
    code = (
        "import sys; from cli.main import main; main(['--help']); "
        "heavy = {'textual', 'grpc', 'pyspark', 'admin.store_tools', 'broker.store.message_store'}; "
        "print(sorted(heavy & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.splitlines()[-1] == "[]"


def test_mqadmin(capsys: pytest.CaptureFixture[str]) -> None:
    assert mqadmin.main([]) == 0
    out = capsys.readouterr().out
    assert out.startswith("The most commonly used mqadmin commands are:\n")
    assert out.endswith("See 'mqadmin help <command>' for more information on a specific command.\n")
    assert mqadmin.main(["updateTopic"]) == ExitCode.USAGE
    captured = capsys.readouterr()
    assert captured.err == "Missing required option: t\n"
    assert captured.out.startswith("usage: mqadmin updateTopic ")
