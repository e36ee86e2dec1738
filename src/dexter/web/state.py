"""What every view of `dexter web` shares: the runtime, the accounts, the logins and the runs.

Built once by `dexter.web.app.create_app`; a view reaches it with `web_state(request)`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dexter.web.accounts import Accounts
from dexter.web.auth import Logins, OneTimeToken, Throttle
from dexter.web.runs import RunHub

if TYPE_CHECKING:
    from dexter.runtime import Runtime


@dataclass
class WebState:
    runtime: Runtime
    accounts: Accounts
    token: OneTimeToken = field(default_factory=OneTimeToken)
    logins: Logins = field(default_factory=Logins)
    throttle: Throttle = field(default_factory=Throttle)
    # The login cookie's name carries the port: two `dexter web` on one host keep apart.
    cookie: str = "dexter_web"
    model: str | None = None
    hub: RunHub = field(init=False)

    def __post_init__(self) -> None:
        from dexter.store.database_url import database_target

        target = database_target(self.runtime.settings)
        if target.is_postgres and target.url is not None:
            # Team mode: questions go on the queue and the team's workers answer them.
            from dexter.web.queued import QueuedRunHub

            self.hub = QueuedRunHub(self.runtime, target.url, model=self.model)
        else:
            self.hub = RunHub(self.runtime, model=self.model)


def web_state(request: Any) -> WebState:
    state: WebState = request.app.state.web
    return state


__all__ = ["WebState", "web_state"]
