"""Command-line entry points. Heavy modules are imported inside each command, never here."""
