import pytest

from broker.protocol.lenient_json import LenientJSONError, dumps_fastjson, loads


def test_bare_integer_keys_and_single_quotes() -> None:
    assert loads('{"t@g":{0:250,1:9}}') == {"t@g": {"0": 250, "1": 9}}
    assert loads("{'a':'x\"y', -1:2}") == {"a": 'x"y', "-1": 2}


def test_unquoted_field_names_as_fastjson_reads_them() -> None:
    text = '[{topicName:"A", readQueueNums: 4, $x_1.y:true}, 7, false]'
    assert loads(text) == [{"topicName": "A", "readQueueNums": 4, "$x_1.y": True}, 7, False]
    assert loads("[true, null]") == [True, None]  # words that no colon follows stay values


def test_strings_that_look_like_keys_are_untouched() -> None:
    assert loads('{"a":"{0:1}","b":[1,2]}') == {"a": "{0:1}", "b": [1, 2]}


def test_fastjson_output_reads_back() -> None:
    data = {"offsetTable": {"T@g": {0: 250, 1: 9}}, "x": [1, "a"]}
    text = dumps_fastjson(data, pretty=True)
    assert "\t\t\t0:250" in text or "0:250" in text
    assert loads(text) == {"offsetTable": {"T@g": {"0": 250, "1": 9}}, "x": [1, "a"]}


def test_garbage_is_a_precise_error() -> None:
    with pytest.raises(LenientJSONError, match="line 1"):
        loads("{nope")
