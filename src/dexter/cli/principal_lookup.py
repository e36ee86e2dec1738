"""A principal by id, as the CLI shows and explains it: its kind and name from the store, and what
gateway.json grants it.

gateway.json is read through the gateway's own parser; these commands only look, so a file the
gateway would refuse is reported as a note instead of stopping `dexter principals show` or
`dexter permissions explain`. Its keys: `"operators"` (chat ids that act as the operator) and
`"principals"` (grants by id: `{"telegram:222": {"files": {"read": ["~/shared"]}}}`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from dexter.config import ConfigError
from dexter.principal import OPERATOR, OPERATOR_ID, Grants, Principal

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
    """What the gateway would make of `principal_id`, read through the gateway's own parser; a
    file it would refuse grants nothing, and says why."""
    from dexter.gateway.config import config_path, load_config

    path = config_path(home)
    try:
        config = load_config(path)
    except ConfigError as exc:
        return Configured(Grants(), problem=f"{exc} Until it is fixed, nothing is granted.")
    return Configured(
        config.grants_for(principal_id),
        operator=config.is_operator(principal_id),
        listed=principal_id in config.principals,
    )


def principal_for(
    home: Path, principal_id: str, store: Store | None
) -> tuple[Principal, Configured]:
    """The principal `principal_id` as a run for it would see it: its grants from gateway.json,
    its kind and name from the store (or from the id's form when it never reached Dexter)."""
    text = principal_id.strip()
    if text == OPERATOR_ID:
        return OPERATOR, Configured(Grants())
    from dexter.gateway.config import canonical_principal_id

    try:
        text = canonical_principal_id(text)
    except ValueError as exc:
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
