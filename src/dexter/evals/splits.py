"""The Finance Agent Benchmark's public splits: where each file lives, and its date anchor.

The repository holds no copy of the questions. Each split is one file at a pinned commit of
the public repository it was published in, checked against its SHA-256; it is downloaded on
first use and kept under DEXTER_HOME/evals/datasets/. `DEXTER_EVAL_DATA_URL` replaces
https://raw.githubusercontent.com (a mirror, or a local server in tests): the file is asked
for at `<base>/<owner>/<repo>/<commit>/<path>`.

The date anchors are the benchmark's own harnesses': v1.1 tells the agent it is April 7, 2025,
v2 March 1, 2026. A run takes its split's anchor as its `--as-of` unless told otherwise.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from dexter.evals.dataset import Dataset, DatasetError, load_dataset

DEFAULT_BASE_URL = "https://raw.githubusercontent.com"
BASE_URL_ENV = "DEXTER_EVAL_DATA_URL"
DEFAULT_SPLIT = "v1.1"


@dataclass(frozen=True, slots=True)
class Split:
    name: str
    title: str
    repo: str
    commit: str
    path: str
    sha256: str
    file_name: str
    as_of: date | None

    def url(self, base: str | None = None) -> str:
        root = (base or os.environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL).rstrip("/")
        return f"{root}/{self.repo}/{self.commit}/{self.path}"


SPLITS: dict[str, Split] = {
    split.name: split
    for split in (
        Split(
            "v1",
            "Finance Agent Benchmark, September 2025 public split (the original Dexter's copy)",
            "virattt/dexter",
            "823052ed687a6f3ef0e48b5e7025c73e86d95775",
            "src/evals/dataset/finance_agent.csv",
            "30a47225e5d9c842ba2ff55b71244cbefcd9f72c83200a2ee582dd43b25b00f3",
            "finance_agent.csv",
            None,
        ),
        Split(
            "v1.1",
            "Finance Agent Benchmark v1.1 public split (February 2026)",
            "vals-ai/finance-agent",
            "43e732835589bebd30c0f66ed765bfda6abb9fbe",
            "data/public.csv",
            "901e8cff562819007d43ff0c10b43b2e386481eb40f2157ba18da8fbbe05bff5",
            "finance_agent_v1_1.csv",
            date(2025, 4, 7),
        ),
        Split(
            "v2",
            "Finance Agent Benchmark v2 public split (severity-weighted, must-pass criteria)",
            "vals-ai/finance-agent-v2",
            "bb460b524472ae0955abdf243bbbac06958dc8c9",
            "data/public.csv",
            "27b48c08a6099bc076b4194cac7cefe295082b9aedcbc67f4fedfa70468b427e",
            "finance_agent_v2_public.csv",
            date(2026, 3, 1),
        ),
    )
}


def split_named(text: str) -> Split | None:
    """The split `text` names ("v2", "V1.1", "1.1"), or None when it names none."""
    key = text.strip().lower()
    return SPLITS.get(key) or SPLITS.get(f"v{key}")


def split_of_hash(sha256: str) -> Split | None:
    return next((s for s in SPLITS.values() if s.sha256 == sha256), None)


def file_sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def cached_path(split: Split, home: Path) -> Path:
    return home / "evals" / "datasets" / split.file_name


def download(split: Split, home: Path, *, timeout: float = 60.0) -> Path:
    """The split's file under `home`: the cached copy when its hash is right, else fetched from
    its pinned source, checked, then kept. Blocking: call it before the event loop starts."""
    target = cached_path(split, home)
    if target.is_file() and file_sha256(target.read_bytes()) == split.sha256:
        return target
    import httpx2

    from dexter.atomicfile import write_bytes

    url = split.url()
    advice = (
        f"Pass --dataset FILE with a copy of {split.repo} {split.path} at commit "
        f"{split.commit[:7]}, or set {BASE_URL_ENV} to a mirror."
    )
    try:
        with httpx2.Client(timeout=timeout, follow_redirects=True) as client:
            response = client.get(url)
    except httpx2.HTTPError as error:
        raise DatasetError(
            f"Cannot download the {split.name} questions from {url}: {error}. {advice}"
        ) from None
    if response.status_code != 200:
        raise DatasetError(
            f"Cannot download the {split.name} questions: {url} answered HTTP "
            f"{response.status_code}. {advice}"
        )
    data = response.content
    if file_sha256(data) != split.sha256:
        raise DatasetError(
            f"The {split.name} questions from {url} are not the pinned file (SHA-256 "
            f"{file_sha256(data)[:12]}…, expected {split.sha256[:12]}…); nothing was kept. "
            f"{advice}"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    write_bytes(target, data)
    return target


def open_dataset(choice: str | None, home: Path) -> Dataset:
    """The questions `choice` names: a split ("v2"), or a CSV file (a copy of a split is
    recognised by its hash and keeps that split's semantics); None: the default split."""
    split = split_named(choice or DEFAULT_SPLIT)
    if split is not None:
        return load_dataset(download(split, home), split.name)
    assert choice is not None
    path = Path(choice).expanduser()
    if not path.exists() and "/" not in choice and not choice.lower().endswith(".csv"):
        raise DatasetError(
            f"{choice!r} is neither a split nor a file. Splits: {', '.join(SPLITS)}; or pass "
            "the path of a questions CSV."
        )
    try:
        data = path.read_bytes()
    except OSError:
        data = b""
    known = split_of_hash(file_sha256(data)) if data else None
    return load_dataset(path, known.name if known else None)


__all__ = [
    "BASE_URL_ENV",
    "DEFAULT_SPLIT",
    "SPLITS",
    "Split",
    "cached_path",
    "download",
    "open_dataset",
    "split_named",
    "split_of_hash",
]
