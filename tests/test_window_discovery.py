"""Context-window discovery over real HTTP to 127.0.0.1, and the per-model table."""

from __future__ import annotations

from dexter.providers.discovery import context_window, discover_context_window, known_window
from tests.support.wire_server import Reply, WireServer, json_reply

SHOW = {
    "modelfile": "...",
    "parameters": 'stop "<|eot_id|>"',
    "model_info": {
        "general.architecture": "llama",
        "llama.context_length": 131072,
        "llama.embedding_length": 4096,
    },
}


async def test_ollama_show_reports_the_trained_context_length(wire_server: WireServer) -> None:
    wire_server.push(json_reply(SHOW))
    window = await discover_context_window(
        "ollama", wire_server.url + "/v1", "llama3.1:8b", api_key=None
    )
    assert window == 131072
    request = wire_server.requests[0]
    assert (request.method, request.path) == ("POST", "/api/show")
    assert request.json() == {"model": "llama3.1:8b"}
    assert "authorization" not in request.headers


async def test_ollama_num_ctx_below_the_trained_length_wins(wire_server: WireServer) -> None:
    wire_server.push(json_reply({**SHOW, "parameters": "num_ctx 8192\nstop x"}))
    window = await discover_context_window(
        "ollama-cloud", wire_server.url, "llama3.1:8b", api_key="sk-test"
    )
    assert window == 8192
    assert wire_server.requests[0].headers["authorization"] == "Bearer sk-test"


async def test_openrouter_models_list_gives_the_models_length(wire_server: WireServer) -> None:
    wire_server.push(
        json_reply(
            {
                "data": [
                    {"id": "openai/gpt-4o", "context_length": 128000},
                    {"id": "google/gemini-2.5-pro", "context_length": 1048576},
                ]
            }
        )
    )
    window = await discover_context_window(
        "openrouter", wire_server.url + "/api/v1", "google/gemini-2.5-pro", api_key="or-key"
    )
    assert window == 1048576
    request = wire_server.requests[0]
    assert (request.method, request.path) == ("GET", "/api/v1/models")


async def test_unknown_openrouter_model_is_none(wire_server: WireServer) -> None:
    wire_server.push(json_reply({"data": [{"id": "openai/gpt-4o", "context_length": 128000}]}))
    assert (
        await discover_context_window("openrouter", wire_server.url, "x/unknown", api_key=None)
        is None
    )


async def test_server_errors_and_bad_json_are_none_not_exceptions(
    wire_server: WireServer,
) -> None:
    wire_server.push(
        json_reply({"error": "boom"}, status=500),
        Reply(headers={"content-type": "application/json"}, body=b"{not json"),
        json_reply({"model_info": {"general.architecture": "llama"}}),
    )
    for _ in range(3):
        assert (
            await discover_context_window("ollama", wire_server.url, "llama3", api_key=None) is None
        )


async def test_nothing_listening_is_none() -> None:
    window = await discover_context_window(
        "ollama", "http://127.0.0.1:9/v1", "llama3", api_key=None
    )
    assert window is None


async def test_providers_without_discovery_are_none_without_a_request(
    wire_server: WireServer,
) -> None:
    assert await discover_context_window("openai", wire_server.url, "gpt-4o", api_key="k") is None
    assert wire_server.requests == []


def test_table_matches_snapshots_tags_and_vendor_prefixes() -> None:
    assert known_window("gpt-4o-2024-08-06") == 128_000
    assert known_window("gpt-4.1-mini") == 1_047_576
    assert known_window("gpt-4-0613") == 8_192
    assert known_window("o3") == 200_000
    assert known_window("claude-sonnet-4-6") == 200_000
    assert known_window("openai/gpt-4o") == 128_000
    assert known_window("llama3.1:70b") == 131_072
    assert known_window("deepseek-chat") == 128_000
    assert known_window("gpt-4oo") is None
    assert known_window("my-local-model") is None


def test_context_window_prefers_user_override_then_table_then_default() -> None:
    assert context_window("openai", "gpt-4o", 1_047_576) == 128_000
    assert context_window("ollama", "my-local-model", 128_000) == 128_000
    assert context_window("openai", "gpt-4o", 1, overrides={"gpt-4o": 64_000}) == 64_000
