"""The small YAML subset RocketMQ's ``plain_acl.yml`` uses, read and written without a YAML library.

Reads block mappings and sequences by indentation (a sequence may sit at its key's indentation),
``- key: value`` items, plain / 'single' / "double" quoted scalars, ``true``/``false``, integers,
``[a, b]`` flow lists of scalars and ``#`` comments. Anything else is an error naming the line (never
the line's text, which may hold a secret). Anchors, multi-line strings and flow maps are not YAML
that file needs.
"""

from __future__ import annotations

import json
import re
from typing import Any


class YamlSubsetError(ValueError):
    """Text outside the supported subset, or malformed; the message names the line number."""


_PLAIN_SAFE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.%|=*/-]*")


def _strip_comment(text: str) -> str:
    quote = ""
    for i, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or text[i - 1] in " \t"):
            return text[:i].rstrip()
    return text.rstrip()


def _split_outside_quotes(text: str, sep: str) -> list[str]:
    parts, quote, start = [], "", 0
    for i, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == sep:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


class _Parser:
    def __init__(self, text: str) -> None:
        self.lines: list[tuple[int, str, int]] = []
        for number, raw in enumerate(text.splitlines(), 1):
            if "\t" in raw[: len(raw) - len(raw.lstrip())]:
                raise YamlSubsetError(f"line {number}: tabs are not allowed for indentation")
            content = _strip_comment(raw)
            if content.strip() and content.strip() not in ("---", "..."):
                self.lines.append((len(content) - len(content.lstrip()), content.strip(), number))
        self.pos = 0

    def parse(self) -> Any:
        if not self.lines:
            return None
        value = self.block(self.lines[0][0])
        if self.pos < len(self.lines):
            raise YamlSubsetError(f"line {self.lines[self.pos][2]}: unexpected indentation")
        return value

    def block(self, indent: int) -> Any:
        content = self.lines[self.pos][1]
        return self.sequence(indent) if content == "-" or content.startswith("- ") else self.mapping(indent)

    def sequence(self, indent: int) -> list[Any]:
        items: list[Any] = []
        while self.pos < len(self.lines):
            ind, content, number = self.lines[self.pos]
            if ind != indent or not (content == "-" or content.startswith("- ")):
                if ind > indent:
                    raise YamlSubsetError(f"line {number}: unexpected indentation")
                break
            rest = content[1:].lstrip()
            if not rest:
                self.pos += 1
                nxt = self.lines[self.pos] if self.pos < len(self.lines) else None
                items.append(self.block(nxt[0]) if nxt and nxt[0] > indent else None)
            elif self._key_split(rest) is not None and not rest.startswith(("'", '"', "[")):
                column = indent + len(content) - len(rest)
                self.lines[self.pos] = (column, rest, number)  # the item is a mapping at this column
                items.append(self.mapping(column))
            else:
                self.pos += 1
                items.append(_scalar(rest, number))
        return items

    @staticmethod
    def _key_split(content: str) -> tuple[str, str] | None:
        parts = _split_outside_quotes(content, ":")
        for i in range(1, len(parts)):
            tail = ":".join(parts[i:])
            if tail == "" or tail.startswith(" "):
                return ":".join(parts[:i]).strip(), tail.strip()
        return None

    def mapping(self, indent: int) -> dict[str, Any]:
        result: dict[str, Any] = {}
        while self.pos < len(self.lines):
            ind, content, number = self.lines[self.pos]
            if ind < indent or (ind == indent and content.startswith("- ")):
                break
            if ind > indent:
                raise YamlSubsetError(f"line {number}: unexpected indentation")
            split = self._key_split(content)
            if split is None:
                raise YamlSubsetError(f"line {number}: expected 'key: value'")
            key, rest = split
            key = str(_scalar(key, number))
            if key in result:
                raise YamlSubsetError(f"line {number}: key {key!r} appears twice")
            self.pos += 1
            nxt = self.lines[self.pos] if self.pos < len(self.lines) else None
            if rest:
                result[key] = _scalar(rest, number)
            elif nxt and (nxt[0] > indent or (nxt[0] == indent and nxt[1].startswith("- "))):
                result[key] = self.block(nxt[0])
            else:
                result[key] = None
        return result


def _scalar(text: str, number: int) -> Any:
    if text.startswith("[") and text.endswith("]"):
        inner = text[1:-1].strip()
        return [_scalar(p.strip(), number) for p in _split_outside_quotes(inner, ",")] if inner else []
    if text.startswith('"'):
        try:
            value = json.loads(text)
        except ValueError:
            raise YamlSubsetError(f"line {number}: bad double-quoted string") from None
        if not isinstance(value, str):
            raise YamlSubsetError(f"line {number}: bad double-quoted string")
        return value
    if text.startswith("'"):
        if len(text) < 2 or not text.endswith("'"):
            raise YamlSubsetError(f"line {number}: bad single-quoted string")
        return text[1:-1].replace("''", "'")
    if text in ("true", "True", "TRUE"):
        return True
    if text in ("false", "False", "FALSE"):
        return False
    if text in ("~", "null", "Null", "NULL"):
        return None
    if re.fullmatch(r"[-+]?[0-9]+", text):
        return int(text)
    if text[0] in "{&*!|>":
        raise YamlSubsetError(f"line {number}: this YAML feature is not supported")
    return text


def loads(text: str) -> Any:
    """Parse the subset; raises YamlSubsetError."""
    return _Parser(text).parse()


def _emit_scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    text = str(value)
    if (
        _PLAIN_SAFE.fullmatch(text)
        and not re.fullmatch(r"[0-9]+", text)
        and text.lower() not in ("true", "false", "null")
    ):
        return text
    return json.dumps(text)


def dumps(doc: dict[str, Any]) -> str:
    """Block YAML for a mapping of scalars, lists of scalars and lists of flat mappings."""
    out: list[str] = []
    for key, value in doc.items():
        if not isinstance(value, list):
            out.append(f"{key}: {_emit_scalar(value)}")
            continue
        if not value:
            out.append(f"{key}: []")
            continue
        out.append(f"{key}:")
        for item in value:
            if not isinstance(item, dict):
                out.append(f"  - {_emit_scalar(item)}")
                continue
            prefix = "  - "
            for k, v in item.items():
                if isinstance(v, list):
                    out.append(f"{prefix}{k}:" if v else f"{prefix}{k}: []")
                    out.extend(f"      - {_emit_scalar(x)}" for x in v)
                else:
                    out.append(f"{prefix}{k}: {_emit_scalar(v)}")
                prefix = "    "
    return "\n".join(out) + "\n"
