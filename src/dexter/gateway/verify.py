"""Asking each platform who a pasted credential belongs to, before `dexter gateway setup` saves
it: Telegram's `getMe`, Slack's `auth.test` (and `apps.connections.open` for the app-level
token), the Graph API's phone number object for WhatsApp Cloud.

A credential the platform refuses is `CredentialsRefused` (setup asks again); a platform that
cannot be reached is `PlatformUnreachable` (setup offers to save it unchecked). Messages never
contain the credential or a URL that carries it (Telegram puts the token in the path).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dexter.errors import DexterError

if TYPE_CHECKING:
    import httpx2

TIMEOUT = 15.0


class CredentialsRefused(DexterError):
    """The platform answered, and said no: the message says what it said and where to look."""


class PlatformUnreachable(DexterError):
    """The platform could not be asked (network, DNS, a proxy); the credential is unchecked."""


def _client(transport: httpx2.BaseTransport | None) -> httpx2.Client:
    import httpx2

    return httpx2.Client(timeout=httpx2.Timeout(TIMEOUT, connect=10.0), transport=transport)


def _send(
    platform: str,
    method: str,
    url: str,
    *,
    transport: httpx2.BaseTransport | None,
    **kwargs: Any,
) -> tuple[int, dict[str, Any]]:
    """(HTTP status, JSON object body or {}) of one request; unreachable is one clear error."""
    import httpx2

    try:
        with _client(transport) as client:
            response = client.request(method, url, **kwargs)
    except httpx2.HTTPError as exc:
        # The exception's text may quote the URL, and with it a Telegram token: name its kind.
        raise PlatformUnreachable(
            f"Cannot reach {platform} to check it ({type(exc).__name__}); check your network "
            "or proxy."
        ) from None
    try:
        body = response.json()
    except ValueError:
        body = {}
    return response.status_code, body if isinstance(body, dict) else {}


def check_telegram(
    token: str, api_base: str | None = None, *, transport: httpx2.BaseTransport | None = None
) -> str:
    """The bot's @username, from getMe."""
    from dexter.gateway.telegram import API_BASE

    base = (api_base or API_BASE).rstrip("/")
    status, body = _send(
        "Telegram", "POST", f"{base}/bot{token}/getMe", transport=transport, json={}
    )
    result = body.get("result")
    if status == 200 and body.get("ok") and isinstance(result, dict):
        username = str(result.get("username") or "")
        return f"@{username}" if username else f"bot {result.get('id', '?')}"
    description = str(body.get("description") or f"HTTP {status}")
    if status in (401, 404):
        raise CredentialsRefused(
            f"Telegram rejected that token ({description}): copy it again from @BotFather "
            "(/mybots, your bot, API Token)."
        )
    raise PlatformUnreachable(f"Telegram could not check the token ({description}).")


def _slack(
    method: str, token: str, api_base: str | None, transport: httpx2.BaseTransport | None
) -> dict[str, Any]:
    from dexter.gateway.slack import API_BASE

    base = (api_base or API_BASE).rstrip("/") + "/"
    status, body = _send(
        "Slack",
        "POST",
        base + method,
        transport=transport,
        headers={"authorization": f"Bearer {token}"},
    )
    if body.get("ok"):
        return body
    error = str(body.get("error") or f"HTTP {status}")
    if status >= 500 or not body:
        raise PlatformUnreachable(f"Slack could not check the token ({error}).")
    raise CredentialsRefused(f"Slack rejected that token ({error})")


def check_slack_bot(
    token: str, api_base: str | None = None, *, transport: httpx2.BaseTransport | None = None
) -> str:
    """`@bot in Workspace`, from auth.test with the bot token."""
    try:
        me = _slack("auth.test", token, api_base, transport)
    except CredentialsRefused as exc:
        raise CredentialsRefused(
            f"{exc}: copy the Bot User OAuth Token (xoxb-…) again from OAuth & Permissions, "
            "after installing the app to your workspace."
        ) from None
    return f"@{me.get('user') or '?'} in {me.get('team') or '?'}"


def check_slack_app(
    token: str, api_base: str | None = None, *, transport: httpx2.BaseTransport | None = None
) -> None:
    """The app-level token opens a Socket Mode URL (which is then left unused)."""
    try:
        _slack("apps.connections.open", token, api_base, transport)
    except CredentialsRefused as exc:
        raise CredentialsRefused(
            f"{exc}: make an app-level token with the connections:write scope under Basic "
            "Information (App-Level Tokens), with Socket Mode turned on."
        ) from None


def check_whatsapp_cloud(
    phone_number_id: str,
    access_token: str,
    api_base: str | None = None,
    *,
    transport: httpx2.BaseTransport | None = None,
) -> str:
    """The number and its verified name, from the Graph API's phone number object."""
    from dexter.gateway.whatsapp_cloud import GRAPH_BASE

    base = (api_base or GRAPH_BASE).rstrip("/")
    status, body = _send(
        "the WhatsApp Cloud API",
        "GET",
        f"{base}/{phone_number_id}",
        transport=transport,
        params={"fields": "display_phone_number,verified_name"},
        headers={"authorization": f"Bearer {access_token}"},
    )
    if status == 200 and body.get("display_phone_number"):
        name = body.get("verified_name")
        return str(body["display_phone_number"]) + (f" ({name})" if name else "")
    error = body.get("error")
    detail = str(error.get("message") or "") if isinstance(error, dict) else ""
    detail = detail or f"HTTP {status}"
    if status == 401:
        raise CredentialsRefused(
            f"Meta rejected that access token ({detail}): make a new one on your app's "
            "WhatsApp > API Setup page (or a system user's permanent token)."
        )
    if 400 <= status < 500:
        raise CredentialsRefused(
            f"Meta has no phone number {phone_number_id} for that token ({detail}): copy the "
            "Phone number ID from WhatsApp > API Setup."
        )
    raise PlatformUnreachable(f"The WhatsApp Cloud API could not check them ({detail}).")
