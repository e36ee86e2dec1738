"""A stored run as Markdown or HTML: scores with intervals, a per-category bar chart, and each
question's answer, rubric verdicts, sources and tool calls. The chart is inline SVG, so the HTML
file has no dependencies and opens anywhere."""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass

from dexter.evals.results import FAILURE_LABELS, Cost, QuestionResult, RunInfo
from dexter.evals.scoring import Interval, Summary, summarise
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


def figures_line(counts: dict[str, int]) -> str:
    """One question's figure check: "7 checked: 5 verified, 1 derived, 1 unsupported (1
    repaired)"."""
    parts = [f"{counts.get(k, 0)} {k}" for k in ("verified", "derived", "unsupported")]
    line = f"{counts.get('checked', 0)} checked: " + ", ".join(parts)
    repaired = counts.get("repaired", 0)
    return line + (f" ({repaired} repaired)" if repaired else "")


def build_report(run: RunInfo, results: Sequence[QuestionResult]) -> Report:
    ordered = sorted(results, key=lambda r: r.position)
    by_category: dict[str, list[QuestionResult]] = {}
    for result in ordered:
        by_category.setdefault(result.category, []).append(result)
    agent, judge = Cost(), Cost()
    for result in ordered:
        agent, judge = agent + result.agent_cost, judge + result.judge_cost
    return Report(
        run=run,
        results=ordered,
        overall=summarise([r.score for r in ordered], sum(r.contradiction for r in ordered)),
        categories=[
            CategoryRow(
                name,
                summarise([r.score for r in rows], sum(r.contradiction for r in rows)),
            )
            for name, rows in sorted(by_category.items())
        ],
        cost=agent + judge,
        agent_cost=agent,
        judge_cost=judge,
        missing=max(0, len(run.question_ids) - len(ordered)),
    )


def pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"


def interval(ci: Interval | None) -> str:
    return "n/a" if ci is None else f"[{ci.low * 100:.1f}%, {ci.high * 100:.1f}%]"


def money(cost: Cost) -> str:
    return "unknown" if cost.cost_usd is None else f"${cost.cost_usd:,.4f}"


def score_lines(s: Summary) -> list[str]:
    return [
        f"Mean over all {s.questions} questions (a failed one scores 0): {pct(s.mean_all)} "
        f"95% CI {interval(s.mean_all_ci)}",
        f"Mean over the {s.scored} scored questions: {pct(s.mean_scored)} "
        f"95% CI {interval(s.mean_scored_ci)}",
        f"Exact (every criterion met, no contradiction): {s.exact}/{s.questions} "
        f"95% CI {interval(s.exact_rate_ci)}; contradictions: {s.contradictions}; "
        f"failures: {s.failures}",
    ]


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
        + (f", {report.missing} not finished" if report.missing else ""),
        f"- Status: {run.status}; started {run.created_at[:19]}Z",
        f"- Tokens: {report.cost.tokens:,} (agent {report.agent_cost.tokens:,}, judge "
        f"{report.judge_cost.tokens:,}); estimated cost {money(report.cost)}",
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
        status = pct(r.score) if r.status == "scored" else FAILURE_LABELS[r.status]
        out += [
            f"### {_cell(r.question_id)} · {_cell(r.category)} · {status}",
            "",
            f"**Question.** {_cell(r.question)}",
            "",
            # The answer's own headings go below this question's (###).
            f"**Answer.**\n\n{md_answer(r.answer.strip(), top=4) or '(no answer)'}",
            "",
        ]
        if r.verification:
            out += [f"**Figures.** {figures_line(r.verification)}", ""]
        if r.error:
            out += [f"**Error.** {_cell(r.error)}", ""]
        if r.verdicts:
            out += ["| Criterion | Kind | Verdict | Rationale |", "|---|---|---|---|"]
            for v in r.verdicts:
                if v["operator"] == "correctness":
                    mark = "met" if v["passed"] else "not met"
                else:
                    mark = "CONTRADICTED" if v["passed"] else "not contradicted"
                out.append(
                    f"| {_cell(v['criterion'])} | {v['operator']} | {mark} | "
                    f"{_cell(v['rationale'])} |"
                )
            out.append("")
        if r.sources:
            out += ["**Sources.**", ""]
            out += [f"- \\[{_cell(str(s['id']))}\\] {_cell(str(s['label']))}" for s in r.sources]
            out.append("")
        if r.tool_calls:
            calls = ", ".join(
                f"`{c['tool']}`" + (" (error)" if c["is_error"] else "") for c in r.tool_calls
            )
            out += [f"**Tool calls ({len(r.tool_calls)}).** {calls}", ""]
        out += [
            f"Tokens {r.total_cost.tokens:,}, estimated cost {money(r.total_cost)}, "
            f"{r.iterations} round(s), {r.duration_ms / 1000:.1f} s.",
            "",
        ]
    return "\n".join(out).rstrip() + "\n"


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
        out += [
            f"<details open><summary><b>{e(r.question_id)}</b> · {e(r.category)} · "
            f"<b>{e(status)}</b> · {e(r.question[:110])}</summary>",
            f"<p><b>Question.</b> {e(r.question)}</p>",
            # Rendered, not raw Markdown: safely (no raw HTML, no images, web links only),
            # its headings below the question's.
            "<p><b>Answer.</b></p><div class='answer'>"
            + (answer_html(r.answer.strip(), top=4) if r.answer.strip() else "<p>(no answer)</p>")
            + "</div>",
        ]
        if r.verification:
            out.append(f"<p><b>Figures.</b> {e(figures_line(r.verification))}</p>")
        if r.error:
            out.append(f"<p class='bad'>{e(r.error)}</p>")
        if r.verdicts:
            out.append(
                "<table><tr><th>Criterion</th><th>Kind</th><th>Verdict</th><th>Rationale</th></tr>"
            )
            for v in r.verdicts:
                if v["operator"] == "correctness":
                    mark, css = ("met", "met") if v["passed"] else ("not met", "miss")
                else:
                    mark, css = (
                        ("CONTRADICTED", "bad") if v["passed"] else ("not contradicted", "met")
                    )
                out.append(
                    f"<tr><td>{e(v['criterion'])}</td><td>{e(v['operator'])}</td>"
                    f"<td class='{css}'>{mark}</td><td>{e(v['rationale'])}</td></tr>"
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
        if r.tool_calls:
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
