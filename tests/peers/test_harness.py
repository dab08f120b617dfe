"""The peer harness itself, without any broker: install caching, usage errors, dead addresses."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.peers import install, runner

DRIVERS: list[tuple[runner.Client, str]] = [
    ("alions", "alions_producer.js"),
    ("alions", "alions_consumer.js"),
    ("cpp", "cpp_producer.py"),
    ("cpp", "cpp_push_consumer.py"),
    ("cpp", "cpp_pull_consumer.py"),
]
BAD_ARGS: list[tuple[str, list[str]]] = [
    ("no positionals", []),
    ("namesrv without port", ["127.0.0.1", "TopicA"]),
    ("bad timeout", ["127.0.0.1:9876", "TopicA", "--timeout", "soon"]),
    ("unknown option", ["127.0.0.1:9876", "TopicA", "--no-such-option", "1"]),
]


@pytest.fixture(scope="module")
def closed_port() -> int:
    """A loopback port nothing listens on (bound and released; nobody else should grab it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


ENSURES = [install.ensure_ali_ons, install.ensure_cpp_client]


@pytest.mark.parametrize("ensure", ENSURES, ids=["ali-ons", "cpp"])
def test_install_is_cached(ensure: Callable[[], Path], monkeypatch: pytest.MonkeyPatch) -> None:
    first = ensure()
    assert first.exists()

    def no_subprocess(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"a cached install must not run anything: {args!r}")

    monkeypatch.setattr(subprocess, "run", no_subprocess)
    monkeypatch.setattr(subprocess, "Popen", no_subprocess)
    started = time.perf_counter()
    second = ensure()
    assert time.perf_counter() - started < 0.5
    assert second == first


def test_installed_clients_are_the_pinned_versions() -> None:
    modules = install.ensure_ali_ons()
    meta = json.loads((modules / "ali-ons" / "package.json").read_text())
    assert meta["version"] == install.ALI_ONS_VERSION
    python = install.ensure_cpp_client()
    out = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m; print(m.version('rocketmq'))"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == install.CPP_CLIENT_VERSION
    # the peer client must stay out of the project's venv
    with pytest.raises(ImportError):
        __import__("rocketmq.client")


def test_skip_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RMQ_SKIP_PEERS", "1")
    with pytest.raises(pytest.skip.Exception):
        install.ensure_ali_ons()
    with pytest.raises(pytest.skip.Exception):
        install.ensure_cpp_client()


@pytest.mark.parametrize(("client", "script"), DRIVERS, ids=[s for _, s in DRIVERS])
@pytest.mark.parametrize(("why", "args"), BAD_ARGS, ids=[w for w, _ in BAD_ARGS])
def test_usage_error_is_one_line(client: runner.Client, script: str, why: str, args: list[str]) -> None:
    result = runner.run_driver(client, script, args, timeout=20)
    assert result.returncode == 2, result.describe(f"expected exit 2 for {why}")
    assert [e["event"] for e in result.events] == ["usage_error"], result.describe("one usage_error event")
    assert result.events[0]["error"]
    assert not result.stdout_noise
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


@pytest.mark.parametrize("script", ["alions_producer.js", "cpp_producer.py"])
def test_producer_against_closed_port_reports_connection_error(script: str, closed_port: int) -> None:
    client: runner.Client = "alions" if script.endswith(".js") else "cpp"
    args = [f"127.0.0.1:{closed_port}", "TopicA", "--count", "2", "--tags", "TagA", "--timeout", "20"]
    result = runner.run_driver(client, script, args, timeout=20)
    assert result.returncode == 1, result.describe("expected exit 1")
    assert result.elapsed < 15, result.describe("took too long")
    assert [e["index"] for e in result.of("send_error")] == [0, 1]
    assert _connection_refused(result), result.describe("no connection error event")
    summary = result.summary
    assert (summary["sent"], summary["failed"], summary["ok"]) == (0, 2, False)
    assert result.events[-1]["event"] == "summary"
    with pytest.raises(runner.DriverFailed, match="exit code 1"):
        result.check()


@pytest.mark.parametrize("script", ["alions_consumer.js", "cpp_push_consumer.py", "cpp_pull_consumer.py"])
def test_consumer_against_closed_port_reports_connection_error(script: str, closed_port: int) -> None:
    client: runner.Client = "alions" if script.endswith(".js") else "cpp"
    args = [f"127.0.0.1:{closed_port}", "TopicA", "--expect", "1", "--timeout", "4"]
    result = runner.run_driver(client, script, args, timeout=4)
    assert result.returncode == 1, result.describe("expected exit 1")
    assert _connection_refused(result), result.describe("no connection error event")
    assert not result.received
    summary = result.summary
    assert (summary["reason"], summary["ok"]) == ("timeout", False)
    assert any(e.name == "DriverTimeout" for e in result.errors)


def test_failure_message_carries_diagnostics(closed_port: int) -> None:
    result = runner.run_cpp_producer(f"127.0.0.1:{closed_port}", "TopicA", count=1, timeout=20)
    with pytest.raises(runner.DriverFailed) as failure:
        result.check()
    message = str(failure.value)
    assert "cpp_producer.py failed: exit code 1" in message
    assert "ConnectError" in message
    assert "stderr" in message
    assert "client log" in message and "rocketmq-cpp" in message


def test_background_driver_wait_for_and_stop(closed_port: int) -> None:
    with runner.start_alions_consumer(f"127.0.0.1:{closed_port}", "TopicA", timeout=60) as proc:
        ready = proc.wait_for("ready", timeout=20)
        assert ready["client"] == "ali-ons"
        with pytest.raises(runner.DriverTimeout, match="no 'assigned' event"):
            proc.wait_for("assigned", timeout=1)
        result = proc.stop()
    assert result.returncode != 0  # terminated by the runner
    assert any(e.code == "ECONNREFUSED" for e in result.errors)


def _connection_refused(result: runner.DriverResult) -> bool:
    return any(e.code == "ECONNREFUSED" or e.name == "ConnectError" for e in result.errors)
