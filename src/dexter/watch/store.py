"""Watches, their cursors, detected filings and SEC validators in the shared database
(migration 9).

A filing goes `detected` in the same commit that advances the watch's cursor past it, then
`queued` in the same commit that writes its alert to the cron outbox (which then tracks
delivery, with retries). So a crash after detection re-queues it once on the next poll, and a
crash after queueing leaves the outbox to deliver it: never lost, never queued twice.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from dexter.cron.store import insert_alert
from dexter.store.db import Store, now_iso
from dexter.watch.model import (
    DEFAULT_CLUSTER,
    ClusterRule,
    Watch,
    WatchError,
    cluster_text,
    parse_cluster,
)


@dataclass(frozen=True, slots=True)
class DetectedFiling:
    watch_id: str
    accession: str
    ticker: str
    cik: str
    form: str
    filing_date: str
    items: tuple[str, ...]
    primary_document: str | None
    state: str = "detected"
    outbox_id: int | None = None
    # The outbox row's status once queued: pending | delivered | failed.
    delivery: str | None = None


def _dt(text: str) -> datetime:
    moment = datetime.fromisoformat(text)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _watch(row: Any) -> Watch:
    return Watch(
        id=row["id"],
        owner=row["owner"],
        tickers=tuple(json.loads(row["tickers_json"])),
        forms=tuple(json.loads(row["forms_json"])),
        items=tuple(json.loads(row["items_json"])),
        target=row["target"],
        created_at=_dt(row["created_at"]),
        paused=bool(row["paused"]),
        cluster=parse_cluster(row["cluster"]),
    )


def _filing(row: Any) -> DetectedFiling:
    return DetectedFiling(
        watch_id=row["watch_id"],
        accession=row["accession"],
        ticker=row["ticker"],
        cik=row["cik"],
        form=row["form"],
        filing_date=row["filing_date"],
        items=tuple(i for i in row["items"].split(",") if i),
        primary_document=row["primary_document"],
        state=row["state"],
        outbox_id=row["outbox_id"],
        delivery=row["delivery"],
    )


_FILINGS = (
    "SELECT f.*, o.status AS delivery FROM watch_filings f "
    "LEFT JOIN cron_outbox o ON o.id = f.outbox_id"
)


class WatchStore:
    def __init__(self, store: Store) -> None:
        self.store = store

    # --- watches ---------------------------------------------------------------------------

    def add(
        self,
        *,
        owner: str,
        tickers: Sequence[str],
        forms: Sequence[str],
        items: Sequence[str],
        target: str,
        now: datetime,
        cluster: ClusterRule | None = DEFAULT_CLUSTER,
    ) -> Watch:
        watch = Watch(
            id=secrets.token_hex(4),
            owner=owner,
            tickers=tuple(tickers),
            forms=tuple(forms),
            items=tuple(items),
            target=target,
            created_at=now,
            cluster=cluster,
        )
        with self.store.transaction() as conn:
            conn.execute(
                "INSERT INTO watches (id, owner, tickers_json, forms_json, items_json, target, "
                "paused, created_at, cluster) VALUES (?, ?, ?, ?, ?, ?, 0, ?, ?)",
                (
                    watch.id,
                    owner,
                    json.dumps(list(watch.tickers)),
                    json.dumps(list(watch.forms)),
                    json.dumps(list(watch.items)),
                    target,
                    now_iso(now),
                    cluster_text(cluster),
                ),
            )
        return watch

    def all(self, *, owner: str | None = None) -> list[Watch]:
        if owner is None:
            rows = self.store.query("SELECT * FROM watches ORDER BY created_at, id")
        else:
            rows = self.store.query(
                "SELECT * FROM watches WHERE owner = ? ORDER BY created_at, id", (owner,)
            )
        return [_watch(r) for r in rows]

    def find(self, ref: str, *, owner: str | None = None) -> Watch:
        """A watch by id (or unique id prefix), or by a ticker it alone watches."""
        text = ref.strip()
        mine = self.all(owner=owner)
        matches = [w for w in mine if w.id.startswith(text.lower())] if text else []
        if not matches:
            matches = [w for w in mine if text.upper() in w.tickers]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise WatchError(f"No watch matches {ref!r}; `dexter watch list` shows them.")
        ids = ", ".join(w.id for w in matches)
        raise WatchError(f"{ref!r} matches several watches ({ids}); give the id.")

    def remove(self, watch_id: str) -> None:
        with self.store.transaction() as conn:
            conn.execute("DELETE FROM watch_filings WHERE watch_id = ?", (watch_id,))
            conn.execute("DELETE FROM watch_cursors WHERE watch_id = ?", (watch_id,))
            conn.execute("DELETE FROM watches WHERE id = ?", (watch_id,))

    def set_paused(self, watch_id: str, paused: bool) -> None:
        """Resuming forgets the cursors, so the next poll starts from the history as it stands
        then: what was filed while paused is not sent as a late burst."""
        with self.store.transaction() as conn:
            conn.execute("UPDATE watches SET paused = ? WHERE id = ?", (int(paused), watch_id))
            if not paused:
                conn.execute("DELETE FROM watch_cursors WHERE watch_id = ?", (watch_id,))

    # --- cursors and validators -------------------------------------------------------------

    def cursor(self, watch_id: str, ticker: str) -> str | None:
        """The newest accession this watch has seen for `ticker`; None: never polled."""
        rows = self.store.query(
            "SELECT last_accession FROM watch_cursors WHERE watch_id = ? AND ticker = ?",
            (watch_id, ticker),
        )
        return None if not rows else str(rows[0][0] or "")

    def validators(self, url: str) -> tuple[str | None, str | None]:
        rows = self.store.query(
            "SELECT etag, last_modified FROM watch_validators WHERE url = ?", (url,)
        )
        return (rows[0][0], rows[0][1]) if rows else (None, None)

    def save_validators(self, url: str, etag: str | None, last_modified: str | None) -> None:
        with self.store.transaction() as conn:
            conn.execute(
                "INSERT INTO watch_validators (url, etag, last_modified) VALUES (?, ?, ?) "
                "ON CONFLICT(url) DO UPDATE SET etag = excluded.etag, "
                "last_modified = excluded.last_modified",
                (url, etag, last_modified),
            )

    # --- detection and queueing -------------------------------------------------------------

    def record_detected(
        self,
        watch_id: str,
        ticker: str,
        newest: str,
        filings: Sequence[DetectedFiling],
        now: datetime,
    ) -> None:
        """Advance the cursor to `newest` and record `filings` as detected, in one commit."""
        with self.store.transaction() as conn:
            for f in filings:
                conn.execute(
                    "INSERT INTO watch_filings (watch_id, accession, ticker, cik, form, "
                    "filing_date, items, primary_document, state, detected_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'detected', ?) ON CONFLICT DO NOTHING",
                    (
                        watch_id,
                        f.accession,
                        ticker,
                        f.cik,
                        f.form,
                        f.filing_date,
                        ",".join(f.items),
                        f.primary_document,
                        now_iso(now),
                    ),
                )
            conn.execute(
                "INSERT INTO watch_cursors (watch_id, ticker, last_accession) VALUES (?, ?, ?) "
                "ON CONFLICT(watch_id, ticker) DO UPDATE SET "
                "last_accession = excluded.last_accession",
                (watch_id, ticker, newest),
            )

    def detected(self, watch_id: str) -> list[DetectedFiling]:
        """Filings detected but not yet queued (new ones, or left by a crash)."""
        rows = self.store.query(
            f"{_FILINGS} WHERE f.watch_id = ? AND f.state = 'detected' "
            "ORDER BY f.filing_date, f.accession",
            (watch_id,),
        )
        return [_filing(r) for r in rows]

    def history(self, watch_id: str, *, limit: int = 20) -> list[DetectedFiling]:
        rows = self.store.query(
            f"{_FILINGS} WHERE f.watch_id = ? ORDER BY f.filing_date DESC, f.accession DESC "
            "LIMIT ?",
            (watch_id, limit),
        )
        return [_filing(r) for r in rows]

    def queue(
        self,
        watch: Watch,
        filings: Sequence[DetectedFiling],
        *,
        job_id: str,
        text: str,
        now: datetime,
    ) -> int | None:
        """Write one alert covering `filings` to the outbox and mark them queued, in one commit;
        None (and nothing written) when another poll queued them first."""
        accessions = [f.accession for f in filings]
        marks = ", ".join("?" for _ in accessions)
        with self.store.transaction() as conn:
            waiting = conn.execute(
                f"SELECT COUNT(*) FROM watch_filings WHERE watch_id = ? AND state = 'detected' "
                f"AND accession IN ({marks})",
                (watch.id, *accessions),
            ).fetchone()[0]
            if waiting != len(accessions):
                return None
            outbox_id = insert_alert(
                conn,
                job_id=job_id,
                job_name=f"watch {' '.join(watch.tickers)}",
                run_id=None,
                text=text,
                target=watch.target,
                created_at=now,
                delivered=watch.target == "outbox",
            )
            conn.execute(
                f"UPDATE watch_filings SET state = 'queued', outbox_id = ? WHERE watch_id = ? "
                f"AND accession IN ({marks})",
                (outbox_id, watch.id, *accessions),
            )
            return outbox_id
