"""Tokenizer-free token estimates: characters over a constant.

Used where no server count exists yet (the next request's size, before it is sent) or ever will
(servers that report no usage, such as llama.cpp's). A tokenizer per model would be exact but
would mean downloading one per model and knowing which one a server runs; 3.5 characters per
token slightly overcounts English prose and JSON, which is the safe side for a budget.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

from dexter.models.types import (
    AssistantMessage,
    Message,
    ModelRequest,
    ToolMessage,
    ToolSpec,
    Usage,
)

CHARS_PER_TOKEN = 3.5
# Role markers, separators and ids that every wire format adds around a message.
MESSAGE_OVERHEAD_TOKENS = 4
TOOL_CALL_OVERHEAD_TOKENS = 8


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def estimate_message(message: Message) -> int:
    tokens = MESSAGE_OVERHEAD_TOKENS + estimate_tokens(message.content)
    if isinstance(message, AssistantMessage):
        tokens += estimate_tokens(message.reasoning)
        for call in message.tool_calls:
            tokens += TOOL_CALL_OVERHEAD_TOKENS + estimate_tokens(call.name + call.arguments)
    elif isinstance(message, ToolMessage):
        tokens += estimate_tokens(message.tool_call_id + message.name)
    return tokens


def estimate_messages(messages: Sequence[Message]) -> int:
    return sum(estimate_message(m) for m in messages)


def estimate_tools(specs: Sequence[ToolSpec]) -> int:
    return sum(
        estimate_tokens(
            json.dumps(
                {"name": s.name, "description": s.description, "parameters": dict(s.parameters)},
                separators=(",", ":"),
                default=str,
            )
        )
        for s in specs
    )


def estimate_request(request: ModelRequest) -> int:
    return estimate_messages(request.messages) + estimate_tools(request.tools)


def with_estimates(reported: Usage | None, request: ModelRequest, reply: AssistantMessage) -> Usage:
    """`reported`, with each count the server left at zero replaced by an estimate (and the
    result flagged `estimated`); unchanged when the server counted both input and output.

    A zero input count is never true (every request has a prompt); a zero output count is true
    only for a reply with nothing in it, which then estimates to zero as well.
    """
    usage = reported or Usage()
    input_tokens, output_tokens = usage.input_tokens, usage.output_tokens
    if input_tokens and (output_tokens or not _has_output(reply)):
        return usage
    estimated_output = estimate_message(reply) - MESSAGE_OVERHEAD_TOKENS
    return Usage(
        input_tokens=input_tokens or estimate_request(request),
        output_tokens=output_tokens or max(0, estimated_output),
        cached_tokens=usage.cached_tokens,
        reasoning_tokens=usage.reasoning_tokens,
        estimated=True,
    )


def _has_output(reply: AssistantMessage) -> bool:
    return bool(reply.content or reply.reasoning or reply.tool_calls)


__all__ = [
    "CHARS_PER_TOKEN",
    "MESSAGE_OVERHEAD_TOKENS",
    "TOOL_CALL_OVERHEAD_TOKENS",
    "estimate_message",
    "estimate_messages",
    "estimate_request",
    "estimate_tokens",
    "estimate_tools",
    "with_estimates",
]
