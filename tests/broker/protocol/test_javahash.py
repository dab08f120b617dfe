import importlib.util
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from hypothesis import given
from hypothesis import strategies as st

from broker.protocol.javahash import index_key_hash, java_hash, tags_code
from broker.protocol.message import body_crc
from tests.vectors import load

HASHES = load("java_hash_crc_vectors.json")
ROOT = Path(__file__).resolve().parents[3]


def test_java_hash_vectors() -> None:
    for item in HASHES["string_hash"]:
        assert java_hash(item["string"]) == item["java_hashCode"], item["string"]
        assert index_key_hash(item["string"]) == item["index_keyHash"], item["string"]
        assert index_key_hash(item["string"]) % 5_000_000 == item["index_slot_5000000"]
        assert tags_code(item["string"]) == item["cq_tagsCode_int64"]


def test_body_crc_vectors() -> None:
    for item in HASHES["crc32"]:
        assert body_crc(item["body_utf8"].encode()) == item["rocketmq_bodycrc"]


def test_min_value_maps_to_zero() -> None:
    assert java_hash("polygenelubricants") == -(2**31)
    assert index_key_hash("polygenelubricants") == 0


@given(st.text(), st.text())
def test_hash_algebra_of_concatenation(a: str, b: str) -> None:
    # Java: h(a+b) = h(a) * 31^len16(b) + h(b) (mod 2^32); the ASCII fast path must agree
    n = len(b.encode("utf-16-be")) // 2
    expected = (java_hash(a) * pow(31, n, 2**32) + java_hash(b)) % 2**32
    assert java_hash(a + b) % 2**32 == expected


def _by_definition(s: str) -> int:
    """Java's String.hashCode over UTF-16 code units, written out."""
    h = 0
    units = s.encode("utf-16-be", "surrogatepass")  # Java's strings may hold unpaired surrogates
    for i in range(0, len(units), 2):
        h = (31 * h + int.from_bytes(units[i : i + 2], "big")) % 2**32
    return h - 2**32 if h >= 2**31 else h


@given(
    st.text(alphabet=st.characters(max_codepoint=127), max_size=64)
    | st.sampled_from(["x" * 4000, "y" * 4001])
)
def test_ascii_hash_matches_the_definition(s: str) -> None:
    """The ASCII path reads the hash as base-31 digits; it must equal the definition for every length."""
    assert java_hash(s) == _by_definition(s)


@given(st.text(alphabet=st.characters(blacklist_categories=()), max_size=32))
def test_any_text_matches_the_definition(s: str) -> None:
    """Beyond ASCII too: characters outside the BMP count as their surrogate pair, and an unpaired
    surrogate (a JSON ``\\ud800`` escape can carry one) as itself, never an error."""
    assert java_hash(s) == _by_definition(s)


def test_surrogates_hash_as_in_java() -> None:
    assert java_hash("\U0001f600a") == 54959966  # "😀a".hashCode(): the pair D83D DE00, then 'a'
    assert java_hash("\ud800x") == 1714296


def _from_source(name: str) -> ModuleType:
    """The module run from its ``.py``, whether or not the compiled build is in use."""
    spec = importlib.util.spec_from_file_location(f"{name}_source", ROOT / f"{name.replace('.', '/')}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_SOURCE_HASH: Callable[[str], int] = _from_source("broker.protocol.javahash").java_hash


@given(st.text(max_size=80) | st.text(alphabet=st.characters(max_codepoint=127), max_size=200))
def test_the_running_build_hashes_as_the_sources_do(s: str) -> None:
    """Compiled, java_hash takes its loop; interpreted, the base-31 parse for ASCII: both agree."""
    assert java_hash(s) == _SOURCE_HASH(s)
