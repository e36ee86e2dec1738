"""Build the data router from settings: Financial Datasets first when keyed, then SEC EDGAR."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dexter.config import Settings
from dexter.data.provider import FinanceProvider
from dexter.data.router import DataRouter
from dexter.data.sec.provider import SecEdgarProvider
from dexter.data.settings import DataSettings

if TYPE_CHECKING:
    import httpx2


def build_router(
    settings: Settings,
    *,
    sec_transport: httpx2.AsyncBaseTransport | None = None,
    fd_transport: httpx2.AsyncBaseTransport | None = None,
) -> DataRouter:
    data = DataSettings.from_settings(settings)
    providers: list[FinanceProvider] = []
    if data.fd_api_key:
        from dexter.data.financialdatasets import FinancialDatasetsProvider

        providers.append(
            FinancialDatasetsProvider(
                data.fd_api_key,
                base_url=data.fd_base_url,
                cache_dir=data.cache_dir / "financialdatasets",
                transport=fd_transport,
            )
        )
    providers.append(SecEdgarProvider(data, transport=sec_transport))
    return DataRouter(providers)
