"""`dexter eval` runs a researcher can publish: v2 questions with scripted agent and judge models
built through the runtime, every setting that makes a run repeatable stored and shown, the same
seed and cache giving the same verdicts, epochs and several models in one command, rescoring
without the agent, paired comparison, --fail-under, crashed runs, unknown prices."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from dexter import __version__
from dexter.cli import eval_run
from dexter.cli.main import main
from dexter.evals.judge import SYSTEM_SHA256
from dexter.evals.results import Cost, QuestionResult
from dexter.evals.storage import EvalStore
from dexter.models.scripted import Reply, ScriptedModel
from dexter.models.types import ModelRequest, ToolMessage, Usage, UserMessage
from dexter.store import open_store
from tests.support.eval_sources import SplitSource, serving_splits

AGENT, AGENT_B = "openai:agent-model", "openai:agent-b"
JUDGE, JUDGE2 = "openai:judge-model", "openai:judge-two"  # judge-two has no known price
V2_Q1 = "For NASDAQ:CRWD, in what ways does management believe Artificial Intelligence"
V2_Q2 = "For NASDAQ: MAR and NYSE: WH, using FY2025 data"


@pytest.fixture(scope="module")
def source() -> Iterator[SplitSource]:
    with serving_splits() as served:
        yield served


def _between(text: str, start: str, end: str) -> str:
    return text.split(start, 1)[1].split(end, 1)[0]


@dataclass
class Models:
    """Scripted agent and judges. The agent names the question and its seed in its answer;
    a judge meets every criterion except those listed for it (by question prefix), and, when
    `seed_sensitive`, fails c1 of answers written under seed 1."""

    unmet: dict[str, dict[str, set[str]]] = field(default_factory=dict)
    seed_sensitive: bool = False
    use_calculate: bool = False
    clients: dict[str, ScriptedModel] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for spec in (AGENT, AGENT_B):
            self.clients[spec] = ScriptedModel(
                [self.agent_reply] * 400, name=spec.split(":")[1], provider="openai"
            )
        for spec in (JUDGE, JUDGE2):
            self.clients[spec] = ScriptedModel(
                [self.judge_reply(spec)] * 400, name=spec.split(":")[1], provider="openai"
            )

    def calls(self, spec: str) -> int:
        return self.clients[spec].calls_made

    def agent_reply(self, request: ModelRequest) -> Reply:
        if not request.tools:  # a fast phase (constraints): nothing to add
            return Reply(text="[]")
        question = next(m.content for m in request.messages if isinstance(m, UserMessage))
        if self.use_calculate and not any(isinstance(m, ToolMessage) for m in request.messages):
            args = {"operation": "margin", "part": 112010, "whole": 416161}
            return Reply(tool_calls=[("calculate", args)])
        return Reply(
            text=f"Answer under seed {request.seed}: {question[:50]}",
            usage=Usage(input_tokens=1000, output_tokens=100),
        )

    def judge_reply(self, spec: str) -> Any:
        def reply(request: ModelRequest) -> Reply:
            prompt = request.messages[1].content
            question = _between(prompt, "## Question\n", "\n\n## Reference answer")
            answer = _between(prompt, "<answer>\n", "\n</answer>")
            ids = re.findall(r"^- (c\d+):", prompt, re.MULTILINE)
            unmet = set()
            for prefix, missed in self.unmet.get(spec, {}).items():
                if question.startswith(prefix):
                    unmet |= missed
            if self.seed_sensitive and "seed 1:" in answer:
                unmet.add("c1")
            verdicts = [
                {"id": c, "met": c not in unmet, "rationale": f"{spec} read {c}"} for c in ids
            ]
            body = {"correctness": verdicts, "contradiction": [], "comment": "graded"}
            return Reply(text=json.dumps(body), usage=Usage(input_tokens=500, output_tokens=50))

        return reply


@pytest.fixture
def models(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: SplitSource
) -> Iterator[Models]:
    home = tmp_path / "home"
    home.mkdir()
    prices = {AGENT: {"input": 1.0, "output": 2.0}, JUDGE: {"input": 10.0, "output": 20.0}}
    (home / "settings.json").write_text(json.dumps({"prices": prices}))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DEXTER_HOME", str(home))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-123456")
    monkeypatch.setenv("DEXTER_ROUTER_MODEL", AGENT)  # the fast phases use the scripted agent
    monkeypatch.setenv("DEXTER_EVAL_DATA_URL", source.url)
    scripted = Models()
    real = eval_run.open_runtime

    def open_scripted(settings: Any, **options: Any) -> Any:
        runtime = real(settings, **options)
        for spec, client in scripted.clients.items():
            runtime._clients[runtime.resolve(spec).spec] = client
        return runtime

    monkeypatch.setattr(eval_run, "open_runtime", open_scripted)
    yield scripted


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def show_json(run_id: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    code, out, err = run(["eval", "show", run_id, "--json"], capsys)
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


def run_id_of(out: str) -> str:
    found = re.findall(r"^Run (\S+):", out, re.MULTILINE)
    assert found, out
    return found[-1]


V2 = ["eval", "finance-agent", "--dataset", "v2", "--judge-model", JUDGE]


def test_v2_limit_3_stores_what_it_takes_to_make_the_run_again(
    models: Models, capsys: pytest.CaptureFixture[str]
) -> None:
    # q1 misses c1 (weight 1 of 11); q2 misses c7, its must-pass item; q3 meets everything.
    models.unmet[JUDGE] = {V2_Q1: {"c1"}, V2_Q2: {"c7"}}
    code, out, err = run([*V2, "--limit", "3", "--model", AGENT], capsys)
    assert code == 0, err
    assert ", as of 2026-03-01" in out  # v2's date anchor, without being asked
    mean = (10 / 11 + 0 + 1) / 3
    assert f"Mean, all 3 questions (a failed one scores 0): {mean * 100:5.1f}%" in out
    assert "must" in out  # the live line of the question a must-pass item failed
    run_id = run_id_of(out)

    # The agent and judges sampled as recorded: temperature 0, seed 0, on every call; the agent
    # was told the date the benchmark's own v2 harness tells its agents.
    agent = models.clients[AGENT].requests
    judge = models.clients[JUDGE].requests
    assert agent and all((r.temperature, r.seed) == (0.0, 0) for r in agent + judge)
    assert "Current date: Sunday, March 1, 2026." in agent[0].messages[0].content

    data = show_json(run_id, capsys)
    run_info, again, results = data["run"], data["reproduce"], data["results"]
    assert run_info["status"] == "finished" and run_info["dataset"] == "v2"
    assert again["temperature"] == 0.0 and again["seed"] == 0
    assert again["judge_temperature"] == 0.0 and again["judges"] == [JUDGE]
    assert again["dexter_version"] == __version__
    assert again["dataset_hash"] == "a92448d51451"
    assert again["dataset_sha256"].startswith("27b48c08a609")
    assert again["profile"] == "research" and again["as_of"] == "2026-03-01"
    assert again["judge_system_sha256"] == SYSTEM_SHA256
    (prompt_hash,) = again["system_prompt_sha256"]
    assert re.fullmatch(r"[0-9a-f]{64}", prompt_hash)
    assert again["command"] == (
        "dexter eval finance-agent --dataset v2 --model openai:agent-model --judge-model "
        "openai:judge-model --jury majority --temperature 0 --judge-temperature 0 --seed 0 "
        "--as-of 2026-03-01 --limit 3 --max-iterations 25 --timeout 900"
    )
    assert [r["score"] for r in results] == [pytest.approx(10 / 11), 0.0, 1.0]
    assert [r["must_pass_failed"] for r in results] == [False, True, False]
    first = results[0]
    # Each judge exchange: the prompt as sent and the raw reply.
    (call,) = first["judge_calls"]
    assert call["judge"] == JUDGE and V2_Q1 in call["prompt"]
    assert call["replies"] == [json.loads(json.dumps(call["replies"]))[0]]
    assert '"id": "c1", "met": false' in call["replies"][0]
    # Per criterion: severity, must-pass, and the judge's own words and raw item.
    c1, c8 = first["verdicts"][0], first["verdicts"][7]
    assert (c1["passed"], c1["severity"], c1["must_pass"]) == (False, 1.0, False)
    assert (c8["severity"], c8["must_pass"]) == (2.0, True)
    assert c1["judges"] == [
        {
            "judge": JUDGE,
            "passed": False,
            "rationale": f"{JUDGE} read c1",
            "raw": json.dumps({"id": "c1", "met": False, "rationale": f"{JUDGE} read c1"}),
        }
    ]
    assert first["system_prompt_sha256"] == prompt_hash

    # The Markdown report says how the run was made and marks the must-pass failure.
    code, markdown, _ = run(["eval", "show", run_id], capsys)
    assert "## Setup" in markdown and "Dexter version: " + __version__ in markdown
    assert "As of: 2026-03-01 (the v2 date anchor)" in markdown
    assert "NOT MET (must pass)" in markdown and "correctness ×2, must pass" in markdown


def test_same_seed_and_cache_give_identical_verdicts_at_no_cost(
    models: Models, capsys: pytest.CaptureFixture[str]
) -> None:
    models.unmet[JUDGE] = {V2_Q1: {"c2", "c8"}}
    argv = [*V2, "--limit", "2", "--model", AGENT]
    code, out, _ = run(argv, capsys)
    first = run_id_of(out)
    calls = (models.calls(AGENT), models.calls(JUDGE))
    code, out, _ = run(argv, capsys)
    assert code == 0
    second = run_id_of(out)
    # Every request was made before, word for word: nothing reached a model, nothing was spent.
    assert (models.calls(AGENT), models.calls(JUDGE)) == calls
    assert "Estimated cost: $0.0000 (agent $0.0000, judge $0.0000)" in out

    def verdicts(run_id: str) -> list[Any]:
        return [(r["verdicts"], r["score"]) for r in show_json(run_id, capsys)["results"]]

    assert verdicts(second) == verdicts(first)
    assert verdicts(first)[0][1] == 0.0  # c8 is must-pass
    assert show_json(second, capsys)["results"][0]["cache"] == {"hits": 2, "misses": 0}
    # Another seed is another request: the models are asked again.
    run([*argv, "--seed", "7"], capsys)
    assert models.calls(AGENT) > calls[0]
    assert models.clients[AGENT].requests[-1].seed == 7


def test_epochs_and_several_models_in_one_command(
    models: Models, capsys: pytest.CaptureFixture[str]
) -> None:
    models.seed_sensitive = True  # answers written under seed 1 (the second epoch) miss c1
    argv = [*V2, "--limit", "2", "--epochs", "2", "--model", AGENT, "--model", AGENT_B]
    code, out, err = run(argv, capsys)
    assert code == 0, err
    assert out.count("4 questions, model") == 2 and ", 2 epochs" in out
    # Epoch means: 100% then (10/11 + 7/8) / 2; sample SD of the two.
    second = (10 / 11 + 7 / 8) / 2
    sd = abs(1 - second) / 2**0.5
    line = f"Run to run (2 epochs): 100.0%, {second * 100:.1f}%; standard deviation {sd * 100:.1f}"
    assert out.count(line) == 2
    assert re.search(r"^openai:agent-b - openai:agent-model: \+0\.0 points", out, re.MULTILINE)
    seeds = sorted({r.seed for r in models.clients[AGENT_B].requests if r.tools})
    assert seeds == [0, 1]
    with open_store(Path.cwd() / "home") as db:
        runs = EvalStore(db).runs()
        assert len(runs) == 2 and runs[0].group_id == runs[1].group_id is not None
        assert sorted(r.key for r in EvalStore(db).results(runs[0].id)) == [
            ("q1", 1),
            ("q1", 2),
            ("q2", 1),
            ("q2", 2),
        ]


def test_rescore_with_another_judge_then_compare(
    models: Models, capsys: pytest.CaptureFixture[str]
) -> None:
    models.unmet[JUDGE2] = {V2_Q1: {"c2"}}
    code, out, _ = run([*V2, "--limit", "2", "--model", AGENT], capsys)
    original = run_id_of(out)
    agent_calls = models.calls(AGENT)
    code, out, err = run(["eval", "rescore", original[:15], "--judge", JUDGE2], capsys)
    assert code == 0, err
    rescored = run_id_of(out)
    assert rescored != original and models.calls(AGENT) == agent_calls  # the agent did not run
    # judge-two has no known price: its cost, and so the total, is unknown, never $0.
    assert "Estimated cost: unknown (agent $0.0000, judge unknown)" in out
    data = show_json(rescored, capsys)
    assert data["run"]["options"]["rescored_from"] == original
    assert data["run"]["judges"] == [JUDGE2]
    assert [r["answer_from"] for r in data["results"]] == [original, original]
    assert [r["score"] for r in data["results"]] == [pytest.approx(10 / 11), 1.0]
    # Resuming a rescoring run grades on; it never runs the agent.
    assert run(["eval", "finance-agent", "--resume", rescored], capsys)[0] == 0
    assert models.calls(AGENT) == agent_calls
    before = show_json(original, capsys)["results"]
    assert [r["answer"] for r in data["results"]] == [r["answer"] for r in before]
    assert [r["score"] for r in before] == [1.0, 1.0]  # the original run is untouched

    code, out, _ = run(["eval", "compare", original, rescored, "--json"], capsys)
    c = json.loads(out)
    assert (c["shared"], c["only_a"], c["only_b"]) == (2, 0, 0)
    assert c["difference"] == pytest.approx((1 - 10 / 11) / 2)
    assert (c["a_better"], c["b_better"], c["ties"]) == (1, 0, 1)
    low, high = c["difference_ci"]["low"], c["difference_ci"]["high"]
    assert low == 0.0 and high == pytest.approx(1 - 10 / 11)
    # Resamples with A not ahead: those drawing the tied question twice, about a quarter.
    assert 0.2 < c["share_not_better"] < 0.3
    code, out, _ = run(["eval", "compare", original, rescored], capsys)
    assert "Shared questions: 2 (only in A: 0, only in B: 0)" in out
    assert "A - B = +4.5 points, 95% CI [+0.0, +9.1] (paired bootstrap" in out


def test_fail_under_exits_1_for_ci(models: Models, capsys: pytest.CaptureFixture[str]) -> None:
    models.unmet[JUDGE] = {V2_Q1: {"c1"}}  # 10/11 = 90.9%
    argv = [*V2, "--limit", "1", "--model", AGENT]
    code, _, err = run([*argv, "--fail-under", "95"], capsys)
    assert code == 1 and "scored 90.9%, under --fail-under 95%" in err
    assert run([*argv, "--fail-under", "90%"], capsys)[0] == 0
    with pytest.raises(SystemExit) as usage:
        main([*argv, "--fail-under", "120"])
    assert usage.value.code == 2 and "between 0 and 100" in capsys.readouterr().err


def test_a_run_whose_process_died_is_marked_crashed_and_resumes(
    models: Models, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run([*V2, "--limit", "2", "--model", AGENT], capsys)
    finished = run_id_of(out)
    gone = subprocess.Popen(["true"])
    gone.wait()
    home = Path.cwd() / "home"
    with open_store(home) as db:
        store = EvalStore(db)
        source = store.require(finished)
        dead = store.create_run(
            dataset="v2",
            dataset_hash=source.dataset_hash,
            model=AGENT,
            judges=[JUDGE],
            options=source.options,
            question_ids=["q1", "q2"],
        )
        alive = store.create_run(
            dataset="v2",
            dataset_hash=source.dataset_hash,
            model=AGENT,
            judges=[JUDGE],
            options=source.options,
            question_ids=["q1"],
        )
        with db.transaction() as conn:  # as a killed `dexter eval` leaves its row
            conn.execute("UPDATE eval_runs SET pid = ? WHERE id = ?", (gone.pid, dead.id))
    code, listing, _ = run(["eval", "list"], capsys)
    assert re.search(rf"^{dead.id}\s+crashed", listing, re.MULTILINE)
    assert re.search(rf"^{alive.id}\s+running", listing, re.MULTILINE)  # this process lives
    assert "--resume RUN" in listing
    with open_store(home) as db:
        store = EvalStore(db)
        # Another machine's run is judged by its heartbeat alone.
        with db.transaction() as conn:
            conn.execute("UPDATE eval_runs SET host = 'elsewhere' WHERE id = ?", (alive.id,))
        assert store.mark_crashed() == []
        later = datetime.now(UTC) + timedelta(minutes=6)
        assert store.mark_crashed(now=later) == [alive.id]
    code, out, err = run(["eval", "finance-agent", "--resume", dead.id], capsys)
    assert code == 0, err
    assert show_json(dead.id, capsys)["run"]["status"] == "finished"


def test_unknown_prices_stay_unknown() -> None:
    from dexter.evals.runner import agent_cost
    from dexter.store.ledger import UsageTotals

    known = Cost(100, 10, 0.5)
    assert (known + Cost(50, 5, None)).cost_usd is None
    assert (Cost(50, 5, None) + known).cost_usd is None
    assert (known + Cost()).cost_usd == 0.5  # nothing spent is $0
    assert agent_cost(UsageTotals(1000, 100, calls=2, cost_usd=0.002)).cost_usd == 0.002
    # One call of the session had no price: the session's cost is not the priced part.
    partial = UsageTotals(1000, 100, calls=2, cost_usd=0.002, unpriced_calls=1)
    assert agent_cost(partial).cost_usd is None
    stored = QuestionResult.from_dict(
        {
            "question_id": "q1",
            "position": 0,
            "category": "T",
            "question": "?",
            "reference": "",
            "status": "agent_error",
            "score": None,
            "agent_cost": {"input_tokens": 0, "output_tokens": 0, "cost_usd": None},
            "judge_cost": {"input_tokens": 10, "output_tokens": 1, "cost_usd": None},
            "a_field_from_a_later_version": 1,
        }
    )
    assert stored.agent_cost.cost_usd == 0.0 and stored.judge_cost.cost_usd is None


def test_eval_tables_upgrade_from_schema_6(tmp_path: Path) -> None:
    from dexter.store.migrations import MIGRATIONS, apply_migrations

    home = tmp_path / "home"
    home.mkdir()
    conn = sqlite3.connect(home / "dexter.db", isolation_level=None)
    apply_migrations(conn, home / "dexter.db", MIGRATIONS[:6])
    stamp = "2026-01-05T10:00:00.000000+00:00"
    conn.execute(
        "INSERT INTO eval_runs (id, created_at, updated_at, dataset, dataset_hash, model, "
        "judges_json, options_json, question_ids_json, status) VALUES "
        "('old', ?, ?, 'finance_agent', 'h', 'openai:x', '[\"openai:j\"]', "
        '\'{"jury": "majority", "seed": "dexter-eval"}\', \'["q1", "q2"]\', \'running\')',
        (stamp, stamp),
    )
    old_result = {
        "question_id": "q1",
        "position": 0,
        "category": "Trends",
        "question": "Q?",
        "reference": "A.",
        "status": "scored",
        "score": 0.5,
        "agent_cost": {"input_tokens": 10, "output_tokens": 1, "cost_usd": 0.01},
        "judge_cost": {"input_tokens": 5, "output_tokens": 1, "cost_usd": None},
    }
    conn.execute(
        "INSERT INTO eval_results (run_id, question_id, position, category, status, score, "
        "result_json, finished_at) VALUES ('old', 'q1', 0, 'Trends', 'scored', 0.5, ?, ?)",
        (json.dumps(old_result), stamp),
    )
    conn.close()
    with open_store(home) as db:
        # Upgraded through every migration since (7 made these tables; later ones add others).
        assert db.query("SELECT MAX(number) FROM _migrations")[0][0] == MIGRATIONS[-1].number
        store = EvalStore(db)
        (result,) = store.results("old")
        assert result.key == ("q1", 1) and result.score == 0.5
        # Its price was unknown then too: now it says so instead of adding $0.
        assert result.total_cost.cost_usd is None
        # Left `running` by a version that kept no heartbeat, long ago: crashed.
        run_info = store.require("old")
        assert run_info.status == "crashed" and run_info.epochs == 1 and run_info.pid is None
        assert db.query("SELECT COUNT(*) FROM model_responses")[0][0] == 0
        second = QuestionResult("q1", 0, "Trends", "Q?", "A.", "scored", 1.0, epoch=2)
        store.save_result("old", second)
        assert store.finished_keys("old") == {("q1", 1), ("q1", 2)}


def test_a_questions_transcript_shows_its_tool_calls_answer_and_judges(
    models: Models, capsys: pytest.CaptureFixture[str]
) -> None:
    models.use_calculate = True
    models.unmet[JUDGE] = {V2_Q1: {"c3"}}
    code, out, _ = run([*V2, "--limit", "1", "--model", AGENT], capsys)
    run_id = run_id_of(out)
    code, page, _ = run(["eval", "show", run_id, "--question", "q1"], capsys)
    assert code == 0
    assert "**Tool calls (1).**" in page
    call = re.search(
        r"^1\. `calculate\(operation='margin', part=112010, whole=416161\)` → (.+)$",
        page,
        re.MULTILINE,
    )
    assert call is not None and "26.9" in call.group(1)  # what calculate returned: the margin
    assert "Answer under seed 0: For NASDAQ:CRWD" in page
    assert "| not met | openai:judge-model read c3 |" in page
    (result,) = show_json(run_id, capsys)["results"]
    assert result["transcript"][0]["tool"] == "calculate"
    assert result["iterations"] == 2


def test_transcripts_carry_the_verifiers_figures_when_the_answer_has_them() -> None:
    from types import SimpleNamespace

    from dexter.evals.report import question_markdown
    from dexter.evals.runner import figures_of
    from dexter.figures.types import Figure, Verification

    figures = (
        Figure("$391.0 billion", 391e9, "USD", "verified", source="get_financials: revenue"),
        Figure("6.4%", 6.4, "%", "derived", formula="(416161 - 391035) / 391035"),
        Figure("$9.9 billion", 9.9e9, "USD", "unsupported"),
    )
    done = SimpleNamespace(figures=figures, verification=Verification(figures, repaired=1))
    found, counts = figures_of(done)  # type: ignore[arg-type]
    assert [f["status"] for f in found] == ["verified", "derived", "unsupported"]
    assert found[0]["source"] == "get_financials: revenue"
    assert counts == {"checked": 3, "verified": 1, "derived": 1, "unsupported": 1, "repaired": 1}
    # Only the verification (figures inside it), or a done event from before the verifier.
    assert figures_of(SimpleNamespace(verification=Verification(figures)))[0] == found  # type: ignore[arg-type]
    assert figures_of(SimpleNamespace(answer="x")) == ([], None)  # type: ignore[arg-type]
    result = QuestionResult(
        "q1",
        0,
        "Trends",
        "Q?",
        "",
        "scored",
        1.0,
        "Revenue $391.0 billion.",
        figures=found,
        verification=counts,
    )
    page = "\n".join(question_markdown(result))
    assert "**Figures.** 3 checked: 1 verified, 1 derived, 1 unsupported ($9.9 billion)" in page
