"""A scripted 40-call research session with large results, shared by tests and bench/.

Each `fetch_filing` call returns 30,000 characters that lead with one unique figure line
("FIGURE-7: revenue 1,007.25 USD bn [S7]"). The main model asks for four documents a round for
ten rounds, then answers; it reports input tokens as the size of what it was sent, as a real
provider does. The fast model is a faithful summariser: its summary keeps every figure line it
was shown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel

from dexter.agent.context.budget import estimate_request
from dexter.agent.loop import Agent, AgentConfig
from dexter.models.scripted import Reply, ScriptedModel
from dexter.models.types import ModelRequest, Usage
from dexter.tools.base import Tool, ToolContext
from dexter.tools.read_tool_result import ReadToolResult
from dexter.tools.registry import ToolRegistry

RESULT_CHARS = 30_000
CALLS_PER_ROUND = 4
ROUNDS = 10
QUESTION = "Compile revenue for all forty filings and rank them."
FIGURE = re.compile(r"FIGURE-\d+: revenue [\d,.]+ USD bn \[S\d+\]")


def figure_line(n: int) -> str:
    return f"FIGURE-{n}: revenue {1000 + n}.25 USD bn [S{n}]"


def document(n: int) -> str:
    filler = (
        f"Paragraph {{i}} of filing {n}: management discussed demand, pricing, supply and the "
        "outlook for each segment in considerable detail, with commentary on competition.\n"
    )
    body = [figure_line(n)]
    i = 0
    while sum(len(line) for line in body) < RESULT_CHARS:
        body.append(filler.format(i=i))
        i += 1
    return "\n".join(body)[:RESULT_CHARS]


class FetchArgs(BaseModel):
    n: int


class FetchFiling(Tool[FetchArgs]):
    name: ClassVar[str] = "fetch_filing"
    description: ClassVar[str] = "Fetch one filing's text."
    Args = FetchArgs
    concurrency_safe: ClassVar[bool] = True

    async def run(self, args: FetchArgs, ctx: ToolContext) -> str:
        return document(args.n)


@dataclass
class Observed:
    request_tokens: list[int] = field(default_factory=list)
    final_request: ModelRequest | None = None
    summary_requests: list[ModelRequest] = field(default_factory=list)

    def text_of(self, request: ModelRequest) -> str:
        return "\n".join(str(getattr(m, "content", "")) for m in request.messages)


def main_model(observed: Observed, *, rounds: int = ROUNDS) -> ScriptedModel:
    def step(round_no: int) -> Any:
        def reply(request: ModelRequest) -> Reply:
            tokens = estimate_request(request)
            observed.request_tokens.append(tokens)
            usage = Usage(input_tokens=tokens, output_tokens=60)
            if round_no == rounds:
                observed.final_request = request
                return Reply(text="Ranked list of forty revenues.", usage=usage)
            start = round_no * CALLS_PER_ROUND
            calls = [("fetch_filing", {"n": start + k}) for k in range(CALLS_PER_ROUND)]
            return Reply(tool_calls=calls, usage=usage)

        return reply

    return ScriptedModel([step(r) for r in range(rounds + 1)], name="main-test")


def summariser(observed: Observed) -> ScriptedModel:
    def reply(request: ModelRequest) -> Reply:
        observed.summary_requests.append(request)
        figures = sorted(set(FIGURE.findall(observed.text_of(request))))
        text = "## Data gathered\n" + "\n".join(figures) + "\n## Next steps\nFinish the ranking."
        return Reply(
            text=text, usage=Usage(input_tokens=estimate_request(request), output_tokens=400)
        )

    return ScriptedModel([reply] * 50, name="fast-test")


def build_agent(
    home: Path, observed: Observed, *, window: int, fast: ScriptedModel | None
) -> Agent:
    config = AgentConfig(
        max_iterations=ROUNDS + 2, home=home, context_window=window, fast_context_window=window
    )
    tools = ToolRegistry([FetchFiling(), ReadToolResult()])
    return Agent(main_model(observed), tools, config=config, fast_model=fast)
