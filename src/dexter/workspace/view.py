"""Questions asked of an indexed workspace: the ranked map, a symbol's definitions and
references, a file's one-hop neighbours, and whether a new import would close a cycle."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from dexter.models.estimate import CHARS_PER_TOKEN, estimate_tokens
from dexter.workspace import entities
from dexter.workspace.graph import (
    Graph,
    Use,
    build_graph,
    cycle_through,
    cycles,
    module_map,
    pagerank,
    resolve_import,
)
from dexter.workspace.index import FileRow
from dexter.workspace.model import (
    ACCESSION,
    CLASS,
    FUNCTION,
    IMPORT,
    METHOD,
    NAME,
    NAMED_RANGE,
    PERIOD,
    TICKER,
    Tag,
)

DEFAULT_BUDGET = 2_000
MAX_LINES_PER_FILE = 14
# Weights of what a question names, for the walk's restarts.
NAMED_FILE = 20.0
NAMED_SYMBOL = 5.0
NAMED_SUBJECT = 4.0
KIND_ORDER = {"workbook": 0, "notebook": 1, "memo": 2, "code": 3, "data": 4, "other": 5}
_COMMON = frozenset(
    "the and for how why what who new all any are was can did does has had not but our you "
    "its his her one two may use see fix add get set run show list tell find make with from "
    "into than then them they this that these those when where which will would could should "
    "about after again also been being both each more most much must only over same some such "
    "very".split()
)
_WORD = re.compile(r"[\w./-]+")
# Kinds a person looks up by name.
SYMBOL_KINDS = frozenset({FUNCTION, CLASS, METHOD, NAMED_RANGE, "sheet", "column", "heading"})


@dataclass
class MapResult:
    text: str
    tokens: int
    shown: list[str]
    focus: list[str]
    total_files: int


@dataclass
class Hit:
    path: str
    line: int
    kind: str
    detail: str


@dataclass
class SymbolHits:
    name: str
    definitions: list[Hit] = field(default_factory=list)
    references: list[Hit] = field(default_factory=list)


@dataclass
class Related:
    path: str
    kind: str
    interface: list[str]
    uses: list[tuple[str, list[str], list[str]]]  # (file, reasons, that file's interface)
    used_by: list[tuple[str, list[str], list[str]]]
    subjects: list[tuple[str, list[str]]]  # (ticker/accession, other files mentioning it)


class Snapshot:
    """The index's files and tags at one moment, with their graph."""

    def __init__(self, root: str, files: list[FileRow], tags: list[tuple[str, Tag]]) -> None:
        self.root = root
        self.files = {f.path: f for f in files}
        self.tags_by_file: dict[str, list[Tag]] = defaultdict(list)
        for path, tag in tags:
            self.tags_by_file[path].append(tag)
        listed = [f.path for f in files if not (f.kind == "other" and f.error == "binary")]
        self.graph: Graph = build_graph(listed, tags)

    # ------------------------------------------------------------------ the map

    def focus(self, question: str) -> tuple[dict[str, float], list[str], list[str]]:
        """The walk's restart weights for `question`, the files it names (in the order it names
        them) and everything else it named (symbols, tickers, accessions)."""
        personal: dict[str, float] = defaultdict(float)
        named_files: list[str] = []
        named: list[str] = []
        words = _WORD.findall(question)
        by_name: dict[str, list[str]] = defaultdict(list)
        for path in self.graph.files:
            pure = PurePosixPath(path)
            by_name[pure.name.casefold()].append(path)
            if len(pure.stem) >= 3:
                by_name[pure.stem.casefold()].append(path)
        for raw in words:
            word = raw.strip("./-,")
            if not word:
                continue
            folded = word.casefold()
            hits = [p for p in self.graph.files if p.casefold() == folded]
            hits = hits or by_name.get(folded, []) or by_name.get(PurePosixPath(folded).name, [])
            if hits and not re.search(r"[./_\-\d]", word):
                # A plain word that is a file's stem ("build", "tools") may be just a word: a
                # hint toward those files, not a file the question names.
                for path in hits:
                    personal[path] += NAMED_FILE / len(hits) / 4
                continue
            if not hits and "/" in raw:
                # A folder ("models/"): its files share a restart weight, none is "named".
                inside = [p for p in self.graph.files if p.casefold().startswith(folded + "/")]
                for path in inside:
                    personal[path] += NAMED_FILE / len(inside)
                continue
            for path in hits:
                if path not in named_files:
                    named_files.append(path)
                personal[path] += NAMED_FILE
        symbols = self._definers()
        for raw in words:
            word = raw.strip("./-,")
            definers = symbols.get(word, set())
            plain = word.isalpha() and word.islower()
            if len(word) < 3 or (plain and (len(word) < 4 or len(definers) > 2)):
                definers = set()  # "a", "build", "run": words before they are symbols
            for path in definers:
                personal[path] += NAMED_SYMBOL
                named.append(word)
            # Tickers as written ("NVDA"), or in lower case when not a common word ("nvda").
            ticker_like = word.isupper() or (len(word) >= 3 and word.lower() not in _COMMON)
            subject = (
                f"ticker:{word.upper()}"
                if word.isalpha() and len(word) <= 5 and ticker_like
                else ""
            )
            if subject in self.graph.subjects and word not in entities.NOT_TICKERS:
                personal[subject] += NAMED_SUBJECT
                named.append(word.upper())
        for accession in entities.accessions(question):
            if f"accession:{accession}" in self.graph.subjects:
                personal[f"accession:{accession}"] += NAMED_SUBJECT
                named.append(accession)
        return dict(personal), named_files, list(dict.fromkeys(named))

    def _definers(self) -> dict[str, set[str]]:
        found: dict[str, set[str]] = defaultdict(set)
        for path, tags in self.tags_by_file.items():
            for tag in tags:
                if tag.role == "def" and tag.kind in (FUNCTION, CLASS, METHOD, NAMED_RANGE):
                    found[tag.name].add(path)
        return found

    def ranked(self, question: str) -> tuple[list[str], list[str], list[str]]:
        personal, named_files, named = self.focus(question)
        rank = pagerank(self.graph, personal)
        # Unranked files (nothing points at them) by kind: models and memos before config.
        rest = sorted(
            (p for p in self.graph.files if p not in named_files),
            key=lambda p: (-round(rank[p], 12), KIND_ORDER.get(self.files[p].kind, 9), p),
        )
        return [*named_files, *rest], named_files, named

    def render_map(self, question: str = "", budget: int = DEFAULT_BUDGET) -> MapResult:
        """A ranked outline of the workspace that fits `budget` tokens: the files the question
        names first, then by rank; each with its outline while it fits, then bare paths."""
        order, named_files, named = self.ranked(question)
        focus = [*named_files, *named]
        head = f"Workspace {self.root}: {len(order)} files"
        head += f", ranked toward {', '.join(focus[:6])}" if focus else ", ranked by use"
        lines = [head + "."]
        lines += ["Import cycle: " + " → ".join(c) for c in cycles(self.graph.imports(), 3)]
        # Room is kept for the closing "… and N more files" line at every step.
        more = estimate_tokens(f"\n… and {len(order)} more files (not shown)")
        while len(lines) > 1 and estimate_tokens("\n".join(lines)) + more > budget:
            lines.pop()  # a tiny budget: the cycles go first
        room = int((budget - more) * CHARS_PER_TOKEN) - 1
        if estimate_tokens(lines[0]) + more > budget:
            lines[0] = lines[0][: max(0, room - 1)] + "…"
        used = estimate_tokens("\n".join(lines))
        named_set = set(named)
        shown: list[str] = []
        for number, path in enumerate(order):
            reserve = 0 if number == len(order) - 1 else more
            block = self._block(path, named_set)
            cost = estimate_tokens("\n" + block)
            if used + cost + reserve <= budget:
                lines.append(block)
                shown.append(path)
                used += cost
                continue
            line = f"{path} [{self.files[path].kind}]"
            cost = estimate_tokens("\n" + line)
            if used + cost + reserve > budget:
                break
            lines.append(line)  # no room for its outline: the path, in its rank
            shown.append(path)
            used += cost
        left = len(order) - len(shown)
        if left:
            lines.append(f"… and {left} more files (not shown)")
        text = "\n".join(lines)
        return MapResult(text, estimate_tokens(text), shown, focus, len(order))

    def _block(self, path: str, named: set[str]) -> str:
        row = self.files[path]
        lines = [f"{path} [{row.kind}]"]
        body = self._interface(path, named)
        if len(body) > MAX_LINES_PER_FILE:
            hidden = len(body) - MAX_LINES_PER_FILE + 1
            body = [*body[: MAX_LINES_PER_FILE - 1], f"… {hidden} more"]
        lines += [f"  {line}" for line in body]
        return "\n".join(lines)

    def _interface(self, path: str, named: set[str] | None = None) -> list[str]:
        """What a file offers others: its definitions' signatures for code, its outline for
        everything else; definitions the question names come first."""
        row = self.files[path]
        if row.kind != "code":
            return list(row.outline)
        defs = [
            t
            for t in self.tags_by_file.get(path, [])
            if t.role == "def" and t.kind in (CLASS, FUNCTION, METHOD)
        ]
        defs.sort(key=lambda t: t.line)
        # Public names first (a private helper is not an interface), keeping each class with
        # its methods; a private class's methods are private with it.
        hidden: set[int] = set()
        in_private_class = False
        for t in defs:
            private = t.name.startswith("_") and not (
                t.name.startswith("__") and t.name.endswith("__")
            )
            if t.kind == METHOD:
                private = private or in_private_class
            else:
                in_private_class = private and t.kind == CLASS
            if private:
                hidden.add(id(t))
        defs.sort(key=lambda t: (t.name not in (named or ()), id(t) in hidden, t.line))
        lines = [("  " if t.kind == METHOD else "") + (t.detail or t.name) for t in defs]
        return lines or list(row.outline) or ["(no definitions)"]

    # ------------------------------------------------------------------ symbols

    def find_symbol(self, name: str, tags: list[tuple[str, Tag]]) -> SymbolHits:
        """Definitions and references of `name` among `tags` (the index's tags with that
        name): a function or class, a named range, a ticker, an accession number."""
        hits = self._matching(name, tags, any_case=False)
        if not hits.definitions:
            loose = self._matching(name, tags, any_case=True)  # "dcf" for `DCF`
            hits = loose if loose.definitions else hits
        defined_in = {h.path for h in hits.definitions}
        # A name used in a file that neither defines it nor uses a definer is a different
        # thing with the same name (a local variable): only references that reach a
        # definition count, when there is one.
        if defined_in and any(h.kind in (FUNCTION, CLASS, METHOD) for h in hits.definitions):
            hits.references = [
                h
                for h in hits.references
                if h.kind != NAME or h.path in defined_in or self._reaches(h.path, defined_in)
            ]
        return hits

    def _matching(self, name: str, tags: list[tuple[str, Tag]], *, any_case: bool) -> SymbolHits:
        hits = SymbolHits(name)
        wanted = name.strip()
        accession = entities.accessions(wanted)
        seen: set[tuple[str, int, str, str, str]] = set()
        for path, tag in tags:
            exact = tag.name == wanted
            loose = tag.name.casefold() == wanted.casefold()
            if any_case or tag.kind in (
                TICKER,
                NAMED_RANGE,
                ACCESSION,
                "sheet",
                "column",
                "heading",
            ):
                match = loose
            else:
                match = exact
            if accession and tag.kind == ACCESSION:
                match = tag.name == accession[0]
            if not match or tag.kind in (PERIOD, IMPORT):
                continue
            hit = Hit(path, tag.line, tag.kind, tag.detail)
            key = (path, tag.line, tag.kind, tag.role, tag.detail)
            if key in seen:
                continue  # `models.dcf` and `DCF` on one line, found in any case
            seen.add(key)
            if tag.role == "def":
                hits.definitions.append(hit)
            else:
                hits.references.append(hit)
        return hits

    def symbols(self, pattern: str = "", limit: int = 200) -> list[Hit]:
        """Definitions whose name contains `pattern` (any case): functions, classes, named
        ranges, sheets, columns, headings, in path order."""
        folded = pattern.casefold()
        found: list[Hit] = []
        for path in sorted(self.tags_by_file):
            for tag in self.tags_by_file[path]:
                if tag.role == "def" and tag.kind in SYMBOL_KINDS and folded in tag.name.casefold():
                    found.append(Hit(path, tag.line, tag.kind, tag.detail or tag.name))
                    if len(found) >= limit:
                        return found
        return found

    def _reaches(self, path: str, targets: set[str]) -> bool:
        return any(use.target in targets for use in self.graph.uses_of(path))

    # ------------------------------------------------------------------ neighbours

    def related(self, path: str) -> Related:
        row = self.files[path]

        def side(uses: list[Use], other: str) -> list[tuple[str, list[str], list[str]]]:
            return [
                (getattr(u, other), u.reasons, self._interface(getattr(u, other))[:8]) for u in uses
            ]

        subjects: list[tuple[str, list[str]]] = []
        for subject, paths in sorted(self.graph.subjects.items()):
            if path in paths and len(paths) > 1:
                subjects.append((subject, sorted(p for p in paths if p != path)))
        return Related(
            path,
            row.kind,
            self._interface(path),
            side(self.graph.uses_of(path), "target"),
            side(self.graph.used_by(path), "source"),
            subjects,
        )

    def would_cycle(self, source: str, target: str) -> list[str] | None:
        return cycle_through(self.graph.imports(), source, target)

    def resolve(self, text: str) -> str | None:
        """The indexed file `text` names: a path relative to the root, or a unique file name."""
        clean = text.strip().removeprefix("./")
        if clean in self.files:
            return clean
        folded = clean.casefold()
        named = [p for p in self.files if PurePosixPath(p).name.casefold() == folded]
        if len(named) == 1:
            return named[0]
        tail = [p for p in self.files if p.casefold().endswith("/" + folded)]
        return tail[0] if len(tail) == 1 else None

    def module_target(self, source: str, module: str) -> str | None:
        """The file an import of `module` written in `source` would load."""
        paths = list(self.files)
        return resolve_import(source, module, module_map(paths), set(paths)) or self.resolve(module)


def hits_json(hits: SymbolHits) -> dict[str, Any]:
    return {
        "name": hits.name,
        "definitions": [h.__dict__ for h in hits.definitions],
        "references": [h.__dict__ for h in hits.references],
    }


__all__ = ["DEFAULT_BUDGET", "Hit", "MapResult", "Related", "Snapshot", "SymbolHits", "hits_json"]
