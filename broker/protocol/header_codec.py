"""The per-request half of the typed-header codec: field values to and from extFields strings.

:mod:`broker.protocol.headers` works out each header class's fields once, from its annotations;
these loops run for every request and answer, so they live in a module that ``make install``
compiles (an interpreted loop with a call per field was a visible share of a send).
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
    name: str  # the extFields key
    parse: Callable[[str], Any]
    required: bool
    render: Callable[[Any], str]
    attr: str  # the attribute it fills: ``name``, except where one header is read as another
    default: Any  # what an absent field becomes (None for a required one, when not strict)


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


def decode_header(
    cls: type, header: str, specs: tuple[FieldSpec, ...], ext: Mapping[str, str] | None, strict: bool
) -> Any:
    """A ``cls`` instance from extFields: absent fields keep their default, absent required ones
    become None (``strict`` refuses them instead). Every field is set here, so the dataclass's own
    ``__init__`` (interpreted, and run for every send's header) is not needed."""
    obj: Any = object.__new__(cls)
    if ext is None:
        ext = {}
    for name, parse, required, _, attr, default in specs:
        raw = ext.get(name)
        if raw is None:
            if required and strict:
                raise HeaderFieldError(header, name, "is required")
            value = default
        else:
            try:
                # the common parsers called natively, not through their Python wrappers
                if parse is str:
                    value = raw
                elif parse is parse_int:
                    value = parse_int(raw)
                elif parse is parse_bool:
                    value = parse_bool(raw)
                else:
                    value = parse(raw)
            except ValueError as exc:
                raise HeaderFieldError(header, name, str(exc)) from None
        setattr(obj, attr, value)
    return obj


def encode_fields(header: object, specs: tuple[FieldSpec, ...]) -> dict[str, str]:
    """Java's ``String.valueOf`` of every non-null field, under the Java field name."""
    out: dict[str, str] = {}
    for name, _, _, render, attr, _ in specs:
        value = getattr(header, attr)
        if value is not None:
            out[name] = value if render is str and type(value) is str else render(value)
    return out
