"""Cross-company screens from the XBRL frames API.

A frame (`/api/xbrl/frames/us-gaap/Revenues/USD/CY2024.json`) holds one reported value per filer
for one concept, unit and calendar period: `{taxonomy, tag, ccp, uom, label, pts, data: [{accn,
cik, entityName, loc, end, val}]}`. The SEC aligns each filer's fiscal periods to the nearest
calendar period, so a "CY2024" value may cover a fiscal year ending in, say, September 2024.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dexter.data.errors import UpstreamError
from dexter.data.models import ScreenRow
from dexter.data.sec import urls


def screen_rows_from_frame(
    data: Mapping[str, Any],
    *,
    concept: str | None = None,
    unit: str | None = None,
    tickers: Mapping[str, str] | None = None,
) -> list[ScreenRow]:
    """One row per filer, largest value first.

    `concept` and `unit` default to the frame's own (`us-gaap:Revenues`, `USD`); `tickers` maps a
    ten-digit CIK to a ticker so rows can name the security as well as the company.
    """
    rows = data.get("data")
    if not isinstance(rows, list):
        raise UpstreamError("SEC frames JSON has no data list.")
    taxonomy, tag = data.get("taxonomy"), data.get("tag")
    concept = concept or (f"{taxonomy}:{tag}" if taxonomy and tag else None)
    unit = unit or _text(data.get("uom"))
    period = _text(data.get("ccp"))

    result: list[ScreenRow] = []
    for row in rows:
        if not isinstance(row, Mapping):
            continue
        value = row.get("val")
        # bool is an int subclass; a flag is never a reported amount.
        if not isinstance(value, int | float) or isinstance(value, bool) or row.get("cik") is None:
            continue
        cik = urls.pad_cik(row["cik"])
        result.append(
            ScreenRow(
                ticker=(tickers or {}).get(cik),
                cik=cik,
                name=str(row.get("entityName") or cik),
                value=value,
                concept=concept,
                unit=unit,
                period=period or _text(row.get("end")),
                accession_number=_text(row.get("accn")),
            )
        )
    result.sort(key=lambda r: r.value, reverse=True)
    return result


def _text(value: Any) -> str | None:
    return str(value) if value not in (None, "") else None
