"""A pull without filters is served from whole lists of ConsumeQueue units; it must answer exactly what
the unit-by-unit reading answers (an accept-all tag filter forces that one)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from broker.store.message_store import GetResult, MessageStore, PutMessage
from tests.broker.store.helpers import open_store


def _same(plain: GetResult, general: GetResult) -> None:
    assert (plain.status, plain.next_begin_offset, plain.min_offset, plain.max_offset) == (
        general.status, general.next_begin_offset, general.min_offset, general.max_offset
    )  # fmt: skip
    assert plain.queue_offsets == general.queue_offsets
    assert plain.sizes == general.sizes
    assert plain.body == general.body
    assert plain.records == general.records


def _fill(store: MessageStore, layout: list[tuple[int, int, int]]) -> None:
    """(topic, queue, body size) per message; batches of one topic/queue land back to back."""
    for i, (topic, queue, size) in enumerate(layout):
        msg = PutMessage(f"T{topic}", queue, bytes([i % 251]) * size, {"TAGS": f"t{i % 3}"})
        assert store.put_messages([msg]).ok


layouts = st.lists(
    st.tuples(st.integers(0, 1), st.integers(0, 1), st.sampled_from([0, 10, 500, 3000, 9000])),
    min_size=10,
    max_size=80,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(layout=layouts, drop_first_file=st.booleans())
@example(layout=[(0, 0, 3000)] * 60, drop_first_file=False)  # one queue over three files
@example(layout=[(0, 0, 3000), (1, 1, 500)] * 30, drop_first_file=True)
def test_plain_reads_answer_what_unit_by_unit_reads_answer(
    layout: list[tuple[int, int, int]], drop_first_file: bool
) -> None:
    with tempfile.TemporaryDirectory() as root:
        store = open_store(Path(root))  # 64 KiB CommitLog files: pulls cross file ends
        try:
            _fill(store, layout)
            if drop_first_file and len(store.commitlog.files.files) > 1:
                store.commitlog.files.delete_first()  # retention, before the queues caught up
            for topic, queue in {(t, q) for t, q, _ in layout}:
                for offset in range(store.max_offset(f"T{topic}", queue) + 1):
                    for count, max_bytes in ((1, None), (7, 4000), (32, None), (32, 20_000)):
                        args = (f"T{topic}", queue, offset, count)
                        plain = store.get_messages(*args, max_bytes=max_bytes)
                        general = store.get_messages(*args, max_bytes=max_bytes, tag_filter=lambda _: True)
                        _same(plain, general)
        finally:
            store.shutdown()
