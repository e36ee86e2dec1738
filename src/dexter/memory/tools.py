"""The agent's memory tools: `memory_search`, `memory_get` and `memory_update`.

Search returns chunks with their file, line range and date, each registered as a source so the
answer can cite where a memory came from. Get reads a file (or a line range of it) verbatim, which
is what an edit or delete needs. Update is disciplined: memory holds what the user tells Dexter
about themselves (preferences, decisions, holdings, goals, corrections), in short entries, once.
Tool output, prices and market data are refused, because they go stale and crowd out the facts
that matter; a near-identical entry is reported instead of written twice.

The write checks (`entry_problem`, `find_duplicate`) are shared with `dexter memory add` and the
pre-compaction flush.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from dexter.memory.files import EVERGREEN_NAME, MemoryNameError, validate_name
from dexter.principal import ToolScope
from dexter.tools.base import Resources, Tool, ToolContext, ToolFailure, ToolResult

_log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from dexter.memory.backend import MemoryBackend, MemoryDocuments
    from dexter.memory.search import Hit

__all__ = [
    "MAX_ENTRY_CHARS",
    "Duplicate",
    "MemoryGetArgs",
    "MemoryGetTool",
    "MemorySearchArgs",
    "MemorySearchTool",
    "MemoryUpdateArgs",
    "MemoryUpdateTool",
    "entry_problem",
    "expand_query",
    "find_duplicate",
    "memory_tools",
    "normalise_entry",
    "resolve_file",
]

MAX_ENTRY_CHARS = 500
MAX_SEARCH_RESULTS = 10
# Cosine similarity above which two entries with the same figures say the same thing.
NEAR_DUPLICATE_COSINE = 0.95
NEAR_DUPLICATE_JACCARD = 0.85
MAX_GET_CHARS = 20_000

_PURPOSE = (
    "Memory is for durable facts about the user: preferences, decisions, holdings, goals and "
    "corrections, in short entries."
)

Today = Callable[[], date]


# ---- write discipline ---------------------------------------------------------------------

_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_WORDS = re.compile(r"[a-z0-9]+(?:[.,][0-9]+)*")
_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")
# A figure that looks like a price or a rate: decimals, a currency sign or a percent.
_PRICE_LIKE = re.compile(r"[$€£]\s?\d[\d,]*(?:\.\d+)?|\d[\d,]*\.\d+%?|\d+(?:\.\d+)?%")
_MARKET_WORDS = re.compile(
    r"\b(?:price[sd]?|quotes?|quoted|closed?|closing|open(?:ed)?|intraday|high|low|volume|"
    r"bid|ask|ohlc|market cap|52-week|eps|p/e|yield(?:ed)?|traded?|trading|last)\b",
    re.IGNORECASE,
)
_HOLDING_WORDS = re.compile(
    r"\b(?:i|my|me|we|our|bought|buy|sold|sell|hold|holding|holdings|own|owns|position|"
    r"cost basis|(?:average|avg) (?:cost|price)|paid|entry|shares? at|prefer|prefers|decided|"
    r"decision|target|goal|plan|correction)\b",
    re.IGNORECASE,
)
_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")


def normalise_entry(text: str) -> str:
    """Lower-case words and figures only, so formatting and bullets do not hide a duplicate."""
    lines = [_BULLET.sub("", line) for line in text.strip().splitlines()]
    return " ".join(_WORDS.findall(" ".join(lines).lower()))


def _numbers(text: str) -> set[str]:
    return {n.replace(",", "").rstrip(".") for n in _NUMBER.findall(text)}


def entry_problem(text: str) -> str | None:
    """Why `text` should not be stored in memory, or None when it is a fit entry."""
    entry = text.strip()
    if not entry:
        return "Nothing to remember: the entry is empty."
    from dexter.permissions.secrets import REDACTED, redact

    if REDACTED in entry or redact(entry) != entry:
        # Memory is shown in every later system prompt: never a place for keys.
        return "Refused: the entry contains a secret (an API key or token); never store those."
    if len(entry) > MAX_ENTRY_CHARS:
        return (
            f"Refused: the entry is {len(entry)} characters; keep memory entries under "
            f"{MAX_ENTRY_CHARS}. Store the one durable fact in a sentence, not a report. "
            + _PURPOSE
        )
    lines = [line for line in entry.splitlines() if line.strip()]
    undated = _DATE.sub(" ", entry)
    table_rows = sum(1 for line in lines if _TABLE_ROW.match(line) or line.count("\t") >= 2)
    numeric_rows = sum(1 for line in lines if len(_NUMBER.findall(line)) >= 3)
    dump = entry[:1] in "{[" and (":" in entry or "," in entry)
    prices = len(_PRICE_LIKE.findall(undated))
    market = bool(_MARKET_WORDS.search(entry))
    personal = bool(_HOLDING_WORDS.search(entry))
    if (
        dump
        or table_rows >= 3
        or (numeric_rows >= 3 and len(lines) >= 3)
        or prices >= 6
        or (market and prices >= 3 and not personal)
        or (market and len(_NUMBER.findall(undated)) >= 8)
    ):
        return (
            "Refused: this looks like tool output or market data (prices, quotes, tables). "
            "That goes stale and can be fetched again; do not store it. " + _PURPOSE
        )
    return None


@dataclass(frozen=True, slots=True)
class Duplicate:
    """An existing entry that already says what was to be written."""

    file: str
    line: int
    text: str
    how: Literal["identical", "near-identical"]


def _content_lines(text: str) -> list[tuple[int, str]]:
    return [
        (number, line)
        for number, line in enumerate(text.splitlines(), 1)
        if line.strip() and not line.lstrip().startswith("#")
    ]


def _jaccard(a: str, b: str) -> float:
    wa, wb = set(a.split()), set(b.split())
    if not wa or not wb:
        return 0.0
    return len(wa & wb) / len(wa | wb)


async def find_duplicate(
    content: str,
    *,
    files: MemoryDocuments,
    index: MemoryBackend | None,
    targets: Sequence[str],
) -> Duplicate | None:
    """An entry in `targets` (file names) that already says `content`, if any.

    Identical after normalisation, or near-identical: the same figures and either nearly the same
    words or (with an embedder) a cosine similarity of at least 0.95 against a line of a close
    search hit. Differing figures never count as a duplicate: "200 NVDA" after "150 NVDA" is news.
    """
    wanted = normalise_entry(content)
    if not wanted:
        return None
    figures = _numbers(content)
    candidates: dict[tuple[str, int], str] = {}
    for name in targets:
        for number, line in _content_lines(await asyncio.to_thread(files.read, name)):
            norm = normalise_entry(line)
            if norm == wanted:
                return Duplicate(name, number, line.strip(), "identical")
            candidates[(name, number)] = line
    if index is not None:
        try:
            hits = await index.search(content, limit=5, paths=list(targets), decay=False, mmr=False)
        except Exception:  # a broken index must not block writing to the files
            _log.debug("memory index lookup failed", exc_info=True)
            hits = []
        for hit in hits:
            for offset, line in enumerate(hit.text.splitlines()):
                if line.strip() and not line.lstrip().startswith("#"):
                    candidates.setdefault((hit.path, hit.start_line + offset), line)
    same_figures = {
        key: line
        for key, line in candidates.items()
        if _numbers(line) == figures and normalise_entry(line)
    }
    for (name, number), line in same_figures.items():
        if _jaccard(normalise_entry(line), wanted) >= NEAR_DUPLICATE_JACCARD:
            return Duplicate(name, number, line.strip(), "near-identical")
    embedder = index.embedder if index is not None else None
    if embedder is not None and same_figures:
        import numpy as np  # only with an embedder, i.e. memory on

        keys = list(same_figures)
        texts = [content.strip()] + [_BULLET.sub("", same_figures[k]).strip() for k in keys]
        try:
            vectors = np.asarray(await embedder.embed(texts), dtype=np.float32)
        except Exception:
            _log.debug("similarity check failed", exc_info=True)
            return None
        sims = vectors[1:] @ vectors[0]
        best = int(np.argmax(sims))
        if float(sims[best]) >= NEAR_DUPLICATE_COSINE:
            name, number = keys[best]
            return Duplicate(name, number, same_figures[keys[best]].strip(), "near-identical")
    return None


def resolve_file(files: MemoryDocuments, file: str, today: Today = date.today) -> str:
    """`long_term` → MEMORY.md, `daily`/`today` → today's note, else a memory file name."""
    key = file.strip()
    lowered = key.lower()
    if lowered in ("", "long_term", "long-term", "longterm", "memory", "memory.md", "evergreen"):
        return EVERGREEN_NAME
    if lowered in ("daily", "today"):
        return files.daily_name(today())
    if lowered == "yesterday":
        return files.daily_name(date.fromordinal(today().toordinal() - 1))
    if not key.endswith(".md") and re.fullmatch(r"\d{4}-\d{2}-\d{2}", key):
        key += ".md"
    key = key.removeprefix("memory/")
    try:
        return validate_name(key)
    except MemoryNameError as exc:
        raise ToolFailure(str(exc)) from exc


def _available(files: MemoryDocuments) -> str:
    names = files.list()
    if not names:
        return "There are no memory files yet."
    shown = names[-12:]
    more = f" (and {len(names) - len(shown)} older)" if len(names) > len(shown) else ""
    return "Memory files: " + ", ".join(shown) + more + "."


# ---- memory_search ------------------------------------------------------------------------

# Company names people say and the tickers they write in notes (and the reverse). The local
# embedding model barely relates "nvidia" to "NVDA", so a query naming one also searches the other.
_COMPANIES: dict[str, str] = {
    "apple": "AAPL", "microsoft": "MSFT", "nvidia": "NVDA", "amazon": "AMZN",
    "alphabet": "GOOGL", "google": "GOOGL", "meta": "META", "facebook": "META",
    "tesla": "TSLA", "berkshire": "BRK.B", "broadcom": "AVGO", "tsmc": "TSM",
    "taiwan semiconductor": "TSM", "asml": "ASML", "costco": "COST", "exxon": "XOM",
    "exxonmobil": "XOM", "chevron": "CVX", "johnson & johnson": "JNJ", "j&j": "JNJ",
    "jpmorgan": "JPM", "visa": "V", "mastercard": "MA", "walmart": "WMT", "netflix": "NFLX",
    "amd": "AMD", "intel": "INTC", "palantir": "PLTR", "oracle": "ORCL", "salesforce": "CRM",
    "adobe": "ADBE", "eli lilly": "LLY", "lilly": "LLY", "unitedhealth": "UNH",
    "coca-cola": "KO", "coca cola": "KO", "pepsico": "PEP", "pepsi": "PEP", "disney": "DIS",
    "home depot": "HD", "procter & gamble": "PG", "qualcomm": "QCOM", "micron": "MU",
    "shopify": "SHOP", "uber": "UBER", "boeing": "BA", "caterpillar": "CAT", "deere": "DE",
    "bank of america": "BAC", "goldman sachs": "GS", "pfizer": "PFE", "merck": "MRK",
    "abbvie": "ABBV", "novo nordisk": "NVO", "starbucks": "SBUX", "nike": "NKE",
    "mcdonald's": "MCD", "mcdonalds": "MCD",
}  # fmt: skip
_TICKER_NAMES: dict[str, str] = {}
for _name, _ticker in _COMPANIES.items():
    _TICKER_NAMES.setdefault(_ticker, _name)
_TICKER_TOKEN = re.compile(r"\b[A-Za-z]{2,5}(?:\.[AB])?\b")


def expand_query(query: str) -> str:
    """`query` plus the ticker of each company it names and the name of each ticker it writes.

    Tickers are recognised when written in capitals ("NVDA"); names case-insensitively on word
    boundaries ("nvidia"). Nothing is added twice or when already present.
    """
    lowered = query.lower()
    extra: list[str] = []
    for name, ticker in _COMPANIES.items():
        if re.search(rf"(?<![\w&]){re.escape(name)}(?![\w&])", lowered) and not re.search(
            rf"(?<![\w.]){re.escape(ticker.lower())}(?![\w])", lowered
        ):
            extra.append(ticker)
    for token in _TICKER_TOKEN.findall(query):
        company = _TICKER_NAMES.get(token)
        if token.isupper() and company and company not in lowered:
            extra.append(company)
    unique = list(dict.fromkeys(extra))
    return f"{query} ({' '.join(unique)})" if unique else query


class MemorySearchArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, description="e.g. 'my NVDA position'")
    limit: int = Field(default=5, ge=1, le=MAX_SEARCH_RESULTS)
    # Dates bound the daily notes searched (inclusive); the format says YYYY-MM-DD.
    since: date | None = None
    until: date | None = None


def hit_dict(hit: Hit, source: str | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {
        "path": hit.path,
        "start_line": hit.start_line,
        "end_line": hit.end_line,
        "date": hit.date.isoformat() if hit.date else None,
        "score": round(hit.score, 4),
        "vector_score": None if hit.vector_score is None else round(hit.vector_score, 4),
        "text_score": None if hit.text_score is None else round(hit.text_score, 4),
        "text": hit.text,
    }
    if source is not None:
        data["source"] = source
    return data


class MemorySearchTool(Tool[MemorySearchArgs]):
    name: ClassVar[str] = "memory_search"
    brief: ClassVar[str] = "recall what the user told you before"
    scope: ClassVar[ToolScope] = "principal"
    description: ClassVar[str] = (
        "Recall what the user told you in earlier sessions. Holdings, preferences, goals, "
        "decisions, corrections; returns passages with file, lines and date; when notes "
        "disagree the newest wins."
    )
    Args: ClassVar[type[BaseModel]] = MemorySearchArgs
    concurrency_safe: ClassVar[bool] = True
    needs_approval: ClassVar[bool] = False

    def __init__(self, index: MemoryBackend, files: MemoryDocuments) -> None:
        self.index = index
        self.files = files

    def resources(self, args: MemorySearchArgs) -> Resources:
        return Resources.of(reads=["memory"])

    async def run(self, args: MemorySearchArgs, ctx: ToolContext) -> ToolResult:
        if args.since and args.until and args.since > args.until:
            raise ToolFailure("since must not be after until")
        hits = await self.index.search(
            expand_query(args.query), limit=args.limit, since=args.since, until=args.until
        )
        mode = " (keyword-only: no embedding model)" if self.index.keyword_only else ""
        if not hits:
            return ToolResult(
                f"No memories match {args.query!r}{mode}. "
                f"{await asyncio.to_thread(_available, self.files)}",
                data={"query": args.query, "results": []},
            )
        lines = [f"{len(hits)} memories for {args.query!r}{mode}, best first:"]
        results: list[dict[str, Any]] = []
        for hit in hits:
            where = f"{hit.path}:{hit.start_line}-{hit.end_line}"
            source = ctx.sources.add(f"memory {where}", None)
            when = hit.date.isoformat() if hit.date else "long-term"
            lines.append(f"\n[{source}] {where} ({when}, score {hit.score:.2f})")
            lines.append(hit.text.strip())
            results.append(hit_dict(hit, source))
        return ToolResult("\n".join(lines), data={"query": args.query, "results": results})


# ---- memory_get ---------------------------------------------------------------------------


class MemoryGetArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    file: str = Field(
        description="MEMORY.md (or long_term), a daily note YYYY-MM-DD.md, or daily for today's"
    )
    start_line: int | None = Field(default=None, ge=1, description="first line, 1-based")
    end_line: int | None = Field(default=None, ge=1, description="last line, inclusive")


class MemoryGetTool(Tool[MemoryGetArgs]):
    name: ClassVar[str] = "memory_get"
    brief: ClassVar[str] = "read a memory file as stored"
    scope: ClassVar[ToolScope] = "principal"
    description: ClassVar[str] = (
        "Read a memory file (MEMORY.md or a daily note YYYY-MM-DD.md) exactly as stored. "
        "Optionally only lines start_line..end_line (1-based, inclusive; memory_search gives "
        "the ranges). Use it to see full context or to copy exact text for memory_update."
    )
    Args: ClassVar[type[BaseModel]] = MemoryGetArgs
    concurrency_safe: ClassVar[bool] = True
    needs_approval: ClassVar[bool] = False

    def __init__(
        self, index: MemoryBackend | None, files: MemoryDocuments, today: Today = date.today
    ) -> None:
        self.index = index
        self.files = files
        self.today = today

    def resources(self, args: MemoryGetArgs) -> Resources:
        return Resources.of(reads=["memory"])

    async def run(self, args: MemoryGetArgs, ctx: ToolContext) -> ToolResult:
        name = resolve_file(self.files, args.file, self.today)
        text = await asyncio.to_thread(self.files.read, name)
        if not text:
            available = await asyncio.to_thread(_available, self.files)
            raise ToolFailure(f"{name} does not exist or is empty. {available}")
        lines = text.splitlines()
        total = len(lines)
        start = args.start_line or 1
        end = min(args.end_line or total, total)
        if start > total:
            raise ToolFailure(f"{name} has only {total} lines; start_line {start} is past the end")
        if end < start:
            raise ToolFailure(f"end_line {args.end_line} is before start_line {start}")
        body = "\n".join(lines[start - 1 : end])
        clipped = ""
        if len(body) > MAX_GET_CHARS:
            body = body[:MAX_GET_CHARS]
            clipped = " (clipped; ask for a narrower line range)"
        header = f"{name} lines {start}-{end} of {total}{clipped}:"
        return ToolResult(
            f"{header}\n{body}",
            data={
                "file": name,
                "start_line": start,
                "end_line": end,
                "total_lines": total,
                "text": body,
            },
        )


# ---- memory_update ------------------------------------------------------------------------


class MemoryUpdateArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    action: Literal["add", "edit", "delete"] = Field(
        default="add", description="add a new entry, edit existing text, or delete it"
    )
    content: str | None = Field(
        default=None,
        description="the entry to add, or the replacement text for edit; one short fact",
    )
    file: str = Field(
        default="long_term",
        description="long_term (MEMORY.md: lasting preferences, holdings, goals), daily "
        "(today's note: decisions and events of the day), or a file name such as 2025-03-08.md",
    )
    old_text: str | None = Field(
        default=None,
        description="for edit and delete: the exact existing text (check it with memory_get)",
    )


@dataclass(frozen=True, slots=True)
class UpdateOutcome:
    written: bool
    file: str
    message: str
    duplicate: Duplicate | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"written": self.written, "file": self.file}
        if self.duplicate is not None:
            data["duplicate"] = {
                "file": self.duplicate.file,
                "line": self.duplicate.line,
                "text": self.duplicate.text,
                "how": self.duplicate.how,
            }
        return data


async def add_entry(
    files: MemoryDocuments,
    index: MemoryBackend | None,
    content: str,
    name: str,
    *,
    today: Today = date.today,
) -> UpdateOutcome:
    """Check and append one entry to `name`; re-index so search sees it at once.

    Raises ToolFailure with the refusal when the entry is unfit; a duplicate is not an error.
    """
    problem = entry_problem(content)
    if problem:
        raise ToolFailure(problem)
    targets = [name] if name == EVERGREEN_NAME else [name, EVERGREEN_NAME]
    duplicate = await find_duplicate(content, files=files, index=index, targets=targets)
    if duplicate is not None:
        return UpdateOutcome(
            False,
            name,
            f"Already remembered ({duplicate.how}) in {duplicate.file} line {duplicate.line}: "
            f"{duplicate.text}\nNothing was added.",
            duplicate,
        )
    await asyncio.to_thread(files.append, name, content)
    if index is not None:
        await index.sync()
    return UpdateOutcome(True, name, f"Remembered in {name}: {content.strip()}")


class MemoryUpdateTool(Tool[MemoryUpdateArgs]):
    name: ClassVar[str] = "memory_update"
    brief: ClassVar[str] = "save what the user tells you about themselves"
    scope: ClassVar[ToolScope] = "principal"
    description: ClassVar[str] = (
        "Save, correct or remove a fact the user told you about themselves. For future "
        "sessions, and only durable facts: preferences, decisions, holdings (shares and cost), "
        "goals, corrections; one short entry (under 500 characters) per call. Never store "
        "tool output, prices, quotes or market data. action add (default) writes content to "
        "file long_term (MEMORY.md) or daily (today's note); edit replaces old_text with "
        "content; delete removes "
        "old_text. Copy old_text exactly, using memory_get or memory_search first."
    )
    Args: ClassVar[type[BaseModel]] = MemoryUpdateArgs
    concurrency_safe: ClassVar[bool] = False
    needs_approval: ClassVar[bool] = False
    writes_memory: ClassVar[bool] = True

    def __init__(
        self, index: MemoryBackend | None, files: MemoryDocuments, today: Today = date.today
    ) -> None:
        self.index = index
        self.files = files
        self.today = today

    def resources(self, args: MemoryUpdateArgs) -> Resources:
        return Resources.of(writes=["memory", "memory-index"])

    async def run(self, args: MemoryUpdateArgs, ctx: ToolContext) -> ToolResult:
        name = resolve_file(self.files, args.file, self.today)
        if args.action == "add":
            if not args.content or not args.content.strip():
                raise ToolFailure("add needs content: the fact to remember")
            outcome = await add_entry(self.files, self.index, args.content, name, today=self.today)
            return ToolResult(outcome.message, data=outcome.to_dict())

        old = args.old_text
        if not old or not old.strip():
            raise ToolFailure(f"{args.action} needs old_text: the exact text to {args.action}")
        if old not in await asyncio.to_thread(self.files.read, name):
            available = await asyncio.to_thread(_available, self.files)
            raise ToolFailure(
                f"old_text was not found in {name}; read the exact text with memory_get "
                f"(file {name!r}) and copy it. {available}"
            )
        if args.action == "edit":
            new = (args.content or "").strip()
            if not new:
                raise ToolFailure("edit needs content: the replacement text (or use delete)")
            problem = entry_problem(new)
            if problem:
                raise ToolFailure(problem)
            # Keep the bullet of an edited list item when the model sends bare text.
            bullet = _BULLET.match(old.strip())
            if bullet and not _BULLET.match(new):
                new = bullet.group(0) + new
            changed = await asyncio.to_thread(self.files.replace_text, name, old.strip(), new)
            message = f"Edited {name}: {old.strip()!r} → {new!r}"
        else:
            changed = await asyncio.to_thread(self.files.delete_text, name, old.strip())
            message = f"Deleted from {name}: {old.strip()!r}"
        if not changed:  # pragma: no cover - checked above; the file changed in between
            raise ToolFailure(f"old_text was not found in {name}; read it again with memory_get")
        if self.index is not None:
            await self.index.sync()
        return ToolResult(message, data={"written": True, "file": name, "action": args.action})


def memory_tools(
    index: MemoryBackend, files: MemoryDocuments | None = None, *, today: Today = date.today
) -> list[Tool[Any]]:
    """The three memory tools over one index (and its files)."""
    files = files or index.files
    return [
        MemorySearchTool(index, files),
        MemoryGetTool(index, files, today),
        MemoryUpdateTool(index, files, today),
    ]
