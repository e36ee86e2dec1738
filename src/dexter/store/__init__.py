"""Sessions and the token ledger: `DEXTER_HOME/dexter.db` (SQLite), or Postgres in team mode."""

from __future__ import annotations

from dexter.store.db import DB_FILE_NAME, Store, StoreError, open_store
from dexter.store.ledger import Ledger, UsageRow, UsageTotals
from dexter.store.prices import Price, overrides_from_settings, price_for
from dexter.store.sessions import SessionInfo, SessionLookupError, SessionStore, TurnInfo

__all__ = [
    "DB_FILE_NAME",
    "Ledger",
    "Price",
    "SessionInfo",
    "SessionLookupError",
    "SessionStore",
    "Store",
    "StoreError",
    "TurnInfo",
    "UsageRow",
    "UsageTotals",
    "open_store",
    "overrides_from_settings",
    "price_for",
]
