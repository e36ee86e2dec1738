"""SEC EDGAR: the key-less default data source."""
