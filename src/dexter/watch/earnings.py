"""Key figures of an earnings release (an 8-K's EX-99.1), read from its text without a model:
the first net income (with per-share amount) and the first sales or revenue change it states."""

from __future__ import annotations

import re

_AMOUNT = r"\$\s?([\d,]+(?:\.\d+)?)\s*(million|billion|thousand)?"
_NET_INCOME = re.compile(
    r"net income\b[^.$]{0,160}?\b(?:was|of|totaled|totalled|were)\s+"
    + _AMOUNT
    + r"(?:,?\s*or\s+\$\s?([\d.]+)\s+per\s+(diluted\s+)?share)?",
    re.IGNORECASE,
)
_SALES_CHANGE = re.compile(
    r"\b(net sales|total revenues?|revenues?|net revenues?)\b[^.$]{0,160}?\b"
    r"(increased|decreased|rose|fell|grew|declined)\s+([\d.]+)\s*(?:percent|%)\s+to\s+" + _AMOUNT,
    re.IGNORECASE,
)
_SALES_PLAIN = re.compile(
    r"\b(net sales|total revenues?|revenues?|net revenues?)\b\s+(?:was|were|of|totaled)\s+"
    + _AMOUNT
    + r"(?:,?\s*(up|down)\s+([\d.]+)\s*(?:percent|%))?",
    re.IGNORECASE,
)
_UP = {"increased", "rose", "grew", "up"}


def _money(number: str, unit: str | None) -> str:
    return f"${number}" + (f" {unit.lower()}" if unit else "")


def key_figures(text: str) -> list[str]:
    """Phrases like "net income $44.2 million, $0.89 per share"; empty when none are stated."""
    flat = " ".join(text.split())
    found: list[str] = []
    income = _NET_INCOME.search(flat)
    if income:
        phrase = f"net income {_money(income.group(1), income.group(2))}"
        if income.group(3):
            diluted = " diluted" if income.group(4) else ""
            phrase += f", ${income.group(3)} per{diluted} share"
        found.append(phrase)
    change = _SALES_CHANGE.search(flat)
    if change:
        direction = "up" if change.group(2).lower() in _UP else "down"
        found.append(
            f"{change.group(1).lower()} {_money(change.group(4), change.group(5))} "
            f"{direction} {change.group(3)}%"
        )
    else:
        plain = _SALES_PLAIN.search(flat)
        if plain:
            phrase = f"{plain.group(1).lower()} {_money(plain.group(2), plain.group(3))}"
            if plain.group(4):
                phrase += f" {plain.group(4).lower()} {plain.group(5)}%"
            found.append(phrase)
    return found
