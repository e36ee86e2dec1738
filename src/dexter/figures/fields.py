"""Which fields of the evidence a sentence names: "gross margin" names gross profit and revenue,
"tax rate" the tax lines, "GM" gross margin, "the total" a table's total row.

Shared by direct matching (a figure found only in a field its clause does not name, while it
names another, is a coincidence) and by derivations (operands come from the rows and columns a
sentence names). Words are compared by their stems ("taxes", "tax").
"""

from __future__ import annotations

import re

_STOP_WORDS = frozenset(
    {"total", "and", "the", "of", "in", "per", "usd", "millions", "value", "line", "item", "net"}
)
_WORD = re.compile(r"[a-z][a-z&]+")

# What a sentence's words imply about the fields it draws on.
SYNONYMS: dict[str, tuple[str, ...]] = {
    "margin": ("revenue", "sales", "profit", "income"),
    "margins": ("revenue", "sales", "profit", "income"),
    "sales": ("revenue",),
    "revenue": ("sales",),
    "revenues": ("revenue", "sales"),
    "earnings": ("income", "net", "eps"),
    "profit": ("income",),
    "eps": ("eps", "earnings"),
    "fcf": ("free", "cash", "flow", "fcf"),
    "capex": ("capital", "expenditure"),
    "r&d": ("research", "development", "r&d"),
    "sg&a": ("selling", "general", "administrative", "sg&a"),
    "opex": ("operating", "expense"),
    "operating": ("operations",),
    "gm": ("gross", "profit", "revenue", "margin"),
    "om": ("operating", "income", "revenue", "margin"),
    "ni": ("net", "income"),
    "rev": ("revenue",),
    "inc": ("income",),
    "ocf": ("operating", "cash", "flow"),
    "cogs": ("cost", "revenue"),
    "leverage": ("debt", "equity"),
    "payout": ("dividends", "income"),
    "buybacks": ("repurchases", "purchase", "equity"),
    "repurchases": ("purchase", "equity"),
    "sbc": ("share", "based", "compensation"),
    "d&a": ("depreciation", "amortization"),
    "tax": ("tax",),
}
_ABBREVIATIONS = frozenset({"fcf", "eps", "r&d", "sg&a", "d&a", "sbc", "ocf", "cogs", "opex"})
# Words too common in field names to say which field a sentence means on their own.
GENERIC = frozenset(
    {
        "income",
        "expense",
        "expenses",
        "cash",
        "flow",
        "operating",
        "other",
        "current",
        "non",
        "assets",
        "liabilities",
        "from",
        "share",
        "shares",
        "common",
        "stock",
        "average",
        "weighted",
        "basic",
        "diluted",
        "consolidated",
        "equity",
        "ratio",
        "growth",
        "margin",
        "investments",
        "investing",
        "financing",
        "activities",
        "provided",
        "used",
        "before",
        "after",
    }
)
# Ratios analysts name by what they divide.
PHRASES: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), words)
    for pattern, words in (
        (r"\bcurrent ratio", ("current", "assets", "liabilities")),
        (r"\bquick ratio", ("current", "assets", "liabilities", "inventory")),
        (r"\bdebt[- ]to[- ]equity", ("debt", "equity", "shareholders")),
        (r"\bdebt[- ]to[- ]assets", ("debt", "assets")),
        (r"\bnet (?:debt|cash)", ("debt", "cash", "equivalents")),
        (r"\btax rate", ("tax", "pre")),
        (r"\binterest coverage", ("operating", "income", "interest", "ebit")),
        (r"\bpayout", ("dividends", "net", "income")),
        (r"\bfree cash flow", ("operating", "capital", "expenditure", "free")),
        (r"\bconversion", ("free", "cash", "flow", "net", "income")),
        (r"\bbook value", ("shareholders", "equity")),
    )
)


def field_words(field: str) -> frozenset[str]:
    return frozenset(w for w in _WORD.findall(field.lower()) if w not in _STOP_WORDS)


def expanded(words: frozenset[str]) -> frozenset[str]:
    extra = [s for w in words for s in SYNONYMS.get(w, ())]
    return words | frozenset(extra)


def stem(word: str) -> str:
    """Plural to singular, near enough to match field names ("taxes", "tax")."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if (
        len(word) > 4
        and word.endswith("es")
        and (word[-3] in "xz" or word[-4:-2] in ("sh", "ch", "ss"))
    ):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def stems(words: frozenset[str]) -> frozenset[str]:
    return frozenset(stem(w) for w in words)


GENERIC_STEMS = stems(GENERIC)


def named(field: str, words: frozenset[str]) -> bool:
    """Whether a sentence (its words stemmed) names a field: by one of the field's
    distinctive words, or by all its words when it has none ("operating income"); "the
    total" names a table's total row."""
    if "total" in words and field.lower().startswith("total"):
        return True
    needed = stems(field_words(field))
    if not needed:
        return False
    distinctive = needed - GENERIC_STEMS
    if distinctive & words:
        return True
    # A field named by an abbreviation ("FCF growth") is named by its words too ("free cash
    # flow fell 9.2%").
    spelled = stems(frozenset(w for a in needed & _ABBREVIATIONS for w in SYNONYMS[a]))
    if spelled - GENERIC_STEMS & words:
        return True
    return not distinctive and needed <= words


def clause_words(words: frozenset[str], text: str) -> frozenset[str]:
    """What a clause's words name, with what its phrases and abbreviations imply, stemmed."""
    extra = [w for pattern, found in PHRASES if pattern.search(text) for w in found]
    return stems(expanded(words) | frozenset(extra))
