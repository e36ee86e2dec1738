"""Team-mode memory documents: MEMORY.md and the daily notes of one principal, as Postgres rows.

The same names, the same text and the same editing rules as `dexter.memory.files` (whose
`appended`/`without` do the formatting), but every worker on every machine sees one copy, and an
edit is a read-modify-write under a row lock, so two workers appending to today's note at once
both land (two processes rewriting a file on a shared volume would lose one of them).
"""

from __future__ import annotations

import builtins
import hashlib
from collections.abc import Callable
from datetime import date

from dexter.memory.files import MemoryFiles, appended, file_date, validate_name, without
from dexter.memory.pg_link import PgLink

__all__ = ["PgMemoryDocuments", "copy_files_into", "forget_principal"]

# The new text of a document from its current text, or None to leave it as it is.
_Change = Callable[[str], str | None]


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class PgMemoryDocuments:
    """Satisfies `dexter.memory.backend.MemoryDocuments` (blocking: called like file IO)."""

    def __init__(self, link: PgLink, principal: str) -> None:
        self.link = link
        self.principal = principal

    @staticmethod
    def daily_name(day: date | None = None) -> str:
        return f"{(day or date.today()).isoformat()}.md"

    @staticmethod
    def file_date(name: str) -> date | None:
        return file_date(name)

    def location(self, name: str | None = None) -> str:
        where = f"the team database ({self.link.describe()})"
        return where if name is None else f"{validate_name(name)} in {where}"

    def list(self) -> builtins.list[str]:
        with self.link.use() as conn:
            rows = conn.execute(
                "SELECT name FROM memory_documents WHERE principal = %s", (self.principal,)
            ).fetchall()
        return sorted(str(r["name"]) for r in rows)

    def read(self, name: str) -> str:
        validate_name(name)
        with self.link.use() as conn:
            row = conn.execute(
                "SELECT text FROM memory_documents WHERE principal = %s AND name = %s",
                (self.principal, name),
            ).fetchone()
        return str(row["text"]) if row else ""

    def write(self, name: str, text: str) -> None:
        validate_name(name)
        with self.link.use() as conn:
            conn.execute(
                "INSERT INTO memory_documents (principal, name, text, hash) "
                "VALUES (%s, %s, %s, %s) ON CONFLICT (principal, name) DO UPDATE SET "
                "text = EXCLUDED.text, hash = EXCLUDED.hash, updated_at = now()",
                (self.principal, name, text, _sha256(text)),
            )

    def append(self, name: str, text: str) -> None:
        appended("", text)  # refuses an empty entry before touching the database
        self._edit(name, lambda current: appended(current, text))

    def replace_text(self, name: str, old: str, new: str) -> bool:
        if not old:
            return False
        return self._edit(
            name, lambda current: current.replace(old, new, 1) if old in current else None
        )

    def delete_text(self, name: str, old: str) -> bool:
        if not old:
            return False
        return self._edit(name, lambda current: without(current, old) if old in current else None)

    def _edit(self, name: str, change: _Change) -> bool:
        """Apply `change` to the document under its row lock; False when it returns None."""
        validate_name(name)
        with self.link.use() as conn, conn.transaction():
            # The row exists before it is locked, so two first appends cannot both insert.
            conn.execute(
                "INSERT INTO memory_documents (principal, name, text, hash) "
                "VALUES (%s, %s, '', %s) ON CONFLICT DO NOTHING",
                (self.principal, name, _sha256("")),
            )
            row = conn.execute(
                "SELECT text FROM memory_documents WHERE principal = %s AND name = %s FOR UPDATE",
                (self.principal, name),
            ).fetchone()
            current = str(row["text"]) if row else ""
            updated = change(current)
            if updated is None:
                if not current:  # nothing was there and nothing was written: leave no row
                    conn.execute(
                        "DELETE FROM memory_documents WHERE principal = %s AND name = %s "
                        "AND text = ''",
                        (self.principal, name),
                    )
                return False
            conn.execute(
                "UPDATE memory_documents SET text = %s, hash = %s, updated_at = now() "
                "WHERE principal = %s AND name = %s",
                (updated, _sha256(updated), self.principal, name),
            )
        return True


def copy_files_into(files: MemoryFiles, docs: PgMemoryDocuments) -> list[str]:
    """Every memory file of a home into the team database (for `dexter db copy`), replacing
    documents of the same name; the names copied. The next sync indexes them."""
    names = files.list()
    for name in names:
        docs.write(name, files.read(name))
    return names


def forget_principal(url: str, principal: str) -> int:
    """Delete all of `principal`'s memory from the team database (`dexter principals rm`); the
    number of documents it had. Creates nothing where memory was never used."""
    from dexter.store.pg import connect

    with connect(url) as conn:
        found = conn.execute("SELECT to_regclass('memory_documents') AS t").fetchone()
        if found is None or found["t"] is None:
            return 0
        with conn.transaction():
            documents = conn.execute(
                "DELETE FROM memory_documents WHERE principal = %s", (principal,)
            ).rowcount
            for table in ("memory_chunks", "memory_files", "memory_state"):
                conn.execute(
                    f"DELETE FROM {table} WHERE principal = %s",
                    (principal,),
                )
    return documents
