"""A stored run as Markdown or HTML: how it was made (enough to make it again), scores with
intervals, a per-category bar chart, and each question's transcript: its tool calls, the answer
with the figures the verifier checked, and every criterion's verdict in the judges' words. The
chart is inline SVG, so the HTML file has no dependencies and opens anywhere."""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass

from dexter.evals.results import FAILURE_LABELS, Cost, QuestionResult, RunInfo
from dexter.evals.scoring import Interval, Summary, summarise_epochs
from dexter.reports.markup import answer_html, md_answer, md_inline, web_url


@dataclass(frozen=True)
class CategoryRow:
    category: str
    summary: Summary


@dataclass(frozen=True)
class Report:
    run: RunInfo
    results: list[QuestionResult]
    overall: Summary
    categories: list[CategoryRow]
    cost: Cost
    agent_cost: Cost
    judge_cost: Cost
    missing: int  # questions of the run with no stored result yet


def summary_of(results: Sequence[QuestionResult]) -> Summary:
    """Scores of `results` (any number of epochs per question) with their intervals."""
    per_question: dict[str, list[QuestionResult]] = {}
    for result in sorted(results, key=lambda r: (r.position, r.epoch)):
        per_question.setdefault(result.question_id, []).append(result)
    return summarise_epochs(
        [[r.score for r in rows] for rows in per_question.values()],
        sum(r.contradiction for r in results),
    )


def question_scores(results: Sequence[QuestionResult]) -> dict[str, float]:
    """Each question's score (mean over its epochs, failures as 0), keyed by its text: what
    `eval compare` pairs runs on, so runs over different splits meet on the questions they
    share."""
    sums: dict[str, list[float]] = {}
    for r in results:
        sums.setdefault(" ".join(r.question.lower().split()), []).append(r.score or 0.0)
    return {key: sum(values) / len(values) for key, values in sums.items()}


def build_report(run: RunInfo, results: Sequence[QuestionResult]) -> Report:
    ordered = sorted(results, key=lambda r: (r.position, r.epoch))
    by_category: dict[str, list[QuestionResult]] = {}
    for result in ordered:
        by_category.setdefault(result.category, []).append(result)
    agent, judge = Cost(), Cost()
    for result in ordered:
        agent, judge = agent + result.agent_cost, judge + result.judge_cost
    return Report(
        run=run,
        results=ordered,
        overall=summary_of(ordered),
        categories=[
            CategoryRow(name, summary_of(rows)) for name, rows in sorted(by_category.items())
        ],
        cost=agent + judge,
        agent_cost=agent,
        judge_cost=judge,
        missing=max(0, run.expected - len(ordered)),
    )


def setup_lines(run: RunInfo, results: Sequence[QuestionResult] = ()) -> list[str]:
    """How the run was made, as `label: value` lines: what `eval show` prints to rerun it."""
    o = run.options
    prompts = sorted({r.system_prompt_sha256 for r in results if r.system_prompt_sha256})

    def given(value: object) -> str:
        return "server default" if value is None else str(value)

    lines = [
        f"Dexter version: {o.get('dexter_version', 'not recorded')}",
        f"Dataset: {o.get('split') or run.dataset} (hash {run.dataset_hash}"
        + (f", file SHA-256 {str(o['dataset_sha256'])[:12]}…" if o.get("dataset_sha256") else "")
        + ")",
        f"As of: {o.get('as_of') or 'today (not fixed)'}"
        + (f" ({o['as_of_source']})" if o.get("as_of_source") else ""),
        f"Agent: {run.model}, profile {o.get('profile', 'research')}, temperature "
        f"{given(o.get('temperature'))}, seed {given(o.get('model_seed'))}"
        + (
            " (+1 per epoch)"
            if int(o.get("epochs") or 1) > 1 and o.get("model_seed") is not None
            else ""
        )
        + f", at most {o.get('max_iterations', 25)} rounds",
        f"Judges: {', '.join(run.judges)} (jury {o.get('jury', 'majority')}), temperature "
        f"{given(o.get('judge_temperature'))}, prompt SHA-256 "
        f"{str(o.get('judge_system_sha256') or 'not recorded')[:12]}",
        f"System prompt SHA-256: {', '.join(p[:12] for p in prompts) or 'not recorded'}",
        f"Epochs: {run.epochs}; response cache: {'on' if o.get('cache') else 'off'}",
    ]
    if o.get("rescored_from"):
        lines.append(f"Answers from run {o['rescored_from']} (rescored, the agent did not run)")
    if o.get("command"):
        lines.append(f"Command: {o['command']}")
    return lines


def pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"


def interval(ci: Interval | None) -> str:
    return "n/a" if ci is None else f"[{ci.low * 100:.1f}%, {ci.high * 100:.1f}%]"


def money(cost: Cost) -> str:
    return "unknown" if cost.cost_usd is None else f"${cost.cost_usd:,.4f}"


def score_lines(s: Summary) -> list[str]:
    scored = (
        f"Mean over the {s.scored} scored questions"
        if s.epochs == 1
        else f"Mean over the {s.scored} scored question runs"
    )
    lines = [
        f"Mean over all {s.questions} questions (a failed one scores 0): {pct(s.mean_all)} "
        f"95% CI {interval(s.mean_all_ci)}",
        f"{scored}: {pct(s.mean_scored)} 95% CI {interval(s.mean_scored_ci)}",
        f"Exact (every criterion met, no contradiction): {s.exact:g}/{s.questions} "
        f"95% CI {interval(s.exact_rate_ci)}; contradictions: {s.contradictions}; "
        f"failures: {s.failures}",
    ]
    if s.epochs > 1:
        means = ", ".join(pct(m) for m in s.epoch_means)
        spread = "n/a" if s.epoch_sd is None else f"{s.epoch_sd * 100:.1f} points"
        lines.append(f"Run to run ({s.epochs} epochs): {means}; standard deviation {spread}")
    return lines


def verdict_mark(v: dict[str, object]) -> str:
    if v["operator"] == "correctness":
        mark = "met" if v["passed"] else "not met"
        if v.get("must_pass") and not v["passed"]:
            mark = "NOT MET (must pass)"
        return mark
    return "CONTRADICTED" if v["passed"] else "not contradicted"


def criterion_kind(v: dict[str, object]) -> str:
    kind = str(v["operator"])
    weight = v.get("severity", 1.0)
    if weight != 1.0:
        kind += f" ×{weight:g}" if isinstance(weight, int | float) else ""
    if v.get("must_pass"):
        kind += ", must pass"
    return kind


def judges_words(v: dict[str, object]) -> str:
    """Each judge's verdict and rationale on one criterion: `judge: met — rationale`."""
    own = v.get("judges")
    if not isinstance(own, list) or len(own) < 2:
        return str(v.get("rationale") or "")
    parts = []
    for item in own:
        if isinstance(item, dict):
            said = "yes" if item.get("passed") else "no"
            parts.append(f"{item.get('judge')}: {said}, {item.get('rationale') or ''}".strip(", "))
    return " | ".join(parts)


def figure_line(figures: Sequence[dict[str, object]], counts: dict[str, object] | None) -> str:
    """The verifier's findings in one line: counts, then the unsupported figures by name."""
    if not figures and not counts:
        return ""
    counts = counts or {}
    total = counts.get("checked", len(figures))
    verified = counts.get("verified", sum(1 for f in figures if f.get("status") == "verified"))
    derived = counts.get("derived", sum(1 for f in figures if f.get("status") == "derived"))
    unsupported = [str(f.get("text")) for f in figures if f.get("status") == "unsupported"]
    missing = counts.get("unsupported", len(unsupported))
    line = f"{total} checked: {verified} verified, {derived} derived, {missing} unsupported"
    if unsupported:
        line += " (" + ", ".join(unsupported) + ")"
    return line


def _call_text(call: dict[str, object]) -> str:
    args = call.get("args")
    shown = ", ".join(f"{k}={v!r}" for k, v in args.items()) if isinstance(args, dict) else ""
    return f"{call.get('tool')}({shown})"


def _snippet(text: str, size: int = 300) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= size else flat[:size] + " …"


def _cell(text: str) -> str:
    # Questions, answers, rationales and page titles are data: shown as text, never markup.
    return md_inline(text)


def to_markdown(report: Report) -> str:
    run = report.run
    out = [
        f"# Finance Agent Benchmark run {run.id}",
        "",
        f"- Model: `{run.model}`; judge(s): {', '.join(f'`{j}`' for j in run.judges)} "
        f"(jury: {run.options.get('jury', 'majority')})",
        f"- Dataset: {run.dataset} (hash {run.dataset_hash}), {len(run.question_ids)} questions"
        + (f" × {run.epochs} epochs" if run.epochs > 1 else "")
        + (f", {report.missing} not finished" if report.missing else ""),
        f"- Status: {run.status}; started {run.created_at[:19]}Z",
        f"- Tokens: {report.cost.tokens:,} (agent {report.agent_cost.tokens:,}, judge "
        f"{report.judge_cost.tokens:,}); estimated cost {money(report.cost)}",
        "",
        "## Setup",
        "",
        *[f"- {_cell(line)}" for line in setup_lines(run, report.results)],
        "",
        "## Scores",
        "",
        *[f"- {line}" for line in score_lines(report.overall)],
        "",
        "| Category | n | Mean (all) | 95% CI | Mean (scored) | Failures |",
        "|---|---:|---:|---|---:|---:|",
    ]
    for row in report.categories:
        s = row.summary
        out.append(
            f"| {_cell(row.category)} | {s.questions} | {pct(s.mean_all)} | "
            f"{interval(s.mean_all_ci)} | {pct(s.mean_scored)} | {s.failures} |"
        )
    out += ["", "## Questions", ""]
    for r in report.results:
        out += question_markdown(r, epochs=run.epochs)
    return "\n".join(out).rstrip() + "\n"


def question_markdown(r: QuestionResult, *, epochs: int = 1, full: bool = False) -> list[str]:
    """One question's section; `full` shows every tool result in full (as stored)."""
    status = pct(r.score) if r.status == "scored" else FAILURE_LABELS[r.status]
    if r.must_pass_failed:
        status += " (a must-pass criterion failed)"
    epoch = f" · epoch {r.epoch}" if epochs > 1 else ""
    out = [
        f"### {_cell(r.question_id)}{epoch} · {_cell(r.category)} · {status}",
        "",
        f"**Question.** {_cell(r.question)}",
        "",
    ]
    if r.transcript:
        out += [f"**Tool calls ({len(r.transcript)}).**", ""]
        for n, call in enumerate(r.transcript, start=1):
            if "error" in call:
                said = f"error: {call['error']}"
            elif "denied" in call:
                said = f"denied: {call['denied']}"
            else:
                said = str(call.get("result", ""))
            shown = " ".join(said.split()) if full else _snippet(said)
            out.append(f"{n}. `{_cell(_call_text(call))}` → {_cell(shown)}")
        out.append("")
    out += [
        # The answer's own headings go below this question's (###).
        f"**Answer.**\n\n{md_answer(r.answer.strip(), top=4) or '(no answer)'}",
        "",
    ]
    figures = figure_line(r.figures, r.verification)
    if figures:
        out += [f"**Figures.** {_cell(figures)}", ""]
    if r.answer_from:
        out += [f"*Answer from run {_cell(r.answer_from)}.*", ""]
    if r.error:
        out += [f"**Error.** {_cell(r.error)}", ""]
    if r.verdicts:
        out += ["| Criterion | Kind | Verdict | Judge's words |", "|---|---|---|---|"]
        for v in r.verdicts:
            out.append(
                f"| {_cell(v['criterion'])} | {criterion_kind(v)} | {verdict_mark(v)} | "
                f"{_cell(judges_words(v))} |"
            )
        out.append("")
    if r.sources:
        out += ["**Sources.**", ""]
        out += [f"- \\[{_cell(str(s['id']))}\\] {_cell(str(s['label']))}" for s in r.sources]
        out.append("")
    if r.tool_calls and not r.transcript:
        calls = ", ".join(
            f"`{c['tool']}`" + (" (error)" if c["is_error"] else "") for c in r.tool_calls
        )
        out += [f"**Tool calls ({len(r.tool_calls)}).** {calls}", ""]
    cache = (
        f", {r.cache.get('hits', 0)} of {r.cache.get('hits', 0) + r.cache.get('misses', 0)} "
        "model calls from the cache"
        if r.cache
        else ""
    )
    out += [
        f"Tokens {r.total_cost.tokens:,}, estimated cost {money(r.total_cost)}, "
        f"{r.iterations} round(s), {r.duration_ms / 1000:.1f} s{cache}.",
        "",
    ]
    return out


def bar_chart_svg(rows: Sequence[CategoryRow], width: int = 640) -> str:
    """Horizontal bars of each category's mean (failures as 0), with the 95% interval."""
    label_w, bar_w, row_h, top = 190, width - 190 - 120, 26, 24
    height = top + row_h * len(rows) + 10
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="Mean score by category">',
        f'<text x="{label_w}" y="14" font-size="11" fill="#555">0%</text>',
        f'<text x="{label_w + bar_w - 24}" y="14" font-size="11" fill="#555">100%</text>',
    ]
    for i, row in enumerate(rows):
        s = row.summary
        y = top + i * row_h
        w = max(0.0, s.mean_all) * bar_w
        lo, hi = s.mean_all_ci.low * bar_w, s.mean_all_ci.high * bar_w
        name = html.escape(row.category)
        parts += [
            f'<text x="{label_w - 8}" y="{y + 15}" font-size="12" text-anchor="end">{name}</text>',
            f'<rect x="{label_w}" y="{y + 4}" width="{bar_w}" height="16" fill="#eef1f5"/>',
            f'<rect x="{label_w}" y="{y + 4}" width="{w:.1f}" height="16" fill="#3d6fb6"/>',
            f'<line x1="{label_w + lo:.1f}" x2="{label_w + hi:.1f}" y1="{y + 12}" y2="{y + 12}" '
            'stroke="#1b2a41" stroke-width="1.5"/>',
            f'<text x="{label_w + bar_w + 6}" y="{y + 16}" font-size="12">'
            f"{pct(s.mean_all)} (n={s.questions})</text>",
        ]
    parts.append("</svg>")
    return "\n".join(parts)


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;max-width:960px;margin:2em auto;
padding:0 1em;color:#1b2a41;line-height:1.45}
table{border-collapse:collapse;margin:.6em 0;width:100%}td,th{border:1px solid #d5dbe3;
padding:4px 8px;text-align:left;vertical-align:top;font-size:14px}th{background:#f3f5f8}
.met{color:#1f7a3a}.miss{color:#9a6700}.bad{color:#b3261e;font-weight:600}
pre{white-space:pre-wrap;background:#f7f8fa;padding:.7em;border-radius:4px;font-size:13px}
.answer{border-left:3px solid #d5dbe3;padding:0 .9em;margin:.4em 0}
details{margin:.8em 0;border-top:1px solid #e3e7ec;padding-top:.5em}summary{cursor:pointer}
.small{color:#5b6b80;font-size:13px}
"""


def to_html(report: Report) -> str:
    run = report.run
    e = html.escape
    out = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>Dexter eval {e(run.id)}</title><style>{_CSS}</style></head><body>",
        f"<h1>Finance Agent Benchmark run {e(run.id)}</h1>",
        f"<p class='small'>Model <code>{e(run.model)}</code>; judge(s) "
        f"{', '.join(f'<code>{e(j)}</code>' for j in run.judges)} (jury "
        f"{e(str(run.options.get('jury', 'majority')))}); dataset {e(run.dataset)} "
        f"(hash {e(run.dataset_hash)}), {len(run.question_ids)} questions; status "
        f"{e(run.status)}. Tokens {report.cost.tokens:,}; estimated cost "
        f"{e(money(report.cost))}.</p>",
        "<h2>Setup</h2><ul>",
        *[f"<li>{e(line)}</li>" for line in setup_lines(run, report.results)],
        "</ul>",
        "<h2>Scores</h2><ul>",
        *[f"<li>{e(line)}</li>" for line in score_lines(report.overall)],
        "</ul>",
        bar_chart_svg(report.categories),
        "<table><tr><th>Category</th><th>n</th><th>Mean (all)</th><th>95% CI</th>"
        "<th>Mean (scored)</th><th>Failures</th></tr>",
    ]
    for row in report.categories:
        s = row.summary
        out.append(
            f"<tr><td>{e(row.category)}</td><td>{s.questions}</td><td>{pct(s.mean_all)}</td>"
            f"<td>{interval(s.mean_all_ci)}</td><td>{pct(s.mean_scored)}</td>"
            f"<td>{s.failures}</td></tr>"
        )
    out += ["</table>", "<h2>Questions</h2>"]
    for r in report.results:
        status = pct(r.score) if r.status == "scored" else FAILURE_LABELS[r.status]
        if r.must_pass_failed:
            status += " (a must-pass criterion failed)"
        epoch = f" · epoch {r.epoch}" if run.epochs > 1 else ""
        out += [
            f"<details open><summary><b>{e(r.question_id)}</b>{e(epoch)} · {e(r.category)} · "
            f"<b>{e(status)}</b> · {e(r.question[:110])}</summary>",
            f"<p><b>Question.</b> {e(r.question)}</p>",
        ]
        if r.transcript:
            items = "".join(
                f"<li><code>{e(_call_text(c))}</code> → "
                + e(
                    f"error: {c['error']}"
                    if "error" in c
                    else f"denied: {c['denied']}"
                    if "denied" in c
                    else _snippet(str(c.get("result", "")))
                )
                + "</li>"
                for c in r.transcript
            )
            out.append(f"<p><b>Tool calls ({len(r.transcript)}).</b></p><ol>{items}</ol>")
        out.append(
            # Rendered, not raw Markdown: safely (no raw HTML, no images, web links only),
            # its headings below the question's.
            "<p><b>Answer.</b></p><div class='answer'>"
            + (answer_html(r.answer.strip(), top=4) if r.answer.strip() else "<p>(no answer)</p>")
            + "</div>"
        )
        figures = figure_line(r.figures, r.verification)
        if figures:
            out.append(f"<p><b>Figures.</b> {e(figures)}</p>")
        if r.error:
            out.append(f"<p class='bad'>{e(r.error)}</p>")
        if r.verdicts:
            out.append(
                "<table><tr><th>Criterion</th><th>Kind</th><th>Verdict</th>"
                "<th>Judge's words</th></tr>"
            )
            for v in r.verdicts:
                mark = verdict_mark(v)
                if v["operator"] == "correctness":
                    css = "met" if v["passed"] else ("bad" if v.get("must_pass") else "miss")
                else:
                    css = "bad" if v["passed"] else "met"
                out.append(
                    f"<tr><td>{e(v['criterion'])}</td><td>{e(criterion_kind(v))}</td>"
                    f"<td class='{css}'>{e(mark)}</td><td>{e(judges_words(v))}</td></tr>"
                )
            out.append("</table>")
        if r.sources:
            items = "".join(
                f"<li>[{e(s['id'])}] "
                + (
                    f"<a href='{e(link)}' rel='noreferrer'>{e(s['label'])}</a>"
                    if (link := web_url(s.get("url")))
                    else e(s["label"])
                )
                + "</li>"
                for s in r.sources
            )
            out.append(f"<p><b>Sources.</b></p><ul>{items}</ul>")
        if r.tool_calls and not r.transcript:
            calls = ", ".join(
                f"<code>{e(c['tool'])}</code>" + (" (error)" if c["is_error"] else "")
                for c in r.tool_calls
            )
            out.append(f"<p><b>Tool calls ({len(r.tool_calls)}).</b> {calls}</p>")
        out.append(
            f"<p class='small'>Tokens {r.total_cost.tokens:,}; estimated cost "
            f"{e(money(r.total_cost))}; {r.iterations} round(s); {r.duration_ms / 1000:.1f} s.</p>"
            "</details>"
        )
    out.append("</body></html>")
    return "\n".join(out) + "\n"
