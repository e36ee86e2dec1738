"""Financial data sources behind one typed interface. Nothing in here knows about LLMs."""
