"""`dexter permissions list|allow|ask|deny|remove|reset`: see and edit permission rules."""

from __future__ import annotations

import argparse
import json
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
        description='Permission rules live in .dexter/settings.json under "permissions". '
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
