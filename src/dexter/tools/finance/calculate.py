"""The `calculate` tool: exact decimal arithmetic for financial math.

Models are unreliable at arithmetic, and binary floats turn 0.1 + 0.2 into 0.30000000000000004,
so every value here is a `decimal.Decimal` under a fixed 34-digit context (IEEE decimal128).
Expressions are parsed with `ast` and walked against a whitelist; nothing is ever `eval`ed.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import (
    ROUND_HALF_UP,
    Context,
    Decimal,
    DecimalException,
    DivisionByZero,
    InvalidOperation,
    Overflow,
    localcontext,
)
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, WithJsonSchema

from dexter.principal import ToolScope
from dexter.tools.base import Resources, Tool, ToolContext, ToolFailure, ToolResult

PRECISION = 34
# Bounds that keep results meaningful and printable; finance never needs numbers near them.
MAX_MAGNITUDE = 1000
MAX_EXPONENT = 1000
MAX_EXPRESSION_CHARS = 2000
MAX_VALUES = 10_000

_CONTEXT = Context(
    prec=PRECISION,
    Emax=MAX_MAGNITUDE,
    Emin=-MAX_MAGNITUDE,
    traps=[InvalidOperation, DivisionByZero, Overflow],
)

# Output formatting must never round or trap: inputs may carry more digits than PRECISION.
_DISPLAY = Context(prec=4 * MAX_MAGNITUDE, Emax=4 * MAX_MAGNITUDE, Emin=-4 * MAX_MAGNITUDE)

_SCALES = {
    "k": 3,
    "m": 6,
    "mm": 6,
    "mn": 6,
    "b": 9,
    "bn": 9,
    "t": 12,
    "tn": 12,
}

# One numeric literal. The thousands-separated form is tried first so "1,234" is one number;
# the `(?!\d)` keeps "1,2345" from being read as 1,234 followed by a stray 5.
_NUMBER = re.compile(
    r"""
    (?P<mantissa>
        \d{1,3}(?:,\d{3})+(?!\d)(?:\.\d+)?
      | \d(?:_?\d)*(?:\.(?:\d(?:_?\d)*)?)?
      | \.\d(?:_?\d)*
    )
    (?P<exponent>[eE][+-]?\d+)?
    (?:
        \s*(?P<percent>%)
      | (?P<scale>(?i:mm|mn|m|bn|b|tn|t|k))(?![A-Za-z0-9_])
    )?
    """,
    re.VERBOSE | re.ASCII,
)
_THOUSANDS = re.compile(r"\d{1,3}(?:,\d{3})+(?!\d)", re.ASCII)
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_STANDALONE = re.compile(r"\s*(?P<sign>[+-]?)\s*\$?\s*(?P<number>.*?)\s*")
# Placeholders for numbers inside expressions; user identifiers with this prefix are refused
# so a placeholder can never be forged.
_PLACEHOLDER = "__num"
_DIGITS = frozenset("0123456789")
# Typographic variants models and pasted text use; none of them clash with supported syntax.
_NORMALIZE = str.maketrans({"−": "-", "×": "*", "÷": "/", "$": None})

_NUMBER_HELP = (
    "write digits with optional ',' or '_' separators, an optional exponent (1.2e9), "
    "an optional K/M/B/T suffix (thousand/million/billion/trillion) or a % suffix (12% = 0.12)"
)


def parse_number(text: str) -> Decimal:
    """Read one financial figure: "391,035,000,000", "-$1.2B", "12%", "1_000", "2.5e-3"."""
    normalized = text.replace("−", "-")
    outer = _STANDALONE.fullmatch(normalized)
    if outer is None:  # pragma: no cover - the pattern matches every string
        raise ValueError(f"could not read {text!r} as a number: {_NUMBER_HELP}")
    match = _NUMBER.fullmatch(outer["number"])
    if match is None:
        raise ValueError(f"could not read {text!r} as a number: {_NUMBER_HELP}")
    value = _literal_value(match)
    return -value if outer["sign"] == "-" else value


def _literal_value(match: re.Match[str]) -> Decimal:
    digits = match["mantissa"].replace(",", "").replace("_", "") + (match["exponent"] or "")
    value = Decimal(digits)
    if match["percent"]:
        value = value.scaleb(-2)
    elif match["scale"]:
        value = value.scaleb(_SCALES[match["scale"].lower()])
    if not value.is_zero() and abs(value.adjusted()) > MAX_MAGNITUDE:
        raise ToolFailure(
            f"number {match.group(0).strip()!r} is out of range "
            f"(magnitudes from 1e-{MAX_MAGNITUDE} to 1e{MAX_MAGNITUDE} are supported)"
        )
    return value


def _coerce_number(value: object) -> object:
    if value is None or isinstance(value, Decimal):
        return value
    if isinstance(value, bool):
        raise ValueError("expected a number, not a boolean")
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError("expected a finite number")
        # repr gives the shortest text that round-trips, i.e. what the model actually wrote.
        return Decimal(repr(value))
    if isinstance(value, str):
        try:
            return parse_number(value)
        except ToolFailure as exc:
            raise ValueError(str(exc)) from exc
    raise ValueError(f"expected a number or a numeric string, got {type(value).__name__}")


def _coerce_numbers(value: object) -> object:
    if isinstance(value, list | tuple):
        return [_coerce_number(item) for item in value]
    return value


_NUMBER_SCHEMA: dict[str, Any] = {"anyOf": [{"type": "number"}, {"type": "string"}]}

NumberInput = Annotated[
    Decimal | None, BeforeValidator(_coerce_number), WithJsonSchema(_NUMBER_SCHEMA)
]
NumberListInput = Annotated[
    list[Decimal] | None,
    BeforeValidator(_coerce_numbers),
    WithJsonSchema({"type": "array", "items": _NUMBER_SCHEMA}),
]

Operation = Literal[
    "evaluate", "percent_change", "growth", "cagr", "margin", "ratio", "sum", "mean"
]


class CalculateArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # The description says which fields each operation takes; per-field prose would repeat it.
    operation: Operation
    expression: str | None = None
    start: NumberInput = None
    end: NumberInput = None
    years: NumberInput = None
    part: NumberInput = None
    whole: NumberInput = None
    numerator: NumberInput = None
    denominator: NumberInput = None
    values: NumberListInput = None


InputValue = Decimal | str | list[Decimal]


@dataclass(frozen=True)
class _Outcome:
    result: Decimal
    inputs: dict[str, InputValue]
    percent: bool = False
    signed: bool = False
    extra: dict[str, str] = field(default_factory=dict)
    note: str = ""


class CalculateTool(Tool[CalculateArgs]):
    name: ClassVar[str] = "calculate"
    scope: ClassVar[ToolScope] = "public"
    description: ClassVar[str] = (
        "Exact decimal arithmetic for financial math.\n"
        "operation(fields): evaluate(expression: + - * / ** ( ), abs round min max sqrt ln "
        "log10 log exp); percent_change or growth(start, end); cagr(start, end, years); "
        "margin(part, whole); ratio(numerator, denominator); sum or mean(values). "
        'Numbers may be strings: "391,035,000,000", "$1.2B", "12%". percent_change, cagr and '
        "margin return percents (6.43 means 6.43%)."
    )
    Args: ClassVar[type[BaseModel]] = CalculateArgs
    concurrency_safe: ClassVar[bool] = True
    needs_approval: ClassVar[bool] = False
    repeatable: ClassVar[bool] = True

    def resources(self, args: CalculateArgs) -> Resources:
        return Resources()  # pure arithmetic

    async def run(self, args: CalculateArgs, ctx: ToolContext) -> ToolResult:
        with localcontext(_CONTEXT):
            try:
                outcome = _compute(args)
            except DivisionByZero as exc:
                raise ToolFailure("division by zero") from exc
            except Overflow as exc:
                raise ToolFailure(
                    f"result is too large (beyond 1e{MAX_MAGNITUDE}); check the inputs"
                ) from exc
            except DecimalException as exc:
                raise ToolFailure("the result is undefined for these inputs") from exc
        return _render(args.operation, outcome)


def _compute(args: CalculateArgs) -> _Outcome:
    op = args.operation
    if op == "evaluate":
        expression = _need_text(args.expression, op)
        return _Outcome(_evaluate(expression), {"expression": expression})
    if op in ("percent_change", "growth"):
        start, end = _need(args, op, "start", "end")
        return _percent_change(start, end)
    if op == "cagr":
        start, end, years = _need(args, op, "start", "end", "years")
        return _cagr(start, end, years)
    if op == "margin":
        part, whole = _need(args, op, "part", "whole")
        if whole.is_zero():
            raise ToolFailure("margin is undefined when whole is zero (division by zero)")
        return _Outcome(part / whole * 100, {"part": part, "whole": whole}, percent=True)
    if op == "ratio":
        numerator, denominator = _need(args, op, "numerator", "denominator")
        if denominator.is_zero():
            raise ToolFailure("ratio is undefined when denominator is zero (division by zero)")
        return _Outcome(
            numerator / denominator, {"numerator": numerator, "denominator": denominator}
        )
    values = _need_values(args.values, op)
    total = sum(values, Decimal(0))
    if op == "sum":
        return _Outcome(+total, {"values": values})
    return _Outcome(total / len(values), {"values": values}, extra={"count": str(len(values))})


def _need(args: CalculateArgs, op: str, *names: str) -> list[Decimal]:
    got = [getattr(args, name) for name in names]
    missing = [name for name, value in zip(names, got, strict=True) if value is None]
    if missing:
        raise ToolFailure(f"{op} needs {', '.join(names)}; missing {', '.join(missing)}")
    return got


def _need_text(expression: str | None, op: str) -> str:
    if expression is None or not expression.strip():
        raise ToolFailure(f"{op} needs a non-empty expression")
    return expression


def _need_values(values: list[Decimal] | None, op: str) -> list[Decimal]:
    if not values:
        raise ToolFailure(f"{op} needs a non-empty list of values")
    if len(values) > MAX_VALUES:
        raise ToolFailure(f"{op} accepts at most {MAX_VALUES:,} values")
    return values


def _percent_change(start: Decimal, end: Decimal) -> _Outcome:
    if start.is_zero():
        raise ToolFailure(
            "percent change from a start of zero is undefined; report the absolute change instead"
        )
    change = end - start
    # Dividing by |start| keeps the sign meaningful: a loss shrinking from -10 to -5 is +50%.
    note = "start is negative, so the change is measured against |start|" if start < 0 else ""
    return _Outcome(
        change / abs(start) * 100,
        {"start": start, "end": end},
        percent=True,
        signed=True,
        extra={"change": _exact(change)},
        note=note,
    )


def _cagr(start: Decimal, end: Decimal, years: Decimal) -> _Outcome:
    if start <= 0:
        raise ToolFailure(
            "CAGR is undefined for a zero or negative start value "
            f"(start={_plain(start)}): compounding needs a positive base. "
            "Use percent_change, or describe the change in absolute terms."
        )
    if end < 0:
        raise ToolFailure(
            f"CAGR is undefined for a negative end value (end={_plain(end)}); "
            "use percent_change instead."
        )
    if years <= 0:
        raise ToolFailure(f"years must be positive, got {_plain(years)}")
    ratio = end / start
    growth = Decimal(-1) if ratio.is_zero() else ratio ** (Decimal(1) / years) - 1
    return _Outcome(
        growth * 100,
        {"start": start, "end": end, "years": years},
        percent=True,
        signed=True,
    )


# --- expressions -------------------------------------------------------------------------------


def _scan(expression: str) -> tuple[str, dict[str, Decimal]]:
    """Replace every numeric literal with a placeholder name so `ast` never sees our syntax.

    Commas are ambiguous: "1,234" is a number at top level but two arguments inside max(...).
    Inside a call's parentheses a comma between digit groups is refused rather than guessed.
    """
    text = expression.translate(_NORMALIZE).replace("^", "**")
    out: list[str] = []
    numbers: dict[str, Decimal] = {}
    parens: list[bool] = []  # True for a call's parentheses, False for grouping
    last_was_name = False
    i = 0
    while i < len(text):
        char = text[i]
        if char.isspace():
            out.append(" ")  # Python's parser rejects exotic spaces such as NBSP
            i += 1
            continue
        if char in _DIGITS or (char == "." and text[i + 1 : i + 2] in _DIGITS):
            match = _NUMBER.match(text, i)
            if match is None:  # pragma: no cover - a digit always starts a number
                raise ToolFailure(f"could not read the number at position {i}")
            thousands = _THOUSANDS.match(match["mantissa"])
            if thousands is not None and parens and parens[-1]:
                raise ToolFailure(
                    f"ambiguous comma in {match['mantissa']!r} inside a function's arguments: "
                    "write the number without separators (or with '_'), and separate "
                    "arguments with ', '"
                )
            placeholder = f"{_PLACEHOLDER}{len(numbers)}"
            numbers[placeholder] = _literal_value(match)
            out.append(f" {placeholder} ")
            i = match.end()
            last_was_name = False
            continue
        ident = _IDENTIFIER.match(text, i)
        if ident is not None:
            if ident.group(0).startswith(_PLACEHOLDER):
                raise ToolFailure(f"unknown name {ident.group(0)!r}")
            out.append(ident.group(0))
            i = ident.end()
            last_was_name = True
            continue
        if char == "%":
            raise ToolFailure(
                "'%' must directly follow a number (12% means 0.12); modulo is not supported"
            )
        if char == "(":
            parens.append(last_was_name)
        elif char == ")" and parens:
            parens.pop()
        out.append(char)
        i += 1
        last_was_name = False
    return "".join(out), numbers


def _evaluate(expression: str) -> Decimal:
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise ToolFailure(f"expression is too long (limit {MAX_EXPRESSION_CHARS} characters)")
    source, numbers = _scan(expression)
    try:
        tree = ast.parse(source.strip(), mode="eval")
    except SyntaxError as exc:
        hint = " ('%' means percent, 12% = 0.12; there is no modulo)" if "%" in expression else ""
        raise ToolFailure(
            f"could not parse the expression {expression!r}: use numbers, + - * / ** ( ) and "
            f"functions {_FUNCTION_LIST}{hint}"
        ) from exc
    except (RecursionError, MemoryError) as exc:
        raise ToolFailure("expression is too deeply nested") from exc
    try:
        return +_Evaluator(numbers).visit(tree.body)
    except RecursionError as exc:
        raise ToolFailure("expression is too deeply nested") from exc


_BINARY: dict[type[ast.operator], str] = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.Pow: "**",
}

_SYNTAX_NAMES: dict[type[ast.AST], str] = {
    ast.Compare: "comparisons",
    ast.BoolOp: "and/or",
    ast.Subscript: "indexing",
    ast.Lambda: "lambda",
    ast.IfExp: "if/else",
    ast.List: "lists",
    ast.Tuple: "a comma outside function arguments",
    ast.Dict: "dicts",
    ast.Set: "sets",
}


class _Evaluator:
    def __init__(self, numbers: dict[str, Decimal]) -> None:
        self._numbers = numbers

    def visit(self, node: ast.expr) -> Decimal:
        if isinstance(node, ast.Name):
            return self._name(node.id)
        if isinstance(node, ast.UnaryOp):
            operand = self.visit(node.operand)
            if isinstance(node.op, ast.USub):
                return -operand
            if isinstance(node.op, ast.UAdd):
                return +operand
            raise ToolFailure("only unary + and - are supported")
        if isinstance(node, ast.BinOp):
            return self._binary(node)
        if isinstance(node, ast.Call):
            return self._call(node)
        if isinstance(node, ast.Attribute):
            raise ToolFailure(f"attribute access ('.{node.attr}') is not allowed")
        if isinstance(node, ast.Constant):
            raise ToolFailure(f"unsupported literal {node.value!r}: only numbers are allowed")
        what = _SYNTAX_NAMES.get(type(node), type(node).__name__)
        raise ToolFailure(
            f"unsupported syntax ({what}): use numbers, + - * / ** ( ) and functions "
            f"{_FUNCTION_LIST}"
        )

    def _name(self, name: str) -> Decimal:
        if name in self._numbers:
            return self._numbers[name]
        if name in _FUNCTIONS:
            raise ToolFailure(f"{name} is a function; call it as {name}(...)")
        raise ToolFailure(f"unknown name {name!r}: only numbers and functions {_FUNCTION_LIST}")

    def _binary(self, node: ast.BinOp) -> Decimal:
        symbol = _BINARY.get(type(node.op))
        if symbol is None:
            raise ToolFailure(
                f"unsupported operator {type(node.op).__name__}: only + - * / ** are allowed"
            )
        left = self.visit(node.left)
        right = self.visit(node.right)
        if symbol == "+":
            return left + right
        if symbol == "-":
            return left - right
        if symbol == "*":
            return left * right
        if symbol == "/":
            if right.is_zero():
                raise ToolFailure("division by zero")
            return left / right
        return _power(left, right)

    def _call(self, node: ast.Call) -> Decimal:
        if isinstance(node.func, ast.Attribute):
            raise ToolFailure(f"attribute access ('.{node.func.attr}') is not allowed")
        if not isinstance(node.func, ast.Name):
            raise ToolFailure(f"only direct calls to {_FUNCTION_LIST} are allowed")
        name = node.func.id
        if name in self._numbers:
            raise ToolFailure("a number can't be called; write * for multiplication, e.g. 2*(3+4)")
        function = _FUNCTIONS.get(name)
        if function is None:
            raise ToolFailure(f"unknown function {name!r}: allowed functions are {_FUNCTION_LIST}")
        if node.keywords or any(isinstance(arg, ast.Starred) for arg in node.args):
            raise ToolFailure(f"{name} takes plain positional arguments")
        return function([self.visit(arg) for arg in node.args])


def _power(base: Decimal, exponent: Decimal) -> Decimal:
    if abs(exponent) > MAX_EXPONENT:
        raise ToolFailure(
            f"exponent {_plain(exponent)} is too large: |exponent| must be at most {MAX_EXPONENT}"
        )
    if base.is_zero() and exponent <= 0:
        raise ToolFailure("0 raised to a zero or negative power is undefined")
    if base < 0 and exponent != exponent.to_integral_value():
        raise ToolFailure("a negative number raised to a fractional power has no real result")
    return base**exponent


def _arity(name: str, args: Sequence[Decimal], low: int, high: int, usage: str) -> None:
    if not low <= len(args) <= high:
        raise ToolFailure(f"{name} takes {usage}, got {len(args)} argument(s)")


def _one(name: str, args: Sequence[Decimal]) -> Decimal:
    _arity(name, args, 1, 1, "one argument")
    return args[0]


def _positive(name: str, value: Decimal) -> Decimal:
    if value <= 0:
        raise ToolFailure(f"{name} is only defined for positive numbers, got {_plain(value)}")
    return value


def _round(args: Sequence[Decimal]) -> Decimal:
    _arity("round", args, 1, 2, "round(x) or round(x, n)")
    places = args[1] if len(args) == 2 else Decimal(0)
    if places != places.to_integral_value() or abs(places) > PRECISION:
        raise ToolFailure(f"round's n must be a whole number between -{PRECISION} and {PRECISION}")
    try:
        # Half away from zero, as in spreadsheets and financial reporting, not banker's rounding.
        return args[0].quantize(Decimal(1).scaleb(-int(places)), rounding=ROUND_HALF_UP)
    except InvalidOperation as exc:
        raise ToolFailure(
            f"can't round to {int(places)} places: the result would need more than "
            f"{PRECISION} digits"
        ) from exc


def _sqrt(args: Sequence[Decimal]) -> Decimal:
    value = _one("sqrt", args)
    if value < 0:
        raise ToolFailure(f"sqrt of a negative number ({_plain(value)}) has no real result")
    return value.sqrt()


def _log(args: Sequence[Decimal]) -> Decimal:
    if len(args) == 1:
        # Python's log is natural, a spreadsheet's LOG is base 10: refuse to guess.
        raise ToolFailure("log(x) is ambiguous: use ln(x), log10(x) or log(x, base)")
    _arity("log", args, 2, 2, "log(x, base)")
    value, base = _positive("log", args[0]), _positive("log's base", args[1])
    if base == 1:
        raise ToolFailure("log's base can't be 1")
    return value.ln() / base.ln()


_Function = Callable[[Sequence[Decimal]], Decimal]


def _extreme(name: str, pick: _Function) -> _Function:
    def apply(args: Sequence[Decimal]) -> Decimal:
        _arity(name, args, 1, MAX_VALUES, "one or more arguments")
        return pick(args)

    return apply


_FUNCTIONS: dict[str, _Function] = {
    "abs": lambda args: abs(_one("abs", args)),
    "round": _round,
    "min": _extreme("min", min),
    "max": _extreme("max", max),
    "sqrt": _sqrt,
    "ln": lambda args: _positive("ln", _one("ln", args)).ln(),
    "log10": lambda args: _positive("log10", _one("log10", args)).log10(),
    "log": _log,
    "exp": lambda args: _one("exp", args).exp(),
}
_FUNCTION_LIST = "abs, round(x, n), min, max, sqrt, ln, log10, log(x, base), exp"


# --- output ------------------------------------------------------------------------------------


def _exact(value: Decimal) -> str:
    """The full value in plain notation, without trailing zeros."""
    if value.is_zero():
        return "0"
    normal = value.normalize(_DISPLAY)
    if -40 <= normal.adjusted() <= 60:
        return format(normal, "f")
    return str(normal)


def _plain(value: Decimal) -> str:
    """An input shown exactly, with thousands separators for readability."""
    text = _exact(value)
    if "E" in text:
        return text
    sign, body = ("-", text[1:]) if text.startswith("-") else ("", text)
    whole, dot, fraction = body.partition(".")
    return f"{sign}{int(whole):,}{dot}{fraction}"


def _rounded(value: Decimal) -> str:
    """A readable form: integers grouped, others to 6 decimals (or 6 significant digits)."""
    if value.is_zero():
        return "0"
    magnitude = value.adjusted()
    if magnitude >= PRECISION or magnitude < -12:
        return format(value.normalize(_DISPLAY), ".6g")
    if value == value.to_integral_value():
        return f"{int(value):,}"
    places = 6 if magnitude >= 0 else 5 - magnitude
    return _strip_zeros(format(value.quantize(Decimal(1).scaleb(-places), context=_DISPLAY), ",f"))


def _percent(value: Decimal, signed: bool) -> str:
    sign = "+" if signed else ""
    if not value.is_zero() and value.adjusted() >= PRECISION:
        return format(value.normalize(_DISPLAY), f"{sign}.6g") + "%"
    return format(value.quantize(Decimal("0.0001"), context=_DISPLAY), f"{sign},f") + "%"


def _strip_zeros(text: str) -> str:
    return text.rstrip("0").rstrip(".") if "." in text else text


def _show_input(value: InputValue) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        # Ungrouped, so the list's commas can't be mistaken for thousands separators.
        return "[" + ", ".join(_exact(item) for item in value) + "]"
    return _plain(value)


def _data_input(value: InputValue) -> str | list[str]:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return [_exact(item) for item in value]
    return _exact(value)


def _render(operation: str, outcome: _Outcome) -> ToolResult:
    exact = _exact(outcome.result)
    if outcome.percent:
        shown = _percent(outcome.result, outcome.signed)
        exact_shown = f"{exact}%"
    else:
        shown, exact_shown = _rounded(outcome.result), exact
    if operation == "evaluate":
        line = f"{str(outcome.inputs['expression']).strip()} = {shown}"
    else:
        inputs = ", ".join(f"{key}={_show_input(value)}" for key, value in outcome.inputs.items())
        line = f"{operation}({inputs}) = {shown}"
    details = []
    if Decimal(shown.replace(",", "").rstrip("%")) != outcome.result:
        details.append(f"exact {exact_shown}")
    details.extend(f"{key} {_plain(Decimal(value))}" for key, value in outcome.extra.items())
    if outcome.note:
        details.append(outcome.note)
    if details:
        line += f" ({'; '.join(details)})"
    data: dict[str, Any] = {
        "operation": operation,
        "inputs": {key: _data_input(value) for key, value in outcome.inputs.items()},
        "result": exact,
        "unit": "percent" if outcome.percent else "number",
        "display": shown,
        **outcome.extra,
    }
    return ToolResult(content=line, data=data)
