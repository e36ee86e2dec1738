"""The agent loop and what it streams."""
