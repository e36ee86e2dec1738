"""Conversations that can be resumed: their turns, standing constraints and a usage summary."""

from __future__ import annotations

import builtins
import json
import secrets
from dataclasses import dataclass, field
from typing import Any

from dexter.errors import EXIT_USAGE
from dexter.models.types import Usage
from dexter.principal import OPERATOR_ID
from dexter.store.backend import insert_id
from dexter.store.db import Store, now_iso
from dexter.store.migrations import StoreError
from dexter.store.principal_rows import record_principal

_TITLE_CHARS = 60


class SessionLookupError(StoreError):
    """No session, or more than one, matches an id or prefix. `candidates` are ids to suggest."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str, candidates: builtins.list[str]) -> None:
        super().__init__(message)
        self.candidates = candidates


@dataclass(frozen=True, slots=True)
class SessionInfo:
    id: str
    created_at: str
    updated_at: str
    title: str | None
    model: str
    turns: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    # None when no call of the session has a known price.
    cost_usd: float | None = None
    constraints: builtins.list[str] = field(default_factory=builtins.list)
    principal_id: str = OPERATOR_ID

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "title": self.title,
            "model": self.model,
            "turns": self.turns,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "total_tokens": self.total_tokens,
            "cost_usd": self.cost_usd,
            "constraints": self.constraints,
            "principal": self.principal_id,
        }


@dataclass(frozen=True, slots=True)
class TurnInfo:
    id: int
    run_id: str
    started_at: str
    query: str
    answer: str
    status: str
    iterations: int
    duration_ms: float
    usage: Usage
    # How the answer's figures were checked, as stored (`dexter.figure_marks`); None: unchecked.
    verification: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "run_id": self.run_id,
            "started_at": self.started_at,
            "query": self.query,
            "answer": self.answer,
            "status": self.status,
            "iterations": self.iterations,
            "duration_ms": self.duration_ms,
            "usage": self.usage.to_dict(),
            "verification": self.verification,
        }


def make_title(query: str) -> str:
    line = " ".join(query.split())
    return line if len(line) <= _TITLE_CHARS else line[: _TITLE_CHARS - 1].rstrip() + "…"


# Token and cost figures come from the ledger, which also counts routers, compaction and the
# like; sessions whose runs were never recorded there fall back to the turns' own usage.
_SUMMARY = """
SELECT s.*,
    (SELECT COUNT(*) FROM turns t WHERE t.session_id = s.id) AS n_turns,
    (SELECT COUNT(*) FROM model_calls m WHERE m.session_id = s.id) AS n_calls,
    (SELECT COALESCE(SUM(input_tokens), 0) FROM model_calls m WHERE m.session_id = s.id) AS m_in,
    (SELECT COALESCE(SUM(output_tokens), 0) FROM model_calls m WHERE m.session_id = s.id) AS m_out,
    (SELECT SUM(cost_usd) FROM model_calls m WHERE m.session_id = s.id) AS cost,
    (SELECT COALESCE(SUM(input_tokens), 0) FROM turns t WHERE t.session_id = s.id) AS t_in,
    (SELECT COALESCE(SUM(output_tokens), 0) FROM turns t WHERE t.session_id = s.id) AS t_out
FROM sessions s
"""


def _info(row: Any) -> SessionInfo:
    from_ledger = row["n_calls"] > 0
    return SessionInfo(
        id=row["id"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        title=row["title"],
        model=row["model"],
        turns=row["n_turns"],
        input_tokens=row["m_in"] if from_ledger else row["t_in"],
        output_tokens=row["m_out"] if from_ledger else row["t_out"],
        cost_usd=row["cost"],
        constraints=_load_constraints(row["constraints_json"]),
        principal_id=row["principal_id"],
    )


def _owned(principal_id: str | None) -> tuple[str, tuple[str, ...]]:
    """The WHERE clause continuation that keeps only `principal_id`'s sessions."""
    if principal_id is None:
        return "", ()
    return " AND s.principal_id = ?", (principal_id,)


def _load_constraints(raw: str | None) -> builtins.list[str]:
    try:
        data = json.loads(raw or "[]")
    except json.JSONDecodeError:
        return []
    return [str(item) for item in data] if isinstance(data, builtins.list) else []


def _load_verification(raw: str | None) -> dict[str, Any] | None:
    if not raw:
        return None
    try:
        data = json.loads(raw)
    except json.JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None


class SessionStore:
    def __init__(self, store: Store) -> None:
        self.store = store

    def create(
        self,
        model: str,
        title: str | None = None,
        *,
        session_id: str | None = None,
        principal_id: str = OPERATOR_ID,
        principal: tuple[str, str] | None = None,
    ) -> str:
        """A new session; its id is 8 hex digits, short enough to type after `--resume`.
        `session_id`: an id chosen beforehand (a record written later, off the event loop);
        `principal_id`: whose session it is; `principal`: its (kind, display name), recorded in
        the same transaction when given (first contact creates the principal's row)."""
        stamp = now_iso()
        with self.store.transaction() as conn:
            if principal is not None:
                record_principal(conn, principal_id, *principal, at=stamp)
            while True:
                if session_id is None:
                    session_id = secrets.token_hex(4)
                    if conn.execute(
                        "SELECT 1 FROM sessions WHERE id = ?", (session_id,)
                    ).fetchone():
                        session_id = None
                        continue
                conn.execute(
                    "INSERT INTO sessions (id, created_at, updated_at, title, model, principal_id)"
                    " VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        session_id,
                        stamp,
                        stamp,
                        make_title(title) if title else None,
                        model,
                        principal_id,
                    ),
                )
                return session_id

    def get(self, id_or_prefix: str, *, principal_id: str | None = None) -> SessionInfo:
        """The session with this id, or the only one whose id starts with it; with
        `principal_id`, only among that principal's sessions (another's is "no session")."""
        key = id_or_prefix.strip().lower()
        if not key:
            raise SessionLookupError("Give a session id (see `dexter sessions list`).", [])
        owner, owner_args = _owned(principal_id)
        rows = self.store.query(_SUMMARY + " WHERE s.id = ?" + owner, (key, *owner_args))
        if not rows:
            rows = self.store.query(
                _SUMMARY
                + " WHERE substr(s.id, 1, ?) = ?"
                + owner
                + " ORDER BY s.updated_at DESC LIMIT 11",
                (len(key), key, *owner_args),
            )
        if len(rows) == 1:
            return _info(rows[0])
        if rows:
            ids = [row["id"] for row in rows[:10]]
            raise SessionLookupError(
                f"Session id {id_or_prefix!r} is ambiguous; it matches {', '.join(ids)}"
                + (" and more" if len(rows) > 10 else "")
                + ". Type more of the id.",
                ids,
            )
        recent = [info.id for info in self.list(limit=5, principal_id=principal_id)]
        hint = f" Recent sessions: {', '.join(recent)}." if recent else " There are no sessions."
        raise SessionLookupError(
            f"No session {id_or_prefix!r}.{hint} See `dexter sessions list`.", recent
        )

    def latest(self, *, principal_id: str | None = None) -> SessionInfo | None:
        rows = self.list(limit=1, principal_id=principal_id)
        return rows[0] if rows else None

    def list(
        self, limit: int = 20, *, include_empty: bool = True, principal_id: str | None = None
    ) -> builtins.list[SessionInfo]:
        """Most recently updated first; `include_empty=False` leaves out sessions without a single
        turn (one started and quit before a question); `principal_id`: only theirs."""
        where = (
            " WHERE 1=1"
            if include_empty
            else " WHERE EXISTS (SELECT 1 FROM turns t WHERE t.session_id = s.id)"
        )
        owner, owner_args = _owned(principal_id)
        rows = self.store.query(
            _SUMMARY + where + owner + " ORDER BY s.updated_at DESC, s.rowid DESC LIMIT ?",
            (*owner_args, max(0, limit)),
        )
        return [_info(row) for row in rows]

    def shared(self) -> bool:
        """Whether anyone but the operator has sessions (lists then name each one's owner)."""
        return bool(
            self.store.query(
                "SELECT 1 FROM sessions WHERE principal_id != ? LIMIT 1", (OPERATOR_ID,)
            )
        )

    def short_ids(self, minimum: int = 4) -> dict[str, str]:
        """Each session id mapped to its shortest prefix no other session shares (at least
        `minimum` characters), which `get` accepts."""
        ids = sorted(row[0] for row in self.store.query("SELECT id FROM sessions"))
        out: dict[str, str] = {}
        for index, session_id in enumerate(ids):
            length = minimum
            for neighbour in ids[max(0, index - 1) : index] + ids[index + 1 : index + 2]:
                common = 0
                while (
                    common < min(len(session_id), len(neighbour))
                    and session_id[common] == neighbour[common]
                ):
                    common += 1
                length = max(length, common + 1)
            out[session_id] = session_id[: min(length, len(session_id))]
        return out

    def delete(self, session_id: str) -> None:
        """The session and its turns; the ledger keeps its calls, so usage totals stay true."""
        with self.store.transaction() as conn:
            conn.execute("DELETE FROM turns WHERE session_id = ?", (session_id,))
            conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))

    def delete_if_empty(self, session_id: str) -> bool:
        with self.store.transaction() as conn:
            cursor = conn.execute(
                "DELETE FROM sessions WHERE id = ? AND NOT EXISTS "
                "(SELECT 1 FROM turns t WHERE t.session_id = sessions.id)",
                (session_id,),
            )
            return cursor.rowcount > 0

    def search(self, text: str, limit: int = 20) -> builtins.list[tuple[SessionInfo, str]]:
        """Sessions whose title, questions or answers contain `text` (case-insensitive), newest
        first, each with the first matching question or answer."""
        needle = text.strip().lower()
        if not needle:
            return []
        pattern = "%" + needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        rows = self.store.query(
            _SUMMARY + " WHERE lower(coalesce(s.title, '')) LIKE ? ESCAPE '\\' OR EXISTS ("
            "SELECT 1 FROM turns t WHERE t.session_id = s.id AND (lower(t.query) LIKE ? "
            "ESCAPE '\\' OR lower(t.answer) LIKE ? ESCAPE '\\')) "
            "ORDER BY s.updated_at DESC, s.rowid DESC LIMIT ?",
            (pattern, pattern, pattern, max(0, limit)),
        )
        found = []
        for row in rows:
            info = _info(row)
            snippet = info.title or ""
            for turn in self.turns(info.id):
                for body in (turn.query, turn.answer):
                    at = body.lower().find(needle)
                    if at >= 0:
                        snippet = _snippet(body, at, len(needle))
                        break
                else:
                    continue
                break
            found.append((info, snippet))
        return found

    def add_turn(
        self,
        session_id: str,
        run_id: str,
        query: str,
        answer: str,
        status: str,
        iterations: int,
        duration_ms: float,
        usage: Usage | None = None,
        verification: dict[str, Any] | None = None,
    ) -> int:
        """Record a finished turn (any status); the first one also titles an untitled session.
        `verification`: how the answer's figures were checked, as a JSON-ready dict."""
        usage = usage or Usage()
        stamp = now_iso()
        checked = json.dumps(verification, ensure_ascii=False) if verification is not None else None
        with self.store.transaction() as conn:
            turn_id = insert_id(
                conn,
                "INSERT INTO turns (session_id, run_id, started_at, query, answer, status, "
                "iterations, duration_ms, input_tokens, output_tokens, cached_tokens, "
                "reasoning_tokens, verification_json) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    session_id,
                    run_id,
                    stamp,
                    query,
                    answer,
                    status,
                    iterations,
                    duration_ms,
                    usage.input_tokens,
                    usage.output_tokens,
                    usage.cached_tokens,
                    usage.reasoning_tokens,
                    checked,
                ),
            )
            conn.execute(
                "UPDATE sessions SET updated_at = ?, title = COALESCE(title, ?) WHERE id = ?",
                (stamp, make_title(query), session_id),
            )
            # Whoever asked was seen now (`dexter principals list`).
            conn.execute(
                "UPDATE principals SET last_seen_at = ? WHERE id = "
                "(SELECT principal_id FROM sessions WHERE id = ?)",
                (stamp, session_id),
            )
            return turn_id

    def turns(self, session_id: str) -> builtins.list[TurnInfo]:
        rows = self.store.query(
            "SELECT * FROM turns WHERE session_id = ? ORDER BY id", (session_id,)
        )
        return [
            TurnInfo(
                id=row["id"],
                run_id=row["run_id"],
                started_at=row["started_at"],
                query=row["query"],
                answer=row["answer"],
                status=row["status"],
                iterations=row["iterations"],
                duration_ms=row["duration_ms"],
                usage=Usage(
                    row["input_tokens"],
                    row["output_tokens"],
                    row["cached_tokens"],
                    row["reasoning_tokens"],
                ),
                verification=_load_verification(row["verification_json"]),
            )
            for row in rows
        ]

    def history(self, session_id: str) -> builtins.list[tuple[str, str]]:
        """(question, answer) of the answered turns, oldest first: what a resumed run replays.

        Failed and denied turns are left out so a resumed conversation doesn't inherit errors.
        """
        rows = self.store.query(
            "SELECT query, answer FROM turns WHERE session_id = ? AND status = 'answered' "
            "ORDER BY id",
            (session_id,),
        )
        return [(row["query"], row["answer"]) for row in rows]

    def set_constraints(
        self,
        session_id: str,
        constraints: builtins.list[str],
        *,
        base: builtins.list[str] | None = None,
    ) -> builtins.list[str]:
        """Store a run's standing constraints, merged with what other runs on the same session
        stored meanwhile (four parallel `ask --continue` keep all four): the stored list, minus
        what this run removed (in `base`, what it started from, but not in `constraints`), plus
        what it added. Returns the merged list. The read and the write share one write
        transaction, so concurrent processes cannot interleave between them."""
        removed = set(base or ()) - set(constraints)
        with self.store.transaction() as conn:
            row = conn.execute(
                "SELECT constraints_json FROM sessions WHERE id = ?", (session_id,)
            ).fetchone()
            # No base: the caller states the whole list (a new session, an explicit reset).
            stored = _load_constraints(row[0]) if row and base is not None else []
            merged = [item for item in stored if item not in removed]
            merged += [item for item in constraints if item not in merged]
            conn.execute(
                "UPDATE sessions SET constraints_json = ?, updated_at = ? WHERE id = ?",
                (json.dumps(merged, ensure_ascii=False), now_iso(), session_id),
            )
        return merged

    def constraints(self, session_id: str) -> builtins.list[str]:
        rows = self.store.query("SELECT constraints_json FROM sessions WHERE id = ?", (session_id,))
        return _load_constraints(rows[0][0]) if rows else []

    def touch(self, session_id: str) -> None:
        with self.store.transaction() as conn:
            conn.execute("UPDATE sessions SET updated_at = ? WHERE id = ?", (now_iso(), session_id))


def _snippet(body: str, at: int, length: int, context: int = 50) -> str:
    """About `context` characters either side of a match, cut at word boundaries, with an
    ellipsis where text was left out."""
    start = max(0, at - context)
    end = min(len(body), at + length + context)
    if start > 0:
        space = body.find(" ", start, at)
        start = space + 1 if space >= 0 else start
    if end < len(body):
        space = body.rfind(" ", at + length, end)
        end = space if space >= 0 else end
    text = " ".join(body[start:end].split())
    return ("…" if start > 0 else "") + text + ("…" if end < len(body) else "")
