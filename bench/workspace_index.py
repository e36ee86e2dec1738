"""The workspace map on a generated 5,000-file research folder.

Prints: the full index (every file read and tagged), an incremental re-index after one file
changed, the snapshot (graph) rebuild, the ranked map's time and token count against reading the
files it covers. Targets: full index ≤ 30 s on 2 cores, incremental ≤ 1 s.

    uv run python bench/workspace_index.py [--files 5000] [--seed 7] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

TICKERS = ["AAPL", "MSFT", "NVDA", "AMZN", "GOOGL", "META", "TSLA", "AMD", "AVGO", "ORCL"]
WORDS = "revenue margin growth cash flow capex guidance demand pricing share buyback".split()


def generate(root: Path, count: int, seed: int) -> dict[str, int]:
    """A folder shaped like a big research repo: mostly Python modules in packages that import
    each other, then memos, CSVs, notebooks, TypeScript, a few workbooks, and an ignored
    folder the walk must skip."""
    rng = random.Random(seed)
    mix = {"py": 0.56, "md": 0.14, "csv": 0.12, "ipynb": 0.07, "ts": 0.10, "xlsx": 0.01}
    made: dict[str, int] = {}
    modules: list[str] = []
    for number in range(count):
        kind = rng.choices(list(mix), weights=list(mix.values()))[0]
        made[kind] = made.get(kind, 0) + 1
        ticker = rng.choice(TICKERS)
        package = f"pkg{number % 40}"
        if kind == "py":
            path = root / "models" / package / f"mod{number}.py"
            imports = rng.sample(modules, min(3, len(modules))) if modules else []
            body = [f"from {m} import f{m.rsplit('mod', 1)[1]}_0" for m in imports]
            body.append(f'TICKER = "{ticker}"')
            for f in range(rng.randint(4, 12)):
                called = rng.choice(imports).rsplit("mod", 1)[1] if imports else None
                call = f"f{called}_0(x)" if called else "x"
                body.append(
                    f"\n\ndef f{number}_{f}(x: float, rate: float = 0.08) -> float:\n"
                    f'    """{rng.choice(WORDS)} for {ticker}."""\n'
                    f"    y = {call} * (1 + rate)\n"
                    "    for i in range(3):\n        y += i * rate\n    return y\n"
                )
            body.append(
                f"\n\nclass Model{number}:\n    def value(self) -> float:\n"
                f"        return f{number}_0(1.0)\n"
            )
            modules.append(f"models.{package}.mod{number}")
            text = "\n".join(body)
        elif kind == "md":
            path = root / "memos" / f"memo{number}.md"
            cik = rng.randint(100000, 1999999)
            text = (
                f"# {ticker} note {number}\n\n"
                f"Written 2025-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}.\n\n"
                f"## Thesis\n{' '.join(rng.choices(WORDS, k=60))} (${ticker}).\n\n"
                f"## Sources\nAccession {cik:010d}-24-{rng.randint(1, 999999):06d}; "
                f"see models/{package}/mod{max(0, number - 1)}.py.\n"
            )
        elif kind == "csv":
            path = root / "data" / f"series{number}.csv"
            rows = ["date,close,volume"] + [
                f"2024-{1 + d // 28:02d}-{1 + d % 28:02d},{100 + rng.random() * 50:.2f},"
                f"{rng.randint(10**5, 10**7)}"
                for d in range(rng.randint(50, 300))
            ]
            text = "\n".join(rows) + "\n"
        elif kind == "ipynb":
            path = root / "notebooks" / f"nb{number}.ipynb"
            source = (
                f"import pandas as pd\nfrom {rng.choice(modules) if modules else 'math'} import *\n"
                f'df = pd.read_csv("data/series{max(0, number - 1)}.csv")\n'
                f"def analyse_{number}(frame):\n    return frame['close'].pct_change()\n"
            )
            text = json.dumps(
                {
                    "cells": [
                        {"cell_type": "markdown", "metadata": {}, "source": [f"# {ticker} study"]},
                        {
                            "cell_type": "code",
                            "metadata": {},
                            "outputs": [],
                            "execution_count": None,
                            "source": source.splitlines(keepends=True),
                        },
                    ],
                    "metadata": {},
                    "nbformat": 4,
                    "nbformat_minor": 5,
                }
            )
        elif kind == "ts":
            path = root / "web" / package / f"chart{number}.ts"
            text = (
                f'import {{ format{number - 1} }} from "./chart{number - 1}";\n'
                f"export function format{number}(value: number): string {{\n"
                "  return value.toFixed(2);\n}\n"
                f"export interface Series{number} {{ ticker: string; values: number[] }}\n"
            )
        else:
            path = root / "workbooks" / f"model{number}.xlsx"
            path.parent.mkdir(parents=True, exist_ok=True)
            _workbook(path, ticker, rng)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (root / ".gitignore").write_text("build/\n")
    for number in range(200):
        ignored = root / "build" / f"gen{number}.py"
        ignored.parent.mkdir(parents=True, exist_ok=True)
        ignored.write_text("def generated(): pass\n")
    return made


def _workbook(path: Path, ticker: str, rng: random.Random) -> None:
    import openpyxl
    from openpyxl.workbook.defined_name import DefinedName

    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.title = "Inputs"
    sheet["A1"], sheet["B1"] = f"{ticker} model", ""
    sheet["A2"], sheet["B2"] = "WACC", 0.08 + rng.random() / 100
    book.defined_names["WACC"] = DefinedName("WACC", attr_text="Inputs!$B$2")
    model = book.create_sheet("Model")
    model.append(["", "FY2022", "FY2023", "FY2024", "FY2025E"])
    for row in range(40):
        model.append([f"line {row}", *(rng.randint(1000, 9000) for _ in range(3)), "=D2*1.05"])
    book.save(path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", metavar="DIR", help="generate into DIR and keep it")
    args = parser.parse_args()

    from dexter.models.estimate import estimate_tokens
    from dexter.workspace.index import WorkspaceIndex
    from dexter.workspace.view import Snapshot

    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="dexter-ws-bench-"))
    root, home = base / "research", base / "home"
    shutil.rmtree(base, ignore_errors=True)
    root.mkdir(parents=True)
    started = time.perf_counter()
    made = generate(root, args.files, args.seed)
    print(f"generated {sum(made.values()):,} files {made} in {time.perf_counter() - started:.1f} s")

    index = WorkspaceIndex(root, home)
    cpu, wall = time.process_time(), time.perf_counter()
    full = index.refresh()
    print(
        f"full index: {full.total:,} files in {time.perf_counter() - wall:.2f} s wall, "
        f"{time.process_time() - cpu:.2f} s CPU (target ≤ 30 s)"
    )

    wall = time.perf_counter()
    again = index.refresh()
    print(
        f"re-index, nothing changed: {time.perf_counter() - wall:.3f} s ({len(again.tagged)} read)"
    )

    changed = next(root.glob("models/pkg1/*.py"))
    changed.write_text(
        changed.read_text() + "\n\ndef added_later(x: float) -> float:\n    return x\n"
    )
    cpu, wall = time.process_time(), time.perf_counter()
    one = index.refresh()
    print(
        f"incremental re-index, one file changed: {time.perf_counter() - wall:.3f} s wall, "
        f"{time.process_time() - cpu:.3f} s CPU, re-tagged {one.tagged} (target ≤ 1 s)"
    )

    cpu, wall = time.process_time(), time.perf_counter()
    snapshot = Snapshot(str(root), index.files(), index.tags())
    print(
        f"snapshot (load tags, build the graph: {len(snapshot.graph.uses):,} uses, "
        f"{len(snapshot.graph.subjects):,} subjects): {time.perf_counter() - wall:.2f} s wall, "
        f"{time.process_time() - cpu:.2f} s CPU"
    )
    import numpy  # noqa: F401  (loaded once by the first ranking; not the map's own cost)

    named = changed.relative_to(root).as_posix()
    question = f"Update the revenue driver in {named} and the memos that cite NVDA"
    for budget in (1000, 2000, 4000):
        cpu, wall = time.process_time(), time.perf_counter()
        result = snapshot.render_map(question, budget)
        seconds = time.perf_counter() - wall
        cpu = time.process_time() - cpu
        covered = sum(
            estimate_tokens((root / p).read_text(errors="replace"))
            for p in result.shown
            if not p.endswith(".xlsx")
        )
        print(
            f"map, budget {budget}: {result.tokens:,} tokens in {seconds:.2f} s ({cpu:.2f} s CPU); "
            f"{len(result.shown)} files shown (first: {result.shown[0]}); reading those files "
            f"instead: {covered:,} tokens ({covered / max(1, result.tokens):.0f}x)"
        )
    everything = sum(
        estimate_tokens(p.read_text(errors="replace"))
        for p in root.rglob("*")
        if p.is_file() and p.suffix != ".xlsx" and "build" not in p.parts
    )
    print(f"reading every text file: {everything:,} tokens")
    index.close()
    if not args.keep:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
