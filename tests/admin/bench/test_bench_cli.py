"""``rmq bench`` end to end against --embedded (about a second per phase); no timing asserts."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from cli.main import app

RUN_KEYS = {"seconds", "messages", "bytes", "requests", "errors", "msgsPerSec", "mbPerSec", "latencyMs"}
LATENCY_KEYS = {"p50", "p99", "p999", "max"}
SUMMARY_KEYS = {
    "mode", "target", "topic", "queues", "connections", "workers", "size", "batch", "flush", "embedded",
    "client", "broker", "intervals", "sdk", "baseline", "ratio", "sdkRatio", "firstError",
}  # fmt: skip


def rmq(*args: object) -> Result:
    return CliRunner().invoke(app, [str(a) for a in args])


def summary(result: Result) -> dict[str, Any]:
    assert result.exit_code == 0, result.stderr
    doc: dict[str, Any] = json.loads(result.stdout)
    assert set(doc) == SUMMARY_KEYS
    for run in (doc["broker"], doc["baseline"], *([doc["sdk"]] if doc["sdk"] is not None else [])):
        assert set(run) == RUN_KEYS
        assert set(run["latencyMs"]) == LATENCY_KEYS
    assert doc["firstError"] is None
    return doc


def test_produce_embedded_sync_flush_batch() -> None:
    result = rmq("bench", "produce", "--embedded", "--duration", 1, "--batch", 4, "--size", 100,
                 "--flush", "sync", "--connections", 2, "--inflight", 2, "-o", "json")  # fmt: skip
    doc = summary(result)
    assert (doc["mode"], doc["target"], doc["flush"], doc["batch"], doc["workers"]) == (
        "produce", "embedded", "sync", 4, 4
    )  # fmt: skip
    broker = doc["broker"]
    assert broker["messages"] > 0 and broker["messages"] == 4 * broker["requests"]
    assert broker["bytes"] == 100 * broker["messages"]
    assert doc["baseline"]["messages"] > 0 and doc["ratio"] > 0
    assert (doc["client"], doc["sdk"], doc["sdkRatio"]) == ("remoting", None, None)
    assert "broker" in result.stderr and "baseline" in result.stderr  # the live lines


@pytest.mark.parametrize("batch", [1, 8])
def test_produce_both_clients_reports_sdk_ratio(batch: int) -> None:
    result = rmq("bench", "produce", "--embedded", "--duration", 1, "--client", "both", "--batch", batch,
                 "--size", 64, "--inflight", 4, "-o", "json")  # fmt: skip
    doc = summary(result)
    broker, sdk = doc["broker"], doc["sdk"]
    assert doc["client"] == "both" and broker["messages"] > 0 and sdk["messages"] > 0
    assert sdk["messages"] == batch * sdk["requests"] and sdk["bytes"] == 64 * sdk["messages"]
    assert sdk["errors"] == 0 and doc["sdkRatio"] > 0
    assert doc["sdkRatio"] == pytest.approx(sdk["msgsPerSec"] / broker["msgsPerSec"], abs=1e-3)
    assert all(f"{phase} " in result.stderr for phase in ("broker", "sdk", "baseline"))


def test_consume_both_clients_table() -> None:
    result = rmq("bench", "consume", "--embedded", "--duration", 1, "--prefill", 300, "--queues", 2,
                 "--client", "both", "--no-baseline")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert "broker via sdk" in result.stdout and "sdk / low-level" in result.stdout


def test_consume_sdk_only() -> None:
    result = rmq("bench", "consume", "--embedded", "--duration", 1, "--prefill", 300, "--queues", 2,
                 "--pull-batch", 16, "--client", "sdk", "-o", "json")  # fmt: skip
    doc = summary(result)
    assert (doc["client"], doc["sdk"], doc["sdkRatio"]) == ("sdk", None, None)
    assert doc["broker"]["messages"] > 0 and doc["broker"]["bytes"] == 1024 * doc["broker"]["messages"]
    assert doc["baseline"]["messages"] > 0 and doc["ratio"] > 0


def test_produce_synchronous_producers_table() -> None:
    result = rmq("bench", "produce", "--embedded", "--duration", 0.5, "--producers", 3, "--no-baseline")
    assert result.exit_code == 0, result.stderr
    assert "broker / baseline" in result.stdout and "3 in flight" in result.stdout


def test_consume_embedded_prefills_and_pulls() -> None:
    result = rmq("bench", "consume", "--embedded", "--duration", 1, "--prefill", 500, "--pull-batch", 16,
                 "--queues", 2, "-o", "json")  # fmt: skip
    doc = summary(result)
    assert (doc["mode"], doc["queues"], doc["batch"]) == ("consume", 2, 16)
    assert doc["broker"]["messages"] > 0 and doc["broker"]["bytes"] > doc["broker"]["messages"] * 1024
    assert doc["baseline"]["messages"] > 0


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["produce", "--duration", "1"], "exactly one of --namesrv, --broker and --embedded"),
        (["produce", "--embedded", "--broker", "127.0.0.1:1"], "not --broker and --embedded"),
        (["produce", "--embedded", "--flush", "sometimes"], "--flush must be async or sync"),
        (["produce", "--embedded", "--size", "0"], "--size"),
        (["produce", "--embedded", "--batch", "1024", "--size", "8192"], "over the"),
        (["consume", "--embedded", "--pull-batch", "0"], "--pull-batch"),
        (["produce", "--embedded", "--duration", "x"], "--duration"),
        (["produce", "--embedded", "--client", "java"], "--client must be remoting, sdk or both"),
        (["consume", "--broker", "127.0.0.1:1", "--client", "sdk"], "--client sdk needs --namesrv"),
    ],
)
def test_bad_options_exit_2_with_one_line(
    args: list[str], fragment: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NAMESRV_ADDR", raising=False)
    result = rmq("bench", *args)
    assert result.exit_code == 2, (result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("rmq: error: ") and fragment in lines[0], result.stderr


def test_unreachable_broker_exits_3() -> None:
    result = rmq("bench", "produce", "--broker", "127.0.0.1:1", "--duration", 0.5)
    assert result.exit_code == 3, result.stderr
    assert result.stderr.startswith("rmq: error: cannot connect to 127.0.0.1:1")
