"""Definitions, references and imports in source code, through tree-sitter's real parsers.

Python, JavaScript and TypeScript (the official grammar wheels, compiled in: nothing is fetched
at run time). Each language has one query; the captures become tags: classes and functions
defined (with their first line as the signature), names used, modules imported, and string
literals that name a data file or a ticker.
"""

from __future__ import annotations

import re
from functools import cache
from typing import TYPE_CHECKING, Any

from dexter.workspace import entities
from dexter.workspace.model import (
    CLASS,
    FUNCTION,
    IMPORT,
    METHOD,
    NAME,
    PATH,
    STRING,
    TICKER,
    FileTags,
)

if TYPE_CHECKING:
    from tree_sitter import Language, Node, Query

LANGUAGES = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".tsx": "tsx",
}
# A string literal naming a file the code reads or writes.
DATA_SUFFIXES = (
    ".csv",
    ".tsv",
    ".xlsx",
    ".xlsm",
    ".parquet",
    ".json",
    ".ipynb",
    ".md",
    ".txt",
    ".py",
    ".feather",
    ".pkl",
)
_PATHISH = re.compile(r"[\w./ -]{1,200}\.(?:" + "|".join(s[1:] for s in DATA_SUFFIXES) + r")")
_NAMEISH = re.compile(r"[A-Za-z_][A-Za-z0-9_]{1,60}")
MAX_SIGNATURE = 120

_PYTHON = """
(class_definition name: (identifier) @def.class)
(function_definition name: (identifier) @def.function)
(call function: (identifier) @ref)
(attribute attribute: (identifier) @ref)
(import_from_statement name: (dotted_name (identifier) @ref))
(import_from_statement name: (aliased_import name: (dotted_name (identifier) @ref)))
(type (identifier) @ref)
(class_definition superclasses: (argument_list (identifier) @ref))
(decorator (identifier) @ref)
(import_statement) @import
(import_from_statement) @import
(string (string_content) @string)
"""
_JAVASCRIPT = """
(function_declaration name: (identifier) @def.function)
(generator_function_declaration name: (identifier) @def.function)
(class_declaration name: (_) @def.class)
(method_definition name: (property_identifier) @def.method)
(variable_declarator
  name: (identifier) @def.function value: [(arrow_function) (function_expression)])
(call_expression function: (identifier) @ref)
(new_expression constructor: (identifier) @ref)
(member_expression property: (property_identifier) @ref)
(import_specifier name: (identifier) @ref)
(import_statement source: (string (string_fragment) @import.source))
(call_expression
  function: (identifier) @_req
  arguments: (arguments (string (string_fragment) @import.require)))
(string (string_fragment) @string)
"""
# A class's base: the grammars shape `extends` differently.
_JAVASCRIPT_ONLY = """
(class_heritage (identifier) @ref)
"""
_TYPESCRIPT = (
    _JAVASCRIPT
    + """
(interface_declaration name: (type_identifier) @def.class)
(type_alias_declaration name: (type_identifier) @def.class)
(type_identifier) @ref
(extends_clause value: (identifier) @ref)
"""
)


@cache
def _language(name: str) -> Language:
    from tree_sitter import Language

    if name == "python":
        import tree_sitter_python as grammar

        return Language(grammar.language())
    if name == "javascript":
        import tree_sitter_javascript as js

        return Language(js.language())
    import tree_sitter_typescript as ts

    return Language(ts.language_tsx() if name == "tsx" else ts.language_typescript())


@cache
def _query(name: str) -> Query:
    from tree_sitter import Query

    source = {"python": _PYTHON, "javascript": _JAVASCRIPT + _JAVASCRIPT_ONLY}.get(
        name, _TYPESCRIPT
    )
    return Query(_language(name), source)


def language_of(suffix: str) -> str | None:
    return LANGUAGES.get(suffix.lower())


def tag_code(source: bytes, language: str, into: FileTags | None = None) -> FileTags:
    """Tags of one source file (or notebook cells joined); raises on a parser failure."""
    from tree_sitter import Parser, QueryCursor

    found = into if into is not None else FileTags("code")
    tree = Parser(_language(language)).parse(source)
    captures: dict[str, list[Node]] = QueryCursor(_query(language)).captures(tree.root_node)
    defined: set[tuple[int, int]] = set()
    for capture in ("def.class", "def.function", "def.method"):
        for node in sorted(captures.get(capture, []), key=lambda n: n.start_byte):
            name = _text(node)
            kind = {"def.class": CLASS, "def.function": FUNCTION, "def.method": METHOD}[capture]
            owner = _definition_of(node)
            if kind == FUNCTION and _inside_class(owner):
                kind = METHOD
            found.add(name, kind, "def", node.start_point[0] + 1, _signature(owner))
            defined.add((node.start_byte, node.end_byte))
    seen: set[str] = set()
    for node in sorted(captures.get("ref", []), key=lambda n: n.start_byte):
        if (node.start_byte, node.end_byte) in defined:
            continue
        name = _text(node)
        if name not in seen and len(name) > 1 and name not in ("self", "cls", "this"):
            seen.add(name)
            found.add(name, NAME, "ref", node.start_point[0] + 1)
    if language == "python":
        for node in captures.get("import", []):
            how = _import_context(node)
            for module in _python_imports(node):
                found.add(module, IMPORT, "ref", node.start_point[0] + 1, how)
    else:
        for capture in ("import.source", "import.require"):
            for node in captures.get(capture, []):
                found.add(_text(node), IMPORT, "ref", node.start_point[0] + 1)
    _literals(found, captures.get("string", []))
    return found


def _literals(found: FileTags, nodes: list[Node]) -> None:
    for node in nodes:
        text = _text(node).strip()
        line = node.start_point[0] + 1
        if _PATHISH.fullmatch(text):
            found.add(text, PATH, "ref", line)
        elif entities.is_ticker_literal(text):
            found.add(text, TICKER, "ref", line)
        elif _NAMEISH.fullmatch(text):
            # Named ranges are looked up by name: `wb.defined_names["WACC"]`.
            found.add(text, STRING, "ref", line)
        if "-" in text and len(text) >= 20:
            for accession in entities.accessions(text):
                found.add(accession, "accession", "ref", line)


def _python_imports(node: Node) -> list[str]:
    """Modules an import statement names, dotted; relative ones keep their leading dots."""
    if node.type == "import_statement":
        return [
            _text(child.child_by_field_name("name") or child)
            for child in node.named_children
            if child.type in ("dotted_name", "aliased_import")
        ]
    module = node.child_by_field_name("module_name")
    base = _text(module) if module is not None else ""
    names = [
        _text(child.child_by_field_name("name") or child)
        for child in node.children_by_field_name("name")
    ]
    # `from pkg import mod` may import a module: both spellings are offered to the resolver,
    # which keeps the ones that are files.
    joined = [f"{base}.{n}" if not base.endswith(".") else f"{base}{n}" for n in names]
    return [base, *joined] if base else joined


def _import_context(node: Node) -> str:
    """ "" for an import that runs when the module loads; "lazy" inside a function, "typing"
    under `if TYPE_CHECKING:`. Only the first kind can make an import cycle fail."""
    parent = node.parent
    while parent is not None:
        if parent.type == "function_definition":
            return "lazy"
        if parent.type == "if_statement":
            condition = parent.child_by_field_name("condition")
            if condition is not None and "TYPE_CHECKING" in _text(condition):
                return "typing"
        parent = parent.parent
    return ""


def _definition_of(name: Node) -> Node:
    parent = name.parent
    return parent if parent is not None else name


def _inside_class(node: Node) -> bool:
    parent = node.parent
    while parent is not None:
        if parent.type in ("class_definition", "class_declaration", "class_body"):
            return True
        if parent.type in ("function_definition", "function_declaration"):
            return False
        parent = parent.parent
    return False


def _signature(node: Node) -> str:
    first = _text(node).split("\n", 1)[0].strip()
    if node.type in ("variable_declarator",):
        first = first.split("=>", 1)[0].strip() + " =>"
    if not node.type.startswith(("class_definition", "function_definition")):
        first = first.split(" {", 1)[0].rstrip("{").rstrip()  # a JS body on the same line
    return first if len(first) <= MAX_SIGNATURE else first[: MAX_SIGNATURE - 1] + "…"


def _text(node: Any) -> str:
    raw = node.text
    return raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else ""


__all__ = ["LANGUAGES", "language_of", "tag_code"]
