"""Slack over Socket Mode with slack-bolt: no public URL, an outbound WebSocket from this machine.

Optional: the `slack` extra (`dexter.install` names the step that adds it) brings slack-bolt,
slack-sdk and aiohttp; nothing here imports them until a Slack account starts.

- DMs are answered like any private chat. In channels Dexter answers when @mentioned, and in a
  thread it has answered in; its reply goes into that thread (a top-level mention starts one), and
  each thread is its own conversation (the session key carries the thread).
- Slack redelivers an event it thinks we missed (same `event_id`, new envelope); a mention also
  arrives twice (`message` and `app_mention`, same `ts`). Both are answered once.
- Bots have no "typing…" in Socket Mode. The working indicator is an :hourglass_flowing_sand:
  reaction on the message being answered: it works in DMs, channels and threads with the
  `reactions:write` scope (Slack's assistant-thread status only exists for apps with the AI app
  feature, inside their assistant pane). The dispatcher refreshes it every few seconds while a
  run works; it is removed when the answer is posted, when refreshes stop (the run ended without
  an answer), and on shutdown, so it never stays behind.
- Approval questions carry Block Kit buttons; a press arrives as an interactive `block_actions`
  payload over the same socket, is acknowledged at once and handed on as a choice; the question
  is then updated to show what was chosen (a press by anyone but the asker gets an ephemeral
  note).
- The SDK's own auto-reconnect is off: when the socket drops, `start` raises and the gateway's
  manager reconnects with backoff, so `dexter gateway status` shows the attempts and the error.
  Slack's planned socket refreshes (`disconnect` envelopes) are still followed in place.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import logging
import re
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Any

from dexter.config import ConfigError
from dexter.gateway.choices import read_token, token
from dexter.gateway.config import AccountConfig
from dexter.gateway.dedupe import Deduper
from dexter.gateway.mention import is_mentioned
from dexter.gateway.records import MalformedRecord, Record, parse_or_skip, timestamp
from dexter.gateway.text import markdown_to_slack, split_message
from dexter.gateway.types import (
    ApprovalOption,
    ChannelError,
    ChannelHooks,
    Choice,
    ContentKind,
    CredentialsRejected,
    InboundMessage,
    setup_command,
)

if TYPE_CHECKING:
    import aiohttp
    from slack_sdk.web.async_client import AsyncWebClient

log = logging.getLogger("dexter.gateway")
_log = logging.getLogger(__name__)
# The SDK logs its retries and every reconnect with a traceback: into Dexter's log file, not
# among the gateway's own one-line events on the terminal (those hang off "dexter.gateway").
sdk_log = logging.getLogger("dexter.slack_sdk")

API_BASE = "https://slack.com/api/"
# Slack truncates `text` past 40,000 characters and advises at most 4,000 for readability.
SLACK_LIMIT = 4000
WORKING_REACTION = "hourglass_flowing_sand"
# The dispatcher refreshes the indicator every 4 s; without a refresh for this long, it goes.
WORKING_LEASE = 10.0
HEALTH_INTERVAL = 2.0
CONNECT_TIMEOUT = 30.0
CLOSE_TIMEOUT = 2.0
REMEMBERED = 2000
NAME_TIMEOUT = 3.0
# Message subtypes that are a person saying something; the rest (edits, joins, bots) are not.
_SPOKEN = (None, "file_share", "thread_broadcast")
_MENTION = re.compile(r"<@([UW][A-Z0-9]+)(?:\|([^>]*))?>")
_TS = re.compile(r"\d{1,12}(?:\.\d{1,9})?")
# Our approval buttons' action ids: `dexter_approval_<answer>`.
APPROVAL_ACTION = re.compile(r"^dexter_approval_")
# Block Kit's limit on a section's text.
SECTION_LIMIT = 3000


class SlackError(ChannelError):
    pass


class SlackTokenRejected(SlackError, CredentialsRejected):
    """Slack refused a token (invalid_auth, revoked …): the account waits for setup."""


def require_slack() -> None:
    """One line naming the extra when the Slack libraries are not installed."""
    missing = [m for m in ("slack_bolt", "slack_sdk", "aiohttp") if not importlib.util.find_spec(m)]
    if missing:
        from dexter.install import missing_extra

        error = missing_extra("Slack channels", "slack", missing[0].replace("_", "-"))
        raise ConfigError(f"{error.message[:-1]}, or disable slack in gateway.json.")


# ---------------------------------------------------------------------- inbound, pure


def slack_to_text(text: str, *, bot_user_id: str = "", bot_name: str = "") -> str:
    """Slack's wire text as a person reads it: `<@U1|ann>` -> `@ann`, `<#C1|general>` ->
    `#general`, `<https://x|label>` -> `label (https://x)`, entities unescaped."""

    def user(match: re.Match[str]) -> str:
        uid, label = match.group(1), match.group(2)
        if uid == bot_user_id and bot_name:
            return f"@{bot_name}"
        return f"@{label or uid}"

    text = _MENTION.sub(user, text)
    text = re.sub(r"<#[CG][A-Z0-9]+\|([^>]*)>", r"#\1", text)
    text = re.sub(r"<!(here|channel|everyone)(?:\|[^>]*)?>", r"@\1", text)
    text = re.sub(r"<!subteam\^[A-Z0-9]+\|([^>]*)>", r"\1", text)
    text = re.sub(r"<((?:https?|mailto):[^>|]+)\|([^>]+)>", r"\2 (\1)", text)
    text = re.sub(r"<((?:https?|mailto):[^>|]+)>", r"\1", text)
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def _kind_of(files: list[Record]) -> ContentKind:
    mime = files[0].text("mimetype") if files else ""
    if mime.startswith("image/"):
        return "image"
    if mime.startswith("video/"):
        return "video"
    if mime.startswith("audio/"):
        return "voice" if files[0].text("subtype") == "slack_audio" else "audio"
    return "document"


def _ts(event: Record, key: str) -> str:
    """A Slack message timestamp ("1700000000.000100"): the message's id and a thread's."""
    value = event.text(key)
    if value and not _TS.fullmatch(value):
        raise MalformedRecord(f"{event.path}.{key} is not a Slack timestamp")
    return value


def parse_event(
    event: object,
    *,
    account_id: str,
    bot_user_id: str,
    bot_name: str = "",
    in_our_thread: Callable[[str, str], bool] = lambda channel, thread: False,
) -> InboundMessage | None:
    """One `message` or `app_mention` event as an inbound message; None for what is not a
    person talking (edits, deletions, joins, other bots, our own posts). Raises
    `MalformedRecord` for an event whose fields do not have the types Slack documents."""
    record = Record(event, "event")
    if record.data.get("type") not in ("message", "app_mention"):
        return None
    if record.data.get("subtype") not in _SPOKEN or record.data.get("bot_id"):
        return None
    sender = record.text("user")
    if not sender or sender == bot_user_id:
        return None
    channel = record.text("channel")
    ts = _ts(record, "ts")
    if not channel or not ts:
        return None
    channel_type = record.text("channel_type") or ("im" if channel.startswith("D") else "channel")
    direct = channel_type == "im"
    raw = record.text("text")
    files = record.objects("files")
    thread_ts = _ts(record, "thread_ts") or None
    parent = record.text("parent_user_id")
    mentioned = is_mentioned(
        raw,
        mentioned_ids=[m.group(1) for m in _MENTION.finditer(raw)],
        self_ids=[bot_user_id],
        replied_to_id=parent or None,
    ) or (thread_ts is not None and in_our_thread(channel, thread_ts))
    profile = record.maybe_obj("user_profile")
    name = (profile.text("display_name") or profile.text("real_name")) if profile else ""
    return InboundMessage(
        channel="slack",
        account_id=account_id,
        message_id=ts,
        chat_id=channel,
        chat_type="direct" if direct else "group",
        sender_id=sender,
        sender_name=name,
        text=slack_to_text(raw, bot_user_id=bot_user_id, bot_name=bot_name).strip(),
        kind=_kind_of(files) if files else "text",
        timestamp=timestamp(float(ts), f"{record.path}.ts"),
        mentioned=mentioned,
        # In a channel the answer starts a thread under the message that asked.
        thread_id=thread_ts if direct else (thread_ts or ts),
    )


def slack_pieces(markdown: str, limit: int = SLACK_LIMIT) -> list[str]:
    """Markdown as Slack mrkdwn in pieces of at most `limit` characters, split on paragraphs."""
    pieces: list[str] = []
    for part in split_message(markdown, limit):
        converted = markdown_to_slack(part)
        if len(converted) <= limit:
            pieces.append(converted)
        else:  # escaping grew it past the limit
            pieces += split_message(converted, limit)
    return [p for p in pieces if p.strip()]


class _Recent:
    """A bounded set of recently seen keys (threads we answered in, last message per chat)."""

    def __init__(self, size: int = REMEMBERED) -> None:
        self.size = size
        self._items: OrderedDict[tuple[str, str], str] = OrderedDict()

    def put(self, key: tuple[str, str], value: str = "") -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self.size:
            self._items.popitem(last=False)

    def get(self, key: tuple[str, str]) -> str | None:
        return self._items.get(key)

    def __contains__(self, key: object) -> bool:
        return key in self._items


@dataclass
class _Working:
    channel: str
    ts: str
    refreshed: float
    # The reactions.add call. Removing waits for it: a remove that overtook a slow add would
    # leave the hourglass on for good.
    added: asyncio.Task[None]


# ---------------------------------------------------------------------- the channel


class SlackChannel:
    def __init__(
        self,
        account_id: str,
        *,
        bot_token: str,
        app_token: str,
        api_base: str | None = None,
        health_interval: float = HEALTH_INTERVAL,
        working_lease: float = WORKING_LEASE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        bot_token, app_token = bot_token.strip(), app_token.strip()
        if not bot_token.startswith("xoxb-"):
            raise ConfigError(
                f"Slack account {account_id!r} needs a bot token (xoxb-…); run "
                "`dexter gateway setup slack`."
            )
        if not app_token.startswith("xapp-"):
            raise ConfigError(
                f"Slack account {account_id!r} needs an app-level token (xapp-…) with "
                "connections:write; run `dexter gateway setup slack`."
            )
        self._account_id = account_id
        self._bot_token = bot_token
        self._app_token = app_token
        self._base = api_base.rstrip("/") + "/" if api_base else API_BASE
        self.health_interval = health_interval
        self.working_lease = working_lease
        self._clock = clock
        self._session: aiohttp.ClientSession | None = None
        self._web: AsyncWebClient | None = None
        self._stop = asyncio.Event()
        self._events = Deduper()
        self._threads = _Recent()
        self._last_inbound = _Recent()
        self._names = _Recent()
        self._names_unavailable = False
        self._name_lookups: dict[str, asyncio.Future[str]] = {}
        self._working: dict[tuple[str, str], _Working] = {}
        self._watchdog: asyncio.Task[None] | None = None
        # Removals waiting for their reactions.add to settle.
        self._retiring: set[asyncio.Task[None]] = set()
        self.bot_user_id = ""
        self.bot_name = ""
        self.team = ""
        # The workspace's id (T…): principal ids name it (`slack:T01/U02`).
        self.team_id = ""

    @classmethod
    def from_config(cls, account_id: str, account: AccountConfig) -> SlackChannel:
        require_slack()
        return cls(
            account_id,
            bot_token=account.bot_token or "",
            app_token=account.app_token or "",
            api_base=account.api_base,
        )

    @property
    def name(self) -> str:
        return "slack"

    @property
    def account_id(self) -> str:
        return self._account_id

    @property
    def self_id(self) -> str:
        return self.bot_user_id

    # ------------------------------------------------------------------ Web API

    async def _client(self) -> AsyncWebClient:
        import aiohttp
        from slack_sdk.http_retry.builtin_async_handlers import (
            AsyncConnectionErrorRetryHandler,
            AsyncRateLimitErrorRetryHandler,
        )
        from slack_sdk.web.async_client import AsyncWebClient

        if self._web is None or self._session is None or self._session.closed:
            # One connection pool for the channel's life: every reply reuses its TLS session.
            self._session = aiohttp.ClientSession()
            self._web = AsyncWebClient(
                token=self._bot_token,
                base_url=self._base,
                session=self._session,
                timeout=30,
                logger=sdk_log,
                retry_handlers=[
                    AsyncConnectionErrorRetryHandler(max_retry_count=1),
                    AsyncRateLimitErrorRetryHandler(max_retry_count=3),
                ],
            )
        return self._web

    async def _call(self, method: str, *, read: bool = False, **params: Any) -> dict[str, Any]:
        """A Web API call; failures become one line that never contains a token. Read methods
        (`read=True`, e.g. users.info) take query parameters: Slack accepts JSON only for writes."""
        import aiohttp
        from slack_sdk.errors import SlackApiError

        client = await self._client()
        try:
            if read:
                response = await client.api_call(method, http_verb="GET", params=params)
            else:
                response = await client.api_call(method, json=params)
        except SlackApiError as exc:
            error = str(exc.response.get("error") or exc.response.status_code)
            if error in ("invalid_auth", "not_authed", "account_inactive", "token_revoked"):
                raise SlackTokenRejected(
                    f"Slack rejected the bot token ({error}): check it on your app's OAuth & "
                    "Permissions page and run setup again: "
                    + setup_command("slack", self._account_id)
                ) from exc
            if error == "missing_scope":
                needed = exc.response.get("needed") or "?"
                raise SlackError(
                    f"Slack {method} needs the {needed} scope: add it under OAuth & Permissions "
                    "and reinstall the app"
                ) from exc
            raise SlackError(f"Slack {method} failed: {error}") from exc
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise SlackError(f"cannot reach Slack ({type(exc).__name__}) during {method}") from exc
        return dict(response.data) if isinstance(response.data, dict) else {}

    # ------------------------------------------------------------------ lifecycle

    async def start(self, hooks: ChannelHooks) -> None:
        from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
        from slack_bolt.async_app import AsyncApp

        if self._stop.is_set():  # stop() came first; the event is never replaced, so it stays
            return
        me = await self._call("auth.test")
        self.bot_user_id = str(me.get("user_id") or "")
        self.bot_name = str(me.get("user") or "")
        self.team = str(me.get("team") or "")
        self.team_id = str(me.get("team_id") or "")
        client = await self._client()
        app = AsyncApp(
            client=client,
            name="dexter",
            logger=sdk_log,
            signing_secret="",
            # Socket Mode: Slack authenticated the socket; these guard public HTTP endpoints.
            request_verification_enabled=False,
            ssl_check_enabled=False,
            url_verification_enabled=False,
        )

        async def on_event(body: dict[str, Any], event: dict[str, Any]) -> None:
            await self._inbound(hooks, body, event)

        async def on_action(ack: Any, body: dict[str, Any]) -> None:
            await ack()  # within Slack's three seconds, whatever happens next
            choice = parse_or_skip(
                partial(parse_block_action, body, account_id=self._account_id),
                source=f"slack/{self._account_id}",
                what="button press",
            )
            if choice is not None:
                await hooks.message(choice)

        app.event("message")(on_event)
        app.event("app_mention")(on_event)
        app.action(APPROVAL_ACTION)(on_action)
        handler = AsyncSocketModeHandler(app, self._app_token, logger=sdk_log, web_client=client)
        socket = handler.client
        # Reconnects belong to the gateway's manager (status, backoff); see the module docstring.
        socket.default_auto_reconnect_enabled = socket.auto_reconnect_enabled = False
        try:
            try:
                socket.wss_uri = await socket.issue_new_wss_url()
            except Exception as exc:
                raise _socket_error(exc, self._account_id) from exc
            try:
                await asyncio.wait_for(
                    socket.connect(),  # type: ignore[no-untyped-call]
                    CONNECT_TIMEOUT,
                )
            except TimeoutError as exc:
                raise SlackError("cannot open Slack's Socket Mode connection (timed out)") from exc
            if not await socket.is_connected():
                raise SlackError("Slack's Socket Mode connection closed while opening")
            hooks.connected(f"@{self.bot_name} ({self.team})" if self.bot_name else self.team)
            misses = 0
            while not self._stop.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), self.health_interval)
                if self._stop.is_set():
                    break
                # Two checks in a row, so a planned refresh (a second or so) is not a drop.
                misses = 0 if await socket.is_connected() else misses + 1
                if misses >= 2:
                    raise SlackError("the Slack Socket Mode connection dropped")
        finally:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(socket.close(), CLOSE_TIMEOUT)  # type: ignore[no-untyped-call]

    async def stop(self) -> None:
        self._stop.set()
        removals = [asyncio.create_task(self._unreact(w)) for w in self._working.values()]
        removals += self._retiring
        self._working.clear()
        if removals:
            _, late = await asyncio.wait(removals, timeout=CLOSE_TIMEOUT / 2)
            for task in late:
                task.cancel()
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
        if self._session is not None:
            await self._session.close()
        self._session = self._web = None

    async def _inbound(
        self, hooks: ChannelHooks, body: dict[str, Any], event: dict[str, Any]
    ) -> None:
        event_id = str(body.get("event_id") or "")
        if event_id and not self._events.first_sighting(event_id):
            return  # Slack's retry of an event we already have
        # Slack-bolt would log a parser error with its traceback and carry on; here a bad event
        # is one line naming the field, like on every channel.
        message = parse_or_skip(
            partial(
                parse_event,
                event,
                account_id=self._account_id,
                bot_user_id=self.bot_user_id,
                bot_name=self.bot_name,
                in_our_thread=lambda channel, thread: (channel, thread) in self._threads,
            ),
            source=f"slack/{self._account_id}",
            what=f"event {event_id}" if event_id else "event",
        )
        if message is None:
            return
        if not message.sender_name:
            name = await self._display_name(message.sender_id)
            if name:
                message = replace(message, sender_name=name)
        self._last_inbound.put((message.chat_id, message.thread_id or ""), message.message_id)
        await hooks.message(message)

    async def _display_name(self, user_id: str) -> str:
        """A member's display name, so group context reads "Ann: …" rather than a member id.
        Cached, one lookup at a time per member (events are handled concurrently); "" when Slack
        won't say (no users:read scope, a slow or failed call)."""
        cached = self._names.get((user_id, ""))
        if cached is not None or self._names_unavailable:
            return cached or ""
        lookup = self._name_lookups.get(user_id)
        if lookup is None:
            lookup = asyncio.ensure_future(self._look_up_name(user_id))
            self._name_lookups[user_id] = lookup
            lookup.add_done_callback(lambda _done: self._name_lookups.pop(user_id, None))
        return await asyncio.shield(lookup)

    async def _look_up_name(self, user_id: str) -> str:
        try:
            data = await asyncio.wait_for(
                self._call("users.info", read=True, user=user_id), NAME_TIMEOUT
            )
        except (SlackError, TimeoutError) as exc:
            # Without the scope every lookup would fail the same way: stop asking. Anything else
            # (slow, unreachable, a hiccup) is not remembered: the next message asks again.
            self._names_unavailable = "users:read" in str(exc)
            _log.debug("no display name for Slack member %s: %s", user_id, exc)
            return ""
        user = data.get("user") or {}
        profile = user.get("profile") or {}
        name = str(
            profile.get("display_name")
            or profile.get("real_name")
            or user.get("real_name")
            or user.get("name")
            or ""
        )
        self._names.put((user_id, ""), name)
        return name

    # ------------------------------------------------------------------ outbound

    async def send_text(self, chat_id: str, text: str, *, thread_id: str | None = None) -> None:
        for piece in slack_pieces(text):
            params: dict[str, Any] = {
                "channel": chat_id,
                "text": piece,
                "mrkdwn": True,
                "unfurl_links": False,
                "unfurl_media": False,
            }
            if thread_id:
                params["thread_ts"] = thread_id
            await self._call("chat.postMessage", **params)
        if thread_id:
            self._threads.put((chat_id, thread_id))
        working = self._working.pop((chat_id, thread_id or ""), None)
        if working is not None:
            await self._retire(working)

    async def send_approval(
        self,
        chat_id: str,
        text: str,
        approval_id: str,
        options: Sequence[ApprovalOption],
        *,
        thread_id: str | None = None,
    ) -> str:
        """The question with one button per option; its `ts` (what chat.update edits)."""
        shown = _section_text(text)
        buttons: list[dict[str, Any]] = []
        for option in options:
            button: dict[str, Any] = {
                "type": "button",
                "action_id": f"dexter_approval_{option.answer}",
                "text": {"type": "plain_text", "text": option.label},
                "value": token(approval_id, option),
            }
            if option.answer in ("once", "deny"):
                button["style"] = "primary" if option.answer == "once" else "danger"
            buttons.append(button)
        params: dict[str, Any] = {
            "channel": chat_id,
            "text": shown,
            "blocks": [
                {"type": "section", "text": {"type": "mrkdwn", "text": shown}},
                {
                    "type": "actions",
                    "block_id": f"dexter_approval_{approval_id}",
                    "elements": buttons,
                },
            ],
            "unfurl_links": False,
            "unfurl_media": False,
        }
        if thread_id:
            params["thread_ts"] = thread_id
        sent = await self._call("chat.postMessage", **params)
        if thread_id:
            self._threads.put((chat_id, thread_id))
        return str(sent.get("ts") or "")

    async def settle_approval(
        self, chat_id: str, ref: str, text: str, *, thread_id: str | None = None
    ) -> None:
        """The question updated to say how it was settled, its buttons gone."""
        shown = _section_text(text)
        await self._call(
            "chat.update",
            channel=chat_id,
            ts=ref,
            text=shown,
            blocks=[{"type": "section", "text": {"type": "mrkdwn", "text": shown}}],
        )

    async def answer_choice(self, choice: InboundMessage, note: str = "") -> None:
        """The press was acknowledged on arrival; a note goes to the presser alone."""
        if not note:
            return
        params: dict[str, Any] = {"channel": choice.chat_id, "user": choice.sender_id, "text": note}
        if choice.thread_id:
            params["thread_ts"] = choice.thread_id
        await self._call("chat.postEphemeral", **params)

    async def send_typing(self, chat_id: str, *, thread_id: str | None = None) -> None:
        key = (chat_id, thread_id or "")
        ts = self._last_inbound.get(key)
        if not ts:
            return
        working = self._working.get(key)
        if working is not None and working.ts == ts:
            working.refreshed = self._clock()
            return
        added = asyncio.create_task(self._react(chat_id, ts))
        self._working[key] = _Working(chat_id, ts, self._clock(), added)
        # Before the add: an add that fails or is cancelled still leaves an entry to expire.
        if self._watchdog is None or self._watchdog.done():
            self._watchdog = asyncio.create_task(self._expire(), name="slack-working")
        if working is not None:  # a newer message is being answered now
            await self._retire(working)
        # Shielded: when the dispatcher stops waiting, the call still completes, and whoever
        # removes the reaction waits for it first.
        await asyncio.shield(added)

    async def _react(self, channel: str, ts: str) -> None:
        try:
            await self._call("reactions.add", channel=channel, timestamp=ts, name=WORKING_REACTION)
        except SlackError as exc:
            if "already_reacted" not in str(exc):
                raise

    async def _retire(self, working: _Working) -> None:
        """Remove an indicator now, or once its reactions.add settles (in the background, so an
        answer is not held up by a slow add)."""
        if working.added.done():
            await self._unreact(working)
            return
        task = asyncio.create_task(self._unreact(working), name="slack-unreact")
        self._retiring.add(task)
        task.add_done_callback(self._retiring.discard)

    async def _unreact(self, working: _Working) -> None:
        await asyncio.wait([working.added])
        try:
            await self._call(
                "reactions.remove",
                channel=working.channel,
                timestamp=working.ts,
                name=WORKING_REACTION,
            )
        except SlackError as exc:  # already gone, or the message was deleted
            log.debug("could not remove the working reaction: %s", exc)

    async def _expire(self) -> None:
        """Remove indicators nobody refreshes any more (a run that ended without an answer)."""
        while self._working:
            await asyncio.sleep(self.working_lease / 4)
            now = self._clock()
            for key, working in list(self._working.items()):
                if now - working.refreshed >= self.working_lease:
                    self._working.pop(key, None)
                    await self._retire(working)

    async def mark_read(self, message: InboundMessage) -> None:
        """Slack has no read receipts for bots."""
        return None


def _section_text(markdown: str) -> str:
    shown = markdown_to_slack(markdown)
    return shown if len(shown) <= SECTION_LIMIT else shown[: SECTION_LIMIT - 1] + "…"


def parse_block_action(body: object, *, account_id: str) -> InboundMessage | None:
    """A press on one of our approval buttons (a `block_actions` payload) as a choice; None
    for anything else. Raises `MalformedRecord` for a payload of an unexpected shape."""
    record = Record(body, "payload")
    if record.text("type") != "block_actions":
        return None
    parsed = next(
        (
            found
            for action in record.objects("actions")
            if (found := read_token(action.text("value"))) is not None
        ),
        None,
    )
    if parsed is None:
        return None
    user = record.obj("user")
    container = record.maybe_obj("container")
    channel = record.maybe_obj("channel")
    chat_id = (channel.text("id") if channel else "") or (
        container.text("channel_id") if container else ""
    )
    if not chat_id:
        return None
    message = record.maybe_obj("message")
    thread = (message.text("thread_ts") if message else "") or (
        container.text("thread_ts") if container else ""
    )
    sender = user.required_text("id")
    trigger = record.text("trigger_id") or f"{parsed[0]}:{sender}"
    return InboundMessage(
        channel="slack",
        account_id=account_id,
        message_id=f"action:{trigger}",
        chat_id=chat_id,
        chat_type="direct" if chat_id.startswith("D") else "group",
        sender_id=sender,
        sender_name=user.text("name") or user.text("username"),
        thread_id=thread or None,
        choice=Choice(parsed[0], parsed[1]),
    )


def _socket_error(exc: Exception, account_id: str) -> SlackError:
    from slack_sdk.errors import SlackApiError

    if isinstance(exc, SlackApiError):
        error = str(exc.response.get("error") or exc.response.status_code)
        if error in ("invalid_auth", "not_authed", "not_allowed_token_type", "token_revoked"):
            return SlackTokenRejected(
                f"Slack rejected the app-level token ({error}): create one with the "
                "connections:write scope under Basic Information and run setup again: "
                + setup_command("slack", account_id)
            )
        return SlackError(f"Slack refused a Socket Mode connection: {error}")
    return SlackError(f"cannot reach Slack ({type(exc).__name__}) to open Socket Mode")
