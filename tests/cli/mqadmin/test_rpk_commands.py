"""The rpk-style commands that reuse the same service: ``message track|resend``, ``dlq resend|export``."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tests.cli.mqadmin.conftest import GROUP, TOPIC, Cluster
from tests.cli.online.conftest import send


def test_message_track_and_resend(rmq_alias: Callable[..., tuple[int, str]], node: Cluster) -> None:
    code, out = rmq_alias("message", "track", node.sent[3].msgId, "-n", node.namesrv, "-o", "json")
    doc = json.loads(out)
    assert code == 0 and doc["message"]["uniqKey"] == node.uniq_keys[3]
    assert [t["group"] for t in doc["tracks"]] == [GROUP]
    code, out = rmq_alias(
        "message",
        "resend",
        node.uniq_keys[3],
        "-t",
        TOPIC,
        "--to",
        "Resent",
        "-n",
        node.namesrv,
        "-o",
        "json",
    )
    assert code == 1  # the target topic does not exist
    code, out = rmq_alias(
        "message", "resend", node.uniq_keys[3], "-t", TOPIC, "-n", node.namesrv, "-o", "json"
    )
    receipt = json.loads(out)
    assert code == 0 and receipt["topic"] == TOPIC and receipt["status"] == "SEND_OK"
    assert receipt["uniqKey"] != node.uniq_keys[3]


def test_dlq_resend_and_export(
    rmq_alias: Callable[..., tuple[int, str]], node: Cluster, tmp_path: Path
) -> None:
    from admin.service import AdminService
    from broker.client.remoting_client import RemotingClient
    from broker.protocol.bodies import TopicConfig

    dlq = f"%DLQ%{GROUP}"

    async def dead_letters() -> None:
        async with AdminService([node.namesrv]) as service:
            await service.api.create_topic(node.broker, TopicConfig(dlq, 1, 1, 6))
        client = RemotingClient()
        try:
            for i in range(3):
                await send(
                    client, node.broker, dlq, f"dead {i}".encode(), 0,
                    DLQ_ORIGIN_TOPIC=TOPIC, RETRY_TOPIC=f"%RETRY%{GROUP}", KEYS=f"dead-{i}",
                )  # fmt: skip
        finally:
            await client.close()

    node.call(dead_letters())
    code, out = rmq_alias(
        "dlq", "resend", GROUP, "--offset", "1", "--dry-run", "-n", node.namesrv, "-o", "json"
    )
    report = json.loads(out)
    assert code == 0 and report["dryRun"] is True
    assert [(m["dlqOffset"], m["topic"], m["newMsgId"]) for m in report["messages"]] == [(1, TOPIC, None)]
    code, _ = rmq_alias("dlq", "resend", GROUP, "-n", node.namesrv)
    assert code == 2  # neither --offset nor --all
    code, out = rmq_alias("dlq", "resend", GROUP, "--all", "--yes", "-n", node.namesrv, "-o", "json")
    resent = json.loads(out)
    assert code == 0 and len(resent["messages"]) == 3 and all(m["error"] is None for m in resent["messages"])
    target = tmp_path / "dlq.jsonl"
    code, _ = rmq_alias("dlq", "export", GROUP, "--file", str(target), "-n", node.namesrv)
    lines = [json.loads(line) for line in target.read_text().splitlines()]
    assert code == 0 and [m["keys"] for m in lines] == ["dead-0", "dead-1", "dead-2"]
    assert lines[0]["topic"] == dlq and lines[0]["properties"]["DLQ_ORIGIN_TOPIC"] == TOPIC
