"""Plain data every tagger returns and the index stores."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, NamedTuple

# What a file is, by what a research folder holds.
Kind = Literal["code", "notebook", "workbook", "memo", "data", "other"]
Role = Literal["def", "ref"]

# Symbol kinds: code definitions, workbook names, and the entities research text mentions.
FUNCTION = "function"
CLASS = "class"
METHOD = "method"
NAMED_RANGE = "named_range"
SHEET = "sheet"
TICKER = "ticker"
ACCESSION = "accession"
# References that name another file: an import (module text), a file read or linked (a path).
IMPORT = "import"
PATH = "path"
NAME = "name"  # an identifier used in code, resolved against definitions elsewhere
# A name written as a string in code (`wb.defined_names["WACC"]`): matched to named ranges only.
STRING = "string"
PERIOD = "period"  # a fiscal period or date a file covers (FY2024, Q3 2024, 2024-09-28)
EXTERNAL = "external_link"  # a workbook's link to another workbook


class Tag(NamedTuple):
    """One definition or reference in a file. `line` is 1-based (0: the file as a whole);
    `detail` is what a person reads (a signature, a range's target, a heading). A tuple: a big
    folder has a few hundred thousand of them, loaded at every snapshot."""

    name: str
    kind: str
    role: Role
    line: int = 0
    detail: str = ""


@dataclass
class FileTags:
    """What a tagger found in one file: its tags and an outline of a few lines for the map.
    `error` says why the file fell back to a coarse outline."""

    kind: Kind
    tags: list[Tag] = field(default_factory=list)
    outline: list[str] = field(default_factory=list)
    error: str | None = None

    def add(self, name: str, kind: str, role: Role, line: int = 0, detail: str = "") -> None:
        if name:
            self.tags.append(Tag(name, kind, role, line, detail))

    def names(self, kind: str, role: Role | None = None) -> list[str]:
        return list(
            dict.fromkeys(
                t.name for t in self.tags if t.kind == kind and (role is None or t.role == role)
            )
        )
