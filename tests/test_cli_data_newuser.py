"""`dexter data` as a demanding new user meets it: bad dates, backwards ranges, unknown options,
80 columns, pipes and files, 404s, as-of dates before XBRL, CSV of every command. Real recorded
SEC data served on 127.0.0.1."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

from dexter.cli.data_render import holdings_table
from dexter.cli.main import main
from dexter.cli.tables import render
from tests.support.fixtures import example_13f_holdings
from tests.support.sec_mirror import Mirror, MirrorServer


@pytest.fixture
def sec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[MirrorServer]:
    monkeypatch.chdir(tmp_path)
    for name in ("FINANCIAL_DATASETS_API_KEY", "DEXTER_SEC_RATE_LIMIT"):
        monkeypatch.delenv(name, raising=False)
    with MirrorServer(Mirror()) as server:
        for key, value in server.env().items():
            monkeypatch.setenv(key, value)
        monkeypatch.setenv("COLUMNS", "80")
        yield server


def _usage_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    return capsys.readouterr().err


def test_an_impossible_date_is_refused_not_compared_as_text(
    sec: MirrorServer, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _usage_error(["data", "filings", "AAPL", "--from", "2025-13-01"], capsys)
    assert "dexter data filings: error: argument --from" in err
    assert "month must be in 1..12" in err
    err = _usage_error(["data", "search", "buyback", "--to", "2025-02-30"], capsys)
    assert "argument --to" in err and "day is out of range" in err
    err = _usage_error(["data", "prices", "AAPL", "--start", "7/1/2025"], capsys)
    assert "YYYY-MM-DD" in err
    assert sec.mirror.requests == []


def test_a_range_that_ends_before_it_starts_is_an_error(
    sec: MirrorServer, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["data", "filings", "AAPL", "--from", "2025-06-01", "--to", "2025-01-01"])
    assert code == 2
    err = capsys.readouterr().err
    assert "--from 2025-06-01 is after --to 2025-01-01" in err
    assert sec.mirror.requests == []


def test_an_unknown_option_prints_the_subcommands_usage(
    sec: MirrorServer, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _usage_error(["data", "filings", "AAPL", "--bogus"], capsys)
    assert err.startswith("usage: dexter data filings")
    assert "--from DATE" in err  # the subcommand's own options, not the top level's
    assert "dexter data filings: error: unrecognized arguments: --bogus" in err


def test_a_long_concept_in_a_title_is_never_cut_mid_word_at_80_columns(
    sec: MirrorServer, capsys: pytest.CaptureFixture[str]
) -> None:
    concept = "us-gaap:RevenueFromContractWithCustomerExcludingAssessedTax"
    assert main(["data", "facts", "AAPL", concept]) == 0
    out = capsys.readouterr().out
    assert concept in out.splitlines()[0]
    assert max(len(line) for line in out.splitlines()) <= 80


def test_a_holdings_header_is_never_cut_at_80_columns() -> None:
    rows = example_13f_holdings()
    console = Console(width=80, file=io.StringIO(), color_system=None)
    render(console, holdings_table(rows[:20], title="13F holdings — Example Capital"))
    out = console.file.getvalue()  # type: ignore[attr-defined]
    assert "Put/Call" in out and "Put/Cal " not in out
    assert max(len(line) for line in out.splitlines()) <= 80


def test_a_filing_the_product_lists_but_the_sec_answers_404_for_is_said_as_such(
    sec: MirrorServer, capsys: pytest.CaptureFixture[str]
) -> None:
    # Apple's 8-K of 2026-02-24 is in its recorded filing history; its folder is not recorded.
    assert main(["data", "documents", "AAPL", "0001140361-26-006577"]) == 1
    err = capsys.readouterr().err
    assert "has no filing" not in err
    assert "'not found' (HTTP 404)" in err and "gives no reason" in err
    assert "8-K filed 2026-02-24" in err and "filing history names" in err


def test_a_missing_frame_is_said_as_not_found_not_as_no_values(
    sec: MirrorServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["data", "screen", "--period", "CY2024"]) == 1
    err = capsys.readouterr().err
    assert "The SEC has no" not in err
    assert "'not found' (HTTP 404) for the frame of Revenues in USD for CY2024" in err


def test_an_as_of_date_before_xbrl_says_when_the_first_figures_were_filed(
    sec: MirrorServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["data", "income", "AAPL", "--as-of", "1990-01-01"]) == 1
    err = capsys.readouterr().err
    assert "has no XBRL" not in err and "cover-page" not in err
    assert "on or before the as-of date 1990-01-01" in err
    assert "first were filed on 2009-07-22" in err
    assert main(["data", "facts", "AAPL", "Revenues", "--as-of", "2015-01-01"]) == 1
    err = capsys.readouterr().err
    assert "us-gaap:Revenues" in err and "first were filed on 2018-11-05" in err


def test_nothing_filed_by_the_as_of_date_is_a_sentence_not_an_empty_table(
    sec: MirrorServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["data", "filings", "AAPL", "--as-of", "1990-01-01"]) == 0
    out = capsys.readouterr().out
    assert "┏" not in out
    assert "No filings (all forms) by Apple Inc. (AAPL) on or before the as-of date" in out
    assert "EDGAR holds electronic filings from 1993" in out


def test_the_as_of_date_is_in_the_table_title(
    sec: MirrorServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["data", "income", "AAPL", "--as-of", "2012-01-01", "--limit", "2"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "Apple Inc. (AAPL) — income statement, annual (as of 2012-01-01)"
    assert "FY2011" in out and "FY2025" not in out  # labelled as the charts label periods


def test_periods_run_oldest_to_newest_like_the_charts_and_reports(
    sec: MirrorServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["data", "income", "AAPL", "--chart"]) == 0
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if "FY2025" in line)
    assert header.index("FY2022") < header.index("FY2023") < header.index("FY2025")
    chart = out[out.index("AAPL: Revenue") :]
    assert chart.index("FY2022") < chart.index("FY2025")
    sources = out[out.index("Sources") :]
    assert sources.index("FY2022:") < sources.index("FY2025:")


def test_the_metrics_footnote_says_the_units_of_the_rows_shown(
    sec: MirrorServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["data", "metrics", "AAPL", "--limit", "2"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "Days sales outstanding" in out and "Operating cycle" in out
    assert "days sales outstanding and operating cycle in days" in out
    assert "per-share figures in USD" in out


def test_output_into_a_pipe_is_neither_padded_nor_wrapped(
    sec: MirrorServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COLUMNS")
    concept = "us-gaap:RevenueFromContractWithCustomerExcludingAssessedTax"
    assert main(["data", "facts", "AAPL", concept]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"Apple Inc. (AAPL) — {concept} (USD)"
    assert [line for line in out.splitlines() if line != line.rstrip()] == []
    # One table: the Filed and Accession columns are not folded onto a "(continued)" one.
    assert "(continued)" not in out and "0000320193-26-000006" in out


def test_filings_csv_carries_each_documents_url(
    sec: MirrorServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["data", "filings", "AAPL", "--form", "10-K", "--limit", "2", "--csv"]) == 0
    table = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert table[0][-1] == "URL"
    assert table[1][-1].endswith("/Archives/edgar/data/320193/000032019325000079/aapl-20250927.htm")


def test_filing_section_csv_is_csv(sec: MirrorServer, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["data", "filing-section", "AAPL", "--year", "2024", "--item", "1A", "--csv"]
    assert main(argv) == 0
    (header, row) = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    record = dict(zip(header, row, strict=True))
    assert record["accession_number"] == "0000320193-24-000123" and record["item"] == "1A"
    assert record["text"].startswith("Item 1A") and "Risk Factors" in record["text"]
    assert record["url"].endswith("aapl-20240928.htm")


def test_segments_refuse_csv_with_a_reason(
    sec: MirrorServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["data", "segments", "AAPL", "--csv"]) == 2
    assert "nested" in capsys.readouterr().err
