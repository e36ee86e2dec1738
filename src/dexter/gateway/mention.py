"""Is the bot addressed? Groups are answered only when it is @mentioned or replied to."""

from __future__ import annotations

import re
from collections.abc import Collection


def _base(jid: str) -> str:
    return jid.split("@", 1)[0].split(":", 1)[0].lower()


def is_mentioned(
    text: str,
    *,
    mentioned_ids: Collection[str] = (),
    self_ids: Collection[str] = (),
    username: str = "",
    replied_to_id: str | None = None,
) -> bool:
    """True when a platform mention names one of `self_ids`, the text contains `@username`
    as a whole word, or the message replies to the bot.

    Unlike the original, a bare phone number typed in the text is not a mention: people quote
    numbers without meaning to call the bot.
    """
    selves = {_base(s) for s in self_ids if s}
    if replied_to_id is not None and _base(replied_to_id) in selves:
        return True
    if any(_base(m) in selves for m in mentioned_ids if m):
        return True
    name = username.strip().lstrip("@")
    if name:
        pattern = rf"(?<![\w@])@{re.escape(name)}(?!\w)"
        if re.search(pattern, text, flags=re.IGNORECASE):
            return True
    return False


def strip_mention(text: str, username: str) -> str:
    """The question without the leading `@bot` that addressed it."""
    name = username.strip().lstrip("@")
    if not name:
        return text.strip()
    return re.sub(
        rf"(?<![\w@])@{re.escape(name)}(?!\w)[,:]?", "", text, flags=re.IGNORECASE
    ).strip()
