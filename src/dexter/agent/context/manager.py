"""Keep every request inside the model's context window, tier by tier.

1. Results over 50,000 characters, and the largest results of a turn over its budget, go to disk
   as previews (`results.py`); `read_tool_result` reads them back, so nothing is lost.
2. Every round, old read-only results become short markers: the key to read the full text back,
   its size and the result's figure lines (`microcompact.py`).
3. Measured against the real window (last reported input tokens plus everything appended since):
   at 70% all but the newest results are cleared; at 85% a fast model summarises the run
   (`compaction.py`) when that saves more than it costs.
4. Last resort, and whenever a request would still not fit: drop old history turns, then old
   tool rounds, never the question and never half an assistant/tool pair (`overflow.py`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dexter.agent.context.budget import ContextBudget, estimate_messages, estimate_tools
from dexter.agent.context.compaction import (
    CompactionFailed,
    compact,
    estimate_compaction,
    worth_compacting,
)
from dexter.agent.context.microcompact import microcompact
from dexter.agent.context.overflow import drop_for_overflow
from dexter.agent.context.results import (
    MAX_RESULT_CHARS,
    TURN_BUDGET_CHARS,
    ResultStore,
    apply_turn_budget,
    cap_result,
)
from dexter.agent.events import ContextEvent
from dexter.models.base import Model
from dexter.models.types import AssistantMessage, Message, ToolMessage, ToolSpec, Usage

_log = logging.getLogger(__name__)

CHARS_PER_TOKEN = 3.5
KEEP_RECENT_RESULTS = 4
KEEP_ROUNDS_AFTER_SUMMARY = 2
MAX_COMPACTION_FAILURES = 3
# Rough number of model calls still to come, for weighing a summary's cost against its saving.
EXPECTED_REMAINING_CALLS = 4


@dataclass
class Prepared:
    messages: list[Message]
    query_index: int
    events: list[ContextEvent] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)


class ContextManager:
    def __init__(
        self,
        *,
        home: Path,
        run_id: str,
        window: int,
        compactable: Callable[[str], bool],
        constraints: Callable[[], Sequence[str]],
        fast_model: Model | None = None,
        fast_window: int | None = None,
        before_compaction: Callable[[Sequence[Message]], Awaitable[None]] | None = None,
    ) -> None:
        self._before_compaction = before_compaction
        self.store = ResultStore(home, run_id)
        self.budget = ContextBudget(window)
        self._compactable = compactable
        self._constraints = constraints
        self._fast_model = fast_model
        self._fast_budget = ContextBudget(fast_window or window)
        self.calls: dict[str, tuple[str, dict[str, Any]]] = {}
        self._last_input: int | None = None
        self._messages_at_report = 0
        self._failures = 0
        self.peak_request_tokens = 0

    def use_window(self, window: int, *, fast_window: int | None = None) -> None:
        """Budget for a smaller window from now on (one the server stated when refusing)."""
        self.budget = ContextBudget(window)
        if fast_window is not None:
            self._fast_budget = ContextBudget(fast_window)

    # -- bookkeeping -------------------------------------------------------------------------

    def record_calls(self, message: AssistantMessage) -> None:
        for call in message.tool_calls:
            try:
                args = json.loads(call.arguments or "{}")
            except json.JSONDecodeError:
                args = {}
            self.calls[call.id] = (call.name, args if isinstance(args, dict) else {})

    def note_usage(self, usage: Usage, messages_sent: int) -> None:
        # An estimated count is our own guess at what `measure` estimates anyway, not a report.
        if usage.input_tokens and not usage.estimated:
            self._last_input = usage.input_tokens
            self._messages_at_report = messages_sent
            self.peak_request_tokens = max(self.peak_request_tokens, usage.input_tokens)

    def _forget_report(self) -> None:
        # After messages were rewritten the last report no longer describes them.
        self._last_input = None
        self._messages_at_report = 0

    # -- tier 1: large results ---------------------------------------------------------------

    def after_tools(self, results: Sequence[ToolMessage]) -> list[ToolMessage]:
        args = {cid: a for cid, (_, a) in self.calls.items()}
        # A small window (a local 8k model, say) cannot hold even one 50,000-character result:
        # cap each result at a quarter of the window, and a turn at half of it.
        window_chars = int(self.budget.window * CHARS_PER_TOKEN)
        max_chars = min(MAX_RESULT_CHARS, window_chars // 4)
        turn_chars = min(TURN_BUDGET_CHARS, window_chars // 2)
        capped = [
            cap_result(
                m, store=self.store, tool_args=args.get(m.tool_call_id, {}), max_chars=max_chars
            )
            for m in results
        ]
        return apply_turn_budget(capped, store=self.store, args_by_id=args, budget=turn_chars)

    # -- tiers 2-4: before each model call ---------------------------------------------------

    def measure(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> int:
        return self.budget.measure(
            messages,
            tools,
            last_reported_input=self._last_input,
            messages_at_last_report=self._messages_at_report,
        )

    def _estimate(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> int:
        return estimate_messages(messages) + estimate_tools(tools)

    async def prepare(
        self, messages: list[Message], query_index: int, tools: Sequence[ToolSpec]
    ) -> Prepared:
        out = Prepared(messages, query_index)
        self._microcompact(out, KEEP_RECENT_RESULTS)
        tokens = self.measure(out.messages, tools)
        if self.budget.level(tokens) != "ok":
            if self._microcompact(out, 1):
                tokens = self._estimate(out.messages, tools)
        if self.budget.level(tokens) == "compact":
            await self._compact(out, tokens)
            tokens = self._estimate(out.messages, tools)
        keep = 3
        while not self.budget.fits(tokens) and keep >= 0:
            trimmed, removed, index = drop_for_overflow(
                out.messages, query_index=out.query_index, keep_rounds=keep
            )
            keep -= 1
            if removed:
                out.messages, out.query_index = trimmed, index
                self._forget_report()
                detail = f"dropped {removed} older messages to fit the context window"
                out.events.append(ContextEvent("truncation", detail, removed))
                tokens = self._estimate(out.messages, tools)
        self.peak_request_tokens = max(self.peak_request_tokens, tokens)
        return out

    def _microcompact(self, out: Prepared, keep_recent: int) -> bool:
        result = microcompact(
            out.messages,
            store=self.store,
            calls=self.calls,
            compactable=self._compactable,
            keep_recent=keep_recent,
        )
        if not result.cleared:
            return False
        out.messages = result.messages
        self._forget_report()
        detail = (
            f"cleared {result.cleared} older tool results ({result.chars_saved:,} characters); "
            "full text kept on disk"
        )
        out.events.append(ContextEvent("microcompact", detail, result.cleared))
        return True

    async def _compact(self, out: Prepared, tokens: int) -> None:
        if self._fast_model is None or self._failures >= MAX_COMPACTION_FAILURES:
            return
        estimate = estimate_compaction(
            out.messages,
            query_index=out.query_index,
            keep_rounds=KEEP_ROUNDS_AFTER_SUMMARY,
            remaining_calls=EXPECTED_REMAINING_CALLS,
        )
        if not worth_compacting(tokens, estimate.cost, estimate.saving):
            return
        if self._before_compaction is not None:
            try:
                await self._before_compaction(out.messages)
            except Exception as error:  # a failed memory flush must never block compaction
                _log.debug("memory flush failed", exc_info=True)
                out.events.append(ContextEvent("memory_flush_failed", str(error)[:200]))
        try:
            result = await compact(
                out.messages,
                model=self._fast_model,
                query_index=out.query_index,
                constraints=list(self._constraints()),
                keep_rounds=KEEP_ROUNDS_AFTER_SUMMARY,
                max_input_tokens=self._fast_budget.hard_limit,
            )
        except CompactionFailed as error:
            self._failures += 1
            out.events.append(ContextEvent("compaction_failed", str(error)))
            return
        self._failures = 0
        out.messages, out.query_index = list(result.messages), result.query_index
        out.usage = out.usage + result.usage
        self._forget_report()
        detail = (
            f"summarised the run so far: ~{result.tokens_before:,} -> ~{result.tokens_after:,} "
            "tokens"
        )
        out.events.append(ContextEvent("compaction", detail))
