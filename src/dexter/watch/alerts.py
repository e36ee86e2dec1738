"""An alert's text: one line saying what was filed, a few saying what is in it or what changed,
and for every filing its link and accession (so the user can check the source)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from dexter.watch.sections import SectionDiff
from dexter.watch.store import DetectedFiling

# Titles of the 8-K items (Form 8-K General Instructions), so an alert says what an item means.
ITEM_TITLES = {
    "1.01": "Entry into a Material Definitive Agreement",
    "1.02": "Termination of a Material Definitive Agreement",
    "1.05": "Material Cybersecurity Incidents",
    "2.01": "Completion of Acquisition or Disposition of Assets",
    "2.02": "Results of Operations and Financial Condition",
    "2.03": "Creation of a Direct Financial Obligation",
    "2.05": "Costs Associated with Exit or Disposal Activities",
    "2.06": "Material Impairments",
    "3.01": "Notice of Delisting or Failure to Satisfy a Listing Rule",
    "4.01": "Changes in Registrant's Certifying Accountant",
    "4.02": "Non-Reliance on Previously Issued Financial Statements",
    "5.02": "Departure or Appointment of Directors or Officers",
    "5.03": "Amendments to Articles of Incorporation or Bylaws",
    "5.07": "Submission of Matters to a Vote of Security Holders",
    "7.01": "Regulation FD Disclosure",
    "8.01": "Other Events",
    "9.01": "Financial Statements and Exhibits",
}
_SHOWN_FACTORS = 5


@dataclass(frozen=True, slots=True)
class FilingDetails:
    """What was read from the filing itself (all optional: an alert goes out without them)."""

    link: str
    documents: int | None = None
    figures: tuple[str, ...] = ()
    figures_source: str | None = None  # "EX-99.1"
    risk_diff: SectionDiff | None = None
    compared_with: str | None = None  # the previous filing's accession
    notes: tuple[str, ...] = field(default_factory=tuple)  # what could not be read, and why


def _headline(f: DetectedFiling) -> str:
    # Forms named by a bare number (3, 4, 5, 144) read as "a Form 4".
    label = f"Form {f.form}" if f.form.split("/")[0].isdigit() else f.form
    article = "an" if label[:1] in "8AEFHILMNORSX" and not label.startswith("Form") else "a"
    items = f" (items {', '.join(f.items)})" if f.items else ""
    return f"{f.ticker} filed {article} {label} on {f.filing_date}{items}"


def _lines(f: DetectedFiling, d: FilingDetails) -> list[str]:
    lines: list[str] = []
    for item in f.items:
        line = f"- Item {item} {ITEM_TITLES.get(item, '')}".rstrip()
        if item == "2.02" and d.figures:
            line += f": {'; '.join(d.figures)} ({d.figures_source or 'earnings release'})"
        lines.append(line)
    if d.risk_diff is not None:
        diff = d.risk_diff
        against = f" against {d.compared_with}" if d.compared_with else ""
        if not diff.changed:
            lines.append(f"- Risk factors (Item 1A): unchanged{against}")
        else:
            lines.append(
                f"- Risk factors (Item 1A){against}: {len(diff.added)} added, "
                f"{len(diff.removed)} removed"
            )
            for sign, factors in (("+", diff.added), ("-", diff.removed)):
                for text in factors[:_SHOWN_FACTORS]:
                    lines.append(f"  {sign} {text}")
                if len(factors) > _SHOWN_FACTORS:
                    lines.append(f"  {sign} … and {len(factors) - _SHOWN_FACTORS} more")
    if d.documents is not None and d.documents > 1:
        lines.append(f"- {d.documents} documents in the filing")
    lines.extend(f"- ({note})" for note in d.notes)
    lines.append(f"{d.link} (accession {f.accession})")
    return lines


def compose(filings: Sequence[DetectedFiling], details: dict[str, FilingDetails]) -> str:
    """One message for everything a poll found for one watch, however many filings."""
    if len(filings) == 1:
        f = filings[0]
        return "\n".join([_headline(f), *_lines(f, details[f.accession])])
    tickers = sorted({f.ticker for f in filings})
    forms = ", ".join(f.form for f in filings)
    parts = [f"{' '.join(tickers)}: {len(filings)} new filings ({forms})"]
    for f in filings:
        parts.append("")
        parts.append(_headline(f))
        parts.extend(_lines(f, details[f.accession]))
    return "\n".join(parts)
