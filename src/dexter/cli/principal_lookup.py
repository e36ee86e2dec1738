"""A principal by id, as the CLI shows and explains it: its kind and name from the store, and what
gateway.json grants it.

gateway.json is read here as plain JSON, defensively: these commands only look, so a file the
gateway would refuse is reported as a note instead of stopping `dexter principals show` or
`dexter permissions explain`. Its keys: `"operators"` (chat ids that act as the operator) and
`"principals"` (grants by id: `{"telegram:222": {"files": {"read": ["~/shared"]}}}`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dexter.config import ConfigError
from dexter.principal import OPERATOR, OPERATOR_ID, Grants, Principal, PrincipalError, check_id

if TYPE_CHECKING:
    from dexter.store import Store

GATEWAY_FILE = "gateway.json"


@dataclass(frozen=True)
class Configured:
    """What gateway.json says about one principal id."""

    grants: Grants
    # Listed under "operators": a DM from this id runs with the operator's powers.
    operator: bool = False
    listed: bool = False
    problem: str | None = None


def configured(home: Path, principal_id: str) -> Configured:
    path = home / GATEWAY_FILE
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return Configured(Grants())
    except (OSError, ValueError) as exc:
        return Configured(Grants(), problem=f"cannot read {path}: {exc}")
    if not isinstance(data, dict):
        return Configured(Grants(), problem=f"{path} is not a JSON object")
    operators = data.get("operators")
    is_operator = isinstance(operators, list) and principal_id in operators
    entries = data.get("principals")
    if not isinstance(entries, dict) or principal_id not in entries:
        return Configured(Grants(), operator=is_operator)
    entry = entries[principal_id]
    try:
        if not isinstance(entry, dict):
            raise PrincipalError('the entry must be an object like {"files": {"read": [...]}}')
        grants = Grants.from_dict(entry)
    except PrincipalError as exc:
        problem = f'{path}: principals."{principal_id}": {exc}; nothing is granted'
        return Configured(Grants(), operator=is_operator, listed=True, problem=problem)
    return Configured(grants, operator=is_operator, listed=True)


def principal_for(
    home: Path, principal_id: str, store: Store | None
) -> tuple[Principal, Configured]:
    """The principal `principal_id` as a run for it would see it: its grants from gateway.json,
    its kind and name from the store (or from the id's form when it never reached Dexter)."""
    text = principal_id.strip()
    if text == OPERATOR_ID:
        return OPERATOR, Configured(Grants())
    try:
        check_id(text)
    except PrincipalError as exc:
        raise ConfigError(str(exc)) from None
    found = configured(home, text)
    if found.operator:
        return OPERATOR, found
    from dexter.cron.owners import kind_for, principal_for_job, reply_target_for

    # Kind and name as recorded (the way a job of theirs would run), else read from the id.
    if store is not None:
        recorded = principal_for_job(store, text)
    else:
        recorded = Principal(text, kind_for(text), reply_target=reply_target_for(text))
    return replace(recorded, grants=found.grants), found


__all__ = ["GATEWAY_FILE", "Configured", "configured", "principal_for"]
