"""Older filing-history pages that fail to load: the real submissions files are served, and the
page they list (`filings.files`) answers 500, 404, times out or is cut off. What loaded is kept
and the gap is named; with nothing loaded the error says why, never an empty list."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dexter.data.errors import NotFound, UpstreamError
from dexter.data.models import FilingList
from dexter.data.sec import provider as sec_provider
from dexter.data.sec.provider import SecEdgarProvider
from dexter.data.settings import DataSettings
from dexter.tools.base import ToolContext
from dexter.tools.finance.datacalls import Filings
from tests.support.fixtures import fixtures_dir
from tests.support.sec_mirror import TIMEOUT, Mirror, mirror_transport

TESLA_PAGE = "data.sec.gov/submissions/CIK0001318605-submissions-001.json"
MSFT_PAGES = (
    "data.sec.gov/submissions/CIK0000789019-submissions-001.json",  # 2008-02-01 .. 2019-11-06
    "data.sec.gov/submissions/CIK0000789019-submissions-002.json",  # 1994-02-14 .. 2008-01-30
)
# Tesla's 10-Ks in its recent filing table (filed 2014-02-26 .. 2022-02-07); older ones are on
# the page that fails.
TESLA_RECENT_10K = 9

# Each failure, and the words the SEC client uses for it.
FAILURES: dict[str, tuple[int | str | bytes, str]] = {
    "500": (500, "SEC EDGAR answered HTTP 500"),
    "404": (404, "the SEC answered 'not found' (HTTP 404), though the history lists it"),
    "timeout": (TIMEOUT, "SEC EDGAR did not answer in time"),
    "corrupt": (b'{"accessionNumber": ["0001193125-13-0', "not valid JSON"),
}


async def no_wait(seconds: float) -> None:
    return None


def provider(tmp_path: Path, mirror: Mirror) -> SecEdgarProvider:
    settings = DataSettings(cache_dir=tmp_path / "cache", sec_user_agent="Dexter Tests t@e.com")
    return SecEdgarProvider(settings, transport=mirror_transport(mirror), sleep=no_wait)


def failing(page: str, how: int | str | bytes) -> Mirror:
    if isinstance(how, bytes):
        return Mirror(extra={page: how})
    return Mirror(failing={page: how})


def older_page(cik: str, rows: slice, dates: list[str], forms: list[str]) -> bytes:
    """An older page in the SEC's shape (the recent table's columns at the top level), cut from
    the filer's real recent table, re-dated into the page's range."""
    path = fixtures_dir() / f"sec-mirror/data.sec.gov/submissions/CIK{cik}.json"
    columns = json.loads(path.read_bytes())["filings"]["recent"]
    page: dict[str, Any] = {key: values[rows] for key, values in columns.items()}
    page["filingDate"], page["form"] = dates, forms
    return json.dumps(page).encode()


@pytest.mark.parametrize("kind", list(FAILURES))
async def test_what_loaded_is_kept_and_the_failed_page_named(tmp_path: Path, kind: str) -> None:
    how, words = FAILURES[kind]
    mirror = failing(TESLA_PAGE, how)
    found = await provider(tmp_path, mirror).filings("TSLA", forms=["10-K"], limit=20)
    assert isinstance(found, FilingList)
    assert len(found) == TESLA_RECENT_10K
    assert found[-1].filing_date == "2014-02-26"
    [gap] = found.gaps
    assert gap.failed and gap.page == "CIK0001318605-submissions-001.json"
    assert (gap.filed_from, gap.filed_to) == ("2005-02-17", "2013-12-10")
    assert words in gap.reason


@pytest.mark.parametrize("kind", list(FAILURES))
async def test_nothing_loaded_is_an_error_not_an_empty_list(tmp_path: Path, kind: str) -> None:
    how, words = FAILURES[kind]
    sec = provider(tmp_path, failing(TESLA_PAGE, how))
    with pytest.raises(UpstreamError) as info:
        await sec.filings("TSLA", forms=["10-K"], filed_lte="2012-12-31")
    said = str(info.value)
    assert "No 10-K of Tesla, Inc. filed on or before 2012-12-31" in said
    assert "CIK0001318605-submissions-001.json (filings of 2005-02-17 to 2013-12-10)" in said
    assert words in said
    assert "Filings made on or before 2013-12-10 are missing" in said
    assert "Try again in a few minutes" in said


async def test_a_server_error_is_retried_before_the_page_counts_as_missing(
    tmp_path: Path,
) -> None:
    mirror = failing(TESLA_PAGE, 500)
    await provider(tmp_path, mirror).filings("TSLA", forms=["10-K"], limit=20)
    assert sum(TESLA_PAGE in r for r in mirror.requests) == 4  # the client's four attempts


async def test_a_page_that_recovers_is_read_and_its_failure_not_remembered(
    tmp_path: Path,
) -> None:
    mirror = failing(TESLA_PAGE, FAILURES["corrupt"][0])
    assert (await provider(tmp_path, mirror).filings("TSLA", forms=["10-K"], limit=20)).gaps
    good = older_page("0001318605", slice(0, 2), ["2012-02-27", "2011-03-03"], ["10-K", "10-K"])
    mirror.extra[TESLA_PAGE] = good
    found = await provider(tmp_path, mirror).filings("TSLA", forms=["10-K"], limit=20)
    assert not found.gaps
    assert [f.filing_date for f in found[-2:]] == ["2012-02-27", "2011-03-03"]


async def test_a_page_wholly_outside_the_dates_asked_is_not_needed(tmp_path: Path) -> None:
    # Microsoft's newer older page fails, but a range ending in 2007 needs only the oldest one.
    oldest = older_page("0000789019", slice(0, 2), ["2007-08-03", "2006-08-25"], ["10-K"] * 2)
    mirror = Mirror(extra={MSFT_PAGES[1]: oldest}, failing={MSFT_PAGES[0]: 500})
    found = await provider(tmp_path, mirror).filings("MSFT", forms=["10-K"], filed_lte="2007-12-31")
    assert [f.filing_date for f in found] == ["2007-08-03", "2006-08-25"]
    assert not found.gaps
    assert not any(MSFT_PAGES[0] in r for r in mirror.requests)


async def test_pages_past_the_cap_are_named_not_dropped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sec_provider, "MAX_OLDER_PAGES", 1)
    newer = older_page("0000789019", slice(0, 1), ["2015-07-31"], ["10-K"])
    mirror = Mirror(extra={MSFT_PAGES[0]: newer})
    found = await provider(tmp_path, mirror).filings("MSFT", forms=["10-K"], limit=20)
    assert found[-1].filing_date == "2015-07-31"
    [gap] = found.gaps
    assert not gap.failed and gap.page == "CIK0000789019-submissions-002.json"
    assert not any(MSFT_PAGES[1] in r for r in mirror.requests)
    with pytest.raises(NotFound, match="Ask for filings filed on or before 2008-01-30"):
        await provider(tmp_path, mirror).filings("MSFT", forms=["10-K405"], limit=5)


async def test_a_10k_section_of_a_year_on_the_failed_page_says_why_it_is_missing(
    tmp_path: Path,
) -> None:
    sec = provider(tmp_path, failing(TESLA_PAGE, 500))
    with pytest.raises(UpstreamError) as info:
        await sec.filing_section("TSLA", form="10-K", item="1A", year=2012)
    said = str(info.value)
    assert "No 10-K for fiscal year 2012" in said and "HTTP 500" in said
    assert "Filings made on or before 2013-12-10 are missing" in said


async def test_the_model_is_told_the_list_is_incomplete(tmp_path: Path) -> None:
    from dexter.data.router import DataRouter

    router = DataRouter([provider(tmp_path, failing(TESLA_PAGE, TIMEOUT))])
    tool = Filings(router)
    args = tool.Args.model_validate({"company": "TSLA", "forms": ["10-K"], "limit": 20})
    result = await tool.run(args, ToolContext())
    assert f"{TESLA_RECENT_10K} filings, newest first" in result.content
    note = result.content[result.content.index("INCOMPLETE:") :]
    assert "CIK0001318605-submissions-001.json" in note and "did not answer in time" in note
    assert "Filings made on or before 2013-12-10 are missing" in note
    assert result.data is not None
    [gap] = result.data["incomplete"]
    assert gap["page"] == "CIK0001318605-submissions-001.json" and gap["failed"] is True
    await router.aclose()
