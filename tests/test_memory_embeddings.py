from __future__ import annotations

import asyncio
import hashlib
import re
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dexter.config import Settings
from dexter.memory import embeddings as emb
from dexter.memory.embeddings import (
    EmbeddingUnavailable,
    GeminiEmbedder,
    LocalEmbedder,
    OllamaEmbedder,
    OpenAIEmbedder,
    load_embedder,
)
from tests.support.wire_server import Reply, WireServer, json_reply


@pytest.fixture(scope="module")
def local() -> Iterator[LocalEmbedder]:
    embedder = LocalEmbedder()
    embedder.load()
    yield embedder


@pytest.fixture(autouse=True)
def _small_known_dims(monkeypatch: pytest.MonkeyPatch) -> None:
    # Tiny 3-d vectors from the wire server stand in for text-embedding-3-small's 1536; other
    # models learn their size from the first response.
    monkeypatch.setattr(emb, "KNOWN_DIMS", {"text-embedding-3-small": 3})


def _cos(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> float:
    return float(np.dot(a, b))


def _settings(tmp_path: Path, env: dict[str, str] | None = None, **memory: Any) -> Settings:
    return Settings(
        home=tmp_path, cwd=tmp_path, env=env or {}, file_data={"memory": memory} if memory else {}
    )


# ----------------------------------------------------------------------------- local model


async def test_local_gives_unit_float32_vectors(local: LocalEmbedder) -> None:
    vectors = await local.embed(["I own 200 shares of Nvidia", "Apple raised its dividend"])
    assert local.model_id == "local:all-MiniLM-L6-v2-int8"
    assert local.dims == 384
    assert vectors.shape == (2, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


async def test_local_empty_input(local: LocalEmbedder) -> None:
    vectors = await local.embed([])
    assert vectors.shape == (0, 384)
    assert vectors.dtype == np.float32


async def test_local_paraphrase_beats_unrelated(local: LocalEmbedder) -> None:
    a, b, c = await local.embed(
        [
            "I own 200 shares of Nvidia",
            "my NVDA position is 200 shares",
            "I prefer index funds for retirement",
        ]
    )
    assert _cos(a, b) > _cos(a, c) + 0.1


async def test_local_query_without_word_overlap_finds_its_paraphrase(
    local: LocalEmbedder,
) -> None:
    docs = [
        "I hold 200 shares of NVDA bought at $410",
        "I prefer conservative DCF assumptions with a 10% discount rate",
        "Apple reported record iPhone revenue",
        "My emergency fund covers six months of expenses",
        "I prefer index funds for retirement",
    ]
    queries = [
        "which chipmaker stake do we own",
        "how cautious should valuation models be",
        "smartphone sales results",
        "cash reserve for rainy days",
    ]
    expected = [0, 1, 2, 3]
    for query, answer in zip(queries, expected, strict=True):
        words = set(re.findall(r"\w+", query.lower()))
        assert not words & set(re.findall(r"\w+", docs[answer].lower()))
    doc_vectors = await local.embed(docs)
    query_vectors = await local.embed(queries)
    best = (query_vectors @ doc_vectors.T).argmax(axis=1)
    assert best.tolist() == expected


async def test_local_batch_of_130_matches_single_embeds(local: LocalEmbedder) -> None:
    # Lengths vary, so batches are sorted by length and padded: order must come back intact.
    texts = [f"note {i}: I hold T{i}" + " and more" * (i % 7) for i in range(130)]
    vectors = await local.embed(texts)
    assert vectors.shape == (130, 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    # Batching and padding do not change a text's vector.
    for i in (0, 6, 63, 64, 129):
        single = await local.embed([texts[i]])
        np.testing.assert_allclose(vectors[i], single[0], atol=1e-4)
    # Long inputs are truncated, not rejected.
    long = await local.embed(["revenue " * 2000])
    assert long.shape == (1, 384)


async def test_local_embed_runs_off_the_event_loop(local: LocalEmbedder) -> None:
    ticks = 0
    stop = asyncio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            await asyncio.sleep(0.001)

    task = asyncio.create_task(ticker())
    await local.embed([f"sentence number {i} about markets" for i in range(200)])
    stop.set()
    await task
    assert ticks > 3


def test_packaged_model_sha256_is_pinned() -> None:
    path = emb.default_model_path()
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert digest == emb.MINILM_SHA256
    assert digest.startswith("8199be6f")
    emb.verify_sha256(path, emb.MINILM_SHA256)  # passes (and is cached)
    assert emb.default_tokenizer_path().is_file()


def test_tampered_model_fails_the_sha256_check(tmp_path: Path) -> None:
    fake = tmp_path / "model.onnx"
    fake.write_bytes(b"not the model")
    embedder = LocalEmbedder(model_path=fake)
    with pytest.raises(EmbeddingUnavailable, match="integrity check"):
        embedder.load()
    assert not embedder.loaded


def test_unloadable_model_without_hash_check(tmp_path: Path) -> None:
    fake = tmp_path / "model.onnx"
    fake.write_bytes(b"garbage")
    with pytest.raises(EmbeddingUnavailable, match="onnxruntime could not load the model"):
        LocalEmbedder(model_path=fake, expected_sha256=None).load()


def test_missing_model_file(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingUnavailable, match="not found"):
        LocalEmbedder(model_path=tmp_path / "nope.onnx").load()


# ----------------------------------------------------------------------------- remote


def _openai_body(rows: list[list[float]]) -> dict[str, Any]:
    # Deliberately out of order: clients must sort by index.
    items = [{"object": "embedding", "index": i, "embedding": r} for i, r in enumerate(rows)]
    return {"object": "list", "data": list(reversed(items)), "model": "m"}


async def test_openai_request_shape_and_parsing(wire_server: WireServer) -> None:
    wire_server.push(
        json_reply(_openai_body([[3.0, 4.0, 0.0], [0.0, 0.0, 2.0]])),
        json_reply(_openai_body([[1.0, 0.0, 0.0]])),
    )
    embedder = OpenAIEmbedder(
        "sk-test", "text-embedding-3-small", base_url=wire_server.url + "/v1/", batch_size=2
    )
    assert embedder.model_id == "openai:text-embedding-3-small"
    vectors = await embedder.embed(["a", "b", "c"])
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(vectors, [[0.6, 0.8, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
    assert embedder.dims == 3
    first, second = wire_server.requests
    assert (first.method, first.path) == ("POST", "/v1/embeddings")
    assert first.headers["authorization"] == "Bearer sk-test"
    assert first.json() == {
        "model": "text-embedding-3-small",
        "input": ["a", "b"],
        "encoding_format": "float",
    }
    assert second.json()["input"] == ["c"]


async def test_openai_empty_input_makes_no_request(wire_server: WireServer) -> None:
    embedder = OpenAIEmbedder("sk-test", base_url=wire_server.url)
    vectors = await embedder.embed([])
    assert vectors.shape == (0, 3)
    assert wire_server.requests == []


@pytest.mark.parametrize(
    ("status", "needle"),
    [(401, "OPENAI_API_KEY"), (500, "HTTP 500"), (429, "rate limited"), (404, "model name")],
)
async def test_openai_http_errors(wire_server: WireServer, status: int, needle: str) -> None:
    wire_server.push(json_reply({"error": {"message": "Incorrect API key"}}, status=status))
    embedder = OpenAIEmbedder("sk-bad", base_url=wire_server.url)
    with pytest.raises(EmbeddingUnavailable) as info:
        await embedder.embed(["x"])
    assert needle in str(info.value)
    assert f"HTTP {status}" in str(info.value)
    assert "Incorrect API key" in str(info.value)


async def test_openai_bad_shapes(wire_server: WireServer) -> None:
    wire_server.push(
        json_reply({"data": []}),
        json_reply({"data": [{"index": 0, "embedding": [1.0, 2.0]}]}),
        Reply(body=b"<html>proxy</html>"),
    )
    embedder = OpenAIEmbedder("sk", base_url=wire_server.url)
    with pytest.raises(EmbeddingUnavailable, match="unexpected shape"):
        await embedder.embed(["x"])
    with pytest.raises(EmbeddingUnavailable, match="expected 3"):
        await embedder.embed(["x"])
    with pytest.raises(EmbeddingUnavailable, match="other than JSON"):
        await embedder.embed(["x"])


async def test_unreachable_server() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    embedder = OllamaEmbedder(base_url=f"http://127.0.0.1:{port}")
    with pytest.raises(EmbeddingUnavailable, match=r"could not be reached.*OLLAMA_BASE_URL"):
        await embedder.embed(["x"])


async def test_timeout(wire_server: WireServer) -> None:
    wire_server.push(Reply(headers={"content-length": "100"}, chunks=[b"{"], stall=True))
    embedder = OpenAIEmbedder("sk", base_url=wire_server.url, timeout=0.3)
    with pytest.raises(EmbeddingUnavailable, match=r"timed out after 0\.3 s"):
        await embedder.embed(["x"])


async def test_gemini_uses_openai_compatible_endpoint(wire_server: WireServer) -> None:
    wire_server.push(json_reply(_openai_body([[0.0, 5.0]])))
    embedder = GeminiEmbedder("AIza-test", base_url=wire_server.url + "/v1beta/openai")
    assert embedder.model_id == "gemini:gemini-embedding-001"
    vectors = await embedder.embed(["hello"])
    np.testing.assert_allclose(vectors, [[0.0, 1.0]])
    assert embedder.dims == 2
    request = wire_server.requests[0]
    assert request.path == "/v1beta/openai/embeddings"
    assert request.headers["authorization"] == "Bearer AIza-test"
    assert request.json()["model"] == "gemini-embedding-001"


async def test_gemini_401_names_the_key(wire_server: WireServer) -> None:
    wire_server.push(json_reply([{"error": {"message": "API key not valid"}}], status=401))
    embedder = GeminiEmbedder("bad", base_url=wire_server.url)
    with pytest.raises(EmbeddingUnavailable, match="GOOGLE_API_KEY"):
        await embedder.embed(["x"])


async def test_ollama_native_embed(wire_server: WireServer) -> None:
    wire_server.push(json_reply({"model": "nomic-embed-text", "embeddings": [[2.0, 0.0], [1, 1]]}))
    embedder = OllamaEmbedder("nomic-embed-text", base_url=wire_server.url + "/v1")
    assert embedder.model_id == "ollama:nomic-embed-text"
    vectors = await embedder.embed(["a", "b"])
    np.testing.assert_allclose(vectors, [[1.0, 0.0], [2**-0.5, 2**-0.5]], atol=1e-6)
    request = wire_server.requests[0]
    assert request.path == "/api/embed"
    assert request.json() == {"model": "nomic-embed-text", "input": ["a", "b"]}
    assert "authorization" not in request.headers


async def test_ollama_missing_model_says_pull(wire_server: WireServer) -> None:
    wire_server.push(json_reply({"error": 'model "nomic-embed-text" not found'}, status=404))
    embedder = OllamaEmbedder(base_url=wire_server.url)
    with pytest.raises(EmbeddingUnavailable, match="ollama pull nomic-embed-text"):
        await embedder.embed(["x"])


# ----------------------------------------------------------------------------- choosing


def test_load_default_is_local(tmp_path: Path) -> None:
    embedder, why = load_embedder(_settings(tmp_path))
    assert isinstance(embedder, LocalEmbedder)
    assert embedder.loaded
    assert why == "local MiniLM (offline)"


def test_load_none(tmp_path: Path) -> None:
    embedder, why = load_embedder(_settings(tmp_path, embeddingProvider="none"))
    assert embedder is None
    assert why.startswith("keyword-only: ")


def test_env_overrides_settings(tmp_path: Path) -> None:
    settings = _settings(tmp_path, {"DEXTER_EMBEDDINGS": "none"}, embeddingProvider="local")
    embedder, why = load_embedder(settings)
    assert embedder is None
    assert "DEXTER_EMBEDDINGS" in why


def test_unloadable_local_model_degrades_to_keyword_only(tmp_path: Path) -> None:
    embedder, why = load_embedder(
        _settings(tmp_path), local_model_path=tmp_path / "missing" / "model.onnx"
    )
    assert embedder is None
    assert why.startswith("keyword-only: ")
    assert "not found" in why
    bad = tmp_path / "model.onnx"
    bad.write_bytes(b"junk")
    embedder, why = load_embedder(_settings(tmp_path), local_model_path=bad)
    assert embedder is None
    assert why.startswith("keyword-only: ") and "integrity" in why


def test_openai_needs_a_key(tmp_path: Path) -> None:
    embedder, why = load_embedder(_settings(tmp_path, embeddingProvider="openai"))
    assert embedder is None
    assert why.startswith("keyword-only: ") and "OPENAI_API_KEY" in why
    settings = _settings(tmp_path, {"OPENAI_API_KEY": "your-key-here"}, embeddingProvider="openai")
    assert load_embedder(settings)[0] is None


async def test_openai_from_settings_end_to_end(tmp_path: Path, wire_server: WireServer) -> None:
    settings = _settings(
        tmp_path,
        {"OPENAI_API_KEY": "sk-real", "OPENAI_BASE_URL": wire_server.url + "/v1"},
        embeddingProvider="openai",
        embeddingModel="text-embedding-3-large",
    )
    embedder, why = load_embedder(settings)
    assert isinstance(embedder, OpenAIEmbedder)
    assert embedder.model_id == "openai:text-embedding-3-large"
    assert why == "OpenAI text-embedding-3-large (remote)"
    wire_server.push(json_reply(_openai_body([[1.0, 1.0]])))
    vectors = await embedder.embed(["x"])
    assert vectors.shape == (1, 2)
    assert wire_server.requests[0].path == "/v1/embeddings"
    assert wire_server.requests[0].json()["model"] == "text-embedding-3-large"


def test_env_override_with_model(tmp_path: Path) -> None:
    settings = _settings(
        tmp_path, {"DEXTER_EMBEDDINGS": "ollama:mxbai-embed-large", "OLLAMA_BASE_URL": "h:1/v1"}
    )
    embedder, why = load_embedder(settings)
    assert isinstance(embedder, OllamaEmbedder)
    assert embedder.model_id == "ollama:mxbai-embed-large"
    assert embedder.url == "http://h:1/api/embed"
    assert "Ollama mxbai-embed-large" in why


def test_gemini_choice(tmp_path: Path) -> None:
    embedder, why = load_embedder(_settings(tmp_path, embeddingProvider="gemini"))
    assert embedder is None and "GOOGLE_API_KEY" in why
    settings = _settings(tmp_path, {"GOOGLE_API_KEY": "AIza1"}, embeddingProvider="Gemini")
    embedder, why = load_embedder(settings)
    assert isinstance(embedder, GeminiEmbedder)
    assert embedder.url == emb.DEFAULT_GEMINI_BASE_URL + "/embeddings"
    assert why == "Gemini gemini-embedding-001 (remote)"


def test_unknown_provider(tmp_path: Path) -> None:
    embedder, why = load_embedder(_settings(tmp_path, embeddingProvider="cohere"))
    assert embedder is None
    assert why.startswith("keyword-only: unknown embedding provider 'cohere'")


def test_loading_the_local_model_writes_nothing_outside_the_dexter_home(tmp_path: Path) -> None:
    """onnxruntime writes a device id under ~/.cache when imported, unless told not to."""
    import os
    import subprocess
    import sys

    user = tmp_path / "user"
    user.mkdir()
    env = {
        k: v for k, v in os.environ.items() if k not in ("ORT_DISABLE_TELEMETRY", "XDG_CACHE_HOME")
    }
    env |= {"HOME": str(user), "DEXTER_HOME": str(tmp_path / "home")}
    code = "from dexter.memory.embeddings import LocalEmbedder; LocalEmbedder().load()"
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=120)
    assert sorted(str(p.relative_to(user)) for p in user.rglob("*")) == []
