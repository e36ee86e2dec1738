"""Find and parse skills: `SKILL.md` files with YAML frontmatter and a markdown body.

A skill is a directory holding `SKILL.md`:

    ---
    name: dcf
    description: One line saying what the skill does and when to use it.
    tools: [get_financials, calculate]   # optional: the tools the workflow relies on
    ---
    The instructions, in markdown.

Skills come from three places, read in this order; a later skill replaces an earlier one with the
same frontmatter `name` (not directory name):

1. bundled: the directories next to this module (`dexter/skills/bundled/*/SKILL.md`),
2. user: `~/.dexter/skills/*/SKILL.md`,
3. project: `<DEXTER_HOME>/skills/*/SKILL.md` (the workspace's `.dexter/skills/`).

Only immediate subdirectories are scanned. A file that cannot be read or parsed is skipped and
reported as a `SkillWarning`; discovery itself never raises.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from dexter.errors import DexterError
from dexter.skills.frontmatter import InvalidFrontmatter, parse_frontmatter

log = logging.getLogger(__name__)

SkillSource = Literal["bundled", "user", "project"]

BUNDLED_DIR = Path(__file__).with_name("bundled")
SKILL_FILE = "SKILL.md"
# A skill file is instructions, not a data dump; anything larger is almost certainly a mistake.
MAX_SKILL_BYTES = 256 * 1024
MAX_DESCRIPTION_CHARS = 1_024
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_FENCE = "---"


def default_user_dir() -> Path:
    return Path.home() / ".dexter" / "skills"


class SkillError(DexterError, ValueError):
    """A SKILL.md that cannot be used; the message says why."""


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    path: Path  # the SKILL.md file
    source: SkillSource
    body: str
    tools: tuple[str, ...] = ()

    @property
    def directory(self) -> Path:
        return self.path.parent


@dataclass(frozen=True)
class SkillWarning:
    path: Path
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


@dataclass(frozen=True)
class SkillCatalog:
    """The result of discovery: usable skills (sorted by name), what was skipped, what was
    overridden (`(replaced, replacement)` pairs, for `/skills` to explain precedence)."""

    skills: list[Skill] = field(default_factory=list)
    warnings: list[SkillWarning] = field(default_factory=list)
    overridden: list[tuple[Skill, Skill]] = field(default_factory=list)

    def get(self, name: str) -> Skill | None:
        return next((s for s in self.skills if s.name == name), None)


def split_frontmatter(text: str) -> tuple[str, str]:
    """Split `---\\n<yaml>\\n---\\n<body>` into (yaml, body). Raises SkillError without it."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != _FENCE:
        raise SkillError("missing YAML frontmatter (the file must start with a '---' line)")
    for index in range(1, len(lines)):
        if lines[index].strip() == _FENCE:
            return "\n".join(lines[1:index]), "\n".join(lines[index + 1 :])
    raise SkillError("unterminated YAML frontmatter (no closing '---' line)")


def parse_skill(text: str, path: Path, source: SkillSource) -> Skill:
    """Parse one SKILL.md's text. Raises SkillError with a readable reason."""
    header, body = split_frontmatter(text)
    try:
        meta = parse_frontmatter(header)
    except InvalidFrontmatter as exc:
        raise SkillError(f"invalid YAML frontmatter: {exc}") from exc
    if not isinstance(meta, dict):
        raise SkillError("frontmatter must be a mapping with `name` and `description`")
    name = meta.get("name")
    description = meta.get("description")
    if not isinstance(name, str) or not name.strip():
        raise SkillError("frontmatter needs a string `name`")
    name = name.strip()
    if not _NAME.match(name):
        raise SkillError(
            f"skill name {name!r} must be 1-64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    if not isinstance(description, str) or not description.strip():
        raise SkillError("frontmatter needs a string `description`")
    description = " ".join(description.split())
    if len(description) > MAX_DESCRIPTION_CHARS:
        raise SkillError(f"description is longer than {MAX_DESCRIPTION_CHARS} characters")
    raw_tools = meta.get("tools", [])
    if raw_tools is None:
        raw_tools = []
    if not isinstance(raw_tools, list) or not all(
        isinstance(t, str) and t.strip() for t in raw_tools
    ):
        raise SkillError("`tools` must be a list of tool names")
    body = body.strip()
    if not body:
        raise SkillError("the skill has no instructions after the frontmatter")
    return Skill(
        name=name,
        description=description,
        path=path,
        source=source,
        body=body,
        tools=tuple(t.strip() for t in raw_tools),
    )


def load_skill(path: Path, source: SkillSource) -> Skill:
    """Read and parse one SKILL.md file. Raises SkillError."""
    try:
        size = path.stat().st_size
        if size > MAX_SKILL_BYTES:
            raise SkillError(f"file is larger than {MAX_SKILL_BYTES // 1024} KiB")
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SkillError("file is not valid UTF-8") from exc
    except OSError as exc:
        raise SkillError(f"cannot read file ({exc.strerror or type(exc).__name__})") from exc
    return parse_skill(text, path, source)


def _skill_files(root: Path) -> list[Path]:
    try:
        if not root.is_dir():
            return []
        children = sorted(root.iterdir(), key=lambda p: p.name)
    except OSError:
        return []
    files = []
    for child in children:
        if child.name.startswith("."):
            continue
        candidate = child / SKILL_FILE
        try:
            if child.is_dir() and candidate.is_file():
                files.append(candidate)
        except OSError:
            continue
    return files


def _same_dir(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


def skill_roots(home: Path, *, user_dir: Path | None = None) -> list[tuple[SkillSource, Path]]:
    """The directories searched, lowest precedence first."""
    user = user_dir if user_dir is not None else default_user_dir()
    roots: list[tuple[SkillSource, Path]] = [("bundled", BUNDLED_DIR), ("user", user)]
    project = home / "skills"
    # Running with DEXTER_HOME=~/.dexter makes the project folder the user folder: read it once.
    if not _same_dir(project, user):
        roots.append(("project", project))
    return roots


def load_skills(
    home: Path,
    *,
    user_dir: Path | None = None,
    roots: Iterable[tuple[SkillSource, Path]] | None = None,
) -> SkillCatalog:
    """Discover every skill; later sources override earlier ones by name. Never raises."""
    by_name: dict[str, Skill] = {}
    warnings: list[SkillWarning] = []
    overridden: list[tuple[Skill, Skill]] = []
    for source, root in roots if roots is not None else skill_roots(home, user_dir=user_dir):
        seen_here: dict[str, Path] = {}
        for path in _skill_files(root):
            try:
                skill = load_skill(path, source)
            except SkillError as exc:
                warnings.append(SkillWarning(path, f"skipped: {exc}"))
                continue
            if skill.name in seen_here:
                warnings.append(
                    SkillWarning(
                        path,
                        f"skipped: another {source} skill named {skill.name!r} is at "
                        f"{seen_here[skill.name]}",
                    )
                )
                continue
            seen_here[skill.name] = path
            previous = by_name.get(skill.name)
            if previous is not None:
                overridden.append((previous, skill))
            by_name[skill.name] = skill
    for warning in warnings:
        log.warning("skill %s", warning)
    skills = sorted(by_name.values(), key=lambda s: s.name)
    return SkillCatalog(skills=skills, warnings=warnings, overridden=overridden)


def discover_skills(home: Path, *, user_dir: Path | None = None) -> list[Skill]:
    """Bundled, then user (`user_dir`, default `~/.dexter/skills`), then project
    (`<home>/skills`) skills, sorted by name; malformed ones are skipped with a logged warning
    (use `load_skills` to get the warnings as data)."""
    return load_skills(home, user_dir=user_dir).skills
