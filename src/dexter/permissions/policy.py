"""`RulesPolicy`: the permission gate backed by settings-file rules, the shell lexer and the floor.

Shell commands, in order:
1. the built-in floor (secrets, env injection, destructive commands, `curl | sh` …) -> deny;
   it is checked first and also on text the lexer refuses, because deny is safer than ask;
2. unparseable -> ask, never cacheable, no proposal;
3. a user deny rule matching any segment -> deny;
4. a user ask rule matching any segment -> ask;
5. every segment allowed by an allow rule (or read-only by itself) -> allow;
6. otherwise `defaultBashDecision` (ask, with a session key `bash:<command>` and a proposal).

Files: reading is allowed inside the workspace and asked about outside it; writes and edits ask
(session key `file:write`); secret files are always denied, and so are writes to shell startup
files and to the settings file that holds these rules. `web_fetch` is allowed unless a rule asks
or denies its host. Other tools ask when they say they need approval.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from dexter.permissions.classify import (
    floor_reason,
    is_protected_path,
    is_shell_rc,
    mentions_secret,
    not_read_only_reason,
)
from dexter.permissions.gate import Decision, Verdict
from dexter.permissions.readonly import git_subcommand
from dexter.permissions.rules import (
    Rule,
    RuleKind,
    RuleSet,
    add_rule,
    domain_rule_matches,
    first_match,
    format_rule,
    load_rules,
    path_rule_matches,
    propose_rule,
    remove_rule,
    reset_rules,
)
from dexter.permissions.secrets import DEXTER_SECRET_DIRS, DEXTER_SECRET_FILES
from dexter.permissions.shell import Segment, command_name, parse_command

_log = logging.getLogger(__name__)

FILE_WRITE_KEY = "file:write"
_FILE_TOOLS = {"read_file": "Read", "write_file": "Write", "edit_file": "Edit"}


def bash_session_key(command: str) -> str:
    return f"bash:{command.strip()}"


# Without an OS sandbox the classifier is the only wall, so only these plain readers run unasked.
STRICT_READERS = frozenset(
    {"ls", "pwd", "cat", "head", "tail", "wc", "echo", "grep", "egrep", "fgrep", "sort", "uniq",
     "cut", "tr", "stat", "file", "du", "df", "which", "basename", "dirname", "realpath", "date",
     "whoami", "uname", "id", "true", "false", "diff", "cmp", "sha256sum", "md5sum", "nl", "tac",
     "column", "tree", "git"}
)  # fmt: skip
_STRICT_GIT = frozenset({"status", "log", "diff", "show", "branch", "blame", "rev-parse"})


def _strict_reader(segment: Segment) -> bool:
    name = command_name(segment.command)
    if name not in STRICT_READERS:
        return False
    if name == "git":
        sub = next((w for w in segment.words[1:] if not w.startswith("-")), None)
        return sub in _STRICT_GIT and git_subcommand(segment.words)[1] is None
    if name in ("grep", "egrep", "fgrep"):
        # A recursive grep would read `.env` files that only the sandbox hides.
        return not any(
            arg in ("--recursive", "--dereference-recursive")
            or (arg.startswith("-") and not arg.startswith("--") and set(arg) & set("rR"))
            for arg in segment.args
        )
    return True


def evaluate_bash(command: str, rules: RuleSet, *, sandboxed: bool = True) -> Verdict:
    """Decide a shell command against `rules` (pure: no disk access).

    `sandboxed` says whether read-only commands will run in the OS sandbox; without one only
    `STRICT_READERS` run unasked.
    """
    text = command.strip()
    parsed = parse_command(text)
    floor = floor_reason(parsed)
    if floor is not None:
        return Verdict(
            Decision.DENY, reason=f"blocked by Dexter's safety floor: {floor}", command=text
        )
    if not parsed.parseable:
        return Verdict(
            Decision.ASK,
            reason=f"command needs review ({parsed.error}); it can only be approved once",
            command=text,
        )
    key = bash_session_key(text)
    segments = parsed.segments
    for segment in segments:
        rule = first_match(rules.deny, segment, allow=False)
        if rule is not None:
            return Verdict(Decision.DENY, reason=f"denied by your rule {rule}", command=text)
    for segment in segments:
        rule = first_match(rules.ask, segment, allow=False)
        if rule is not None:
            return Verdict(
                Decision.ASK, reason=f"your rule {rule} asks first", session_key=key, command=text
            )
    if parsed.background:
        return Verdict(
            Decision.ASK,
            reason="the command runs in the background (`&`) and would outlive the call",
            session_key=key,
            command=text,
        )
    # Each segment must be allowed by a rule or be read-only on its own.
    allowed = [first_match(rules.allow, segment, allow=True) for segment in segments]
    reasons = [not_read_only_reason(segment) for segment in segments]
    if not sandboxed:
        reasons = [
            r if r is not None or _strict_reader(s) else "no OS sandbox, and not a plain reader"
            for r, s in zip(reasons, segments, strict=True)
        ]
    if "&" in parsed.operators:
        reasons = [r or "part of a command that runs in the background (`&`)" for r in reasons]
    if all(rule is not None or r is None for rule, r in zip(allowed, reasons, strict=True)):
        used = next((rule for rule in allowed if rule is not None), None)
        if used is not None:
            return Verdict(Decision.ALLOW, reason=f"allowed by your rule {used}", command=text)
        where = "runs in the OS sandbox" if sandboxed else "plain reader, no OS sandbox"
        return Verdict(Decision.ALLOW, reason=f"read-only command ({where})", command=text)
    why = next((r for r in reasons if r is not None), "not read-only")
    if rules.default_bash == "deny":
        return Verdict(
            Decision.DENY,
            reason=f"no rule allows this command ({why}) and defaultBashDecision is deny",
            command=text,
        )
    return Verdict(
        Decision.ASK,
        reason=f"this command may change files or reach the network ({why})",
        session_key=key,
        proposed_rule=propose_rule(parsed),
        command=text,
    )


class RulesPolicy:
    """PermissionPolicy over `.dexter/settings.json` rules; re-reads the file on every call."""

    def __init__(
        self, settings_path: Path, workspace: Path, *, sandboxed: bool | None = None
    ) -> None:
        self.settings_path = settings_path
        self.workspace = workspace
        # None: find out (once) whether an OS sandbox can run read-only commands here.
        self._sandboxed = sandboxed

    @property
    def sandboxed(self) -> bool:
        if self._sandboxed is None:
            from dexter.permissions.sandbox import available_sandbox

            self._sandboxed = available_sandbox() is not None
        return self._sandboxed

    # --- rules -----------------------------------------------------------------------------

    def rules(self) -> RuleSet:
        """Current rules; raises ConfigError when the settings file can't be read."""
        return load_rules(self.settings_path)

    def add_rule(self, kind: RuleKind, rule: str | Rule) -> Rule:
        """Save a rule (deduplicated, removed from the other lists); returns its parsed form."""
        parsed, _ = add_rule(self.settings_path, kind, rule)
        return parsed

    def remove_rule(self, rule: str | Rule) -> list[RuleKind]:
        return remove_rule(self.settings_path, rule)

    def reset(self) -> None:
        reset_rules(self.settings_path)

    def fetch_host_allowed(self, host: str) -> bool:
        """Did the user allow this host by a `WebFetch(domain:…)` rule (e.g. for a local host)?"""
        try:
            rules = self.rules()
        except Exception:
            _log.debug("could not check the path against the workspace", exc_info=True)
            return False
        return any(
            rule.domain is not None and domain_rule_matches(rule, host)
            for rule in rules.for_tool("allow", "web_fetch")
        )

    # --- decisions ---------------------------------------------------------------------------

    def evaluate(self, tool: str, args: Mapping[str, Any], *, needs_approval: bool) -> Verdict:
        from dexter.config import ConfigError

        try:
            rules = self.rules()
        except ConfigError as exc:
            return self._without_rules(tool, args, needs_approval=needs_approval, error=str(exc))
        return self.evaluate_with(rules, tool, args, needs_approval=needs_approval)

    def _without_rules(
        self, tool: str, args: Mapping[str, Any], *, needs_approval: bool, error: str
    ) -> Verdict:
        # Fail closed: the user's deny rules can't be read, so anything they might cover asks.
        verdict = self.evaluate_with(RuleSet(), tool, args, needs_approval=needs_approval)
        if verdict.decision is Decision.DENY:
            return verdict
        if tool in ("bash", "web_fetch", *_FILE_TOOLS) or needs_approval:
            reason = f"your permission settings can't be read ({error.splitlines()[0]})"
            return Verdict(Decision.ASK, reason=reason, command=verdict.command)
        return verdict

    def evaluate_with(
        self, rules: RuleSet, tool: str, args: Mapping[str, Any], *, needs_approval: bool
    ) -> Verdict:
        """Like `evaluate`, with the given rules instead of the settings file."""
        if tool == "bash":
            command = args.get("command")
            text = command if isinstance(command, str) else ""
            return evaluate_bash(text, rules, sandboxed=self.sandboxed)
        if tool in _FILE_TOOLS:
            return self._evaluate_file(tool, args, rules)
        if tool == "web_fetch":
            return self._evaluate_fetch(args, rules, needs_approval=needs_approval)
        return self._evaluate_other(tool, rules, needs_approval=needs_approval)

    def _resolve(self, raw: str) -> Path:
        path = Path(os.path.expanduser(raw))
        if not path.is_absolute():
            path = self.workspace / path
        return path.resolve()

    def _inside_workspace(self, path: Path) -> bool:
        return path.is_relative_to(self.workspace.resolve())

    def _evaluate_file(self, tool: str, args: Mapping[str, Any], rules: RuleSet) -> Verdict:
        raw = args.get("path")
        if not isinstance(raw, str) or not raw.strip():
            return Verdict(Decision.ASK, reason="no file path given")
        if "\x00" in raw or len(raw) > 4096:
            return Verdict(Decision.DENY, reason="the path has a NUL character or is too long")
        path = self._resolve(raw)
        if mentions_secret(raw) or mentions_secret(str(path)) or self._is_home_secret(path):
            return Verdict(Decision.DENY, reason=f"{raw} looks like a secret file")
        writing = tool != "read_file"
        if writing and (
            is_shell_rc(str(path)) or is_protected_path(raw) or is_protected_path(str(path))
        ):
            return Verdict(
                Decision.DENY,
                reason=f"{raw} is protected: only Dexter's own commands change it",
            )
        for kind in ("deny", "ask", "allow"):
            rule = next(
                (
                    r
                    for r in rules.for_tool(kind, tool)
                    if path_rule_matches(r, path, self.workspace)
                ),
                None,
            )
            if rule is None:
                continue
            if kind == "deny":
                return Verdict(Decision.DENY, reason=f"denied by your rule {rule}")
            if kind == "ask":
                key = FILE_WRITE_KEY if writing else f"file:read:{path}"
                return Verdict(Decision.ASK, reason=f"your rule {rule} asks first", session_key=key)
            return Verdict(Decision.ALLOW, reason=f"allowed by your rule {rule}")
        if not writing:
            if self._inside_workspace(path):
                return Verdict(Decision.ALLOW, reason="reading inside the workspace")
            return Verdict(
                Decision.ASK,
                reason=f"{raw} is outside the workspace",
                session_key=f"file:read:{path}",
            )
        return Verdict(
            Decision.ASK,
            reason=f"{tool} changes {raw}",
            session_key=FILE_WRITE_KEY,
            proposed_rule=self._propose_path(_FILE_TOOLS[tool], path),
        )

    def _propose_path(self, rule_tool: str, path: Path) -> str | None:
        if not self._inside_workspace(path) or any(c in str(path) for c in "*?[]"):
            return None
        relative = path.relative_to(self.workspace.resolve()).as_posix()
        return format_rule(Rule(rule_tool, path=f"./{relative}"))

    def _is_home_secret(self, path: Path) -> bool:
        """Settings, stored keys or gateway tokens in Dexter's home, whatever the home is named."""
        try:
            home = Path(os.path.realpath(self.settings_path.parent))
        except OSError:
            return True
        return any(path == home / name for name in DEXTER_SECRET_FILES) or any(
            path.is_relative_to(home / name) for name in DEXTER_SECRET_DIRS
        )

    def _evaluate_fetch(
        self, args: Mapping[str, Any], rules: RuleSet, *, needs_approval: bool
    ) -> Verdict:
        url = args.get("url")
        host = ""
        if isinstance(url, str):
            try:
                host = urlsplit(url.strip()).hostname or ""
            except ValueError:
                host = ""
        if not host:
            return Verdict(Decision.ASK, reason="the address has no host name")
        key = f"web_fetch:{host}"
        for kind in ("deny", "ask", "allow"):
            rule = next(
                (r for r in rules.for_tool(kind, "web_fetch") if domain_rule_matches(r, host)),
                None,
            )
            if rule is None:
                continue
            if kind == "deny":
                return Verdict(Decision.DENY, reason=f"denied by your rule {rule}")
            if kind == "ask":
                return Verdict(Decision.ASK, reason=f"your rule {rule} asks first", session_key=key)
            return Verdict(Decision.ALLOW, reason=f"allowed by your rule {rule}")
        if needs_approval:
            return Verdict(
                Decision.ASK,
                reason=f"web_fetch wants to read {host}",
                session_key=key,
                proposed_rule=format_rule(Rule("WebFetch", domain=host)),
            )
        return Verdict(Decision.ALLOW)

    def _evaluate_other(self, tool: str, rules: RuleSet, *, needs_approval: bool) -> Verdict:
        key = f"tool:{tool}"
        if rule := next(iter(rules.for_tool("deny", tool)), None):
            return Verdict(Decision.DENY, reason=f"denied by your rule {rule}")
        if rule := next(iter(rules.for_tool("ask", tool)), None):
            return Verdict(Decision.ASK, reason=f"your rule {rule} asks first", session_key=key)
        if rules.for_tool("allow", tool) or not needs_approval:
            return Verdict(Decision.ALLOW)
        return Verdict(
            Decision.ASK,
            reason=f"`{tool}` needs approval",
            session_key=key,
            proposed_rule=format_rule(Rule(tool)),
        )
