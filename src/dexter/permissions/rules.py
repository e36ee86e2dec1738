"""Permission rules: grammar, matching, storage in settings.json, and "allow always" proposals.

Grammar: `Tool` (every call of that tool) or `Tool(pattern)`:

    Bash                        every shell command (the floor and redirections still apply)
    Bash(git push origin main)  exactly this command (words are split like the shell does)
    Bash(npm run test:*)        this command followed by any further arguments
    Read(./data/**)             reading files matching a glob (relative to the workspace)
    Write(./notes/*.md)         writing files matching a glob; Edit(...) for edits
    WebFetch(domain:sec.gov)    fetching from sec.gov and its subdomains
    web_search                  any other tool, by its name (no pattern)

Inside the parentheses a backslash escapes `\\`, `(` and `)`. Rules are stored in the settings
file as `"permissions": {"allow": [...], "ask": [...], "deny": [...], "defaultBashDecision": "ask"}`
and re-read on every decision.
"""

from __future__ import annotations

import os
import posixpath
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from dexter.permissions.classify import (
    BACKGROUND_WRAPPERS,
    command_suffixes,
    env_is_harmless,
    redirect_reason,
    write_flag_positions,
)
from dexter.permissions.shell import ParsedCommand, Segment, command_name

RuleKind = Literal["allow", "ask", "deny"]
RULE_KINDS: tuple[RuleKind, ...] = ("allow", "ask", "deny")
SETTINGS_KEY = "permissions"
DEFAULT_BASH_KEY = "defaultBashDecision"

RULE_GRAMMAR = """\
Rules look like Tool or Tool(pattern):
  Bash                        every shell command (the safety floor still applies)
  Bash(git push origin main)  exactly this command
  Bash(npm run test:*)        this command followed by any further arguments
  Read(./data/**)             reading files matching a glob (relative to the workspace)
  Write(./notes/*.md)         writing files matching a glob (Edit(...) for edits)
  WebFetch(domain:sec.gov)    fetching from sec.gov and its subdomains
  web_search                  any other tool, by name"""

# Rule tool names -> the tools they govern.
RULE_TOOLS: dict[str, str] = {
    "Bash": "bash",
    "Read": "read_file",
    "Write": "write_file",
    "Edit": "edit_file",
    "WebFetch": "web_fetch",
}
_ALIASES = {name.lower(): name for name in RULE_TOOLS} | {
    tool: name for name, tool in RULE_TOOLS.items()
}
_PATH_TOOLS = frozenset({"Read", "Write", "Edit"})
_RULE_SHAPE = re.compile(r"([A-Za-z_][A-Za-z0-9_.-]*)(?:\((.*)\))?", re.DOTALL)
_DOMAIN = re.compile(r"[a-z0-9-]+(\.[a-z0-9-]+)*")
_PLAIN_WORD = re.compile(r"[A-Za-z0-9_@%+=:,./~^-]+")


class RuleSyntaxError(ValueError):
    """A rule string that doesn't follow the grammar; the message includes RULE_GRAMMAR."""


@dataclass(frozen=True, slots=True)
class Rule:
    tool: str
    words: tuple[str, ...] = ()
    prefix: bool = False
    path: str | None = None
    domain: str | None = None

    @property
    def tool_wide(self) -> bool:
        return not self.words and self.path is None and self.domain is None

    @property
    def governs(self) -> str:
        """The tool this rule applies to (`Bash` -> `bash`, unknown names as written)."""
        return RULE_TOOLS.get(self.tool, self.tool)

    def __str__(self) -> str:
        return format_rule(self)


def _error(text: str, why: str) -> RuleSyntaxError:
    return RuleSyntaxError(f"Invalid rule {text!r}: {why}.\n{RULE_GRAMMAR}")


def _unescape(text: str, body: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(body):
        char = body[i]
        if char == "\\" and i + 1 < len(body) and body[i + 1] in "\\()":
            out.append(body[i + 1])
            i += 2
            continue
        if char in "()":
            raise _error(text, "parentheses inside a pattern must be escaped as \\( and \\)")
        out.append(char)
        i += 1
    return "".join(out)


def parse_rule(text: str) -> Rule:
    """Parse one rule string; raises RuleSyntaxError."""
    stripped = text.strip()
    match = _RULE_SHAPE.fullmatch(stripped)
    if not match:
        raise _error(text, "expected Tool or Tool(pattern)")
    name, inner = match.group(1), match.group(2)
    tool = _ALIASES.get(name.lower(), _ALIASES.get(name, name))
    if inner is None:
        return Rule(tool)
    body = _unescape(text, inner).strip()
    if not body:
        raise _error(text, "the pattern is empty (write just the tool name for every call)")
    if tool == "Bash":
        prefix = body.endswith(":*")
        if prefix:
            body = body[:-2].rstrip()
        try:
            words = tuple(shlex.split(body, posix=True))
        except ValueError as exc:
            raise _error(text, f"cannot split the command ({exc})") from exc
        if not words:
            raise _error(text, "no command before :*")
        return Rule("Bash", words, prefix=prefix)
    if tool in _PATH_TOOLS:
        return Rule(tool, path=body)
    if tool == "WebFetch":
        if not body.startswith("domain:"):
            raise _error(text, "WebFetch patterns look like domain:example.com")
        domain = body[len("domain:") :].strip().lower().removeprefix("*.")
        if not _DOMAIN.fullmatch(domain):
            raise _error(text, f"{domain!r} is not a domain name")
        return Rule("WebFetch", domain=domain)
    raise _error(text, f"only {', '.join(RULE_TOOLS)} rules take a pattern")


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def _quote_word(word: str) -> str:
    return word if _PLAIN_WORD.fullmatch(word) else shlex.quote(word)


def format_rule(rule: Rule) -> str:
    """The canonical text of a rule; always regenerated from its parts, so nothing injects."""
    if rule.tool_wide:
        return rule.tool
    if rule.words:
        body = " ".join(_quote_word(word) for word in rule.words) + (":*" if rule.prefix else "")
    elif rule.domain is not None:
        body = f"domain:{rule.domain}"
    else:
        body = rule.path or ""
    return f"{rule.tool}({_escape(body)})"


# --- matching ----------------------------------------------------------------------------------


def _first_word_matches(rule_word: str, word: str) -> bool:
    return word == rule_word or command_name(word) == rule_word


def allow_rule_matches(rule: Rule, segment: Segment) -> bool:
    """Narrow matching for allow rules.

    Never a segment that writes through redirection or sets non-trivial environment variables;
    a prefix rule never covers a write-capable flag in the words it doesn't spell out
    (`Bash(sort:*)` does not allow `sort -o ~/.bashrc`, `Bash(git:*)` not `git -c …`).
    """
    if rule.tool != "Bash" or not segment.words:
        return False
    if segment.has_write_redirect or not env_is_harmless(segment.env):
        return False
    if any(redirect_reason(redirect) is not None for redirect in segment.redirects):
        return False  # reads from /dev/tcp, /dev/fd, /proc: never covered by a rule
    if {command_name(word) for word in segment.wrappers} & BACKGROUND_WRAPPERS:
        return False  # `nohup` / `setsid` would let the command outlive the call
    if rule.tool_wide:
        return True
    words, wanted = segment.words, rule.words
    if not _first_word_matches(wanted[0], words[0]):
        return False
    if not rule.prefix:
        return tuple(words[1:]) == wanted[1:]
    if len(words) < len(wanted) or tuple(words[1 : len(wanted)]) != wanted[1:]:
        return False
    return all(index < len(wanted) for index in write_flag_positions(words))


def block_rule_matches(rule: Rule, segment: Segment) -> bool:
    """Broad matching for deny and ask rules: also commands run through sudo, xargs, find -exec…"""
    if rule.tool != "Bash":
        return False
    if rule.tool_wide:
        return True
    wanted = rule.words
    name = posixpath.basename(wanted[0])
    candidates = [segment.words, *command_suffixes(segment.all_words)]
    for words in candidates:
        if not words or posixpath.basename(words[0]) != name:
            continue
        rest = tuple(words[1:])
        if rule.prefix and rest[: len(wanted) - 1] == wanted[1:]:
            return True
        if not rule.prefix and rest == wanted[1:]:
            return True
    return False


def _glob_regex(pattern: str) -> re.Pattern[str]:
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out), re.DOTALL)


def path_rule_matches(rule: Rule, path: Path, workspace: Path) -> bool:
    """Does a Read/Write/Edit rule cover `path` (already absolute and resolved)?

    A pattern without glob characters covers that path and everything under it.
    """
    if rule.tool_wide:
        return True
    if rule.path is None:
        return False
    pattern = rule.path
    if pattern.startswith("~/") or pattern == "~":
        anchored = str(Path.home()) + pattern[1:]
    elif pattern.startswith("/"):
        anchored = pattern
    else:
        anchored = str(workspace.resolve()) + "/" + pattern.removeprefix("./")
    anchored = posixpath.normpath(anchored)
    target = posixpath.normpath(str(path))
    if not any(char in anchored for char in "*?"):
        return target == anchored or target.startswith(anchored.rstrip("/") + "/")
    return bool(_glob_regex(anchored).fullmatch(target))


def domain_rule_matches(rule: Rule, host: str) -> bool:
    if rule.tool_wide:
        return True
    if rule.domain is None:
        return False
    host = host.lower().rstrip(".")
    return host == rule.domain or host.endswith("." + rule.domain)


def propose_rule(parsed: ParsedCommand) -> str | None:
    """The rule "allow always" would save: exactly this one command, or nothing.

    Only a single parseable command with no redirection and no environment assignments gets one,
    and it is always an exact rule, so approving `git push origin main` saves
    `Bash(git push origin main)` and approving `sed -i …` saves that exact command: a proposal can
    never widen to other arguments or flags.
    """
    if not parsed.parseable or len(parsed.segments) != 1:
        return None
    segment = parsed.segments[0]
    if not segment.words or segment.env:
        return None
    if any(r.op not in (">&", "<&") and r.target != "/dev/null" for r in segment.redirects):
        return None
    if any(r.is_write for r in segment.redirects):
        return None
    return format_rule(Rule("Bash", segment.words))


# --- storage -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RuleSet:
    allow: tuple[Rule, ...] = ()
    ask: tuple[Rule, ...] = ()
    deny: tuple[Rule, ...] = ()
    default_bash: Literal["ask", "deny"] = "ask"
    # Entries that were skipped (malformed rules, wrong types), for `dexter permissions list`.
    problems: tuple[str, ...] = ()

    def of(self, kind: RuleKind) -> tuple[Rule, ...]:
        return {"allow": self.allow, "ask": self.ask, "deny": self.deny}[kind]

    def for_tool(self, kind: RuleKind, tool: str) -> list[Rule]:
        return [rule for rule in self.of(kind) if rule.governs == tool]


def rules_from_settings(data: Mapping[str, Any]) -> RuleSet:
    """Rules from parsed settings; malformed entries are skipped and reported in `problems`."""
    section = data.get(SETTINGS_KEY)
    if section is None:
        return RuleSet()
    if not isinstance(section, dict):
        return RuleSet(problems=(f'"{SETTINGS_KEY}" must be an object; ignored',))
    problems: list[str] = []
    lists: dict[str, list[Rule]] = {}
    for kind in RULE_KINDS:
        raw = section.get(kind, [])
        lists[kind] = []
        if not isinstance(raw, list):
            problems.append(f'"{SETTINGS_KEY}.{kind}" must be a list of rules; ignored')
            continue
        for entry in raw:
            if not isinstance(entry, str):
                problems.append(f"{kind}: {entry!r} is not a string; ignored")
                continue
            try:
                lists[kind].append(parse_rule(entry))
            except RuleSyntaxError:
                problems.append(f"{kind}: {entry!r} is not a valid rule; ignored")
    default = section.get(DEFAULT_BASH_KEY, "ask")
    if default not in ("ask", "deny"):
        problems.append(
            f'"{DEFAULT_BASH_KEY}" must be "ask" or "deny" (got {default!r}); using "ask"'
        )
        default = "ask"
    return RuleSet(
        allow=tuple(lists["allow"]),
        ask=tuple(lists["ask"]),
        deny=tuple(lists["deny"]),
        default_bash="deny" if default == "deny" else "ask",
        problems=tuple(problems),
    )


def load_rules(settings_path: Path) -> RuleSet:
    """Read the rules from disk (ConfigError when the settings file is unreadable)."""
    from dexter.config import read_settings_file

    return rules_from_settings(read_settings_file(Path(os.path.realpath(settings_path))))


def _section(settings_path: Path) -> dict[str, Any]:
    from dexter.config import ConfigError, read_settings_file

    data = read_settings_file(Path(os.path.realpath(settings_path)))
    section = data.get(SETTINGS_KEY, {})
    if not isinstance(section, dict):
        raise ConfigError(
            f'"{SETTINGS_KEY}" in {settings_path} is not an object; fix it before adding rules.'
        )
    return dict(section)


def add_rule(settings_path: Path, kind: RuleKind, rule: str | Rule) -> tuple[Rule, bool]:
    """Append a rule (canonical form) to `kind`, removing it from the other lists.

    Returns the rule and whether anything changed. Other settings keys, and other keys inside
    `permissions`, are kept; a settings file that doesn't parse is refused (ConfigError).
    """
    if kind not in RULE_KINDS:
        raise ValueError(f"rule kind must be one of {', '.join(RULE_KINDS)}")
    parsed = parse_rule(rule) if isinstance(rule, str) else rule
    section = _section(settings_path)
    changed = False
    for other in RULE_KINDS:
        if other != kind and other not in section:
            continue
        entries = _entries(settings_path, section, other)
        same = [isinstance(e, str) and _same_rule(e, parsed) for e in entries]
        if other == kind:
            if any(same):
                # Already there: keep the first copy in place, drop duplicates.
                first = same.index(True)
                kept = [e for i, e in enumerate(entries) if i == first or not same[i]]
            else:
                kept = [*entries, format_rule(parsed)]
        else:
            kept = [e for i, e in enumerate(entries) if not same[i]]
        if kept != entries or other not in section:
            changed = True
        section[other] = kept
    if changed:
        _save(settings_path, section)
    return parsed, changed


def _entries(settings_path: Path, section: dict[str, Any], kind: str) -> list[Any]:
    from dexter.config import ConfigError

    entries = section.get(kind, [])
    if not isinstance(entries, list):
        raise ConfigError(
            f'"{SETTINGS_KEY}.{kind}" in {settings_path} is not a list; fix it before changing '
            "rules."
        )
    return list(entries)


def _same_rule(entry: str, rule: Rule) -> bool:
    try:
        return parse_rule(entry) == rule
    except RuleSyntaxError:
        return False


def remove_rule(settings_path: Path, rule: str | Rule) -> list[RuleKind]:
    """Remove a rule from every list; returns the kinds it was removed from."""
    parsed = parse_rule(rule) if isinstance(rule, str) else rule
    section = _section(settings_path)
    removed: list[RuleKind] = []
    for kind in RULE_KINDS:
        entries = section.get(kind)
        if not isinstance(entries, list):
            continue
        kept = [e for e in entries if not (isinstance(e, str) and _same_rule(e, parsed))]
        if len(kept) != len(entries):
            section[kind] = kept
            removed.append(kind)
    if removed:
        _save(settings_path, section)
    return removed


def reset_rules(settings_path: Path) -> None:
    """Remove the whole `permissions` section (built-in behaviour only)."""
    from dexter.config import read_settings_file, save_setting

    if SETTINGS_KEY in read_settings_file(Path(os.path.realpath(settings_path))):
        save_setting(settings_path, SETTINGS_KEY, None)


def _save(settings_path: Path, section: dict[str, Any]) -> None:
    from dexter.config import save_setting

    save_setting(settings_path, SETTINGS_KEY, section)


def rules_as_json(rules: RuleSet) -> dict[str, Any]:
    return {
        "allow": [format_rule(r) for r in rules.allow],
        "ask": [format_rule(r) for r in rules.ask],
        "deny": [format_rule(r) for r in rules.deny],
        DEFAULT_BASH_KEY: rules.default_bash,
        "problems": list(rules.problems),
    }


def first_match(rules: Sequence[Rule], segment: Segment, *, allow: bool) -> Rule | None:
    matcher = allow_rule_matches if allow else block_rule_matches
    return next((rule for rule in rules if matcher(rule, segment)), None)
