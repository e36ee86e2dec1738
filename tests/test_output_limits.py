"""The arithmetic of answer allowances, the windows overflow refusals state, and usage a
server did not report."""

from __future__ import annotations

import pytest

from dexter.models.estimate import with_estimates
from dexter.models.openai_chat import OpenAIChatModel
from dexter.models.profile import MIN_OUTPUT_ROOM, output_limit, profile_for_kind, window_from_error
from dexter.models.types import AssistantMessage, ModelRequest, ModelResponse, Usage, UserMessage
from tests.support.wire_server import WireServer, json_reply


def test_a_default_allowance_is_a_quarter_of_the_window_and_never_more_than_the_room() -> None:
    # 8k window, small prompt: a quarter (2,048) under the 4,096 default.
    assert output_limit(None, 4096, 8192, 500) == 2048
    # A small window still gets 1,024 …
    assert output_limit(None, 4096, 2048, 100) == 1024
    # … but never more than the prompt leaves,
    assert output_limit(None, 4096, 8192, 7500) == 692
    # and at least enough to answer when the estimate says there is no room (the server
    # then refuses, and that refusal is recovered as an overflow).
    assert output_limit(None, 4096, 8192, 9000) == MIN_OUTPUT_ROOM
    # A caller's own limit is kept, held only to the room.
    assert output_limit(300, 4096, 8192, 500) == 300
    assert output_limit(4000, None, 8192, 7000) == 1192
    # No default and no request: nothing is sent (OpenAI's own endpoint).
    assert output_limit(None, None, 1_047_576, 500) is None
    # No known window: the default as it is.
    assert output_limit(None, 16_000, None, 500) == 16_000


@pytest.mark.parametrize(
    ("text", "window"),
    [
        ("This model's maximum context length is 8192 tokens. However, you requested", 8192),
        ("request (9317 tokens) exceeds the available context size (4096 tokens), try", 4096),
        ("Requested tokens (9000) exceed context window of 2048", 2048),
        ("the model is loaded with context length of only 4096 tokens", 4096),
        ("rate limit reached for requests", None),
    ],
)
def test_overflow_messages_state_the_window(text: str, window: int | None) -> None:
    assert window_from_error(text) == window


def test_usage_a_server_left_at_zero_is_estimated_and_flagged() -> None:
    request = ModelRequest([UserMessage("How much did revenue grow last year? " * 20)])
    reply = AssistantMessage(content="It grew 6.4%, from $391.0B to $416.2B.")
    estimated = with_estimates(Usage(), request, reply)
    assert estimated.estimated and estimated.input_tokens > 150 and estimated.output_tokens > 5
    # A server that counted both keeps its own figures, unflagged.
    assert with_estimates(Usage(120, 14), request, reply) == Usage(120, 14)
    # Output counted but no input (some proxies): only the input is estimated.
    partial = with_estimates(Usage(0, 14), request, reply)
    assert partial.output_tokens == 14 and partial.input_tokens > 150 and partial.estimated
    # The flag survives sums, so a run's total says it holds an estimate.
    assert (Usage(10, 1) + estimated).estimated


async def test_complete_estimates_missing_usage_as_stream_does(wire_server: WireServer) -> None:
    """`complete` (summaries, routers) estimates a server's zero usage as `stream` does."""
    wire_server.push(
        json_reply(
            {
                "id": "c",
                "object": "chat.completion",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "Hi."},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
            }
        )
    )
    model = OpenAIChatModel(
        "m", api_key=None, base_url=wire_server.url, profile=profile_for_kind("llamacpp")
    )
    response = await model.complete(ModelRequest([UserMessage("Say hello to me.")]))
    assert isinstance(response, ModelResponse)
    assert response.usage.estimated and response.usage.input_tokens > 0
