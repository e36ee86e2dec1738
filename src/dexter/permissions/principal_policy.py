"""The permission decision for someone other than the operator: (principal, tool, arguments).

In order:
1. the principal's grants: a tool the principal was not given, a file outside the folders it was
   granted, or the shell -> deny, with a message that says to ask the operator (a grant is the
   operator's to make in gateway.json, never a rule a chat answer could save);
2. the operator's policy (the safety floor, then the operator's rules), unchanged;
3. what still asks: the principal's own "always" answers (kept in its own folder, so they never
   widen the operator's rules), else it is put to the approver bound for that principal.

The operator's own runs use the operator's policy directly.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from dexter.permissions.gate import Decision, PermissionPolicy, Verdict
from dexter.permissions.rules import Rule, RuleKind, RuleSet, add_rule, load_rules
from dexter.principal import Principal

_log = logging.getLogger(__name__)

READ_TOOLS = frozenset({"read_file"})
WRITE_TOOLS = frozenset({"write_file", "edit_file"})
SHELL_TOOLS = frozenset({"bash"})
# The principal's own answers ("always" from their chat), beside their memory.
OWN_RULES_FILE = "permissions.json"
ASK_OPERATOR = "ask the operator of this Dexter to grant it"
# Why a file in Dexter's own folder is refused (no grant can open it).
OWN_FOLDER = "it is in Dexter's own folder (keys, settings, everyone's memory)"


class PrincipalPolicy:
    """Wraps the operator's policy for one principal (see the module docstring)."""

    def __init__(
        self,
        principal: Principal,
        inner: PermissionPolicy,
        *,
        own_rules: Path | None = None,
        workspace: Path | None = None,
        bound_tools: frozenset[str] | None = None,
        private: tuple[Path, ...] = (),
    ) -> None:
        self.principal = principal
        self.inner = inner
        self.own_rules = own_rules
        # Relative file paths are taken from here (the first granted folder).
        self.workspace = workspace or next(iter(principal.grants.files.readable), None)
        # The tools bound for this principal: anything else is refused (defence in depth:
        # the runtime does not bind them in the first place).
        self.bound_tools = bound_tools
        # Dexter's own folder (keys, settings, the database, every principal's memory): out of
        # reach of anyone's file tools, even when a granted folder contains it.
        self.private = tuple(Path(os.path.realpath(p)) for p in private)

    def evaluate(self, tool: str, args: Mapping[str, Any], *, needs_approval: bool) -> Verdict:
        if self.principal.is_operator:
            return self.inner.evaluate(tool, args, needs_approval=needs_approval)
        private = self._in_private_folder(tool, args)
        if private is not None:
            return Verdict(Decision.DENY, reason=private)
        refused = self._outside_grants(tool, args)
        if refused is not None:
            return Verdict(Decision.DENY, reason=f"{refused}; {ASK_OPERATOR}")
        verdict = self.inner.evaluate(tool, args, needs_approval=needs_approval)
        if verdict.decision is not Decision.ASK:
            return verdict
        if self._own_answer_allows(tool, args):
            return Verdict(Decision.ALLOW, reason=f"allowed by {self.principal.id}'s own answer")
        # "Always" saves the principal's own answer for this tool, never the operator's rule.
        return replace(verdict, proposed_rule=_own_rule_for(tool, verdict))

    # --- grants ------------------------------------------------------------------------------

    def _outside_grants(self, tool: str, args: Mapping[str, Any]) -> str | None:
        who = self.principal.label
        if self.bound_tools is not None and tool not in self.bound_tools:
            return f"`{tool}` is not available to {who}"
        if tool in SHELL_TOOLS and tool not in self.principal.grants.tools:
            return f"the shell is not available to {who}"
        if tool in READ_TOOLS | WRITE_TOOLS:
            files = self.principal.grants.files
            roots = files.write if tool in WRITE_TOOLS else files.readable
            path = self._resolve(args.get("path"))
            if path is None:
                return f"`{tool}` needs a file path inside a folder granted to {who}"
            if not any(path.is_relative_to(root) for root in roots):
                verb = "write" if tool in WRITE_TOOLS else "read"
                return (
                    f"{who} may not {verb} {args.get('path')!s}: it is outside the folders granted"
                )
        return None

    def _in_private_folder(self, tool: str, args: Mapping[str, Any]) -> str | None:
        if tool not in READ_TOOLS | WRITE_TOOLS:
            return None
        path = self._resolve(args.get("path"))
        if path is None or not any(path.is_relative_to(folder) for folder in self.private):
            return None
        return f"{self.principal.label} may not open {args.get('path')!s}: {OWN_FOLDER}"

    def _resolve(self, raw: object) -> Path | None:
        if not isinstance(raw, str) or not raw.strip() or "\x00" in raw:
            return None
        text = raw.strip().removeprefix("@")
        path = Path(os.path.expanduser(text))
        if not path.is_absolute():
            if self.workspace is None:
                return None
            path = self.workspace / path
        # Symlinks and `..` are resolved, so a link inside a granted folder cannot lead out.
        return Path(os.path.realpath(path))

    # --- the principal's own answers ---------------------------------------------------------

    def _own_answer_allows(self, tool: str, args: Mapping[str, Any]) -> bool:
        if self.own_rules is None or tool in SHELL_TOOLS:
            return False
        try:
            rules = load_rules(self.own_rules)
        except Exception:  # an unreadable answers file asks again; it never allows
            _log.debug("could not read %s", self.own_rules, exc_info=True)
            return False
        allow = tuple(rule for rule in rules.allow if rule.governs == tool)
        if not allow:
            return False
        if tool in READ_TOOLS | WRITE_TOOLS:
            from dexter.permissions.policy import RulesPolicy

            root = self.workspace or Path(os.sep)
            verdict = RulesPolicy(self.own_rules, root, sandboxed=False).evaluate_with(
                RuleSet(allow=allow), tool, args, needs_approval=True
            )
            return verdict.decision is Decision.ALLOW and verdict.reason.startswith("allowed by")
        return True

    def add_rule(self, kind: RuleKind, rule: str | Rule) -> Rule:
        """Save the principal's own answer (the executor's "always"), in its own folder."""
        if self.own_rules is None:
            raise ValueError(f"{self.principal.id} has no place for its own answers")
        self.own_rules.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        parsed, _ = add_rule(self.own_rules, kind, rule)
        return parsed


def _own_rule_for(tool: str, verdict: Verdict) -> str | None:
    """What "always" may save for a principal: the tool's own narrow rule, never a shell one."""
    if tool in SHELL_TOOLS:
        return None
    return verdict.proposed_rule or tool


__all__ = ["ASK_OPERATOR", "OWN_FOLDER", "OWN_RULES_FILE", "PrincipalPolicy"]
