"""A stand-in for the Financial Datasets API built from its published OpenAPI description.

Every path in `financialdatasets/openapi.json` answers with a response synthesised from its schema
(the spec's own `example` values where it has them, type- and name-appropriate values elsewhere),
and `GET /financials?ticker=MSFT&period=annual&limit=1` answers with the real recorded MSFT reply.
Requests are checked the way the API would check them (the `X-API-KEY` header, required and
unknown query parameters) and recorded, so tests can assert headers, parameters and paging.
Tests can script replies per path to exercise errors, retries and paging.

The fixtures are read from `../shared/fixtures` (or `DEXTER_FIXTURES`) at test time and never
copied into the repository.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import httpx2

from tests.support.fixtures import fixtures_dir

TEST_KEY = "fd-test-key-5f3c9a"
BASE_URL = "https://api.financialdatasets.ai"


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None  # sent verbatim instead of `body` (e.g. malformed JSON)

    def response(self) -> httpx2.Response:
        headers = {"content-type": "application/json", **self.headers}
        content = self.raw if self.raw is not None else json.dumps(self.body).encode()
        return httpx2.Response(self.status, headers=headers, content=content)


Scripted = Reply | Callable[[httpx2.Request], Reply]


@cache
def load_spec() -> dict[str, Any]:
    path = fixtures_dir() / "financialdatasets" / "openapi.json"
    spec: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return spec


@cache
def recorded_msft() -> dict[str, Any]:
    """The recorded `/financials` reply for MSFT (annual, limit 1), as the API sent it.

    The recording is a cache envelope from the original whose `result` holds the unwrapped
    `financials` object as a JSON string.
    """
    path = fixtures_dir() / "financialdatasets" / "msft_financials_recorded.json"
    envelope = json.loads(path.read_text(encoding="utf-8"))
    return {"financials": json.loads(envelope["result"])}


def _norm(path: str) -> str:
    return path.rstrip("/") or "/"


class SpecExamples:
    """Schema-true example values from the OpenAPI description."""

    def __init__(self, spec: Mapping[str, Any]) -> None:
        self.spec = spec
        self.paths = {_norm(p): ops for p, ops in spec["paths"].items()}

    def deref(self, node: Any) -> Any:
        while isinstance(node, dict) and "$ref" in node:
            target: Any = self.spec
            for part in node["$ref"].lstrip("#/").split("/"):
                target = target[part]
            node = target
        return node

    def operation(self, method: str, path: str) -> dict[str, Any] | None:
        ops = self.paths.get(_norm(path))
        if not ops:
            return None
        op = ops.get(method.lower())
        return op if isinstance(op, dict) else None

    def parameters(self, op: Mapping[str, Any]) -> list[dict[str, Any]]:
        return [self.deref(p) for p in op.get("parameters", [])]

    def error_body(self, name: str) -> Any:
        response = self.spec["components"]["responses"][name]
        return response["content"]["application/json"]["example"]

    def schema(self, name: str) -> dict[str, Any]:
        found: dict[str, Any] = self.spec["components"]["schemas"][name]
        return found

    def response_example(
        self, method: str, path: str, context: Mapping[str, Any] | None = None
    ) -> Any:
        op = self.operation(method, path)
        if op is None:
            raise KeyError(f"{method} {path} is not in the spec")
        ok = self.deref(op["responses"]["200"])
        schema = ok["content"]["application/json"]["schema"]
        return self.example(schema, None, context or {})

    def example(self, schema: Any, name: str | None, context: Mapping[str, Any]) -> Any:
        schema = self.deref(schema)
        if not isinstance(schema, dict):
            return None
        if "example" in schema:
            return schema["example"]
        if "allOf" in schema:
            parts = [self.example(part, name, context) for part in schema["allOf"]]
            if all(isinstance(p, dict) for p in parts):
                merged: dict[str, Any] = {}
                for part in parts:
                    merged.update(part)
                return merged
            return parts[0]
        for key in ("oneOf", "anyOf"):
            if key in schema:
                return self.example(schema[key][0], name, context)
        kind = schema.get("type")
        if kind == "object" or "properties" in schema:
            props = schema.get("properties", {})
            return {prop: self.example(sub, prop, context) for prop, sub in props.items()}
        if kind == "array":
            return [self.example(schema.get("items", {}), name, context)]
        enum = [v for v in schema.get("enum", []) if v is not None]
        if enum:
            return enum[0]
        if kind == "string":
            return _string_example(name, schema.get("format"), context)
        if kind == "integer":
            return {"cik": 320193, "year": 2024, "quarter": 3}.get(name or "", 1200)
        if kind == "number":
            return 1234.5
        if kind == "boolean":
            return True
        return None


def _string_example(name: str | None, fmt: str | None, context: Mapping[str, Any]) -> str:
    if name == "ticker":
        return str(context.get("ticker") or "AAPL")
    by_name = {
        "cik": "0000320193",
        "filer_cik": "0001067983",
        "accession_number": "0000320193-24-000123",
        "currency": "USD",
        "fiscal_period": "2024-FY",
        "cusip": "037833100",
    }
    if name in by_name:
        return by_name[name]
    if fmt == "date":
        return "2024-09-28"
    if fmt == "date-time":
        return "2024-09-28T16:30:00-04:00"
    if fmt == "uri":
        return f"https://example.com/{name or 'resource'}"
    return f"example {name or 'text'}"


class FDMock:
    """An `httpx2.MockTransport` that answers like Financial Datasets; see the module docstring."""

    def __init__(self, *, api_key: str = TEST_KEY) -> None:
        self.examples = SpecExamples(load_spec())
        self.api_key = api_key
        self.requests: list[httpx2.Request] = []
        self._scripted: dict[tuple[str, str], list[Scripted]] = {}
        self.transport = httpx2.MockTransport(self._handle)

    def script(self, path: str, *replies: Scripted, method: str = "GET") -> None:
        """Queue replies for a path; each is used once, then the spec example answers again."""
        self._scripted.setdefault((method.upper(), _norm(path)), []).extend(replies)

    def to(self, path: str) -> list[httpx2.Request]:
        return [r for r in self.requests if _norm(r.url.path) == _norm(path)]

    def _handle(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        method = request.method.upper()
        path = _norm(request.url.path)
        op = self.examples.operation(method, path)
        # Paths declaring `security: []` are free; everything else needs the key.
        needs_key = op is None or op.get("security") != []
        if needs_key and request.headers.get("x-api-key") != self.api_key:
            return Reply(401, self.examples.error_body("UnauthorizedError")).response()
        queue = self._scripted.get((method, path))
        if queue:
            item = queue.pop(0)
            return (item(request) if callable(item) else item).response()
        params = request.url.params
        if (
            method == "GET"
            and path == "/financials"
            and _plain(params)
            == {
                "ticker": "MSFT",
                "period": "annual",
                "limit": "1",
            }
        ):
            return Reply(200, recorded_msft()).response()
        if op is None:
            return Reply(404, self.examples.error_body("NotFoundError")).response()
        problem = self._check_params(op, params)
        if problem:
            body = {"error": "Bad Request", "message": problem}
            return Reply(400, body).response()
        body = self.examples.response_example(method, path, {"ticker": params.get("ticker")})
        if method == "POST" and path == "/financials/search/screener":
            body = self._screener_rows(body, json.loads(request.content or b"{}"))
        return Reply(200, body).response()

    def _check_params(self, op: Mapping[str, Any], params: httpx2.QueryParams) -> str | None:
        declared = self.examples.parameters(op)
        known = {p["name"] for p in declared if p.get("in") == "query"}
        if "cursor" in params:
            return None  # a cursor carries the original request's parameters
        unknown = sorted(set(params.keys()) - known)
        if unknown:
            return f"Unknown query parameter(s): {', '.join(unknown)}"
        missing = [p["name"] for p in declared if p.get("required") and p["name"] not in params]
        if missing:
            return f"Missing required query parameter(s): {', '.join(missing)}"
        return None

    @staticmethod
    def _screener_rows(body: Any, request: Mapping[str, Any]) -> Any:
        # Result rows carry the filtered fields as extra properties, typed as strings in the spec.
        for row in body.get("search_results", []):
            for condition in request.get("filters", []):
                row[condition["field"]] = str(condition["value"])
        return body


def _plain(params: httpx2.QueryParams) -> dict[str, str]:
    return {key: params[key] for key in params.keys()}
