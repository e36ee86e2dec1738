"""Who a user means, and which filings a filer made: company_tickers.json and submissions.

Resolution rules:

* A ticker resolves to its own row; the SEC writes share classes with a dash (BRK-B), and a
  class typed with a dot or a slash (BRK.B, brk/b) means the same ticker.
* A CIK (plain, zero-padded or with a `CIK` prefix) resolves to the first ticker the table lists
  for it, the primary class (GOOGL before GOOG).
* A company name resolves to that company, typed in any case, with or without its legal form
  (Inc., Corp., Corporation, Co., Ltd., plc...) and punctuation, as long as no other company in
  the table has that name apart from those words.
* A former name (submissions `formerNames`, EDGAR's state suffix such as "/CA" dropped) resolves
  to the company that carries it, as long as no company in the table has that name today.
* A misspelt ticker or name (two letters swapped, or one left out) does not resolve to a guess;
  the answer names the company the user meant among its suggestions ("TSLA (Tesla, Inc.)").
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

Case = dict[str, Any]
TICKERS = "sec-mirror/www.sec.gov/files/company_tickers.json"
SUBMISSIONS = "sec-mirror/data.sec.gov/submissions/CIK{cik}.json"
LEGAL_FORMS = frozenset(
    {"inc", "incorporated", "corp", "corporation", "co", "company", "ltd", "limited", "plc",
     "llc", "lp", "sa", "ag", "nv", "se"}
)  # fmt: skip
# A legal form typed in full where the table abbreviates it ("NVIDIA Corporation").
LONG_FORMS = {"corp": "Corporation", "inc": "Incorporated", "co": "Company", "ltd": "Limited"}


def base_name(title: str) -> str:
    """A name without case, punctuation, EDGAR's state suffix or its legal form."""
    text = title.split("/")[0] if "/" in title else title
    words = re.sub(r"[^a-z0-9 ]+", " ", text.lower().replace("&", " and ")).split()
    kept = [w for w in words if w not in LEGAL_FORMS]
    return " ".join(kept or words)


class Table:
    def __init__(self, root: Path) -> None:
        self.rows: list[dict[str, Any]] = list(
            json.loads((root / TICKERS).read_text(encoding="utf-8")).values()
        )
        self.by_cik: dict[int, list[dict[str, Any]]] = {}
        self.by_base: dict[str, set[int]] = {}
        for row in self.rows:
            self.by_cik.setdefault(row["cik_str"], []).append(row)
            self.by_base.setdefault(base_name(row["title"]), set()).add(row["cik_str"])
        self.tickers = {row["ticker"] for row in self.rows}

    def position(self, row: dict[str, Any]) -> int:
        return self.rows.index(row)

    def primary(self, cik: int) -> dict[str, Any]:
        return self.by_cik[cik][0]

    def shown(self, cik: int) -> str:
        row = self.primary(cik)
        return f"{row['ticker']} ({row['title']})"


def _resolve(
    case_id: str, query: str, row: dict[str, Any], note: str, source: str = TICKERS
) -> Case:
    return {
        "id": case_id,
        "kind": "resolve",
        "source": source,
        "args": {"query": query},
        "expect": {"ticker": row["ticker"], "cik": f"{row['cik_str']:010d}"},
        "note": note,
    }


def resolution(root: Path, filers: dict[str, str]) -> list[Case]:
    """`filers`: ticker -> CIK of every companyfacts filer (each gets every kind of case)."""
    table = Table(root)
    found: list[Case] = []
    ours = [table.primary(int(cik)) for cik in filers.values()]
    top = table.rows[:40]
    for row in [*top, *[r for r in ours if r not in top]]:
        found.append(
            _resolve(
                f"ticker-{row['ticker'].lower()}",
                row["ticker"].lower(),
                row,
                f"company_tickers.json row {table.position(row)}: {row['ticker']} is CIK "
                f"{row['cik_str']} ({row['title']})",
            )
        )
    for row in {r["cik_str"]: r for r in [*top[::2], *ours]}.values():
        first = table.primary(row["cik_str"])
        for query, style in (
            (str(row["cik_str"]), "cik"),
            (f"CIK{row['cik_str']:010d}", "cik-padded"),
        ):
            if style == "cik-padded" and row not in ours and row not in top[::10]:
                continue
            found.append(
                _resolve(
                    f"{style}-{row['cik_str']}",
                    query,
                    first,
                    f"CIK {row['cik_str']}: its first row in company_tickers.json is "
                    f"{first['ticker']} (row {table.position(first)})",
                )
            )
    found += _names(table, [*top[:25], *ours], long_forms=[*top[:8], *ours])
    found += _share_classes(table)
    found += _former_names(root, table, filers)
    found += _misspellings(table, [*top[:12], *ours])
    return found


def _names(
    table: Table, rows: list[dict[str, Any]], long_forms: list[dict[str, Any]]
) -> list[Case]:
    found: list[Case] = []
    seen: set[int] = set()
    for row in rows:
        if row["cik_str"] in seen:
            continue
        seen.add(row["cik_str"])
        base = base_name(row["title"])
        if len(table.by_base[base]) != 1 or not base:
            continue  # two companies share the name: no single right answer
        first = table.primary(row["cik_str"])
        variants = {
            "name": row["title"],
            "name-lower": row["title"].lower(),
            "name-base": base.title(),
        }
        long_form = " ".join(LONG_FORMS.get(w.strip(".,").lower(), w) for w in row["title"].split())
        if long_form != row["title"] and row in long_forms:
            variants["name-long-form"] = long_form
        for style, query in variants.items():
            found.append(
                _resolve(
                    f"{style}-{first['ticker'].lower()}",
                    query,
                    first,
                    f"{query!r} is {row['title']!r} (CIK {row['cik_str']}) apart from case, "
                    "punctuation and legal form; no other company in company_tickers.json has "
                    f"the name {base!r}",
                )
            )
    return found


def _share_classes(table: Table) -> list[Case]:
    found: list[Case] = []
    for cik, rows in table.by_cik.items():
        classes = [r for r in rows if re.fullmatch(r"[A-Z]+-[A-Z]", r["ticker"])]
        if not classes or table.position(rows[0]) > 400:
            continue
        for row in classes:
            root_ticker, share_class = row["ticker"].split("-")
            for query, style in (
                (f"{root_ticker}.{share_class}", "dot"),
                (f"{root_ticker.lower()}/{share_class.lower()}", "slash"),
            ):
                found.append(
                    _resolve(
                        f"class-{style}-{row['ticker'].lower()}",
                        query,
                        row,
                        f"{query!r} is share class {share_class} of {row['title']}, listed as "
                        f"{row['ticker']} (CIK {cik}) in company_tickers.json",
                    )
                )
        if len(rows) > 1 and all(re.fullmatch(r"[A-Z]+", r["ticker"]) for r in rows[:2]):
            second = rows[1]  # GOOG: a second class under its own ticker, same company
            found.append(
                _resolve(
                    f"class-second-{second['ticker'].lower()}",
                    second["ticker"],
                    second,
                    f"{second['ticker']} is the second ticker of CIK {cik} ({second['title']}), "
                    f"after {rows[0]['ticker']}",
                )
            )
    return found


def _former_names(root: Path, table: Table, filers: dict[str, str]) -> list[Case]:
    found: list[Case] = []
    for path in sorted((root / SUBMISSIONS.format(cik="x")).parent.glob("CIK*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        cik = int(data["cik"])
        if cik not in table.by_cik:
            continue
        current = base_name(data["name"])
        row = table.primary(cik)
        seen = {current}
        for former in data.get("formerNames") or []:
            base = base_name(former["name"])
            if base in seen or base in table.by_base:
                continue  # the same name today (or again), or another company's name now
            seen.add(base)
            for query in (former["name"], base.title()):
                found.append(
                    _resolve(
                        f"former-{row['ticker'].lower()}-{base.replace(' ', '-')}"
                        + ("-as-filed" if query == former["name"] else ""),
                        query,
                        row,
                        f"{former['name']!r} was the name of CIK {cik} from "
                        f"{former['from'][:10]} to {former['to'][:10]} (submissions formerNames); "
                        f"today it is {data['name']!r}, {row['ticker']}",
                        source=str(path.relative_to(root)),
                    )
                )
    return found


def _typos(word: str) -> list[str]:
    """Two neighbouring letters swapped, and one letter left out, inside the word."""
    swaps = [word[:i] + word[i + 1] + word[i] + word[i + 2 :] for i in range(1, len(word) - 1)]
    drops = [word[:i] + word[i + 1 :] for i in range(1, len(word))]
    return [t for t in dict.fromkeys(swaps + drops) if t != word]


def _misspellings(table: Table, rows: list[dict[str, Any]]) -> list[Case]:
    found: list[Case] = []
    names = set(table.by_base)
    for row in {r["cik_str"]: r for r in rows}.values():
        ticker = row["ticker"]
        shown = table.shown(row["cik_str"])
        typo_tickers = [t for t in _typos(ticker) if t not in table.tickers and len(t) >= 3]
        base = base_name(row["title"])
        typo_names = [
            t for t in _typos(base) if " " not in base and len(base) >= 6 and t not in names
        ]
        for kind, typo in (("ticker", typo_tickers[:1]), ("name", typo_names[:1])):
            for query in typo:
                found.append(
                    {
                        "id": f"misspelt-{kind}-{query.lower()}",
                        "kind": "suggest",
                        "source": TICKERS,
                        "args": {"query": query},
                        "expect": {"contains": [shown]},
                        "note": f"{query!r} is {ticker if kind == 'ticker' else base!r} "
                        f"misspelt; no ticker or company is called that, so the answer "
                        f"suggests {shown} instead of guessing",
                    }
                )
    return found


def filings(root: Path) -> list[Case]:
    found: list[Case] = []
    for path in sorted((root / SUBMISSIONS.format(cik="x")).parent.glob("CIK*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        ticker = data["tickers"][0]
        recent = data["filings"]["recent"]
        source = str(path.relative_to(root))
        for form in ("10-K", "10-Q", "8-K"):
            rows = [i for i, f in enumerate(recent["form"]) if f == form]
            for position, i in enumerate(rows[: 4 if form != "8-K" else 3]):
                found.append(
                    {
                        "id": f"{ticker.lower()}-{form.lower()}-{position}",
                        "kind": "filing",
                        "source": source,
                        "args": {"ticker": ticker, "form": form, "index": position},
                        "expect": {
                            "accession_number": recent["accessionNumber"][i],
                            "filing_date": recent["filingDate"][i],
                            "report_date": recent["reportDate"][i] or None,
                        },
                        "note": f"the {_ordinal(position)} {form} in filings.recent (row {i}), "
                        "newest first",
                    }
                )
    return found


def _ordinal(n: int) -> str:
    return ("newest", "second newest", "third newest", "fourth newest")[n]
