"""The rules `scripts/build_finance_units.py` writes the data-derived unit cases with.

Everything here reads the raw SEC JSON (companyfacts, submissions, company_tickers) directly and
never imports Dexter: an expected value is what these rules read from the filing, so a case checks
Dexter against the filing rather than against itself.
"""
