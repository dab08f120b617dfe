"""Random extFields for SEND_MESSAGE_V2 and PULL_MESSAGE: error answers only, and the broker keeps serving."""

from __future__ import annotations

import asyncio
import struct
import threading
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.client.remoting_client import RemotingClient
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.message import BatchItem, decode_record, encode_batch
from broker.protocol.properties import decode_properties, encode_properties
from broker.protocol.remoting import RemotingCommand, make_request
from broker.server.broker import Broker
from tests.broker.conftest import broker_config, small_store

T = TypeVar("T")
SEND_KEYS = [*"abcdefghijklmn", "bname", "ns"]
PULL_KEYS = [
    "consumerGroup", "topic", "queueId", "queueOffset", "maxMsgNums", "sysFlag", "commitOffset",
    "suspendTimeoutMillis", "subscription", "subVersion", "expressionType", "maxMsgBytes",
]  # fmt: skip
values = st.one_of(
    st.text(max_size=20),
    st.integers(-(2**64), 2**64).map(str),
    st.sampled_from([2**31, -(2**31) - 1, 2**63, -(2**63) - 1]).map(str),
    st.sampled_from(
        ["", "0", "-1", "true", "Fz", "TBW102", "%RETRY%x", "*", "A || B", "SQL92", "2147483648"]
    ),
)
KNOWN_CODES = {int(c) for c in ResponseCode}


class LiveBroker:
    """A broker on its own event-loop thread, so hypothesis can drive it from plain test functions."""

    def __init__(self, store: Path) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.broker = Broker(broker_config(), small_store(store))
        self.run(self.broker.start())
        self.client = RemotingClient()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(30)

    def invoke(self, code: int, ext: dict[str, str], body: bytes | None = None) -> RemotingCommand:
        request = make_request(code, None, body=body, ext_fields=ext)
        return self.run(self.client.invoke(self.broker.address, request, 20))

    def close(self) -> None:
        self.run(self.client.close())
        self.run(self.broker.stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveBroker]:
    live = LiveBroker(tmp_path_factory.mktemp("fuzz"))
    ok = live.invoke(
        RequestCode.SEND_MESSAGE_V2,
        {"a": "PG", "b": "Fz", "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "0", "h": "0"},
        b"seed",
    )
    assert ok.code == ResponseCode.SUCCESS
    yield live
    live.close()


def check_still_serving(live: LiveBroker) -> None:
    ext = dict(
        consumerGroup="CG", topic="Fz", queueId="0", queueOffset="0", maxMsgNums="1", sysFlag="4",
        commitOffset="0", suspendTimeoutMillis="0", subVersion="0", subscription="*",
    )  # fmt: skip
    assert live.invoke(RequestCode.PULL_MESSAGE, ext).code == ResponseCode.SUCCESS


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ext=st.dictionaries(st.sampled_from(SEND_KEYS), values, max_size=12), body=st.binary(max_size=64))
def test_fuzzed_send_headers(live: LiveBroker, ext: dict[str, str], body: bytes) -> None:
    response = live.invoke(RequestCode.SEND_MESSAGE_V2, ext, body)
    assert response.code in KNOWN_CODES and response.code != ResponseCode.SYSTEM_ERROR, response.remark
    if response.code != ResponseCode.SUCCESS:
        assert response.remark


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    ext=st.dictionaries(st.sampled_from(PULL_KEYS), values, max_size=12),
    suspend=st.integers(0, 50).map(str),
)
def test_fuzzed_pull_headers(live: LiveBroker, ext: dict[str, str], suspend: str) -> None:
    ext["suspendTimeoutMillis"] = suspend
    response = live.invoke(RequestCode.PULL_MESSAGE, ext)
    assert response.code in KNOWN_CODES and response.code != ResponseCode.SYSTEM_ERROR, response.remark
    if response.code != ResponseCode.SUCCESS:
        assert response.remark


def test_broker_serves_after_fuzzing(live: LiveBroker) -> None:
    check_still_serving(live)


PROPERTY_NAMES = st.sampled_from(["TAGS", "KEYS", "UNIQ_KEY", "CLUSTER", "MSG_REGION", "TRACE_ON", "a", "bb"])
SEGMENTS = st.one_of(
    st.tuples(PROPERTY_NAMES, st.text("xy\x01é", max_size=3)).map(lambda p: f"{p[0]}\x01{p[1]}"),
    st.sampled_from(["", "q", "\x01v", "k\x01"]),
)
PROPERTY_TEXTS = st.one_of(
    st.dictionaries(PROPERTY_NAMES, st.text("xyz\x01é", min_size=1, max_size=3)).map(encode_properties),
    st.tuples(st.lists(SEGMENTS, max_size=5), st.booleans()).map(
        lambda t: "\x02".join(t[0]) + ("\x02" if t[1] else "")
    ),
)


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(texts=st.lists(PROPERTY_TEXTS, min_size=1, max_size=4))
def test_stored_properties_are_the_senders_map_plus_the_brokers_in_canonical_form(
    live: LiveBroker, texts: list[str]
) -> None:
    """Whatever form the sender's properties take (repeated names, empty or broken segments, no final
    separator), the record holds the map RocketMQ's parser reads from them plus the broker's own
    properties, encoded canonically."""
    body = encode_batch([BatchItem(0, b"p", text) for text in texts])
    ext = dict(a="PG", b="Props", c="TBW102", d="1", e="0", f="0", g="0", h="0", m="true")
    response = live.invoke(RequestCode.SEND_BATCH_MESSAGE, ext, body)
    assert response.code == ResponseCode.SUCCESS, response.remark
    first = int(response.ext_fields["queueOffset"])
    stored = live.broker.store.get_messages("Props", 0, first, len(texts)).records
    assert len(stored) == len(texts)
    for text, raw in zip(texts, stored, strict=True):
        expected = decode_properties(text)
        uniq = decode_record(raw).uniq_key
        assert uniq
        expected.setdefault("UNIQ_KEY", uniq)  # the broker makes one where the sender sent none
        expected["CLUSTER"] = "DefaultCluster"
        expected.setdefault("MSG_REGION", "DefaultRegion")
        expected.setdefault("TRACE_ON", "true")
        encoded = encode_properties(expected).encode()
        assert raw.endswith(struct.pack(">h", len(encoded)) + encoded), (text, raw[-len(encoded) - 2 :])
