"""Which unattended answers reach the user: every suppression rule, in order."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from dexter.cron.suppression import HEARTBEAT_OK, evaluate

NOW = datetime(2026, 12, 1, 21, 0, tzinfo=UTC)


def judge(
    text: str, last: str | None = None, ago: timedelta | None = None
) -> tuple[bool, str, str]:
    verdict = evaluate(text, last_text=last, last_at=None if ago is None else NOW - ago, now=NOW)
    return verdict.suppress, verdict.reason, verdict.text


@pytest.mark.parametrize("text", ["", "   ", "\n\n"])
def test_blank_is_suppressed(text: str) -> None:
    assert judge(text)[:2] == (True, "empty")


@pytest.mark.parametrize(
    "text",
    [
        HEARTBEAT_OK,
        f"  {HEARTBEAT_OK}  ",
        f"**{HEARTBEAT_OK}**",
        f"{HEARTBEAT_OK}.",
        f"{HEARTBEAT_OK}!",
        f"**{HEARTBEAT_OK}**.",
        "heartbeat_ok",  # any case once stripped from an edge
        f"{HEARTBEAT_OK}\n{HEARTBEAT_OK}",
    ],
)
def test_the_ok_token_is_never_delivered(text: str) -> None:
    assert judge(text)[:2] == (True, "ok-token")


def test_token_at_an_edge_is_removed_from_a_real_alert() -> None:
    assert judge(f"NVDA filed its 10-Q today. {HEARTBEAT_OK}") == (
        False,
        "none",
        "NVDA filed its 10-Q today.",
    )
    assert judge(f"{HEARTBEAT_OK}\nNVDA fell 6%.")[2] == "NVDA fell 6%."
    # In the middle it is part of the text, not a marker.
    assert judge(f"Note: {HEARTBEAT_OK} was not sent because NVDA fell 6%.")[0] is False


@pytest.mark.parametrize(
    "text",
    [
        "No action needed.",
        "No action is required at this time.",
        "No alert needed: indexes moved less than 1%.",
        "Nothing to report.",
        "Nothing new to report today.",
        "No significant changes since the last check.",
        "No notable change in NVDA.",
        "Everything looks fine.",
        "everything is normal",
        "All quiet on the markets.",
    ],
)
def test_no_action_answers_are_suppressed(text: str) -> None:
    suppress, reason, cleaned = judge(text)
    assert (suppress, reason) == (True, "no-action")
    assert cleaned == text.strip()


def test_real_alerts_are_delivered() -> None:
    assert judge("The S&P 500 fell 2.4% today (source: S1).")[:2] == (False, "none")
    # "change" inside a real finding is not a "no change" answer.
    assert judge("NVDA changed its guidance: revenue now $42B.")[0] is False


def test_identical_alert_within_24_hours_is_a_duplicate() -> None:
    alert = "NVDA filed its 10-Q."
    assert judge(alert, last=alert, ago=timedelta(hours=3))[:2] == (True, "duplicate")
    # Whitespace and case do not make it new.
    assert judge("nvda  filed its 10-Q.", last=alert, ago=timedelta(hours=3))[1] == "duplicate"
    assert judge(alert, last=alert, ago=timedelta(hours=25))[:2] == (False, "none")
    assert judge("NVDA filed its 10-K.", last=alert, ago=timedelta(hours=1))[0] is False
    assert judge(alert, last=None, ago=None)[0] is False
