"""`dexter data prices` and `dexter data quote` without a key: real settings, the recorded Yahoo
Finance replies and the SEC mirror each served on 127.0.0.1."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from dexter.cli.main import main
from tests.support.sec_mirror import Mirror, MirrorServer
from tests.support.yahoo_fixtures import YahooReplies, YahooServer


@pytest.fixture
def yahoo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[YahooServer]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("FINANCIAL_DATASETS_API_KEY", raising=False)
    with MirrorServer(Mirror()) as sec, YahooServer() as server:
        for key, value in sec.env().items():
            monkeypatch.setenv(key, value)
        monkeypatch.setenv("DEXTER_YAHOO_URL", server.url)
        monkeypatch.setenv("COLUMNS", "160")
        yield server


def test_prices_table_shows_the_split_and_the_currency(
    yahoo: YahooServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["data", "prices", "AAPL", "--from", "2020-08-28", "--to", "2020-09-02"]) == 0
    out = capsys.readouterr().out
    assert "Apple Inc. (AAPL) — prices 2020-08-28 to 2020-09-02 (USD)" in out
    assert "2020-08-31" in out and "4:1" in out and "129.04" in out and "134.18" in out
    assert "2020-09-03" not in out


def test_prices_csv_and_json_carry_dividends_and_adjusted_close(
    yahoo: YahooServer, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["data", "prices", "MSFT", "--from", "2021-11-16", "--to", "2021-11-17"]
    assert main([*args, "--csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [r["Date"] for r in rows] == ["2021-11-16", "2021-11-17"]
    assert rows[1]["Dividend"] == "0.62" and rows[1]["Close"] == "339.12"
    assert main([*args, "--json"]) == 0
    bars = json.loads(capsys.readouterr().out)
    assert bars[1]["dividend"] == 0.62 and bars[1]["adjusted_close"] < bars[1]["close"]


def test_market_symbols_need_no_sec_filer(
    yahoo: YahooServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["data", "prices", "EURUSD=X", "--from", "2020-01-01", "--to", "2020-01-03"]) == 0
    out = capsys.readouterr().out
    assert "EURUSD=X" in out and "1.1171" in out
    assert main(["data", "quote", "WSU.DE", "--json"]) == 0
    quote = json.loads(capsys.readouterr().out)
    assert quote["currency"] == "EUR" and quote["ticker"] == "WSU.DE"


def test_as_of_quote_is_that_days_close(
    yahoo: YahooServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["data", "quote", "AAPL", "--as-of", "2020-10-15"]) == 0
    out = capsys.readouterr().out
    assert "120.71" in out and "2020-10-15" in out and "as of 2020-10-15" in out


def test_a_weekend_window_is_said_not_an_empty_table(
    yahoo: YahooServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["data", "prices", "AAPL", "--from", "2020-09-05", "--to", "2020-09-06"]) == 0
    assert (
        "No prices for Apple Inc. (AAPL) from 2020-09-05 to 2020-09-06" in capsys.readouterr().out
    )


def test_a_refusal_is_one_clear_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    refused = YahooReplies({"AAPL": (403, "text/html", b"<html>Forbidden</html>")})
    with MirrorServer(Mirror()) as sec, YahooServer(refused) as server:
        for key, value in sec.env().items():
            monkeypatch.setenv(key, value)
        monkeypatch.setenv("DEXTER_YAHOO_URL", server.url)
        assert main(["data", "quote", "AAPL"]) == 1
    err = capsys.readouterr().err
    assert "Yahoo Finance answered HTTP 403" in err and "Traceback" not in err


def test_metrics_on_days_is_a_valuation_table_with_formulas_and_filings(
    yahoo: YahooServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["data", "metrics", "AAPL", "--on", "2020-09-30", "--on", "2020-11-06"]) == 0
    out = capsys.readouterr().out
    assert "Apple Inc. (AAPL) — valuation (USD)" in out
    # Hand-checked in test_valuation.py: 1,980,645 M and 2,017,944 M; P/E 33.9 and 35.1.
    assert "1,980,645" in out and "2,017,944" in out and "33.9" in out and "35.1" in out
    assert "price_to_earnings_ratio: market_cap / net_income" in out
    assert "10-Q filed 2020-07-31" in out and "10-K filed 2020-10-30" in out
    assert "4:1 (2020) split" in out


def test_metrics_month_ends_as_csv(yahoo: YahooServer, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["data", "metrics", "TSLA", "--on", "2022-08-01..2022-10-31", "--csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [r["Date"] for r in rows] == ["2022-08-31", "2022-09-30", "2022-10-31"]
    assert float(rows[-1]["Market cap (M)"]) == pytest.approx(718_514_992_245.46)
