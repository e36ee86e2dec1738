from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.wire_server import WireServer, running_server


@pytest.fixture
def wire_server() -> Iterator[WireServer]:
    yield from running_server()
