"""What EDGAR holds from when, and what a filing list is missing when part of it did not load:
said when an as-of date or a range reaches before it, or an older history page fails."""

from __future__ import annotations

from collections.abc import Sequence

from dexter.data.models import HistoryGap

XBRL_HISTORY = (
    "Companies began filing XBRL financial data in 2009 (the largest first, the rest by 2011); "
    "earlier filings are documents only, on EDGAR since 1993-1996."
)


# The last day of EDGAR's phase-in: from then on every company filed electronically.
EDGAR_COMPLETE = "1996-05-06"


def before_edgar(day: str) -> str | None:
    """A note when `day` is before every company filed on EDGAR, else None."""
    if day >= EDGAR_COMPLETE:
        return None
    return (
        "EDGAR holds electronic filings from 1993 on (every company by May 1996); earlier "
        "filings were on paper and are not on EDGAR."
    )


def _span(gap: HistoryGap) -> str:
    if gap.filed_from and gap.filed_to:
        return f" (filings of {gap.filed_from} to {gap.filed_to})"
    return ""


def missing_history(gaps: Sequence[HistoryGap]) -> str:
    """Which older history pages were not read and why, which filings that leaves out, and
    what to do: the same words for the terminal and for the model."""
    parts = []
    for gap in gaps:
        if gap.failed:
            parts.append(
                f"EDGAR's older filing-history page {gap.page}{_span(gap)} could not be "
                f"loaded: {gap.reason}."
            )
        else:
            parts.append(
                f"EDGAR's older filing-history pages from {gap.page}{_span(gap)} on were not "
                f"read: {gap.reason}."
            )
    newest = max((gap.filed_to for gap in gaps if gap.filed_to), default=None)
    missing = (
        f"Filings made on or before {newest} are missing."
        if newest
        else "Older filings are missing."
    )
    if any(gap.failed for gap in gaps):
        advice = "Try again in a few minutes: the SEC may be busy or the page damaged in transit."
    elif newest:
        advice = f"Ask for filings filed on or before {newest} to read them."
    else:
        advice = "Ask for a filing-date range to read them."
    return " ".join([*parts, missing, advice])


__all__ = ["EDGAR_COMPLETE", "XBRL_HISTORY", "before_edgar", "missing_history"]
