"""Build the data router from settings: Financial Datasets first when keyed, then SEC EDGAR,
then Yahoo Finance for key-less prices."""

from __future__ import annotations

from datetime import date
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
    esef_transport: httpx2.AsyncBaseTransport | None = None,
    fd_transport: httpx2.AsyncBaseTransport | None = None,
    yahoo_transport: httpx2.AsyncBaseTransport | None = None,
    as_of: date | None = None,
) -> DataRouter:
    """The router for these settings. `as_of` (else DEXTER_AS_OF / `asOf`) limits every
    provider to what was filed on or before that day."""
    data = DataSettings.from_settings(settings)
    if as_of is not None:
        data = data.with_as_of(as_of)
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
    # Key-less ESEF reports of EU/UK issuers; it answers only for the companies it is named
    # for (an LEI, or esef:…), so its place in the list does not matter.
    from dexter.data.esef.provider import EsefProvider

    providers.append(EsefProvider(data, transport=esef_transport))
    sec = SecEdgarProvider(data, transport=sec_transport)
    # As of a past day, SEC EDGAR answers first wherever it can: it drops every value filed
    # after that day, which a vendor's latest restated figures cannot promise.
    providers.insert(0, sec) if data.as_of is not None else providers.append(sec)
    if data.yahoo_url:
        from dexter.data.yahoo import YahooPriceProvider

        # Last: a configured keyed price provider is always asked first.
        providers.append(
            YahooPriceProvider(
                base_url=data.yahoo_url,
                cache_dir=data.cache_dir / "yahoo",
                as_of=data.as_of,
                transport=yahoo_transport,
            )
        )
    return DataRouter(providers, as_of=data.as_of)
