"""``rmq retry``: retry topics (%RETRY%group), where failed messages wait for redelivery."""

from __future__ import annotations

from cli.dlq import special_topic_app

app = special_topic_app("retry", "retry")
