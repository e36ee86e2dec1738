"""`dexter doctor`: what is configured, what is missing, and which model would run."""

from __future__ import annotations

from rich.console import Console

from dexter.cli.doctor import run_doctor
from dexter.config import load_settings


def run_doctor_command(model_spec: str | None) -> int:
    return run_doctor(load_settings(tolerate_corrupt=True), Console(), model_spec)
