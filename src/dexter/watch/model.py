"""A watch: whose it is, which companies, which forms (and 8-K items), where alerts go."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from dexter.errors import EXIT_USAGE, DexterError

DEFAULT_FORMS = ("8-K", "10-Q", "10-K", "4")
_TICKER = re.compile(r"[A-Z][A-Z0-9.\-]{0,9}")
_ITEM = re.compile(r"\d{1,2}\.\d{2}")
_FORM = re.compile(r"[A-Z0-9][A-Z0-9 \-/]{0,19}")


class WatchError(DexterError):
    """Bad watch input or an unknown watch; the message says what to type instead."""

    exit_code = EXIT_USAGE


@dataclass(frozen=True, slots=True)
class ClusterRule:
    """Alert when `insiders` distinct insiders report open-market sales within `days` days."""

    insiders: int
    days: int

    @property
    def text(self) -> str:
        return f"{self.insiders}/{self.days}"


# Three insiders (not two: a CEO and CFO often sell together under 10b5-1 plans) within a week.
DEFAULT_CLUSTER = ClusterRule(3, 7)
_CLUSTER = re.compile(r"(\d{1,2})\s*/\s*(\d{1,3})")


def parse_cluster(text: str | None) -> ClusterRule | None:
    """`--cluster N/D` (N insiders within D days), `off`, or nothing for the default 3/7."""
    if text is None or not text.strip():
        return DEFAULT_CLUSTER
    if text.strip().lower() == "off":
        return None
    match = _CLUSTER.fullmatch(text.strip())
    if match is None or not (2 <= int(match[1]) <= 50 and 1 <= int(match[2]) <= 365):
        raise WatchError(
            f"--cluster {text.strip()!r}: write N/D, N insiders (2-50) selling within D days "
            "(1-365), like 3/7; or off."
        )
    return ClusterRule(int(match[1]), int(match[2]))


def cluster_text(rule: ClusterRule | None) -> str:
    return "off" if rule is None else rule.text


@dataclass(frozen=True, slots=True)
class Watch:
    id: str
    owner: str
    tickers: tuple[str, ...]
    forms: tuple[str, ...]
    items: tuple[str, ...]  # 8-K items to alert on; empty: every 8-K
    target: str
    created_at: datetime
    paused: bool = False
    cluster: ClusterRule | None = DEFAULT_CLUSTER  # None: no insider-sale cluster alerts

    @property
    def watches_form4(self) -> bool:
        return any(form.split("/")[0] == "4" for form in self.forms)

    def describe(self) -> str:
        items = f" items {','.join(self.items)}" if self.items else ""
        cluster = f"  cluster {cluster_text(self.cluster)}" if self.watches_form4 else ""
        state = " (paused)" if self.paused else ""
        return (
            f"{self.id}  {' '.join(self.tickers)}  forms {','.join(self.forms)}{items}"
            f"{cluster}  -> {self.target}{state}"
        )


def parse_tickers(values: Iterable[str]) -> tuple[str, ...]:
    tickers: list[str] = []
    for raw in values:
        for part in raw.replace(",", " ").split():
            ticker = part.strip().upper()
            if not _TICKER.fullmatch(ticker):
                raise WatchError(f"{part!r} is not a ticker (write it like NVDA or BRK.B).")
            if ticker not in tickers:
                tickers.append(ticker)
    if not tickers:
        raise WatchError("Name at least one ticker to watch, like `dexter watch add NVDA`.")
    return tuple(tickers)


def parse_forms(text: str | None) -> tuple[str, ...]:
    if text is None or not text.strip():
        return DEFAULT_FORMS
    forms: list[str] = []
    for part in text.split(","):
        form = " ".join(part.split()).upper()
        if not form:
            continue
        if not _FORM.fullmatch(form):
            raise WatchError(f"{part.strip()!r} is not a form type (like 8-K, 10-Q, 10-K, 4).")
        if form not in forms:
            forms.append(form)
    if not forms:
        raise WatchError("--forms needs at least one form type, like 8-K,10-Q.")
    return tuple(forms)


def parse_items(text: str | None) -> tuple[str, ...]:
    if text is None or not text.strip():
        return ()
    items: list[str] = []
    for part in text.split(","):
        item = part.strip()
        if not item:
            continue
        if not _ITEM.fullmatch(item):
            raise WatchError(f"{item!r} is not an 8-K item number (like 2.02 or 5.02).")
        if item not in items:
            items.append(item)
    return tuple(items)
