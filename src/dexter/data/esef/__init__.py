"""ESEF annual reports (EU/UK issuers, IFRS) from XBRL International's filings.xbrl.org."""
