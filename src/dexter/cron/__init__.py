"""Scheduled jobs, heartbeat checks and the alerts they deliver (the gateway embeds the runner)."""
