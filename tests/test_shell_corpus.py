"""A corpus of shell commands, each with the decision Dexter must reach.

Classes: "allow" (read-only, runs without asking), "ask" (asked, cacheable for the session),
"deny" (built-in floor), "unparseable" (asked every time, never cached, never proposed).
Entries marked DANGER must never be auto-allowed, even under permissive user rules.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dexter.permissions.gate import Decision, Verdict
from dexter.permissions.policy import evaluate_bash
from dexter.permissions.rules import RuleSet, parse_rule

ALLOW = "allow"
ASK = "ask"
DENY = "deny"
UNPARSEABLE = "unparseable"
CORPUS_FILE = Path(__file__).parent / "data" / "shell_corpus.jsonl"


def _load() -> list[tuple[str, str, str]]:
    rows = [json.loads(line) for line in CORPUS_FILE.read_text("utf-8").splitlines() if line]
    return [(row["command"], row["expect"], row["kind"]) for row in rows]


# (command, expected class, kind): kind is "read" (only reads), "write" (an ordinary change a
# user may allow by rule) or "danger" (must never run unasked, even under permissive rules).
ENTRIES = _load()
CORPUS: list[tuple[str, str, bool]] = [(c, e, k == "danger") for c, e, k in ENTRIES]
READ_ONLY = [c for c, _, k in ENTRIES if k == "read"]

PERMISSIVE = RuleSet(
    allow=tuple(
        parse_rule(r)
        for r in (
            "Bash(git:*)",
            "Bash(ls:*)",
            "Bash(find:*)",
            "Bash(sort:*)",
            "Bash(cat:*)",
            "Bash(echo:*)",
            "Bash(grep:*)",
            "Bash(rm -rf build)",
            "Bash(tree:*)",
            "Bash(uniq:*)",
            "Bash(date:*)",
            "Bash(jq:*)",
            "Bash(rg:*)",
        )
    )
)


def _class(verdict: Verdict) -> str:
    if verdict.decision is Decision.ASK and verdict.session_key is None:
        return UNPARSEABLE
    return verdict.decision.value


def test_corpus_is_large_and_unique() -> None:
    commands = [c for c, _, _ in CORPUS]
    assert len(commands) >= 400
    assert len(set(commands)) == len(commands)
    kinds = {k for _, _, k in ENTRIES}
    assert kinds == {"read", "write", "danger"}


def test_read_only_false_positive_rate_is_under_five_percent() -> None:
    asked = [c for c in READ_ONLY if evaluate_bash(c, RuleSet()).decision is not Decision.ALLOW]
    rate = len(asked) / len(READ_ONLY)
    print(f"read-only false positives: {len(asked)} of {len(READ_ONLY)} ({rate:.1%})")
    assert rate < 0.05, asked


def test_without_a_sandbox_only_plain_readers_run_unasked() -> None:
    allowed = [
        c
        for c in READ_ONLY
        if evaluate_bash(c, RuleSet(), sandboxed=False).decision is Decision.ALLOW
    ]
    assert "ls -la" in allowed and "git log --oneline -20" in allowed
    for command in (
        "awk 'NR==1' data.csv",
        "sed -n '1,20p' notes.md",
        "find . -name '*.py'",
        "tar -tf archive.tar",
        "grep -r TODO src",
        "jq -c . data.json",
    ):
        verdict = evaluate_bash(command, RuleSet(), sandboxed=False)
        assert verdict.decision is Decision.ASK, command
    for command, expected, kind in ENTRIES:
        if kind != "read":
            decision = evaluate_bash(command, RuleSet(), sandboxed=False).decision
            assert decision is not Decision.ALLOW or expected == ALLOW, command


@pytest.mark.parametrize(("command", "expected", "dangerous"), CORPUS)
def test_corpus_default_rules(command: str, expected: str, dangerous: bool) -> None:
    verdict = evaluate_bash(command, RuleSet())
    assert _class(verdict) == expected, verdict.reason
    if expected == UNPARSEABLE:
        assert verdict.proposed_rule is None
    if expected == ASK:
        assert verdict.session_key == f"bash:{command.strip()}"


@pytest.mark.parametrize(("command", "expected", "dangerous"), [e for e in CORPUS if e[2]])
def test_dangerous_never_allowed_under_permissive_rules(
    command: str, expected: str, dangerous: bool
) -> None:
    verdict = evaluate_bash(command, PERMISSIVE)
    assert verdict.decision is not Decision.ALLOW, verdict.reason
    # Deny stays deny whatever the rules say.
    if expected == DENY:
        assert verdict.decision is Decision.DENY


def test_permissive_rules_still_allow_what_they_name() -> None:
    assert evaluate_bash("git push origin main", PERMISSIVE).decision is Decision.ALLOW
    assert evaluate_bash("rm -rf build", PERMISSIVE).decision is Decision.ALLOW
    assert evaluate_bash("rm -rf build2", PERMISSIVE).decision is Decision.ASK


def test_tool_wide_bash_still_respects_floor_redirects_and_unparseable() -> None:
    rules = RuleSet(allow=(parse_rule("Bash"),))
    assert evaluate_bash("rm -rf build", rules).decision is Decision.ALLOW
    for command in [c for c, e, _ in CORPUS if e in (DENY, UNPARSEABLE)]:
        assert evaluate_bash(command, rules).decision is not Decision.ALLOW, command
    assert evaluate_bash("ls > out.txt", rules).decision is Decision.ASK


@pytest.mark.parametrize(("command", "expected", "dangerous"), [e for e in CORPUS if e[2]])
def test_approving_a_dangerous_command_never_proposes_a_wider_rule(
    command: str, expected: str, dangerous: bool
) -> None:
    verdict = evaluate_bash(command, RuleSet())
    if verdict.proposed_rule is None:
        return
    rule = parse_rule(verdict.proposed_rule)
    assert not rule.prefix and rule.words
    # The proposal, once saved, must not allow any *other* dangerous command of the corpus.
    saved = RuleSet(allow=(rule,))
    for other, _, danger in CORPUS:
        if danger and other != command:
            assert evaluate_bash(other, saved).decision is not Decision.ALLOW, (command, other)
