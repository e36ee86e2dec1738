from __future__ import annotations

import json
from pathlib import Path

import pytest

from dexter.config import ConfigError
from dexter.permissions.gate import ApprovalAnswer, Decision
from dexter.permissions.policy import RulesPolicy, evaluate_bash
from dexter.permissions.rules import (
    Rule,
    RuleSet,
    RuleSyntaxError,
    allow_rule_matches,
    block_rule_matches,
    format_rule,
    parse_rule,
    rules_from_settings,
)
from dexter.permissions.shell import Segment, parse_command


def seg(command: str) -> Segment:
    parsed = parse_command(command)
    assert parsed.parseable and len(parsed.segments) == 1
    return parsed.segments[0]


def rules(**kinds: list[str]) -> RuleSet:
    return rules_from_settings({"permissions": kinds})


# --- grammar -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "Bash",
        "Bash(git status)",
        "Bash(rm -rf:*)",
        "Bash(ls:*)",
        "Bash(npm run test:*)",
        "Bash(git commit -m 'fix bug')",
        "Read(./data/**)",
        "Write(./notes/*.md)",
        "Edit(src/x.py)",
        "WebFetch(domain:sec.gov)",
        "WebFetch",
        "web_search",
    ],
)
def test_round_trip(text: str) -> None:
    rule = parse_rule(text)
    assert format_rule(rule) == text
    assert parse_rule(format_rule(rule)) == rule


def test_parse_details() -> None:
    assert parse_rule("Bash(git log:*)") == Rule("Bash", ("git", "log"), prefix=True)
    assert parse_rule("  bash( git   status ) ") == Rule("Bash", ("git", "status"))
    assert parse_rule('Bash(grep "a b" f)').words == ("grep", "a b", "f")
    assert parse_rule("Bash(echo \\(x\\))").words == ("echo", "(x)")
    assert parse_rule("WebFetch(domain:*.SEC.gov)").domain == "sec.gov"
    assert parse_rule("read_file(./x)") == Rule("Read", path="./x")
    # Words that look like rule syntax are quoted/escaped when formatted, so nothing injects.
    crafted = Rule("Bash", ("echo", "x) Bash(rm", "-rf:*"))
    assert parse_rule(format_rule(crafted)) == crafted


@pytest.mark.parametrize(
    "text",
    [
        "git status",
        "Bash(",
        "Bash()",
        "Bash(:*)",
        "Bash(a) b(c)",
        "Bash(echo 'x)",
        "WebFetch(sec.gov)",
        "WebFetch(domain:not a host)",
        "web_search(x)",
        "",
    ],
)
def test_malformed_rules(text: str) -> None:
    with pytest.raises(RuleSyntaxError) as caught:
        parse_rule(text)
    assert "Tool(pattern)" in str(caught.value)


# --- matching ----------------------------------------------------------------------------------


def test_exact_and_prefix_matching() -> None:
    exact = parse_rule("Bash(npm test)")
    assert allow_rule_matches(exact, seg("npm test"))
    assert not allow_rule_matches(exact, seg("npm test --watch"))
    prefix = parse_rule("Bash(npm run test:*)")
    assert allow_rule_matches(prefix, seg("npm run test"))
    assert allow_rule_matches(prefix, seg("npm run test -- --watch"))
    assert not allow_rule_matches(prefix, seg("npm run testx"))
    assert not allow_rule_matches(parse_rule("Bash(rm:*)"), seg("rmdir x"))
    assert allow_rule_matches(parse_rule("Bash(ls:*)"), seg("/bin/ls -l"))
    assert not allow_rule_matches(parse_rule("Bash(ls:*)"), seg("/tmp/ls -l"))
    assert not allow_rule_matches(parse_rule("Bash(ls:*)"), seg("./ls"))


def test_prefix_rules_never_match_redirects_or_write_flags() -> None:
    for rule_text, command in [
        ("Bash(ls:*)", "ls > out.txt"),
        ("Bash(ls:*)", "ls >> ~/notes"),
        ("Bash(git log:*)", "git log > x"),
        ("Bash(git:*)", "git -c core.pager=sh log"),
        ("Bash(git diff:*)", "git diff --output=x"),
        ("Bash(sort:*)", "sort -o ~/.bashrc x"),
        ("Bash(sort:*)", "sort --output=x y"),
        ("Bash(sort:*)", "sort -uox y"),
        ("Bash(find:*)", "find / -delete"),
        ("Bash(find:*)", "find . -exec rm x ;"),
        ("Bash(sed:*)", "sed -i s/a/b/ f"),
        ("Bash(npm test:*)", "FOO=1 npm test"),
        ("Bash", "ls > out.txt"),
        ("Bash(echo hi)", "echo hi > out.txt"),
    ]:
        parsed = parse_command(command)
        assert all(not allow_rule_matches(parse_rule(rule_text), s) for s in parsed.segments), (
            rule_text,
            command,
        )
    # A flag spelled out in the rule itself is the user's explicit choice.
    assert allow_rule_matches(parse_rule("Bash(sed -i:*)"), seg("sed -i s/a/b/ f"))


def test_deny_and_ask_rules_match_broadly() -> None:
    deny = parse_rule("Bash(rm:*)")
    assert block_rule_matches(deny, seg("rm -rf build"))
    assert block_rule_matches(deny, seg("/bin/rm x"))
    assert block_rule_matches(deny, seg("sudo rm x"))
    assert block_rule_matches(deny, seg("xargs rm -f"))
    assert block_rule_matches(deny, seg("nice -n 5 rm x"))
    assert block_rule_matches(deny, seg("FOO=1 rm x"))
    assert block_rule_matches(parse_rule("Bash(git push)"), seg("sudo git push"))
    assert not block_rule_matches(parse_rule("Bash(git push)"), seg("git push origin"))


# --- precedence --------------------------------------------------------------------------------


def test_precedence() -> None:
    # floor beats every rule
    assert evaluate_bash("cat .env", rules(allow=["Bash"])).decision is Decision.DENY
    # unparseable asks, never cacheable, even with a tool-wide allow
    verdict = evaluate_bash("echo $(id)", rules(allow=["Bash"]))
    assert verdict.decision is Decision.ASK and verdict.session_key is None
    # deny beats ask and allow
    both = rules(allow=["Bash(git push:*)"], ask=["Bash(git:*)"], deny=["Bash(git push:*)"])
    assert evaluate_bash("git push", both).decision is Decision.DENY
    # ask beats allow, and beats read-only
    asked = rules(allow=["Bash(git log:*)"], ask=["Bash(git log:*)"])
    verdict = evaluate_bash("git log", asked)
    assert verdict.decision is Decision.ASK and verdict.session_key == "bash:git log"
    # a deny rule beats read-only
    assert evaluate_bash("cat x", rules(deny=["Bash(cat:*)"])).decision is Decision.DENY
    # compound: every segment must be allowed
    some = rules(allow=["Bash(npm test)"])
    assert evaluate_bash("npm test", some).decision is Decision.ALLOW
    assert evaluate_bash("npm test && npm publish", some).decision is Decision.ASK
    assert evaluate_bash("npm test && ls", some).decision is Decision.ALLOW
    # read-only allows with no rules; default asks
    assert evaluate_bash("ls -la", RuleSet()).decision is Decision.ALLOW
    assert evaluate_bash("npm publish", RuleSet()).decision is Decision.ASK
    # defaultBashDecision deny
    strict = rules_from_settings({"permissions": {"defaultBashDecision": "deny"}})
    assert evaluate_bash("npm publish", strict).decision is Decision.DENY
    assert evaluate_bash("ls", strict).decision is Decision.ALLOW


def test_verdict_details_for_asks() -> None:
    verdict = evaluate_bash("  git push origin main ", RuleSet())
    assert verdict.decision is Decision.ASK
    assert verdict.session_key == "bash:git push origin main"
    assert verdict.command == "git push origin main"
    assert verdict.proposed_rule == "Bash(git push origin main)"


@pytest.mark.parametrize(
    ("command", "proposal"),
    [
        ("git push origin main", "Bash(git push origin main)"),
        ("sed -i s/a/b/ notes.md", "Bash(sed -i s/a/b/ notes.md)"),
        ("rm -rf build", "Bash(rm -rf build)"),
        ("npm run test -- --watch", "Bash(npm run test -- --watch)"),
        ("timeout 60 npm test", "Bash(npm test)"),
        ("git commit -m 'fix bug'", "Bash(git commit -m 'fix bug')"),
        ("npm test && npm publish", None),
        ("ls > out.txt", None),
        ("FOO=1 npm test", None),
        ("echo $(id)", None),
    ],
)
def test_proposals_are_exact(command: str, proposal: str | None) -> None:
    assert evaluate_bash(command, RuleSet()).proposed_rule == proposal


def test_saved_proposal_never_widens() -> None:
    proposal = evaluate_bash("git push origin main", RuleSet()).proposed_rule
    assert proposal is not None
    saved = rules(allow=[proposal])
    assert evaluate_bash("git push origin main", saved).decision is Decision.ALLOW
    for other in (
        "git push origin main --force",
        "git push --force origin main",
        "git push origin main > x",
        "git push origin main; rm -rf build",
        "git push",
    ):
        assert evaluate_bash(other, saved).decision is not Decision.ALLOW, other


# --- storage and the policy ---------------------------------------------------------------------


def test_add_rule_dedups_moves_and_preserves_other_keys(tmp_path: Path) -> None:
    settings = tmp_path / ".dexter" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(
        json.dumps({"model": "openai:x", "permissions": {"deny": ["Bash(git push:*)"], "x": 1}})
    )
    policy = RulesPolicy(settings, tmp_path)
    assert policy.add_rule("allow", " Bash( git push:* ) ") == parse_rule("Bash(git push:*)")
    policy.add_rule("allow", "Bash(git push:*)")
    policy.add_rule("allow", "Bash(npm test)")
    data = json.loads(settings.read_text())
    assert data["model"] == "openai:x"
    assert data["permissions"]["x"] == 1
    assert data["permissions"]["allow"] == ["Bash(git push:*)", "Bash(npm test)"]
    assert data["permissions"]["deny"] == []
    assert policy.rules().allow == (parse_rule("Bash(git push:*)"), parse_rule("Bash(npm test)"))
    assert policy.remove_rule("Bash(npm test)") == ["allow"]
    assert policy.remove_rule("Bash(npm test)") == []
    policy.reset()
    data = json.loads(settings.read_text())
    assert data == {"model": "openai:x"}


def test_add_rule_refuses_corrupt_settings_and_bad_rules(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    settings.write_text("{not json")
    policy = RulesPolicy(settings, tmp_path)
    with pytest.raises(ConfigError):
        policy.add_rule("allow", "Bash(ls)")
    assert settings.read_text() == "{not json"
    settings.write_text("{}")
    with pytest.raises(RuleSyntaxError):
        policy.add_rule("allow", "git status")
    assert json.loads(settings.read_text()) == {}


def test_malformed_entries_are_skipped_and_reported() -> None:
    loaded = rules_from_settings(
        {"permissions": {"allow": ["Bash(ls)", "nope nope", 3], "defaultBashDecision": "allow"}}
    )
    assert loaded.allow == (parse_rule("Bash(ls)"),)
    assert loaded.default_bash == "ask"
    assert len(loaded.problems) == 3


def test_rules_are_reread_from_disk(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    policy = RulesPolicy(settings, tmp_path)
    args = {"command": "npm test"}
    assert policy.evaluate("bash", args, needs_approval=True).decision is Decision.ASK
    settings.write_text(json.dumps({"permissions": {"allow": ["Bash(npm test)"]}}))
    assert policy.evaluate("bash", args, needs_approval=True).decision is Decision.ALLOW


def test_unreadable_settings_fail_closed(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    settings.write_text("[1, 2]")
    policy = RulesPolicy(settings, tmp_path)
    verdict = policy.evaluate("bash", {"command": "ls"}, needs_approval=True)
    assert verdict.decision is Decision.ASK and verdict.session_key is None
    assert policy.evaluate("bash", {"command": "cat .env"}, needs_approval=True).decision is (
        Decision.DENY
    )
    assert policy.evaluate("calculate", {}, needs_approval=False).decision is Decision.ALLOW


def test_file_tools(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / ".dexter").mkdir(parents=True)
    settings = workspace / ".dexter" / "settings.json"
    policy = RulesPolicy(settings, workspace)

    def decide(tool: str, path: str) -> Decision:
        return policy.evaluate(tool, {"path": path}, needs_approval=True).decision

    assert decide("read_file", "notes.md") is Decision.ALLOW
    assert decide("read_file", "./data/x.csv") is Decision.ALLOW
    assert decide("read_file", "../outside.txt") is Decision.ASK
    assert decide("read_file", "/etc/passwd") is Decision.ASK
    assert decide("read_file", ".env") is Decision.DENY
    assert decide("read_file", "~/.ssh/id_rsa") is Decision.DENY
    write = policy.evaluate("write_file", {"path": "notes/a.md"}, needs_approval=True)
    assert write.decision is Decision.ASK and write.session_key == "file:write"
    assert write.proposed_rule == "Write(./notes/a.md)"
    edit = policy.evaluate("edit_file", {"path": "x.py"}, needs_approval=True)
    assert edit.session_key == "file:write"
    assert decide("write_file", ".dexter/settings.json") is Decision.DENY
    assert decide("edit_file", "~/.bashrc") is Decision.DENY
    assert decide("write_file", ".env") is Decision.DENY

    policy.add_rule("allow", "Write(./notes/*.md)")
    policy.add_rule("deny", "Read(./private/**)")
    policy.add_rule("allow", "Read(/srv/shared)")
    assert decide("write_file", "notes/a.md") is Decision.ALLOW
    assert decide("write_file", "notes/sub/a.md") is Decision.ASK
    assert decide("edit_file", "notes/a.md") is Decision.ASK
    assert decide("read_file", "private/deep/x.txt") is Decision.DENY
    assert decide("read_file", "/srv/shared/a/b.txt") is Decision.ALLOW


def test_file_rules_follow_symlinks(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (tmp_path / "outside.txt").write_text("x")
    (workspace / "link.txt").symlink_to(tmp_path / "outside.txt")
    policy = RulesPolicy(workspace / "settings.json", workspace)
    verdict = policy.evaluate("read_file", {"path": "link.txt"}, needs_approval=False)
    assert verdict.decision is Decision.ASK


def test_web_fetch_and_other_tools(tmp_path: Path) -> None:
    policy = RulesPolicy(tmp_path / "settings.json", tmp_path)

    def fetch(url: str, needs: bool = False) -> Decision:
        return policy.evaluate("web_fetch", {"url": url}, needs_approval=needs).decision

    assert fetch("https://www.sec.gov/x") is Decision.ALLOW
    assert fetch("not a url") is Decision.ASK
    policy.add_rule("deny", "WebFetch(domain:evil.com)")
    assert fetch("https://evil.com/") is Decision.DENY
    assert fetch("https://a.b.evil.com/") is Decision.DENY
    assert fetch("https://notevil.com/") is Decision.ALLOW
    assert fetch("https://x.org/", needs=True) is Decision.ASK
    policy.add_rule("allow", "WebFetch(domain:localhost)")
    assert policy.fetch_host_allowed("localhost")
    assert not policy.fetch_host_allowed("127.0.0.1")

    assert policy.evaluate("calculate", {}, needs_approval=False).decision is Decision.ALLOW
    verdict = policy.evaluate("spawn_subagent", {}, needs_approval=True)
    assert verdict.decision is Decision.ASK and verdict.session_key == "tool:spawn_subagent"
    policy.add_rule("deny", "calculate")
    assert policy.evaluate("calculate", {}, needs_approval=False).decision is Decision.DENY
    policy.add_rule("allow", "spawn_subagent")
    assert policy.evaluate("spawn_subagent", {}, needs_approval=True).decision is Decision.ALLOW


def test_gate_contract_extensions() -> None:
    assert ApprovalAnswer.ALLOW_ALWAYS.value == "allow_always"
    verdict = evaluate_bash("ls", RuleSet())
    assert verdict.proposed_rule is None and verdict.command == "ls"
