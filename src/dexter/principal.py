"""Whose data a run may touch: the operator, a chat user, a group, an MCP host, a web user.

A `Principal` is plain data carried by `AgentSpec` and every `ToolContext`. The runtime resolves
what belongs to it (sessions, memory, jobs, usage rows, the folders the file tools may see, the
approver) and the permission layer decides on (principal, tool, arguments). The operator is the
person who installed Dexter and keeps every power; everyone else starts with the public research
tools and their own memory and jobs, and gets more only by an explicit grant.

This module sits at the ground: it imports nothing of Dexter's, so every layer can use it.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

PrincipalKind = Literal["operator", "user", "group", "mcp", "web"]
PRINCIPAL_KINDS: tuple[PrincipalKind, ...] = ("operator", "user", "group", "mcp", "web")

OPERATOR_ID = "operator"
# Per-principal state (memory, permission answers) lives under DEXTER_HOME/principals/<slug>/.
PRINCIPALS_DIR = "principals"

# What a tool reaches, declared on the tool class (`Tool.scope`):
# - "public": public data only (filings, prices, the open web, arithmetic, skills);
# - "principal": the principal's own data (memory, jobs), bound to that principal's stores;
# - "operator": the operator's machine or private data (files, shell, MCP servers, the heartbeat
#   checklist). The default, so a new tool is operator-only until it says otherwise.
ToolScope = Literal["public", "principal", "operator"]
SHARED_SCOPES: frozenset[str] = frozenset({"public", "principal"})

_ID_TEXT = re.compile(r"^[\w.:@+/=-]{1,200}$")
_SLUG_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class PrincipalError(ValueError):
    """A principal id or grant that cannot be used; the message says what is wrong."""


@dataclass(frozen=True)
class FileGrants:
    """Folders a principal's file tools may read (and write). Absolute, expanded paths."""

    read: tuple[Path, ...] = ()
    write: tuple[Path, ...] = ()

    @property
    def readable(self) -> tuple[Path, ...]:
        """Every folder reading may use: writing somewhere implies reading it."""
        return tuple(dict.fromkeys((*self.read, *self.write)))


@dataclass(frozen=True)
class Grants:
    """What the operator gave a principal beyond the default (public tools, own memory/jobs)."""

    files: FileGrants = field(default_factory=FileGrants)
    # Operator-scope tools bound anyway, by name (e.g. an MCP server's tool, `heartbeat`).
    tools: frozenset[str] = frozenset()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None, *, base: Path | None = None) -> Grants:
        """`{"files": {"read": [...], "write": [...]}, "tools": [...]}`; paths may use `~`."""
        if not data:
            return cls()
        files = data.get("files") or {}
        if not isinstance(files, Mapping):
            raise PrincipalError('"files" must be an object like {"read": ["~/research"]}')
        unknown = sorted(set(files) - {"read", "write"})
        if unknown:
            raise PrincipalError(f'unknown file grant "{unknown[0]}" (use "read" or "write")')
        tools = data.get("tools") or []
        if not isinstance(tools, list) or not all(isinstance(t, str) for t in tools):
            raise PrincipalError('"tools" must be a list of tool names')
        read, write = _folders(files.get("read"), base), _folders(files.get("write"), base)
        if len(read) > 1 or len(write) > 1:
            # The file tools work in one folder; several would need a root per path.
            raise PrincipalError(
                "grant one folder to read and one to write (not a list of several)"
            )
        return cls(
            FileGrants(read=read, write=write),
            frozenset(t.strip() for t in tools if t.strip()),
        )

    def to_dict(self) -> dict[str, Any]:
        found: dict[str, Any] = {}
        files = {
            key: [str(p) for p in paths]
            for key, paths in (("read", self.files.read), ("write", self.files.write))
            if paths
        }
        if files:
            found["files"] = files
        if self.tools:
            found["tools"] = sorted(self.tools)
        return found

    def meet(self, other: Grants) -> Grants:
        """What both allow: a folder of one inside a folder of the other, tools in both."""
        return Grants(
            FileGrants(
                read=_common(self.files.readable, other.files.readable),
                write=_common(self.files.write, other.files.write),
            ),
            self.tools & other.tools,
        )

    @property
    def empty(self) -> bool:
        return not (self.files.read or self.files.write or self.tools)


def _folders(raw: object, base: Path | None) -> tuple[Path, ...]:
    if raw is None:
        return ()
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not all(isinstance(p, str) for p in raw):
        raise PrincipalError("file grants must be a list of folder paths")
    found: list[Path] = []
    for text in raw:
        if not text.strip() or "\x00" in text:
            raise PrincipalError("a granted folder path is empty")
        path = Path(os.path.expanduser(text.strip()))
        if not path.is_absolute():
            if base is None:
                raise PrincipalError(f"granted folder {text!r} must be absolute or start with ~")
            path = base / path
        found.append(Path(os.path.realpath(path)))
    return tuple(dict.fromkeys(found))


def _common(a: Iterable[Path], b: Iterable[Path]) -> tuple[Path, ...]:
    left, right = list(a), list(b)
    found = [p for p in left if any(p.is_relative_to(q) for q in right)]
    found += [q for q in right if any(q.is_relative_to(p) for p in left)]
    return tuple(dict.fromkeys(found))


def check_id(principal_id: str) -> str:
    if not _ID_TEXT.match(principal_id) or ".." in principal_id:
        raise PrincipalError(
            f"{principal_id!r} is not a principal id (like telegram:222 or slack:T01/U02)"
        )
    return principal_id


@dataclass(frozen=True)
class Principal:
    """Who a run acts for. `id` is stable ("telegram:222", "slack:T01/U02", "mcp:claude").

    `reply_target` is the one delivery target this principal's jobs may use (its own chat);
    None for the operator (any target) and for principals without a chat (MCP hosts).
    """

    id: str
    kind: PrincipalKind
    display_name: str = ""
    grants: Grants = field(default_factory=Grants)
    reply_target: str | None = None

    def __post_init__(self) -> None:
        check_id(self.id)
        if self.kind not in PRINCIPAL_KINDS:
            raise PrincipalError(f"unknown principal kind {self.kind!r}")
        if (self.kind == "operator") != (self.id == OPERATOR_ID):
            raise PrincipalError("only the principal 'operator' is of kind operator")

    @property
    def is_operator(self) -> bool:
        return self.kind == "operator"

    @property
    def label(self) -> str:
        """How messages name it: `telegram:222 (Ana)`."""
        return f"{self.id} ({self.display_name})" if self.display_name else self.id

    @property
    def slug(self) -> str:
        return principal_slug(self.id)

    def home(self, dexter_home: Path) -> Path:
        """Where this principal's own files live (memory, its permission answers). The
        operator's are the home itself, as before principals existed."""
        if self.is_operator:
            return dexter_home
        return dexter_home / PRINCIPALS_DIR / self.slug

    def limited_to(self, other: Principal) -> Principal:
        """This principal with only what `other` may do as well: a group run started by a
        member never unlocks more than that member could do alone."""
        if other.is_operator:
            return self
        if self.is_operator:
            return replace(other)
        return replace(self, grants=self.grants.meet(other.grants))

    def may_use_tool(self, name: str, scope: str) -> bool:
        """Whether a tool of `scope` named `name` is bound for this principal (files aside:
        the file tools follow the file grants)."""
        return self.is_operator or scope in SHARED_SCOPES or name in self.grants.tools


OPERATOR = Principal(OPERATOR_ID, "operator", "the operator")


def principal_slug(principal_id: str) -> str:
    """A folder name for `principal_id`: readable, and unique even where two ids differ only in
    characters a file name cannot keep (a short hash of the id is appended)."""
    check_id(principal_id)
    readable = _SLUG_UNSAFE.sub("_", principal_id).strip("._-")[:60] or "principal"
    digest = hashlib.sha256(principal_id.encode("utf-8")).hexdigest()[:8]
    return f"{readable}-{digest}"


__all__ = [
    "OPERATOR",
    "OPERATOR_ID",
    "PRINCIPALS_DIR",
    "PRINCIPAL_KINDS",
    "FileGrants",
    "Grants",
    "Principal",
    "PrincipalError",
    "PrincipalKind",
    "ToolScope",
    "check_id",
    "principal_slug",
]
