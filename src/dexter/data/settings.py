"""Data-source settings, read from the same environment/.env view as the rest of Dexter."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path

from dexter.config import Settings, get_secret
from dexter.data.errors import ConfigurationNeeded

SEC_DATA_URL = "https://data.sec.gov"
SEC_WWW_URL = "https://www.sec.gov"
SEC_EFTS_URL = "https://efts.sec.gov"
FD_BASE_URL = "https://api.financialdatasets.ai"
YAHOO_BASE_URL = "https://query1.finance.yahoo.com"
DEFAULT_SEC_RATE = 8.0
# The SEC blocks clients above 10 requests/second for about ten minutes.
MAX_SEC_RATE = 10.0
ESEF_URL = "https://filings.xbrl.org"
# filings.xbrl.org publishes no rate limit; a few requests a second is polite for a free service.
DEFAULT_ESEF_RATE = 2.0

# The examples the README and the help text show: copied as they are, they name nobody.
_PLACEHOLDER_AGENTS = ("your name", "you@example.com", "jane doe", "jane@example.com")


def user_agent_problem(agent: str) -> str | None:
    """Why the SEC would not accept `agent` as a declared name and contact, or None."""
    lowered = agent.lower()
    if any(example in lowered for example in _PLACEHOLDER_AGENTS):
        return "is still the example from the documentation; put your own name and email"
    if "@" not in agent or " " not in agent.strip():
        return 'needs a name and an email address, e.g. "Jane Doe jane.doe@company.com"'
    return None


SEC_USER_AGENT_HELP = (
    "The SEC requires every automated client to identify itself with a name and an email "
    "address, and blocks requests that do not. Set DEXTER_SEC_USER_AGENT, e.g. "
    'DEXTER_SEC_USER_AGENT="Jane Doe jane@example.com", in your environment or .env.'
)


@dataclass(frozen=True)
class DataSettings:
    cache_dir: Path
    sec_user_agent: str | None = None
    sec_data_url: str = SEC_DATA_URL
    sec_www_url: str = SEC_WWW_URL
    sec_efts_url: str = SEC_EFTS_URL
    sec_rate: float = DEFAULT_SEC_RATE
    # filings.xbrl.org: ESEF annual reports of EU/UK issuers (key-less).
    esef_url: str = ESEF_URL
    esef_rate: float = DEFAULT_ESEF_RATE
    # Research "as of" a day: nothing filed after it is listed, read or counted.
    as_of: date | None = None
    fd_api_key: str | None = None
    fd_base_url: str = FD_BASE_URL
    # Key-less prices from Yahoo Finance's unofficial chart API; DEXTER_YAHOO_URL=off turns it off.
    yahoo_url: str | None = YAHOO_BASE_URL
    # Team mode's database: SEC requests then take their starts from one limit shared by every
    # process and machine on it. Never shown: it may carry a password.
    team_database_url: str | None = field(default=None, repr=False)

    @classmethod
    def from_settings(cls, settings: Settings) -> DataSettings:
        env = settings.env
        rate = DEFAULT_SEC_RATE
        raw_rate = env.get("DEXTER_SEC_RATE_LIMIT", "").strip()
        if raw_rate:
            try:
                rate = float(raw_rate)
            except ValueError:
                raise ConfigurationNeeded(
                    "DEXTER_SEC_RATE_LIMIT must be a number of requests per second, "
                    f"not {raw_rate!r}."
                ) from None
            if not 0 < rate <= MAX_SEC_RATE:
                raise ConfigurationNeeded(
                    f"DEXTER_SEC_RATE_LIMIT must be above 0 and at most {MAX_SEC_RATE:g}: the SEC "
                    "blocks clients that send more than 10 requests per second."
                )
        esef_rate = DEFAULT_ESEF_RATE
        raw_esef_rate = env.get("DEXTER_ESEF_RATE_LIMIT", "").strip()
        if raw_esef_rate:
            try:
                esef_rate = float(raw_esef_rate)
            except ValueError:
                esef_rate = 0.0
            if not esef_rate > 0:
                raise ConfigurationNeeded(
                    "DEXTER_ESEF_RATE_LIMIT must be a positive number of requests per second, "
                    f"not {raw_esef_rate!r}."
                )
        return cls(
            cache_dir=settings.home / "cache",
            sec_user_agent=(env.get("DEXTER_SEC_USER_AGENT") or "").strip() or None,
            sec_data_url=_base(env.get("DEXTER_SEC_DATA_URL"), SEC_DATA_URL),
            sec_www_url=_base(env.get("DEXTER_SEC_WWW_URL"), SEC_WWW_URL),
            sec_efts_url=_base(env.get("DEXTER_SEC_EFTS_URL"), SEC_EFTS_URL),
            sec_rate=rate,
            esef_url=_base(env.get("DEXTER_ESEF_URL"), ESEF_URL),
            esef_rate=esef_rate,
            as_of=as_of_from_settings(settings),
            fd_api_key=get_secret(settings, "FINANCIAL_DATASETS_API_KEY"),
            fd_base_url=_base(env.get("FINANCIAL_DATASETS_BASE_URL"), FD_BASE_URL),
            yahoo_url=_yahoo_url(env.get("DEXTER_YAHOO_URL")),
            team_database_url=_team_database_url(settings),
        )

    def with_as_of(self, as_of: date | None) -> DataSettings:
        return replace(self, as_of=as_of)

    def require_sec_user_agent(self) -> str:
        if not self.sec_user_agent:
            raise ConfigurationNeeded("DEXTER_SEC_USER_AGENT is not set.", hint=SEC_USER_AGENT_HELP)
        problem = user_agent_problem(self.sec_user_agent)
        if problem:
            raise ConfigurationNeeded(
                f"DEXTER_SEC_USER_AGENT ({self.sec_user_agent!r}) {problem}.",
                hint=SEC_USER_AGENT_HELP,
            )
        return self.sec_user_agent


def _base(value: str | None, default: str) -> str:
    text = (value or "").strip()
    return (text or default).rstrip("/")


def _yahoo_url(value: str | None) -> str | None:
    if (value or "").strip().lower() in ("off", "none", "0", "false"):
        return None
    return _base(value, YAHOO_BASE_URL)


def parse_as_of(value: str | date | None) -> date | None:
    """`2025-04-07` -> that date; blank -> None; anything else is a clear configuration error."""
    if value is None or isinstance(value, date):
        return value
    text = str(value).strip()
    if not text:
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise ConfigurationNeeded(
            f"The as-of date must be a day written YYYY-MM-DD (e.g. 2025-04-07), not {text!r}."
        ) from None


def as_of_from_settings(settings: Settings) -> date | None:
    """DEXTER_AS_OF, else `asOf` in the settings file."""
    raw = settings.env.get("DEXTER_AS_OF") or settings.file_data.get("asOf")
    return parse_as_of(str(raw) if raw is not None else None)


def _team_database_url(settings: Settings) -> str | None:
    from dexter.store.database_url import database_target

    return database_target(settings).url
