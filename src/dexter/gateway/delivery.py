"""Scheduled alerts delivered through a chat: `Deliverer`s for the cron runner.

They follow the schedules issue's interface (`scheme`, `async deliver(alert)` raising
`DeliveryError`) structurally, so `dexter gateway run` can hand them to the cron runner. Alerts
are proactive sends: the recipient must be listed explicitly in the account's allowlist (or
approved by pairing); `*` and open policies do not count, and WhatsApp personal numbers are
reply-only unless the operator turns `proactive` on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from dexter.gateway.access import decide_outbound
from dexter.gateway.config import GatewayConfig
from dexter.gateway.pairing import PairingStore
from dexter.gateway.types import Channel, ChatType

# Alert targets name the platform; our channel modules are finer-grained.
SCHEMES: Mapping[str, tuple[str, ...]] = {
    "telegram": ("telegram",),
    "whatsapp": ("whatsapp_cloud", "whatsapp_web"),
    "slack": ("slack",),
}


# The schedules' own error class: the runner records it and retries the delivery with backoff.
from dexter.cron.delivery import DeliveryError  # noqa: E402


class AlertLike(Protocol):
    @property
    def job_name(self) -> str: ...

    @property
    def text(self) -> str: ...

    @property
    def target(self) -> str: ...


def chat_type_of(channel: str, chat_id: str) -> ChatType:
    if channel == "telegram" and chat_id.startswith("-"):
        return "group"
    if chat_id.endswith("@g.us") or (channel == "slack" and chat_id[:1] in ("C", "G")):
        return "group"
    return "direct"


class ChannelDeliverer:
    def __init__(
        self,
        scheme: str,
        channels: Sequence[Channel],
        config: Callable[[], GatewayConfig],
        pairing: PairingStore,
    ) -> None:
        self.scheme = scheme
        names = SCHEMES.get(scheme, (scheme,))
        self.channels = [c for c in channels if c.name in names]
        self._config = config
        self._pairing = pairing

    async def deliver(self, alert: AlertLike) -> None:
        scheme, _, chat_id = alert.target.partition(":")
        if scheme != self.scheme or not chat_id:
            raise DeliveryError(f"{alert.target!r} is not a {self.scheme} target")
        if not self.channels:
            raise DeliveryError(
                f"no {self.scheme} account is configured; run `dexter gateway setup`"
            )
        config = self._config()
        reasons: list[str] = []
        for channel in self.channels:
            policy = config.access(channel.name, channel.account_id)
            decision = decide_outbound(
                policy,
                channel=channel.name,
                chat_id=chat_id,
                chat_type=chat_type_of(channel.name, chat_id),
                kind="proactive",
                approved=self._pairing.approved_ids(channel.name, channel.account_id),
            )
            if not decision.allowed:
                reasons.append(f"{channel.name}/{channel.account_id}: {decision.reason}")
                continue
            try:
                await channel.send_text(chat_id, alert.text)
            except Exception as exc:
                raise DeliveryError(
                    f"sending {alert.job_name!r} to {alert.target} failed: {exc}"
                ) from exc
            return
        raise DeliveryError(f"alert to {alert.target} blocked: " + "; ".join(reasons))


def deliverers(
    channels: Sequence[Channel], config: Callable[[], GatewayConfig], pairing: PairingStore
) -> dict[str, ChannelDeliverer]:
    """One deliverer per platform that has a running channel, keyed by alert scheme."""
    found = {}
    for scheme in SCHEMES:
        deliverer = ChannelDeliverer(scheme, channels, config, pairing)
        if deliverer.channels:
            found[scheme] = deliverer
    return found
