"""`dexter eval finance-agent` end to end: the agent and the judge are scripted by a local
OpenAI-compatible server, each question runs through the runtime, results are stored, scored
with intervals and costed, reported, and resumable."""

from __future__ import annotations

import asyncio
import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dexter.cli.main import main
from dexter.cli.open_runtime import open_runtime
from dexter.evals.dataset import load_dataset
from dexter.evals.judge import Verdict, combine
from dexter.evals.runner import EvalOptions, QuestionFinished, run_eval
from dexter.evals.scoring import bootstrap_mean, wilson
from dexter.evals.storage import EvalStore
from tests.support.wire_server import Recorded, Reply, WireServer, json_reply, sse

AGENT, JUDGE, JUDGE2 = "openai:agent-model", "openai:judge-model", "openai:judge-two"
BASE = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m"}

# Five questions, two categories; rubrics as Python literals (most of the benchmark) and JSON.
QUESTIONS: list[tuple[str, str, str, list[dict[str, str]]]] = [
    (
        "What was Apple's revenue for fiscal 2025?",
        "$416,161 million",
        "Quantitative Retrieval",
        [
            {"operator": "correctness", "criteria": "416,161 million"},
            {"operator": "contradiction", "criteria": "Revenue was $391,035 million"},
        ],
    ),
    (
        "What were NVIDIA's revenue and net income for fiscal 2026?",
        "215,938 and 120,067",
        "Quantitative Retrieval",
        [
            {"operator": "correctness", "criteria": "revenue 215,938 million"},
            {"operator": "correctness", "criteria": "net income 120,067 million"},
            {"operator": "contradiction", "criteria": "fiscal 2026 ended January 2026"},
        ],
    ),
    (
        "Did Buckle's third quarter net sales rise?",
        "No, down 3.2%",
        "Trends",
        [
            {"operator": "correctness", "criteria": "net sales decreased 3.2%"},
            {"operator": "contradiction", "criteria": "net sales decreased"},
        ],
    ),
    (
        "What was Snowflake's fiscal 2025 net loss?",
        "1,285.6 million",
        "Quantitative Retrieval",
        [
            {"operator": "correctness", "criteria": "1,285.6 million"},
            {"operator": "contradiction", "criteria": "a profit"},
        ],
    ),
    (
        "What was Apple's net margin in fiscal 2025?",
        "26.9%",
        "Trends",
        [
            {"operator": "correctness", "criteria": "net income 112,010 million"},
            {"operator": "correctness", "criteria": "revenue 416,161 million"},
            {"operator": "correctness", "criteria": "net margin 26.9%"},
            {"operator": "contradiction", "criteria": "margin of 22%"},
        ],
    ),
]


def write_dataset(path: Path) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["Question", "Answer", "Question Type", "Expert time (mins)", "Rubric"])
        for i, (question, answer, category, rubric) in enumerate(QUESTIONS):
            cell = json.dumps(rubric) if i % 2 else repr(rubric)
            writer.writerow([question, answer, category, 5 + i, cell])
    return path


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {**BASE, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def answer(text: str) -> Reply:
    usage = {**BASE, "choices": [], "usage": {"prompt_tokens": 1000, "completion_tokens": 100}}
    return sse([chunk({"content": text}), chunk({}, "stop"), usage])


def calculate_call() -> Reply:
    call = {
        "index": 0,
        "id": "k1",
        "type": "function",
        "function": {
            "name": "calculate",
            "arguments": json.dumps({"operation": "margin", "part": 112010, "whole": 416161}),
        },
    }
    usage = {**BASE, "choices": [], "usage": {"prompt_tokens": 1000, "completion_tokens": 100}}
    return sse([chunk({"tool_calls": [call]}), chunk({}, "tool_calls"), usage])


def judged(content: str) -> Reply:
    return json_reply(
        {
            "id": "j",
            "object": "chat.completion",
            "created": 1,
            "model": "judge",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": content},
                }
            ],
            "usage": {"prompt_tokens": 500, "completion_tokens": 50},
        }
    )


def verdicts(met: list[bool], contradicted: bool, first_contradiction: int) -> str:
    return json.dumps(
        {
            "correctness": [
                {"id": f"c{i + 1}", "met": m, "rationale": "checked"} for i, m in enumerate(met)
            ],
            "contradiction": [
                {
                    "id": f"c{first_contradiction}",
                    "contradicted": contradicted,
                    "rationale": "direct" if contradicted else "no",
                }
            ],
            "comment": "graded",
        }
    )


def is_agent(question: str) -> Any:
    def match(request: Recorded) -> bool:
        body = request.json()
        text = json.dumps(body.get("messages"))
        return bool(body.get("tools")) and question in text

    return match


def is_judge(question: str, model: str = "judge-model") -> Any:
    def match(request: Recorded) -> bool:
        body = request.json()
        return body.get("model") == model and question in json.dumps(body.get("messages"))

    return match


def script(server: WireServer, *, only: range = range(5)) -> None:
    q = [item[0] for item in QUESTIONS]
    plan: list[tuple[int, list[Reply], list[str]]] = [
        (
            0,
            [answer("Apple's FY2025 revenue was $416,161 million [S1].")],
            [verdicts([True], False, 2)],
        ),
        (1, [answer("Revenue $215,938 million.")], [verdicts([True, False], False, 3)]),
        (2, [answer("Net sales rose.")], [verdicts([True], True, 2)]),
        (3, [answer("A net loss of $1,285.6 million.")], ["not json", "{}", "still no"]),
        (
            4,
            [calculate_call(), answer("Net margin 26.9% = 112,010 / 416,161.")],
            ["```json\n{oops", verdicts([True, True, False], False, 4)],
        ),
    ]
    for index, agent_replies, judge_replies in plan:
        if index not in only:
            continue
        for reply in agent_replies:
            server.route(is_agent(q[index]), reply)
        for content in judge_replies:
            server.route(is_judge(q[index]), judged(content))


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wire_server: WireServer) -> Iterator[Path]:
    monkeypatch.chdir(tmp_path)
    for name in (
        "FINANCIAL_DATASETS_API_KEY",
        "DEXTER_MODEL",
        "DEXTER_ROUTER_MODEL",
        "ANTHROPIC_API_KEY",
        "DEXTER_JUDGE_MODEL",
    ):
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    (home / "settings.json").write_text(
        json.dumps(
            {
                "prices": {
                    AGENT: {"input": 1.0, "output": 2.0},
                    JUDGE: {"input": 10.0, "output": 20.0},
                },
                # The scripted answers state figures no tool fetched: `flag` records the check
                # without the repair call (that round is test_verification_e2e's), so the
                # costs below stay one call per scripted reply.
                "verify": "flag",
            }
        )
    )
    monkeypatch.setenv("DEXTER_HOME", str(home))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-123456")
    monkeypatch.setenv("OPENAI_BASE_URL", wire_server.url + "/v1")
    monkeypatch.setenv("DEXTER_SEC_USER_AGENT", "Dexter Tests tests@example.com")
    yield tmp_path


AGENT_CALL = 1000 * 1.0 / 1e6 + 100 * 2.0 / 1e6  # USD, per scripted agent reply
JUDGE_CALL = 500 * 10.0 / 1e6 + 50 * 20.0 / 1e6  # USD, per scripted judge reply


def test_five_questions_scored_costed_reported(
    env: Path, wire_server: WireServer, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset = write_dataset(env / "questions.csv")
    script(wire_server)
    code = main(
        [
            "eval",
            "finance-agent",
            "--dataset",
            str(dataset),
            "--model",
            AGENT,
            "--judge-model",
            JUDGE,
            "--concurrency",
            "2",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    lines = [line for line in out.splitlines() if line and line[0] in "✓~x!"]
    assert len(lines) == 5, out  # one live line per question, plain because stdout is a pipe
    assert "\x1b[" not in out
    # Means over all questions (the judge failure counts as 0) and over scored ones, labelled.
    mean_all = (1 + 0.5 + 0 + 0 + 2 / 3) / 5
    mean_scored = (1 + 0.5 + 0 + 2 / 3) / 4
    assert f"Mean, all 5 questions (a failed one scores 0):  {mean_all * 100:.1f}%" in out
    ci = bootstrap_mean([1.0, 0.5, 0.0, 0.0, 2 / 3])
    assert f"95% CI [{ci.low * 100:.1f}%, {ci.high * 100:.1f}%]" in out
    assert ci.low < mean_all < ci.high
    assert f"Mean, 4 scored questions only:                  {mean_scored * 100:.1f}%" in out

    # Each question ran on the eval channel: research profile, no shell, no writes, no memory.
    first = next(r.json() for r in wire_server.requests if r.json().get("tools"))
    offered = {t["function"]["name"] for t in first["tools"]}
    assert {"calculate", "get_financials", "read_filings"} <= offered
    assert not offered & {"bash", "write_file", "edit_file", "ask_user_question"}
    assert not any(name.startswith("memory") for name in offered)
    system = first["messages"][0]["content"]
    assert "exactly as filed" in system and "basis points" in system

    store_home = env / "home"
    from dexter.store import open_store

    with open_store(store_home) as db:
        store = EvalStore(db)
        (run,) = store.runs()
        results = {r.question_id: r for r in store.results(run.id)}
    assert run.status == "finished" and run.model == AGENT and run.judges == [JUDGE]
    assert {k: (r.status, r.score) for k, r in results.items()} == {
        "q1": ("scored", 1.0),
        "q2": ("scored", 0.5),
        "q3": ("scored", 0.0),
        "q4": ("judge_error", None),
        "q5": ("scored", pytest.approx(2 / 3)),
    }
    assert results["q3"].contradiction and results["q3"].passed_criteria == 1
    assert "malformed after 3 attempts" in (results["q4"].error or "")
    assert results["q5"].tool_calls[0]["tool"] == "calculate"
    # Each answer's figure check is recorded with its question.
    assert results["q1"].verification == {
        "checked": 1,
        "verified": 0,
        "derived": 0,
        "unsupported": 1,
        "repaired": 0,
    }
    assert [f["status"] for f in results["q1"].figures] == ["unsupported"]
    # Costs: every scripted call priced from settings; retries and the failed judge included.
    assert results["q1"].agent_cost.cost_usd == pytest.approx(AGENT_CALL)
    assert results["q1"].judge_cost.cost_usd == pytest.approx(JUDGE_CALL)
    assert results["q4"].judge_cost.cost_usd == pytest.approx(3 * JUDGE_CALL)
    assert results["q5"].agent_cost.cost_usd == pytest.approx(2 * AGENT_CALL)
    assert results["q5"].judge_cost.cost_usd == pytest.approx(2 * JUDGE_CALL)
    assert results["q5"].agent_cost.tokens == 2200
    total = 6 * AGENT_CALL + (1 + 1 + 1 + 3 + 2) * JUDGE_CALL
    assert f"Estimated cost: ${total:,.4f}" in out
    # Per-category rows with intervals.
    assert "Quantitative Retrieval" in out and "Trends" in out

    assert main(["eval", "list"]) == 0
    listing = capsys.readouterr().out
    assert run.id in listing and "finished" in listing
    md, page = env / "r.md", env / "r.html"
    assert main(["eval", "show", run.id[:10], "--markdown", str(md), "--html", str(page)]) == 0
    markdown, html = md.read_text(), page.read_text()
    assert "Net sales rose." in markdown and "CONTRADICTED" in markdown
    assert "judge failure" in markdown
    # The transcript shows each tool call with its arguments and what it returned.
    assert "`calculate(operation='margin', part=112010, whole=416161)` →" in markdown
    assert "<svg" in html and "Quantitative Retrieval" in html
    assert html.count("<details open>") == 5


async def test_resume_after_interruption_reruns_nothing_finished(
    env: Path, wire_server: WireServer
) -> None:
    from dexter.config import load_settings

    dataset = load_dataset(write_dataset(env / "questions.csv"))
    script(wire_server)
    script(wire_server, only=range(2, 5))  # whatever is in flight when interrupted runs again
    options = EvalOptions(model=AGENT, judges=[JUDGE], concurrency=1, max_iterations=5)
    async with open_runtime(load_settings()) as rt:
        store = EvalStore(rt.store)
        run = store.create_run(
            dataset="finance_agent",
            dataset_hash=dataset.hash,
            model=AGENT,
            judges=[JUDGE],
            options={},
            question_ids=[q.id for q in dataset.questions],
        )
        finished: list[str] = []
        task: asyncio.Task[Any]

        def on_event(event: object) -> None:
            if isinstance(event, QuestionFinished):
                finished.append(event.result.question_id)
                if len(finished) == 2:
                    task.cancel()  # what Ctrl+C does to the running coroutine

        task = asyncio.ensure_future(
            run_eval(rt, store, run.id, dataset.questions, options, on_event=on_event)
        )
        with pytest.raises(asyncio.CancelledError):
            await task
        assert store.require(run.id).status == "interrupted"
        assert store.finished_ids(run.id) == {"q1", "q2"}
        asked_before = len(wire_server.requests)

        results = await run_eval(rt, store, run.id, dataset.questions, options)
    assert [r.question_id for r in results] == ["q1", "q2", "q3", "q4", "q5"]
    later = [json.dumps(r.json()) for r in wire_server.requests[asked_before:]]
    for finished_question in (QUESTIONS[0][0], QUESTIONS[1][0]):
        assert not any(finished_question in body for body in later)
    assert store_status(env) == "finished"


def store_status(env: Path) -> str:
    from dexter.store import open_store

    with open_store(env / "home") as db:
        return EvalStore(db).runs()[0].status


def test_jury_majority_and_mean() -> None:
    from dexter.evals.dataset import Question, parse_rubric

    rubric = parse_rubric(repr(QUESTIONS[4][3]), 2)
    question = Question("q1", 0, "?", "!", "Trends", 5, rubric)

    def judge(met: list[bool], fired: bool) -> tuple[list[Verdict], str]:
        return (
            [Verdict(f"c{i + 1}", "correctness", m) for i, m in enumerate(met)]
            + [Verdict("c4", "contradiction", fired)],
            "",
        )

    per_judge: dict[str, Any] = {
        "a": judge([True, True, False], False),
        "b": judge([True, False, False], True),
        "c": judge([True, True, True], False),
    }
    majority = combine(question, per_judge, {}, "majority")
    # c1 3/3, c2 2/3, c3 1/3 met; the contradiction fires for 1 of 3 judges only.
    assert [v.passed for v in majority.verdicts] == [True, True, False, False]
    assert majority.score == pytest.approx(2 / 3) and not majority.contradiction
    mean = combine(question, per_judge, {}, "mean")
    assert mean.score == pytest.approx((2 / 3 + 0 + 1) / 3)
    # A judge that failed is left out; a tie among the rest is "not met".
    split = combine(question, {**per_judge, "c": "judge call failed"}, {}, "majority")
    assert [v.passed for v in split.verdicts] == [True, False, False, False]
    assert split.failures == {"c": "judge call failed"} and split.judge_scores["c"] is None
    assert combine(question, {"a": "bad", "b": "bad"}, {}, "majority").score is None


def test_intervals() -> None:
    low = wilson(1, 5)
    assert (round(low.low, 4), round(low.high, 4)) == (0.0362, 0.6245)
    assert wilson(0, 0).low == 0 and wilson(0, 0).high == 1
    scores = [1.0, 0.5, 0.0, 0.0, 2 / 3]
    ci = bootstrap_mean(scores)
    assert ci.low < sum(scores) / 5 < ci.high and 0 <= ci.low and ci.high <= 1
    assert bootstrap_mean(scores) == ci, "seeded: a stored run always shows the same interval"
    assert bootstrap_mean([1.0, 1.0]).low == 1.0


def test_sampling_matches_the_original_and_rubrics_parse() -> None:
    from dexter.evals.sampling import stratified_sample
    from tests.support.fixtures import fixtures_dir

    dataset = load_dataset(fixtures_dir() / "evals" / "finance_agent.csv")
    assert len(dataset.questions) == 50 and len(dataset.categories) == 9
    assert sum(len(q.correctness) for q in dataset.questions) == 194
    assert all(len(q.contradictions) == 1 for q in dataset.questions)
    picked = [q.id for q in stratified_sample(dataset.questions, 10, "dexter-eval")]
    assert picked == ["q2", "q10", "q16", "q19", "q27", "q36", "q38", "q42", "q43", "q45"]


def test_bad_input_gets_one_line(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dataset = write_dataset(env / "questions.csv")
    assert main(["eval", "finance-agent", "--dataset", str(dataset), "--model", AGENT]) == 2
    assert "a judge model is needed" in capsys.readouterr().err
    assert (
        main(
            [
                "eval",
                "finance-agent",
                "--dataset",
                str(dataset),
                "--model",
                AGENT,
                "--judge-model",
                AGENT,
            ]
        )
        == 2
    )
    assert "--allow-self-judge" in capsys.readouterr().err
    assert (
        main(["eval", "finance-agent", "--dataset", str(env / "nope.csv"), "--judge-model", JUDGE])
        == 2
    )
    assert "does not exist" in capsys.readouterr().err
    assert main(["eval", "show", "nothing"]) == 2
    assert "dexter eval list" in capsys.readouterr().err
    bad = env / "bad.csv"
    bad.write_text(
        "Question,Answer,Question Type,Expert time (mins),Rubric\n"
        "q,a,T,5,\"__import__('os').system('echo pwned')\"\n"
    )
    assert main(["eval", "finance-agent", "--dataset", str(bad), "--judge-model", JUDGE]) == 2
    assert "neither JSON nor a Python literal" in capsys.readouterr().err


def test_ask_can_use_the_research_profile(
    env: Path, wire_server: WireServer, capsys: pytest.CaptureFixture[str]
) -> None:
    wire_server.push(answer("Revenue was USD 416,161 million in fiscal 2025."))
    assert main(["ask", "--model", AGENT, "--research", "Apple revenue fiscal 2025?"]) == 0
    system = wire_server.requests[-1].json()["messages"][0]["content"]
    assert "exactly as filed" in system and "GAAP" in system
    capsys.readouterr()


def stored_run(env: Path, path: Path, options: dict[str, Any], question_ids: list[str]) -> Any:
    """A run created as `eval finance-agent` would, with nothing finished yet."""
    from dexter.store import open_store

    with open_store(env / "home") as db:
        return EvalStore(db).create_run(
            dataset="finance_agent",
            dataset_hash=load_dataset(path).hash,
            model=AGENT,
            judges=[JUDGE],
            options=options,
            question_ids=question_ids,
        )


def test_cli_resume_uses_the_runs_own_settings(
    env: Path, wire_server: WireServer, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_dataset(env / "questions.csv")
    run = stored_run(env, path, {"jury": "majority", "max_iterations": 5}, ["q1", "q3"])
    script(wire_server, only=range(0, 3))
    assert main(["eval", "finance-agent", "--resume", run.id[:12], "--dataset", str(path)]) == 0
    out = capsys.readouterr().out
    assert "2 questions, model openai:agent-model, judge openai:judge-model" in out
    assert "q1" in out and "q3" in out and " q2 " not in out
    other = env / "other.csv"
    other.write_text(path.read_text().replace("fiscal 2025", "fiscal 2024"))
    assert main(["eval", "finance-agent", "--resume", run.id, "--dataset", str(other)]) == 2
    assert "Pass the same --dataset" in capsys.readouterr().err


def test_judge_reply_parsing() -> None:
    from dexter.evals.dataset import Question, parse_rubric
    from dexter.evals.judge import judge_prompt, parse_verdicts, score_of

    rubric = parse_rubric(json.dumps(QUESTIONS[1][3]), 2)
    question = Question("q2", 1, "Q?", "A.", "Trends", 5, rubric)
    fenced = "```json\n" + verdicts([True, True], False, 3) + "\n```"
    parsed, comment = parse_verdicts(fenced, question)
    assert score_of(parsed) == (1.0, False, 2, 2) and comment == "graded"
    # A criterion the judge left out is not met; an omitted contradiction does not fire.
    partial = json.dumps({"correctness": [{"id": "c1", "met": True}]})
    parsed, _ = parse_verdicts(partial, question)
    assert [v.passed for v in parsed] == [True, False, False]
    assert parsed[1].rationale == "Judge did not return this criterion."
    for bad in ("no json here", '{"correctness": "yes"}', '{"correctness": [{"id": "c1"}]}'):
        with pytest.raises(ValueError):
            parse_verdicts(bad, question)
    assert "(empty answer)" in judge_prompt(question, "  ")


def test_a_run_where_every_question_failed_exits_1_and_says_so(
    env: Path, wire_server: WireServer, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset = write_dataset(env / "questions.csv")
    for index in (2, 4):  # the two Trends questions: answered, but the judge never replies JSON
        question = QUESTIONS[index][0]
        wire_server.route(is_agent(question), answer("An answer."))
        for _ in range(3):
            wire_server.route(is_judge(question), judged("not json"))
    argv = ["eval", "finance-agent", "--dataset", str(dataset), "--category", "Trends"]
    code = main([*argv, "--model", AGENT, "--judge-model", JUDGE])
    captured = capsys.readouterr()
    assert code == 1, captured.out
    assert "failures = 0" not in captured.out
    assert "Mean, all 2 questions (a failed one scores 0):" in captured.out
    assert "every question failed (2 of 2); no answer was scored" in captured.err


def test_resume_finds_the_runs_own_dataset(
    env: Path, wire_server: WireServer, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_dataset(env / "questions.csv")
    run = stored_run(env, path, {"jury": "majority", "dataset_path": str(path)}, ["q1"])
    script(wire_server, only=range(0, 1))
    assert main(["eval", "finance-agent", "--resume", run.id]) == 0  # no --dataset needed
    assert "1 questions, model openai:agent-model" in capsys.readouterr().out


def test_finance_agent_without_questions_advises_its_own_options(
    env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The default split cannot be downloaded (nothing listens there): one line that says how
    # else to give the questions, and no traceback.
    monkeypatch.setenv("DEXTER_EVAL_DATA_URL", "http://127.0.0.1:9")
    assert main(["eval", "finance-agent", "--judge-model", JUDGE]) == 2
    err = capsys.readouterr().err
    assert "Cannot download the v1.1 questions" in err
    assert "--dataset FILE" in err and "DEXTER_EVAL_DATA_URL" in err
    assert "--fixtures" not in err and "Traceback" not in err


def test_eval_show_html_renders_answers_as_safe_html() -> None:
    from dexter.evals.report import build_report, to_html, to_markdown
    from dexter.evals.results import QuestionResult, RunInfo

    run = RunInfo(
        id="r1",
        created_at="2026-01-01T00:00:00",
        updated_at="2026-01-01T00:00:00",
        dataset="finance_agent",
        dataset_hash="h",
        model=AGENT,
        judges=[JUDGE],
        options={},
        question_ids=["q1"],
        status="finished",
    )
    markdown = (
        "## Revenue\n\nApple's revenue was **$416,161 million**.\n\n| Year | Revenue |\n"
        "|---|---|\n| FY2025 | 416,161 |\n\n<script>alert(1)</script> [x](javascript:alert(1))"
    )
    result = QuestionResult("q1", 0, "Trends", "Revenue?", "416,161", "scored", 1.0, markdown)
    html = to_html(build_report(run, [result]))
    assert "<h4>Revenue</h4>" in html  # below the question's own heading
    assert "<strong>$416,161 million</strong>" in html and "<td>416,161</td>" in html
    assert "## Revenue" not in html and "<script>" not in html
    assert 'href="javascript' not in html
    assert "\n#### Revenue\n" in to_markdown(build_report(run, [result]))
