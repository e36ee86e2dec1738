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


def _as_of(text: str | None, split: Any) -> tuple[date | None, str | None]:
    """The run's as-of date and where it came from: --as-of, else the split's date anchor
    ('today' asks for none)."""
    from dexter.config import ConfigError

    if text is None:
        anchor = split.as_of if split is not None else None
        return anchor, (f"the {split.name} date anchor" if anchor else None)
    if text.strip().lower() == "today":
        return None, None
    try:
        return date.fromisoformat(text), "--as-of"
    except ValueError:
        raise ConfigError(
            f"--as-of must be a date as YYYY-MM-DD (or 'today'), not {text!r}."
        ) from None


def _stored_date(text: Any) -> date | None:
    return date.fromisoformat(str(text)) if text else None


def _reopen_dataset(args_dataset: str | None, run: Any, home: Path) -> Any:
    """The questions a stored run was made from: --dataset, else its split, else its file;
    refused when they are not the run's (its hash differs)."""
    from dexter.config import ConfigError
    from dexter.evals.splits import open_dataset

    stored = run.options.get("split") or run.options.get("dataset_path")
    choice = args_dataset or (str(stored) if stored else None)
    if choice is None:
        raise ConfigError(
            f"run {run.id} did not record its questions file: pass the --dataset it was "
            "started with."
        )
    dataset = open_dataset(choice, home)
    if run.dataset_hash != dataset.hash:
        raise ConfigError(
            f"run {run.id} used dataset {run.dataset_hash}; {dataset.path} is "
            f"{dataset.hash}. Pass the same --dataset it was started with "
            f"({stored or 'its path was not recorded'})."
        )
    return dataset


def _judge_specs(args: argparse.Namespace, runtime: Any, settings: Any) -> list[str]:
    from dexter.config import ConfigError

    judges = list(args.judge_models) or [
        j for j in [settings.env.get("DEXTER_JUDGE_MODEL", "").strip()] if j
    ]
    if not judges:
        raise ConfigError(
            "a judge model is needed: --judge-model provider:model (repeat it for a jury), "
            "or set DEXTER_JUDGE_MODEL."
        )
    return list(dict.fromkeys(runtime.resolve(j).spec for j in judges))


def _refuse_self_judging(models: list[str], judges: list[str], allowed: bool) -> None:
    from dexter.config import ConfigError

    for model in models:
        if model in judges and not allowed:
            raise ConfigError(
                f"the model under test ({model}) is also a judge; pick another judge or pass "
                "--allow-self-judge."
            )


def _rerun_command(model: str, judges: list[str], o: dict[str, Any]) -> str:
    """The command that makes this run again (same questions, models, sampling, date)."""
    import shlex

    def temp(value: Any) -> str:
        return "default" if value is None else f"{value:g}"

    argv = [
        "dexter",
        "eval",
        "finance-agent",
        "--dataset",
        str(o.get("split") or o["dataset_path"]),
    ]
    argv += ["--model", model]
    for judge in judges:
        argv += ["--judge-model", judge]
    argv += ["--jury", str(o["jury"]), "--temperature", temp(o["temperature"])]
    argv += ["--judge-temperature", temp(o["judge_temperature"]), "--seed", str(o["model_seed"])]
    argv += ["--as-of", str(o["as_of"] or "today")]
    if int(o["epochs"]) > 1:
        argv += ["--epochs", str(o["epochs"])]
    if o.get("sample"):
        argv += ["--sample", str(o["sample"]), "--sample-seed", str(o["sample_seed"])]
    for category in o.get("categories") or []:
        argv += ["--category", category]
    if o.get("limit"):
        argv += ["--limit", str(o["limit"])]
    argv += ["--max-iterations", str(o["max_iterations"]), "--timeout", f"{o['timeout_s']:g}"]
    if not o.get("cache"):
        argv.append("--no-cache")
    return shlex.join(argv)


def _record(
    args: argparse.Namespace,
    dataset: Any,
    options: Any,
    as_of_source: str | None,
) -> dict[str, Any]:
    """Everything a stored run needs to be read, judged and made again."""
    import hashlib
    import platform

    from dexter import __version__
    from dexter.evals.judge import SYSTEM_PROMPT, SYSTEM_SHA256
    from dexter.runtime import EVAL

    try:
        file_sha = hashlib.sha256(Path(dataset.path).read_bytes()).hexdigest()
    except OSError:
        file_sha = None
    record: dict[str, Any] = {
        "split": dataset.split,
        "dataset_path": str(dataset.path),
        "dataset_sha256": file_sha,
        "jury": options.jury,
        "timeout_s": options.timeout_s,
        "max_iterations": options.max_iterations,
        "as_of": options.as_of.isoformat() if options.as_of else None,
        "as_of_source": as_of_source,
        "sample": args.sample,
        "sample_seed": args.sample_seed,
        "limit": args.limit,
        "categories": args.category,
        "epochs": options.epochs,
        "temperature": options.temperature,
        "judge_temperature": options.judge_temperature,
        "model_seed": options.seed,
        "cache": options.cache,
        "dexter_version": __version__,
        "python": platform.python_version(),
        "channel": EVAL.name,
        "profile": EVAL.prompt,
        "judge_system_sha256": SYSTEM_SHA256,
        "judge_system_prompt": SYSTEM_PROMPT,
    }
    record["command"] = _rerun_command(str(options.model), list(options.judges), record)
    return record


def _options_of(run: Any, args: argparse.Namespace) -> Any:
    """A stored run's own settings (runs stored before a setting existed get the old
    behaviour: the server's sampling defaults, no cache)."""
    from dexter.evals.runner import EvalOptions

    o = run.options
    return EvalOptions(
        model=run.model,
        judges=run.judges,
        jury=o.get("jury", "majority"),
        concurrency=args.concurrency,
        timeout_s=float(o.get("timeout_s") or getattr(args, "timeout", 900)),
        max_iterations=int(o.get("max_iterations") or 25),
        as_of=_stored_date(o.get("as_of")),
        epochs=int(o.get("epochs") or 1),
        temperature=o.get("temperature"),
        judge_temperature=o.get("judge_temperature"),
        seed=o.get("model_seed"),
        cache=bool(o.get("cache")),
    )


def run_agent(args: argparse.Namespace) -> int:
    import uuid

    from dexter.config import ConfigError, load_settings
    from dexter.evals.runner import EvalOptions
    from dexter.evals.sampling import select
    from dexter.evals.splits import SPLITS, open_dataset

    settings = load_settings()
    runtime = open_runtime(settings)
    store = _eval_store(runtime, create=True)
    assert store is not None
    if args.eval_resume:
        run = store.require(args.eval_resume)
        dataset = _reopen_dataset(args.dataset, run, settings.home)
        by_id = {q.id: q for q in dataset.questions}
        questions = [by_id[i] for i in run.question_ids if i in by_id]
        options = _options_of(run, args)
        source = run.options.get("rescored_from")
        if source:
            # A rescoring run goes on grading its source's answers; the agent never runs.
            from dexter.evals.runner import rescore

            answers = store.results(str(source))

            async def regrade(live: Any) -> Any:
                return await rescore(
                    runtime,
                    store,
                    answers,
                    str(source),
                    run.id,
                    questions,
                    options,
                    on_event=live.event,
                )

            return _execute(runtime, store, [(run, options)], questions, args, work=regrade)
        return _execute(runtime, store, [(run, options)], questions, args)
    dataset = open_dataset(args.dataset, settings.home)
    judge_specs = _judge_specs(args, runtime, settings)
    models = list(dict.fromkeys(runtime.resolve(m).spec for m in (args.eval_models or [None])))
    _refuse_self_judging(models, judge_specs, args.allow_self_judge)
    questions = select(
        dataset.questions, sample=args.sample, seed=args.sample_seed, categories=args.category
    )
    if not questions:
        raise ConfigError(
            f"no question has category {', '.join(args.category)}; categories: "
            f"{', '.join(dataset.categories)}."
        )
    if args.limit:
        questions = questions[: args.limit]
    as_of, as_of_source = _as_of(args.as_of, SPLITS.get(dataset.split or ""))
    group = uuid.uuid4().hex[:8] if len(models) > 1 else None
    runs = []
    for model in models:
        options = EvalOptions(
            model=model,
            judges=judge_specs,
            jury=args.jury,
            concurrency=args.concurrency,
            timeout_s=float(args.timeout),
            max_iterations=args.max_iterations or 25,
            as_of=as_of,
            epochs=args.epochs,
            temperature=args.temperature,
            judge_temperature=args.judge_temperature,
            seed=args.seed,
            cache=args.cache,
        )
        run = store.create_run(
            dataset=dataset.split or dataset.path.name,
            dataset_hash=dataset.hash,
            model=model,
            judges=judge_specs,
            options=_record(args, dataset, options, as_of_source),
            question_ids=[q.id for q in questions],
            group_id=group,
        )
        runs.append((run, options))
    return _execute(runtime, store, runs, questions, args)


def run_rescore(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from dexter.config import ConfigError, load_settings
    from dexter.evals.judge import SYSTEM_SHA256
    from dexter.evals.runner import rescore

    settings = load_settings()
    runtime = open_runtime(settings)
    store = _eval_store(runtime, create=True)
    assert store is not None
    source = store.require(args.run)
    stored = store.results(source.id)
    if not stored:
        raise ConfigError(f"run {source.id} has no answers yet: nothing to rescore.")
    dataset = _reopen_dataset(None, source, settings.home)
    judge_specs = _judge_specs(args, runtime, settings)
    _refuse_self_judging([source.model], judge_specs, args.allow_self_judge)
    options = replace(
        _options_of(source, args),
        judges=judge_specs,
        jury=args.jury,
        judge_temperature=args.judge_temperature,
        cache=args.cache,
    )
    if options.seed is None:
        options = replace(options, seed=0)
    record = {
        **source.options,
        "jury": options.jury,
        "judge_temperature": options.judge_temperature,
        "cache": options.cache,
        "judge_system_sha256": SYSTEM_SHA256,
        "rescored_from": source.id,
    }
    record["command"] = (
        f"dexter eval rescore {source.id} "
        + " ".join(f"--judge-model {j}" for j in judge_specs)
        + f" --jury {options.jury}"
    )
    run = store.create_run(
        dataset=source.dataset,
        dataset_hash=source.dataset_hash,
        model=source.model,
        judges=judge_specs,
        options=record,
        question_ids=source.question_ids,
    )
    by_id = {q.id: q for q in dataset.questions}
    questions = [by_id[i] for i in source.question_ids if i in by_id]

    async def work(live: Any) -> Any:
        return await rescore(
            runtime, store, stored, source.id, run.id, questions, options, on_event=live.event
        )

    return _execute(runtime, store, [(run, options)], questions, args, work=work)


def _execute(
    runtime: Any,
    store: Any,
    runs: list[tuple[Any, Any]],
    questions: Any,
    args: argparse.Namespace,
    *,
    work: Any = None,
) -> int:
    """Run each of `runs` in turn, print each one's scores (and, for several, how they
    compare); the exit status says whether every run measured something and cleared
    --fail-under."""
    from dexter.evals.runner import run_eval

    current: dict[str, Any] = {}

    async def main() -> list[tuple[Any, Any]]:
        summaries = []
        async with runtime:
            for run, options in runs:
                done = await asyncio.to_thread(store.finished_keys, run.id)
                live = _Live(len(questions) * options.epochs, len(done))
                current.update(run=run, live=live)
                live.header(run.id, options)
                live.start()
                try:
                    if work is not None:
                        results = await work(live)
                    else:
                        results = await run_eval(
                            runtime, store, run.id, questions, options, on_event=live.event
                        )
                finally:
                    live.stop()
                finished = await asyncio.to_thread(store.require, run.id)
                summaries.append((finished, _print_summary(finished, results)))
            if len(summaries) > 1:
                stored = [await asyncio.to_thread(store.results, r.id) for r, _ in summaries]
                _print_models(summaries, stored)
        return summaries

    try:
        summaries = asyncio.run(main())
    except KeyboardInterrupt:
        run, live = current.get("run"), current.get("live")
        done = live.done if live is not None else 0
        run_id = run.id if run is not None else "?"
        print(
            f"\nInterrupted: {done} finished question(s) are stored. Continue with "
            f"`dexter eval finance-agent --resume {run_id}`.",
            file=sys.stderr,
        )
        return 130
    code = EXIT_OK
    for run, summary in summaries:
        if summary.questions and not summary.scored:
            # Nothing was measured: a score of 0% here is the harness failing, not the agent.
            print(
                f"dexter: every question failed ({summary.failures} of "
                f"{summary.questions * run.epochs}); no answer was scored. The errors are above "
                f"and in `dexter eval show {run.id}`.",
                file=sys.stderr,
            )
            code = EXIT_FAILED
        elif args.fail_under is not None and summary.mean_all * 100 < args.fail_under:
            print(
                f"dexter: run {run.id} ({run.model}) scored {summary.mean_all * 100:.1f}%, "
                f"under --fail-under {args.fail_under:g}%.",
                file=sys.stderr,
            )
            code = EXIT_FAILED
    return code


def _print_models(summaries: list[tuple[Any, Any]], stored: list[Any]) -> None:
    """Several models on the same questions: one row each, and each against the first."""
    from dexter.evals.report import interval, pct, question_scores
    from dexter.evals.scoring import compare_scores

    print()
    width = max(len(run.model) for run, _ in summaries)
    print(f"{'Model':<{width}}  {'all':>6}  {'95% CI':<16}  exact  fail  run")
    for run, s in summaries:
        print(
            f"{run.model:<{width}}  {pct(s.mean_all):>6}  {interval(s.mean_all_ci):<16}  "
            f"{s.exact:>5g}  {s.failures:>4}  {run.id}"
        )
    first = summaries[0][0]
    base = question_scores(stored[0])
    for (run, _), results in zip(summaries[1:], stored[1:], strict=True):
        c = compare_scores(question_scores(results), base)
        print(
            f"{run.model} - {first.model}: {c.difference * 100:+.1f} points, 95% CI "
            f"[{c.difference_ci.low * 100:+.1f}, {c.difference_ci.high * 100:+.1f}] "
            f"(paired bootstrap over {c.shared} questions)"
        )


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
            + (f", {options.epochs} epochs" if options.epochs > 1 else "")
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
            mark = (
                "x"
                if r.contradiction or r.must_pass_failed
                else ("✓" if (r.score or 0) >= 1 else "~")
            )
            verdict = f"{pct(r.score):>6} {r.passed_criteria}/{r.total_criteria}" + (
                " contr." if r.contradiction else " must" if r.must_pass_failed else ""
            )
        else:
            mark, verdict = "!", FAILURE_LABELS[r.status]
        width = len(str(self.total))
        qid = r.question_id if r.epoch == 1 else f"{r.question_id}#{r.epoch}"
        line = (
            f"{mark} {self.done:>{width}}/{self.total} {qid:<4} {r.category[:22]:<22} "
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
        f"Mean, {s.scored} scored questions only:"
        if s.epochs == 1
        else f"Mean, {s.scored} scored question runs only:",
    )
    pad = max(len(h) for h in heads)
    print(f"{heads[0]:<{pad}} {pct(s.mean_all):>6}  95% CI {interval(s.mean_all_ci)}")
    print(f"{heads[1]:<{pad}} {pct(s.mean_scored):>6}  95% CI {interval(s.mean_scored_ci)}")
    print(
        f"Exact: {s.exact:g}/{s.questions} (95% CI {interval(s.exact_rate_ci)}); "
        f"contradictions {s.contradictions}; failures {s.failures}"
    )
    if s.epochs > 1:
        spread = "n/a" if s.epoch_sd is None else f"{s.epoch_sd * 100:.1f} points"
        print(
            f"Run to run ({s.epochs} epochs): {', '.join(pct(m) for m in s.epoch_means)}; "
            f"standard deviation {spread}"
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


# --------------------------------------------------------------------------- compare


def run_compare(args: argparse.Namespace) -> int:
    from dexter.config import ConfigError, load_settings
    from dexter.evals.report import pct, question_scores
    from dexter.evals.scoring import BOOTSTRAP_RESAMPLES, compare_scores

    runtime = open_runtime(load_settings())
    try:
        store = _eval_store(runtime, create=False)
        if store is None:
            raise ConfigError("there are no evaluation runs yet; `dexter eval list` shows them.")
        a, b = store.require(args.first), store.require(args.second)
        scores_a = question_scores(store.results(a.id))
        scores_b = question_scores(store.results(b.id))
    finally:
        runtime.close_local()
    c = compare_scores(scores_a, scores_b)
    if args.json:
        from dataclasses import asdict

        print(json.dumps({"a": a.id, "b": b.id, **asdict(c)}, indent=2))
        return EXIT_OK
    for label, run in (("A", a), ("B", b)):
        print(f"{label}  {run.id}  {run.model}  {run.dataset}  judges {', '.join(run.judges)}")
    if not c.shared:
        print("The runs share no question (questions are matched by their text).")
        return EXIT_OK
    print(f"Shared questions: {c.shared} (only in A: {c.only_a}, only in B: {c.only_b})")
    print(
        f"Mean on shared questions: A {pct(c.mean_a)}, B {pct(c.mean_b)}; A - B = "
        f"{c.difference * 100:+.1f} points, 95% CI [{c.difference_ci.low * 100:+.1f}, "
        f"{c.difference_ci.high * 100:+.1f}] (paired bootstrap, {BOOTSTRAP_RESAMPLES:,} "
        "resamples)"
    )
    print(
        f"A better on {c.a_better}, B better on {c.b_better}, tied on {c.ties}; resamples "
        f"where A is not ahead: {c.share_not_better * 100:.1f}%"
    )
    return EXIT_OK


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
                        "dataset": run.dataset,
                        "status": run.status,
                        "questions": len(run.question_ids),
                        "epochs": run.epochs,
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
            f"{run.id}  {run.status:<11} {run.finished:>3}/{run.expected:<3} "
            f"{run.dataset[:12]:<12} all {pct(rep.overall.mean_all):>6}  scored "
            f"{pct(rep.overall.mean_scored):>6}  {money(rep.cost):>10}  {run.model}"
        )
    if any(run.status == "crashed" for run, _ in rows):
        print(
            "A crashed run's process died; continue it with "
            "`dexter eval finance-agent --resume RUN`."
        )
    return EXIT_OK


def run_show(args: argparse.Namespace) -> int:
    from dexter.config import ConfigError, load_settings
    from dexter.evals.report import build_report, question_markdown, to_html, to_markdown
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
    if args.question:
        chosen = [r for r in results if r.question_id == args.question.strip().lower()]
        if not chosen:
            raise ConfigError(
                f"run {run.id} has no result for question {args.question!r}; its questions: "
                f"{', '.join(run.question_ids[:12])}{' …' if len(run.question_ids) > 12 else ''}."
            )
        if args.json:
            print(json.dumps([r.to_dict() for r in chosen], default=str, indent=2))
            return EXIT_OK
        for result in chosen:
            print("\n".join(question_markdown(result, epochs=run.epochs, full=True)))
        return EXIT_OK
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
                {
                    "run": _run_dict(run),
                    "reproduce": _reproduce(run, results),
                    "results": [r.to_dict() for r in results],
                },
                default=str,
                indent=2,
            )
        )
    elif not wrote:
        print(to_markdown(report), end="")
    return EXIT_OK


def _reproduce(run: Any, results: Any) -> dict[str, Any]:
    """What makes the run again, gathered in one place (all of it is also in `run.options`)."""
    o = run.options
    return {
        "command": o.get("command"),
        "dexter_version": o.get("dexter_version"),
        "dataset": o.get("split") or run.dataset,
        "dataset_hash": run.dataset_hash,
        "dataset_sha256": o.get("dataset_sha256"),
        "as_of": o.get("as_of"),
        "profile": o.get("profile"),
        "model": run.model,
        "temperature": o.get("temperature"),
        "seed": o.get("model_seed"),
        "epochs": run.epochs,
        "judges": run.judges,
        "judge_temperature": o.get("judge_temperature"),
        "judge_system_sha256": o.get("judge_system_sha256"),
        "system_prompt_sha256": sorted(
            {r.system_prompt_sha256 for r in results if r.system_prompt_sha256}
        ),
        "cache": o.get("cache"),
    }


def _run_dict(run: Any) -> dict[str, Any]:
    from dataclasses import asdict

    return asdict(run)
