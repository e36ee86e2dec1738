"""Skills: SKILL.md discovery and precedence, the bundled skills, and the `skill` tool."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from dexter.agent.events import Done, Event
from dexter.agent.loop import Agent, AgentConfig
from dexter.models.scripted import ScriptedModel, calls, text
from dexter.models.types import ToolMessage
from dexter.skills import BUNDLED_DIR, discover_skills, load_skills
from dexter.skills.discovery import Skill, SkillError, parse_skill
from dexter.tools.base import ToolContext, ToolFailure
from dexter.tools.registry import ToolRegistry
from dexter.tools.skill import SkillArgs, SkillTool, rewrite_links, skills_prompt


def write_skill(root: Path, folder: str, frontmatter: str, body: str = "Do the thing.") -> Path:
    path = root / folder / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\n{frontmatter}\n---\n{body}\n", encoding="utf-8")
    return path


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    home = tmp_path / "project" / ".dexter"
    user = tmp_path / "user-home" / ".dexter" / "skills"
    home.mkdir(parents=True)
    user.mkdir(parents=True)
    return home, user


def by_name(skills: list[Skill]) -> dict[str, Skill]:
    return {s.name: s for s in skills}


# --- discovery -------------------------------------------------------------------------------


def test_bundled_skills_are_found_with_no_user_or_project_skills(dirs: tuple[Path, Path]) -> None:
    home, user = dirs
    skills = by_name(discover_skills(home, user_dir=user))
    assert {"dcf", "write-memo"} <= set(skills)
    assert skills["dcf"].source == "bundled"
    assert skills["dcf"].path == BUNDLED_DIR / "dcf" / "SKILL.md"


def test_precedence_bundled_then_user_then_project_by_name(dirs: tuple[Path, Path]) -> None:
    home, user = dirs
    # The user's copy lives in a differently named folder: precedence goes by frontmatter name.
    write_skill(user, "my-dcf", "name: dcf\ndescription: user dcf", "USER DCF")
    write_skill(user, "peers", "name: peers\ndescription: user peers", "USER PEERS")
    write_skill(home / "skills", "peers", "name: peers\ndescription: project peers", "PROJ")
    write_skill(home / "skills", "only-here", "name: only-here\ndescription: project only")

    catalog = load_skills(home, user_dir=user)
    skills = by_name(catalog.skills)
    assert skills["dcf"].source == "user" and skills["dcf"].body == "USER DCF"
    assert skills["peers"].source == "project" and skills["peers"].body == "PROJ"
    assert skills["only-here"].source == "project"
    assert skills["write-memo"].source == "bundled"
    assert [s.name for s in catalog.skills] == sorted(skills)
    replaced = {(old.source, new.source, new.name) for old, new in catalog.overridden}
    assert ("bundled", "user", "dcf") in replaced
    assert ("user", "project", "peers") in replaced


def test_project_overrides_bundled_directly(dirs: tuple[Path, Path]) -> None:
    home, user = dirs
    write_skill(home / "skills", "dcf", "name: dcf\ndescription: house style DCF", "OURS")
    skill = by_name(discover_skills(home, user_dir=user))["dcf"]
    assert (skill.source, skill.body, skill.description) == ("project", "OURS", "house style DCF")


def test_malformed_skills_are_skipped_with_warnings(
    dirs: tuple[Path, Path], caplog: pytest.LogCaptureFixture
) -> None:
    home, user = dirs
    root = home / "skills"
    write_skill(root, "bad-yaml", "name: [unclosed\ndescription: x")
    write_skill(root, "not-mapping", "- just\n- a list")
    write_skill(root, "no-name", "description: nameless")
    write_skill(root, "no-desc", "name: no-desc")
    write_skill(root, "bad-tools", "name: bad-tools\ndescription: d\ntools: calculate")
    write_skill(root, "bad-name", "name: has spaces\ndescription: d")
    write_skill(root, "empty-body", "name: empty-body\ndescription: d", body="")
    (root / "no-fence").mkdir()
    (root / "no-fence" / "SKILL.md").write_text("name: x\ndescription: y\n", encoding="utf-8")
    (root / "unterminated").mkdir()
    (root / "unterminated" / "SKILL.md").write_text("---\nname: x\n", encoding="utf-8")
    (root / "binary").mkdir()
    (root / "binary" / "SKILL.md").write_bytes(b"---\nname: \xff\xfe\n---\nbody")
    (root / "not-a-skill-dir").mkdir()  # no SKILL.md: silently ignored
    (root / "stray.md").write_text("not in a folder", encoding="utf-8")
    write_skill(root, "good", "name: good\ndescription: fine\ntools: [calculate]")

    with caplog.at_level(logging.WARNING, logger="dexter.skills.discovery"):
        catalog = load_skills(home, user_dir=user)

    names = {s.name for s in catalog.skills}
    assert "good" in names and "dcf" in names
    assert by_name(catalog.skills)["good"].tools == ("calculate",)
    warned = {w.path.parent.name for w in catalog.warnings}
    assert warned == {
        "bad-yaml",
        "not-mapping",
        "no-name",
        "no-desc",
        "bad-tools",
        "bad-name",
        "empty-body",
        "no-fence",
        "unterminated",
        "binary",
    }
    assert all(str(w).startswith(str(w.path)) and "skipped" in w.message for w in catalog.warnings)
    assert "invalid YAML" in next(w.message for w in catalog.warnings if "bad-yaml" in str(w))
    assert len([r for r in caplog.records if "skipped" in r.getMessage()]) == 10


def test_missing_directories_are_fine(tmp_path: Path) -> None:
    skills = discover_skills(tmp_path / "nowhere", user_dir=tmp_path / "nothing")
    assert {s.source for s in skills} == {"bundled"}


def test_same_folder_as_user_and_project_is_read_once(tmp_path: Path) -> None:
    home = tmp_path / ".dexter"
    write_skill(home / "skills", "x", "name: x\ndescription: d")
    catalog = load_skills(home, user_dir=home / "skills")
    assert by_name(catalog.skills)["x"].source == "user"
    assert not catalog.warnings and not catalog.overridden


def test_parse_skill_errors_are_readable() -> None:
    with pytest.raises(SkillError, match="frontmatter"):
        parse_skill("no frontmatter", Path("SKILL.md"), "user")
    skill = parse_skill(
        "---\nname: s\ndescription: >-\n  folded\n  text\nextra: ignored\n---\n\n body \n",
        Path("/x/s/SKILL.md"),
        "user",
    )
    assert (skill.description, skill.body, skill.tools) == ("folded text", "body", ())


# --- bundled skills --------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["dcf", "write-memo"])
def test_bundled_skill_parses_and_uses_calculate(name: str) -> None:
    catalog = load_skills(Path("/nonexistent"), user_dir=Path("/nonexistent"))
    assert not [w for w in catalog.warnings if w.path.is_relative_to(BUNDLED_DIR)]
    skill = catalog.get(name)
    assert skill is not None
    assert skill.source == "bundled"
    assert "calculate" in skill.body and "calculate" in skill.tools
    assert len(skill.description) > 40


def test_dcf_covers_the_workflow() -> None:
    skill = by_name(discover_skills(Path("/nonexistent"), user_dir=Path("/nonexistent")))["dcf"]
    body = skill.body
    for needle in (
        "get_financials",
        "WACC",
        "Utilities",
        "Information Technology",
        "rough defaults",
        "terminal",
        "Gordon",
        "sensitivity",
        "per share",
        "[S",
    ):
        assert needle.lower() in body.lower(), needle


def test_write_memo_covers_sections_and_exports_through_the_renderer() -> None:
    skill = by_name(discover_skills(Path("/nonexistent"), user_dir=Path("/nonexistent")))[
        "write-memo"
    ]
    body = skill.body.lower()
    for needle in (
        "thesis",
        "business",
        "financials",
        "valuation",
        "risks",
        "would change our view",
        "write_file",
        "/export html",
        "dexter report",
        "[s",
    ):
        assert needle in body, needle
    assert "<h1>" not in body  # no hand-written HTML: the report renderer makes the file


# --- the skill tool --------------------------------------------------------------------------


def sample_skills(tmp_path: Path) -> list[Skill]:
    path = write_skill(
        tmp_path,
        "peers",
        "name: peers\ndescription: Compare a company with its peers.",
        "Step 1. See [the table](ref/table.md#top), [site](https://example.com) and [x](#a).",
    )
    return [
        Skill(
            "peers",
            "Compare a company with its peers.",
            path,
            "project",
            path.read_text().split("---\n")[-1].strip(),
        )
    ]


async def test_skill_tool_returns_body_with_arguments(tmp_path: Path) -> None:
    tool = SkillTool(sample_skills(tmp_path))
    result = await tool.run(SkillArgs(name="peers", arguments="MSFT vs GOOGL"), ToolContext())
    assert "# Skill: peers" in result.content
    assert "MSFT vs GOOGL" in result.content
    assert str((tmp_path / "peers" / "ref" / "table.md").resolve()) + "#top" in result.content
    assert "(https://example.com)" in result.content and "(#a)" in result.content
    assert result.data["already_loaded"] is False


async def test_unknown_skill_lists_available(tmp_path: Path) -> None:
    tool = SkillTool(sample_skills(tmp_path))
    with pytest.raises(ToolFailure, match=r"no skill named 'nope'.*Available skills: peers"):
        await tool.run(SkillArgs(name="nope"), ToolContext())


async def test_skill_dedupe_within_a_run_not_across_runs(tmp_path: Path) -> None:
    tool = SkillTool(sample_skills(tmp_path))
    run_one = ToolContext(call_id="a")
    same_run = ToolContext(call_id="b", sources=run_one.sources)
    first = await tool.run(SkillArgs(name="peers"), run_one)
    second = await tool.run(SkillArgs(name="PEERS"), same_run)
    assert "Step 1." in first.content
    assert "already loaded" in second.content and "Step 1." not in second.content
    assert second.data["already_loaded"] is True
    other_run = await tool.run(SkillArgs(name="peers"), ToolContext(call_id="c"))
    assert "Step 1." in other_run.content


async def test_skill_dedupe_with_custom_run_key(tmp_path: Path) -> None:
    session = {"run": "r1"}
    tool = SkillTool(sample_skills(tmp_path), run_key=lambda ctx: session["run"])
    assert "Step 1." in (await tool.run(SkillArgs(name="peers"), ToolContext())).content
    assert "already" in (await tool.run(SkillArgs(name="peers"), ToolContext())).content
    session["run"] = "r2"
    assert "Step 1." in (await tool.run(SkillArgs(name="peers"), ToolContext())).content


def test_rewrite_links_leaves_absolute_and_external(tmp_path: Path) -> None:
    skill = Skill(
        "s",
        "d",
        tmp_path / "s" / "SKILL.md",
        "user",
        "[a](/abs/x.md) [b](mailto:a@b.c) [c](notes.html) [d](~/x)",
    )
    out = rewrite_links(skill)
    assert "(/abs/x.md)" in out and "(mailto:a@b.c)" in out and "(~/x)" in out
    assert f"({(tmp_path / 's' / 'notes.html').resolve()})" in out


def test_skills_prompt_lists_names_and_when_to_invoke(tmp_path: Path) -> None:
    assert skills_prompt([]) == ""
    prompt = skills_prompt(discover_skills(tmp_path, user_dir=tmp_path / "none"))
    assert prompt.startswith("## Skills")
    assert "- `dcf`:" in prompt and "- `write-memo`:" in prompt
    assert "`skill`" in prompt and "once" in prompt


async def test_skill_dedupe_through_the_agent_loop(tmp_path: Path) -> None:
    """Two runs of one agent: within a run the second call is a note; the next run reloads."""
    tool = SkillTool(sample_skills(tmp_path))
    model = ScriptedModel(
        [
            calls(("skill", {"name": "peers"})),
            calls(("skill", {"name": "peers", "arguments": "again"})),
            text("done one"),
            calls(("skill", {"name": "peers"})),
            text("done two"),
        ]
    )
    agent = Agent(model, ToolRegistry([tool]), config=AgentConfig(home=tmp_path / ".dexter"))

    async def run(query: str) -> Done:
        events: list[Event] = [e async for e in agent.run(query)]
        assert isinstance(events[-1], Done)
        return events[-1]

    assert (await run("value peers")).answer == "done one"
    assert (await run("and again")).answer == "done two"

    def tool_results(request_index: int) -> list[str]:
        messages = model.requests[request_index].messages
        return [m.content for m in messages if isinstance(m, ToolMessage)]

    first_run = tool_results(2)
    assert "Step 1." in first_run[0] and "already loaded" in first_run[1]
    second_run = tool_results(4)
    assert "Step 1." in second_run[-1]
