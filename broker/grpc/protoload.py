"""Load a .proto file at run time, without protoc or generated code.

Reads the subset of proto3 that ``proto/messaging.proto`` uses (package, imports of the well-known
Duration and Timestamp, enums, messages with scalar / message / enum / map fields, ``repeated``,
``optional`` and ``oneof``, services with streaming RPCs) into a ``FileDescriptorProto``, adds it to a
private descriptor pool and builds the message classes. Anything outside that subset is an error
naming the line, so a mistake in the schema fails at start-up, not on the wire.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from google.protobuf import (  # type: ignore[import-untyped,unused-ignore]
    descriptor_pb2,
    descriptor_pool,
    duration_pb2,
    message_factory,
    timestamp_pb2,
)

_FD = descriptor_pb2.FieldDescriptorProto
_SCALARS = {
    "double": _FD.TYPE_DOUBLE,
    "float": _FD.TYPE_FLOAT,
    "int64": _FD.TYPE_INT64,
    "uint64": _FD.TYPE_UINT64,
    "int32": _FD.TYPE_INT32,
    "uint32": _FD.TYPE_UINT32,
    "sint32": _FD.TYPE_SINT32,
    "sint64": _FD.TYPE_SINT64,
    "fixed32": _FD.TYPE_FIXED32,
    "fixed64": _FD.TYPE_FIXED64,
    "bool": _FD.TYPE_BOOL,
    "string": _FD.TYPE_STRING,
    "bytes": _FD.TYPE_BYTES,
}
_WELL_KNOWN = {
    "google/protobuf/duration.proto": (duration_pb2, "google.protobuf.Duration"),
    "google/protobuf/timestamp.proto": (timestamp_pb2, "google.protobuf.Timestamp"),
}
_TOKEN = re.compile(r'\s*(?:(//[^\n]*)|("[^"]*")|([A-Za-z_][A-Za-z0-9_.]*)|(-?\d+)|([{}()<>;=,\[\]]))')


class ProtoSyntaxError(ValueError):
    pass


@dataclass(slots=True)
class _Tok:
    text: str
    line: int


def _tokens(text: str) -> list[_Tok]:
    out: list[_Tok] = []
    pos = 0
    line = 1
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if m is None:
            raise ProtoSyntaxError(f"line {line}: unexpected {text[pos : pos + 20]!r}")
        line += text.count("\n", pos, m.end())
        pos = m.end()
        if m.group(1) is None:
            token = next(g for g in m.groups()[1:] if g is not None)
            out.append(_Tok(token, line))
    return out


@dataclass(slots=True)
class _Field:
    label: str  # "", "optional", "repeated"
    type: str
    name: str
    number: int
    oneof: str | None = None
    map_types: tuple[str, str] | None = None


@dataclass(slots=True)
class _Message:
    name: str
    fields: list[_Field] = field(default_factory=list)
    oneofs: list[str] = field(default_factory=list)


class _Parser:
    def __init__(self, text: str) -> None:
        self.toks = _tokens(text)
        self.i = 0
        self.package = ""
        self.imports: list[str] = []
        self.enums: dict[str, list[tuple[str, int]]] = {}
        self.messages: dict[str, _Message] = {}
        self.services: dict[str, list[tuple[str, str, bool, str, bool]]] = {}

    # == token helpers =========================================================================
    def peek(self) -> str:
        return self.toks[self.i].text if self.i < len(self.toks) else ""

    def take(self, expected: str | None = None) -> str:
        if self.i >= len(self.toks):
            raise ProtoSyntaxError(f"unexpected end of file (wanted {expected or 'more'})")
        tok = self.toks[self.i]
        if expected is not None and tok.text != expected:
            raise ProtoSyntaxError(f"line {tok.line}: expected {expected!r}, found {tok.text!r}")
        self.i += 1
        return tok.text

    def number(self) -> int:
        text = self.take()
        try:
            return int(text)
        except ValueError:
            raise ProtoSyntaxError(f"line {self.toks[self.i - 1].line}: {text!r} is not a number") from None

    # == grammar ===============================================================================
    def parse(self) -> _Parser:
        while self.i < len(self.toks):
            word = self.take()
            if word == "syntax":
                self.take("=")
                if self.take() != '"proto3"':
                    raise ProtoSyntaxError("only proto3 is supported")
                self.take(";")
            elif word == "package":
                self.package = self.take()
                self.take(";")
            elif word == "import":
                self.imports.append(self.take().strip('"'))
                self.take(";")
            elif word == "option":
                while self.take() != ";":
                    pass
            elif word == "enum":
                self.enum()
            elif word == "message":
                self.message()
            elif word == "service":
                self.service()
            else:
                raise ProtoSyntaxError(f"line {self.toks[self.i - 1].line}: unexpected {word!r}")
        return self

    def enum(self) -> None:
        name = self.take()
        self.take("{")
        values: list[tuple[str, int]] = []
        while self.peek() != "}":
            value = self.take()
            self.take("=")
            values.append((value, self.number()))
            self.take(";")
        self.take("}")
        self.enums[name] = values

    def message(self) -> None:
        msg = _Message(self.take())
        self.take("{")
        while self.peek() != "}":
            if self.peek() == "oneof":
                self.take()
                oneof = self.take()
                msg.oneofs.append(oneof)
                self.take("{")
                while self.peek() != "}":
                    msg.fields.append(self.field(oneof))
                self.take("}")
            else:
                msg.fields.append(self.field(None))
        self.take("}")
        self.messages[msg.name] = msg

    def field(self, oneof: str | None) -> _Field:
        label = ""
        if self.peek() in ("optional", "repeated"):
            label = self.take()
        type_name = self.take()
        map_types = None
        if type_name == "map":
            self.take("<")
            key = self.take()
            self.take(",")
            value = self.take()
            self.take(">")
            map_types = (key, value)
            label = "repeated"
        name = self.take()
        self.take("=")
        number = self.number()
        self.take(";")
        return _Field(label, type_name, name, number, oneof, map_types)

    def service(self) -> None:
        name = self.take()
        self.take("{")
        rpcs: list[tuple[str, str, bool, str, bool]] = []
        while self.peek() != "}":
            self.take("rpc")
            method = self.take()
            self.take("(")
            client_stream = self.peek() == "stream" and bool(self.take())
            request = self.take()
            self.take(")")
            self.take("returns")
            self.take("(")
            server_stream = self.peek() == "stream" and bool(self.take())
            response = self.take()
            self.take(")")
            if self.peek() == "{":
                self.take("{")
                self.take("}")
            else:
                self.take(";")
            rpcs.append((method, request, client_stream, response, server_stream))
        self.take("}")
        self.services[name] = rpcs


def _camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


class Schema:
    """The message classes of one .proto file, looked up by their short names."""

    def __init__(self, path: Path) -> None:
        parsed = _Parser(path.read_text(encoding="utf-8")).parse()
        self.package = parsed.package
        self.services = parsed.services
        self.enums = {name: dict(values) for name, values in parsed.enums.items()}
        self.pool = descriptor_pool.DescriptorPool()
        for dep in parsed.imports:
            if dep not in _WELL_KNOWN:
                raise ProtoSyntaxError(f"import {dep!r} is not supported")
            module, _ = _WELL_KNOWN[dep]
            self.pool.Add(descriptor_pb2.FileDescriptorProto.FromString(module.DESCRIPTOR.serialized_pb))
        self.pool.Add(self._file(path.name, parsed))
        self._classes: dict[str, Any] = {}
        for name in parsed.messages:
            descriptor = self.pool.FindMessageTypeByName(f"{self.package}.{name}")
            self._classes[name] = message_factory.GetMessageClass(descriptor)
        for dep in parsed.imports:
            _, full = _WELL_KNOWN[dep]
            short = full.rsplit(".", 1)[1]
            self._classes[short] = message_factory.GetMessageClass(self.pool.FindMessageTypeByName(full))
        vars(self).update(self._classes)  # plain attribute lookups on hot paths; __getattr__ types them

    def __getattr__(self, name: str) -> Any:
        try:
            return self._classes[name]
        except KeyError:
            raise AttributeError(name) from None

    def _file(self, name: str, parsed: _Parser) -> descriptor_pb2.FileDescriptorProto:
        fdp = descriptor_pb2.FileDescriptorProto(name=name, package=parsed.package, syntax="proto3")
        fdp.dependency.extend(parsed.imports)
        wkt = {full for _, full in _WELL_KNOWN.values()}
        for enum_name, values in parsed.enums.items():
            enum = fdp.enum_type.add(name=enum_name)
            for value_name, number in values:
                enum.value.add(name=value_name, number=number)

        def resolve(fp: Any, type_name: str) -> None:
            if type_name in _SCALARS:
                fp.type = _SCALARS[type_name]
            elif type_name in parsed.enums:
                fp.type = _FD.TYPE_ENUM
                fp.type_name = f".{parsed.package}.{type_name}"
            elif type_name in parsed.messages:
                fp.type = _FD.TYPE_MESSAGE
                fp.type_name = f".{parsed.package}.{type_name}"
            elif type_name in wkt:
                fp.type = _FD.TYPE_MESSAGE
                fp.type_name = f".{type_name}"
            else:
                raise ProtoSyntaxError(f"unknown type {type_name!r}")

        for msg in parsed.messages.values():
            mp = fdp.message_type.add(name=msg.name)
            for oneof in msg.oneofs:
                mp.oneof_decl.add(name=oneof)
            for f in msg.fields:
                fp = mp.field.add(
                    name=f.name, number=f.number, json_name=_camel(f.name)[:1].lower() + _camel(f.name)[1:]
                )
                fp.label = _FD.LABEL_REPEATED if f.label == "repeated" else _FD.LABEL_OPTIONAL
                if f.map_types is not None:
                    entry = mp.nested_type.add(name=_camel(f.name) + "Entry")
                    entry.options.map_entry = True
                    key = entry.field.add(name="key", number=1, label=_FD.LABEL_OPTIONAL, json_name="key")
                    resolve(key, f.map_types[0])
                    value = entry.field.add(
                        name="value", number=2, label=_FD.LABEL_OPTIONAL, json_name="value"
                    )
                    resolve(value, f.map_types[1])
                    fp.type = _FD.TYPE_MESSAGE
                    fp.type_name = f".{parsed.package}.{msg.name}.{entry.name}"
                else:
                    resolve(fp, f.type)
                if f.oneof is not None:
                    fp.oneof_index = msg.oneofs.index(f.oneof)
            # proto3 ``optional``: one synthetic oneof per field, after the real ones
            for f, fp in zip(msg.fields, mp.field, strict=True):
                if f.label == "optional":
                    fp.proto3_optional = True
                    fp.oneof_index = len(mp.oneof_decl)
                    mp.oneof_decl.add(name=f"_{f.name}")
        for service_name, rpcs in parsed.services.items():
            sp = fdp.service.add(name=service_name)
            for method, request, cs, response, ss in rpcs:
                sp.method.add(
                    name=method,
                    input_type=f".{parsed.package}.{request}",
                    output_type=f".{parsed.package}.{response}",
                    client_streaming=cs,
                    server_streaming=ss,
                )
        return fdp
