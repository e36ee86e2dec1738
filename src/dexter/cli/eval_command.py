"""`dexter eval finance-units|finance-agent|rescore|compare|list|show`: measure Dexter.

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


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    return value


def _temperature(text: str) -> float | None:
    if text.strip().lower() in ("default", "none"):
        return None
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a temperature such as 0 or 0.7 (or 'default'), got {text!r}"
        ) from None
    if not 0 <= value <= 2:
        raise argparse.ArgumentTypeError(f"a temperature is between 0 and 2, not {value:g}")
    return value


def _percent(text: str) -> float:
    cleaned = text.strip().rstrip("%")
    try:
        value = float(cleaned)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a score in percent such as 55 or 55%, got {text!r}"
        ) from None
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"a score in percent is between 0 and 100, not {value:g}")
    return value


def _add_judging(parser: argparse.ArgumentParser) -> None:
    """Options shared by `finance-agent` and `rescore`: the judges and how they sample."""
    parser.add_argument(
        "--judge-model",
        "--judge",
        dest="judge_models",
        action="append",
        default=[],
        metavar="PROVIDER:MODEL",
        help="judge model; repeat it for a jury (see --jury)",
    )
    parser.add_argument(
        "--jury",
        choices=("majority", "mean"),
        default="majority",
        help="with several judges: decide each criterion by majority, then score (default), "
        "or average each judge's score",
    )
    parser.add_argument(
        "--judge-temperature",
        type=_temperature,
        default=0.0,
        metavar="T",
        help="judges' temperature (default 0; 'default' sends none)",
    )
    parser.add_argument(
        "--concurrency",
        type=_positive,
        default=2,
        metavar="N",
        help="questions in flight at once (default 2)",
    )
    parser.add_argument(
        "--no-cache",
        dest="cache",
        action="store_false",
        help="always call the models (by default a request made before, word for word, is "
        "answered from the response cache at no cost)",
    )
    parser.add_argument(
        "--fail-under",
        type=_percent,
        metavar="SCORE",
        help="exit 1 when the mean over all questions is under SCORE percent (for CI)",
    )
    parser.add_argument(
        "--allow-self-judge", action="store_true", help="let the model under test also be the judge"
    )


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
        "finish; --resume RUN continues an interrupted run. The splits v1.1 (default) and v2 "
        "are downloaded on first use and answered as of their date anchors.",
    )
    agent.set_defaults(eval_run=_lazy("run_agent"))
    agent.add_argument(
        "--dataset",
        metavar="SPLIT|CSV",
        help="v1.1 (default: the benchmark's current public split), v2, v1 (September 2025), "
        "or a questions CSV",
    )
    agent.add_argument("--limit", type=_positive, metavar="N", help="only the first N questions")
    agent.add_argument("--sample", type=_positive, metavar="N", help="stratified sample of N")
    agent.add_argument(
        "--sample-seed",
        default="dexter-eval",
        metavar="TEXT",
        help="seed of --sample (default dexter-eval)",
    )
    agent.add_argument(
        "--category",
        action="append",
        default=[],
        metavar="C",
        help="only this question type (repeatable), e.g. 'Beat or Miss'",
    )
    agent.add_argument(
        "--as-of",
        dest="as_of",
        metavar="DATE",
        help="answer as of DATE (YYYY-MM-DD): data filed later is ignored (default: the "
        "split's date anchor, 2025-04-07 for v1.1 and 2026-03-01 for v2; 'today' for none)",
    )
    agent.add_argument(
        "-m",
        "--model",
        dest="eval_models",
        action="append",
        default=[],
        metavar="PROVIDER:MODEL",
        help="model under test (default: DEXTER_MODEL or settings); repeat it to run several "
        "models on the same questions, one run each",
    )
    agent.add_argument(
        "--epochs",
        type=_positive,
        default=1,
        metavar="N",
        help="run every question N times (run-to-run variance is reported)",
    )
    agent.add_argument(
        "--temperature",
        type=_temperature,
        default=0.0,
        metavar="T",
        help="the agent's temperature (default 0; 'default' sends none)",
    )
    agent.add_argument(
        "--seed",
        type=_count,
        default=0,
        metavar="N",
        help="the models' seed (default 0; epoch e uses N + e - 1)",
    )
    _add_judging(agent)
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
    agent.add_argument(
        "--resume",
        dest="eval_resume",
        metavar="RUN",
        help="continue a stored run (interrupted or crashed): finished questions are not re-run",
    )

    rescore = actions.add_parser(
        "rescore",
        help="grade a stored run's answers again with other judges (the agent does not run)",
        description="A new run with the stored run's answers, graded by --judge-model (repeat "
        "it for a jury). Compare the two with `dexter eval compare`.",
    )
    rescore.set_defaults(eval_run=_lazy("run_rescore"))
    rescore.add_argument("run", metavar="RUN", help="run id or a unique prefix")
    _add_judging(rescore)

    compare = actions.add_parser(
        "compare",
        help="compare two runs on the questions both ran (paired bootstrap)",
        description="Pairs the runs' questions by their text (runs over different splits meet "
        "on the questions they share), and reports the difference of the means with a 95% "
        "paired-bootstrap interval. A question's score is its mean over the run's epochs, a "
        "failed one counting 0.",
    )
    compare.set_defaults(eval_run=_lazy("run_compare"))
    compare.add_argument("first", metavar="RUN", help="run A (id or unique prefix)")
    compare.add_argument("second", metavar="RUN", help="run B")
    compare.add_argument("--json", action="store_true", help="print JSON")

    listing = actions.add_parser("list", help="stored evaluation runs")
    listing.set_defaults(eval_run=_lazy("run_list"))
    listing.add_argument("--json", action="store_true", help="print JSON")

    show = actions.add_parser("show", help="one stored run, or write its report")
    show.set_defaults(eval_run=_lazy("run_show"))
    show.add_argument("run", metavar="RUN", help="run id or a unique prefix")
    show.add_argument(
        "--question",
        metavar="ID",
        help="one question's whole transcript (e.g. q3): every tool call with its result, "
        "the answer, each criterion in the judges' words",
    )
    show.add_argument("--markdown", type=Path, metavar="FILE", help="write a Markdown report")
    show.add_argument("--html", type=Path, metavar="FILE", help="write an HTML report")
    show.add_argument("--json", action="store_true", help="print JSON")
    return evals
