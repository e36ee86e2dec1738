"""Routing between Financial Datasets (when keyed) and SEC EDGAR, as a user with a free or
broken key experiences it."""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest

from dexter.data.errors import Unavailable, UpstreamError
from dexter.data.financialdatasets import FinancialDatasetsProvider
from dexter.data.provider import Capability
from dexter.data.router import DataRouter
from dexter.data.sec.provider import SecEdgarProvider
from dexter.data.settings import DataSettings
from tests.support.sec_mirror import Mirror, mirror_transport


def fd_answering(status: int, body: str) -> FinancialDatasetsProvider:
    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(status, json={"error": body, "message": body})

    return FinancialDatasetsProvider(
        "fd-test-key", cache_dir=None, transport=httpx2.MockTransport(handler)
    )


def sec(tmp_path: Path) -> SecEdgarProvider:
    settings = DataSettings(cache_dir=tmp_path / "cache", sec_user_agent="T t@example.com")
    return SecEdgarProvider(settings, transport=mirror_transport(Mirror()))


async def test_payment_required_falls_back_to_sec(tmp_path: Path) -> None:
    router = DataRouter([fd_answering(402, "Payment Required: upgrade your plan"), sec(tmp_path)])
    company = await router.company("AAPL")
    statements = await router.income_statements(company.ticker, limit=1)
    assert statements[0].revenue == 416_161_000_000
    assert statements[0].sources["revenue"].provider == "SEC EDGAR"
    await router.aclose()


async def test_capability_only_fd_has_reports_the_plan_problem(tmp_path: Path) -> None:
    router = DataRouter([fd_answering(402, "Payment Required"), sec(tmp_path)])
    with pytest.raises(UpstreamError) as info:
        await router.prices("AAPL", start_date="2025-01-02", end_date="2025-02-03")
    assert info.value.status == 402
    assert "plan" in str(info.value)
    await router.aclose()


async def test_server_errors_do_not_silently_switch_source(tmp_path: Path) -> None:
    router = DataRouter([fd_answering(400, "bad period"), sec(tmp_path)])
    with pytest.raises(UpstreamError) as info:
        await router.income_statements("AAPL")
    assert info.value.status == 400 and "bad period" in str(info.value)
    await router.aclose()


async def test_nothing_configured_names_what_to_set(tmp_path: Path) -> None:
    router = DataRouter([sec(tmp_path)])
    assert not router.supports(Capability.NEWS)
    with pytest.raises(Unavailable) as info:
        await router.news("AAPL")
    assert "Company news: not available from the configured data sources" in str(info.value)
    assert "FINANCIAL_DATASETS_API_KEY" in str(info.value)
    await router.aclose()
