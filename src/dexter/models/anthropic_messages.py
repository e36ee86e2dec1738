"""The Anthropic Messages wire protocol, spoken directly over httpx2.

One POST to `{base_url}/v1/messages`, answered with a Message object or an SSE stream of events,
mapped to and from Dexter's own message and chunk types. It is spoken here (with the plumbing in
`dexter.models.wire`) rather than through the `anthropic` SDK, whose import alone cost about a
second of every run on an Anthropic model. Retries are not done here: the retry layer re-streams
with backoff, so this module's job is to raise a well-classified `ModelError`.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Any

from dexter.models.errors import ErrorKind, ModelError, parse_retry_after
from dexter.models.estimate import estimate_request, with_estimates
from dexter.models.profile import (
    ANTHROPIC,
    FollowsProfile,
    OverflowSignals,
    ServerProfile,
    output_limit,
    window_from_error,
)
from dexter.models.types import (
    AssistantMessage,
    ForcedTool,
    Message,
    ModelRequest,
    ModelResponse,
    ReasoningChunk,
    StreamChunk,
    SystemMessage,
    TextChunk,
    ToolCall,
    ToolCallChunk,
    ToolMessage,
    Usage,
    UserMessage,
)
from dexter.models.wire import (
    JsonPost,
    json_object,
    merged_headers,
    send_past_a_dropped_connection,
    sse_events,
)

if TYPE_CHECKING:
    import httpx2

__all__ = [
    "API_VERSION",
    "THINKING_KEY",
    "AnthropicMessagesModel",
    "build_messages_params",
    "classify_anthropic_error",
    "classify_status",
    "parse_retry_after",
]

# Key in `AssistantMessage.provider_data` holding the turn's thinking blocks, signatures included.
# Anthropic verifies those signatures when a tool-use turn is sent back, so they must survive
# verbatim; nothing outside this module reads them.
THINKING_KEY = "anthropic_thinking"

_EPHEMERAL: dict[str, str] = {"type": "ephemeral"}

_DEFAULT_BASE_URL = "https://api.anthropic.com"
# The Messages API version that every Anthropic-compatible host understands.
API_VERSION = "2023-06-01"

# Our stop vocabulary is the one ScriptedModel and the OpenAI wire use, so the loop can test one
# set of values whichever protocol produced the turn. Unknown reasons (refusal, pause_turn, ...)
# pass through unchanged.
_STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
}

# Error `type` values from the response body (or an SSE `error` event). These are stable API
# identifiers, unlike the message text.
_ERROR_TYPE_KINDS = {
    "authentication_error": ErrorKind.AUTH,
    "permission_error": ErrorKind.AUTH,
    "billing_error": ErrorKind.BILLING,
    "not_found_error": ErrorKind.NOT_FOUND,
    "rate_limit_error": ErrorKind.RATE_LIMIT,
    "overloaded_error": ErrorKind.OVERLOADED,
    "api_error": ErrorKind.SERVER,
    "timeout_error": ErrorKind.TIMEOUT,
    "request_too_large": ErrorKind.CONTEXT_OVERFLOW,
}

# These arrive as 429 but are spend caps: backing off for seconds cannot help, so they must not be
# retried as rate limits.
_SPEND_LIMIT_CODES = frozenset({"contract_spend_limit_reached", "enforced_spend_limit_reached"})


# ---- request mapping -----------------------------------------------------------------------


# Anthropic requires max_tokens on every request; this is the allowance when nothing says more.
DEFAULT_MAX_TOKENS = 16_000


def build_messages_params(
    request: ModelRequest,
    *,
    model: str,
    max_output_tokens: int = DEFAULT_MAX_TOKENS,
    thinking_budget: int | None = None,
    system_as_string: bool = False,
    context_window: int | None = None,
    tool_call_content: str | None = None,
) -> dict[str, Any]:
    """The JSON body of `POST /v1/messages` (without `stream`) for one request.

    `system_as_string` sends the system prompt as a plain string (third-party servers such as
    llama.cpp behind LiteLLM want one) instead of a text block carrying a cache breakpoint.
    `tool_call_content` is the profile's content of a tool-call turn: None keeps Anthropic's
    shape (tool_use blocks alone); a string gives such a turn a text block (see
    `_assistant_blocks`).
    With a `context_window`, `max_tokens` is held to a share of it and to what the prompt leaves
    (a 16,000-token allowance does not fit an 8k window at all).
    """
    system, turns = _convert_messages(request.messages, tool_call_content)
    max_tokens = output_limit(
        request.max_output_tokens,
        max_output_tokens,
        context_window,
        estimate_request(request) if context_window else 0,
    )
    assert max_tokens is not None  # a default is always given, so a limit always results
    params: dict[str, Any] = {"model": model, "messages": turns, "max_tokens": max_tokens}
    if system and system_as_string:
        params["system"] = system
    elif system:
        # One breakpoint after the (large, stable) system prompt caches tools + system together,
        # since the cache prefix order is tools, then system, then messages.
        params["system"] = [{"type": "text", "text": system, "cache_control": dict(_EPHEMERAL)}]
    if request.tools:
        params["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": dict(t.parameters)}
            for t in request.tools
        ]
        if request.tool_choice == "none":
            params["tool_choice"] = {"type": "none"}
        elif isinstance(request.tool_choice, ForcedTool):
            params["tool_choice"] = {"type": "tool", "name": request.tool_choice.name}
    if request.temperature is not None and not thinking_budget:
        # With extended thinking the API accepts no temperature but its own. It has no seed.
        params["temperature"] = request.temperature
    if thinking_budget:
        params["thinking"] = {"type": "enabled", "budget_tokens": thinking_budget}
        # The API rejects max_tokens <= budget_tokens; a small answer allowance (e.g. for a
        # summary call) is then granted on top of the thinking budget instead of failing.
        if max_tokens <= thinking_budget:
            params["max_tokens"] = thinking_budget + max_tokens
    return params


def _convert_messages(
    messages: Sequence[Message], tool_call_content: str | None = None
) -> tuple[str, list[dict[str, Any]]]:
    system_parts: list[str] = []
    turns: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, SystemMessage):
            # Anthropic has no system role inside the conversation; every system text goes up top.
            if message.content.strip():
                system_parts.append(message.content)
        elif isinstance(message, UserMessage):
            blocks = [{"type": "text", "text": message.content}] if message.content else []
            _append_turn(turns, "user", blocks)
        elif isinstance(message, ToolMessage):
            result: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id,
                "is_error": message.is_error,
            }
            if message.content:
                result["content"] = message.content
            _append_turn(turns, "user", [result])
        else:
            _append_turn(turns, "assistant", _assistant_blocks(message, tool_call_content))
    for turn in turns:
        if turn["role"] == "user":
            # Tool results must open the user turn, before any text that was merged into it.
            turn["content"].sort(key=lambda block: block["type"] != "tool_result")
    if turns and turns[-1]["role"] == "user":
        # A second breakpoint at the end of the conversation: on the next loop iteration the whole
        # history so far is read from cache instead of being billed (and processed) again.
        turns[-1]["content"][-1]["cache_control"] = dict(_EPHEMERAL)
    return "\n\n".join(system_parts), turns


def _append_turn(turns: list[dict[str, Any]], role: str, blocks: list[dict[str, Any]]) -> None:
    # Anthropic rejects two consecutive messages with the same role and empty content, so
    # same-role neighbours (tool results followed by a user message, queued follow-ups) become
    # one turn and empty ones are dropped.
    if not blocks:
        return
    if turns and turns[-1]["role"] == role:
        turns[-1]["content"].extend(blocks)
    else:
        turns.append({"role": role, "content": blocks})


def _assistant_blocks(
    message: AssistantMessage, tool_call_content: str | None = None
) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    stored = message.provider_data.get(THINKING_KEY) or ()
    for block in stored:
        if isinstance(block, Mapping) and block.get("type") in ("thinking", "redacted_thinking"):
            blocks.append(dict(block))
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    elif message.tool_calls and tool_call_content is not None:
        # A proxy to an OpenAI-wire server (LiteLLM) makes this text the turn's `content`, and
        # drops an empty one, leaving no `content` at all, which llama-cpp-python's template
        # cannot render (HTTP 500): a turn of calls alone says which calls it makes.
        names = ", ".join(call.name for call in message.tool_calls)
        blocks.append({"type": "text", "text": tool_call_content or f"Calling {names}."})
    for call in message.tool_calls:
        blocks.append(
            {"type": "tool_use", "id": call.id, "name": call.name, "input": _tool_input(call)}
        )
    return blocks


def _tool_input(call: ToolCall) -> dict[str, Any]:
    # The model may have produced broken JSON; the call already failed as a tool error, and the
    # history must still be sendable, so it goes back as an empty object.
    try:
        value = json.loads(call.arguments) if call.arguments.strip() else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


# ---- response mapping ----------------------------------------------------------------------


def _get(obj: object, key: str) -> Any:
    return obj.get(key) if isinstance(obj, Mapping) else None


def _text(obj: object, key: str) -> str:
    # Proxies leave fields out or send null; either way there is no text.
    value = _get(obj, key)
    return value if isinstance(value, str) else ""


@dataclass
class _Block:
    kind: str
    parts: list[str] = field(default_factory=list)
    separator: str = ""
    signature: str = ""
    data: str = ""
    tool_index: int = -1
    tool_id: str = ""
    tool_name: str = ""
    initial_input: Any = None


class _StreamAssembler:
    """Turns decoded Messages SSE events into chunks, and remembers enough to build the turn."""

    def __init__(self, provider: str) -> None:
        self.provider = provider
        self.blocks: dict[int, _Block] = {}
        self.tool_count = 0
        self._last_tool: _Block | None = None
        self.usage: dict[str, int] = {}
        self.stop_reason: str | None = None
        self.finished = False

    def feed(self, event: Mapping[str, Any]) -> list[StreamChunk]:
        kind = event.get("type")
        if kind == "message_start":
            self._take_usage(_get(event.get("message"), "usage"))
        elif kind == "content_block_start":
            return self._start(self._index(event), event.get("content_block"))
        elif kind == "content_block_delta":
            return self._delta(self._index(event), event.get("delta"))
        elif kind == "message_delta":
            self.stop_reason = _text(event.get("delta"), "stop_reason") or self.stop_reason
            self._take_usage(event.get("usage"))
        elif kind == "message_stop":
            self.finished = True
        return []

    def _index(self, event: Mapping[str, Any]) -> int:
        index = event.get("index")
        if isinstance(index, int) and not isinstance(index, bool):
            return index
        # Without an index the text or tool input cannot be placed; the turn is unusable.
        raise ModelError(
            ErrorKind.STREAM,
            f"malformed stream event: {event.get('type')} without a block index",
            provider=self.provider,
        )

    def _start(self, index: int, content: object) -> list[StreamChunk]:
        block_type = _text(content, "type")
        block = _Block(kind=block_type)
        self.blocks[index] = block
        chunks: list[StreamChunk] = []
        if block_type == "text":
            text = _text(content, "text")
            if text:
                block.parts.append(text)
                chunks.append(TextChunk(text))
        elif block_type == "thinking":
            # Separate successive thinking blocks (interleaved thinking between tool calls) the
            # same way in the live stream and in the final reasoning text.
            if any(b.kind == "thinking" and b.parts for b in self._others(index)):
                block.separator = "\n\n"
                chunks.append(ReasoningChunk(block.separator))
            text = _text(content, "thinking")
            block.signature = _text(content, "signature")
            if text:
                block.parts.append(text)
                chunks.append(ReasoningChunk(text))
        elif block_type == "redacted_thinking":
            block.data = _text(content, "data")
        elif block_type == "tool_use":
            last = self._last_tool
            if last is not None and last.tool_id and _text(content, "id") == last.tool_id:
                # The same call again: LiteLLM relays each chunk of llama-cpp-python's streamed
                # tool call (which repeats the call's id) as a block of its own.
                self.blocks[index] = last
                return []
            self._last_tool = block
            block.tool_index = self.tool_count
            self.tool_count += 1
            block.tool_id = _text(content, "id")
            block.tool_name = _text(content, "name")
            block.initial_input = _get(content, "input")
            chunks.append(ToolCallChunk(block.tool_index, id=block.tool_id, name=block.tool_name))
        return chunks

    def _others(self, index: int) -> Iterable[_Block]:
        return (b for i, b in self.blocks.items() if i != index)

    def _delta(self, index: int, delta: object) -> list[StreamChunk]:
        block = self.blocks.get(index)
        if block is None:
            return []
        delta_type = _get(delta, "type")
        if delta_type == "text_delta":
            text = _text(delta, "text")
            if text:
                block.parts.append(text)
                return [TextChunk(text)]
        elif delta_type == "thinking_delta":
            thought = _text(delta, "thinking")
            if thought:
                block.parts.append(thought)
                return [ReasoningChunk(thought)]
        elif delta_type == "signature_delta":
            block.signature += _text(delta, "signature")
        elif delta_type == "input_json_delta":
            fragment = _text(delta, "partial_json")
            if fragment:
                block.parts.append(fragment)
                return [ToolCallChunk(block.tool_index, arguments=fragment)]
        return []

    def _take_usage(self, usage: object) -> None:
        # message_delta counts are cumulative, so a later value replaces an earlier one.
        self.usage.update(_usage_fields(usage))

    def response(self) -> ModelResponse:
        # A block that continues an earlier one (the same tool call) is that block, once.
        ordered = list({id(b): b for b in (self.blocks[i] for i in sorted(self.blocks))}.values())
        text = "".join(part for b in ordered if b.kind == "text" for part in b.parts)
        reasoning = "".join(b.separator + "".join(b.parts) for b in ordered if b.kind == "thinking")
        thinking: list[dict[str, Any]] = []
        calls: list[ToolCall] = []
        for b in ordered:
            if b.kind == "thinking":
                body = "".join(b.parts)
                thinking.append({"type": "thinking", "thinking": body, "signature": b.signature})
            elif b.kind == "redacted_thinking":
                thinking.append({"type": "redacted_thinking", "data": b.data})
            elif b.kind == "tool_use":
                arguments = "".join(b.parts)
                if not arguments.strip():
                    # Some proxies send the whole input on block start with no deltas.
                    arguments = json.dumps(b.initial_input) if b.initial_input else "{}"
                calls.append(ToolCall(id=b.tool_id, name=b.tool_name, arguments=arguments))
        return _response(text, reasoning, thinking, calls, self.usage, self.stop_reason)


def _says_nothing(response: ModelResponse) -> bool:
    """A finished turn with no text, no tool call, no reasoning, and no input counted: what an
    upstream that refused the prompt inside its stream looks like through a proxy."""
    message = response.message
    return not (
        message.content or message.tool_calls or message.reasoning or response.usage.input_tokens
    )


def _usage_fields(usage: object) -> dict[str, int]:
    """The counts present in a usage object (fields absent, null or not integers are left out)."""
    fields: dict[str, int] = {}
    if not isinstance(usage, Mapping):
        return fields
    for key in (
        "input_tokens",
        "output_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
    ):
        value = usage.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            fields[key] = value
    thinking = _get(usage.get("output_tokens_details"), "thinking_tokens")
    if isinstance(thinking, int) and not isinstance(thinking, bool):
        fields["thinking_tokens"] = thinking
    return fields


def _response(
    text: str,
    reasoning: str,
    thinking: list[dict[str, Any]],
    calls: list[ToolCall],
    usage: Mapping[str, int],
    stop_reason: str | None,
) -> ModelResponse:
    cache_read = usage.get("cache_read_input_tokens", 0)
    message = AssistantMessage(
        content=text,
        tool_calls=tuple(calls),
        reasoning=reasoning,
        provider_data={THINKING_KEY: thinking} if thinking else {},
    )
    return ModelResponse(
        message=message,
        usage=Usage(
            # Anthropic reports cached input separately; our input_tokens is what the context
            # window actually held, which is what compaction thresholds need.
            input_tokens=usage.get("input_tokens", 0)
            + cache_read
            + usage.get("cache_creation_input_tokens", 0),
            output_tokens=usage.get("output_tokens", 0),
            cached_tokens=cache_read,
            reasoning_tokens=usage.get("thinking_tokens", 0),
        ),
        stop_reason=_STOP_REASONS.get(stop_reason or "end_turn", stop_reason or "stop"),
    )


def _response_from_message(message: Mapping[str, Any]) -> ModelResponse:
    texts: list[str] = []
    reasoning: list[str] = []
    thinking: list[dict[str, Any]] = []
    calls: list[ToolCall] = []
    content = message.get("content")
    for block in content if isinstance(content, list) else ():
        block_type = _get(block, "type")
        if block_type == "text":
            texts.append(_text(block, "text"))
        elif block_type == "thinking":
            thought = _text(block, "thinking")
            reasoning.append(thought)
            thinking.append(
                {"type": "thinking", "thinking": thought, "signature": _text(block, "signature")}
            )
        elif block_type == "redacted_thinking":
            thinking.append({"type": "redacted_thinking", "data": _text(block, "data")})
        elif block_type == "tool_use":
            raw_input = _get(block, "input")
            arguments = json.dumps(raw_input) if raw_input is not None else "{}"
            calls.append(
                ToolCall(id=_text(block, "id"), name=_text(block, "name"), arguments=arguments)
            )
    stop_reason = message.get("stop_reason")
    return _response(
        "".join(texts),
        "\n\n".join(part for part in reasoning if part),
        thinking,
        calls,
        _usage_fields(message.get("usage")),
        stop_reason if isinstance(stop_reason, str) else None,
    )


# ---- errors --------------------------------------------------------------------------------


def classify_anthropic_error(
    exc: BaseException, provider: str = "Anthropic", *, mid_stream: bool = False
) -> ModelError:
    """Map a transport failure (or undecodable event data) to a `ModelError`.

    `mid_stream` says the response had already started, so a broken transport or an unreadable
    event means the stream broke rather than that the server was unreachable.
    """
    if isinstance(exc, ModelError):
        return exc
    import httpx2

    detail = _describe(exc)
    if isinstance(exc, httpx2.TimeoutException):
        # Mid-stream too: the server went quiet for longer than the timeout.
        return ModelError(ErrorKind.TIMEOUT, f"Request timed out. ({detail})", provider=provider)
    if isinstance(exc, httpx2.HTTPError | httpx2.StreamError):
        if mid_stream:
            return ModelError(ErrorKind.STREAM, detail, provider=provider)
        return ModelError(ErrorKind.CONNECTION, f"Connection error. ({detail})", provider=provider)
    if mid_stream and isinstance(exc, ValueError):
        # Undecodable event data (JSONDecodeError is a ValueError) or an event that is no object.
        return ModelError(ErrorKind.STREAM, f"malformed stream event: {detail}", provider=provider)
    return ModelError(ErrorKind.UNKNOWN, detail, provider=provider)


def _describe(exc: BaseException) -> str:
    text = str(exc)
    cause = exc.__cause__ or exc.__context__
    if cause is not None and str(cause) and str(cause) not in text:
        text = f"{text} ({cause})" if text else str(cause)
    return text or type(exc).__name__


def classify_status(
    status: int,
    headers: Mapping[str, str],
    content: bytes,
    provider: str = "Anthropic",
    signals: OverflowSignals | None = None,
) -> ModelError:
    """Map a non-2xx reply to a `ModelError`, from its status and the error body's `type` and
    `details.error_code` (and, as the server's profile `signals` say, its prose: third-party
    servers word an overflow their own way)."""
    text = content.decode("utf-8", errors="replace").strip()
    body: object = text or None
    try:
        body = json.loads(text)
    except ValueError:
        fallback = text or f"Error code: {status}"
    else:
        fallback = f"Error code: {status} - {body}"
    return _error_from_body(status, headers, body, fallback, provider, signals)


def _stream_error_event(
    data: str,
    headers: Mapping[str, str],
    provider: str,
    *,
    status: int,
    signals: OverflowSignals | None = None,
) -> ModelError:
    """An `error` event inside a 200 stream: the server failed after answering."""
    body: object = data
    try:
        body = json.loads(data)
    except ValueError:
        fallback = data or f"Error code: {status}"
    else:
        fallback = str(body)
    return _error_from_body(status, headers, body, fallback, provider, signals)


def _error_from_body(
    status: int,
    headers: Mapping[str, str],
    body: object,
    fallback: str,
    provider: str,
    signals: OverflowSignals | None = None,
) -> ModelError:
    # Anthropic's error shape: {"type": "error", "error": {"type", "message", "details":
    # {"error_code"}}, "request_id"}.
    error = _get(body, "error")
    error_type = _get(error, "type")
    error_code = _get(_get(error, "details"), "error_code")
    api_message = _get(error, "message")
    message = api_message if isinstance(api_message, str) else fallback
    kind = _status_kind(
        status,
        error_type if isinstance(error_type, str) else None,
        error_code if isinstance(error_code, str) else None,
        message,
    )
    signals = signals or ANTHROPIC.overflow_signals
    if status in signals.statuses or (
        signals.phrases_anywhere
        and kind in (ErrorKind.BAD_REQUEST, ErrorKind.SERVER, ErrorKind.UNKNOWN, ErrorKind.STREAM)
        and signals.matches(message)
    ):
        kind = ErrorKind.CONTEXT_OVERFLOW
    request_id = headers.get("request-id")
    if not request_id:
        body_id = _get(body, "request_id")
        request_id = body_id if isinstance(body_id, str) else None
    return ModelError(
        kind,
        message,
        provider=provider,
        # An SSE `error` event arrives on a 200 response; that status says nothing useful.
        status_code=status if status >= 400 else None,
        retry_after=parse_retry_after(headers),
        request_id=request_id,
        context_window=window_from_error(message) if kind is ErrorKind.CONTEXT_OVERFLOW else None,
    )


def _status_kind(
    status: int, error_type: str | None, error_code: str | None, message: str
) -> ErrorKind:
    if error_code in _SPEND_LIMIT_CODES:
        return ErrorKind.BILLING
    if (
        status == 400
        and error_type in (None, "invalid_request_error")
        and "prompt is too long" in message.lower()
    ):
        # Anthropic's only signal for context overflow is this 400 message; nothing structured
        # distinguishes it from other invalid requests.
        return ErrorKind.CONTEXT_OVERFLOW
    if error_type in _ERROR_TYPE_KINDS:
        return _ERROR_TYPE_KINDS[error_type]
    if status in (401, 403):
        return ErrorKind.AUTH
    if status == 402:
        return ErrorKind.BILLING
    if status == 404:
        return ErrorKind.NOT_FOUND
    if status == 408:
        return ErrorKind.TIMEOUT
    if status == 413:
        return ErrorKind.CONTEXT_OVERFLOW
    if status == 429:
        return ErrorKind.RATE_LIMIT
    if status == 529:
        return ErrorKind.OVERLOADED
    if status >= 500:
        return ErrorKind.SERVER
    if status >= 400:
        return ErrorKind.BAD_REQUEST
    # An `error` event with an unknown type on an otherwise good stream.
    return ErrorKind.STREAM


# ---- the model -----------------------------------------------------------------------------


class AnthropicMessagesModel(FollowsProfile):
    """A Claude (or Anthropic-compatible) model reached through the Messages API
    (`POST {base_url}/v1/messages`).

    Without an `api_key` the key comes from `ANTHROPIC_API_KEY` (then `ANTHROPIC_AUTH_TOKEN`),
    and without a `base_url` from `ANTHROPIC_BASE_URL`, as with the official SDK. `profile` is
    what the server accepts (Anthropic's own unless told otherwise); `max_output_tokens`
    overrides its answer allowance; `endpoint_label` is who error messages name ("the server at
    127.0.0.1:4000" for a server of the user's own).
    """

    def __init__(
        self,
        model_name: str,
        *,
        api_key: str | None,
        base_url: str | None = None,
        provider: str = "Anthropic",
        max_output_tokens: int | None = None,
        thinking_budget: int | None = None,
        timeout: float = 600.0,
        default_headers: dict[str, str] | None = None,
        http_client: httpx2.AsyncClient | None = None,
        profile: ServerProfile = ANTHROPIC,
        context_window: int | None = None,
        endpoint_label: str | None = None,
    ) -> None:
        self._name = model_name
        self._api_key = api_key
        self._base_url = base_url
        self._provider = provider
        self._error_label = endpoint_label or provider
        self._follow(profile, context_window, classify_status, self._error_label)
        self._max_output_tokens = max_output_tokens
        self.thinking_budget = thinking_budget
        self._default_headers = dict(default_headers or {})
        self._post = JsonPost(
            timeout=timeout,
            transport_error=partial(classify_anthropic_error, provider=self._error_label),
            status_error=self._status_error,
            http_client=http_client,
        )

    @property
    def max_output_tokens(self) -> int:
        """The answer allowance when a request sets none (before scaling to the window)."""
        return self._max_output_tokens or self.profile.default_output_tokens or DEFAULT_MAX_TOKENS

    @property
    def name(self) -> str:
        return self._name

    @property
    def provider(self) -> str:
        return self._provider

    async def aclose(self) -> None:
        """Release the connection pool. An injected `http_client` belongs to its owner."""
        await self._post.aclose()

    def build_params(self, request: ModelRequest) -> dict[str, Any]:
        return build_messages_params(
            request,
            model=self._name,
            max_output_tokens=self.max_output_tokens,
            thinking_budget=self.thinking_budget,
            system_as_string=self.profile.system_as_string,
            context_window=self.context_window,
            tool_call_content=self.profile.assistant_tool_call_content,
        )

    def _url(self) -> str:
        base = self._base_url or os.environ.get("ANTHROPIC_BASE_URL") or _DEFAULT_BASE_URL
        return base.rstrip("/") + "/v1/messages"

    def _headers(self) -> dict[str, str]:
        key = (
            self._api_key
            or os.environ.get("ANTHROPIC_API_KEY")
            or os.environ.get("ANTHROPIC_AUTH_TOKEN")
        )
        if not key:
            # Checked before anything is sent: a request without a key can only be refused.
            raise ModelError(
                ErrorKind.AUTH,
                "no API key configured (set ANTHROPIC_API_KEY)",
                provider=self._error_label,
            )
        headers = {
            "anthropic-version": API_VERSION,
            # api.anthropic.com takes the key in either header (SDK 1.x sent x-api-key, 2.x a
            # bearer token); Anthropic-compatible hosts and gateways often read only one of them.
            "x-api-key": key,
            "Authorization": f"Bearer {key}",
        }
        return merged_headers(headers, _env_custom_headers(), self._default_headers)

    async def _send(self, params: dict[str, Any], *, stream: bool) -> httpx2.Response:
        return await self._post.send(self._url(), self._headers(), params, stream=stream)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        import httpx2

        params = self.build_params(request)
        params["stream"] = True
        response = await self._send(params, stream=True)
        assembler = _StreamAssembler(self._error_label)
        signals = self.profile.overflow_signals
        events_seen = 0
        try:
            events = sse_events(response)
            while True:
                # Only the fetch and decoding of the next event is guarded: an exception from
                # our own mapping code is a bug and must not be disguised as a retryable
                # stream failure.
                try:
                    try:
                        name, data = await events.__anext__()
                    except StopAsyncIteration:
                        break
                    events_seen += 1
                    if name == "error":
                        raise _stream_error_event(
                            data,
                            response.headers,
                            self._error_label,
                            status=response.status_code,
                            signals=signals,
                        )
                    # Unnamed events and keep-alive pings carry no part of the message.
                    if name is None or name == "ping" or not data:
                        continue
                    event = json_object(data)
                except (httpx2.HTTPError, httpx2.StreamError, ValueError) as exc:
                    raise classify_anthropic_error(exc, self._error_label, mid_stream=True) from exc
                for chunk in assembler.feed(event):
                    yield chunk
        finally:
            # Also runs when the consumer stops early or is cancelled: frees the connection.
            await response.aclose()
        if not assembler.finished:
            if not events_seen and signals.empty_stream:
                await self._explain_empty_stream(params)
            # A proxy or the server closed the connection cleanly but early; without
            # message_stop the turn may be missing text or tool calls.
            raise ModelError(
                ErrorKind.STREAM, "stream ended before message_stop", provider=self._error_label
            )
        final = assembler.response()
        if signals.empty_stream and _says_nothing(final):
            # LiteLLM in front of llama-cpp-python turns the empty stream of an over-long
            # prompt into a complete message with no content and no input counted.
            await self._explain_empty_stream(params)
        yield replace(final, usage=with_estimates(final.usage, request, final.message))

    async def _explain_empty_stream(self, params: dict[str, Any]) -> None:
        """Ask once more without streaming after a stream that said nothing at all: a server
        behind a proxy that fails an over-long prompt inside its stream (llama-cpp-python) is
        refused cleanly without one, and that refusal is an overflow to recover from, not a
        broken stream to retry. One token of answer at most, should nothing be refused."""
        probe = {k: v for k, v in params.items() if k != "stream"}
        probe["max_tokens"] = 1
        probe.pop("thinking", None)
        response = await send_past_a_dropped_connection(lambda: self._send(probe, stream=False))
        await response.aclose()

    async def complete(self, request: ModelRequest) -> ModelResponse:
        response = await self._send(self.build_params(request), stream=False)
        try:
            payload = json.loads(response.content)
        except ValueError as exc:
            raise ModelError(
                ErrorKind.SERVER,
                f"the response was not valid JSON: {exc}",
                provider=self._error_label,
                status_code=response.status_code,
                request_id=response.headers.get("request-id"),
            ) from exc
        if not isinstance(payload, Mapping):
            raise ModelError(
                ErrorKind.SERVER,
                "the response was not a message object",
                provider=self._error_label,
            )
        if payload.get("type") == "error":
            # Some gateways answer a failed upstream call with a 200 whose body is the error.
            raise _error_from_body(
                response.status_code,
                response.headers,
                payload,
                f"Error code: {response.status_code} - {payload}",
                self._error_label,
                self.profile.overflow_signals,
            )
        final = _response_from_message(payload)
        return replace(final, usage=with_estimates(final.usage, request, final.message))


def _env_custom_headers() -> dict[str, str]:
    """`ANTHROPIC_CUSTOM_HEADERS` ("Name: value" lines), which the official SDK (and Claude
    Code) honour, so a gateway set up that way keeps working."""
    raw = os.environ.get("ANTHROPIC_CUSTOM_HEADERS")
    headers: dict[str, str] = {}
    for line in (raw or "").splitlines():
        name, colon, value = line.partition(":")
        if colon and name.strip():
            headers[name.strip()] = value.strip()
    return headers
