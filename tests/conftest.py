from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.wire_server import WireServer, running_server


@pytest.fixture
def wire_server() -> Iterator[WireServer]:
    yield from running_server()


@pytest.fixture(autouse=True)
def _keyless_search_stays_local(monkeypatch: pytest.MonkeyPatch) -> None:
    # Key-less web search needs no key, so any agent a test builds from the environment binds it:
    # point it at a closed local port so that no test can ever reach the real search engine.
    monkeypatch.setenv("DEXTER_DUCKDUCKGO_BASE_URL", "http://127.0.0.1:9")
