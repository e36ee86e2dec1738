"""Standing constraints: caught when stated, questions left alone, kept short and persistent."""

from __future__ import annotations

import pytest

from dexter.agent.constraints import (
    MAX_CONSTRAINTS,
    Constraints,
    extract_constraints,
    extract_rule_constraints,
)
from dexter.models.errors import ErrorKind, ModelError
from dexter.models.scripted import ScriptedModel, text
from dexter.models.types import Usage


@pytest.mark.parametrize(
    ("said", "expected"),
    [
        ("use GAAP figures only", "Use GAAP figures only"),
        ("Report in EUR.", "Report in EUR"),
        ("ignore fiscal 2020", "Ignore fiscal 2020"),
        ("always show sources", "Always show sources"),
        ("no crypto", "No crypto"),
        ("From now on, report everything in EUR.", "Report everything in EUR"),
        ("report figures in GBP from now on", "Report figures in GBP"),
        ("Only use 10-K data, please.", "Only use 10-K data"),
        ("Never include adjusted EBITDA", "Never include adjusted EBITDA"),
        ("Please don't use analyst estimates!", "Don't use analyst estimates"),
        ("Exclude financials from the screen", "Exclude financials from the screen"),
    ],
)
def test_rules_catch_common_standing_instructions(said: str, expected: str) -> None:
    assert extract_rule_constraints(said) == [expected]


@pytest.mark.parametrize(
    "said",
    [
        "What is Apple's revenue in EUR?",
        "Show me Apple's revenue in EUR",
        "Compare AAPL and MSFT operating margins for fiscal 2024",
        "Never mind.",
        "No thanks",
        "Ignore that",
        "Is it true that Apple only reports in USD?",
        "How does NVDA always beat estimates?",
    ],
)
def test_questions_and_one_off_requests_are_not_constraints(said: str) -> None:
    assert extract_rule_constraints(said) == []


def test_constraint_inside_a_longer_message_is_found() -> None:
    said = "Compare AAPL and MSFT margins. Always cite the filing. Also, no crypto."
    assert extract_rule_constraints(said) == ["Always cite the filing", "No crypto"]


async def test_model_is_not_asked_when_rules_cover_the_message_or_nothing_looks_like_one() -> None:
    model = ScriptedModel([])
    assert await extract_constraints("Always show sources.", model) == ["Always show sources"]
    assert await extract_constraints("What was Tesla's FY2023 capex?", model) == []
    assert model.requests == []


async def test_model_catches_an_instruction_the_rules_missed() -> None:
    usages: list[Usage] = []
    model = ScriptedModel(
        [text('```json\n["Prefer IFRS over US GAAP figures"]\n```', usage=Usage(30, 8))]
    )
    found = await extract_constraints(
        "I prefer IFRS numbers to US GAAP ones when both exist.", model, on_usage=usages.append
    )
    assert found == ["Prefer IFRS over US GAAP figures"]
    assert usages == [Usage(30, 8)]
    assert "I prefer IFRS" in model.requests[0].messages[-1].content


async def test_malformed_model_output_is_tolerated() -> None:
    said = "I prefer IFRS numbers to US GAAP ones."
    garbled = ScriptedModel([text("Sure! [oops, not json"), text("still [not json")])
    assert await extract_constraints(said, garbled) == []
    wrapped = ScriptedModel([text('{"constraints": ["Prefer IFRS figures"]}')])
    assert await extract_constraints(said, wrapped) == ["Prefer IFRS figures"]
    failing = ScriptedModel([ModelError(ErrorKind.AUTH, "no key")])
    assert await extract_constraints("Always use IFRS. I prefer Q4 data.", failing) == [
        "Always use IFRS"
    ]


PROSE = (
    "Sure! Here are the standing instructions I found:\n- Always be helpful\n"
    "- Provide accurate data\n\nLet me know if you need anything else."
)
SAID = "Make sure to use audited 10-K figures. How much did Apple's revenue grow in FY2025?"


async def test_prose_instead_of_a_json_list_is_asked_for_again() -> None:
    """A model that answers in prose is asked once more; its bullets never become rules."""
    usages: list[Usage] = []
    model = ScriptedModel(
        [
            text(PROSE, usage=Usage(40, 20)),
            text('["Use audited 10-K figures"]', usage=Usage(60, 8)),
        ]
    )
    found = await extract_constraints(SAID, model, on_usage=usages.append)
    assert found == ["Use audited 10-K figures"]
    assert usages == [Usage(40, 20), Usage(60, 8)]
    retry = model.requests[1].messages
    assert retry[-2].content == PROSE and "JSON array" in retry[-1].content


async def test_prose_twice_keeps_nothing_the_model_said() -> None:
    model = ScriptedModel([text(PROSE), text("- Always be helpful\n- Provide accurate data")])
    assert await extract_constraints(SAID, model) == []
    assert len(model.requests) == 2
    # What the rules caught still stands.
    model = ScriptedModel([text(PROSE), text(PROSE)])
    found = await extract_constraints("Never include adjusted EBITDA. Make sure it's GAAP.", model)
    assert found == ["Never include adjusted EBITDA"]


@pytest.mark.parametrize(
    "reply",
    [
        '["Use GAAP figures", 3]',  # not all strings
        'Here you go: ["Always be helpful"]',  # a list inside prose
        "1. Always be helpful",
        '"Use GAAP figures"',
        '{"rules": ["Use GAAP figures"]}',
    ],
)
async def test_only_a_json_list_of_strings_is_accepted(reply: str) -> None:
    model = ScriptedModel([text(reply), text("[]")])
    assert await extract_constraints(SAID, model) == []
    assert len(model.requests) == 2


def test_an_abbreviation_does_not_end_a_constraint() -> None:
    said = "Only use U.S. GAAP figures. What was Apple's revenue, i.e. net sales?"
    assert extract_rule_constraints(said) == ["Only use U.S. GAAP figures"]
    assert extract_rule_constraints("Never use e.g. adjusted EBITDA; report in EUR") == [
        "Never use e.g. adjusted EBITDA",
        "Report in EUR",
    ]


def test_constraints_dedupe_case_insensitively_and_keep_order() -> None:
    constraints = Constraints(["Use GAAP figures only", "Always show sources"])
    assert not constraints.add("use gaap figures only.")
    assert constraints.add("No crypto")
    assert list(constraints) == ["Use GAAP figures only", "Always show sources", "No crypto"]


def test_new_reporting_currency_replaces_the_old_one() -> None:
    constraints = Constraints(["Report in EUR", "No crypto"])
    constraints.add("Report everything in GBP")
    assert list(constraints) == ["No crypto", "Report everything in GBP"]


def test_cap_drops_the_oldest() -> None:
    constraints = Constraints(f"Ignore fiscal {year}" for year in range(1990, 2020))
    assert len(constraints) == MAX_CONSTRAINTS
    assert constraints.items[0] == "Ignore fiscal 2000"
    assert constraints.items[-1] == "Ignore fiscal 2019"


def test_remove_and_prompt_section() -> None:
    constraints = Constraints(["Use GAAP figures only", "Report in EUR", "No crypto"])
    assert constraints.remove("eur") == ["Report in EUR"]
    prompt = constraints.to_prompt()
    assert prompt is not None
    assert "- Use GAAP figures only" in prompt and "- No crypto" in prompt
    assert "EUR" not in prompt
    constraints.clear()
    assert constraints.to_prompt() is None


def test_json_round_trip_and_corruption_is_an_error() -> None:
    constraints = Constraints(["Report in EUR", "Ignore fiscal 2020 — pandemic year"])
    restored = Constraints.from_json(constraints.to_json())
    assert list(restored) == list(constraints)
    with pytest.raises(ValueError):
        Constraints.from_json('{"not": "a list"}')
    with pytest.raises(ValueError):
        Constraints.from_json("[1, 2")
