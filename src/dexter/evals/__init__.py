"""Measuring Dexter: the Finance Agent Benchmark runner and judge, and the judge-free unit set."""
