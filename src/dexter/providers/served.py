"""What a model endpoint says it serves (`GET {base}/models`), for `dexter models` and
`dexter doctor --check`: one tiny request, no tokens spent."""

from __future__ import annotations

LIST_TIMEOUT = 3.0


def served_models(
    base_url: str, api_key: str | None, *, protocol: str = "openai", timeout: float = LIST_TIMEOUT
) -> tuple[list[str], str | None]:
    """Model ids the server lists, or [] and why it could not be asked. OpenAI-compatible
    servers (and Ollama) answer with a bearer key; Anthropic with `x-api-key`."""
    import httpx2

    headers: dict[str, str] = {}
    if api_key and protocol == "anthropic":
        from dexter.models.anthropic_messages import API_VERSION

        headers = {"x-api-key": api_key, "anthropic-version": API_VERSION}
    elif api_key:
        headers = {"authorization": f"Bearer {api_key}"}
    url = base_url.rstrip("/") + ("/v1/models" if protocol == "anthropic" else "/models")
    try:
        response = httpx2.get(url, headers=headers, timeout=timeout)
    except httpx2.HTTPError as error:
        return [], f"could not reach {url} ({type(error).__name__})"
    if response.status_code in (401, 403):
        return [], f"{url} refused the key (HTTP {response.status_code})"
    if response.status_code >= 400:
        return [], f"{url} answered HTTP {response.status_code}"
    try:
        data = response.json().get("data", [])
    except (ValueError, AttributeError):
        return [], f"{url} did not answer with a model list"
    return sorted(str(item["id"]) for item in data if isinstance(item, dict) and "id" in item), None


def blocks_calls(problem: str) -> bool:
    """Whether a `served_models` problem means model calls will fail too: nothing answers, or the
    key is refused. A server without a usable model list (HTTP 404, another shape) may still
    serve chat calls."""
    return problem.startswith("could not reach") or "refused the key" in problem


__all__ = ["LIST_TIMEOUT", "blocks_calls", "served_models"]
