"""Shell completion: the checked-in scripts match the command tree, they complete, and names come from
the cluster."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import Result

from cli.completion import Shell
from cli.completion_gen import FILES, render
from tests.cli.online.conftest import TOPIC, Cluster

Rmq = Callable[..., Result]
COMPLETIONS = Path(__file__).resolve().parents[3] / "completions"


@pytest.mark.parametrize("shell", list(Shell))
def test_checked_in_scripts_are_current(shell: Shell) -> None:
    stored = (COMPLETIONS / FILES[shell]).read_text(encoding="utf-8")
    assert stored == render(shell), "completions/ is stale: run `make completions`"


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_bash_script_completes_commands_options_and_choices() -> None:
    script = f"""
        source {COMPLETIONS / FILES[Shell.BASH]}
        t() {{
            COMP_WORDS=("$@"); COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))
            __rmq_complete; echo "${{COMPREPLY[*]}}"
        }}
        t rmq gro
        t rmq topic ""
        t rmq topic create -n x --cl
        t rmq group lag g -o ""
        t rmq broker config ""
    """
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == [
        "group",
        "create delete describe list queue route status update",
        "--cluster",
        "table json text",
        "get set",
    ]


def test_show_and_install(rmq: Rmq, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shown = rmq("completion", "show", "fish")
    assert shown.exit_code == 0 and shown.stdout == render(Shell.FISH)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.setenv("SHELL", "/bin/bash")
    installed = rmq("completion", "install")
    target = tmp_path / ".local/share/bash-completion/completions/rmq"
    assert installed.exit_code == 0 and str(target) in installed.stdout
    assert target.read_text() == render(Shell.BASH)
    monkeypatch.setenv("SHELL", "/bin/tcsh")
    assert rmq("completion", "show").exit_code == 2


def test_names_come_from_the_active_cluster(
    cluster: Cluster, rmq: Rmq, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NAMESRV_ADDR", cluster.namesrv)
    topics = rmq("__complete-names", "topics").stdout.split()
    assert TOPIC in topics and "TBW102" not in topics
    assert "orders-cg" in rmq("__complete-names", "groups").stdout.split()
    monkeypatch.setenv("NAMESRV_ADDR", "127.0.0.1:1")
    quiet = rmq("__complete-names", "topics")
    assert (quiet.exit_code, quiet.stdout, quiet.stderr) == (0, "", "")
