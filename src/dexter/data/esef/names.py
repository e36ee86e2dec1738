"""How a user names an ESEF issuer: its LEI, or `esef:` with an LEI or a name and a country.

An LEI (ISO 17442) is twenty characters whose last two are check digits (ISO 7064 MOD 97-10),
so a bare one is recognised without asking anyone and never mistaken for a ticker or a CIK.
filings.xbrl.org has no verified name search, so a name is looked up within one country's
filings: `esef:kone@FI`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PREFIX = "esef:"
_LEI = re.compile(r"[0-9A-Z]{18}[0-9]{2}")
_COUNTRY = re.compile(r"[A-Z]{2}")


def is_lei(text: str) -> bool:
    """Twenty characters with valid ISO 7064 MOD 97-10 check digits."""
    candidate = text.strip().upper()
    if not _LEI.fullmatch(candidate):
        return False
    digits = "".join(str(int(ch, 36)) for ch in candidate)
    return int(digits) % 97 == 1


@dataclass(frozen=True)
class EsefName:
    """What the user typed, parsed: an LEI, or a name to find among a country's filers."""

    lei: str | None = None
    name: str | None = None
    country: str | None = None


def parse_esef_name(query: str) -> EsefName | None:
    """The ESEF issuer this query names, or None when it names none (a ticker, a CIK …).

    Raises ValueError for an `esef:` query that cannot be looked up, with what to write."""
    text = query.strip()
    if text.lower().startswith(PREFIX):
        rest = text[len(PREFIX) :].strip()
        if is_lei(rest):
            return EsefName(lei=rest.upper())
        name, _, country = rest.rpartition("@")
        if not name or not _COUNTRY.fullmatch(country.strip().upper()):
            raise ValueError(
                f"{query!r} names no ESEF issuer: write its LEI (e.g. esef:724500Y6DUVHQD6OXN27 "
                "or just 724500Y6DUVHQD6OXN27), or a name and the two-letter country it files "
                "in (e.g. esef:kone@FI)."
            )
        return EsefName(name=name.strip(), country=country.strip().upper())
    if is_lei(text):
        return EsefName(lei=text.upper())
    return None
