"""Filing watches end to end over the recorded SEC mirror: the schedules runner polls, the
watch detects new filings against its cursor, and the outbox delivers one alert per poll.

The mirror is "advanced" by serving NVIDIA's real submissions file with new rows on top (see
tests/support/watch_filings.py: the new 8-K's documents are the recorded Buckle 8-K and its
EX-99.1, so the accession numbers are test values and the figures are Buckle's)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from dexter.cron.runner import Runner
from dexter.cron.store import CronStore
from dexter.data.sec.provider import SecEdgarProvider
from dexter.data.settings import DataSettings
from dexter.principal import OPERATOR
from dexter.store.db import Store, open_store
from dexter.store.migrations import MIGRATIONS, apply_migrations
from dexter.watch.poller import Poller
from dexter.watch.service import WatchExecutor, add_watch
from dexter.watch.store import DetectedFiling, WatchStore
from tests.support.cron import FakeClock, RecordingDeliverer, ScriptedExecutor
from tests.support.sec_mirror import Mirror, mirror_transport
from tests.support.watch_filings import (
    EARNINGS_ACCESSION,
    SUBMISSIONS,
    advanced,
    earnings_folder,
    eight_k_row,
    recorded_submissions,
)

AGENT = "Dexter Tests tests@example.com"
START = datetime(2026, 3, 9, 14, 0, tzinfo=UTC)
CHAT = "telegram:4242"


@pytest.fixture(scope="module")
def nvda() -> dict[str, Any]:
    return recorded_submissions()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    home = tmp_path / "home"
    home.mkdir()
    with open_store(home) as opened:
        yield opened


class Process:
    """One run of Dexter's daemon: its own provider, runner and deliverer over the shared
    database, so a test can "restart" by making another."""

    def __init__(self, store: Store, mirror: Mirror, clock: FakeClock, tmp: Path) -> None:
        settings = DataSettings(cache_dir=tmp / "cache", sec_user_agent=AGENT)
        self.sec = SecEdgarProvider(settings, transport=mirror_transport(mirror))
        self.watches = WatchStore(store)
        self.chat = RecordingDeliverer("telegram")
        executor = WatchExecutor(self.watches, self.sec, clock)
        self.runner = Runner(
            CronStore(store),
            ScriptedExecutor(),
            home=tmp,
            deliverers={"telegram": self.chat},
            clock=clock,
            kind_executors={"watch": executor},
        )

    async def poll(self) -> list[str]:
        await self.runner.run_due()
        return [a.text for a in self.chat.delivered]


def _watch(store: Store, clock: FakeClock, **options: Any) -> None:
    add_watch(
        WatchStore(store),
        CronStore(store),
        by=OPERATOR,
        tickers=["NVDA"],
        forms=options.get("forms", "8-K"),
        items=options.get("items"),
        deliver=CHAT,
        now=clock.now(),
    )


async def test_a_new_earnings_8k_gives_one_alert_with_its_figures_and_citation(
    store: Store, tmp_path: Path, nvda: dict[str, Any]
) -> None:
    mirror = Mirror()
    clock = FakeClock(START)
    _watch(store, clock, items="2.02")
    daemon = Process(store, mirror, clock, tmp_path)
    assert await daemon.poll() == []  # the first poll only notes where the history stands
    clock.advance(minutes=5)
    assert await daemon.poll() == []
    assert mirror.not_modified == [SUBMISSIONS]  # unchanged: a 304, no body

    mirror.extra[SUBMISSIONS] = advanced(nvda, eight_k_row(EARNINGS_ACCESSION, "2.02,9.01"))
    mirror.extra.update(earnings_folder())
    clock.advance(minutes=5)
    (alert,) = await daemon.poll()
    first, *details = alert.splitlines()
    assert first == "NVDA filed an 8-K on 2026-03-10 (items 2.02, 9.01)"
    assert (
        "- Item 2.02 Results of Operations and Financial Condition: net income $44.2 million, "
        "$0.89 per share; net sales $293.6 million down 3.2% (EX-99.1)"
    ) in details
    assert details[-1] == (
        f"{daemon.sec.www_url}/Archives/edgar/data/1045810/000104581026990001/"
        f"{EARNINGS_ACCESSION}-index.htm (accession {EARNINGS_ACCESSION})"
    )
    assert daemon.chat.delivered[0].target == CHAT

    clock.advance(minutes=5)
    assert len(await daemon.poll()) == 1  # nothing new: no second alert
    assert mirror.not_modified.count(SUBMISSIONS) == 2


async def test_filings_outside_the_watched_items_stay_quiet(
    store: Store, tmp_path: Path, nvda: dict[str, Any]
) -> None:
    mirror = Mirror()
    clock = FakeClock(START)
    _watch(store, clock, items="5.02")
    daemon = Process(store, mirror, clock, tmp_path)
    await daemon.poll()
    mirror.extra[SUBMISSIONS] = advanced(nvda, eight_k_row(EARNINGS_ACCESSION, "2.02,9.01"))
    clock.advance(minutes=5)
    assert await daemon.poll() == []


async def test_a_crash_between_detection_and_delivery_delivers_once_after_restart(
    store: Store, tmp_path: Path, nvda: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    mirror = Mirror()
    clock = FakeClock(START)
    _watch(store, clock)
    await Process(store, mirror, clock, tmp_path).poll()
    mirror.extra[SUBMISSIONS] = advanced(nvda, eight_k_row(EARNINGS_ACCESSION, "2.02,9.01"))
    mirror.extra.update(earnings_folder())

    crashing = Process(store, mirror, clock, tmp_path)

    async def die(*_args: object, **_options: object) -> str:
        raise SystemExit("killed while reading the filing")

    monkeypatch.setattr(Poller, "alert_text", die)
    with pytest.raises(SystemExit):
        await Poller(crashing.watches, crashing.sec, now=clock.now).poll("job")
    (left,) = crashing.watches.detected(crashing.watches.all()[0].id)
    assert (left.accession, left.state, left.outbox_id) == (EARNINGS_ACCESSION, "detected", None)
    monkeypatch.undo()

    clock.advance(minutes=5)
    restarted = Process(store, mirror, clock, tmp_path)
    (alert,) = await restarted.poll()
    assert EARNINGS_ACCESSION in alert and "net income $44.2 million" in alert
    for _ in range(2):
        clock.advance(minutes=5)
        assert len(await restarted.poll()) == 1
    (done,) = restarted.watches.history(restarted.watches.all()[0].id)
    assert (done.state, done.delivery) == ("queued", "delivered")


async def test_a_burst_of_filings_and_documents_is_one_message(
    store: Store, tmp_path: Path, nvda: dict[str, Any]
) -> None:
    mirror = Mirror()
    clock = FakeClock(START)
    _watch(store, clock, forms="8-K,4")
    daemon = Process(store, mirror, clock, tmp_path)
    await daemon.poll()
    insider = {
        "accessionNumber": "0001045810-26-990002",
        "filingDate": "2026-03-10",
        "form": "4",
        "primaryDocument": "xslF345X05/form4.xml",
    }
    mirror.extra[SUBMISSIONS] = advanced(
        nvda, insider, eight_k_row(EARNINGS_ACCESSION, "2.02,9.01")
    )
    mirror.extra.update(earnings_folder(extra=10))
    clock.advance(minutes=5)
    (alert,) = await daemon.poll()
    assert alert.splitlines()[0] == "NVDA: 2 new filings (8-K, 4)"
    assert "- 12 documents in the filing" in alert
    assert f"(accession {EARNINGS_ACCESSION})" in alert
    assert "NVDA filed a Form 4 on 2026-03-10" in alert
    assert "(accession 0001045810-26-990002)" in alert


def test_a_database_from_before_watches_upgrades(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    path = home / "dexter.db"
    conn = sqlite3.connect(path, isolation_level=None)
    apply_migrations(conn, path, tuple(m for m in MIGRATIONS if m.number < 9))
    conn.close()
    with open_store(home) as store:
        watches = WatchStore(store)
        made = watches.add(
            owner="operator", tickers=["AMD"], forms=["8-K"], items=[], target="outbox", now=START
        )
        assert [w.tickers for w in watches.all()] == [("AMD",)]
        assert watches.cursor(made.id, "AMD") is None


APPLE_2024 = "0000320193-24-000123"
APPLE_2023 = "0000320193-23-000106"
APPLE_DOC = "www.sec.gov/Archives/edgar/data/320193/000032019324000123/aapl-20240928.htm"
PRIOR_DOC = "www.sec.gov/Archives/edgar/data/320193/000032019323000106/aapl-20230930.htm"
CREDIT = (
    "The Company is exposed to credit risk and fluctuations in the values of its investment "
    "portfolio."
)
ERP = "The Company faces risks from its move to a new enterprise resource planning system."


async def test_a_10k_alert_lists_risk_factors_added_and_removed_since_the_last_10k(
    store: Store, tmp_path: Path
) -> None:
    """The fixtures hold one Apple 10-K, so the "prior year" 10-K (served at the FY2023 10-K's
    real address) is constructed from it here: the credit-risk factor taken out (so FY2024
    added it) and an invented ERP factor put in (so FY2024 removed it)."""
    mirror = Mirror()
    current = mirror.lookup("www.sec.gov", APPLE_DOC.partition("/")[2])
    assert current is not None and current.count(CREDIT.encode()) == 1
    volatility = b"The price of the Company&#8217;s stock is subject to volatility.</span>"
    prior = current.replace(CREDIT.encode(), b"").replace(
        volatility, volatility + f"</div><div><span>{ERP}</span>".encode()
    )
    mirror.extra[PRIOR_DOC] = prior
    clock = FakeClock(START)
    daemon = Process(store, mirror, clock, tmp_path)
    history = await daemon.sec.filings("AAPL", forms=["10-K"], limit=5)
    filing = DetectedFiling(
        watch_id="w",
        accession=APPLE_2024,
        ticker="AAPL",
        cik="0000320193",
        form="10-K",
        filing_date="2024-11-01",
        items=(),
        primary_document="aapl-20240928.htm",
    )
    poller = Poller(daemon.watches, daemon.sec, now=clock.now)
    text = await poller.alert_text([filing], {"AAPL": list(history)})
    lines = text.splitlines()
    assert lines[0] == "AAPL filed a 10-K on 2024-11-01"
    assert lines[1] == f"- Risk factors (Item 1A) against {APPLE_2023}: 1 added, 1 removed"
    assert lines[2:4] == [f"  + {CREDIT}", f"  - {ERP}"]
    assert lines[-1].endswith(f"(accession {APPLE_2024})")


async def test_a_chat_principal_watches_for_its_own_chat_and_sees_only_its_own(
    store: Store,
) -> None:
    from dexter.principal import Principal
    from dexter.tools.base import ToolContext, ToolFailure
    from dexter.watch.tools import WatchArgs, WatchTool, WatchToolContext

    ana = Principal("telegram:222", "user", "Ana", reply_target="telegram:222")
    clock = FakeClock(START)
    _watch(store, clock)  # the operator's NVDA watch

    def tool(who: Principal) -> WatchTool:
        return WatchTool(WatchToolContext(store=lambda: store, principal=who, clock=clock.now))

    made = await tool(ana).run(
        WatchArgs(action="add", tickers=["AMD"], forms="8-K,4", items="2.02", cluster="4/10"),
        ToolContext(),
    )
    assert "AMD  forms 8-K,4 items 2.02  cluster 4/10  -> telegram:222" in made
    listed = await tool(ana).run(WatchArgs(action="list"), ToolContext())
    assert "AMD" in listed and "NVDA" not in listed
    with pytest.raises(ToolFailure, match="No watch matches 'NVDA'"):
        await tool(ana).run(WatchArgs(action="remove", watch_id="NVDA"), ToolContext())
    with pytest.raises(ToolFailure, match="this chat"):
        await tool(ana).run(
            WatchArgs(action="add", tickers=["AMD"], deliver="telegram:999"), ToolContext()
        )
    assert tool(ana).requires_approval({"action": "add"})
    assert not tool(ana).requires_approval({"action": "list"})


FORM4 = "sec-documents/form4.snow.xml"
# (accession, owner CIK, owner name, sale date, filing date): a month after the recorded file's
# newest rows (NVIDIA's real Form 4s of 2026-03-04), so those fall outside the cluster's window.
INSIDERS = (
    ("0001045810-26-990011", "0009000001", "Ana Seller", "2026-04-06", "2026-04-07"),
    ("0001045810-26-990012", "0009000002", "Ben Seller", "2026-04-08", "2026-04-09"),
    ("0001045810-26-990013", "0009000003", "Cy Seller", "2026-04-10", "2026-04-13"),
)


@pytest.fixture(scope="module")
def form4() -> bytes:
    from tests.support.fixtures import fixtures_dir

    return (fixtures_dir() / FORM4).read_bytes()


def _insider_sale(mirror: Mirror, form4: bytes, index: int) -> dict[str, str]:
    """The real Snowflake Form 4 (Scarpelli: an option exercise, then open-market sales in five
    rows of 200,000 shares for USD 30.4 M) re-hosted as an NVIDIA filing with the reporting owner's
    name and CIK and the trade dates changed, so three copies are three distinct insiders."""
    accession, cik, name, sold, filed = INSIDERS[index]
    xml = (
        form4.replace(b"0001402349", cik.encode())
        .replace(b"Scarpelli Michael", name.encode())
        .replace(b"2022-12-13", sold.encode())
    )
    folder = f"www.sec.gov/Archives/edgar/data/1045810/{accession.replace('-', '')}"
    mirror.extra[f"{folder}/form4.xml"] = xml
    return {
        "accessionNumber": accession,
        "filingDate": filed,
        "form": "4",
        "primaryDocument": "xslF345X05/form4.xml",
    }


async def test_three_insiders_selling_within_a_week_give_one_cluster_alert_once(
    store: Store, tmp_path: Path, nvda: dict[str, Any], form4: bytes
) -> None:
    mirror = Mirror()
    clock = FakeClock(START)
    _watch(store, clock, forms="4")
    daemon = Process(store, mirror, clock, tmp_path)
    assert "cluster 3/7" in daemon.watches.all()[0].describe()
    await daemon.poll()
    first, second = (_insider_sale(mirror, form4, i) for i in (0, 1))
    mirror.extra[SUBMISSIONS] = advanced(nvda, second, first)
    clock.advance(minutes=5)
    (pair,) = await daemon.poll()
    assert pair.splitlines()[0] == "NVDA: 2 new filings (4, 4)"  # two insiders: no cluster
    assert "insiders sold" not in pair

    third = _insider_sale(mirror, form4, 2)
    mirror.extra[SUBMISSIONS] = advanced(nvda, third, second, first)
    clock.advance(minutes=5)
    _, alert = await daemon.poll()
    lines = alert.splitlines()
    assert lines[0] == (
        "NVDA: 3 insiders sold 600.0 K shares worth USD 91.1 M within 5 days "
        "(2026-04-06 to 2026-04-10; cluster rule 3 insiders within 7 days)"
    )
    for i, (accession, _cik, name, sold, _filed) in enumerate(INSIDERS, start=1):
        assert lines[i].startswith(f"- {name} (Chief Financial Officer): ")
        assert f"sold 200.0 K shares for USD 30.4 M on {sold}" in lines[i]
        assert lines[i].endswith(f"{accession}-index.htm (accession {accession})")
    assert "NVDA filed a Form 4 on 2026-04-13" in alert

    clock.advance(minutes=5)
    restarted = Process(store, mirror, clock, tmp_path)
    assert await restarted.poll() == []  # the cluster is not sent again after a restart
    assert len(daemon.chat.delivered) == 2


def test_the_cluster_rule_is_set_per_watch_and_bad_values_say_what_to_write(store: Store) -> None:
    from dexter.watch.model import WatchError

    clock = FakeClock(START)
    made = add_watch(
        WatchStore(store),
        CronStore(store),
        by=OPERATOR,
        tickers=["NVDA"],
        forms="4",
        items=None,
        deliver=CHAT,
        now=clock.now(),
        cluster="4/10",
    )
    (stored,) = WatchStore(store).all()
    assert "cluster 4/10" in stored.describe() and stored.cluster == made.cluster
    for bad in ("1/7", "three", "3/0"):
        with pytest.raises(WatchError, match="write N/D"):
            add_watch(
                WatchStore(store),
                CronStore(store),
                by=OPERATOR,
                tickers=["NVDA"],
                forms="4",
                items=None,
                deliver=CHAT,
                now=clock.now(),
                cluster=bad,
            )
    assert len(WatchStore(store).all()) == 1  # a refused watch is not stored
