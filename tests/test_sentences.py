"""Sentence ends: abbreviations, initialisms and brackets do not end a sentence."""

from __future__ import annotations

from datetime import date

import pytest
from pydantic import BaseModel

from dexter.agent.prompts import build_system_prompt
from dexter.sentences import first_sentence, split_sentences
from dexter.tools.base import Tool, ToolContext


@pytest.mark.parametrize(
    ("text", "first"),
    [
        (
            "Screen companies on reported values, e.g. 'revenue above $50B': ranks filers. More.",
            "Screen companies on reported values, e.g. 'revenue above $50B': ranks filers.",
        ),
        (
            "Load a skill (e.g. a DCF valuation). Then follow it.",
            "Load a skill (e.g. a DCF valuation).",
        ),
        ("Net sales, i.e. revenue, as filed. Second.", "Net sales, i.e. revenue, as filed."),
        ("Figures in U.S. GAAP only. Second.", "Figures in U.S. GAAP only."),
        ("Apple Inc. reports in September. Second.", "Apple Inc. reports in September."),
        ("Filed by Apple Inc. Revenue follows.", "Filed by Apple Inc. Revenue follows."),
        ("Ask J. Smith first. Then me.", "Ask J. Smith first."),
        ("Is it GAAP? Yes.", "Is it GAAP?"),
        ("Growth was 3.5% in FY2025. Second.", "Growth was 3.5% in FY2025."),
        ("One sentence without a stop", "One sentence without a stop"),
        ("", ""),
    ],
)
def test_first_sentence(text: str, first: str) -> None:
    assert first_sentence(text) == first


def test_split_keeps_every_sentence_in_order() -> None:
    assert split_sentences('He said "stop." Then it went on, etc. and on. Done!') == [
        'He said "stop."',
        "Then it went on, etc. and on.",
        "Done!",
    ]


def _tool_described_as(name: str, description: str) -> Tool[BaseModel]:
    class Described(Tool[BaseModel]):
        Args = BaseModel

        async def run(self, args: BaseModel, ctx: ToolContext) -> str:
            return ""

    Described.name, Described.description = name, description
    return Described()


def test_tool_summaries_in_the_system_prompt_are_whole_sentences() -> None:
    """A summary used to be cut at the first ". ", so the prompt read "…reported values, e.g."."""
    from dexter.tools.finance.routed import StockScreener
    from dexter.tools.skill import SkillTool

    screener = _tool_described_as("stock_screener", StockScreener.description)
    skill = _tool_described_as("skill", SkillTool.description)
    assert screener.summary.startswith("Screen companies on reported values, e.g. 'companies")
    assert skill.summary.endswith("(e.g. a DCF valuation or an investment memo).")
    prompt = build_system_prompt([screener, skill], today=date(2025, 1, 2))
    assert f"- `stock_screener`: {screener.summary}" in prompt
    for line in prompt.splitlines():
        if line.startswith("- `"):
            assert not line.endswith(("e.g.", "(e.g.", "i.e.")), line
