"""`dexter permissions explain [--principal ID] TOOL '{json}'`: what would happen to one tool call
made for one principal, and why.

The answer comes from the same pieces a run uses: the tools the runtime binds for that principal
(`Runtime.tools`), and the gate it would pass (`Runtime.policy`: the principal's grants, the
safety floor, the operator's rules, the principal's own answers). Nothing runs and nothing is
written: a principal that never reached Dexter is explained from its id and gateway.json.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dexter.cli.open_runtime import open_runtime
from dexter.config import ConfigError

if TYPE_CHECKING:
    from dexter.config import Settings
    from dexter.principal import Principal
    from dexter.tools.base import Tool

# Tools a principal other than the operator is never given, whatever the grants say.
_NEVER_SHARED = {"bash": "the shell runs on the operator's machine: only the operator has it"}
_FILE_TOOLS = {"read_file": "read", "write_file": "write", "edit_file": "write"}


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any]


def tool_call(words: list[str]) -> ToolCall | None:
    """`TOOL '{json}'` as a tool call; anything else is a shell command (None)."""
    if len(words) != 2:
        return None
    try:
        arguments = json.loads(words[1])
    except ValueError:
        return None
    if not isinstance(arguments, dict):
        raise ConfigError(
            f'the arguments of {words[0]} must be a JSON object, like \'{{"path": "notes.md"}}\''
        )
    return ToolCall(words[0].strip(), arguments)


def explain_call(settings: Settings, principal_id: str, call: ToolCall) -> dict[str, Any]:
    """The explanation as data (printed by the caller): decision, reason and the layers."""
    from dexter.cli.principal_lookup import principal_for
    from dexter.permissions.principal_policy import ASK_OPERATOR, OWN_FOLDER
    from dexter.runtime import CLI, GATEWAY, MCP, AgentSpec
    from dexter.tools.invoke import validate_arguments

    runtime = open_runtime(settings)
    try:
        principal, configured = principal_for(settings.home, principal_id, runtime.existing_store())
        channel = CLI if principal.is_operator else MCP if principal.kind == "mcp" else GATEWAY
        bound = runtime.tools(AgentSpec(channel=channel, principal=principal))
        # The tool itself, even when this principal is not given it (to say why not).
        every = bound if principal.is_operator else runtime.tools(AgentSpec(channel=CLI))
        tool = bound.get(call.name) or every.get(call.name)
        if tool is None:
            raise ConfigError(_unknown_tool(call.name, every.names()))
        validated, problem = validate_arguments(tool, call.arguments)
        if validated is None:
            raise ConfigError(problem)
        names = frozenset(bound.names())
        policy = runtime.policy(principal, bound_tools=None if principal.is_operator else names)
        verdict = policy.evaluate(
            tool.name, call.arguments, needs_approval=tool.requires_approval(call.arguments)
        )
    finally:
        runtime.close_local()
    reason = verdict.reason or _plain_reason(tool, verdict.decision.value)
    if not principal.is_operator and not reason.endswith((ASK_OPERATOR, OWN_FOLDER)):
        # It passed the grants; what decided is the floor or the operator's rules.
        reason = f"within its grants; then the operator's rules: {reason}"
    report: dict[str, Any] = {
        "principal": principal.id,
        "name": principal.display_name,
        "kind": principal.kind,
        "tool": tool.name,
        "arguments": call.arguments,
        "bound": tool.name in names,
        "not_bound_because": None if tool.name in names else _why_not_bound(tool, principal),
        "decision": verdict.decision.value,
        "reason": reason,
        "grants": None if principal.is_operator else principal.grants.to_dict(),
        "acts_as_operator": configured.operator,
        "gateway_problem": configured.problem,
        "allow_always_saves": verdict.proposed_rule,
        "memory_guard": tool.writes_memory,
    }
    return report


def _unknown_tool(name: str, known: list[str]) -> str:
    import difflib

    close = difflib.get_close_matches(name, known, n=1)
    hint = f" Did you mean {close[0]}?" if close else ""
    return (
        f"unknown tool {name!r}.{hint} To explain a shell command, quote it as one argument: "
        "dexter permissions explain 'git log -5'."
    )


def _why_not_bound(tool: Tool[Any], principal: Principal) -> str:
    if tool.name in _NEVER_SHARED:
        return _NEVER_SHARED[tool.name]
    if tool.name in _FILE_TOOLS:
        verb = _FILE_TOOLS[tool.name]
        if principal.kind == "mcp":
            return f"no folder to {verb}: its host starts `dexter mcp serve` without --workspace"
        return (
            f'no folder granted to {verb} (gateway.json: "principals": {{"{principal.id}": '
            f'{{"files": {{"{verb}": ["~/folder"]}}}}}})'
        )
    return (
        f"`{tool.name}` reaches the operator's machine or private data; grant it by name "
        f'(gateway.json: "principals": {{"{principal.id}": {{"tools": ["{tool.name}"]}}}})'
    )


def _plain_reason(tool: Tool[Any], decision: str) -> str:
    if decision == "allow":
        return f"`{tool.name}` runs without asking (it needs no approval and no rule stops it)"
    return "decided by the permission rules"


def _grants_text(grants: dict[str, Any] | None) -> str:
    if grants is None:
        return "everything (the operator)"
    files = grants.get("files") or {}
    parts = [f"{kind} {', '.join(files[kind])}" for kind in ("read", "write") if files.get(kind)]
    if grants.get("tools"):
        parts.append("tools " + ", ".join(grants["tools"]))
    return "; ".join(parts) or "none beyond the default (public research tools, own memory, jobs)"


def print_report(report: dict[str, Any]) -> None:
    import shutil

    from dexter.cli.tables import labelled

    name = f" ({report['name']})" if report["name"] else ""
    fields = [("Principal", f"{report['principal']}{name} · {report['kind']}")]
    if report["acts_as_operator"]:
        fields.append(("", "listed under operators in gateway.json: acts as the operator"))
    arguments = json.dumps(report["arguments"], ensure_ascii=False)
    fields += [
        ("Call", f"{report['tool']} {arguments}"),
        ("Decision", report["decision"]),
        ("Why", report["reason"]),
        ("Grants", _grants_text(report["grants"])),
    ]
    if not report["bound"]:
        fields.append(("Bound", f"no: {report['not_bound_because']}"))
    if report["gateway_problem"]:
        fields.append(("Warning", report["gateway_problem"]))
    if report["memory_guard"] and report["decision"] == "allow":
        fields.append(
            ("Note", "in a run that has read outside text (pages, filings, a group's messages) "
             "it asks first")
        )  # fmt: skip
    if report["allow_always_saves"]:
        where = "the operator's rules" if report["grants"] is None else "its own answers"
        fields.append(("Always", f"would save {report['allow_always_saves']} (in {where})"))
    print(labelled(fields, shutil.get_terminal_size().columns))


__all__ = ["ToolCall", "explain_call", "print_report", "tool_call"]
