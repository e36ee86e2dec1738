"""Filing watches: new SEC filings and what changed in them, polled on the schedules runner."""
