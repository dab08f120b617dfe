from broker.protocol.codes import LanguageCode, RequestCode, ResponseCode, language_of, name_of


def test_reference_codes() -> None:
    assert RequestCode.GET_ROUTEINFO_BY_TOPIC.value == 105
    assert RequestCode.SEND_MESSAGE_V2.value == 310
    assert RequestCode.INVOKE_BROKER_TO_RESET_OFFSET.value == 222
    assert RequestCode.POP_MESSAGE.value == 200050
    assert ResponseCode.REQUEST_CODE_NOT_SUPPORTED.value == 3
    assert ResponseCode.CONSUMER_NOT_ONLINE.value == 206
    assert ResponseCode.RPC_TIME_OUT.value == -1006


def test_name_of_distinguishes_requests_and_responses() -> None:
    assert name_of(200) == "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP"
    assert name_of(200, response=True) == "TRANSACTION_SHOULD_COMMIT"
    assert name_of(123456) == "123456"


def test_language_by_name_or_ordinal() -> None:
    assert language_of("CPP") is LanguageCode.CPP
    assert language_of("node_js") is LanguageCode.NODE_JS
    assert language_of(9) is LanguageCode.GO
    assert language_of("COBOL") is LanguageCode.OTHER
    assert language_of(99) is LanguageCode.OTHER
