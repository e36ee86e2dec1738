"""Dexter: an autonomous financial-research agent for the terminal."""

__version__ = "0.1.0"
