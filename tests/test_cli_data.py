"""`dexter data …` end to end: real settings, a real HTTP mirror of the SEC on 127.0.0.1."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from dexter.cli.data_render import holdings_shown
from dexter.cli.main import main
from dexter.data.models import Holdings
from tests.support.fixtures import example_13f_holdings
from tests.support.ownership_filings import snowflake_insider_filings
from tests.support.sec_mirror import Mirror, MirrorServer
from tests.support.thirteen_f import example_13f_filing


@pytest.fixture
def sec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[MirrorServer]:
    monkeypatch.chdir(tmp_path)
    for name in ("FINANCIAL_DATASETS_API_KEY", "DEXTER_HOME", "DEXTER_SEC_RATE_LIMIT"):
        monkeypatch.delenv(name, raising=False)
    with MirrorServer(Mirror()) as server:
        for key, value in server.env().items():
            monkeypatch.setenv(key, value)
        monkeypatch.setenv("COLUMNS", "160")
        yield server


def test_income_table_with_fiscal_labels_and_sources(
    sec: MirrorServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["data", "income", "AAPL", "--limit", "2"]) == 0
    out = capsys.readouterr().out
    assert "Apple Inc. (AAPL)" in out
    # The charts' and reports' labels (FY2025), not the data's own (2025-FY).
    assert "FY2025" in out and "FY2024" in out and "2025-FY" not in out
    assert "416,161" in out and "391,035" in out  # USD millions
    assert "1.02" in out and "7.46" in out  # per-share figures stay in dollars
    assert "Sources" in out and "10-K" in out


def test_income_json_carries_provenance(
    sec: MirrorServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["data", "income", "nvidia corp", "--limit", "1", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["ticker"] == "NVDA" and rows[0]["revenue"] == 215_938_000_000
    assert rows[0]["fiscal_period"] == "2026-FY"
    assert rows[0]["sources"]["revenue"]["accession_number"]


def test_filing_section_prints_clean_text(
    sec: MirrorServer, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["data", "filing-section", "AAPL", "--form", "10-K", "--year", "2024", "--item", "1A"]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "Item 1A" in out and "Risk Factors" in out
    assert "0000320193-24-000123" in out


def test_cached_second_run_makes_no_requests(
    sec: MirrorServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["data", "income", "AAPL"]) == 0
    first = len(sec.mirror.requests)
    assert main(["data", "income", "AAPL"]) == 0
    assert len(sec.mirror.requests) == first


def test_unknown_ticker_suggests_matches(
    sec: MirrorServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["data", "income", "AAPLE"]) == 2
    err = capsys.readouterr().err
    assert "No SEC filer matches 'AAPLE'" in err and "AAPL" in err
    assert "Traceback" not in err


def test_prices_without_a_price_source_says_how_to_enable(
    sec: MirrorServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEXTER_YAHOO_URL", "off")  # the key-less price source turned off
    assert main(["data", "prices", "AAPL"]) == 1
    err = capsys.readouterr().err
    assert "not available" in err and "FINANCIAL_DATASETS_API_KEY" in err


def test_missing_user_agent_is_a_configuration_error(
    sec: MirrorServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("DEXTER_SEC_USER_AGENT")
    assert main(["data", "income", "AAPL"]) == 2
    err = capsys.readouterr().err
    assert "DEXTER_SEC_USER_AGENT" in err and "email" in err
    assert sec.mirror.requests == []


def test_rate_limit_setting_above_the_sec_maximum_is_refused(
    sec: MirrorServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DEXTER_SEC_RATE_LIMIT", "25")
    assert main(["data", "income", "AAPL"]) == 2
    assert "at most 10" in capsys.readouterr().err


def test_income_chart_draws_main_lines_within_80_columns(
    sec: MirrorServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["data", "income", "AAPL", "--chart"]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80
    chart = out[out.index("AAPL: Revenue") :]
    assert "(USD millions)" in chart and "█" in chart
    assert "FY2022" in chart and "FY2025" in chart
    assert "416,161" in chart and "394,328" in chart  # revenue, newest and oldest, whole
    assert "AAPL: Gross margin" in chart and "46.91" in chart
    assert "EPS, diluted" in chart and "7.46" in chart
    assert chart.index("AAPL: Revenue") < out.index("Sources")


def test_chart_of_a_single_period_says_why_there_is_none(
    sec: MirrorServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["data", "balance", "AAPL", "--limit", "1", "--chart"]) == 0
    assert "Not enough periods to chart" in capsys.readouterr().out


def test_cashflow_chart_lines_share_one_scale(
    sec: MirrorServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["data", "cashflow", "AAPL", "--chart"]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80
    bars = {line.split()[-1]: line.count("█") for line in out.splitlines() if "█" in line}
    assert bars["122,151"] > 5 * bars["-12,715"]  # capex is a tenth of operating cash flow


def test_table_and_chart_name_periods_alike(
    sec: MirrorServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["data", "income", "AAPL", "--period", "quarterly", "--limit", "2", "--chart"]) == 0
    out = capsys.readouterr().out
    table, _, chart = out.partition("AAPL: Revenue")
    for label in ("Q1 FY2026", "Q4 FY2025"):
        assert label in table and label in chart
    assert "2026-Q1" not in out


# -- partial answers: a failed history page, a cut 13F list, Forms 4 and 5 ------------------------

TESLA_PAGE = "data.sec.gov/submissions/CIK0001318605-submissions-001.json"


def flat(text: str) -> str:
    """Output with its line wrapping undone, to find a sentence whatever the width."""
    return " ".join(text.split())


def test_a_failed_history_page_keeps_the_recent_filings_and_exits_1(
    sec: MirrorServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    sec.mirror.failing[TESLA_PAGE] = 500
    assert main(["data", "filings", "TSLA", "--form", "10-K", "--limit", "20"]) == 1
    captured = capsys.readouterr()
    assert "2022-02-07" in captured.out and "2014-02-26" in captured.out
    err = flat(captured.err)
    assert "this list is incomplete" in err and "CIK0001318605-submissions-001.json" in err
    assert "HTTP 500" in err and "Filings made on or before 2013-12-10 are missing" in err
    assert "Traceback" not in err


def test_nothing_loaded_from_a_corrupt_page_is_an_error_not_an_empty_table(
    sec: MirrorServer, capsys: pytest.CaptureFixture[str]
) -> None:
    sec.mirror.extra[TESLA_PAGE] = b'{"accessionNumber": ["0001193125-13-0'
    assert main(["data", "filings", "TSLA", "--form", "10-K", "--to", "2012-12-31"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    err = flat(captured.err)
    assert "No 10-K of Tesla, Inc. filed on or before 2012-12-31" in err
    assert "not valid JSON" in err and "Try again in a few minutes" in err


def test_json_of_an_incomplete_list_stays_parseable_and_exits_1(
    sec: MirrorServer, capsys: pytest.CaptureFixture[str]
) -> None:
    sec.mirror.failing[TESLA_PAGE] = 404
    assert main(["data", "filings", "TSLA", "--form", "10-K", "--limit", "20", "--json"]) == 1
    captured = capsys.readouterr()
    assert len(json.loads(captured.out)) == 9
    assert "HTTP 404" in captured.err and "incomplete" in captured.err


def test_holdings_say_how_many_of_the_report_are_shown(
    sec: MirrorServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    sec.mirror.extra.update(example_13f_filing())
    assert main(["data", "holdings", "--filer", "1234567"]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "largest value first" in out
    assert (
        "50 of 255 holdings, largest value first; the other 205 (USD 116,646,663, 33.3% of the "
        "report's USD 350,153,407) are not shown: use --limit N or --all to see more."
    ) in flat(out)
    assert "26,689,322" in out  # the largest position, first

    assert main(["data", "holdings", "--filer", "1234567", "--all", "--json"]) == 0
    captured = capsys.readouterr()
    rows = json.loads(captured.out)
    assert len(rows) == 255 and rows[-1]["name_of_issuer"] == "CRONOS GROUP INC"
    assert captured.err == ""  # nothing left out, nothing to say
    every = Holdings(example_13f_holdings(), total_count=255, total_value_usd=350_153_407)
    assert holdings_shown(every) == "All 255 holdings of the report, worth USD 350,153,407 in all."


def test_holdings_json_is_the_rows_asked_for_with_the_note_on_stderr(
    sec: MirrorServer, capsys: pytest.CaptureFixture[str]
) -> None:
    sec.mirror.extra.update(example_13f_filing())
    assert main(["data", "holdings", "--filer", "1234567", "--limit", "5", "--json"]) == 0
    captured = capsys.readouterr()
    assert len(json.loads(captured.out)) == 5
    assert "5 of 255 holdings" in captured.err
    with pytest.raises(SystemExit) as stopped:
        main(["data", "holdings", "--filer", "1234567", "--limit", "5", "--all"])
    assert stopped.value.code == 2
    assert "--all: not allowed with argument --limit" in capsys.readouterr().err


def test_insider_trades_show_form_5_rows_labelled_by_form(
    sec: MirrorServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    sec.mirror.extra.update(snowflake_insider_filings())
    assert main(["data", "insider-trades", "SNOW", "--csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [r["Form"] for r in rows].count("4") == 7
    [gift] = [r for r in rows if r["Form"] == "5"]
    assert (gift["Date"], gift["Type"], gift["Shares"]) == ("2021-12-23", "Gift", "-61386")
    assert [r["Form"] for r in rows if r["Type"] == "Gift"] == ["5/A", "5"]

    assert main(["data", "insider-trades", "SNOW"]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "McMahon John Dennis" in out and "SEC EDGAR 5 filed 2022-03-11" in out
