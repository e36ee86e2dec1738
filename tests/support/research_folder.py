"""A small research folder as an analyst keeps one: Python models, two notebooks, a workbook
with named ranges, memos citing SEC accessions, CSV data, a TypeScript chart, and what should
never be indexed (ignored folders, a secret, a binary)."""

from __future__ import annotations

import json
from pathlib import Path

# Apple's FY2024 10-K and its latest 10-Q in the recorded submissions (filed 2026-01-30).
APPLE_FY2024_10K = "0000320193-24-000123"
APPLE_LATEST_10Q = "0000320193-26-000006"
NVIDIA_LATEST_10K = "0001045810-26-000021"


def notebook(cells: list[tuple[str, str]]) -> str:
    return json.dumps(
        {
            "cells": [
                {"cell_type": kind, "metadata": {}, "source": source.splitlines(keepends=True)}
                | ({"outputs": [], "execution_count": None} if kind == "code" else {})
                for kind, source in cells
            ],
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 5,
        }
    )


def build_research_folder(root: Path) -> Path:
    files = {
        "models/__init__.py": "",
        "models/wacc.py": (
            '"""Discount rates."""\n\n'
            "def cost_of_equity(risk_free: float, beta: float, premium: float) -> float:\n"
            "    return risk_free + beta * premium\n\n\n"
            "def wacc(equity: float, debt: float, re: float, rd: float, tax: float) -> float:\n"
            "    total = equity + debt\n"
            "    return equity / total * re + debt / total * rd * (1 - tax)\n"
        ),
        "models/dcf.py": (
            "import csv\n\n"
            "from models.wacc import cost_of_equity, wacc\n\n"
            'TICKER = "AAPL"\n'
            'PRICES = "data/aapl_prices.csv"\n\n\n'
            "class DCF:\n"
            "    def __init__(self, cash_flows: list[float]) -> None:\n"
            "        self.cash_flows = cash_flows\n\n"
            "    def value(self, growth: float) -> float:\n"
            "        rate = wacc(3e12, 1e11, cost_of_equity(0.04, 1.2, 0.05), 0.04, 0.16)\n"
            "        return sum(c / (1 + rate) ** i for i, c in enumerate(self.cash_flows, 1))\n"
        ),
        "models/scenarios.py": (
            "from models.dcf import DCF\n\n\n"
            "def bull_case() -> float:\n"
            "    return DCF([110.0, 120.0, 130.0]).value(0.05)\n"
        ),
        "web/format.ts": (
            "export function formatMoney(value: number): string {\n"
            "  return `$${value.toFixed(1)}B`;\n}\n"
        ),
        "web/chart.ts": (
            'import { formatMoney } from "./format";\n\n'
            "export interface Series { ticker: string; values: number[] }\n\n"
            "export function drawRevenue(series: Series): string {\n"
            "  return series.values.map(formatMoney).join(', ');\n}\n"
        ),
        "notebooks/apple_valuation.ipynb": notebook(
            [
                ("markdown", "# Apple valuation, FY2024\nUses the DCF in models/."),
                (
                    "code",
                    "%matplotlib inline\nimport pandas as pd\nfrom models.dcf import DCF\n"
                    'prices = pd.read_csv("data/aapl_prices.csv")\n'
                    'ticker = "AAPL"\n',
                ),
                ("code", "def implied_upside(value, price):\n    return value / price - 1\n"),
                ("code", "DCF([100.0, 105.0]).value(0.03)\n"),
                (
                    "code",
                    'import openpyxl\nbook = openpyxl.load_workbook("workbooks/apple_model.xlsx")\n'
                    'rate = book.defined_names["WACC"]\n',
                ),
            ]
        ),
        "notebooks/nvidia_margins.ipynb": notebook(
            [
                ("markdown", "## NVIDIA gross margin\nFY2025 vs FY2026 for $NVDA."),
                (
                    "code",
                    'import pandas as pd\ndf = pd.read_csv("data/nvda_financials.csv")\n'
                    "def gross_margin(revenue, cogs):\n    return (revenue - cogs) / revenue\n",
                ),
            ]
        ),
        "notebooks/broken.ipynb": '{"cells": [ this is not json',
        "memos/apple_thesis.md": (
            "# Apple (AAPL): thesis\n\n"
            "Written 2024-11-15 after the FY2024 10-K "
            f"(accession {APPLE_FY2024_10K}).\n\n"
            "## Valuation\nSee the [model](../workbooks/apple_model.xlsx); the discount rate "
            "comes from `wacc` in models/wacc.py.\n\n"
            "## Risks\nChina demand; services regulation.\n"
        ),
        "memos/apple_update.md": (
            "# AAPL update\n\n"
            f"Reviewed the December-quarter 10-Q ({APPLE_LATEST_10Q}) on 2026-02-02.\n"
        ),
        "memos/nvidia_note.md": (
            "# NVIDIA (NVDA)\n\n"
            f"FY2026 10-K, accession {NVIDIA_LATEST_10K}: data-center revenue keeps growing.\n"
        ),
        "data/aapl_prices.csv": "date,close\n2024-01-02,185.64\n2024-06-28,210.62\n"
        "2024-09-27,227.79\n",
        "data/nvda_financials.csv": "period,revenue,cogs\n2025-01-26,130497,32639\n"
        "2026-01-25,215938,61200\n",
        ".gitignore": "scratch/\n*.log\n",
        "scratch/ignored.py": "def never_indexed():\n    pass\n",
        "run.log": "noise\n",
        "node_modules/lib/index.js": "function vendored() {}\n",
        ".env": "OPENAI_API_KEY=sk-not-for-the-map\n",
    }
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (root / "data" / "logo.bin").write_bytes(b"\x89PNG\x00\x00binary")
    # Parquet's magic at both ends; its columns are read only where pyarrow is installed.
    (root / "data" / "quotes.parquet").write_bytes(b"PAR1\x00\x00\x00\x00PAR1")
    build_workbook(root / "workbooks" / "apple_model.xlsx")
    return root


def build_workbook(path: Path) -> None:
    import openpyxl
    from openpyxl.workbook.defined_name import DefinedName

    book = openpyxl.Workbook()
    inputs = book.active
    assert inputs is not None
    inputs.title = "Inputs"
    inputs["A1"] = "Apple Inc. (AAPL) DCF inputs"
    inputs["A3"], inputs["B3"] = "WACC", 0.085
    inputs["A4"], inputs["B4"] = "Terminal growth", 0.03
    book.defined_names["WACC"] = DefinedName("WACC", attr_text="Inputs!$B$3")
    book.defined_names["TerminalGrowth"] = DefinedName("TerminalGrowth", attr_text="Inputs!$B$4")
    model = book.create_sheet("Model")
    model.append(["USD millions", "FY2022", "FY2023", "FY2024", "FY2025E"])
    model.append(["Revenue", 394328, 383285, 391035, "=D2*1.05"])
    model.append(["Value", "=NPV(WACC,B2:E2)*(1+TerminalGrowth)"])
    model.append(["Peer median EV/EBIT", "='[peers.xlsx]Comps'!B2"])
    path.parent.mkdir(parents=True, exist_ok=True)
    book.save(path)
