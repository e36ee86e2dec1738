"""Argument types shared by the command parsers (standard library only: parsers are built on
every start)."""

from __future__ import annotations

import argparse
import re
from datetime import date

_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


def iso_day(text: str) -> str:
    """A calendar day written YYYY-MM-DD, checked (2025-13-01 and 2025-02-30 are refused rather
    than compared as text, which would let every filing through)."""
    value = text.strip()
    if not _DAY.fullmatch(value):
        raise argparse.ArgumentTypeError(
            f"expected a date written YYYY-MM-DD (e.g. 2025-01-31), not {text!r}"
        )
    try:
        return date.fromisoformat(value).isoformat()
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date: {error}") from None


def valuation_days(text: str) -> str:
    """A day (YYYY-MM-DD) or a range FROM..TO meaning every month-end between them."""
    if ".." not in text:
        return iso_day(text)
    first, _, last = text.partition("..")
    first, last = iso_day(first), iso_day(last)
    if first > last:
        raise argparse.ArgumentTypeError(f"{text!r} ends before it starts")
    return f"{first}..{last}"


__all__ = ["iso_day", "valuation_days"]
