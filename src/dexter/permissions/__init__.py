"""The permission gate in front of every tool call (the rules engine plugs in behind it)."""

from dexter.permissions.gate import (
    ApprovalAnswer,
    Decision,
    PermissionPolicy,
    SimplePolicy,
    Verdict,
)

__all__ = ["ApprovalAnswer", "Decision", "PermissionPolicy", "SimplePolicy", "Verdict"]
