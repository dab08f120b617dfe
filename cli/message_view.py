"""One message as ``rmq message`` (from the brokers) and ``rmq store`` (from a store folder) show it:
its fields, and its body cut to a preview."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cli.output import Fields, cell, ms_time

if TYPE_CHECKING:
    from broker.protocol.message import MessageRecord

BODY_PREVIEW = 40  # characters of a body in a table cell


def message_fields(m: MessageRecord, *, record: bool = False) -> Fields:
    """Every field of ``m``; ``record`` adds what matters when reading a store's records: the flag,
    sysflag and body CRC."""
    items: list[tuple[str, object]] = [
        ("topic", m.topic),
        ("queue id", m.queue_id),
        ("queue offset", m.queue_offset),
        ("commitlog offset", m.physical_offset),
        ("msg id", m.offset_msg_id),
        ("uniq key", m.uniq_key),
        ("tags", m.tags),
        ("keys", " ".join(m.keys) or None),
        ("born", f"{ms_time(m.born_timestamp)} from {m.born_host}"),
        ("stored", f"{ms_time(m.store_timestamp)} on {m.store_host}"),
    ]
    if record:
        items.append(("flag / sysflag", f"{m.flag} / {m.sys_flag}"))
    items += [("reconsume times", m.reconsume_times), ("size", m.total_size)]
    if record:
        items.append(("body CRC", m.body_crc))
    items += [(f"property {name}", value) for name, value in sorted(m.properties.items())]
    items.append(("body", preview(m.body, 4096)))
    return Fields(items, title="Message")


def preview(body: bytes, width: int = BODY_PREVIEW) -> str:
    """The start of a body as text (undecodable bytes shown as \\ufffd)."""
    text = cell(body[: width * 4].decode("utf-8", "replace"))
    return text if len(text) <= width else text[: width - 1] + "…"
