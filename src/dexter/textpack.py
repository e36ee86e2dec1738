"""The one greedy packer, shared by message splitting (gateway) and memory chunking."""

from __future__ import annotations

from collections.abc import Iterable


def pack(pieces: Iterable[str], limit: int, sep: str) -> list[str]:
    """`pieces` joined by `sep` into as few strings as fit in `limit` characters, in order.
    A piece is never cut: callers hand in pieces already at most `limit` long."""
    out: list[str] = []
    current = ""
    for piece in pieces:
        candidate = f"{current}{sep}{piece}" if current else piece
        if len(candidate) <= limit:
            current = candidate
        else:
            out.append(current)
            current = piece
    if current:
        out.append(current)
    return out
