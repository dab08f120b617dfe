"""RocketMQ's SQL92 message selector (filter module, SelectorParser.jj): tokenizer, recursive-descent
parser and evaluator over a message's properties. Sans-IO.

Semantics follow upstream, quirks included: property values are strings and are converted to the
type of the literal they are compared with (``a > 5`` parses ``a`` as a Java int, ``a > 5.0`` as a
double; a value that does not convert makes the whole evaluation fail, which a filter treats as "no
match"); strings compare with ``=``/``<>`` only (two strings under ``<`` etc. are compared as doubles);
``AND``/``OR``/``NOT`` use three-valued logic where a missing property is NULL; a bare property used
as a condition is never true. Grammar errors raise :class:`SelectorParseError` with a position.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum, auto
from functools import lru_cache
from typing import NoReturn

Props = Mapping[str, str]
Value = str | int | float | bool | None
Fn = Callable[[Props], Value]

MAX_DEPTH = 100  # of the expression tree, so evaluation recursion stays bounded
MAX_NESTING = 50  # of parentheses and unary operators, so parsing recursion stays bounded
_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1
_DOUBLE_MIN = 5e-324  # Java Double.MIN_VALUE: upstream rejects smaller float literals, even 0.0
_KEYWORDS = frozenset(
    {"NOT", "AND", "OR", "BETWEEN", "IN", "TRUE", "FALSE", "NULL", "IS", "CONTAINS", "STARTSWITH", "ENDSWITH"}
)
_TOKEN_RE = re.compile(
    r"""(?P<ws>[ \t\n\r\f]+)
      | (?P<comment>--[^\n\r]*|/\*(?:[^*]|\*+[^*/])*\*+/)
      | (?P<float>(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+)
      | (?P<decimal>(?:0|[1-9][0-9]*)[lL]?)
      | (?P<string>'(?:''|[^'])*')
      | (?P<id>[a-zA-Z_$][a-zA-Z0-9_$]*)
      | (?P<op><>|>=|<=|[=<>(),+-])""",
    re.VERBOSE,
)
_JAVA_INT_RE = re.compile(r"[+-]?[0-9]+")
_JAVA_DOUBLE_RE = re.compile(r"[+-]?(?:NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)[fFdD]?")


class SelectorParseError(ValueError):
    """The expression is not a valid selector; ``position`` is the 0-based offset of the problem."""

    def __init__(self, problem: str, position: int) -> None:
        super().__init__(f"Invalid MessageSelector. {problem} at position {position}")
        self.problem = problem
        self.position = position


class _EvalError(Exception):
    """What a Java RuntimeException during evaluation is: the message does not match."""


class JavaLong(int):
    """A Java ``long`` constant (plain ``int`` stands for a Java ``int``): conversions differ."""


# == Java value semantics ======================================================================
def _jtype(v: Value) -> str:
    if isinstance(v, bool):
        return "B"
    if isinstance(v, JavaLong):
        return "L"
    if isinstance(v, int):
        return "I"
    if isinstance(v, float):
        return "D"
    return "S"


def _java_integer(text: str, low: int, high: int) -> int:
    if not _JAVA_INT_RE.fullmatch(text) or not low <= int(text) <= high:
        raise _EvalError(f"For input string: {text!r}")
    return int(text)


def _java_double(text: str) -> float:
    stripped = text.strip("".join(chr(c) for c in range(33)))
    if not _JAVA_DOUBLE_RE.fullmatch(stripped):
        raise _EvalError(f"For input string: {text!r}")
    return float(stripped.rstrip("fFdD").replace("Infinity", "inf"))


def _convert(text: str, to: str) -> Value:
    """The string ``text`` as the Java type ``to`` (Integer.valueOf, Long.valueOf, ...)."""
    if to == "I":
        return _java_integer(text, _INT_MIN, _INT_MAX)
    if to == "L":
        return JavaLong(_java_integer(text, _LONG_MIN, _LONG_MAX))
    if to == "D":
        return _java_double(text)
    return text.lower() == "true"  # Boolean.valueOf


def _double_cmp(a: float, b: float) -> int:
    """Double.compareTo: NaN above everything and equal to itself, -0.0 below 0.0."""
    if math.isnan(a) or math.isnan(b):
        return int(math.isnan(a)) - int(math.isnan(b))
    if a == b:
        return int(math.copysign(1, a) > 0) - int(math.copysign(1, b) > 0)
    return -1 if a < b else 1


def _compare(lv: Value, rv: Value) -> int:
    """ComparisonExpression.__compare with string conversion on, for non-null values."""
    lt, rt = _jtype(lv), _jtype(rv)
    if lt != rt:
        if lt == "B":
            if rt == "S":  # upstream casts the Boolean to String here: a ClassCastException
                raise _EvalError("Boolean cannot be cast to String")
            return -1
        if lt in "ILD" and rt in "ILD":
            wider = max(lt, rt, key="ILD".index)
            lv, rv = (float(lv), float(rv)) if wider == "D" else (lv, rv)  # type: ignore[arg-type]
        elif lt in "ILD" and rt == "S":
            rv = _convert(rv, lt)  # type: ignore[arg-type]
        elif lt == "S":
            lv = _convert(lv, rt)  # type: ignore[arg-type]
        else:
            return -1
    if isinstance(lv, float) or isinstance(rv, float):
        return _double_cmp(float(lv), float(rv))  # type: ignore[arg-type]
    if lv == rv:
        return 0
    return -1 if lv < rv else 1  # type: ignore[operator]


def _java_equals(lv: Value, rv: Value) -> bool:
    if _jtype(lv) != _jtype(rv):
        return False
    if isinstance(lv, float) and isinstance(rv, float):
        return _double_cmp(lv, rv) == 0
    return lv == rv


# == expression nodes ==========================================================================
class _Kind(Enum):
    CONSTANT = auto()  # a number or string literal
    BOOL_CONSTANT = auto()  # TRUE, FALSE, NULL (BooleanConstantExpression upstream)
    PROPERTY = auto()
    BOOLEAN = auto()  # comparisons, logic, NOT, IN, ...
    VALUE = auto()  # negation


@dataclass(slots=True, frozen=True)
class _Expr:
    kind: _Kind
    fn: Fn
    text: str
    depth: int = 1
    value: Value = None

    @property
    def is_constant(self) -> bool:
        return self.kind in (_Kind.CONSTANT, _Kind.BOOL_CONSTANT)

    @property
    def is_boolean(self) -> bool:
        return self.kind in (_Kind.BOOLEAN, _Kind.BOOL_CONSTANT)


def _literal_text(value: Value) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return repr(value) if isinstance(value, float) else str(int(value))


def _constant(value: Value) -> _Expr:
    kind = _Kind.BOOL_CONSTANT if value is None or isinstance(value, bool) else _Kind.CONSTANT
    return _Expr(kind, lambda _p: value, _literal_text(value), value=value)


def _boolean(fn: Fn, text: str, *children: _Expr) -> _Expr:
    return _Expr(_Kind.BOOLEAN, fn, text, 1 + max((c.depth for c in children), default=0))


@dataclass(slots=True, frozen=True)
class _Token:
    kind: str  # "float", "decimal", "string", "id", "op", a keyword, or "eof"
    text: str
    pos: int


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN_RE.match(text, pos)
        if m is None:
            raise SelectorParseError(f"Lexical error: unexpected character {text[pos]!r}", pos)
        kind = m.lastgroup or ""
        word = m.group()
        if kind == "id" and word.upper() in _KEYWORDS:
            kind = word.upper()
        if kind not in ("ws", "comment"):
            tokens.append(_Token(kind, word, pos))
        pos = m.end()
    tokens.append(_Token("eof", "", len(text)))
    return tokens


# == the parser ================================================================================
class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = _tokenize(text)
        self.i = 0
        self.nesting = 0

    # -- token helpers
    @property
    def tok(self) -> _Token:
        return self.tokens[self.i]

    def _at(self, kind: str, text: str | None = None, ahead: int = 0) -> bool:
        tok = self.tokens[min(self.i + ahead, len(self.tokens) - 1)]
        return tok.kind == kind and (text is None or tok.text == text)

    def _take(self, kind: str, text: str | None = None, what: str | None = None) -> _Token:
        if not self._at(kind, text):
            self._fail(f"expected {what or text or kind}")
        tok = self.tok
        self.i += 1
        return tok

    def _fail(self, problem: str, tok: _Token | None = None) -> NoReturn:
        tok = tok or self.tok
        found = "end of input" if tok.kind == "eof" else f'"{tok.text}"'
        raise SelectorParseError(f"Encountered {found}: {problem}", tok.pos)

    def _error(self, problem: str, tok: _Token) -> SelectorParseError:
        return SelectorParseError(problem, tok.pos)

    def _deep(self, expr: _Expr, tok: _Token) -> _Expr:
        if expr.depth > MAX_DEPTH:
            raise self._error(f"expression nested deeper than {MAX_DEPTH}", tok)
        return expr

    # -- grammar
    def selector(self) -> _Expr:
        start = self.tok
        expr = self._or()
        if not self._at("eof"):
            self._fail("expected AND, OR, a comparison or the end of the expression")
        return self._as_boolean(expr, start)

    def _as_boolean(self, expr: _Expr, tok: _Token) -> _Expr:
        if expr.is_boolean:
            return expr
        if expr.kind is _Kind.PROPERTY:
            inner = expr.fn

            def cast(p: Props) -> Value:
                v = inner(p)
                return None if v is None else (v if isinstance(v, bool) else False)

            return _Expr(_Kind.BOOLEAN, cast, expr.text, expr.depth + 1)
        raise self._error(f"Expression will not result in a boolean value: {expr.text}", tok)

    def _logic(self, keyword: str, operand: Callable[[], _Expr]) -> _Expr:
        start = self.tok
        first = operand()
        if not self._at(keyword):
            return first
        parts = [self._as_boolean(first, start)]
        while self._at(keyword):
            self.i += 1
            tok = self.tok
            parts.append(self._as_boolean(operand(), tok))
        return self._deep(_junction(keyword, parts), start)

    def _or(self) -> _Expr:
        return self._logic("OR", self._and)

    def _and(self) -> _Expr:
        return self._logic("AND", self._equality)

    def _equality(self) -> _Expr:
        left = self._comparison()
        while True:
            tok = self.tok
            if self._at("op", "=") or self._at("op", "<>"):
                self.i += 1
                right = self._comparison()
                left = self._equal(left, right, tok, negate=tok.text == "<>")
            elif self._at("IS") and self._at("NULL", ahead=1):
                self.i += 2
                left = _is_null(left, negate=False)
            elif self._at("IS") and self._at("NOT", ahead=1) and self._at("NULL", ahead=2):
                self.i += 3
                left = _is_null(left, negate=True)
            elif self._at("IS"):
                self._fail("expected NULL or NOT NULL after IS", self.tokens[self.i + 1])
            else:
                return left
            left = self._deep(left, tok)

    def _equal(self, left: _Expr, right: _Expr, tok: _Token, *, negate: bool) -> _Expr:
        for side in (left, right):
            if side.is_constant and side.value is None:
                raise self._error(f"'{side.text}' cannot be compared.", tok)
        if left.kind is _Kind.BOOL_CONSTANT and right.is_constant and not right.is_boolean:
            raise self._error(f"'{left.text}' cannot be compared with '{right.text}'", tok)
        lf, rf = left.fn, right.fn

        def equal(p: Props) -> Value:
            lv, rv = lf(p), rf(p)
            result: Value
            if lv is None:
                result = rv is None or None  # NULL = x is unknown, NULL = NULL (IS NULL) is true
            elif rv is None:
                result = False
            else:
                result = _java_equals(lv, rv) or _compare(lv, rv) == 0
            return result if result is None or not negate else not result

        return _boolean(equal, f"{left.text} {tok.text} {right.text}", left, right)

    def _comparison(self) -> _Expr:
        left = self._unary()
        while True:
            tok = self.tok
            negated = self._at("NOT") and self.tokens[self.i + 1].kind in (
                "BETWEEN", "IN", "CONTAINS", "STARTSWITH", "ENDSWITH"
            )  # fmt: skip
            if negated:
                self.i += 1
            word = self.tok
            if not negated and word.kind == "op" and word.text in _ORDERINGS:
                self.i += 1
                left = self._ordering(left, self._unary(), word)
            elif word.kind == "BETWEEN":
                self.i += 1
                low = self._unary()
                self._take("AND", what="AND after the lower bound of BETWEEN")
                left = self._between(left, low, self._unary(), word, negated)
            elif word.kind == "IN":
                self.i += 1
                left = self._in(left, word, negated)
            elif word.kind in ("CONTAINS", "STARTSWITH", "ENDSWITH"):
                self.i += 1
                left = _string_test(left, word.kind, self._string(), negated)
            else:
                return left
            left = self._deep(left, tok)

    def _ordering(self, left: _Expr, right: _Expr, tok: _Token) -> _Expr:
        for side in (left, right):
            numeric = side.kind is _Kind.CONSTANT and not isinstance(side.value, str)
            if (side.is_constant and not numeric) or side.is_boolean:
                raise self._error(f"Value '{side.text}' cannot be compared.", tok)
        accept = _ORDERINGS[tok.text]
        lf, rf = left.fn, right.fn

        def ordering(p: Props) -> Value:
            lv = lf(p)
            if lv is None:
                return None
            rv = rf(p)
            if rv is None:
                return None
            if isinstance(lv, str) and isinstance(rv, str):
                lv, rv = _java_double(lv), _java_double(rv)
            return accept(_compare(lv, rv))

        return _boolean(ordering, f"{left.text} {tok.text} {right.text}", left, right)

    def _between(self, value: _Expr, low: _Expr, high: _Expr, tok: _Token, negated: bool) -> _Expr:
        if negated:
            return _junction(
                "OR", [self._ordering(value, low, _op("<", tok)), self._ordering(value, high, _op(">", tok))]
            )
        if low.is_constant and high.is_constant:
            if low.value is None or high.value is None:
                raise self._error("Illegal values of between, values can not be null!", tok)
            try:
                wrong = _compare(high.value, low.value) < 0
            except _EvalError as exc:
                raise self._error(f"Illegal values of between: {exc}", tok) from None
            if wrong:
                raise self._error(
                    f"Illegal values of between, left value({low.text}) must less than or equal to "
                    f"right value({high.text})",
                    tok,
                )
        parts = [self._ordering(value, low, _op(">=", tok)), self._ordering(value, high, _op("<=", tok))]
        return _junction("AND", parts)

    def _in(self, left: _Expr, tok: _Token, negated: bool) -> _Expr:
        if left.kind is not _Kind.PROPERTY:
            raise self._error(f"Expected a property for In expression, got: {left.text}", tok)
        self._take("op", "(", "( after IN")
        items = {self._string()}
        while self._at("op", ","):
            self.i += 1
            items.add(self._string())
        self._take("op", ")", ") or , in the IN list")
        inner = left.fn

        def contained(p: Props) -> Value:
            v = inner(p)
            return None if not isinstance(v, str) else (v in items) != negated

        return _boolean(contained, f"{left.text} {'NOT ' if negated else ''}IN (...)", left)

    def _string(self) -> str:
        return _unquote(self._take("string", what="a string literal").text)

    def _unary(self) -> _Expr:
        tok = self.tok
        self.nesting += 1
        try:
            if self.nesting > MAX_NESTING:
                raise self._error(f"expression nested deeper than {MAX_NESTING}", tok)
            return self._unary_body(tok)
        finally:
            self.nesting -= 1

    def _unary_body(self, tok: _Token) -> _Expr:
        if self._at("op", "+"):
            self.i += 1
            return self._unary()
        if self._at("op", "-"):
            self.i += 1
            return _negate(self._unary())
        if self._at("NOT"):
            self.i += 1
            inner = self._as_boolean(self._unary(), self.tok)
            fn = inner.fn

            def negation(p: Props) -> Value:
                v = fn(p)
                return None if v is None else not v

            return self._deep(_boolean(negation, f"NOT {inner.text}", inner), tok)
        return self._primary()

    def _primary(self) -> _Expr:
        tok = self.tok
        self.i += 1
        if tok.kind == "string":
            return _constant(_unquote(tok.text))
        if tok.kind == "decimal":
            return _constant(_decimal(tok))
        if tok.kind == "float":
            return _constant(_float(tok))
        if tok.kind in ("TRUE", "FALSE", "NULL"):
            return _constant({"TRUE": True, "FALSE": False, "NULL": None}[tok.kind])
        if tok.kind == "id":
            name = tok.text
            return _Expr(_Kind.PROPERTY, lambda p: p.get(name), name)
        if tok.kind == "op" and tok.text == "(":
            inner = self._or()
            self._take("op", ")", "a closing )")
            return inner
        self.i -= 1
        self._fail("expected a literal, a property name, NOT, - or (")


_ORDERINGS: dict[str, Callable[[int], bool]] = {
    ">": lambda c: c > 0,
    ">=": lambda c: c >= 0,
    "<": lambda c: c < 0,
    "<=": lambda c: c <= 0,
}


def _op(text: str, tok: _Token) -> _Token:
    return _Token("op", text, tok.pos)


def _unquote(image: str) -> str:
    return image[1:-1].replace("''", "'")


def _decimal(tok: _Token) -> int:
    digits = tok.text.rstrip("lL")
    value = int(digits)
    if value > _LONG_MAX:
        raise SelectorParseError(f"number {digits} is out of the range of a long", tok.pos)
    return value if value <= _INT_MAX else JavaLong(value)


def _float(tok: _Token) -> float:
    value = float(tok.text)
    if math.isinf(value):
        raise SelectorParseError(f"{tok.text} is greater than 1.7976931348623157E308", tok.pos)
    if value < _DOUBLE_MIN:
        raise SelectorParseError(f"{tok.text} is less than 4.9E-324", tok.pos)
    return value


def _negate(inner: _Expr) -> _Expr:
    fn = inner.fn

    def negate(p: Props) -> Value:
        v = fn(p)
        if isinstance(v, bool) or not isinstance(v, int | float):
            return None
        if isinstance(v, JavaLong):
            return JavaLong(-v if v != _LONG_MIN else v)
        if isinstance(v, int):
            return -v if v != _INT_MIN else v
        return -v

    if inner.kind is _Kind.CONSTANT and not isinstance(inner.value, str):
        value = negate({})
        return _Expr(_Kind.VALUE, lambda _p: value, f"-{inner.text}", inner.depth + 1)
    return _Expr(_Kind.VALUE, negate, f"-{inner.text}", inner.depth + 1)


def _is_null(inner: _Expr, *, negate: bool) -> _Expr:
    fn = inner.fn
    return _boolean(
        lambda p: (fn(p) is None) != negate, f"{inner.text} IS {'NOT ' if negate else ''}NULL", inner
    )


def _string_test(inner: _Expr, kind: str, needle: str, negated: bool) -> _Expr:
    fn = inner.fn
    test: Callable[[str], bool] = {
        "CONTAINS": lambda s: needle in s,
        "STARTSWITH": lambda s: s.startswith(needle),
        "ENDSWITH": lambda s: s.endswith(needle),
    }[kind]

    def run(p: Props) -> Value:
        v = fn(p)
        return isinstance(v, str) and test(v) != negated

    return _boolean(run, f"{inner.text} {'NOT ' if negated else ''}{kind} {_literal_text(needle)}", inner)


def _junction(keyword: str, parts: list[_Expr]) -> _Expr:
    """``parts`` joined by AND or OR in SQL's three-valued logic, evaluated left to right."""
    fns = [p.fn for p in parts]
    decisive = keyword == "OR"  # OR stops at the first TRUE, AND at the first FALSE

    def run(p: Props) -> Value:
        unknown = False
        for fn in fns:
            v = fn(p)
            if v is None:
                unknown = True
            elif bool(v) is decisive:
                return decisive
        return None if unknown else not decisive

    return _boolean(run, f" {keyword} ".join(x.text for x in parts), *parts)


# == public API ================================================================================
@dataclass(slots=True, frozen=True)
class Selector:
    """A compiled selector. :meth:`evaluate` never raises: what fails in Java evaluates to None."""

    expression: str
    _fn: Fn

    def evaluate(self, properties: Props) -> bool | None:
        try:
            result = self._fn(properties)
        except (_EvalError, ValueError, OverflowError):
            return None
        return result if isinstance(result, bool) else None

    def matches(self, properties: Props) -> bool:
        return self.evaluate(properties) is True


def parse(expression: str) -> Selector:
    """Compile ``expression``; raises :class:`SelectorParseError` for anything that is not a selector."""
    parser = _Parser(expression)
    return Selector(expression, parser.selector().fn)


@lru_cache(maxsize=256)
def compile_cached(expression: str) -> Selector:
    """:func:`parse` with a cache, as upstream keeps its last compiled selectors."""
    return parse(expression)
