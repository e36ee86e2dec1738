"""Keeping a run inside the model's context window."""
