"""No two of Dexter's modules import each other when they load.

A cycle of module-level imports makes import order matter and turns a refactor into an
ImportError at start-up. Imports inside functions (deliberately lazy, for start-up time) and
`TYPE_CHECKING` imports (a loop and the hooks it calls may name each other in annotations) do
not run at load and are not counted here; layering (which package may import which) is ruff's
banned-api rules' job.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(tree: ast.AST, module: str, is_package: bool, *, typing: bool) -> Iterator[str]:
    """What `module` imports at load (with `typing`, also under `TYPE_CHECKING`)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            if typing:
                yield from _imports(node, module, is_package, typing=typing)
            continue
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".") if is_package else module.split(".")[:-1]
                package = package[: len(package) - (node.level - 1)]
                base = ".".join([*package, base] if base else package)
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            yield from _imports(node, module, is_package, typing=typing)


@functools.cache
def _parsed() -> dict[str, tuple[ast.AST, bool]]:
    """Every module's syntax tree and whether it is a package, parsed once for all the tests."""
    return {
        _module_name(path): (
            ast.parse(path.read_text(encoding="utf-8")),
            path.name == "__init__.py",
        )
        for path in SRC.rglob("*.py")
    }


def _graph(*, typing: bool = False) -> dict[str, set[str]]:
    parsed = _parsed()
    graph: dict[str, set[str]] = {}
    for name, (tree, is_package) in parsed.items():
        found = _imports(tree, name, is_package, typing=typing)
        graph[name] = {target for target in found if target in parsed and target != name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (iterative Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_module_imports_another_that_imports_it_back() -> None:
    assert _cycles(_graph()) == []


def test_memory_search_sits_below_the_index() -> None:
    graph = _graph(typing=True)
    assert "dexter.memory.search" in graph["dexter.memory.index"]
    assert "dexter.memory.index" not in graph["dexter.memory.search"]


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
