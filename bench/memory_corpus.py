# ruff: noqa: E501 (the facts below are data: one note line per string)
"""A generated year of memory for one investor, with labelled retrieval queries.

Used by `bench/memory_retrieval.py`. Deterministic for a given seed: the labelled facts are fixed
(placed on fixed dates), and a seeded RNG fills every note with realistic noise — market chatter,
prices, reading notes, errands — and with near-duplicate recaps of recent trades.

Every query names one or more acceptable answers as (file, unique phrase); a hit answers the
query when it comes from that file and its text contains the phrase. Query kinds:

- `keyword`: shares words with the answer;
- `paraphrase`: no query word matches the answer LINE under the index's own keyword rules (FTS5,
  porter stemming, same stopwords) — checked here; other lines of the same chunk may still match;
- `fresh`: several notes talk about the topic and only the newest one is right;
- `held-out`: more paraphrases under the same rule, written after the first wave's retrieval
  work and never used to tune it (`HELD_OUT`, reported apart from the 66 labelled queries).
"""

from __future__ import annotations

import random
import sqlite3
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Literal

QueryKind = Literal["keyword", "paraphrase", "fresh", "held-out"]

YEAR_START = date(2025, 1, 2)
YEAR_END = date(2025, 12, 31)
# "Today" for the benchmark: decay is measured from here.
NOW = datetime(2026, 1, 2, 9, 0)


@dataclass(frozen=True)
class Answer:
    file: str
    phrase: str


@dataclass(frozen=True)
class Query:
    text: str
    answers: tuple[Answer, ...]
    kind: QueryKind


@dataclass
class Corpus:
    files: dict[str, str]
    queries: list[Query]
    now: datetime = NOW
    facts: int = 0
    notes: dict[str, list[str]] = field(default_factory=dict)
    held_out: list[Query] = field(default_factory=list)


# ---- the labelled facts ---------------------------------------------------------------------

EVERGREEN = """\
# What I know about the user

## Profile
- Age 41, software engineering manager, married with two children.
- Lives in California, so state income tax is a real drag on taxable interest and gains.
- Risk tolerance: moderate; can sit through a 25% drawdown without selling, not more.

## Goals
- Retirement goal: $3.2 million invested by age 55, then a 3.5% withdrawal rate.
- Emergency fund target: nine months of household expenses, kept outside the stock market.
- College: a 529 plan for each child, contributing $500 a month per child.

## Accounts
- Taxable brokerage at Fidelity, Roth IRA at Schwab, and a 401(k) through work with a 6% match.
- The 401(k) holds only the Vanguard Target 2040 fund because the plan menu is poor.

## Preferences
- Prefers conservative DCF assumptions: terminal growth no higher than 2.5% and a discount rate of at least 9%.
- Compares companies on free cash flow yield first, P/E second.
- Wants answers as short bullet points with the key numbers first, no long preambles.
- Excludes tobacco and weapons makers from the portfolio on ethical grounds.
- Likes to see bear cases written out before any purchase.

## Rules
- Single-stock cap: no one company above 10% of the portfolio.
- Never uses margin or options leverage.
- Rebalances twice a year, in January and July, with a 5% drift band.
- Holds at least 20% in bonds and T-bills until the kids finish school.
"""

# (date, section, line): the hand-written facts placed into the daily notes.
_FACTS: list[tuple[date, str, str]] = [
    # NVDA: a position that grows and shrinks; the newest note is the current state.
    (
        date(2025, 1, 8),
        "Trades",
        "Bought 120 NVDA at $138.50 in the taxable account as a starter position.",
    ),
    (
        date(2025, 1, 8),
        "Thesis",
        "NVDA thesis: hyperscaler capex keeps growing through 2026 and CUDA lock-in protects margins.",
    ),
    (
        date(2025, 4, 7),
        "Trades",
        "Added 80 NVDA at $97.60 during the tariff sell-off; position now 200 shares.",
    ),
    (
        date(2025, 8, 28),
        "Trades",
        "Trimmed 60 NVDA at $181.40 after earnings to respect the cap; holding 140 shares.",
    ),
    (
        date(2025, 9, 2),
        "Thesis",
        "NVDA thesis revised: gross margin likely peaks this year as custom ASICs from Broadcom and Google take share; keep it as a smaller core holding.",
    ),
    (
        date(2025, 11, 21),
        "Trades",
        "Sold another 40 NVDA at $178.90; the NVDA position is down to 100 shares.",
    ),
    # AAPL with a correction.
    (
        date(2025, 2, 12),
        "Portfolio",
        "Holding 300 AAPL shares bought back in 2019, cost basis around $95.",
    ),
    (
        date(2025, 3, 10),
        "Corrections",
        "Correction: my AAPL cost basis is $92.40 per share, not $95 — checked the Fidelity lot detail.",
    ),
    (
        date(2025, 6, 10),
        "Trades",
        "Sold 100 AAPL at $202.30 to pay the Roth conversion taxes; 200 AAPL left.",
    ),
    (date(2025, 10, 15), "Trades", "Sold 50 more AAPL at $247.10; down to 150 AAPL shares."),
    # MSFT.
    (date(2025, 3, 3), "Trades", "Opened MSFT position: 45 shares at $392.00 in the Roth IRA."),
    (
        date(2025, 7, 31),
        "Trades",
        "Added 15 MSFT at $531.20 after Azure growth reaccelerated; 60 MSFT shares total.",
    ),
    # One-off trades and decisions.
    (
        date(2025, 5, 20),
        "Trades",
        "Bought 25 COST at $1,012.40 in the taxable account, paying up for quality.",
    ),
    (
        date(2025, 4, 9),
        "Trades",
        "Bought 150 TSM at $151.30 in the Roth IRA; Taiwan risk means it stays under 4% of the portfolio.",
    ),
    (
        date(2025, 2, 26),
        "Trades",
        "Sold the entire XOM position (220 shares at $109.80); exiting energy because the inflation-hedge idea never paid off.",
    ),
    (
        date(2025, 7, 16),
        "Trades",
        "Sold all 300 PLTR at $148.20: at 100x sales the valuation is beyond my discipline.",
    ),
    (date(2025, 8, 4), "Trades", "Bought 70 AMZN at $211.60 on the AWS operating margin thesis."),
    (
        date(2025, 12, 3),
        "Thesis",
        "AMZN thesis check: AWS growth re-accelerated to 20%, which confirms the thesis; holding all 70 shares.",
    ),
    (
        date(2025, 3, 27),
        "Trades",
        "Bought 90 GOOGL at $162.80; the market overprices the search disruption risk.",
    ),
    (
        date(2025, 10, 22),
        "Thesis",
        "GOOGL thesis revised: Gemini adoption and TPU sales make Alphabet an AI winner, not a victim; target weight raised to 7%.",
    ),
    (
        date(2025, 5, 5),
        "Decisions",
        "After Buffett said he is stepping down, kept BRK.B unchanged at 80 shares; no reaction trade.",
    ),
    (
        date(2025, 6, 23),
        "Decisions",
        "Turned off dividend reinvestment on JNJ; want the cash for rebalancing instead.",
    ),
    (
        date(2025, 7, 18),
        "Decisions",
        "Decided against buying ASML after the export-control guidance cut; revisit below 25x earnings.",
    ),
    # Cash and automatic investing (newest wins).
    (
        date(2025, 3, 18),
        "Cash",
        "Moved $40,000 of the emergency fund into 6-month T-bills at 4.21%.",
    ),
    (
        date(2025, 9, 18),
        "Cash",
        "Rolled the emergency T-bills into a 3-month bill ladder at 3.92%.",
    ),
    (
        date(2025, 1, 2),
        "Plan",
        "Set up an automatic $2,000 monthly VTI purchase on the 1st of each month.",
    ),
    (
        date(2025, 7, 1),
        "Plan",
        "Raised the monthly VTI auto-invest from $2,000 to $2,500 after the raise at work.",
    ),
    # Life events and plans.
    (
        date(2025, 2, 3),
        "Decisions",
        "Decision: stop reading daily market commentary; check the portfolio only on Fridays.",
    ),
    (
        date(2025, 4, 14),
        "Tax",
        "Tax-loss harvested the INTC lot for a $3,400 loss and bought SOXX as the replacement.",
    ),
    (
        date(2025, 11, 10),
        "Tax",
        "Plan a $20,000 Roth conversion in December while income is lower this year.",
    ),
    (
        date(2025, 9, 25),
        "Family",
        "Second child born; raising term life insurance to $2M over 20 years.",
    ),
    (
        date(2025, 6, 2),
        "Plan",
        "Switched my benchmark from the S&P 500 to a 70/30 global stock and bond blend.",
    ),
    (
        date(2025, 12, 15),
        "Tax",
        "Year-end plan: donate appreciated AAPL shares to the donor-advised fund instead of cash.",
    ),
    (
        date(2025, 5, 28),
        "Decisions",
        "Will not buy any Chinese ADRs directly; emerging markets exposure only through a broad fund.",
    ),
    (
        date(2025, 8, 19),
        "Plan",
        "Wife starts her own 401(k) at the new job in October; she will contribute 10%.",
    ),
    (
        date(2025, 10, 6),
        "Decisions",
        "Raised the cash buffer in the taxable account to $15,000 for the kitchen remodel next spring.",
    ),
    (
        date(2025, 1, 21),
        "Thesis",
        "COST is a wonderful business but 50x earnings is too rich; wait for a pullback to buy.",
    ),
    (
        date(2025, 12, 19),
        "Decisions",
        "Sold the SOXX replacement now that the wash-sale window has closed; staying out of Intel entirely.",
    ),
    (
        date(2025, 11, 3),
        "Corrections",
        "Correction: the TSM position is in the Roth IRA, not the taxable account.",
    ),
]

# Near-duplicate recaps of facts, a few days later (same content, reworded slightly).
_RECAPS: list[tuple[date, str, str]] = [
    (
        date(2025, 1, 10),
        "Recap",
        "Recap: bought 120 NVDA at $138.50 this week, taxable account, starter position.",
    ),
    (
        date(2025, 4, 8),
        "Recap",
        "Recap: added 80 NVDA at $97.60 in the tariff sell-off; 200 NVDA shares now.",
    ),
    (
        date(2025, 4, 11),
        "Recap",
        "Note to self: NVDA add of 80 shares at $97.60 done, 200 shares total.",
    ),
    (
        date(2025, 8, 29),
        "Recap",
        "Recap: trimmed 60 NVDA at $181.40 after earnings, 140 shares remain.",
    ),
    (
        date(2025, 6, 12),
        "Recap",
        "Recap: sold 100 AAPL at $202.30 for the conversion taxes, 200 AAPL remain.",
    ),
    (date(2025, 5, 22), "Recap", "Recap: bought 25 COST at $1,012.40, taxable account."),
    (date(2025, 8, 6), "Recap", "Recap: bought 70 AMZN at $211.60, AWS margin thesis."),
    (
        date(2025, 3, 20),
        "Recap",
        "Recap: $40,000 of emergency money is in 6-month T-bills at 4.21%.",
    ),
]


def _a(day: date | str, phrase: str) -> Answer:
    name = "MEMORY.md" if day == "MEMORY.md" else f"{day}.md"
    return Answer(name, phrase)


def _q(text: str, kind: QueryKind, *answers: Answer) -> Query:
    return Query(text, tuple(answers), kind)


M = "MEMORY.md"
_QUERIES: list[Query] = [
    # ---- keyword: words shared with the answer
    _q(
        "NVDA starter position taxable account",
        "keyword",
        _a(date(2025, 1, 8), "starter position"),
        _a(date(2025, 1, 10), "starter position"),
    ),
    _q(
        "NVDA tariff sell-off add",
        "keyword",
        _a(date(2025, 4, 7), "tariff sell-off"),
        _a(date(2025, 4, 8), "tariff sell-off"),
        _a(date(2025, 4, 11), "NVDA add of 80"),
    ),
    _q("MSFT position Roth IRA opened", "keyword", _a(date(2025, 3, 3), "Opened MSFT position")),
    _q(
        "COST purchase price",
        "keyword",
        _a(date(2025, 5, 20), "Bought 25 COST"),
        _a(date(2025, 5, 22), "bought 25 COST"),
    ),
    _q("TSM Roth IRA purchase Taiwan risk", "keyword", _a(date(2025, 4, 9), "Bought 150 TSM")),
    _q("sold XOM energy", "keyword", _a(date(2025, 2, 26), "Sold the entire XOM position")),
    _q("PLTR sale valuation", "keyword", _a(date(2025, 7, 16), "Sold all 300 PLTR")),
    _q(
        "AMZN AWS margin thesis purchase",
        "keyword",
        _a(date(2025, 8, 4), "Bought 70 AMZN"),
        _a(date(2025, 8, 6), "bought 70 AMZN"),
    ),
    _q("GOOGL search disruption risk", "keyword", _a(date(2025, 3, 27), "Bought 90 GOOGL")),
    _q("BRK.B Buffett stepping down", "keyword", _a(date(2025, 5, 5), "kept BRK.B unchanged")),
    _q(
        "JNJ dividend reinvestment",
        "keyword",
        _a(date(2025, 6, 23), "dividend reinvestment on JNJ"),
    ),
    _q("ASML export-control decision", "keyword", _a(date(2025, 7, 18), "against buying ASML")),
    _q(
        "INTC tax-loss harvest SOXX",
        "keyword",
        _a(date(2025, 4, 14), "Tax-loss harvested the INTC"),
    ),
    _q(
        "Roth conversion December plan",
        "keyword",
        _a(date(2025, 11, 10), "$20,000 Roth conversion"),
    ),
    _q("term life insurance second child", "keyword", _a(date(2025, 9, 25), "term life insurance")),
    _q(
        "benchmark switched S&P 500 blend", "keyword", _a(date(2025, 6, 2), "Switched my benchmark")
    ),
    _q("donor-advised fund AAPL shares", "keyword", _a(date(2025, 12, 15), "donor-advised fund")),
    _q("Chinese ADRs emerging markets", "keyword", _a(date(2025, 5, 28), "Chinese ADRs")),
    _q(
        "wife 401(k) new job contribution",
        "keyword",
        _a(date(2025, 8, 19), "Wife starts her own 401(k)"),
    ),
    _q("kitchen remodel cash buffer", "keyword", _a(date(2025, 10, 6), "kitchen remodel")),
    _q("DCF terminal growth discount rate assumptions", "keyword", _a(M, "conservative DCF")),
    _q("single-stock cap portfolio percent", "keyword", _a(M, "Single-stock cap")),
    _q("retirement goal age 55", "keyword", _a(M, "Retirement goal")),
    _q("529 plan contribution per child", "keyword", _a(M, "529 plan")),
    _q("rebalance January July drift band", "keyword", _a(M, "Rebalances twice a year")),
    _q("free cash flow yield comparison", "keyword", _a(M, "free cash flow yield")),
    _q("Fidelity Schwab accounts 401(k) match", "keyword", _a(M, "Taxable brokerage at Fidelity")),
    _q(
        "COST valuation 50x earnings pullback",
        "keyword",
        _a(date(2025, 1, 21), "wonderful business"),
    ),
    # ---- paraphrase: no content word in common with the answer line
    _q("how cautious should valuation models be", "paraphrase", _a(M, "conservative DCF")),
    _q("how big a loss can I stomach before bailing", "paraphrase", _a(M, "Risk tolerance")),
    _q("do I borrow money to invest", "paraphrase", _a(M, "Never uses margin")),
    _q("which industries am I unwilling to own", "paraphrase", _a(M, "Excludes tobacco")),
    _q("how should replies be formatted for me", "paraphrase", _a(M, "short bullet points")),
    _q("when do I hope to quit working", "paraphrase", _a(M, "Retirement goal")),
    _q("what region is my residence in", "paraphrase", _a(M, "Lives in California")),
    _q(
        "how many kids do I have",
        "paraphrase",
        _a(M, "married with two children"),
        _a(date(2025, 9, 25), "Second child born"),
    ),
    _q("saving for university costs", "paraphrase", _a(M, "529 plan")),
    _q(
        "why did I ditch the oil major",
        "paraphrase",
        _a(date(2025, 2, 26), "Sold the entire XOM position"),
    ),
    _q(
        "why did I dump the defense analytics software name",
        "paraphrase",
        _a(date(2025, 7, 16), "Sold all 300 PLTR"),
    ),
    _q(
        "what's my view on the Dutch lithography company",
        "paraphrase",
        _a(date(2025, 7, 18), "against buying ASML"),
    ),
    _q(
        "did the new baby change how much protection my family has",
        "paraphrase",
        _a(date(2025, 9, 25), "Second child born"),
    ),
    _q(
        "did I resolve to ignore the financial press",
        "paraphrase",
        _a(date(2025, 2, 3), "stop reading daily market commentary"),
    ),
    _q("what is inside my employer pension", "paraphrase", _a(M, "Vanguard Target 2040")),
    _q("how much rainy-day money should I keep", "paraphrase", _a(M, "Emergency fund target")),
    _q("what metric do I rank stocks by", "paraphrase", _a(M, "free cash flow yield")),
    _q("do I own Asian chip foundry shares", "paraphrase", _a(date(2025, 4, 9), "Bought 150 TSM")),
    _q("giving stock to charity", "paraphrase", _a(date(2025, 12, 15), "donor-advised fund")),
    _q(
        "what do I measure my returns against",
        "paraphrase",
        _a(date(2025, 6, 2), "Switched my benchmark"),
    ),
    _q("home renovation savings", "paraphrase", _a(date(2025, 10, 6), "kitchen remodel")),
    _q("how often do I tidy up allocations", "paraphrase", _a(M, "Rebalances twice a year")),
    _q(
        "spouse workplace savings plan",
        "paraphrase",
        _a(date(2025, 8, 19), "Wife starts her own 401(k)"),
    ),
    _q(
        "what pessimistic analysis do I require ahead of buying",
        "paraphrase",
        _a(M, "bear cases written out"),
    ),
    # ---- fresh: several notes on the topic; the newest is right
    _q(
        "how many nvidia shares do I own now", "fresh", _a(date(2025, 11, 21), "down to 100 shares")
    ),
    _q("what's my nvidia position", "fresh", _a(date(2025, 11, 21), "down to 100 shares")),
    _q("latest NVDA thesis", "fresh", _a(date(2025, 9, 2), "NVDA thesis revised")),
    _q("how many AAPL shares do I hold", "fresh", _a(date(2025, 10, 15), "down to 150 AAPL")),
    _q("what is my apple cost basis", "fresh", _a(date(2025, 3, 10), "$92.40")),
    _q("how many MSFT shares in total", "fresh", _a(date(2025, 7, 31), "60 MSFT shares total")),
    _q(
        "current GOOGL thesis and target weight",
        "fresh",
        _a(date(2025, 10, 22), "GOOGL thesis revised"),
    ),
    _q("AMZN thesis status", "fresh", _a(date(2025, 12, 3), "AMZN thesis check")),
    _q(
        "where is the emergency fund T-bill money now",
        "fresh",
        _a(date(2025, 9, 18), "3-month bill ladder"),
    ),
    _q(
        "monthly VTI automatic investment amount",
        "fresh",
        _a(date(2025, 7, 1), "Raised the monthly VTI"),
    ),
    _q(
        "which account holds TSM", "fresh", _a(date(2025, 11, 3), "TSM position is in the Roth IRA")
    ),
    _q("am I still in Intel or SOXX", "fresh", _a(date(2025, 12, 19), "staying out of Intel")),
    _q("most recent NVDA trade", "fresh", _a(date(2025, 11, 21), "Sold another 40 NVDA")),
    _q("most recent AAPL sale", "fresh", _a(date(2025, 10, 15), "Sold 50 more AAPL")),
]


# ---- held out: paraphrases written before retrieval was tuned, and never tuned on ------------

HELD_OUT: list[Query] = [
    _q("which part of the country am I based in", "held-out", _a(M, "Lives in California")),
    _q("how old am I", "held-out", _a(M, "Age 41")),
    _q("what do I do for a living", "held-out", _a(M, "Age 41")),
    _q("which firms look after my money", "held-out", _a(M, "Taxable brokerage at Fidelity")),
    _q("limit on any individual name's weight", "held-out", _a(M, "Single-stock cap")),
    _q("do I trade derivatives", "held-out", _a(M, "Never uses margin")),
    _q("how much goes toward the kids' schooling", "held-out", _a(M, "529 plan")),
    _q(
        "what happened to the chip fund I swapped into",
        "held-out",
        _a(date(2025, 12, 19), "Sold the SOXX replacement"),
    ),
    _q(
        "what did I conclude about the graphics chip maker's profitability ceiling",
        "held-out",
        _a(date(2025, 9, 2), "NVDA thesis revised"),
    ),
    _q(
        "did I buy the warehouse club retailer",
        "held-out",
        _a(date(2025, 5, 20), "Bought 25 COST"),
        _a(date(2025, 5, 22), "bought 25 COST"),
    ),
    _q(
        "cloud computing retailer purchase reasoning",
        "held-out",
        _a(date(2025, 8, 4), "Bought 70 AMZN"),
        _a(date(2025, 8, 6), "bought 70 AMZN"),
    ),
    _q(
        "the online bookseller's cloud unit speeding up",
        "held-out",
        _a(date(2025, 12, 3), "AMZN thesis check"),
    ),
    _q(
        "moving pre-tax retirement money into after-tax this winter",
        "held-out",
        _a(date(2025, 11, 10), "$20,000 Roth conversion"),
    ),
    _q(
        "recurring index fund buying amount",
        "held-out",
        _a(date(2025, 7, 1), "Raised the monthly VTI"),
    ),
    _q(
        "what did Berkshire's succession news make me do",
        "held-out",
        _a(date(2025, 5, 5), "kept BRK.B unchanged"),
    ),
    _q(
        "healthcare conglomerate payouts",
        "held-out",
        _a(date(2025, 6, 23), "dividend reinvestment on JNJ"),
    ),
    _q("am I avoiding companies from Beijing", "held-out", _a(date(2025, 5, 28), "Chinese ADRs")),
    _q(
        "where does my safety cushion sit today",
        "held-out",
        _a(date(2025, 9, 18), "3-month bill ladder"),
    ),
    _q(
        "did I increase the death benefit", "held-out", _a(date(2025, 9, 25), "term life insurance")
    ),
    _q("what yardstick do I use now", "held-out", _a(date(2025, 6, 2), "Switched my benchmark")),
    _q(
        "what's my take on the Mountain View company now",
        "held-out",
        _a(date(2025, 10, 22), "GOOGL thesis revised"),
    ),
    _q(
        "how much software giant stock is in my retirement account",
        "held-out",
        _a(date(2025, 7, 31), "60 MSFT shares total"),
    ),
    _q(
        "did I sell iPhone maker shares to fund something",
        "held-out",
        _a(date(2025, 6, 10), "Sold 100 AAPL"),
    ),
    _q(
        "when do I look at my holdings",
        "held-out",
        _a(date(2025, 2, 3), "stop reading daily market commentary"),
    ),
]

# ---- noise ----------------------------------------------------------------------------------

_TICKERS = [
    "SPY",
    "QQQ",
    "IWM",
    "TLT",
    "HYG",
    "META",
    "NFLX",
    "AMD",
    "AVGO",
    "CRM",
    "ORCL",
    "UNH",
    "LLY",
    "V",
    "MA",
    "JPM",
    "BAC",
    "WMT",
    "HD",
    "KO",
    "PEP",
    "DIS",
    "CAT",
    "DE",
    "SHOP",
]
_FIRMS = {
    "META": "Meta",
    "NFLX": "Netflix",
    "AMD": "AMD",
    "AVGO": "Broadcom",
    "CRM": "Salesforce",
    "ORCL": "Oracle",
    "UNH": "UnitedHealth",
    "LLY": "Eli Lilly",
    "V": "Visa",
    "MA": "Mastercard",
    "JPM": "JPMorgan",
    "BAC": "Bank of America",
    "WMT": "Walmart",
    "HD": "Home Depot",
    "KO": "Coca-Cola",
    "PEP": "PepsiCo",
    "DIS": "Disney",
    "CAT": "Caterpillar",
    "DE": "Deere",
    "SHOP": "Shopify",
}
_READING = [
    "Read the {firm} Q{q} call transcript; management sounded {tone} on demand.",
    "Skimmed the {firm} 10-Q: inventory up {pct}% year over year, receivables flat.",
    "Listened to a podcast on {firm}; nothing actionable.",
    "{firm} investor day: new {n}-year margin target of {pct}%, credible but stretched.",
    "Watchlist: {firm} screens cheap on EV/EBITDA but the balance sheet is levered.",
    "Article claims {firm} is losing share in its core market; unconvinced, sources are thin.",
]
_MARKET = [
    "{t} closed at ${price}, {dir} {pct}% on the day.",
    "Quote check: {t} bid ${price}, volume {vol}M shares, price target chatter around ${price2}.",
    "10-year Treasury yield at {y}%; 2-year at {y2}%.",
    "VIX at {vix}; market breadth {breadth}.",
    "{t} price moved {dir} {pct}% after the CPI print came in at {cpi}%.",
    "Fed held rates at {fed}%; dot plot shows {cuts} cuts next year.",
]
_LIFE = [
    "Paid the quarterly estimated taxes.",
    "Reviewed the household budget; spending on track.",
    "Dentist appointment moved to next week.",
    "Kids' soccer schedule is eating Saturdays again.",
    "Renewed the car insurance; premium up {pct}%.",
    "Booked flights for the holidays.",
    "Long week at work, little time for research.",
    "Called the 529 plan administrator about a statement error; fixed.",
]
_TONES = ["upbeat", "cautious", "defensive", "confident", "evasive"]
_BREADTH = ["weak", "narrow", "healthy", "improving", "poor"]


def noise_line(rng: random.Random) -> tuple[str, str]:
    kind = rng.random()
    if kind < 0.4:
        firm = _FIRMS[rng.choice(list(_FIRMS))]
        line = rng.choice(_READING).format(
            firm=firm,
            q=rng.randint(1, 4),
            tone=rng.choice(_TONES),
            pct=rng.randint(3, 40),
            n=rng.choice([3, 5]),
        )
        return "Research", line
    if kind < 0.8:
        price = rng.uniform(20, 900)
        line = rng.choice(_MARKET).format(
            t=rng.choice(_TICKERS),
            price=f"{price:,.2f}",
            price2=f"{price * rng.uniform(0.9, 1.3):,.0f}",
            dir=rng.choice(["up", "down"]),
            pct=f"{rng.uniform(0.1, 4.5):.1f}",
            vol=rng.randint(5, 120),
            y=f"{rng.uniform(3.8, 4.9):.2f}",
            y2=f"{rng.uniform(3.4, 4.6):.2f}",
            vix=f"{rng.uniform(12, 35):.1f}",
            breadth=rng.choice(_BREADTH),
            cpi=f"{rng.uniform(2.3, 3.4):.1f}",
            fed=rng.choice(["4.25-4.50", "4.00-4.25", "3.75-4.00"]),
            cuts=rng.randint(1, 3),
        )
        return "Market", line
    return "Life", rng.choice(_LIFE).format(pct=rng.randint(2, 12))


def _note(day: date, sections: dict[str, list[str]]) -> str:
    parts = [f"# {day.isoformat()}"]
    for heading, lines in sections.items():
        parts.append(f"## {heading}\n" + "\n".join(f"- {line}" for line in lines))
    return "\n\n".join(parts) + "\n"


def generate(seed: int = 20250101) -> Corpus:
    """The year of notes and the labelled queries; raises if a label is not unique or honest."""
    rng = random.Random(seed)
    by_day: dict[date, dict[str, list[str]]] = defaultdict(dict)
    for day, section, line in [*_FACTS, *_RECAPS]:
        by_day[day].setdefault(section, []).append(line)

    day = YEAR_START
    while day <= YEAR_END:
        # Notes on most weekdays and some weekends.
        writes = rng.random() < (0.8 if day.weekday() < 5 else 0.25)
        if writes or day in by_day:
            sections = by_day[day]
            for _ in range(rng.randint(2, 6)):
                heading, line = noise_line(rng)
                sections.setdefault(heading, []).append(line)
        day += timedelta(days=1)

    files = {f"{d.isoformat()}.md": _note(d, s) for d, s in sorted(by_day.items())}
    files["MEMORY.md"] = EVERGREEN
    _check(files, [*_QUERIES, *HELD_OUT])
    return Corpus(
        files=files,
        queries=list(_QUERIES),
        facts=len(_FACTS) + len(_RECAPS),
        held_out=list(HELD_OUT),
    )


# ---- label checks ---------------------------------------------------------------------------


def _keyword_overlap(query: str, line: str) -> list[str]:
    """Query words the index's keyword side (FTS5, porter stemming) would match in `line`."""
    from dexter.memory.search import fts_query

    match = fts_query(query)
    if match is None:
        return []
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE VIRTUAL TABLE t USING fts5(text, tokenize='porter unicode61')")
        conn.execute("INSERT INTO t (text) VALUES (?)", (line,))
        return [
            term
            for term in match.split(" OR ")
            if conn.execute("SELECT 1 FROM t WHERE t MATCH ?", (term,)).fetchone()
        ]
    finally:
        conn.close()


def _check(files: dict[str, str], queries: list[Query]) -> None:
    problems: list[str] = []
    for query in queries:
        for answer in query.answers:
            text = files.get(answer.file)
            if text is None:
                problems.append(f"{query.text!r}: no file {answer.file}")
                continue
            lines = [line for line in text.splitlines() if answer.phrase in line]
            if len(lines) != 1:
                problems.append(f"{query.text!r}: phrase {answer.phrase!r} not unique")
                continue
            if query.kind in ("paraphrase", "held-out"):
                shared = _keyword_overlap(query.text, lines[0])
                if shared:
                    problems.append(f"{query.text!r} shares {shared} with its answer")
    if problems:
        raise AssertionError("bad labels:\n" + "\n".join(problems))


def answer_line(files: dict[str, str], answer: Answer) -> int:
    """The 1-based line of an answer's phrase in its file."""
    for number, line in enumerate(files[answer.file].splitlines(), 1):
        if answer.phrase in line:
            return number
    raise KeyError(answer.phrase)


if __name__ == "__main__":
    corpus = generate()
    kinds: dict[str, int] = defaultdict(int)
    for q in corpus.queries:
        kinds[q.kind] += 1
    print(f"{len(corpus.files)} files, {len(corpus.queries)} queries {dict(kinds)}")
