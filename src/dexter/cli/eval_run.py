"""Handlers of `dexter eval …` (parsers in eval_command.py)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections import Counter
from datetime import date
from pathlib import Path
from typing import Any

from dexter.cli.open_runtime import open_runtime

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def run_units(args: argparse.Namespace) -> int:
    from dexter.evals.units import find_fixtures, load_cases, run_cases
    from dexter.evals.units.runner import CaseResult

    fixtures = find_fixtures(args.fixtures)
    cases = load_cases(areas=args.area)
    if not cases:
        known = sorted({c.area for c in load_cases()})
        print(
            f"dexter: no cases for area {', '.join(args.area)}; areas: {', '.join(known)}.",
            file=sys.stderr,
        )
        return EXIT_USAGE

    def show(result: CaseResult) -> None:
        if args.verbose and not args.json:
            mark = "ok  " if result.ok else "FAIL"
            print(f"{mark} {result.case.area}/{result.case.id}", flush=True)

    results = asyncio.run(run_cases(cases, fixtures, on_result=show))
    total, passed = Counter[str](), Counter[str]()
    for result in results:
        total[result.case.area] += 1
        passed[result.case.area] += result.ok
    failures = [r for r in results if not r.ok]
    if args.json:
        print(
            json.dumps(
                {
                    "fixtures": str(fixtures),
                    "areas": {a: {"cases": total[a], "passed": passed[a]} for a in sorted(total)},
                    "cases": len(results),
                    "passed": len(results) - len(failures),
                    "failures": [
                        {
                            "area": r.case.area,
                            "id": r.case.id,
                            "source": r.case.source,
                            "expected": r.case.expect,
                            "detail": r.detail,
                        }
                        for r in failures
                    ],
                },
                default=str,
                indent=2,
            )
        )
        return EXIT_FAILED if failures else EXIT_OK
    width = max(len(a) for a in total)
    for area in sorted(total):
        print(f"{area:<{width}}  {passed[area]:>3}/{total[area]:<3} passed")
    for result in failures:
        print(f"FAIL {result.case.area}/{result.case.id} ({result.case.source}): {result.detail}")
    summary = f"{len(results) - len(failures)}/{len(results)} cases passed in {len(total)} areas"
    print(summary if not failures else f"{summary}; {len(failures)} failed")
    return EXIT_FAILED if failures else EXIT_OK


# --------------------------------------------------------------------------- finance-agent


def _dataset_path(args: argparse.Namespace, stored: str | None = None) -> Path:
    """--dataset, else the file a resumed run was started with, else the recorded fixtures'."""
    if args.dataset is not None:
        return Path(args.dataset)
    if stored:
        return Path(stored)
    from dexter.config import ConfigError
    from dexter.evals.units import find_fixtures
    from dexter.evals.units.runner import FixturesMissing

    try:
        return find_fixtures() / "evals" / "finance_agent.csv"
    except FixturesMissing:
        # find_fixtures speaks for finance-units, whose --fixtures option this command lacks.
        raise ConfigError(
            "the benchmark questions were not found: pass --dataset CSV (the Finance Agent "
            "Benchmark's questions, e.g. finance_agent.csv), or set DEXTER_FIXTURES to a folder "
            "holding evals/finance_agent.csv."
        ) from None


def _as_of(text: str | None) -> date | None:
    from dexter.config import ConfigError

    if not text:
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise ConfigError(f"--as-of must be a date as YYYY-MM-DD, not {text!r}.") from None


def run_agent(args: argparse.Namespace) -> int:
    from dexter.config import ConfigError, load_settings
    from dexter.evals.dataset import DATASET_NAME, load_dataset
    from dexter.evals.runner import EvalOptions
    from dexter.evals.sampling import select

    settings = load_settings()
    runtime = open_runtime(settings)
    store = _eval_store(runtime, create=True)
    assert store is not None
    if args.eval_resume:
        run = store.require(args.eval_resume)
        # The run remembers its questions file: --resume alone continues it.
        stored = run.options.get("dataset_path")
        dataset = load_dataset(_dataset_path(args, str(stored) if stored else None))
        if run.dataset_hash != dataset.hash:
            raise ConfigError(
                f"run {run.id} used dataset {run.dataset_hash}; {dataset.path} is "
                f"{dataset.hash}. Pass the same --dataset it was started with "
                f"({stored or 'its path was not recorded'})."
            )
        by_id = {q.id: q for q in dataset.questions}
        questions = [by_id[i] for i in run.question_ids if i in by_id]
        opts = run.options
        options = EvalOptions(
            model=run.model,
            judges=run.judges,
            jury=opts.get("jury", "majority"),
            concurrency=args.concurrency,
            timeout_s=float(opts.get("timeout_s") or args.timeout),
            max_iterations=int(opts.get("max_iterations") or 25),
            as_of=_as_of(opts.get("as_of")),
        )
    else:
        dataset = load_dataset(_dataset_path(args))
        judges = list(args.judge_models) or [
            j for j in [settings.env.get("DEXTER_JUDGE_MODEL", "").strip()] if j
        ]
        if not judges:
            raise ConfigError(
                "a judge model is needed: --judge-model provider:model (repeat it for a jury), "
                "or set DEXTER_JUDGE_MODEL."
            )
        model = runtime.resolve(args.eval_model).spec
        judge_specs = [runtime.resolve(j).spec for j in judges]
        if model in judge_specs and not args.allow_self_judge:
            raise ConfigError(
                f"the model under test ({model}) is also a judge; pick another judge or pass "
                "--allow-self-judge."
            )
        questions = select(
            dataset.questions, sample=args.sample, seed=args.seed, categories=args.category
        )
        if not questions:
            raise ConfigError(
                f"no question has category {', '.join(args.category)}; categories: "
                f"{', '.join(dataset.categories)}."
            )
        options = EvalOptions(
            model=model,
            judges=judge_specs,
            jury=args.jury,
            concurrency=args.concurrency,
            timeout_s=float(args.timeout),
            max_iterations=args.max_iterations or 25,
            as_of=_as_of(args.as_of),
        )
        run = store.create_run(
            dataset=DATASET_NAME,
            dataset_hash=dataset.hash,
            model=model,
            judges=judge_specs,
            options={
                "jury": options.jury,
                "timeout_s": options.timeout_s,
                "max_iterations": options.max_iterations,
                "as_of": options.as_of.isoformat() if options.as_of else None,
                "sample": args.sample,
                "seed": args.seed,
                "categories": args.category,
                "dataset_path": str(dataset.path),
            },
            question_ids=[q.id for q in questions],
        )
    return _execute(runtime, store, run.id, questions, options)


def _execute(runtime: Any, store: Any, run_id: str, questions: Any, options: Any) -> int:
    from dexter.evals.runner import run_eval

    live = _Live(len(questions), len(store.finished_ids(run_id)))
    live.header(run_id, options)

    async def main() -> Any:
        async with runtime:
            live.start()
            try:
                results = await run_eval(
                    runtime, store, run_id, questions, options, on_event=live.event
                )
            finally:
                live.stop()
            return _print_summary(store.require(run_id), results)

    try:
        summary = asyncio.run(main())
    except KeyboardInterrupt:
        print(
            f"\nInterrupted: {live.done} finished question(s) are stored. Continue with "
            f"`dexter eval finance-agent --resume {run_id}`.",
            file=sys.stderr,
        )
        return 130
    if summary.questions and not summary.scored:
        # Nothing was measured: a score of 0% here is the harness failing, not the agent.
        print(
            f"dexter: every question failed ({summary.failures} of {summary.questions}); no "
            "answer was scored. The errors are above and in `dexter eval show "
            f"{run_id}`.",
            file=sys.stderr,
        )
        return EXIT_FAILED
    return EXIT_OK


class _Live:
    """Per-question lines as they finish; a rich progress bar on a terminal, plain when piped."""

    def __init__(self, total: int, already: int) -> None:
        self.total = total
        self.done = already
        self.tty = sys.stdout.isatty()
        self.progress: Any = None
        self.task: Any = None

    def header(self, run_id: str, options: Any) -> None:
        judges = ", ".join(options.judges)
        print(
            f"Run {run_id}: {self.total} questions, model {options.model}, judge {judges}"
            + (f", as of {options.as_of}" if options.as_of else "")
            + (f" ({self.done} already finished)" if self.done else ""),
            flush=True,
        )

    def start(self) -> None:
        if not self.tty:
            return
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        self.progress = Progress(
            TextColumn("Evaluating"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.description}"),
            transient=True,
        )
        self.task = self.progress.add_task("", total=self.total, completed=self.done)
        self.progress.start()

    def stop(self) -> None:
        if self.progress is not None:
            self.progress.stop()

    def event(self, event: Any) -> None:
        from dexter.evals.report import money, pct
        from dexter.evals.results import FAILURE_LABELS
        from dexter.evals.runner import QuestionFinished, QuestionStarted

        if isinstance(event, QuestionStarted):
            if self.progress is not None:
                self.progress.update(self.task, description=event.question.id)
            return
        if not isinstance(event, QuestionFinished):
            return
        self.done += 1
        r = event.result
        if r.status == "scored":
            mark = "x" if r.contradiction else ("✓" if (r.score or 0) >= 1 else "~")
            verdict = f"{pct(r.score):>6} {r.passed_criteria}/{r.total_criteria}" + (
                " contr." if r.contradiction else ""
            )
        else:
            mark, verdict = "!", FAILURE_LABELS[r.status]
        width = len(str(self.total))
        line = (
            f"{mark} {self.done:>{width}}/{self.total} {r.question_id:<4} {r.category[:22]:<22} "
            f"{verdict:<19} {r.total_cost.tokens:>7,} tok {money(r.total_cost)}"
        )
        if r.error and r.status != "scored":
            line += f"\n    {r.error[:150]}"
        if self.progress is not None:
            self.progress.console.print(line, markup=False, highlight=False)
            self.progress.update(self.task, completed=self.done)
        else:
            print(line, flush=True)


def _print_summary(run: Any, results: Any) -> Any:
    """Print the run's scores; its overall summary."""
    from dexter.evals.report import build_report, interval, money, pct

    report = build_report(run, results)
    s = report.overall
    print()
    heads = (
        f"Mean, all {s.questions} questions (a failed one scores 0):",
        f"Mean, {s.scored} scored questions only:",
    )
    pad = max(len(h) for h in heads)
    print(f"{heads[0]:<{pad}} {pct(s.mean_all):>6}  95% CI {interval(s.mean_all_ci)}")
    print(f"{heads[1]:<{pad}} {pct(s.mean_scored):>6}  95% CI {interval(s.mean_scored_ci)}")
    print(
        f"Exact: {s.exact}/{s.questions} (95% CI {interval(s.exact_rate_ci)}); "
        f"contradictions {s.contradictions}; failures {s.failures}"
    )
    print()
    width = max((len(r.category) for r in report.categories), default=8)
    print(f"{'Category':<{width}}  {'n':>3}  {'all':>6}  {'95% CI':<16}  {'scored':>6}  fail")
    for row in report.categories:
        c = row.summary
        print(
            f"{row.category:<{width}}  {c.questions:>3}  {pct(c.mean_all):>6}  "
            f"{interval(c.mean_all_ci):<16}  {pct(c.mean_scored):>6}  {c.failures:>4}"
        )
    print()
    print(
        f"Tokens: {report.cost.tokens:,} (agent {report.agent_cost.tokens:,}, judge "
        f"{report.judge_cost.tokens:,})"
    )
    print(
        f"Estimated cost: {money(report.cost)} (agent {money(report.agent_cost)}, judge "
        f"{money(report.judge_cost)})"
    )
    print(f"Report: dexter eval show {run.id} --html report.html")
    return s


# --------------------------------------------------------------------------- list / show


def _eval_store(runtime: Any, *, create: bool) -> Any:
    from dexter.evals.storage import EvalStore

    store = runtime.store if create else runtime.existing_store()
    return EvalStore(store) if store is not None else None


def run_list(args: argparse.Namespace) -> int:
    from dexter.config import load_settings
    from dexter.evals.report import build_report, money, pct

    runtime = open_runtime(load_settings())
    store = _eval_store(runtime, create=False)
    runs = store.runs() if store is not None else []
    rows = []
    for run in runs:
        report = build_report(run, store.results(run.id))
        rows.append((run, report))
    runtime.close_local()
    if args.json:
        print(
            json.dumps(
                [
                    {
                        "id": run.id,
                        "created_at": run.created_at,
                        "model": run.model,
                        "judges": run.judges,
                        "status": run.status,
                        "questions": len(run.question_ids),
                        "finished": run.finished,
                        "mean_all": rep.overall.mean_all,
                        "mean_scored": rep.overall.mean_scored,
                        "cost_usd": rep.cost.cost_usd,
                    }
                    for run, rep in rows
                ],
                indent=2,
            )
        )
        return EXIT_OK
    if not rows:
        print("No evaluation runs yet. Start one with `dexter eval finance-agent --sample 5`.")
        return EXIT_OK
    for run, rep in rows:
        print(
            f"{run.id}  {run.status:<11} {run.finished:>3}/{len(run.question_ids):<3} "
            f"all {pct(rep.overall.mean_all):>6}  scored {pct(rep.overall.mean_scored):>6}  "
            f"{money(rep.cost):>10}  {run.model}"
        )
    return EXIT_OK


def run_show(args: argparse.Namespace) -> int:
    from dexter.config import ConfigError, load_settings
    from dexter.evals.report import build_report, to_html, to_markdown
    from dexter.outputfile import write_output

    runtime = open_runtime(load_settings())
    try:
        store = _eval_store(runtime, create=False)
        if store is None:
            raise ConfigError(
                f"there is no evaluation run {args.run!r}; `dexter eval list` shows them."
            )
        run = store.require(args.run)
        results = store.results(run.id)
    finally:
        runtime.close_local()
    report = build_report(run, results)
    wrote = False
    for path, render in ((args.markdown, to_markdown), (args.html, to_html)):
        if path is not None:
            write_output(Path(path), render(report).encode("utf-8"))  # never through a link
            print(f"Wrote {path}", file=sys.stderr)
            wrote = True
    if args.json:
        print(
            json.dumps(
                {"run": _run_dict(run), "results": [r.to_dict() for r in results]},
                default=str,
                indent=2,
            )
        )
    elif not wrote:
        print(to_markdown(report), end="")
    return EXIT_OK


def _run_dict(run: Any) -> dict[str, Any]:
    from dataclasses import asdict

    return asdict(run)
