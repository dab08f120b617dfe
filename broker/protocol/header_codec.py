"""The per-request half of the typed-header codec: field values to and from extFields strings.

:mod:`broker.protocol.headers` works out each header class's fields once, from its annotations;
these loops run for every request and answer, so they live in a module that ``make install``
compiles (an interpreted loop with a call per field was ~2 µs of a send).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from broker.protocol.remoting import ProtocolError

_INT_RE = re.compile(r"[+-]?[0-9]+")


class HeaderFieldError(ProtocolError):
    """A header field is missing or malformed; ``field`` names it for the error remark."""

    def __init__(self, header: str, field: str, problem: str) -> None:
        super().__init__(f"{header}: field {field!r} {problem}")
        self.field = field


class FieldSpec(NamedTuple):
    name: str
    parse: Callable[[str], Any]
    required: bool
    render: Callable[[Any], str]


def parse_int(text: str) -> int:
    if text.isascii() and text.isdigit():  # the common case, without the regex
        return int(text)
    stripped = text.strip()
    if not _INT_RE.fullmatch(stripped):
        raise ValueError(f"is not an integer: {text!r}")
    return int(stripped)


def parse_bool(text: str) -> bool:
    """Java's Boolean.parseBoolean."""
    return text.lower() == "true"


def render_bool(value: bool) -> str:
    return "true" if value else "false"


def decode_fields(
    header: str, specs: tuple[FieldSpec, ...], ext: Mapping[str, str] | None, strict: bool
) -> dict[str, Any]:
    """The constructor arguments of a header from extFields: absent fields keep their default,
    absent required ones become None (``strict`` refuses them instead)."""
    kwargs: dict[str, Any] = {}
    if ext is None:
        ext = {}
    for name, parse, required, _ in specs:
        raw = ext.get(name)
        if raw is None:
            if required:
                if strict:
                    raise HeaderFieldError(header, name, "is required")
                kwargs[name] = None
            continue
        try:
            kwargs[name] = raw if parse is str else parse(raw)
        except ValueError as exc:
            raise HeaderFieldError(header, name, str(exc)) from None
    return kwargs


def encode_fields(header: object, specs: tuple[FieldSpec, ...]) -> dict[str, str]:
    """Java's ``String.valueOf`` of every non-null field, under the Java field name."""
    out: dict[str, str] = {}
    for name, _, _, render in specs:
        value = getattr(header, name)
        if value is not None:
            out[name] = value if render is str and type(value) is str else render(value)
    return out
