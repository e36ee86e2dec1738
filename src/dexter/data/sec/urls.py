"""URL builders for every SEC EDGAR endpoint we read.

Base URLs are parameters, never constants, because settings (`DEXTER_SEC_DATA_URL`,
`DEXTER_SEC_WWW_URL`) may point at a mirror or a local test server. The SEC spells CIKs two ways:
ten digits zero-padded in data.sec.gov paths, plain integers in Archives paths.
"""

from __future__ import annotations

from urllib.parse import quote

DEFAULT_DATA_URL = "https://data.sec.gov"
DEFAULT_WWW_URL = "https://www.sec.gov"


def pad_cik(cik: str | int) -> str:
    """`320193` or `"0000320193"` -> `"0000320193"`."""
    digits = str(cik).strip()
    if digits.upper().startswith("CIK"):
        digits = digits[3:]
    if not digits.isdigit() or len(digits) > 10:
        raise ValueError(f"not a CIK: {cik!r}")
    return digits.zfill(10)


def cik_int(cik: str | int) -> int:
    """The CIK as Archives paths spell it (no leading zeros)."""
    return int(pad_cik(cik))


def accession_nodash(accession: str) -> str:
    """`0000320193-24-000123` -> `000032019324000123` (the Archives folder name)."""
    return accession.strip().replace("-", "")


def _base(url: str) -> str:
    return url.rstrip("/")


def company_tickers(www_base: str = DEFAULT_WWW_URL) -> str:
    return f"{_base(www_base)}/files/company_tickers.json"


def company_tickers_exchange(www_base: str = DEFAULT_WWW_URL) -> str:
    return f"{_base(www_base)}/files/company_tickers_exchange.json"


def submissions(cik: str | int, data_base: str = DEFAULT_DATA_URL) -> str:
    return f"{_base(data_base)}/submissions/CIK{pad_cik(cik)}.json"


def submissions_page(name: str, data_base: str = DEFAULT_DATA_URL) -> str:
    """An older page named in `filings.files`, e.g. `CIK0000320193-submissions-001.json`."""
    return f"{_base(data_base)}/submissions/{quote(name)}"


def companyfacts(cik: str | int, data_base: str = DEFAULT_DATA_URL) -> str:
    return f"{_base(data_base)}/api/xbrl/companyfacts/CIK{pad_cik(cik)}.json"


def companyconcept(
    cik: str | int, taxonomy: str, concept: str, data_base: str = DEFAULT_DATA_URL
) -> str:
    return (
        f"{_base(data_base)}/api/xbrl/companyconcept/CIK{pad_cik(cik)}/"
        f"{quote(taxonomy)}/{quote(concept)}.json"
    )


def frames(
    taxonomy: str, concept: str, unit: str, period: str, data_base: str = DEFAULT_DATA_URL
) -> str:
    """Cross-company values, e.g. `frames("us-gaap", "Revenues", "USD", "CY2024")`.

    Units with a slash ("USD/shares") are written with a hyphen in frame URLs ("USD-per-shares").
    """
    unit_path = unit.replace("/", "-per-")
    return (
        f"{_base(data_base)}/api/xbrl/frames/{quote(taxonomy)}/{quote(concept)}/"
        f"{quote(unit_path)}/{quote(period)}.json"
    )


def filing_folder(cik: str | int, accession: str, www_base: str = DEFAULT_WWW_URL) -> str:
    return f"{_base(www_base)}/Archives/edgar/data/{cik_int(cik)}/{accession_nodash(accession)}"


def filing_index(cik: str | int, accession: str, www_base: str = DEFAULT_WWW_URL) -> str:
    """The JSON directory listing of a filing's folder (every document and exhibit)."""
    return f"{filing_folder(cik, accession, www_base)}/index.json"


def filing_document(
    cik: str | int, accession: str, filename: str, www_base: str = DEFAULT_WWW_URL
) -> str:
    return f"{filing_folder(cik, accession, www_base)}/{quote(filename)}"


def filing_index_page(cik: str | int, accession: str, www_base: str = DEFAULT_WWW_URL) -> str:
    """The human-readable filing index, the best page to cite for a whole filing."""
    return f"{filing_folder(cik, accession, www_base)}/{accession.strip()}-index.htm"


SEC_HOST_SUFFIX = "sec.gov"


def is_sec_host(host: str | None) -> bool:
    """`www.sec.gov`, `data.sec.gov`, `efts.sec.gov`, `sec.gov` …: hosts bound by SEC fair-access
    rules (declared user agent, 10 requests/second)."""
    name = (host or "").lower().rstrip(".")
    return name == SEC_HOST_SUFFIX or name.endswith("." + SEC_HOST_SUFFIX)


def rebase_sec_url(url: str, *, data_base: str, www_base: str, efts_base: str) -> str:
    """A public SEC URL pointed at the configured base for its host, so a mirror or a local test
    server set in DEXTER_SEC_*_URL also serves URLs the model found elsewhere."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    bases = {
        "data.sec.gov": data_base,
        "www.sec.gov": www_base,
        "sec.gov": www_base,
        "efts.sec.gov": efts_base,
    }
    base = bases.get(host)
    if base is None:
        return url
    tail = parts.path + (f"?{parts.query}" if parts.query else "")
    return _base(base) + tail
