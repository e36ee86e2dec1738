"""Insider-sale clusters: N distinct insiders of one company reporting open-market sales (Form 4
transaction code S) within D days, which says more than any one sale (often a 10b5-1 plan).

A cluster is only reported in the alert of a new Form 4 that belongs to it, and new filings are
alerted once (watch_filings), so the same cluster is not sent twice, after a restart neither; a
later sale that joins it sends one update with the grown cluster."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal

from dexter.data.sec.ownership import OwnershipFiling
from dexter.watch.model import ClusterRule


@dataclass(frozen=True, slots=True)
class InsiderSale:
    """One Form 4's open-market sales by its reporting owner, added up (as positives)."""

    insider: str  # reporting owner's CIK, else name: what makes insiders distinct
    name: str
    role: str | None
    sold_on: date  # the latest sale date in the filing
    shares: Decimal
    value: Decimal
    accession: str
    link: str


@dataclass(frozen=True, slots=True)
class Cluster:
    sales: tuple[InsiderSale, ...]
    rule: ClusterRule

    @property
    def insiders(self) -> int:
        return len({s.insider for s in self.sales})


def sale_of(parsed: OwnershipFiling, *, accession: str, link: str) -> InsiderSale | None:
    """The filing's open-market sales (code S) as one sale, or None if it reports none."""
    sales = [t for t in parsed.trades if (t.transaction_code or "").upper() == "S"]
    dated = [date.fromisoformat(t.transaction_date[:10]) for t in sales if t.transaction_date]
    if not sales or not parsed.owners or not dated:
        return None
    owner = parsed.owners[0]
    return InsiderSale(
        insider=owner.cik or owner.name.upper(),
        name=owner.name,
        role=owner.role,
        sold_on=max(dated),
        shares=sum((abs(Decimal(str(t.transaction_shares or 0))) for t in sales), Decimal(0)),
        value=sum((abs(Decimal(str(t.transaction_value or 0))) for t in sales), Decimal(0)),
        accession=accession,
        link=link,
    )


def find_cluster(sales: Sequence[InsiderSale], new: set[str], rule: ClusterRule) -> Cluster | None:
    """The sales within `rule.days` days up to the latest new sale, if they come from at least
    `rule.insiders` insiders; `new` holds the accessions this alert is about."""
    fresh = [s for s in sales if s.accession in new]
    if not fresh:
        return None
    end = max(s.sold_on for s in fresh)
    start = end - timedelta(days=rule.days - 1)  # D days counting both ends
    inside = sorted(
        (s for s in sales if start <= s.sold_on <= end), key=lambda s: (s.sold_on, s.accession)
    )
    unique = list({s.accession: s for s in inside}.values())
    found = Cluster(tuple(unique), rule)
    return found if found.insiders >= rule.insiders else None


def _amount(value: Decimal) -> str:
    for size, unit in ((Decimal(10) ** 9, "B"), (Decimal(10) ** 6, "M"), (Decimal(10) ** 3, "K")):
        if abs(value) >= size:
            return f"{value / size:.1f} {unit}"
    return f"{value:,.0f}"


def describe(ticker: str, cluster: Cluster) -> list[str]:
    """A headline and one line per sale, each citing its filing."""
    shares = sum((s.shares for s in cluster.sales), Decimal(0))
    value = sum((s.value for s in cluster.sales), Decimal(0))
    first = min(s.sold_on for s in cluster.sales)
    last = max(s.sold_on for s in cluster.sales)
    span = (last - first).days + 1
    lines = [
        f"{ticker}: {cluster.insiders} insiders sold {_amount(shares)} shares worth USD "
        f"{_amount(value)} within {span} day{'s' if span > 1 else ''} "
        f"({first} to {last}; cluster rule {cluster.rule.insiders} insiders within "
        f"{cluster.rule.days} days)"
    ]
    for s in cluster.sales:
        role = f" ({s.role})" if s.role else ""
        lines.append(
            f"- {s.name}{role}: sold {_amount(s.shares)} shares for USD {_amount(s.value)} on "
            f"{s.sold_on}; {s.link} (accession {s.accession})"
        )
    return lines
