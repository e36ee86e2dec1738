"""`dexter doctor`: what is configured, what is missing, and which model would run."""

from __future__ import annotations

from rich.console import Console

from dexter.cli.doctor import run_doctor
from dexter.config import load_settings


def run_doctor_command(
    model_spec: str | None, *, as_json: bool = False, check: bool = False, show_all: bool = False
) -> int:
    settings = load_settings(tolerate_corrupt=True)
    if as_json:
        import json

        from dexter.cli.doctor_json import doctor_report

        report, ok = doctor_report(settings, model_spec)
        print(json.dumps(report, indent=2))
        return 0 if ok else 1
    return run_doctor(settings, Console(), model_spec, check=check, show_all=show_all)
