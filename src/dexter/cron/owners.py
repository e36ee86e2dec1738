"""Who a job's unattended run acts for: its owner, as a `Principal`.

A run of a chat user's job reads that user's memory and sessions, never the operator's, and binds
only the tools that user may use. Grants live in configuration (the gateway's per-principal
section), not in the database: `principal_for_job` knows only the principals table, so it gives
the owner no grants beyond the default. A front door that knows the grants passes its own
resolver to `make_runner(principal_for=…)`.
"""

from __future__ import annotations

from collections.abc import Callable

from dexter.principal import OPERATOR, OPERATOR_ID, PRINCIPAL_KINDS, Principal, PrincipalKind
from dexter.store.db import Store

# owner id -> the principal its jobs run as (called in a worker thread: it may read the store).
PrincipalResolver = Callable[[str], Principal]


def reply_target_for(principal_id: str) -> str | None:
    """The chat a principal's alerts go to, read from its id: `telegram:222` and
    `telegram:group:-100` are those chats, `slack:T01/U02` a DM (`slack:U02`), `slack:T01/C03`
    the channel; an MCP host or a web user has none."""
    scheme, _, rest = principal_id.partition(":")
    if scheme in ("telegram", "whatsapp"):
        chat = rest.removeprefix("group:")
    elif scheme == "slack":
        chat = rest.rpartition("/")[2]
    else:
        return None
    return f"{scheme}:{chat}" if chat else None


def kind_for(principal_id: str) -> PrincipalKind:
    """A principal's kind read from its id, for an owner the principals table does not list."""
    scheme, _, rest = principal_id.partition(":")
    if principal_id == OPERATOR_ID:
        return "operator"
    if scheme == "mcp":
        return "mcp"
    if scheme == "web":
        return "web"
    if rest.startswith("group:") or (
        scheme == "slack" and rest.rpartition("/")[2].startswith(("C", "G"))
    ):
        return "group"
    return "user"


def principal_for_job(store: Store, owner: str) -> Principal:
    """The principal a job of `owner` runs as: its recorded kind and name, no extra grants, and
    its own chat as the reply target. An owner missing from the table (a row not yet written)
    runs as a plain principal of the kind its id says: never with more than the default."""
    if owner == OPERATOR_ID:
        return OPERATOR
    from dexter.store.principals import PrincipalStore

    row = PrincipalStore(store).get(owner)
    recorded = row.kind if row is not None else ""
    # The operator is one id only: a row claiming that kind for another is not believed.
    kind = next((k for k in PRINCIPAL_KINDS if k == recorded != "operator"), kind_for(owner))
    return Principal(
        owner,
        kind,
        row.display_name if row is not None else "",
        reply_target=reply_target_for(owner),
    )


__all__ = ["PrincipalResolver", "kind_for", "principal_for_job", "reply_target_for"]
