"""`dexter permissions list|allow|ask|deny|remove|reset|explain`: see and edit permission rules,
and see why a shell command would be allowed, asked or denied."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

_BUILT_IN = """\
Built in: read-only shell commands (ls, cat, grep, git log …) and reading workspace files are
allowed; other commands and file writes ask. Secrets (.env, ~/.ssh, credentials …), environment
injection (LD_PRELOAD=, PATH=), deleting / or ~, disk formatting and `curl … | sh` are always
denied, whatever the rules say."""


def add_permissions_parser(commands: Any) -> None:
    """Register `dexter permissions` on the top-level subparsers (stdlib only)."""
    parser = commands.add_parser(
        "permissions",
        help="list or edit the rules that decide which tool calls run without asking",
        description='Permission rules live under "permissions" in settings.json in the Dexter '
        "home (`dexter config path`). "
        "Rules look like Bash, Bash(git push origin main), Bash(npm run test:*), "
        "Read(./data/**), Write(./notes/*.md), WebFetch(domain:sec.gov) or a tool name. "
        "Quote rules in the shell: dexter permissions allow 'Bash(npm test)'.",
    )
    actions = parser.add_subparsers(dest="permissions_command", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="show the rules in effect")
    listing.add_argument("--json", action="store_true", help="print JSON")
    for kind, text in (
        ("allow", "run matching calls without asking"),
        ("ask", "always ask before matching calls"),
        ("deny", "refuse matching calls"),
        ("remove", "delete a rule from every list"),
    ):
        sub = actions.add_parser(kind, help=text)
        sub.add_argument("rule", nargs="+", help="the rule, e.g. 'Bash(git log:*)'")
    reset = actions.add_parser("reset", help="delete all rules (built-in behaviour only)")
    reset.add_argument("--yes", action="store_true", help="don't ask for confirmation")
    explain = actions.add_parser(
        "explain",
        help="say why a shell command or tool call would be allowed, asked or denied",
        description="Explain a shell command (quoted: 'git log -5') or a tool call (the tool "
        'and its JSON arguments: read_file \'{"path": "notes.md"}\'), for you or, with '
        "--principal, for a chat user, group or MCP host: their grants, the safety floor and "
        "the rules.",
    )
    explain.add_argument(
        "shell_command",
        nargs="+",
        metavar="CALL",
        help="a shell command, quoted, or TOOL '{json arguments}'",
    )
    explain.add_argument(
        "--principal",
        metavar="ID",
        help="for this principal, e.g. telegram:222 or mcp:cursor (default: you, the operator)",
    )
    explain.add_argument("--json", action="store_true", help="print JSON")


def run_permissions_command(
    args: argparse.Namespace,
    *,
    cwd: Path | None = None,
    environ: Mapping[str, str] | None = None,
    stdin: TextIO | None = None,
) -> int:
    from dexter.config import ConfigError, load_settings
    from dexter.permissions.rules import (
        RULE_GRAMMAR,
        RuleSyntaxError,
        add_rule,
        format_rule,
        load_rules,
        remove_rule,
        reset_rules,
        rules_as_json,
    )

    try:
        settings = load_settings(cwd=cwd, environ=environ, tolerate_corrupt=True)
        path = settings.settings_path
        action = args.permissions_command
        if action == "list":
            rules = load_rules(path)
            if args.json:
                print(json.dumps({"settings": str(path), **rules_as_json(rules)}, indent=2))
                return EXIT_OK
            print(f"Permission rules in {path}")
            for kind in ("allow", "ask", "deny"):
                entries = rules.of(kind)
                print(f"{kind}:")
                for rule in entries:
                    print(f"  {format_rule(rule)}")
                if not entries:
                    print("  (none)")
            print(f"other shell commands: {rules.default_bash}")
            for problem in rules.problems:
                print(f"warning: {problem}", file=sys.stderr)
            print()
            print(_BUILT_IN)
            return EXIT_OK
        if action in ("allow", "ask", "deny"):
            text = " ".join(args.rule)
            rule, changed = add_rule(path, action, text)
            what = "Added" if changed else "Already present:"
            print(f"{what} {action} rule {format_rule(rule)} ({path})")
            return EXIT_OK
        if action == "remove":
            text = " ".join(args.rule)
            kinds = remove_rule(path, text)
            if not kinds:
                print(f"No rule {text} in {path}", file=sys.stderr)
                return EXIT_FAILED
            print(f"Removed {text} from {', '.join(kinds)}")
            return EXIT_OK
        if action == "explain":
            return _explain_any(settings, args, load_rules(path))
        if action == "reset":
            if not args.yes:
                source = stdin if stdin is not None else sys.stdin
                if not source.isatty():
                    print("dexter: pass --yes to remove all permission rules", file=sys.stderr)
                    return EXIT_USAGE
                print(f"Remove all permission rules from {path}? [y/N] ", end="", flush=True)
                if source.readline().strip().lower() not in ("y", "yes"):
                    print("Nothing changed.")
                    return EXIT_FAILED
            reset_rules(path)
            print(f"Removed all permission rules from {path}")
            return EXIT_OK
        print(f"dexter: unknown permissions action {action!r}", file=sys.stderr)
        return EXIT_USAGE
    except RuleSyntaxError as exc:
        print(f"dexter: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except ConfigError as exc:
        print(f"dexter: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except ValueError as exc:
        print(f"dexter: {exc}\n{RULE_GRAMMAR}", file=sys.stderr)
        return EXIT_USAGE


def _explain_any(settings: Any, args: argparse.Namespace, rules: Any) -> int:
    """A shell command for the operator keeps its detailed explanation (each part, the sandbox);
    a tool call, or anything for another principal, is explained as that principal's call."""
    from dexter.cli.explain_call import ToolCall, explain_call, print_report, tool_call
    from dexter.principal import OPERATOR_ID

    words: list[str] = args.shell_command
    principal = (args.principal or "").strip() or OPERATOR_ID
    call = tool_call(words)
    if call is None and principal == OPERATOR_ID:
        return _explain(" ".join(words), rules, as_json=args.json)
    report = explain_call(
        settings, principal, call or ToolCall("bash", {"command": " ".join(words)})
    )
    if report["kind"] == "operator" and report["tool"] == "bash" and call is None:
        return _explain(" ".join(words), rules, as_json=args.json)  # listed as an operator
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        print_report(report)
    return EXIT_OK


def _explain(command: str, rules: Any, *, as_json: bool) -> int:
    from dexter.permissions.classify import not_read_only_reason
    from dexter.permissions.policy import evaluate_bash
    from dexter.permissions.sandbox import detect_sandbox
    from dexter.permissions.shell import parse_command

    sandbox, about = detect_sandbox()
    verdict = evaluate_bash(command, rules, sandboxed=sandbox is not None)
    parsed = parse_command(command.strip())
    segments = [
        {
            "command": " ".join(segment.all_words)
            + "".join(f" {r.fd or ''}{r.op}{r.target}" for r in segment.redirects),
            "read_only": (why := not_read_only_reason(segment)) is None,
            "why": why or "only reads",
        }
        for segment in parsed.segments
    ]
    if verdict.decision.value == "allow" and verdict.reason.startswith("read-only"):
        runs_in = f"read-only sandbox: {about}" if sandbox is not None else f"no sandbox ({about})"
    elif verdict.decision.value == "deny":
        runs_in = "never runs"
    elif sandbox is not None and os.environ.get("DEXTER_SANDBOX_APPROVED", "").strip() in (
        "1",
        "true",
        "yes",
        "on",
    ):
        runs_in = f"once approved: sandbox with the workspace writable ({about})"
    else:
        runs_in = "once approved: outside the sandbox (the safety floor still applies)"
    report = {
        "command": command,
        "decision": verdict.decision.value,
        "reason": verdict.reason,
        "parseable": parsed.parseable,
        "segments": segments,
        "sandbox": runs_in,
        "allow_always_saves": verdict.proposed_rule,
    }
    if as_json:
        print(json.dumps(report, indent=2))
        return EXIT_OK
    print(f"Command:  {command}")
    print(f"Decision: {verdict.decision.value}")
    print(f"Why:      {verdict.reason}")
    if not parsed.parseable:
        print(f"Parsing:  refused ({parsed.error}); such commands are asked every time")
    for number, segment in enumerate(segments, 1):
        mark = "reads only" if segment["read_only"] else segment["why"]
        print(f"  {number}. {segment['command']}  -> {mark}")
    print(f"Runs:     {runs_in}")
    if verdict.proposed_rule:
        print(f"'Always' would save: {verdict.proposed_rule}")
    return EXIT_OK
