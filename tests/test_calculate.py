from __future__ import annotations

from decimal import Decimal, localcontext
from typing import Any

import pytest
from pydantic import ValidationError

from dexter.tools.base import ToolContext, ToolFailure, ToolResult
from dexter.tools.finance import CalculateArgs, CalculateTool
from dexter.tools.registry import ToolRegistry

# Apple, fiscal years ending September (10-K figures, USD).
REVENUE_FY2019 = 260_174_000_000
REVENUE_FY2024 = 391_035_000_000
REVENUE_FY2025 = 416_161_000_000
NET_INCOME_FY2025 = 112_010_000_000


async def calc(**fields: Any) -> ToolResult:
    """Call the tool the way the agent loop does: validate the model's JSON, then run."""
    result = await CalculateTool().run(CalculateArgs.model_validate(fields), ToolContext())
    assert isinstance(result, ToolResult)
    assert not result.is_error
    return result


def exact(result: ToolResult) -> Decimal:
    return Decimal(result.data["result"])


async def failure(**fields: Any) -> str:
    with pytest.raises(ToolFailure) as caught:
        await calc(**fields)
    return str(caught.value)


def expected(compute: Any) -> Decimal:
    with localcontext() as ctx:
        ctx.prec = 34
        return Decimal(compute())


# --- operations on real figures ---------------------------------------------------------------


async def test_percent_change_apple_revenue_growth() -> None:
    result = await calc(operation="percent_change", start="391,035,000,000", end=REVENUE_FY2025)
    want = expected(
        lambda: (Decimal(REVENUE_FY2025) - REVENUE_FY2024) / Decimal(REVENUE_FY2024) * 100
    )
    assert exact(result) == want
    assert str(want).startswith("6.4255")
    assert result.data["unit"] == "percent"
    assert result.data["change"] == "25126000000"
    assert result.data["inputs"] == {"start": "391035000000", "end": "416161000000"}
    assert "+6.4255%" in result.content
    assert "391,035,000,000" in result.content
    assert "416,161,000,000" in result.content


async def test_growth_is_an_alias_and_negative_start_uses_magnitude() -> None:
    result = await calc(operation="growth", start=-10, end=-5)
    assert exact(result) == 50
    assert "|start|" in result.content


async def test_cagr_over_six_years() -> None:
    result = await calc(operation="cagr", start=REVENUE_FY2019, end="416.161B", years=6)
    want = expected(
        lambda: ((Decimal(REVENUE_FY2025) / REVENUE_FY2019) ** (Decimal(1) / 6) - 1) * 100
    )
    assert abs(exact(result) - want) < Decimal("1e-25")
    assert str(want).startswith("8.1432")
    assert "+8.1433%" in result.content
    assert result.data["inputs"]["years"] == "6"


async def test_cagr_with_fractional_years() -> None:
    result = await calc(operation="cagr", start=100, end=121, years="2")
    assert exact(result) == 10
    half = await calc(operation="cagr", start=100, end=110, years=0.5)
    assert exact(half) == 21


async def test_net_margin() -> None:
    result = await calc(operation="margin", part=NET_INCOME_FY2025, whole=REVENUE_FY2025)
    want = expected(lambda: Decimal(NET_INCOME_FY2025) / REVENUE_FY2025 * 100)
    assert exact(result) == want
    assert "26.9151%" in result.content
    assert f"exact {result.data['result']}%" in result.content


async def test_ratio_and_list_operations() -> None:
    ratio = await calc(operation="ratio", numerator="$3.2T", denominator="112.01B")
    assert exact(ratio) == expected(lambda: Decimal(3_200_000_000_000) / 112_010_000_000)
    assert ratio.data["unit"] == "number"
    assert "28.568878" in ratio.content

    total = await calc(operation="sum", values=[REVENUE_FY2024, REVENUE_FY2025])
    assert exact(total) == REVENUE_FY2024 + REVENUE_FY2025
    assert "807,196,000,000" in total.content

    mean = await calc(operation="mean", values=["1,000", "2K", 3000.5])
    assert exact(mean) == expected(lambda: Decimal("6000.5") / 3)
    assert mean.data["count"] == "3"


# --- expressions ------------------------------------------------------------------------------


async def test_float_trap_is_exact() -> None:
    result = await calc(operation="evaluate", expression="0.1 + 0.2")
    assert result.data["result"] == "0.3"
    assert result.content == "0.1 + 0.2 = 0.3"
    summed = await calc(operation="sum", values=[0.1, 0.2])
    assert summed.data["result"] == "0.3"


@pytest.mark.parametrize(
    ("expression", "value"),
    [
        ("2 + 3 * 4", "14"),
        ("(2 + 3) * 4", "20"),
        ("2 + 3 * (4 - 1) ** 2 / 9", "5"),
        ("-2 ** 2", "-4"),
        ("2 ** 3 ** 2", "512"),
        ("-(3 - 5) * -2", "-4"),
        ("1.08^2", "1.1664"),
        ("3 × 4 − 2 ÷ 2", "11"),
        ("1\u00a0+\u00a01", "2"),
        (".5 + 1.", "1.5"),
        ("1 / 4", "0.25"),
        ("12% * 250", "30"),
        ("12 % * 250", "30"),
        ("1,234,567.5 * 2", "2469135"),
        ("1_000_000 / 8", "125000"),
        ("1.5e3 + 2E-1", "1500.2"),
        ("1.2B - 300M", "900000000"),
        ("$1.5bn + 2k + 3T", "3001500002000"),
        ("(416.161B - 391.035B) / 391.035B * 100", None),
        ("abs(-3) + round(2.5) + round(-2.5) + round(1234.5678, 2)", "1237.57"),
        ("round(1234.5678, -2)", "1200"),
        ("min(3, 1, 2) + max(1_000, 2e3)", "2001"),
        ("sqrt(16) + log10(1000) + log(8, 2) + ln(exp(2))", "12"),
        ("max((1,234), 5)", "1234"),
    ],
)
async def test_evaluate(expression: str, value: str | None) -> None:
    result = await calc(operation="evaluate", expression=expression)
    if value is None:
        value = str(
            expected(lambda: (Decimal(REVENUE_FY2025) - REVENUE_FY2024) / REVENUE_FY2024 * 100)
        )
    assert Decimal(result.data["result"]) == Decimal(value)


async def test_huge_percent_is_displayed_compactly() -> None:
    result = await calc(operation="percent_change", start="1e-400", end="1e400")
    assert "+1e+802%" in result.content


async def test_evaluate_irrational_result_shows_rounded_and_exact() -> None:
    result = await calc(operation="evaluate", expression="1 / 3")
    assert result.content == "1 / 3 = 0.333333 (exact 0.3333333333333333333333333333333333)"


# --- rejected inputs --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("1 / 0", "division by zero"),
        ("1 / (2 - 2)", "division by zero"),
        ("__import__('os')", "unknown function '__import__'"),
        ("__import__('os').system('ls')", "attribute access ('.system') is not allowed"),
        ("(1).real", "attribute access ('.real') is not allowed"),
        ("2 ** 100000", "exponent 100,000 is too large"),
        ("1e300 ** 1000", "result is too large"),
        ("foo(3)", "unknown function 'foo'"),
        ("x + 1", "unknown name 'x'"),
        ("sqrt", "sqrt is a function"),
        ("2 +* 3", "could not parse the expression '2 +* 3'"),
        ("(1 + 2", "could not parse"),
        ("'abc'", "unsupported literal 'abc'"),
        ("1 < 2", "unsupported syntax (comparisons)"),
        ("[1, 2]", "unsupported syntax (lists)"),
        ("1,2345", "a comma outside function arguments"),
        ("max(100,200)", "ambiguous comma in '100,200'"),
        ("(5 + 5) % 3", "'%' must directly follow a number"),
        ("5 % 3", "'%' means percent"),
        ("log(10)", "log(x) is ambiguous"),
        ("ln(0)", "ln is only defined for positive numbers"),
        ("sqrt(-4)", "sqrt of a negative number"),
        ("(-8) ** (1/3)", "fractional power has no real result"),
        ("0 ** 0", "0 raised to a zero or negative power is undefined"),
        ("round(1, 2, 3)", "round takes round(x) or round(x, n), got 3"),
        ("round(1, 0.5)", "round's n must be a whole number"),
        ("max()", "max takes one or more arguments"),
        ("round(x=1)", "round takes plain positional arguments"),
        ("2(3)", "a number can't be called"),
        ("__num0", "unknown name '__num0'"),
        ("é + 1", "unknown name 'é'"),
        ("2²", "could not parse"),
        ("1e5000", "out of range"),
        ("-" * 1500 + "1", "too deeply nested"),
        ("1" * 3000, "too long"),
    ],
)
async def test_evaluate_rejects(expression: str, message: str) -> None:
    assert message in await failure(operation="evaluate", expression=expression)


async def test_operation_input_errors() -> None:
    assert "CAGR is undefined for a zero or negative start value" in await failure(
        operation="cagr", start=-5, end=10, years=3
    )
    assert "CAGR is undefined for a zero or negative start" in await failure(
        operation="cagr", start=0, end=10, years=3
    )
    assert "negative end value" in await failure(operation="cagr", start=5, end=-1, years=3)
    assert "years must be positive" in await failure(operation="cagr", start=5, end=6, years=0)
    assert "cagr needs start, end, years; missing years" in await failure(
        operation="cagr", start=5, end=6
    )
    assert "percent change from a start of zero is undefined" in await failure(
        operation="percent_change", start=0, end=10
    )
    assert "margin is undefined when whole is zero" in await failure(
        operation="margin", part=1, whole=0
    )
    assert "ratio is undefined when denominator is zero" in await failure(
        operation="ratio", numerator=1, denominator="0"
    )
    assert "needs a non-empty list" in await failure(operation="mean", values=[])
    assert "needs a non-empty expression" in await failure(operation="evaluate")


@pytest.mark.parametrize(
    "fields",
    [
        {"operation": "ratio", "numerator": "abc", "denominator": 1},
        {"operation": "ratio", "numerator": True, "denominator": 1},
        {"operation": "ratio", "numerator": "1,23", "denominator": 1},
        {"operation": "ratio", "a": 1, "b": 2},
        {"operation": "modulo", "expression": "1"},
        {"operation": "ratio", "numerator": float("nan"), "denominator": 1},
    ],
)
def test_args_validation_rejects(fields: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        CalculateArgs.model_validate(fields)


def test_number_strings_parse_exactly() -> None:
    args = CalculateArgs.model_validate(
        {
            "operation": "sum",
            "values": ["391,035,000,000", "-$1.2B", "12%", "1_000", "2.5e-3", " 3K ", "−4", 7],
        }
    )
    assert args.values == [
        Decimal("391035000000"),
        Decimal("-1200000000"),
        Decimal("0.12"),
        Decimal("1000"),
        Decimal("0.0025"),
        Decimal("3000"),
        Decimal("-4"),
        Decimal("7"),
    ]


# --- the tool as the model sees it --------------------------------------------------------------


def _keys(node: Any) -> set[str]:
    if isinstance(node, dict):
        found = set(node)
        for value in node.values():
            found |= _keys(value)
        return found
    if isinstance(node, list):
        return set().union(*(_keys(item) for item in node)) if node else set()
    return set()


def test_spec_is_provider_safe() -> None:
    tool = CalculateTool()
    spec = tool.spec()
    assert spec.name == "calculate"
    params = dict(spec.parameters)
    keys = _keys(params)
    assert "$ref" not in keys
    assert "$defs" not in keys
    assert "title" not in keys
    assert params["type"] == "object"
    assert params["additionalProperties"] is False
    assert params["required"] == ["operation"]
    assert "cagr" in params["properties"]["operation"]["enum"]
    assert tool.summary == "Exact decimal arithmetic for financial math."
    assert CalculateTool.concurrency_safe is True
    assert CalculateTool.needs_approval is False
    assert "calculate" in ToolRegistry([tool])
