"""Which tagger reads a file, and the coarse outline a file gets when its tagger fails: a file
that does not parse is still listed, never a reason to stop."""

from __future__ import annotations

import io
import logging
from pathlib import PurePosixPath

from dexter.workspace.model import FileTags, Kind
from dexter.workspace.tag_code import language_of

log = logging.getLogger("dexter.workspace")

MEMO_SUFFIXES = frozenset({".md", ".markdown", ".txt", ".rst"})
WORKBOOK_SUFFIXES = frozenset({".xlsx", ".xlsm"})
_SNIFF = 4096
MAX_PARSE_BYTES = 2 * 1024 * 1024


def kind_of(rel: str) -> Kind:
    suffix = PurePosixPath(rel).suffix.lower()
    if language_of(suffix):
        return "code"
    if suffix == ".ipynb":
        return "notebook"
    if suffix in WORKBOOK_SUFFIXES:
        return "workbook"
    if suffix in MEMO_SUFFIXES:
        return "memo"
    if suffix in (".csv", ".tsv", ".parquet"):
        return "data"
    return "other"


def tag_file(rel: str, raw: bytes, absolute: str) -> FileTags:
    """The tags of one file from its bytes. Never raises: a failure is a coarse outline."""
    kind = kind_of(rel)
    if kind not in ("workbook",) and not rel.endswith(".parquet") and b"\x00" in raw[:_SNIFF]:
        return FileTags("other", outline=["binary file"], error="binary")
    if kind in ("code", "notebook", "memo") and len(raw) > MAX_PARSE_BYTES:
        # A generated or minified file: its outline would say nothing, its parse takes long.
        return coarse(kind, raw, f"{len(raw):,} bytes, too large to outline")
    try:
        return _tag(rel, kind, raw, absolute)
    except Exception as error:  # any parser failure: the file stays in the map, coarsely
        log.debug("workspace: could not parse %s", rel, exc_info=True)
        return coarse(kind, raw, f"{type(error).__name__}: {error}"[:200])


def _tag(rel: str, kind: Kind, raw: bytes, absolute: str) -> FileTags:
    suffix = PurePosixPath(rel).suffix.lower()
    if kind == "code":
        from dexter.workspace.tag_code import tag_code

        return tag_code(raw, language_of(suffix) or "python")
    if kind == "notebook":
        from dexter.workspace.tag_notebook import tag_notebook

        return tag_notebook(raw)
    if kind == "workbook":
        from dexter.workspace.tag_workbook import tag_workbook_bytes

        return tag_workbook_bytes(io.BytesIO(raw))
    if kind == "memo":
        from dexter.workspace.tag_text import tag_memo

        return tag_memo(raw.decode("utf-8", errors="replace"))
    if kind == "data":
        from dexter.workspace.tag_data import tag_csv, tag_parquet

        if suffix == ".parquet":
            return tag_parquet(absolute)
        return tag_csv(raw, delimiter="\t" if suffix == ".tsv" else ",")
    return coarse("other", raw, None)


def coarse(kind: Kind, raw: bytes, error: str | None) -> FileTags:
    """A file's size and first line: what the map shows for a file it could not read."""
    first = ""
    if kind not in ("workbook",):
        text = raw[:_SNIFF].decode("utf-8", errors="replace")
        first = next((line.strip() for line in text.splitlines() if line.strip()), "")[:100]
    outline = [first] if first else []
    if error:
        outline.append(f"(not parsed: {error})")
    return FileTags(kind, outline=outline, error=error)


__all__ = ["coarse", "kind_of", "tag_file"]
