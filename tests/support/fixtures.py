"""Where the recorded SEC fixtures live. They stay outside the repository (see
../shared/fixtures/README.md), so tests find them through `DEXTER_FIXTURES` or next to the repo,
and skip with instructions when they are absent instead of failing or reaching the network.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

import pytest

_REPO_ROOT = Path(__file__).resolve().parents[2]


def fixtures_dir() -> Path:
    """The fixtures root; skips the calling test when it cannot be found."""
    configured = os.environ.get("DEXTER_FIXTURES")
    candidate = Path(configured) if configured else _REPO_ROOT.parent / "shared" / "fixtures"
    if not candidate.is_dir():
        pytest.skip(
            f"SEC fixtures not found at {candidate}; set DEXTER_FIXTURES or run "
            "`uv run python scripts/fetch_fixtures.py` to download them."
        )
    return candidate


def sec_mirror_file(url: str) -> Path:
    """The mirrored file for a real SEC URL: `sec-mirror/<host>/<path>`."""
    parts = urlsplit(url)
    return fixtures_dir() / "sec-mirror" / parts.netloc / parts.path.lstrip("/")
