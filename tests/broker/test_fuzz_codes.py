"""Every request code the broker serves, with random extFields and bodies: each answer is a RocketMQ
response code with a remark naming what is wrong, no handler fails with an unexpected exception, and
the broker keeps serving. Long-polling codes and the one that answers nothing are fuzzed elsewhere."""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.headers import REQUEST_HEADERS
from tests.broker.test_fuzz import KNOWN_CODES, LiveBroker, values

# held until suspendTimeoutMillis / pollTime (tests/broker/test_fuzz.py), or answered by nothing
SKIPPED = {
    RequestCode.PULL_MESSAGE, RequestCode.LITE_PULL_MESSAGE, RequestCode.POP_MESSAGE,
    RequestCode.END_TRANSACTION,
    RequestCode.UPDATE_BROKER_CONFIG,  # could make the broker read-only, which is not a failure
}  # fmt: skip
FIELDS = sorted(
    {f.name for header in REQUEST_HEADERS.values() for f in dataclasses.fields(header)}
    | set("abcdefghijklmn")
)
json_values = st.one_of(
    values, st.integers(-(2**63), 2**63), st.booleans(), st.none(), st.lists(values, max_size=3)
)
bodies = st.one_of(
    st.none(),
    st.binary(max_size=64),
    st.dictionaries(st.sampled_from(FIELDS), json_values, max_size=6).map(lambda d: json.dumps(d).encode()),
)


class Failures(logging.Handler):
    """Handler failures the remoting layer logs (it answers them with SYSTEM_ERROR)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveBroker, Failures]]:
    live = LiveBroker(tmp_path_factory.mktemp("fuzz-codes"))
    failures = Failures()
    logger = logging.getLogger("broker.client.remoting_client")
    logger.addHandler(failures)
    yield live, failures
    logger.removeHandler(failures)
    live.close()


@settings(
    max_examples=500,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data(), ext=st.dictionaries(st.sampled_from(FIELDS), values, max_size=8), body=bodies)
def test_every_code_answers_bad_input_with_a_code_and_a_remark(
    live: tuple[LiveBroker, Failures], data: st.DataObject, ext: dict[str, str], body: bytes | None
) -> None:
    broker, failures = live
    code = data.draw(st.sampled_from(sorted(set(broker.broker.handlers) - SKIPPED)), label="code")
    response = broker.invoke(code, ext, body)
    assert response.code in KNOWN_CODES, (code, response.code, response.remark)
    if response.code != ResponseCode.SUCCESS:
        assert response.remark, (code, response.code)
    failed: list[Any] = [r.getMessage() for r in failures.records]
    assert not failed, (code, ext, body, failed, response.remark)


def test_the_broker_serves_after_fuzzing(live: tuple[LiveBroker, Failures]) -> None:
    broker, _ = live
    assert broker.invoke(RequestCode.GET_BROKER_RUNTIME_INFO, {}).code == ResponseCode.SUCCESS
    assert broker.invoke(RequestCode.GET_ALL_TOPIC_CONFIG, {}).code == ResponseCode.SUCCESS
