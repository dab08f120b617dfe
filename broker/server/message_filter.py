"""SQL92 property filters for pulls (ExpressionMessageFilter) and CHECK_CLIENT_CONFIG (46).

TAG expressions are tested on the ConsumeQueue's tagsCode (``pull_processor.tag_filter_of``); an
SQL92 expression needs the message's properties, so it becomes a record filter the store applies
to each record it reads. Non-matching records are skipped and the offset still advances, so a pull
that finds only those answers PULL_RETRY_IMMEDIATELY, exactly as with tags.
"""

from __future__ import annotations

from collections.abc import Callable

from broker.protocol import lenient_json
from broker.protocol.codes import RequestCode, ResponseCode
from broker.protocol.message import RecordError, read_layout
from broker.protocol.properties import decode_properties
from broker.protocol.remoting import RemotingCommand, make_response
from broker.protocol.sql92 import Selector, SelectorParseError, compile_cached
from broker.remoting.channel import Handler, RemotingChannel
from broker.server.config import BrokerConfig

TAG_TYPE = "TAG"
SQL92_TYPE = "SQL92"
RecordFilter = Callable[[bytes], bool]


class FilterRejected(Exception):
    """The subscription cannot be served; carries the response code and remark."""

    def __init__(self, code: int, remark: str) -> None:
        super().__init__(remark)
        self.code = code
        self.remark = remark


def is_tag_type(expression_type: str | None) -> bool:
    return not expression_type or expression_type.upper() == TAG_TYPE


def record_filter_of(expression_type: str | None, expression: str | None, *, enabled: bool) -> RecordFilter:
    """The record test for a non-TAG subscription; raises :class:`FilterRejected` when the broker
    has property filtering off (1) or the expression does not compile (23)."""
    return _property_filter(compile_expression(expression_type, expression, enabled=enabled))


def compile_expression(expression_type: str | None, expression: str | None, *, enabled: bool) -> Selector:
    kind = (expression_type or "").upper()
    if not enabled:
        raise FilterRejected(
            ResponseCode.SYSTEM_ERROR, f"The broker does not support consumer to filter message by {kind}"
        )
    if kind != SQL92_TYPE:
        raise FilterRejected(ResponseCode.SUBSCRIPTION_PARSE_FAILED, f"Unsupported expression type: {kind}")
    try:
        return compile_cached(expression or "")
    except SelectorParseError as exc:
        raise FilterRejected(ResponseCode.SUBSCRIPTION_PARSE_FAILED, str(exc)) from None


def _property_filter(selector: Selector) -> RecordFilter:
    def matches(record: bytes) -> bool:
        try:
            layout = read_layout(record, 0, len(record))
        except RecordError:
            return False
        raw = record[layout.props_pos : layout.props_pos + layout.props_len]
        return selector.matches(decode_properties(raw.decode("utf-8", "replace")))

    return matches


class FilterProcessor:
    """CHECK_CLIENT_CONFIG: the Java consumer asks before starting whether its SQL92 subscriptions
    are servable (MQClientInstance.checkClientInBroker)."""

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config

    def handlers(self) -> dict[int, Handler]:
        return {RequestCode.CHECK_CLIENT_CONFIG: self.check_client_config}

    async def check_client_config(
        self, request: RemotingCommand, channel: RemotingChannel
    ) -> RemotingCommand:
        try:
            body = lenient_json.loads(request.body or b"{}")
        except ValueError as exc:
            return make_response(request, ResponseCode.INVALID_PARAMETER, f"the body is not JSON: {exc}")
        sub = body.get("subscriptionData") if isinstance(body, dict) else None
        if not isinstance(sub, dict) or is_tag_type(sub.get("expressionType")):
            return make_response(request)
        try:
            compile_expression(
                str(sub["expressionType"]),
                str(sub.get("subString") or ""),
                enabled=self.config.enable_property_filter,
            )
        except FilterRejected as exc:
            return make_response(request, exc.code, exc.remark)
        return make_response(request)
