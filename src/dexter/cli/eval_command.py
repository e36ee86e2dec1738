"""`dexter eval finance-units|finance-agent|list|show`: measure Dexter.

Only the standard library is imported at module level: `add_eval_parser` runs on every CLI start.
Handlers live in `dexter.cli.eval_run` and import the evals package when a command runs.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

__all__ = ["add_eval_parser"]


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number of at least 1, got {value}")
    return value


def _lazy(name: str) -> Any:
    def run(args: argparse.Namespace) -> int:
        from dexter.cli import eval_run

        return int(getattr(eval_run, name)(args))

    return run


def add_eval_parser(commands: Any) -> argparse.ArgumentParser:
    """Add `eval` to the `dexter` subcommands; dispatch with `args.eval_run(args)`."""
    evals: argparse.ArgumentParser = commands.add_parser(
        "eval",
        help="measure research quality: Finance Agent Benchmark, judge-free unit set",
        description="Measure Dexter. `finance-units` needs no model or key; `finance-agent` runs "
        "the agent on the public Finance Agent Benchmark questions and grades the answers with "
        "a judge model (tokens cost money: try --sample 5 first).",
    )
    actions = evals.add_subparsers(dest="eval_command", metavar="ACTION", required=True)

    units = actions.add_parser(
        "finance-units",
        help="judge-free checks of data, filings and calculate on recorded SEC fixtures",
        description="Deterministic cases (no model, no network) built from the recorded SEC "
        "fixtures: resolution, fiscal periods, units, balance sheets, cash flows, derived "
        "quarters, TTM, total debt, share basis after splits, restatements, as-of dates, filing "
        "items, documents, ownership, calculate, citations, routing.",
    )
    units.set_defaults(eval_run=_lazy("run_units"))
    units.add_argument("--area", action="append", default=[], metavar="AREA", help="only AREA")
    units.add_argument("--fixtures", type=Path, metavar="DIR", help="fixtures root")
    units.add_argument("-v", "--verbose", action="store_true", help="one line per case")
    units.add_argument("--json", action="store_true", help="print JSON")

    agent = actions.add_parser(
        "finance-agent",
        help="run and judge the Finance Agent Benchmark's public questions",
        description="Each question is an isolated agent run (channel eval: nobody to ask, no "
        "shell), graded per rubric criterion by the judge model(s). Results are stored as they "
        "finish; --resume RUN continues an interrupted run.",
    )
    agent.set_defaults(eval_run=_lazy("run_agent"))
    agent.add_argument("--sample", type=_positive, metavar="N", help="stratified sample of N")
    agent.add_argument("--seed", default="dexter-eval", help="sampling seed (default dexter-eval)")
    agent.add_argument(
        "--category",
        action="append",
        default=[],
        metavar="C",
        help="only this question type (repeatable), e.g. 'Beat or Miss'",
    )
    agent.add_argument(
        "--concurrency",
        type=_positive,
        default=2,
        metavar="N",
        help="questions in flight at once (default 2)",
    )
    agent.add_argument(
        "--as-of",
        dest="as_of",
        metavar="DATE",
        help="answer as of DATE (YYYY-MM-DD): data filed later is ignored",
    )
    agent.add_argument(
        "-m",
        "--model",
        dest="eval_model",
        metavar="PROVIDER:MODEL",
        help="model under test (default: DEXTER_MODEL or settings)",
    )
    agent.add_argument(
        "--judge-model",
        dest="judge_models",
        action="append",
        default=[],
        metavar="PROVIDER:MODEL",
        help="judge model; repeat it for a jury (see --jury)",
    )
    agent.add_argument(
        "--jury",
        choices=("majority", "mean"),
        default="majority",
        help="with several judges: decide each criterion by majority, then score (default), "
        "or average each judge's score",
    )
    agent.add_argument(
        "--timeout",
        type=_positive,
        default=900,
        metavar="SECONDS",
        help="give up on a question after this long (default 900)",
    )
    agent.add_argument(
        "--max-iterations",
        type=_positive,
        metavar="N",
        help="model rounds per question (default 25)",
    )
    agent.add_argument("--dataset", type=Path, metavar="CSV", help="questions CSV")
    agent.add_argument(
        "--resume",
        dest="eval_resume",
        metavar="RUN",
        help="continue a stored run: finished questions are not re-run",
    )
    agent.add_argument(
        "--allow-self-judge", action="store_true", help="let the model under test also be the judge"
    )

    listing = actions.add_parser("list", help="stored evaluation runs")
    listing.set_defaults(eval_run=_lazy("run_list"))
    listing.add_argument("--json", action="store_true", help="print JSON")

    show = actions.add_parser("show", help="one stored run, or write its report")
    show.set_defaults(eval_run=_lazy("run_show"))
    show.add_argument("run", metavar="RUN", help="run id or a unique prefix")
    show.add_argument("--markdown", type=Path, metavar="FILE", help="write a Markdown report")
    show.add_argument("--html", type=Path, metavar="FILE", help="write an HTML report")
    show.add_argument("--json", action="store_true", help="print JSON")
    return evals
