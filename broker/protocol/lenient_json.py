"""fastjson-tolerant JSON: RocketMQ writes bare integer map keys (``{0:12}``), some peers use
single quotes, and fastjson reads unquoted field names (``[{topicName:"A"}]`` in a hand-written
``updateTopicList`` file). :func:`loads` accepts all three; :func:`dumps_fastjson` writes the
bare-key form for files and bodies that Java tools read back byte-for-byte.
"""

from __future__ import annotations

import json
from typing import Any

_BARE_KEY_CHARS = frozenset("0123456789-_$.abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


class LenientJSONError(ValueError):
    """Text that is not JSON even by fastjson's relaxed rules."""


def _normalise(text: str) -> str:
    """Quote bare keys and turn single-quoted strings into double-quoted ones, outside strings."""
    out: list[str] = []
    i = 0
    n = len(text)
    expect_key = False
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
            expect_key = False
            continue
        if c == "'":
            j = i + 1
            buf: list[str] = []
            while j < n and text[j] != "'":
                if text[j] == "\\" and j + 1 < n:
                    buf.append(text[j : j + 2])
                    j += 2
                    continue
                buf.append('\\"' if text[j] == '"' else text[j])
                j += 1
            out.append('"' + "".join(buf) + '"')
            i = j + 1
            expect_key = False
            continue
        if c in "{,":
            out.append(c)
            i += 1
            expect_key = True
            continue
        if expect_key and c in _BARE_KEY_CHARS:
            j = i
            while j < n and text[j] in _BARE_KEY_CHARS:
                j += 1
            k = j
            while k < n and text[k] in " \t\r\n":
                k += 1
            if k < n and text[k] == ":":
                out.append('"' + text[i:j] + '"')
                i = j
                expect_key = False
                continue
        if not c.isspace():
            expect_key = False
        out.append(c)
        i += 1
    return "".join(out)


def loads(data: str | bytes) -> Any:
    text = data.decode("utf-8") if isinstance(data, bytes | bytearray) else data
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    try:
        return json.loads(_normalise(text))
    except json.JSONDecodeError as exc:
        raise LenientJSONError(f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None


def dumps(obj: Any) -> str:
    """Compact standard JSON with sorted keys (what fastjson's MapSortField gives)."""
    return json.dumps(obj, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def _fast(obj: Any, indent: str | None, depth: int) -> str:
    nl = "" if indent is None else "\n"
    pad = "" if indent is None else indent * (depth + 1)
    end_pad = "" if indent is None else indent * depth
    if isinstance(obj, dict):
        if not obj:
            return "{}"
        items = []
        for key, value in obj.items():
            k = str(key) if isinstance(key, int) and not isinstance(key, bool) else json.dumps(str(key))
            items.append(f"{pad}{k}:{_fast(value, indent, depth + 1)}")
        return "{" + nl + ("," + nl).join(items) + nl + end_pad + "}"
    if isinstance(obj, list):
        if not obj:
            return "[]"
        return "[" + nl + ("," + nl).join(pad + _fast(v, indent, depth + 1) for v in obj) + nl + end_pad + "]"
    return json.dumps(obj, ensure_ascii=False)


def dumps_fastjson(obj: Any, pretty: bool = False, depth: int = 0) -> str:
    """fastjson's default form: integer keys unquoted; ``pretty`` indents with tabs, as for a value
    ``depth`` levels down in a larger document (so parts can be written once and joined)."""
    return _fast(obj, "\t" if pretty else None, depth)
