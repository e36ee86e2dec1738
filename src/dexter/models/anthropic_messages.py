"""The Anthropic Messages wire protocol, mapped to and from Dexter's own message and chunk types.

`anthropic` is imported lazily: it takes about a second to import, and `dexter --help` (or any
run on another provider) must not pay for it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from dexter.models.errors import ErrorKind, ModelError, parse_retry_after
from dexter.models.types import (
    AssistantMessage,
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

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic

__all__ = [
    "THINKING_KEY",
    "AnthropicMessagesModel",
    "build_messages_params",
    "classify_anthropic_error",
    "parse_retry_after",
]

# Key in `AssistantMessage.provider_data` holding the turn's thinking blocks, signatures included.
# Anthropic verifies those signatures when a tool-use turn is sent back, so they must survive
# verbatim; nothing outside this module reads them.
THINKING_KEY = "anthropic_thinking"

_EPHEMERAL: dict[str, str] = {"type": "ephemeral"}

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


def build_messages_params(
    request: ModelRequest,
    *,
    model: str,
    max_output_tokens: int = 16000,
    thinking_budget: int | None = None,
) -> dict[str, Any]:
    """The keyword arguments for `messages.create` (without `stream`) for one request."""
    system, turns = _convert_messages(request.messages)
    max_tokens = request.max_output_tokens or max_output_tokens
    params: dict[str, Any] = {"model": model, "messages": turns, "max_tokens": max_tokens}
    if system:
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
    if thinking_budget:
        params["thinking"] = {"type": "enabled", "budget_tokens": thinking_budget}
        # The API rejects max_tokens <= budget_tokens; a small answer allowance (e.g. for a
        # summary call) is then granted on top of the thinking budget instead of failing.
        if max_tokens <= thinking_budget:
            params["max_tokens"] = thinking_budget + max_tokens
    return params


def _convert_messages(messages: Sequence[Message]) -> tuple[str, list[dict[str, Any]]]:
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
            _append_turn(turns, "assistant", _assistant_blocks(message))
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


def _assistant_blocks(message: AssistantMessage) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    stored = message.provider_data.get(THINKING_KEY) or ()
    for block in stored:
        if isinstance(block, Mapping) and block.get("type") in ("thinking", "redacted_thinking"):
            blocks.append(dict(block))
    if message.content:
        blocks.append({"type": "text", "text": message.content})
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
    """Turns raw Messages SSE events into chunks, and remembers enough to build the final turn."""

    def __init__(self) -> None:
        self.blocks: dict[int, _Block] = {}
        self.tool_count = 0
        self.usage: dict[str, int] = {}
        self.stop_reason: str | None = None
        self.finished = False

    def feed(self, event: Any) -> list[StreamChunk]:
        kind = getattr(event, "type", None)
        if kind == "message_start":
            self._take_usage(getattr(event.message, "usage", None))
        elif kind == "content_block_start":
            return self._start(int(event.index), event.content_block)
        elif kind == "content_block_delta":
            return self._delta(int(event.index), event.delta)
        elif kind == "message_delta":
            self.stop_reason = getattr(event.delta, "stop_reason", None) or self.stop_reason
            self._take_usage(getattr(event, "usage", None))
        elif kind == "message_stop":
            self.finished = True
        return []

    def _start(self, index: int, content: Any) -> list[StreamChunk]:
        block_type = str(getattr(content, "type", ""))
        block = _Block(kind=block_type)
        self.blocks[index] = block
        chunks: list[StreamChunk] = []
        if block_type == "text":
            text = getattr(content, "text", "") or ""
            if text:
                block.parts.append(text)
                chunks.append(TextChunk(text))
        elif block_type == "thinking":
            # Separate successive thinking blocks (interleaved thinking between tool calls) the
            # same way in the live stream and in the final reasoning text.
            if any(b.kind == "thinking" and b.parts for b in self._others(index)):
                block.separator = "\n\n"
                chunks.append(ReasoningChunk(block.separator))
            text = getattr(content, "thinking", "") or ""
            block.signature = getattr(content, "signature", "") or ""
            if text:
                block.parts.append(text)
                chunks.append(ReasoningChunk(text))
        elif block_type == "redacted_thinking":
            block.data = getattr(content, "data", "") or ""
        elif block_type == "tool_use":
            block.tool_index = self.tool_count
            self.tool_count += 1
            block.tool_id = getattr(content, "id", "") or ""
            block.tool_name = getattr(content, "name", "") or ""
            block.initial_input = getattr(content, "input", None)
            chunks.append(ToolCallChunk(block.tool_index, id=block.tool_id, name=block.tool_name))
        return chunks

    def _others(self, index: int) -> Iterable[_Block]:
        return (b for i, b in self.blocks.items() if i != index)

    def _delta(self, index: int, delta: Any) -> list[StreamChunk]:
        block = self.blocks.get(index)
        if block is None:
            return []
        delta_type = getattr(delta, "type", None)
        # getattr throughout: the SDK builds events without validation, so a field a proxy left
        # out is simply missing rather than None.
        if delta_type == "text_delta":
            text = getattr(delta, "text", "") or ""
            if text:
                block.parts.append(text)
                return [TextChunk(text)]
        elif delta_type == "thinking_delta":
            thought = getattr(delta, "thinking", "") or ""
            if thought:
                block.parts.append(thought)
                return [ReasoningChunk(thought)]
        elif delta_type == "signature_delta":
            block.signature += getattr(delta, "signature", "") or ""
        elif delta_type == "input_json_delta":
            fragment = getattr(delta, "partial_json", "") or ""
            if fragment:
                block.parts.append(fragment)
                return [ToolCallChunk(block.tool_index, arguments=fragment)]
        return []

    def _take_usage(self, usage: Any) -> None:
        # message_delta counts are cumulative, so a later value replaces an earlier one.
        self.usage.update(_usage_fields(usage))

    def response(self) -> ModelResponse:
        ordered = [self.blocks[i] for i in sorted(self.blocks)]
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


def _usage_fields(usage: Any) -> dict[str, int]:
    """The counts present on an SDK usage object (fields absent or null are left out)."""
    fields: dict[str, int] = {}
    if usage is None:
        return fields
    for key in (
        "input_tokens",
        "output_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
    ):
        value = getattr(usage, key, None)
        if isinstance(value, int):
            fields[key] = value
    details = getattr(usage, "output_tokens_details", None)
    thinking = getattr(details, "thinking_tokens", None)
    if isinstance(thinking, int):
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


def _response_from_message(message: Any) -> ModelResponse:
    texts: list[str] = []
    reasoning: list[str] = []
    thinking: list[dict[str, Any]] = []
    calls: list[ToolCall] = []
    for block in getattr(message, "content", None) or ():
        block_type = getattr(block, "type", None)
        if block_type == "text":
            texts.append(block.text or "")
        elif block_type == "thinking":
            reasoning.append(block.thinking or "")
            thinking.append(
                {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
            )
        elif block_type == "redacted_thinking":
            thinking.append({"type": "redacted_thinking", "data": block.data})
        elif block_type == "tool_use":
            arguments = json.dumps(block.input) if block.input is not None else "{}"
            calls.append(ToolCall(id=block.id, name=block.name, arguments=arguments))
    return _response(
        "".join(texts),
        "\n\n".join(part for part in reasoning if part),
        thinking,
        calls,
        _usage_fields(getattr(message, "usage", None)),
        getattr(message, "stop_reason", None),
    )


# ---- errors --------------------------------------------------------------------------------


def classify_anthropic_error(
    exc: Exception, provider: str = "Anthropic", *, mid_stream: bool = False
) -> ModelError:
    """Map an SDK (or transport) exception to a `ModelError`.

    Classification uses the exception class, the HTTP status and the error `type` / `error_code`
    from the body. `mid_stream` says the response had already started, so a broken transport or an
    unreadable event means the stream broke rather than that the server was unreachable.
    """
    if isinstance(exc, ModelError):
        return exc
    import anthropic
    import httpx2

    if isinstance(exc, anthropic.APIStatusError):
        return _from_status_error(exc, provider)
    if isinstance(exc, anthropic.CredentialsError):
        # A configured credentials profile or token file that cannot be loaded.
        return ModelError(ErrorKind.AUTH, _describe(exc), provider=provider)
    if isinstance(exc, anthropic.APITimeoutError | httpx2.TimeoutException):
        return ModelError(ErrorKind.TIMEOUT, str(exc) or "request timed out", provider=provider)
    if isinstance(exc, anthropic.APIConnectionError):
        return ModelError(ErrorKind.CONNECTION, _describe(exc), provider=provider)
    if isinstance(exc, httpx2.TransportError | httpx2.StreamError):
        kind = ErrorKind.STREAM if mid_stream else ErrorKind.CONNECTION
        return ModelError(kind, _describe(exc), provider=provider)
    if mid_stream and isinstance(exc, ValueError | anthropic.APIError):
        # Undecodable event data (JSONDecodeError is a ValueError) or a malformed event.
        return ModelError(ErrorKind.STREAM, _describe(exc), provider=provider)
    return ModelError(ErrorKind.UNKNOWN, _describe(exc), provider=provider)


def _describe(exc: BaseException) -> str:
    text = str(exc)
    cause = exc.__cause__ or exc.__context__
    if cause is not None and str(cause) and str(cause) not in text:
        text = f"{text} ({cause})" if text else str(cause)
    return text or type(exc).__name__


def _from_status_error(exc: Any, provider: str) -> ModelError:
    status = int(exc.status_code)
    error_type = exc.type if isinstance(exc.type, str) else None
    error_code = exc.error_code if isinstance(exc.error_code, str) else None
    message = exc.api_message if isinstance(exc.api_message, str) else str(exc.message)
    kind = _status_kind(status, error_type, error_code, message)
    headers = getattr(getattr(exc, "response", None), "headers", None)
    request_id = exc.request_id
    if not request_id and isinstance(exc.body, Mapping):
        body_id = exc.body.get("request_id")
        request_id = body_id if isinstance(body_id, str) else None
    return ModelError(
        kind,
        message,
        provider=provider,
        # An SSE `error` event arrives on a 200 response; that status says nothing useful.
        status_code=status if status >= 400 else None,
        retry_after=parse_retry_after(headers),
        request_id=request_id,
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


class AnthropicMessagesModel:
    """A Claude (or Anthropic-compatible) model reached through the Messages API.

    The SDK's own retries are off: the agent's retry layer re-streams with backoff and honours
    `ModelError.retry_after`, and two layers of retries would multiply the wait.
    """

    def __init__(
        self,
        model_name: str,
        *,
        api_key: str | None,
        base_url: str | None = None,
        provider: str = "Anthropic",
        max_output_tokens: int = 16000,
        thinking_budget: int | None = None,
        timeout: float = 600.0,
        default_headers: dict[str, str] | None = None,
    ) -> None:
        self._name = model_name
        self._api_key = api_key
        self._base_url = base_url
        self._provider = provider
        self.max_output_tokens = max_output_tokens
        self.thinking_budget = thinking_budget
        self._timeout = timeout
        self._default_headers = dict(default_headers or {})

    @property
    def name(self) -> str:
        return self._name

    @property
    def provider(self) -> str:
        return self._provider

    @cached_property
    def client(self) -> AsyncAnthropic:
        import anthropic

        return anthropic.AsyncAnthropic(
            api_key=self._api_key,
            base_url=self._base_url,
            max_retries=0,
            timeout=self._timeout,
            default_headers=self._default_headers or None,
        )

    def build_params(self, request: ModelRequest) -> dict[str, Any]:
        return build_messages_params(
            request,
            model=self._name,
            max_output_tokens=self.max_output_tokens,
            thinking_budget=self.thinking_budget,
        )

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        params = self.build_params(request)
        try:
            events: Any = await self.client.messages.create(**params, stream=True)
        except TypeError as exc:
            self._raise_if_no_credentials(exc)
            raise
        except Exception as exc:
            raise classify_anthropic_error(exc, self._provider) from exc
        assembler = _StreamAssembler()
        try:
            async for event in events:
                for chunk in assembler.feed(event):
                    yield chunk
        except Exception as exc:
            raise classify_anthropic_error(exc, self._provider, mid_stream=True) from exc
        finally:
            # Also runs when the consumer stops early or is cancelled: frees the connection.
            await events.close()
        if not assembler.finished:
            # A proxy or the server closed the connection cleanly but early; without
            # message_stop the turn may be missing text or tool calls.
            raise ModelError(
                ErrorKind.STREAM, "stream ended before message_stop", provider=self._provider
            )
        yield assembler.response()

    async def complete(self, request: ModelRequest) -> ModelResponse:
        params = self.build_params(request)
        try:
            message = await self.client.messages.create(**params)
        except TypeError as exc:
            self._raise_if_no_credentials(exc)
            raise
        except Exception as exc:
            raise classify_anthropic_error(exc, self._provider) from exc
        return _response_from_message(message)

    def _raise_if_no_credentials(self, exc: TypeError) -> None:
        # The SDK raises a bare TypeError at request time when it finds no key anywhere. Any other
        # TypeError is a programming error and must stay one.
        client = self.client
        if (
            client.api_key is None
            and client.auth_token is None
            and getattr(client, "credentials", None) is None
        ):
            raise ModelError(
                ErrorKind.AUTH,
                "no API key configured (set ANTHROPIC_API_KEY)",
                provider=self._provider,
            ) from exc
