"""What EDGAR holds from when: said when an as-of date or a range reaches before it."""

from __future__ import annotations

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


__all__ = ["EDGAR_COMPLETE", "XBRL_HISTORY", "before_edgar"]
