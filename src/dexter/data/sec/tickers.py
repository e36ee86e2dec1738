"""Resolve what a person types (ticker, CIK or company name) to an SEC filer.

The table is the SEC's `company_tickers.json`, whose order roughly follows company size; that order
breaks ties, so "Apple" means Apple Inc. rather than a smaller filer with Apple in its name.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any

from dexter.data.errors import UnknownCompany, UpstreamError
from dexter.data.models import Company

_SUFFIXES = frozenset(
    {
        "inc", "incorporated", "corp", "corporation", "co", "company", "ltd", "limited", "plc",
        "llc", "lp", "sa", "ag", "nv", "se", "holdings", "holding", "group", "the", "class",
    }
)  # fmt: skip
_NON_WORD = re.compile(r"[^a-z0-9 ]+")


def normalise_name(name: str) -> str:
    words = _NON_WORD.sub(" ", name.lower().replace("&", " and ")).split()
    kept = [word for word in words if word not in _SUFFIXES]
    return " ".join(kept or words)


def normalise_ticker(ticker: str) -> str:
    # The SEC writes share classes with a dash (BRK-B); people often type a dot or a slash.
    return ticker.strip().upper().replace(".", "-").replace("/", "-")


def cik_digits(text: str) -> str | None:
    """The digits of a CIK typed plain ("320193") or as EDGAR writes it ("CIK0000320193")."""
    digits = text.strip().upper().removeprefix("CIK").strip()
    return digits if digits.isdigit() and len(digits) <= 10 else None


def _looks_like_name(text: str) -> bool:
    # Tickers have at most five letters before a class suffix; anything longer was a name.
    return " " in text.strip() or len(normalise_ticker(text).split("-")[0]) > 5


@dataclass(frozen=True)
class _Entry:
    rank: int
    ticker: str
    cik: str
    name: str

    def company(self) -> Company:
        return Company(ticker=self.ticker, cik=self.cik, name=self.name)


class TickerTable:
    """Lookups over ~10,000 filers. Records and name keys are built on demand: a command that
    resolves one ticker should not pay for normalising every company name."""

    def __init__(self, entries: list[_Entry]) -> None:
        self._entries = entries
        self._by_ticker = {e.ticker: e for e in entries}
        self._by_cik: dict[str, _Entry] = {}
        for entry in entries:
            self._by_cik.setdefault(entry.cik, entry)  # first ticker = primary share class
        self._name_keys: list[str] | None = None

    @classmethod
    def from_json(cls, data: Any) -> TickerTable:
        if not isinstance(data, dict) or not data:
            raise UpstreamError("The SEC ticker table is empty or not in the expected format.")
        entries: list[_Entry] = []
        try:
            rows = sorted(data.items(), key=lambda item: int(item[0]))
            for rank, (_, row) in enumerate(rows):
                entries.append(
                    _Entry(
                        rank,
                        normalise_ticker(str(row["ticker"])),
                        f"{int(row['cik_str']):010d}",
                        str(row["title"]),
                    )
                )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise UpstreamError(f"The SEC ticker table has an unexpected row ({exc}).") from None
        return cls(entries)

    def __len__(self) -> int:
        return len(self._entries)

    def _names(self) -> list[str]:
        if self._name_keys is None:
            self._name_keys = [normalise_name(e.name) for e in self._entries]
        return self._name_keys

    def tickers_by_cik(self) -> dict[str, str]:
        return {cik: entry.ticker for cik, entry in self._by_cik.items()}

    def by_cik(self, cik: str | int) -> Company | None:
        entry = self._by_cik.get(f"{int(cik):010d}")
        return entry.company() if entry else None

    def resolve(self, query: str) -> Company:
        """Ticker first, then CIK, then company name; raise UnknownCompany with suggestions."""
        text = query.strip()
        if not text:
            raise UnknownCompany(query)
        entry = self._by_ticker.get(normalise_ticker(text))
        if entry:
            return entry.company()
        digits = cik_digits(text)
        if digits:
            by_cik = self.by_cik(digits)
            if by_cik:
                return by_cik
        match = self._by_name(text)
        if match:
            return match.company()
        raise UnknownCompany(query, self.suggest(text))

    def _by_name(self, text: str) -> _Entry | None:
        key = normalise_name(text)
        if not key:
            return None
        names = self._names()
        # Entries are in rank order, so the first match is the largest such company.
        for entry, name in zip(self._entries, names, strict=True):
            if name == key:
                return entry
        # Whole-word prefix: "alphabet" matches "alphabet", not "alphabetical holdings".
        for entry, name in zip(self._entries, names, strict=True):
            if (name + " ").startswith(key + " "):
                return entry
        return None

    def sharing_first_word(self, name: str, limit: int = 3) -> list[Company]:
        """The largest filers whose name today starts with the same word as `name`: where a
        company renamed by adding or dropping words ("Apple Computer", now Apple Inc.) is."""
        words = normalise_name(name).split()
        found: list[Company] = []
        for entry, known in zip(self._entries, self._names(), strict=True):
            if words and known.split()[:1] == words[:1] and self._by_cik[entry.cik] is entry:
                found.append(entry.company())
                if len(found) == limit:
                    break
        return found

    def _one_typo_away(self, typed: str) -> list[str]:
        """Tickers one keystroke from `typed` (two letters swapped, one wrong, missing or extra),
        largest filers first: `APPL` → `AAPL` before anything merely similar."""
        letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-."
        edits = {
            typed[:i] + typed[i + 1] + typed[i] + typed[i + 2 :] for i in range(len(typed) - 1)
        }
        edits |= {typed[:i] + typed[i + 1 :] for i in range(len(typed))}
        for i in range(len(typed) + 1):
            for letter in letters:
                edits.add(typed[:i] + letter + typed[i:])
                if i < len(typed):
                    edits.add(typed[:i] + letter + typed[i + 1 :])
        edits.discard(typed)
        rank = {entry.ticker: n for n, entry in enumerate(self._entries)}
        return sorted((t for t in edits if t in self._by_ticker), key=lambda t: rank.get(t, 0))

    def suggest(self, text: str, limit: int = 5) -> list[str]:
        typed = normalise_ticker(text)
        close = difflib.get_close_matches(typed, self._by_ticker, n=limit)
        tickers = list(dict.fromkeys([*self._one_typo_away(typed)[:limit], *close]))
        names: dict[str, _Entry] = {}
        for entry, name in zip(self._entries, self._names(), strict=True):
            names.setdefault(name, entry)
        by_name = difflib.get_close_matches(normalise_name(text), names, n=limit, cutoff=0.6)
        by_ticker = [self._by_ticker[t] for t in tickers]
        by_company = [names[n] for n in by_name]
        # "Microsfot" is a name typed wrong: its near names go first, or five tickers that
        # merely look like it would crowd Microsoft out.
        picks = by_company + by_ticker if _looks_like_name(text) else by_ticker + by_company
        seen: set[str] = set()
        out: list[str] = []
        for entry in picks:
            if entry.ticker not in seen:
                seen.add(entry.ticker)
                out.append(f"{entry.ticker} ({entry.name})")
        return out[:limit]
