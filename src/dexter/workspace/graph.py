"""Which file uses which, from the tags, and a ranking over it.

Edges point from the file that uses to the file used: an import that resolves to a file of the
workspace, a data file read or linked, a workbook linked, a function or class defined in one file
and called in another, a named range defined in a workbook and used elsewhere. Tickers and
accession numbers are shared subjects rather than uses: each is a node of its own joined to every
file that mentions it, so ranking flows between a memo and the model about the same company.

Ranking is personalised PageRank (power iteration, pure Python): the walk restarts at the files
and subjects the question names, so what they use and what uses them rank next.
"""

from __future__ import annotations

import posixpath
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from dexter.workspace.model import (
    ACCESSION,
    CLASS,
    EXTERNAL,
    FUNCTION,
    IMPORT,
    METHOD,
    NAME,
    NAMED_RANGE,
    PATH,
    STRING,
    TICKER,
    Tag,
)

# A name defined in more files than this is too common to say who uses whom ("run", "main").
MAX_DEFINERS = 4
DAMPING = 0.85
ITERATIONS = 40
WEIGHTS = {"imports": 3.0, "reads": 2.0, "links": 2.0, "named range": 2.0, "calls": 1.0}
SUBJECT_WEIGHT = 0.5
_JS_SUFFIXES = ("", ".ts", ".tsx", ".js", ".jsx", ".mjs", "/index.ts", "/index.js")


@dataclass
class Use:
    """Why `source` uses `target`: reasons ("imports", "calls wacc", "reads data/x.csv")."""

    source: str
    target: str
    reasons: list[str] = field(default_factory=list)
    weight: float = 0.0


@dataclass
class Graph:
    files: list[str]
    uses: dict[tuple[str, str], Use]
    # Subjects (tickers, accessions) and the files that mention each.
    subjects: dict[str, set[str]]

    def used_by(self, path: str) -> list[Use]:
        return sorted((u for u in self.uses.values() if u.target == path), key=_by_weight)

    def uses_of(self, path: str) -> list[Use]:
        return sorted((u for u in self.uses.values() if u.source == path), key=_by_weight)

    def imports(self) -> dict[str, set[str]]:
        found: dict[str, set[str]] = defaultdict(set)
        for use in self.uses.values():
            if "imports" in use.reasons:
                found[use.source].add(use.target)
        return found


def _by_weight(use: Use) -> tuple[float, str]:
    return (-use.weight, use.source + use.target)


def build_graph(files: Iterable[str], tags: Iterable[tuple[str, Tag]]) -> Graph:
    paths = list(files)
    known = set(paths)
    modules = module_map(paths)
    by_name = _basenames(paths)
    # Definitions by (language family, name): code calls code of its own language.
    definers: dict[tuple[str, str], set[str]] = defaultdict(set)
    families = {path: _family(path) for path in paths}
    ranges: dict[str, set[str]] = defaultdict(set)
    refs: list[tuple[str, Tag]] = []
    subjects: dict[str, set[str]] = defaultdict(set)
    for path, tag in tags:
        if tag.role == "def" and tag.kind in (FUNCTION, CLASS, METHOD):
            definers[(families.get(path) or _family(path), tag.name)].add(path)
        elif tag.role == "def" and tag.kind == NAMED_RANGE:
            ranges[tag.name].add(path)
        elif tag.kind == TICKER:
            subjects[f"ticker:{tag.name}"].add(path)
        elif tag.kind == ACCESSION:
            subjects[f"accession:{tag.name}"].add(path)
        elif tag.role == "ref":
            refs.append((path, tag))
    uses: dict[tuple[str, str], Use] = {}

    def add(source: str, target: str, reason: str, weight: float) -> None:
        if source == target:
            return
        use = uses.setdefault((source, target), Use(source, target))
        if reason not in use.reasons:
            use.reasons.append(reason)
            use.weight += weight

    imported: dict[str, set[str]] = defaultdict(set)
    for path, tag in refs:
        if tag.kind == IMPORT:
            target = resolve_import(path, tag.name, modules, known)
            if target:
                imported[path].add(target)
    for path, tag in refs:
        if tag.kind == IMPORT:
            target = resolve_import(path, tag.name, modules, known)
            if target:
                # A lazy or type-only import is a use, but not one that can close a cycle.
                reason = f"imports ({tag.detail})" if tag.detail else "imports"
                add(path, target, reason, WEIGHTS["imports"])
        elif tag.kind in (PATH, EXTERNAL):
            target = resolve_path(path, tag.name, known, by_name)
            if target:
                verb = "links" if tag.kind == EXTERNAL or path.endswith(".md") else "reads"
                add(path, target, verb, WEIGHTS[verb])
        elif tag.kind == STRING:
            for book in ranges.get(tag.name, set()):
                add(path, book, f"named range {tag.name}", WEIGHTS["named range"])
        elif tag.kind == NAME:
            # Exact case: a Python `wacc` is not the workbook's `WACC` (Excel's own formulas
            # are tagged with the name as defined).
            for book in ranges.get(tag.name, set()):
                add(path, book, f"named range {tag.name}", WEIGHTS["named range"])
            found = definers.get((families.get(path) or _family(path), tag.name))
            if not found or len(found) > MAX_DEFINERS or len(tag.name) <= 2:
                continue
            # A name counts as a use of a file the user imports, or of the one file defining a
            # name too particular to be a coincidence: `items` or `path` defined elsewhere is
            # not a use of that file.
            sure = found & imported.get(path, set())
            if not sure and len(found) == 1 and _distinctive(tag.name):
                sure = found
            for target in sure:
                add(path, target, f"calls {tag.name}", WEIGHTS["calls"] / len(found))
    for use in uses.values():
        use.reasons.sort(key=lambda r: (_REASON_ORDER.get(r.split(" ")[0], 9), r))
    return Graph(paths, uses, {k: v for k, v in subjects.items() if len(v) > 0})


_REASON_ORDER = {"imports": 0, "reads": 1, "links": 2, "named": 3, "calls": 4}


def _distinctive(name: str) -> bool:
    """snake_case with a part, CamelCase, or long: not a word any file might use."""
    core = name.strip("_")
    camel = any(c.isupper() for c in core[1:]) and any(c.islower() for c in core)
    return "_" in core or camel or len(core) >= 10


def _family(path: str) -> str:
    """Code calls code of its own language: a TypeScript `value` is not a Python `value`."""
    suffix = posixpath.splitext(path)[1].lower()
    if suffix in (".py", ".pyi", ".ipynb"):
        return "python"
    if suffix in (".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".tsx"):
        return "javascript"
    return suffix


def module_map(paths: list[str]) -> dict[str, list[str]]:
    """Dotted module names each Python file answers to: every suffix of its path, so
    `src/pkg/mod.py` is `src.pkg.mod`, `pkg.mod` and `mod`."""
    modules: dict[str, list[str]] = defaultdict(list)
    for path in paths:
        pure = PurePosixPath(path)
        if pure.suffix not in (".py", ".pyi"):
            continue
        parts = list(pure.with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        for start in range(len(parts)):
            modules[".".join(parts[start:])].append(path)
    return modules


def _basenames(paths: list[str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = defaultdict(list)
    for path in paths:
        found[PurePosixPath(path).name.casefold()].append(path)
    return found


def resolve_import(
    source: str, module: str, modules: Mapping[str, list[str]], known: set[str]
) -> str | None:
    if "/" in module:  # a JavaScript path: "./finance/wacc"
        return _resolve_js(source, module, known)
    if module.startswith("."):
        level = len(module) - len(module.lstrip("."))
        base = PurePosixPath(source).parent
        for _ in range(level - 1):
            base = base.parent
        rest = module.lstrip(".").replace(".", "/")
        stem = f"{base}/{rest}" if str(base) != "." else rest
        for candidate in (f"{stem}.py", f"{stem}/__init__.py"):
            if candidate.lstrip("/") in known:
                return candidate.lstrip("/")
        return None
    candidates = modules.get(module, [])
    if not candidates:
        return None
    if len(candidates) == 1:
        return candidates[0]
    # Several files answer to the name: the one nearest the importer.
    folder = str(PurePosixPath(source).parent)
    return min(candidates, key=lambda c: (not c.startswith(folder), c.count("/"), c))


def _resolve_js(source: str, spec: str, known: set[str]) -> str | None:
    base = posixpath.normpath(posixpath.join(posixpath.dirname(source), spec))
    for suffix in _JS_SUFFIXES:
        if base + suffix in known:
            return base + suffix
    return None


def resolve_path(
    source: str, text: str, known: set[str], by_name: Mapping[str, list[str]]
) -> str | None:
    """The workspace file a path written in `source` names: relative to `source`'s folder, to
    the root, or (when only one file has that name) by name alone."""
    clean = text.strip().strip("\"'").removeprefix("file://")
    if not clean:
        return None
    for candidate in (
        posixpath.normpath(posixpath.join(posixpath.dirname(source), clean)),
        posixpath.normpath(clean.lstrip("/")),
    ):
        if candidate in known:
            return candidate
    named = by_name.get(PurePosixPath(clean).name.casefold(), [])
    return named[0] if len(named) == 1 else None


def pagerank(graph: Graph, personal: Mapping[str, float]) -> dict[str, float]:
    """Personalised PageRank over files and subjects; `personal` weights nodes the walk
    restarts at (empty: every file alike). Returns each file's rank."""
    import numpy as np

    nodes = list(dict.fromkeys([*graph.files, *graph.subjects]))
    position = {node: i for i, node in enumerate(nodes)}
    sources: list[int] = []
    targets: list[int] = []
    weights: list[float] = []

    def edge(a: str, b: str, weight: float) -> None:
        sources.append(position[a])
        targets.append(position[b])
        weights.append(weight)

    for use in graph.uses.values():
        if use.source in position and use.target in position:
            edge(use.source, use.target, use.weight)
            # Being used also says something about the user: a little rank flows back, so
            # the model that reads a data file ranks when the data file is asked about.
            edge(use.target, use.source, use.weight * 0.3)
    for subject, paths in graph.subjects.items():
        for path in paths:
            if path in position:
                edge(path, subject, SUBJECT_WEIGHT)
                edge(subject, path, SUBJECT_WEIGHT)
    size = len(nodes)
    if size == 0:
        return {}
    src = np.asarray(sources, dtype=np.int64)
    dst = np.asarray(targets, dtype=np.int64)
    weight = np.asarray(weights, dtype=np.float64)
    out_total = np.bincount(src, weights=weight, minlength=size)
    share = weight / np.where(out_total[src] > 0, out_total[src], 1.0)
    dangling = out_total == 0
    restart = np.zeros(size)
    for node, value in personal.items():
        if value > 0 and node in position:
            restart[position[node]] += value
    if restart.sum() == 0:
        restart[: len(graph.files)] = 1.0
    restart /= restart.sum()
    rank = restart.copy()
    for _ in range(ITERATIONS):
        flowed = np.bincount(dst, weights=rank[src] * share, minlength=size)
        rank = DAMPING * flowed + (DAMPING * rank[dangling].sum() + 1 - DAMPING) * restart
    return {path: float(rank[position[path]]) for path in graph.files}


def cycle_through(imports: Mapping[str, set[str]], source: str, target: str) -> list[str] | None:
    """The import path that `source` importing `target` would close into a cycle:
    [source, target, …, source], or None."""
    if source == target:
        return [source, source]
    parents: dict[str, str] = {target: ""}
    queue = [target]
    while queue:
        node = queue.pop(0)
        for nxt in sorted(imports.get(node, ())):
            if nxt in parents:
                continue
            parents[nxt] = node
            if nxt == source:
                chain = [source]
                step = node
                while step:
                    chain.append(step)
                    step = parents[step]
                return [source, *reversed(chain[1:]), source]
            queue.append(nxt)
    return None


def cycles(imports: Mapping[str, set[str]], limit: int = 5) -> list[list[str]]:
    """Import cycles that exist now, one per strongly connected group: [a, b, …, a]."""
    found: list[list[str]] = []
    for group in _strongly_connected(imports):
        if len(group) < 2:
            continue
        inside = {n: {m for m in imports.get(n, ()) if m in group} for n in group}
        start = min(group)
        chain = cycle_through(inside, start, min(inside[start]))
        if chain is not None:
            found.append(chain)
            if len(found) >= limit:
                break
    return found


def _strongly_connected(graph: Mapping[str, set[str]]) -> list[set[str]]:
    """Tarjan's algorithm, iterative (a deep import chain must not hit the recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, list[str]]] = [(root, sorted(graph.get(root, ())))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, pending = work[-1]
            if pending:
                nxt = pending.pop()
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(graph.get(nxt, ()))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                group: set[str] = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.add(member)
                    if member == node:
                        break
                groups.append(group)
    return groups


__all__ = [
    "Graph",
    "Use",
    "build_graph",
    "cycle_through",
    "cycles",
    "module_map",
    "pagerank",
    "resolve_import",
    "resolve_path",
]
