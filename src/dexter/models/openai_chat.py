"""The OpenAI Chat Completions wire protocol, spoken through the official `openai` SDK.

One class covers OpenAI itself and every OpenAI-compatible host (DeepSeek, Moonshot, xAI, Gemini's
compatibility endpoint, OpenRouter, Ollama, LM Studio, vLLM): the provider layer supplies the base
URL, key and quirks; this module only translates between the wire format and our own types.

The SDK is imported lazily: it costs about 0.4 s, and `dexter --help` must not pay for it.
Retries are not done here (the client is built with `max_retries=0`): the retry layer re-streams
with backoff, so this module's job is to raise a well-classified `ModelError`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
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
    import httpx2
    from openai import AsyncOpenAI

__all__ = ["REASONING_FIELDS", "OpenAIChatModel", "classify_openai_error", "parse_retry_after"]

# Hosts disagree on where visible reasoning goes: DeepSeek, vLLM and Moonshot use
# `reasoning_content`, OpenRouter and Ollama use `reasoning`. Neither is in the SDK's types, so
# both arrive as pydantic extras.
REASONING_FIELDS: tuple[str, ...] = ("reasoning_content", "reasoning")

# Keys in AssistantMessage.provider_data owned by this module.
_PD_REASONING_FIELD = "reasoning_field"
_PD_PROVIDER = "provider"

_CONTEXT_OVERFLOW_CODES = frozenset({"context_length_exceeded", "string_above_max_length"})
_QUOTA_CODES = frozenset({"insufficient_quota", "billing_hard_limit_reached"})
_RATE_LIMIT_CODES = frozenset({"rate_limit_exceeded"})
# Only consulted for 4xx rejections that carry no structured code: several compatible hosts
# (vLLM, OpenRouter, Moonshot, Gemini) report an oversized prompt as a plain 400 with prose.
# Limiting the text match to "the request was rejected" keeps rate-limit prose such as
# "tokens per minute" from ever being read as an overflow.
_OVERFLOW_PHRASES = (
    "maximum context length",
    "context length",
    "context window",
    "context_length_exceeded",
    "prompt is too long",
    "exceeded model token limit",
    "exceeds the maximum number of tokens",
)
_MAX_MESSAGE_CHARS = 500


# ---- error classification ----------------------------------------------------------------


def _shorten(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MAX_MESSAGE_CHARS else text[:_MAX_MESSAGE_CHARS] + "..."


def _body_field(body: object, key: str) -> str | None:
    if isinstance(body, Mapping):
        value = body.get(key)
        if value is not None and value != "":
            return str(value)
    return None


def _api_message(exc: Any, body: object) -> str:
    """The API's own words, not the SDK's "Error code: 429 - {...}" wrapper."""
    message = _body_field(body, "message")
    if message is None and isinstance(body, str) and body.strip():
        message = body
    if message is None:
        message = str(getattr(exc, "message", "") or exc)
    return _shorten(message)


def _kind_for_code(code: str | None) -> ErrorKind | None:
    """An error code from a body without an HTTP status (an error event inside a stream)."""
    if not code:
        return None
    if code.isdigit():
        # OpenRouter reports mid-stream failures with the HTTP status as the code.
        return _kind_for_status(int(code), None, "")
    if code in _CONTEXT_OVERFLOW_CODES:
        return ErrorKind.CONTEXT_OVERFLOW
    if code in _QUOTA_CODES:
        return ErrorKind.BILLING
    if code in _RATE_LIMIT_CODES:
        return ErrorKind.RATE_LIMIT
    if code == "server_error":
        return ErrorKind.SERVER
    return None


def _kind_for_status(status: int, code: str | None, message: str) -> ErrorKind:
    if status in (401, 403):
        return ErrorKind.AUTH
    if status == 402:
        return ErrorKind.BILLING
    if status == 404:
        return ErrorKind.NOT_FOUND
    if status == 413:
        return ErrorKind.CONTEXT_OVERFLOW
    if status == 429:
        return ErrorKind.BILLING if code in _QUOTA_CODES else ErrorKind.RATE_LIMIT
    if status == 408:
        return ErrorKind.TIMEOUT
    if status == 409:
        # A lock or concurrency conflict on the host's side; the SDK's own policy retries it.
        return ErrorKind.SERVER
    if status in (503, 529):
        return ErrorKind.OVERLOADED
    if status >= 500:
        return ErrorKind.SERVER
    if 400 <= status < 500:
        if code in _CONTEXT_OVERFLOW_CODES:
            return ErrorKind.CONTEXT_OVERFLOW
        if code in _QUOTA_CODES:
            return ErrorKind.BILLING
        # A numeric code (vLLM echoes the status there) says nothing more than the status.
        has_code = bool(code) and not str(code).isdigit()
        if not has_code and any(p in message.lower() for p in _OVERFLOW_PHRASES):
            return ErrorKind.CONTEXT_OVERFLOW
        return ErrorKind.BAD_REQUEST
    return ErrorKind.UNKNOWN


def _error_code(exc: Any, body: object) -> str | None:
    # OpenAI puts the machine-readable reason in `code`, some hosts only in `type`
    # (`insufficient_quota` appears in both on OpenAI itself).
    code = getattr(exc, "code", None) or _body_field(body, "code")
    if code and (code in _QUOTA_CODES or code in _CONTEXT_OVERFLOW_CODES or code.isdigit()):
        return str(code)
    kind = getattr(exc, "type", None) or _body_field(body, "type")
    if kind and (kind in _QUOTA_CODES or kind in _CONTEXT_OVERFLOW_CODES):
        return str(kind)
    return str(code) if code else None


def classify_openai_error(
    exc: BaseException,
    provider: str,
    *,
    mid_stream: bool = False,
    response_headers: Mapping[str, str] | None = None,
) -> ModelError:
    """Map an exception from the `openai` SDK (or its HTTP layer) to a `ModelError`.

    Classification uses the HTTP status and the error body's `code`/`type`; prose is consulted
    only for code-less 4xx rejections that may be a context overflow. `mid_stream` marks failures
    raised while iterating an already-open stream: those are STREAM, because the turn broke off
    part-way. `response_headers` are the open stream's headers, used for the request id.
    """
    import openai

    if isinstance(exc, ModelError):
        return exc
    request_id = None
    if response_headers is not None:
        request_id = response_headers.get("x-request-id") or response_headers.get("request-id")

    if isinstance(exc, openai.APIStatusError):
        body = exc.body
        headers = exc.response.headers
        code = _error_code(exc, body)
        message = _api_message(exc, body)
        return ModelError(
            _kind_for_status(exc.status_code, code, message),
            message,
            provider=provider,
            status_code=exc.status_code,
            retry_after=parse_retry_after(headers),
            request_id=exc.request_id or headers.get("request-id") or request_id,
        )
    if isinstance(exc, openai.APITimeoutError):
        kind = ErrorKind.STREAM if mid_stream else ErrorKind.TIMEOUT
        return ModelError(kind, _shorten(exc.message), provider=provider, request_id=request_id)
    if isinstance(exc, openai.APIConnectionError):
        kind = ErrorKind.STREAM if mid_stream else ErrorKind.CONNECTION
        detail = exc.message
        if exc.__cause__ is not None and str(exc.__cause__):
            detail = f"{detail} ({exc.__cause__})"
        return ModelError(kind, _shorten(detail), provider=provider, request_id=request_id)
    if isinstance(exc, openai.APIError):
        # No HTTP status: the host sent an error event inside a 200 stream (or body).
        body = exc.body
        code = _error_code(exc, body)
        kind = _kind_for_code(code) or ErrorKind.STREAM
        status = int(code) if code and code.isdigit() else None
        return ModelError(
            kind,
            _api_message(exc, body),
            provider=provider,
            status_code=status,
            request_id=_body_field(body, "request_id") or request_id,
        )

    import httpx2

    if isinstance(exc, httpx2.TimeoutException):
        kind = ErrorKind.STREAM if mid_stream else ErrorKind.TIMEOUT
        return ModelError(kind, _shorten(str(exc) or "timed out"), provider=provider)
    if isinstance(exc, httpx2.HTTPError):
        kind = ErrorKind.STREAM if mid_stream else ErrorKind.CONNECTION
        return ModelError(kind, _shorten(str(exc) or type(exc).__name__), provider=provider)
    if mid_stream and isinstance(exc, ValueError):
        # A chunk that is not valid JSON: the stream is unusable from here on.
        return ModelError(
            ErrorKind.STREAM, _shorten(f"malformed stream chunk: {exc}"), provider=provider
        )
    return ModelError(
        ErrorKind.UNKNOWN, _shorten(str(exc) or type(exc).__name__), provider=provider
    )


# ---- request mapping ---------------------------------------------------------------------


def _wire_message(message: Message, provider: str) -> dict[str, Any]:
    if isinstance(message, SystemMessage):
        return {"role": "system", "content": message.content}
    if isinstance(message, UserMessage):
        return {"role": "user", "content": message.content}
    if isinstance(message, ToolMessage):
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    wire: dict[str, Any] = {"role": "assistant"}
    if message.tool_calls:
        # Some hosts reject "" next to tool calls; null is what the API itself returns.
        wire["content"] = message.content or None
        wire["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in message.tool_calls
        ]
    else:
        wire["content"] = message.content
    reasoning_field = message.provider_data.get(_PD_REASONING_FIELD)
    source = message.provider_data.get(_PD_PROVIDER)
    # DeepSeek's thinking mode answers 400 on a tool turn whose reasoning is not sent back. The
    # loop blanks reasoning on old turns to save context; the key stays (empty) on tool turns so
    # the host still sees the field. Only echo to the host that produced it: after a
    # mid-conversation model switch, strict hosts reject unknown message keys.
    if (
        isinstance(reasoning_field, str)
        and reasoning_field
        and (message.reasoning or message.tool_calls)
        and (source is None or source == provider)
    ):
        wire[reasoning_field] = message.reasoning
    return wire


def _wire_tools(request: ModelRequest) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": dict(tool.parameters),
            },
        }
        for tool in request.tools
    ]


# ---- response mapping --------------------------------------------------------------------


def _int(value: object) -> int:
    # The SDK builds responses without validation, so "int" fields may be None or absent.
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _extras(obj: object) -> dict[str, Any]:
    extra = getattr(obj, "model_extra", None)
    return extra if isinstance(extra, dict) else {}


def _usage(raw: object) -> Usage:
    if raw is None:
        return Usage()
    extra = _extras(raw)
    prompt_details = getattr(raw, "prompt_tokens_details", None)
    completion_details = getattr(raw, "completion_tokens_details", None)
    cached = _int(getattr(prompt_details, "cached_tokens", None))
    if not cached:
        # DeepSeek and Moonshot report cache hits outside `prompt_tokens_details`.
        cached = _int(extra.get("prompt_cache_hit_tokens")) or _int(extra.get("cached_tokens"))
    return Usage(
        input_tokens=_int(getattr(raw, "prompt_tokens", None)),
        output_tokens=_int(getattr(raw, "completion_tokens", None)),
        cached_tokens=cached,
        reasoning_tokens=_int(getattr(completion_details, "reasoning_tokens", None)),
    )


def _stop_reason(finish_reason: object, has_tool_calls: bool) -> str:
    reason = finish_reason if isinstance(finish_reason, str) and finish_reason else None
    if has_tool_calls and reason in (None, "stop"):
        # Ollama and Gemini's compatibility layer say "stop" even when they called tools;
        # the loop should not have to know that.
        return "tool_calls"
    return reason or "stop"


def _normalise_arguments(raw: str) -> str:
    # A tool without parameters may come back with no argument text at all; sending "" back in
    # the history is rejected by hosts that parse it, and "{}" means the same thing.
    return raw if raw.strip() else "{}"


@dataclass
class _PendingCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass
class _StreamState:
    """What the stream has said so far; turned into the final AssistantMessage at the end."""

    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    reasoning_field: str | None = None
    calls: dict[int, _PendingCall] = field(default_factory=dict)
    finish_reason: str | None = None
    usage: Usage | None = None
    saw_choice: bool = False

    def slot_for(self, index: object, call_id: str | None) -> int:
        if isinstance(index, int):
            return index
        # Some compatibility layers omit `index` and send each call whole; match by id, or
        # treat it as a new call.
        if call_id:
            for slot, pending in self.calls.items():
                if pending.id == call_id:
                    return slot
        return max(self.calls, default=-1) + 1

    @property
    def has_content(self) -> bool:
        return bool(self.text or self.reasoning or self.calls)


class OpenAIChatModel:
    """A model reached through the Chat Completions API (`POST {base_url}/chat/completions`).

    `provider` is the display name used in error messages. `reasoning_field` pins the delta key
    that carries visible reasoning; when unset both known keys are accepted. `extra_body` is
    merged into every request body (e.g. DeepSeek's `{"thinking": {"type": "enabled"}}`).
    """

    def __init__(
        self,
        model_name: str,
        *,
        api_key: str | None,
        base_url: str | None = None,
        provider: str = "OpenAI",
        reasoning_field: str | None = None,
        extra_body: dict[str, Any] | None = None,
        default_headers: dict[str, str] | None = None,
        timeout: float = 600.0,
        http_client: httpx2.AsyncClient | None = None,
        endpoint_label: str | None = None,
    ) -> None:
        self._model_name = model_name
        # Who error messages name: "OpenAI" only when it really is OpenAI's own endpoint.
        self._error_label = endpoint_label or provider
        self._api_key = api_key
        self._base_url = base_url
        self._provider = provider
        self._reasoning_fields = (reasoning_field,) if reasoning_field else REASONING_FIELDS
        self._extra_body = dict(extra_body) if extra_body else None
        self._default_headers = dict(default_headers) if default_headers else None
        self._timeout = timeout
        self._http_client = http_client
        self._client: AsyncOpenAI | None = None

    @property
    def name(self) -> str:
        return self._model_name

    @property
    def provider(self) -> str:
        return self._provider

    @property
    def client(self) -> AsyncOpenAI:
        """The SDK client, built on first use so that importing this module stays cheap."""
        if self._client is None:
            import openai

            self._client = openai.AsyncOpenAI(
                # Keyless local servers (Ollama, LM Studio) ignore the key, but the SDK insists
                # on one; a placeholder also stops it from picking up OPENAI_API_KEY for a host
                # that key was never meant for.
                api_key=self._api_key or "unused",
                base_url=self._base_url,
                max_retries=0,
                timeout=self._timeout,
                default_headers=self._default_headers,
                http_client=self._http_client,
            )
        return self._client

    async def aclose(self) -> None:
        """Release the connection pool. An injected `http_client` belongs to its owner."""
        client, self._client = self._client, None
        if client is not None and self._http_client is None:
            await client.close()

    def _params(self, request: ModelRequest) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": self._model_name,
            "messages": [_wire_message(m, self._provider) for m in request.messages],
        }
        if request.tools:
            params["tools"] = _wire_tools(request)
            if request.tool_choice == "none":
                params["tool_choice"] = "none"
        if request.max_output_tokens is not None:
            params["max_completion_tokens"] = request.max_output_tokens
        if self._extra_body:
            params["extra_body"] = self._extra_body
        return params

    def _reasoning_from(self, obj: object) -> tuple[str, str] | None:
        extra = _extras(obj)
        for key in self._reasoning_fields:
            value = extra.get(key)
            if isinstance(value, str) and value:
                return key, value
        return None

    def _provider_data(self, reasoning_field: str | None) -> dict[str, Any]:
        if reasoning_field is None:
            return {}
        return {_PD_REASONING_FIELD: reasoning_field, _PD_PROVIDER: self._provider}

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        import openai

        params = self._params(request)
        try:
            stream: Any = await self.client.chat.completions.create(
                **params, stream=True, stream_options={"include_usage": True}
            )
        except openai.OpenAIError as exc:
            raise classify_openai_error(exc, self._error_label) from exc

        headers: Mapping[str, str] | None = getattr(
            getattr(stream, "response", None), "headers", None
        )
        state = _StreamState()
        iterator = stream.__aiter__()
        try:
            while True:
                # Only the fetch of the next chunk is guarded: an exception from our own mapping
                # code is a bug and must not be disguised as a retryable stream failure.
                try:
                    chunk = await iterator.__anext__()
                except StopAsyncIteration:
                    break
                except (openai.OpenAIError, ValueError) as exc:
                    raise classify_openai_error(
                        exc, self._error_label, mid_stream=True, response_headers=headers
                    ) from exc
                for piece in self._absorb(chunk, state):
                    yield piece
        finally:
            await stream.close()

        if not state.saw_choice and not state.has_content:
            raise ModelError(
                ErrorKind.STREAM,
                "the stream ended without any response",
                provider=self._provider,
            )
        if state.finish_reason is None:
            # Without a finish reason the connection closed before the model was done; a
            # half-sent tool call must not reach the tools.
            raise ModelError(
                ErrorKind.STREAM,
                "the stream ended before the model finished its turn",
                provider=self._provider,
            )
        calls = tuple(
            ToolCall(
                id=pending.id,
                name=pending.name,
                arguments=_normalise_arguments("".join(pending.arguments)),
            )
            for _, pending in sorted(state.calls.items())
        )
        message = AssistantMessage(
            content="".join(state.text),
            tool_calls=calls,
            reasoning="".join(state.reasoning),
            provider_data=self._provider_data(state.reasoning_field),
        )
        yield ModelResponse(
            message=message,
            usage=state.usage or Usage(),
            stop_reason=_stop_reason(state.finish_reason, bool(calls)),
        )

    def _absorb(self, chunk: Any, state: _StreamState) -> list[StreamChunk]:
        """Fold one `chat.completion.chunk` into `state`, returning the pieces to surface."""
        out: list[StreamChunk] = []
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            # Usually a final chunk with `choices: []`; some hosts attach it to the last choice.
            state.usage = _usage(usage)
        for choice in getattr(chunk, "choices", None) or ():
            if getattr(choice, "index", 0) not in (0, None):
                continue  # we never ask for n > 1
            state.saw_choice = True
            delta = getattr(choice, "delta", None)
            if delta is not None:
                reasoning = self._reasoning_from(delta)
                if reasoning is not None:
                    state.reasoning_field = state.reasoning_field or reasoning[0]
                    state.reasoning.append(reasoning[1])
                    out.append(ReasoningChunk(reasoning[1]))
                content = getattr(delta, "content", None)
                if isinstance(content, str) and content:
                    state.text.append(content)
                    out.append(TextChunk(content))
                for fragment in getattr(delta, "tool_calls", None) or ():
                    out.append(self._absorb_call(fragment, state))
            finish = getattr(choice, "finish_reason", None)
            if finish:
                state.finish_reason = str(finish)
        return out

    @staticmethod
    def _absorb_call(fragment: Any, state: _StreamState) -> ToolCallChunk:
        call_id = getattr(fragment, "id", None) or None
        function = getattr(fragment, "function", None)
        name = getattr(function, "name", None) or None
        arguments = getattr(function, "arguments", None) or ""
        slot = state.slot_for(getattr(fragment, "index", None), call_id)
        pending = state.calls.setdefault(slot, _PendingCall())
        # Some hosts repeat the id and name on every fragment; the first one wins.
        if call_id and not pending.id:
            pending.id = call_id
        if name and not pending.name:
            pending.name = name
        if arguments:
            pending.arguments.append(arguments)
        return ToolCallChunk(index=slot, id=call_id, name=name, arguments=arguments)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        import openai

        try:
            response: Any = await self.client.chat.completions.create(**self._params(request))
        except openai.OpenAIError as exc:
            raise classify_openai_error(exc, self._error_label) from exc

        choices: Sequence[Any] = getattr(response, "choices", None) or ()
        if not choices:
            # OpenRouter answers some upstream failures with a 200 whose body is an error.
            error = _extras(response).get("error")
            if isinstance(error, Mapping):
                code = _body_field(error, "code")
                return_kind = _kind_for_code(code) or ErrorKind.SERVER
                raise ModelError(
                    return_kind,
                    _shorten(_body_field(error, "message") or json.dumps(dict(error))),
                    provider=self._provider,
                    status_code=int(code) if code and code.isdigit() else None,
                )
            raise ModelError(
                ErrorKind.SERVER, "the response contained no choices", provider=self._provider
            )
        choice = choices[0]
        wire = getattr(choice, "message", None)
        reasoning = self._reasoning_from(wire) if wire is not None else None
        calls = tuple(
            ToolCall(
                id=getattr(call, "id", None) or "",
                name=getattr(getattr(call, "function", None), "name", None) or "",
                arguments=_normalise_arguments(
                    getattr(getattr(call, "function", None), "arguments", None) or ""
                ),
            )
            for call in (getattr(wire, "tool_calls", None) or ())
        )
        content = getattr(wire, "content", None)
        message = AssistantMessage(
            content=content if isinstance(content, str) else "",
            tool_calls=calls,
            reasoning=reasoning[1] if reasoning else "",
            provider_data=self._provider_data(reasoning[0] if reasoning else None),
        )
        return ModelResponse(
            message=message,
            usage=_usage(getattr(response, "usage", None)),
            stop_reason=_stop_reason(getattr(choice, "finish_reason", None), bool(calls)),
        )
