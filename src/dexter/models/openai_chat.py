"""The OpenAI Chat Completions wire protocol, spoken directly over httpx2.

One class covers OpenAI itself and every OpenAI-compatible host (DeepSeek, Moonshot, xAI, Gemini's
compatibility endpoint, OpenRouter, Ollama, LM Studio, vLLM): the provider layer supplies the base
URL, key and quirks; this module only translates between the wire format and our own types.

The wire format is small (one POST, JSON or an SSE stream back), so it is spoken here (with the
plumbing in `dexter.models.wire`) rather than through the `openai` SDK, whose import alone cost
about 0.3 s of every `dexter ask`. httpx2 is imported lazily so that `dexter --help` pays for
neither. Retries are not done here: the retry
layer re-streams with backoff, so this module's job is to raise a well-classified `ModelError`.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from dexter.models.errors import ErrorKind, ModelError, parse_retry_after
from dexter.models.estimate import estimate_request, with_estimates
from dexter.models.profile import (
    OPENAI,
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
    "REASONING_FIELDS",
    "OpenAIChatModel",
    "classify_status",
    "classify_transport_error",
    "parse_retry_after",
]

_DEFAULT_BASE_URL = "https://api.openai.com/v1"

# Hosts disagree on where visible reasoning goes: DeepSeek, vLLM and Moonshot use
# `reasoning_content`, OpenRouter and Ollama use `reasoning`.
REASONING_FIELDS: tuple[str, ...] = ("reasoning_content", "reasoning")

# Keys in AssistantMessage.provider_data owned by this module.
_PD_REASONING_FIELD = "reasoning_field"
_PD_PROVIDER = "provider"

_CONTEXT_OVERFLOW_CODES = frozenset({"context_length_exceeded", "string_above_max_length"})
_QUOTA_CODES = frozenset({"insufficient_quota", "billing_hard_limit_reached"})
_RATE_LIMIT_CODES = frozenset({"rate_limit_exceeded"})
_MAX_MESSAGE_CHARS = 500


# ---- error classification ----------------------------------------------------------------


def _shorten(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MAX_MESSAGE_CHARS else text[:_MAX_MESSAGE_CHARS] + "..."


# OpenAI's reasoning models refuse any temperature but their own (HTTP 400); everything else
# on the OpenAI wire takes one.
_NO_TEMPERATURE_PREFIXES = ("o1", "o3", "o4", "gpt-5")


def takes_temperature(profile: ServerProfile, model: str) -> bool:
    """Whether to send a temperature: not to OpenAI's reasoning models at OpenAI's endpoint."""
    return not (
        profile.server_kind == "openai" and model.lower().startswith(_NO_TEMPERATURE_PREFIXES)
    )


def _body_field(body: object, key: str) -> str | None:
    if isinstance(body, Mapping):
        value = body.get(key)
        if value is not None and value != "":
            return str(value)
    return None


def _api_message(fallback: str, body: object) -> str:
    """The API's own words, not an "Error code: 429" wrapper."""
    message = _body_field(body, "message")
    if message is None and isinstance(body, str) and body.strip():
        message = body
    if message is None:
        message = fallback
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


def _kind_for_status(
    status: int, code: str | None, message: str, signals: OverflowSignals | None = None
) -> ErrorKind:
    signals = signals or OPENAI.overflow_signals
    kind = _plain_kind_for_status(status, code, message, signals)
    if (
        signals.phrases_anywhere
        and kind in (ErrorKind.BAD_REQUEST, ErrorKind.SERVER, ErrorKind.UNKNOWN)
        and signals.matches(message)
    ):
        # Local servers and proxies report an oversized prompt as any 4xx or a 500, in prose
        # (llama-server's exceed_context_size_error, Ollama, LiteLLM's wrapped exception).
        return ErrorKind.CONTEXT_OVERFLOW
    return kind


def _plain_kind_for_status(
    status: int, code: str | None, message: str, signals: OverflowSignals
) -> ErrorKind:
    if status in signals.statuses:
        return ErrorKind.CONTEXT_OVERFLOW
    if status in (401, 403):
        return ErrorKind.AUTH
    if status == 402:
        return ErrorKind.BILLING
    if status == 404:
        return ErrorKind.NOT_FOUND
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
        if not has_code and signals.matches(message):
            return ErrorKind.CONTEXT_OVERFLOW
        return ErrorKind.BAD_REQUEST
    return ErrorKind.UNKNOWN


def _error_code(body: object) -> str | None:
    # OpenAI puts the machine-readable reason in `code`, some hosts only in `type`
    # (`insufficient_quota` appears in both on OpenAI itself).
    code = _body_field(body, "code")
    if code and (code in _QUOTA_CODES or code in _CONTEXT_OVERFLOW_CODES or code.isdigit()):
        return code
    kind = _body_field(body, "type")
    if kind and (kind in _QUOTA_CODES or kind in _CONTEXT_OVERFLOW_CODES):
        return kind
    return code


def _request_id(headers: Mapping[str, str]) -> str | None:
    return headers.get("x-request-id") or headers.get("request-id")


def classify_status(
    status: int,
    headers: Mapping[str, str],
    content: bytes,
    provider: str,
    signals: OverflowSignals | None = None,
) -> ModelError:
    """Map a non-2xx reply to a `ModelError`.

    Classification uses the HTTP status and the error body's `code`/`type`; prose is consulted
    only for rejections that may be a context overflow, as the server's profile `signals` say
    (OpenAI's own: code-less 4xx only).
    """
    text = content.decode("utf-8", errors="replace").strip()
    body: object = text or None
    fallback = f"Error code: {status}"
    try:
        parsed = json.loads(text)
    except ValueError:
        pass
    else:
        # Most hosts wrap the details in {"error": {...}}; vLLM sends them at the top level.
        body = parsed.get("error", parsed) if isinstance(parsed, Mapping) else parsed
        message = body.get("message") if isinstance(body, Mapping) else None
        if isinstance(message, str) and message:
            fallback += f" - {message}"
    code = _error_code(body)
    message = _api_message(fallback, body)
    kind = _kind_for_status(status, code, message, signals)
    return ModelError(
        kind,
        message,
        provider=provider,
        status_code=status,
        retry_after=parse_retry_after(headers),
        request_id=_request_id(headers),
        context_window=_stated_window(body, message)
        if kind is ErrorKind.CONTEXT_OVERFLOW
        else None,
    )


def _stated_window(body: object, message: str) -> int | None:
    """The window an overflow rejection states: llama-server's `n_ctx` field, else the prose."""
    n_ctx = _get(body, "n_ctx")
    if isinstance(n_ctx, int) and not isinstance(n_ctx, bool) and n_ctx > 0:
        return n_ctx
    return window_from_error(message)


def _stream_error_event(error: object, provider: str, request_id: str | None) -> ModelError:
    """An error event inside a 200 stream (or body): the host failed after answering."""
    message = error.get("message") if isinstance(error, Mapping) else None
    if not isinstance(message, str) or not message:
        message = "An error occurred during streaming"
    code = _error_code(error)
    status = int(code) if code and code.isdigit() else None
    return ModelError(
        _kind_for_code(code) or ErrorKind.STREAM,
        _api_message(message, error),
        provider=provider,
        status_code=status,
        request_id=_body_field(error, "request_id") or request_id,
    )


def classify_transport_error(
    exc: BaseException, provider: str, *, mid_stream: bool = False
) -> ModelError:
    """Map an httpx2 failure (or a malformed chunk) to a `ModelError`.

    `mid_stream` marks failures raised while reading an already-open stream: those are STREAM,
    because the turn broke off part-way.
    """
    import httpx2

    if isinstance(exc, ModelError):
        return exc
    if isinstance(exc, httpx2.TimeoutException):
        if mid_stream:
            return ModelError(
                ErrorKind.STREAM, _shorten(str(exc) or "timed out"), provider=provider
            )
        return ModelError(ErrorKind.TIMEOUT, "Request timed out.", provider=provider)
    if isinstance(exc, httpx2.HTTPError | httpx2.StreamError):
        if mid_stream:
            return ModelError(
                ErrorKind.STREAM, _shorten(str(exc) or type(exc).__name__), provider=provider
            )
        detail = "Connection error."
        if str(exc):
            detail = f"{detail} ({exc})"
        return ModelError(ErrorKind.CONNECTION, _shorten(detail), provider=provider)
    if mid_stream and isinstance(exc, ValueError):
        # A chunk that is not valid JSON: the stream is unusable from here on.
        return ModelError(
            ErrorKind.STREAM, _shorten(f"malformed stream chunk: {exc}"), provider=provider
        )
    return ModelError(
        ErrorKind.UNKNOWN, _shorten(str(exc) or type(exc).__name__), provider=provider
    )


# ---- request mapping ---------------------------------------------------------------------


def _wire_message(
    message: Message, provider: str, tool_call_content: str | None = None
) -> dict[str, Any]:
    if isinstance(message, SystemMessage):
        return {"role": "system", "content": message.content}
    if isinstance(message, UserMessage):
        return {"role": "user", "content": message.content}
    if isinstance(message, ToolMessage):
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    wire: dict[str, Any] = {"role": "assistant"}
    if message.tool_calls:
        # OpenAI's own shape is null; llama-cpp-python refuses null with HTTP 500 and wants "".
        # The server's profile says which.
        wire["content"] = message.content or tool_call_content
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
    # Hosts send null, omit fields, or (rarely) send floats; only a real integer counts.
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _get(obj: object, key: str) -> Any:
    return obj.get(key) if isinstance(obj, Mapping) else None


def _usage(raw: object) -> Usage:
    if not isinstance(raw, Mapping):
        return Usage()
    cached = _int(_get(raw.get("prompt_tokens_details"), "cached_tokens"))
    if not cached:
        # DeepSeek and Moonshot report cache hits outside `prompt_tokens_details`.
        cached = _int(raw.get("prompt_cache_hit_tokens")) or _int(raw.get("cached_tokens"))
    return Usage(
        input_tokens=_int(raw.get("prompt_tokens")),
        output_tokens=_int(raw.get("completion_tokens")),
        cached_tokens=cached,
        reasoning_tokens=_int(_get(raw.get("completion_tokens_details"), "reasoning_tokens")),
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


class OpenAIChatModel(FollowsProfile):
    """A model reached through the Chat Completions API (`POST {base_url}/chat/completions`).

    `provider` is the display name used in error messages. `reasoning_field` pins the delta key
    that carries visible reasoning; when unset both known keys are accepted. `extra_body` is
    merged into every request body (e.g. DeepSeek's `{"thinking": {"type": "enabled"}}`).
    `profile` is what the server accepts (OpenAI's own dialect unless told otherwise; the provider
    layer passes the profile of the server actually configured, and `use_profile` replaces it once
    the server was probed). `context_window` is the window Dexter budgets with, used to scale the
    answer allowance when the profile states none of its own.
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
        profile: ServerProfile = OPENAI,
        context_window: int | None = None,
    ) -> None:
        self._model_name = model_name
        # Who error messages name: "OpenAI" only when it really is OpenAI's own endpoint.
        self._error_label = endpoint_label or provider
        self._follow(profile, context_window, classify_status, self._error_label)
        self._api_key = api_key
        self._base_url = base_url
        self._provider = provider
        self._reasoning_fields = (reasoning_field,) if reasoning_field else REASONING_FIELDS
        self._extra_body = dict(extra_body) if extra_body else None
        self._default_headers = dict(default_headers) if default_headers else None
        self._post = JsonPost(
            timeout=timeout,
            transport_error=partial(classify_transport_error, provider=self._error_label),
            status_error=self._status_error,
            http_client=http_client,
        )

    @property
    def name(self) -> str:
        return self._model_name

    @property
    def provider(self) -> str:
        return self._provider

    def _url(self) -> str:
        # The same default the SDK used, so an OPENAI_BASE_URL in the environment still counts.
        base = self._base_url or os.environ.get("OPENAI_BASE_URL") or _DEFAULT_BASE_URL
        return base.rstrip("/") + "/chat/completions"

    def _headers(self) -> dict[str, str]:
        headers = {
            # Keyless local servers (Ollama, LM Studio) ignore the key; a placeholder keeps
            # hosts that insist on the header happy and never sends a key meant for another host.
            "Authorization": f"Bearer {self._api_key or 'unused'}",
        }
        return merged_headers(headers, self._default_headers)

    async def aclose(self) -> None:
        """Release the connection pool. An injected `http_client` belongs to its owner."""
        await self._post.aclose()

    def _params(self, request: ModelRequest) -> dict[str, Any]:
        profile = self.profile
        content = profile.assistant_tool_call_content
        params: dict[str, Any] = {
            "model": self._model_name,
            "messages": [_wire_message(m, self._provider, content) for m in request.messages],
        }
        if request.tools:
            params["tools"] = _wire_tools(request)
            if request.tool_choice == "none":
                params["tool_choice"] = "none"
            elif isinstance(request.tool_choice, ForcedTool):
                params["tool_choice"] = {
                    "type": "function",
                    "function": {"name": request.tool_choice.name},
                }
        limit = output_limit(
            request.max_output_tokens,
            profile.default_output_tokens,
            self.context_window,
            estimate_request(request),
        )
        if limit is not None:
            params[profile.output_limit_param] = limit
        if request.temperature is not None and takes_temperature(profile, self._model_name):
            params["temperature"] = request.temperature
        if request.seed is not None:
            params["seed"] = request.seed
        if self._extra_body:
            params.update(self._extra_body)
        return params

    def _reasoning_from(self, obj: object) -> tuple[str, str] | None:
        for key in self._reasoning_fields:
            value = _get(obj, key)
            if isinstance(value, str) and value:
                return key, value
        return None

    def _provider_data(self, reasoning_field: str | None) -> dict[str, Any]:
        if reasoning_field is None:
            return {}
        return {_PD_REASONING_FIELD: reasoning_field, _PD_PROVIDER: self._provider}

    async def _send(self, params: dict[str, Any], *, stream: bool) -> httpx2.Response:
        return await self._post.send(self._url(), self._headers(), params, stream=stream)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        import httpx2

        params = self._params(request)
        params["stream"] = True
        if self.profile.reports_usage_in_stream:
            params["stream_options"] = {"include_usage": True}
        response = await self._send(params, stream=True)
        request_id = _request_id(response.headers)
        state = _StreamState()
        try:
            events = sse_events(response)
            while True:
                # Only the fetch and decoding of the next chunk is guarded: an exception from
                # our own mapping code is a bug and must not be disguised as a retryable
                # stream failure.
                try:
                    try:
                        event, data = await events.__anext__()
                    except StopAsyncIteration:
                        break
                    if data.startswith("[DONE]"):
                        break
                    chunk = json_object(data)
                except (httpx2.HTTPError, httpx2.StreamError, ValueError) as exc:
                    raise classify_transport_error(exc, self._error_label, mid_stream=True) from exc
                if chunk.get("error") and event in (None, "error"):
                    raise _stream_error_event(chunk["error"], self._error_label, request_id)
                if event is not None:
                    continue  # a named event of some extension; not a completion chunk
                for piece in self._absorb(chunk, state):
                    yield piece
        finally:
            await response.aclose()

        if not state.saw_choice and not state.has_content:
            if self.profile.overflow_signals.empty_stream:
                await self._explain_empty_stream(params)
            raise ModelError(
                ErrorKind.STREAM,
                "the stream ended without any response",
                provider=self._error_label,
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
            usage=with_estimates(state.usage, request, message),
            stop_reason=_stop_reason(state.finish_reason, bool(calls)),
        )

    async def _explain_empty_stream(self, params: dict[str, Any]) -> None:
        """Ask once more without streaming after a stream that said nothing at all.

        llama-cpp-python fails an over-long prompt inside its stream, which then closes empty;
        the same request without streaming is refused with a clean 400 that names the window,
        and raising that makes it an overflow to recover from instead of a broken stream to
        retry three times. The answer is limited to one token: a server that refuses nothing
        spends one token, and the empty stream is then reported as what it was.
        """
        probe = {k: v for k, v in params.items() if k not in ("stream", "stream_options")}
        probe[self.profile.output_limit_param] = 1
        response = await send_past_a_dropped_connection(lambda: self._send(probe, stream=False))
        await response.aclose()

    def _absorb(self, chunk: Mapping[str, Any], state: _StreamState) -> list[StreamChunk]:
        """Fold one `chat.completion.chunk` into `state`, returning the pieces to surface."""
        out: list[StreamChunk] = []
        usage = chunk.get("usage")
        if usage is not None:
            # Usually a final chunk with `choices: []`; some hosts attach it to the last choice.
            state.usage = _usage(usage)
        choices = chunk.get("choices")
        for choice in choices if isinstance(choices, list) else ():
            if not isinstance(choice, Mapping) or choice.get("index", 0) not in (0, None):
                continue  # we never ask for n > 1
            state.saw_choice = True
            delta = choice.get("delta")
            if isinstance(delta, Mapping):
                reasoning = self._reasoning_from(delta)
                if reasoning is not None:
                    state.reasoning_field = state.reasoning_field or reasoning[0]
                    state.reasoning.append(reasoning[1])
                    out.append(ReasoningChunk(reasoning[1]))
                content = delta.get("content")
                if isinstance(content, str) and content:
                    state.text.append(content)
                    out.append(TextChunk(content))
                fragments = delta.get("tool_calls")
                for fragment in fragments if isinstance(fragments, list) else ():
                    if isinstance(fragment, Mapping):
                        out.append(self._absorb_call(fragment, state))
            finish = choice.get("finish_reason")
            if finish:
                state.finish_reason = str(finish)
        return out

    @staticmethod
    def _absorb_call(fragment: Mapping[str, Any], state: _StreamState) -> ToolCallChunk:
        call_id = _str_or_none(fragment.get("id"))
        function = fragment.get("function")
        name = _str_or_none(_get(function, "name"))
        arguments = _str_or_none(_get(function, "arguments")) or ""
        slot = state.slot_for(fragment.get("index"), call_id)
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
        import httpx2

        response = await self._send(self._params(request), stream=False)
        try:
            payload = response.json()
        except ValueError as exc:
            raise ModelError(
                ErrorKind.SERVER,
                _shorten(f"the response was not valid JSON: {exc}"),
                provider=self._error_label,
                status_code=response.status_code,
                request_id=_request_id(response.headers),
            ) from exc
        except httpx2.HTTPError as exc:
            raise classify_transport_error(exc, self._error_label) from exc

        choices = _get(payload, "choices")
        if not isinstance(choices, list) or not choices:
            # OpenRouter answers some upstream failures with a 200 whose body is an error.
            error = _get(payload, "error")
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
        wire = _get(choice, "message")
        reasoning = self._reasoning_from(wire)
        raw_calls = _get(wire, "tool_calls")
        calls = tuple(
            ToolCall(
                id=_str_or_none(_get(call, "id")) or "",
                name=_str_or_none(_get(_get(call, "function"), "name")) or "",
                arguments=_normalise_arguments(
                    _str_or_none(_get(_get(call, "function"), "arguments")) or ""
                ),
            )
            for call in (raw_calls if isinstance(raw_calls, list) else ())
        )
        content = _get(wire, "content")
        message = AssistantMessage(
            content=content if isinstance(content, str) else "",
            tool_calls=calls,
            reasoning=reasoning[1] if reasoning else "",
            provider_data=self._provider_data(reasoning[0] if reasoning else None),
        )
        return ModelResponse(
            message=message,
            usage=with_estimates(_usage(_get(payload, "usage")), request, message),
            stop_reason=_stop_reason(_get(choice, "finish_reason"), bool(calls)),
        )


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
