"""Recall handles (RocketMQ 5.3's RECALL_MESSAGE / RecallMessage): what a send that parked a message in
the timer answers, and what a recall hands back to cancel it.

base64url of ``v1 <topic> <brokerName> <TIMER_OUT_MS + 1> <UNIQ_KEY>``, the layout upstream uses; the
broker name tells a client which broker to ask.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass

RECALL_VERSION = "v1"
_BASE64URL = re.compile(r"[A-Za-z0-9_-]+={0,2}")


@dataclass(frozen=True, slots=True)
class RecallHandle:
    """What a recall names: the real topic, the broker, TIMER_OUT_MS + 1 and the UNIQ_KEY."""

    topic: str
    broker_name: str
    timestamp: int
    message_id: str

    def encode(self) -> str:
        raw = " ".join((RECALL_VERSION, self.topic, self.broker_name, str(self.timestamp), self.message_id))
        return base64.urlsafe_b64encode(raw.encode()).decode()

    @classmethod
    def decode(cls, text: str) -> RecallHandle:
        """ValueError unless ``text`` is a v1 handle (padding optional, as Java's decoder allows)."""
        if not _BASE64URL.fullmatch(text or ""):
            raise ValueError("the recall handle is not base64url text")
        try:
            raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode()
        except (binascii.Error, UnicodeDecodeError):
            raise ValueError("the recall handle does not decode") from None
        items = raw.split(" ")
        if len(items) < 5 or items[0] != RECALL_VERSION or not items[3].isdigit() or not all(items[1:5]):
            raise ValueError("the recall handle is not a v1 handle")
        return cls(items[1], items[2], int(items[3]), items[4])
